"""A primal-dual interior-point engine for cone QPs: one main loop for every data layout.

Problem: ``minimise 1/2 x'P x + q'x  s.t.  G x + s = h,  A x = b,  s in K`` (the CVXOPT ``coneqp`` / Clarabel
standard form), ``K`` one nonnegative orthant and batches of second-order cones stored row-wise (every cone
operation vectorised).  Method: Mehrotra predictor-corrector with Nesterov-Todd scaling [Van10, Sec. 7-9], in one
main loop, :func:`interior_point`, which drives an iteration-level operator: the phases of an iteration (start
point, measures, factor and predictor, predictor step, corrector, refinement, corrector step, move).  The
in-memory operator is :class:`ConeQPOperator`, on a problem object that supplies the products and
``kkt_factor(scaling)`` (:func:`cone_ipm`; structure is exploited in :mod:`.robust_svm`); the robust SVM on Dask
row blocks is the other operator (:mod:`.row_block_ipm`), so both routes run the same iterations.  The stopping
test (:class:`StoppingTest`) follows Clarabel's semantics; the statuses are ``"optimal"``, ``"max_iter"`` and
``"numerical_error"``.  The standard form, the stopping test's formulas and the statuses are written out in the
user guide (``docs/guide/robust.md``, "The interior-point engine").
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .cone_loops import (
    ninf,
    orthant_max_step,
    orthant_nt_scaling,
    orthant_newton_rhs,
    orthant_scaled_dirs,
    orthant_step,
    orthant_step_scaled,
    residual_norms,
    soc_add_apply_sq,
    soc_apply,
    soc_apply_sq,
    soc_inv_ninf,
    soc_jdet,
    soc_jdiv,
    soc_jprod,
    soc_kkt_rz,
    soc_min_step,
    soc_newton_rhs,
    soc_nt_scaling,
    soc_nt_scaling_lam,
    soc_scaled_dirs,
    soc_step,
    soc_step_scaled,
)

__all__ = [
    "ConeSpec",
    "Scaling",
    "IPMResult",
    "DenseConeQP",
    "Refinement",
    "REFINE_STEPS",
    "cone_ipm",
    "interior_point",
    "KKTFailure",
    "kkt_failures",
    "ConeQPOperator",
    "Measures",
    "IPMRun",
    "max_step",
    "jprod",
    "jdiv",
]


@dataclass
class ConeSpec:
    """``n_l`` nonnegative coordinates followed by SOC batches ``[(m, d), ...]``.

    Attributes
    ----------
    n_l : int
        Nonnegative coordinates.
    soc : list of (int, int)
        Batches of ``m`` second-order cones of dimension ``d``.
    """

    n_l: int
    soc: list = field(default_factory=list)

    @property
    def size(self) -> int:
        return self.n_l + sum(m * d for m, d in self.soc)

    @property
    def degree(self) -> int:
        return self.n_l + sum(m for m, _ in self.soc)

    def split(self, v: np.ndarray):
        """Views ``(v_l, [v_q (m, d), ...])`` of a flat cone vector."""
        out, off = [], self.n_l
        for m, d in self.soc:
            out.append(v[off : off + m * d].reshape(m, d))
            off += m * d
        return v[: self.n_l], out

    def identity(self) -> np.ndarray:
        e = np.zeros(self.size)
        el, eq = self.split(e)
        el[:] = 1.0
        for q in eq:
            q[:, 0] = 1.0
        return e


# ---------------------------------------------------------------------------------- cone algebra
# The row loops are compiled (:mod:`.cone_loops`): one pass per operation over a batch's (m, d) array.


class Scaling:
    """Nesterov-Todd scaling of ``(s, z)``: ``W z = W^{-1} s = lambda``.

    Nonnegative part: ``W = diag(w)``, ``w = sqrt(s / z)``.  Each SOC: ``W = beta (2 v v' - J)``
    with ``wbar`` the NT point (``wbar' J wbar = 1``), i.e. ``W = beta [[w0, w1'], [w1, I + w1 w1' / (1 + w0)]]``,
    ``W^2 = beta^2 (2 wbar wbar' - J)`` and ``W^{-2} = beta^{-2} (2 J wbar wbar' J - J)``.

    Parameters
    ----------
    cones : ConeSpec
        The cone.
    s, z : ndarray, optional
        Interior points of the cone (None: the identity scaling).
    """

    def __init__(self, cones: ConeSpec, s: np.ndarray | None = None, z: np.ndarray | None = None):
        self.cones = cones
        self.version = 0  # counts updates: what a KKT solver derives from this scaling is current while it is equal
        if s is None:  # identity scaling
            self.w_l = np.ones(cones.n_l)
            self.beta = [np.ones(m) for m, _ in cones.soc]
            self.wbar = []
            for m, d in cones.soc:
                wb = np.zeros((m, d))
                wb[:, 0] = 1.0
                self.wbar.append(wb)
            return
        self.w_l = np.empty(cones.n_l)
        self.wbar = [np.empty((m, d)) for m, d in cones.soc]
        self.beta = [np.empty(m) for m, _ in cones.soc]
        self.update(s, z)

    def update(self, s: np.ndarray, z: np.ndarray, lam: np.ndarray | None = None) -> "Scaling":
        """The scaling of a new pair ``(s, z)``, written over this one's arrays (the interior point's iterations
        reuse one :class:`Scaling`: a fresh scaling per iteration costs page faults when the cone arrays exceed
        the allocator's reuse threshold, e.g. per-sample cones at 2e5 x 50).  With ``lam``, also ``lam = W z``
        (:meth:`apply`'s values) in the same pass over the cone rows."""
        self.version += 1
        sl, sq = self.cones.split(s)
        zl, zq = self.cones.split(z)
        if lam is None:
            orthant_nt_scaling(sl, zl, self.w_l, None)
            for S, Z, wb, bt in zip(sq, zq, self.wbar, self.beta):
                soc_nt_scaling(S, Z, wb, bt)
            return self
        ll, lq = self.cones.split(lam)
        orthant_nt_scaling(sl, zl, self.w_l, ll)
        for S, Z, wb, bt, LM in zip(sq, zq, self.wbar, self.beta, lq):
            soc_nt_scaling_lam(S, Z, wb, bt, LM)
        return self

    # D = (W'W)^{-1} pieces, for KKT solvers --------------------------------------------
    @property
    def d_l(self) -> np.ndarray:
        """Diagonal of ``W^{-2}`` on the orthant (``z / s``)."""
        return 1.0 / self.w_l**2

    def apply(self, v: np.ndarray, inverse: bool = False, out: np.ndarray | None = None) -> np.ndarray:
        """``W v`` (or ``W^{-1} v``), into ``out`` if given."""
        out = np.empty_like(v) if out is None else out
        vl, vq = self.cones.split(v)
        ol, oq = self.cones.split(out)
        ol[:] = vl / self.w_l if inverse else vl * self.w_l
        for j, (V, O) in enumerate(zip(vq, oq)):
            self.apply_soc(j, V, inverse, O)
        return out

    def add_apply_sq(self, v: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out += W^2 v`` (:meth:`apply_sq` and the sum in one pass, with no temporary)."""
        vl, vq = self.cones.split(v)
        ol, oq = self.cones.split(out)
        ol += vl * self.w_l * self.w_l
        for j, (V, O) in enumerate(zip(vq, oq)):
            soc_add_apply_sq(self.wbar[j], self.beta[j], V, O)
        return out

    def inv_norm(self, v: np.ndarray) -> float:
        """``||W^{-1} v||_inf`` without storing ``W^{-1} v`` (NaN if an entry is NaN; :meth:`apply`'s values)."""
        vl, vq = self.cones.split(v)
        parts = [ninf(vl / self.w_l)] + [soc_inv_ninf(self.wbar[j], self.beta[j], V) for j, V in enumerate(vq)]
        return float(np.max(parts))

    def kkt_rz(self, bz: np.ndarray, dz: np.ndarray, gdx: np.ndarray) -> float:
        """The cone rows of a KKT residual, ``bz - G dx + W^2 dz``, written over ``gdx`` (which holds ``G dx``), and
        its :meth:`inv_norm`, in one pass over the cone rows (the bits of ``np.subtract``, :meth:`add_apply_sq`,
        :meth:`apply` and ``ninf``)."""
        bl, bq = self.cones.split(bz)
        dl, dq = self.cones.split(dz)
        gl, gq = self.cones.split(gdx)
        np.subtract(bl, gl, out=gl)
        gl += dl * self.w_l * self.w_l
        parts = [ninf(gl / self.w_l)]
        parts += [soc_kkt_rz(self.wbar[j], self.beta[j], B, D, G) for j, (B, D, G) in enumerate(zip(bq, dq, gq))]
        return float(np.max(parts))

    def apply_soc(self, j: int, V: np.ndarray, inverse: bool = False, out: np.ndarray | None = None) -> np.ndarray:
        """``W`` (or ``W^{-1}``) of SOC batch ``j`` applied to the rows of ``V`` (m, d), into ``out`` if given."""
        O = np.empty(V.shape) if out is None else out
        soc_apply(self.wbar[j], self.beta[j], V, inverse, O)
        return O

    def apply_soc_sq(self, j: int, V: np.ndarray, inverse: bool = False, out: np.ndarray | None = None):
        """``W^2`` (or ``W^{-2}``) of SOC batch ``j`` on the rows of ``V``: two applications of the factored
        ``W`` (better conditioned than the explicit ``beta^2 (2 wbar wbar' - J)``), fused into one pass."""
        O = np.empty(V.shape) if out is None else out
        soc_apply_sq(self.wbar[j], self.beta[j], V, inverse, O)
        return O

    def _apply_sq(self, v: np.ndarray, inverse: bool) -> np.ndarray:
        out = np.empty_like(v)
        vl, vq = self.cones.split(v)
        ol, oq = self.cones.split(out)
        ol[:] = vl / self.w_l / self.w_l if inverse else vl * self.w_l * self.w_l
        for j, (V, O) in enumerate(zip(vq, oq)):
            self.apply_soc_sq(j, V, inverse, O)
        return out

    def apply_sq(self, v: np.ndarray) -> np.ndarray:
        """``W'W v = W^2 v`` (:meth:`apply` twice, in one pass)."""
        return self._apply_sq(v, False)

    def apply_inv_sq(self, v: np.ndarray) -> np.ndarray:
        """``W^{-2} v``."""
        return self._apply_sq(v, True)


def jprod(cones: ConeSpec, u: np.ndarray, v: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Jordan product ``u o v`` (into ``out`` if given).

    Parameters
    ----------
    cones : ConeSpec
        The cone.
    u, v : ndarray of shape (cones.size,)
        The factors.
    out : ndarray, optional
        Receives the product.

    Returns
    -------
    ndarray of shape (cones.size,)
    """
    out = np.empty_like(u) if out is None else out
    ul, uq = cones.split(u)
    vl, vq = cones.split(v)
    ol, oq = cones.split(out)
    ol[:] = ul * vl
    for U, V, O in zip(uq, vq, oq):
        soc_jprod(U, V, O)
    return out


def jdiv(cones: ConeSpec, lam: np.ndarray, r: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Solve ``lam o u = r`` for ``u`` (lam interior; into ``out`` if given).

    Parameters
    ----------
    cones : ConeSpec
        The cone.
    lam : ndarray of shape (cones.size,)
        An interior point.
    r : ndarray of shape (cones.size,)
        The right-hand side.
    out : ndarray, optional
        Receives ``u``.

    Returns
    -------
    ndarray of shape (cones.size,)
    """
    out = np.empty_like(r) if out is None else out
    ll, lq = cones.split(lam)
    rl, rq = cones.split(r)
    ol, oq = cones.split(out)
    ol[:] = rl / ll
    for Lm, R, O in zip(lq, rq, oq):
        soc_jdiv(Lm, R, O)
    return out


def newton_rhs(cones: ConeSpec, scaling: "Scaling", lam: np.ndarray, dsa, dza, shift: float, rz, u_out, bz_out):
    """``(u, bz)`` of a Newton step: ``u = lam \\ r`` (:func:`jdiv`) for the complementarity right-hand side
    ``r = -lam o lam`` (``dsa`` None: the predictor, whose solution is ``u = -lam`` exactly) or ``r = -lam o lam - dsa
    o dza + shift e`` (the corrector), and the cone rows of the right-hand side ``bz = -rz - W u`` (``rz``: the primal
    residual ``G x + s - h``), into ``u_out`` and ``bz_out``: one pass over the cone rows where :func:`jprod`, the
    sums, :func:`jdiv`, the negation of ``rz``, :meth:`Scaling.apply` and the subtraction take seven (the same values
    to rounding: the kernels sum each row's products in any order).

    Parameters
    ----------
    cones : ConeSpec
        The cone.
    scaling : Scaling
        The NT scaling ``W``.
    lam : ndarray of shape (cones.size,)
        The scaled point ``lambda``.
    dsa, dza : ndarray or None
        The predictor's scaled directions (None: the predictor itself).
    shift : float
        ``sigma mu`` of the corrector.
    rz : ndarray of shape (cones.size,)
        The primal residual's cone rows.
    u_out, bz_out : ndarray of shape (cones.size,)
        Receive ``u`` and ``bz``.

    Returns
    -------
    u : ndarray
    bz : ndarray
    """
    corrector = dsa is not None
    ll, lq = cones.split(lam)
    sl, sq = cones.split(dsa) if corrector else (ll, lq)  # not read by the predictor
    tl, tq = cones.split(dza) if corrector else (ll, lq)
    rl, rq = cones.split(rz)
    ul, uq = cones.split(u_out)
    ol, oq = cones.split(bz_out)
    orthant_newton_rhs(ll, sl, tl, shift, corrector, scaling.w_l, rl, ul, ol)
    for j, (Lm, S, T, R, U, O) in enumerate(zip(lq, sq, tq, rq, uq, oq)):
        soc_newton_rhs(Lm, S, T, shift, corrector, scaling.wbar[j], scaling.beta[j], R, U, O)
    return u_out, bz_out


def scaled_directions(cones: ConeSpec, scaling: "Scaling", lam: np.ndarray, u: np.ndarray, dz: np.ndarray, dzt):
    """The scaled directions ``dzt = W dz`` (written) and ``dst = u - dzt`` (over ``u``), and the largest step
    from ``lam`` along both (:func:`max_step` of each, the smaller): one pass over the cone rows where
    :meth:`Scaling.apply`, the subtraction and two :func:`max_step` calls take four (the same values to rounding).

    Parameters
    ----------
    cones : ConeSpec
        The cone.
    scaling : Scaling
        The NT scaling ``W``.
    lam : ndarray of shape (cones.size,)
        The scaled point ``lambda``.
    u : ndarray of shape (cones.size,)
        The Newton step's ``u``, overwritten with ``dst``.
    dz : ndarray of shape (cones.size,)
        The direction of ``z``.
    dzt : ndarray of shape (cones.size,)
        Receives ``W dz``.

    Returns
    -------
    float
        The largest step.
    """
    ll, lq = cones.split(lam)
    ul, uq = cones.split(u)
    zl, zq = cones.split(dz)
    tl, tq = cones.split(dzt)
    a = float(orthant_scaled_dirs(scaling.w_l, ll, ul, zl, tl))
    for j, (Lm, U, Z, T) in enumerate(zip(lq, uq, zq, tq)):
        a = min(a, float(soc_scaled_dirs(scaling.wbar[j], scaling.beta[j], Lm, U, Z, T)))
    return a


def interior(cones: ConeSpec, x: np.ndarray) -> bool:
    """Whether ``x`` is strictly inside K as computed in floating point (the NT scaling needs it).

    Parameters
    ----------
    cones : ConeSpec
        The cone.
    x : ndarray of shape (cones.size,)
        The point.

    Returns
    -------
    bool
    """
    xl, xq = cones.split(x)
    if np.any(xl <= 0.0):
        return False
    return all(np.all(X[:, 0] > 0.0) and np.all(soc_jdet(X) > 0.0) for X in xq if X.shape[0])


def step_into(cones: ConeSpec, x: np.ndarray, d: np.ndarray, a: float, out: np.ndarray | None = None, scaling=None):
    """``(x + a d, inside)``: the step (into ``out`` if given) and whether it is strictly inside K
    (:func:`interior`), in one pass.  With a :class:`Scaling`, the step is along ``W d`` (:meth:`Scaling.apply`'s
    values, formed row by row and never stored).

    Parameters
    ----------
    cones : ConeSpec
        The cone.
    x, d : ndarray of shape (cones.size,)
        The point and the direction.
    a : float
        The step.
    out : ndarray, optional
        Receives the step.
    scaling : Scaling, optional
        Step along ``W d``.

    Returns
    -------
    x_new : ndarray
    inside : bool
    """
    out = np.empty_like(x) if out is None else out
    xl, xq = cones.split(x)
    dl, dq = cones.split(d)
    ol, oq = cones.split(out)
    if scaling is None:
        ok = bool(orthant_step(xl, dl, a, ol))
        for X, D, O in zip(xq, dq, oq):
            ok = bool(soc_step(X, D, a, O)) and ok
        return out, ok
    ok = bool(orthant_step_scaled(scaling.w_l, xl, dl, a, ol))
    for j, (X, D, O) in enumerate(zip(xq, dq, oq)):
        ok = bool(soc_step_scaled(scaling.wbar[j], scaling.beta[j], X, D, a, O)) and ok
    return out, ok


def max_step(cones: ConeSpec, x: np.ndarray, d: np.ndarray) -> float:
    """Largest step ``a`` with ``x + a d`` in K (x interior); inf if unbounded.

    Parameters
    ----------
    cones : ConeSpec
        The cone.
    x : ndarray of shape (cones.size,)
        An interior point.
    d : ndarray of shape (cones.size,)
        The direction.

    Returns
    -------
    float
    """
    xl, xq = cones.split(x)
    dl, dq = cones.split(d)
    a = float(orthant_max_step(xl, dl))
    for X, D in zip(xq, dq):
        if X.shape[0]:
            a = min(a, float(soc_min_step(X, D)))
    return a


def shift_into_cone(cones: ConeSpec, v: np.ndarray) -> np.ndarray:
    """CVXOPT's initial shift: ``v + (1 + t) e`` if ``t = max violation >= -1e-8 max(||v||, 1)``.

    Parameters
    ----------
    cones : ConeSpec
        The cone.
    v : ndarray of shape (cones.size,)
        The point.

    Returns
    -------
    ndarray of shape (cones.size,)
    """
    vl, vq = cones.split(v)
    viol = [-np.min(vl)] if vl.size else []
    for V in vq:
        if V.shape[0]:
            viol.append(float(np.max(np.sqrt(np.sum(V[:, 1:] ** 2, axis=1)) - V[:, 0])))
    t = max(viol) if viol else -1.0
    nrm = float(np.linalg.norm(v))
    if t >= -1e-8 * max(nrm, 1.0):
        v = v + (1.0 + t) * cones.identity()
    return v


# ---------------------------------------------------------------------------------- iterative refinement
#: the default for the most refinement steps per corrector solve (:class:`Refinement`)
REFINE_STEPS = 4


class Refinement:
    """When iterative refinement of a KKT solve stops: the one rule, applied by :func:`refine_direction` to an
    operator that evaluates the residuals and solves for the corrections on its own layout.

    ``err`` is a direction's KKT residual (``max(||rx||_inf, ||ry||_inf, ||W^{-1} rz||_inf)``) and ``scale`` its
    right-hand side's (the same norms).  The first correction is solved unless ``err <= 1e-12 scale`` (the rounding
    floor); each further one, up to ``steps`` in all, only while ``err > 1e-6 scale`` and the last correction
    reduced ``err``.  A correction that does not reduce ``err`` is dropped (:meth:`keep`) and ends the refinement.

    One correction usually takes the residual to the floor of its own evaluation, 1e-13 to 1e-6 of the right-hand
    side.  Where the reduced solve has lost most of its digits (robust SVMs whose cones near their boundary in the
    last iterations), each correction gains a few digits, and a single correction per solve can leave the next
    iterates' residuals above the tolerance until they diverge.  ``rsvm-conic bench robust-ipm-refine`` prints the
    residual sequences and compares this rule with one correction per solve (two-group robust SVMs, 20 seeds).

    Parameters
    ----------
    steps : int
        The most corrections.
    scale : float
        The right-hand side's norm.
    err : float
        The first solve's KKT residual.
    """

    FLOOR = 1e-12
    ENOUGH = 1e-6

    def __init__(self, steps: int, scale: float, err: float):
        self.steps, self.scale, self.err = steps, scale, err
        self.done = 0
        self.gained = True
        self.history = [err / scale]  # the relative residual before and after each correction (dropped ones too)

    def more(self) -> bool:
        """Whether to solve for a correction of the current direction."""
        if self.done >= self.steps or not self.gained or not np.isfinite(self.err):
            return False
        return self.err > (self.FLOOR if self.done == 0 else self.ENOUGH) * self.scale

    def keep(self, err: float) -> bool:
        """After a correction whose corrected direction has residual ``err``: whether to keep it (it reduced the
        residual; else the direction before it stays and refinement stops)."""
        self.done += 1
        self.history.append(err / self.scale)
        self.gained = bool(err < self.err)  # False for NaN
        if self.gained:
            self.err = err
        return self.gained


# ---------------------------------------------------------------------------------- driver
@dataclass
class IPMResult:
    """What :func:`cone_ipm` returns.

    Attributes
    ----------
    x, y, z, s : ndarray
        The last iterate.
    status : str
        ``"optimal"``, ``"max_iter"`` or ``"numerical_error"``.
    iterations : int
        Iterations run.
    pcost, dcost : float
        The primal objective and the Lagrangian dual value.
    gap_abs, gap_rel : float
        The absolute and relative gap.
    pres, dres : float
        The primal and dual residuals (the stopping test's measures).
    time : float
        Wall-clock seconds.
    log : list
        One record per iteration.
    """

    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    s: np.ndarray
    status: str
    iterations: int
    pcost: float
    dcost: float
    gap_abs: float
    gap_rel: float
    pres: float
    dres: float
    time: float
    log: list = field(default_factory=list)


def _ninf(v) -> float:
    """``||v||_inf`` (0 if empty; NaN propagates), one compiled pass over the entries."""
    return float(ninf(np.ravel(v)))


#: a step below this ends the run as a numerical error (:func:`damped_step`)
MIN_STEP = 1e-10


def centring(a_aff: float) -> float:
    """CVXOPT's centring parameter ``sigma = (1 - min(1, a_aff))^3`` from the predictor's largest step.

    Parameters
    ----------
    a_aff : float
        The predictor's largest step.

    Returns
    -------
    float
    """
    return (1.0 - min(1.0, a_aff)) ** 3


def damped_step(amax: float, step_fraction: float):
    """The step taken along the corrector: ``min(1, step_fraction amax)``, or None when it collapsed (not finite,
    or below :data:`MIN_STEP`: the run ends as a numerical error).

    Parameters
    ----------
    amax : float
        The largest step into the cone.
    step_fraction : float
        The fraction of it taken.

    Returns
    -------
    float or None
    """
    step = min(1.0, step_fraction * amax)
    return step if np.isfinite(step) and step >= MIN_STEP else None


class StoppingTest:
    """The stopping test and iteration log of the Nesterov-Todd iteration (Clarabel's measures,
    ``docs/guide/robust.md``, "The interior-point engine"), used by :func:`interior_point` on the measures its
    operator computes on its own layout (:class:`Measures`).

    Parameters
    ----------
    norms : tuple of float
        ``(||q||_inf, ||h||_inf, ||b||_inf)`` of the cone QP.
    tols : tuple of float
        ``(tol_gap_abs, tol_gap_rel, tol_feas)``, Clarabel's tolerances.
    max_iter : int
        The iteration limit.
    verbose : bool
        Print the header now and one line per iteration with ``print_fn``.
    print_fn : callable, default print
        Receives the log's lines.
    """

    HEADER = f"{'it':>3} {'pcost':>14} {'dcost':>14} {'gap':>9} {'relgap':>9} {'pres':>9} {'dres':>9} {'step':>7}"

    def __init__(self, norms, tols, max_iter, verbose=False, print_fn=print):
        self.nrm_q, self.nrm_h, self.nrm_b = norms
        self.tol_gap_abs, self.tol_gap_rel, self.tol_feas = tols
        self.max_iter, self.verbose, self.print_fn = max_iter, verbose, print_fn
        self.log: list = []
        self.pcost = self.dcost = self.gap = self.gap_abs = self.gap_rel = self.comp_rel = self.pres = self.dres = (
            np.nan
        )
        if verbose:
            print_fn(self.HEADER)

    def __call__(self, it, pcost, dcost, gap, max_rz, max_rx, nx, ns, nz, step, **extra):
        """Measure iterate ``it`` (``max_rz``, ``max_rx``: the infinity norms of the primal and dual residuals;
        ``nx``, ``ns``, ``nz``: of the iterate's parts) and log it (``extra``: more entries of its log line).
        Returns the final status (``"numerical_error"``: a measure is not finite, ``"optimal"``, ``"max_iter"``)
        or None to iterate on; the measures are kept as attributes."""
        self.pcost, self.dcost = pcost, dcost
        self.gap_abs = gap_abs = abs(pcost - dcost)
        self.gap = gap
        self.gap_rel = gap_rel = gap_abs / max(1.0, min(abs(pcost), abs(dcost)))
        self.comp_rel = gap / max(1.0, min(abs(pcost), abs(dcost)))
        self.pres = pres = max_rz / max(1.0, self.nrm_h + self.nrm_b + nx + ns)
        self.dres = dres = max_rx / max(1.0, self.nrm_q + nx + nz)
        entry = dict(iter=it, pcost=pcost, dcost=dcost, gap=gap, gap_rel=gap_rel, pres=pres, dres=dres, step=step)
        entry.update(extra)
        self.log.append(entry)
        if self.verbose:
            self.print_fn(
                f"{it:3d} {pcost:14.7e} {dcost:14.7e} {gap:9.2e} {gap_rel:9.2e} {pres:9.2e} {dres:9.2e} {step:7.4f}"
            )
        if not all(np.isfinite([pcost, dcost, gap, pres, dres])):
            return "numerical_error"
        if self.meets(self.tol_gap_rel, self.tol_feas):
            return "optimal"
        if it == self.max_iter:
            return "max_iter"
        return None

    def meets(self, tol_gap_rel: float, tol_feas: float) -> bool:
        """Whether the last measured iterate meets the stopping test at relative gap ``tol_gap_rel`` and residuals
        ``tol_feas`` (the absolute gap tolerance unchanged)."""
        tol_abs = self.tol_gap_abs
        return bool(
            self.pres <= tol_feas
            and self.dres <= tol_feas
            and (self.gap_abs <= tol_abs or self.gap_rel <= tol_gap_rel)
            and (self.gap <= tol_abs or self.comp_rel <= tol_gap_rel)
        )

    def refines(self, refine_below: float) -> bool:
        """Whether the corrector of the last measured iterate is refined: its relative gap or complementarity is
        below ``refine_below`` (earlier iterates do not need the digits)."""
        return min(self.gap_rel, self.comp_rel) < refine_below

    def values(self) -> dict:
        """The last iterate's measures (NaN before the first): pcost, dcost, gap_abs, gap_rel, pres, dres."""
        keys = ("pcost", "dcost", "gap_abs", "gap_rel", "pres", "dres")
        return {key: getattr(self, key) for key in keys}


class KKTFailure(Exception):
    """A factorisation or solve of the KKT system failed: the run ends with status ``"numerical_error"``."""


@contextmanager
def kkt_failures():
    """Turn a failed factorisation or solve of the KKT system (``np.linalg.LinAlgError``, or the ``ValueError`` of
    a non-finite right-hand side) into :class:`KKTFailure`, the one failure :func:`interior_point` ends on: an
    operator wraps its solves only, so that any other error (e.g. of a pass reading the data) propagates.

    Yields
    ------
    None
        The ``with`` block runs the factorisation or solve.
    """
    try:
        yield
    except (np.linalg.LinAlgError, ValueError) as exc:
        raise KKTFailure(str(exc)) from exc


class Measures(NamedTuple):
    """What the stopping test measures at an iterate (:meth:`StoppingTest.__call__`'s arguments).

    Attributes
    ----------
    pcost, dcost : float
        The primal objective and the Lagrangian dual value.
    gap : float
        ``s'z``.
    max_rz, max_rx : float
        The infinity norms of the primal and dual residuals.
    nx, ns, nz : float
        The infinity norms of the iterate's parts.
    extra : dict
        More entries of the iteration's log line.
    """

    pcost: float
    dcost: float
    gap: float
    max_rz: float
    max_rx: float
    nx: float
    ns: float
    nz: float
    extra: dict


class IPMRun(NamedTuple):
    """How :func:`interior_point` ended.

    Attributes
    ----------
    status : str
        ``"optimal"``, ``"max_iter"`` or ``"numerical_error"``.
    iterations : int
        Iterations run.
    values : dict
        The last iterate's measures (:meth:`StoppingTest.values`).
    log : list
        One record per iteration.
    """

    status: str
    iterations: int
    values: dict
    log: list


def refine_direction(op, steps: int) -> tuple:
    """Iterative refinement of the operator's current direction by :class:`Refinement`'s rule: the driver of both
    the main loop's corrector and a start point's solve.

    Parameters
    ----------
    op : object
        ``refine_residual() -> (scale, err)`` of the current direction, ``refine_correct() -> err``: solve for a
        correction and measure the corrected direction, ``refine_keep(bool)``: keep it or drop it.
    steps : int
        The most corrections.

    Returns
    -------
    tuple
        The relative residuals before and after each correction.
    """
    scale, err = op.refine_residual()
    rule = Refinement(steps, scale, err)
    while rule.more():
        op.refine_keep(rule.keep(op.refine_correct()))
    return tuple(rule.history)


def interior_point(
    op,
    *,
    max_iter: int = 100,
    tol_gap_abs: float = 1e-8,
    tol_gap_rel: float = 1e-8,
    tol_feas: float = 1e-8,
    step_fraction: float = 0.99,
    refine: int = REFINE_STEPS,
    refine_below: float = 1e-4,
    verbose: bool = False,
    sigma_rule: str = "cvxopt",
    print_fn=print,
    early=None,
    hold=None,
) -> IPMRun:
    """The Nesterov-Todd predictor-corrector iteration [Van10, Sec. 7-9], the one main loop of the interior point,
    on an iteration-level operator ``op`` that holds the iterate wherever its data live (in memory:
    :class:`ConeQPOperator`; on Dask row blocks: :mod:`.row_block_ipm`).

    Each call is one phase of an iteration; the row-block operator does each in at most one pass over its blocks
    (``docs/dask.md``, "The exact interior point on row blocks"):

    - ``start()``: the start point; ``measure() -> Measures`` at the current iterate (its residuals, costs, gap
      and norms; computes the NT scaling);
    - ``factor_predictor()``: factor the reduced KKT system and solve the predictor (affine-scaling) direction;
    - ``predictor_step(gap_terms) -> (a_aff, terms)``: its largest step into the cone and, with ``gap_terms``,
      ``(lam'lam, lam'(ds + dz), ds'dz)`` of its scaled directions (Mehrotra's rule), else None;
    - ``corrector(shift, refining)``: solve the corrector with centring ``shift = sigma mu``; when ``refining``
      the direction is then refined (:func:`refine_direction`: ``refine_residual``, ``refine_correct``,
      ``refine_keep``);
    - ``corrector_step() -> (amax, finite)``: the corrector's largest step and whether its direction is finite;
    - ``move(step) -> halvings``: take ``step * 0.5**h`` for the smallest ``h < 30`` that keeps every ``s`` and
      ``z`` strictly inside the cone as computed in floating point, and return ``h`` (None when no such ``h``, or a
      direction is NaN);
    - ``degree`` (the cone's degree) and ``norms`` (``||q||, ||h||, ||b||``, the stopping test's scales).

    A failed factorisation or solve (:class:`KKTFailure`, raised by the operator inside :func:`kkt_failures`) ends
    the run with status ``"numerical_error"``, as does a collapsed step (:func:`damped_step`).

    Parameters
    ----------
    op : object
        The iteration-level operator (the members above).
    max_iter : int, default 100
        Iteration limit.
    tol_gap_abs, tol_gap_rel, tol_feas : float, default 1e-8
        The stopping test's tolerances (:class:`StoppingTest`).
    step_fraction : float, default 0.99
        The fraction of the largest step taken.
    refine : int, default 4
        The most refinement steps per corrector solve.
    refine_below : float, default 1e-4
        The relative gap below which the corrector is refined.
    verbose : bool, default False
        Log every iteration.
    sigma_rule : {"cvxopt", "mehrotra"}
        The centring rule: :func:`centring` from the predictor's step, or Mehrotra's from its gap.
    print_fn : callable, default print
        Receives the log's lines.
    early : tuple or None, default None
        ``(tol_gap_rel, tol_feas, accept)``: an iterate that meets the stopping test at these looser tolerances ends
        the run as ``"optimal"`` when ``accept()`` (a callable without arguments, on the operator's current iterate)
        says so; the others go on to the tolerances above.
    hold : tuple or None, default None
        ``(tol_gap_rel, accept)``: an iterate that meets the stopping test ends the run only when ``accept()`` says
        so or it also meets this tighter relative gap (or at ``max_iter``); the others go on.  The robust SVM's route
        holds a run whose weights ``w`` are neither resolved nor at round-off level: near the apex of a cone (a fit
        whose optimum is ``w = 0``) ``w`` shrinks with the gap, and the engine's own tolerance leaves it wherever the
        last step landed.

    Returns
    -------
    IPMRun
    """
    test = StoppingTest(op.norms, (tol_gap_abs, tol_gap_rel, tol_feas), max_iter, verbose, print_fn)

    def ended(status, it):
        return IPMRun(status, it, test.values(), test.log)

    op.start()
    step = 0.0
    for it in range(max_iter + 1):
        m = op.measure()
        status = test(it, m.pcost, m.dcost, m.gap, m.max_rz, m.max_rx, m.nx, m.ns, m.nz, step, **m.extra)
        if status == "optimal" and hold is not None and it < max_iter:
            if not test.meets(hold[0], tol_feas) and not hold[1]():
                status = None
        if status is None and early is not None and test.meets(early[0], early[1]) and early[2]():
            status = "optimal"
        if status is not None:
            return ended(status, it)
        mu = m.gap / op.degree
        try:
            op.factor_predictor()
            a_aff, terms = op.predictor_step(sigma_rule == "mehrotra")
            if terms is None:
                sigma = centring(a_aff)
            else:  # the predictor's gap (lam + a ds)'(lam + a dz), from its three sums
                a = min(1.0, a_aff)
                gap_aff = terms[0] + a * terms[1] + a * a * terms[2]
                sigma = min(1.0, max(0.0, gap_aff / max(m.gap, 1e-300))) ** 3
            refining = refine > 0 and test.refines(refine_below)  # the predictor only sets sigma: not refined
            op.corrector(sigma * mu, refining)
            if refining:
                test.log[-1]["refine"] = refine_direction(op, refine)
        except KKTFailure:
            return ended("numerical_error", it)
        amax, finite = op.corrector_step()
        step = damped_step(amax, step_fraction)
        if step is None or not finite:
            return ended("numerical_error", it)
        halvings = op.move(step)  # the step is exact in the scaled space; rounding may put s or z on the boundary
        if halvings is None:
            return ended("numerical_error", it)
        step *= 0.5**halvings
    return ended("max_iter", max_iter)  # pragma: no cover - loop returns


def backoff(trial, step: float, limit: int = 30):
    """The smallest ``h < limit`` for which ``trial(step * 0.5**h)`` is True (the step keeps the iterate inside the
    cone), or None (none does, or ``trial`` returns None: a NaN direction that no shorter step helps).

    Parameters
    ----------
    trial : callable
        ``trial(step) -> bool or None``.
    step : float
        The full step.
    limit : int, default 30
        The most halvings tried.

    Returns
    -------
    int or None
    """
    for h in range(limit):
        ok = trial(step * 0.5**h)
        if ok is None:
            return None
        if ok:
            return h
    return None


class ConeQPOperator:
    """The iteration-level operator of :func:`interior_point` on an in-memory cone QP ``prob`` (the members listed by
    :func:`cone_ipm`): the iterate ``(x, y, z, s)`` as arrays, the KKT system from ``prob.kkt_factor``.

    Parameters
    ----------
    prob : object
        The cone QP.
    refine : int
        The most refinement steps of the least-squares start's solve (when ``prob`` has no ``initial_point``).
    """

    def __init__(self, prob, refine: int = REFINE_STEPS):
        self.prob, self.refine = prob, refine
        self.cones = cones = prob.cones
        self.q, self.h, self.b = prob.q, prob.h, prob.b
        self.norms = (_ninf(self.q), _ninf(self.h), _ninf(self.b))
        self.degree = cones.degree
        # h' z over h's nonzero prefix: the cones' rows of h are often zero (the robust SVM's, which per sample
        # hold most of z, so a dot product over all of z would be a pass per iteration for nothing)
        hnz = np.flatnonzero(self.h)
        self.hn = int(hnz[-1]) + 1 if hnz.size else 0
        # work arrays of the cone's size, reused by every iteration (fresh ones are zeroed by the kernel on every use
        # once they exceed the allocator's reuse threshold; see kkt.Workspace)
        self.buffers: dict = {}
        self.scaling = None
        self.fused = getattr(prob, "Gx_GTz", None)
        self.factor_first = getattr(prob, "kkt_factor_first", None)

    def work(self, name: str) -> np.ndarray:
        if name not in self.buffers:
            self.buffers[name] = np.empty(self.cones.size)
        return self.buffers[name]

    def _g_pair(self, x, z, out=None, scaling=None):
        """``(G x, G' z)``: one pass over the data where the problem fuses them (``G x`` into ``out``; with the
        iteration's ``scaling``, the same pass may serve ``kkt_factor(scaling)``)."""
        if self.fused is None:
            return self.prob.Gx(x), self.prob.GTz(z)
        return self.fused(x, z, out=out) if scaling is None else self.fused(x, z, out=out, scaling=scaling)

    # ------------------------------------------------------------------ start and measures
    def start(self):
        prob, cones = self.prob, self.cones
        start = getattr(prob, "initial_point", None)
        if start is not None:
            self.x, self.y, self.z, self.s = start()
            return
        # CVXOPT's start: identity-scaled least squares, shifted into the cone
        scaling = self.scaling = Scaling(cones)
        try:
            self.solve = prob.kkt_factor(scaling)
            self._solve_direction((-self.q, self.b.copy(), self.h.copy()), {})
            if self.refine:
                refine_direction(self, self.refine)
            x, y, z = self.d
        except (np.linalg.LinAlgError, KKTFailure):
            x, y, z = np.zeros_like(self.q), np.zeros_like(self.b), np.zeros(cones.size)
        self.x, self.y = x, y
        self.s = shift_into_cone(cones, -z)
        self.z = shift_into_cone(cones, z)
        self.scaling = None

    def measure(self) -> Measures:
        prob, x, y, z, s = self.prob, self.x, self.y, self.z, self.s
        # the scaling first (it needs s and z only), so that the residual's pass over the data may also serve the
        # factorisation; lam = W z, formed with the scaling
        self.lam = lam = self.work("lam")
        self.scaling = (Scaling(self.cones) if self.scaling is None else self.scaling).update(s, z, lam)
        Px = prob.Px(x)
        Gx, GTz = self._g_pair(x, z, self.work("Gx"), self.scaling)
        rx = Px + self.q  # in place from here on: the same sums as ``Px + q + A'y + G'z`` with fewer temporaries
        if self.b.size:  # A'y (none without equality constraints)
            rx += prob.ATy(y)
        rx += GTz
        ry = prob.Ax(x) - self.b
        self.rz = Gx
        nrz, ns, nz = residual_norms(Gx, s, self.h, z)  # rz = Gx + s - h in place, and three norms, in one pass
        self.nrx, self.nry = -rx, -ry
        xPx = float(x @ Px)
        pcost = 0.5 * xPx + float(self.q @ x)
        hn = self.hn
        dcost = -0.5 * xPx - float(self.h[:hn] @ z[:hn]) - float(self.b @ y) + float(x @ rx)  # Lagrangian
        return Measures(pcost, dcost, float(s @ z), max(nrz, _ninf(ry)), _ninf(rx), _ninf(x), ns, nz, {})

    # ------------------------------------------------------------------ directions
    def factor_predictor(self):
        # u = ds~ + dz~ = lam \ (-lam o lam) = -lam; where the problem has kkt_factor_first, the predictor is
        # solved with the factorisation, in its pass over the data
        work, scaling = self.work, self.scaling
        u, bz = newton_rhs(self.cones, scaling, self.lam, None, None, 0.0, self.rz, work("u_pred"), work("bz"))
        self.u = u
        with kkt_failures():
            if self.factor_first is None:
                self.solve = self.prob.kkt_factor(scaling)
                self._solve_direction((self.nrx, self.nry, bz), {"dz": work("dz_pred")})
            else:
                self.solve, self.d = self.factor_first(scaling, self.nrx, self.nry, bz, work("dz_pred"))

    def predictor_step(self, gap_terms: bool):
        dza = self.work("dzt_pred")
        amax = scaled_directions(self.cones, self.scaling, self.lam, self.u, self.d[2], dza)  # u becomes dsa
        self.dsa, self.dza = self.u, dza
        if not gap_terms:
            return amax, None
        lam = self.lam
        return amax, (float(lam @ lam), float(lam @ self.dsa) + float(lam @ dza), float(self.dsa @ dza))

    def corrector(self, shift: float, refining: bool):
        # u = lam \ (-lam o lam - dsa o dza + shift e); the refinement's scratch arrays are the spent predictor's
        # (a work array first touched late in a solve costs the kernel page faults for every page, many times a
        # pass over an array already touched)
        work = self.work
        self.u, bz = newton_rhs(
            self.cones, self.scaling, self.lam, self.dsa, self.dza, shift, self.rz, work("u_corr"), work("bz")
        )
        bufs = {"dz": work("dz_corr"), "Gdx": work("Gx"), "dz_err": work("dzt_pred"), "dz_refined": work("u_pred")}
        with kkt_failures():
            self._solve_direction((self.nrx, self.nry, bz), bufs)

    def corrector_step(self):
        dzt = self.work("dzt_corr")
        amax = scaled_directions(self.cones, self.scaling, self.lam, self.u, self.d[2], dzt)  # u becomes dst
        # a NaN in dst or dz shows in the step, which then fails its interior test (move: a pass less than
        # testing them here); an inf shows in the next iteration's residuals
        return amax, all(np.isfinite(_ninf(v)) for v in self.d[:2])

    def move(self, step: float):
        cones, work, s, z = self.cones, self.work, self.s, self.z
        dx, dy, dz = self.d
        # the new s and z go to the buffer of each pair that is not the current iterate
        s_out = work("s1") if s is work("s0") else work("s0")
        z_out = work("z1") if z is work("z0") else work("z0")

        def trial(a):
            s_new, inside = step_into(cones, s, self.u, a, out=s_out, scaling=self.scaling)
            failed = s_new
            if inside:
                z_new, inside = step_into(cones, z, dz, a, out=z_out)
                failed = z_new
            if not inside and not np.isfinite(_ninf(failed)):  # a NaN direction: no shorter step helps
                return None
            return inside

        halvings = backoff(trial, step)
        if halvings is not None:
            a = step * 0.5**halvings
            self.x = self.x + a * dx
            self.y = self.y + a * dy
            self.s, self.z = s_out, z_out
        return halvings

    # ------------------------------------------------------------------ one KKT solve and its refinement
    def _solve_direction(self, rhs, bufs):
        """Solve ``K d = rhs`` with the current factorisation (``bufs``: work arrays by role, "dz" and "dz_refined"
        (the solve's dz and a corrected one, in turn), "Gdx" (a residual's G dx) and "dz_err" (a correction's dz);
        a role without one gets new arrays)."""
        self.rhs, self.bufs = rhs, bufs
        self.d = self.solve(*rhs, bufs.get("dz"))
        self.spare = bufs.get("dz_refined")

    def _residual(self, d):
        """``(rx, ry, rz)`` of ``rhs - K d`` and its norm ``max(||rx||, ||ry||, ||W^{-1} rz||)``: rz = bz - G dx +
        W'W dz in G dx's array, its scaled norm in that pass (the cone rows' residuals are measured after scaling
        by W^{-1}, the metric in which the step is taken; unscaled, the huge eigenvalues of W'W dominate them)."""
        bx, by, bz = self.rhs
        dx, dy, dz = d
        Gdx, GTdz = self._g_pair(dx, dz, self.bufs.get("Gdx"))
        nrz = self.scaling.kkt_rz(bz, dz, Gdx)
        prob = self.prob
        rx, ry = bx - prob.Px(dx) - prob.ATy(dy) - GTdz, by - prob.Ax(dx)
        return (rx, ry, Gdx), max(_ninf(rx), _ninf(ry), nrz)

    def refine_residual(self):
        bx, by, bz = self.rhs
        self.r, err = self._residual(self.d)
        return max(_ninf(bx), _ninf(by), self.scaling.inv_norm(bz), 1e-300), err

    def refine_correct(self) -> float:
        with kkt_failures():
            ex, ey, ez = self.solve(*self.r, self.bufs.get("dz_err"))
        dx, dy, dz = self.d
        self.candidate = dx + ex, dy + ey, np.add(dz, ez, out=self.spare)
        self.r, err = self._residual(self.candidate)
        return err

    def refine_keep(self, keep: bool):
        if keep:
            self.spare = None if self.spare is None else self.d[2]  # the next correction goes to the array left
            self.d = self.candidate


def cone_ipm(
    prob,
    *,
    max_iter: int = 100,
    tol_gap_abs: float = 1e-8,
    tol_gap_rel: float = 1e-8,
    tol_feas: float = 1e-8,
    step_fraction: float = 0.99,
    refine: int = REFINE_STEPS,
    refine_below: float = 1e-4,
    verbose: bool = False,
    sigma_rule: str = "cvxopt",
    print_fn=print,
    early=None,
    hold=None,
) -> IPMResult:
    """Solve the cone QP described by ``prob`` (see module docstring): :func:`interior_point` on its
    :class:`ConeQPOperator`.

    ``prob`` provides: ``q, h, b`` (arrays; ``b`` may be empty), ``cones`` (:class:`ConeSpec`),
    ``Px(x)``, ``Gx(x)``, ``GTz(z)``, ``Ax(x)``, ``ATy(y)`` and ``kkt_factor(scaling)`` returning a
    function ``solve(bx, by, bz, dz_out) -> (dx, dy, dz)`` (or raising ``np.linalg.LinAlgError``; ``dz_out``:
    None or a work array of the cone's size that the solve may write ``dz`` into -- the driver uses the returned
    ``dz`` and keeps each work array until that direction is spent); optionally
    ``initial_point() -> (x, y, z, s)`` with ``s, z`` interior (else CVXOPT's shifted least-squares start)
    and ``Gx_GTz(x, z, out, scaling=None) -> (Gx, G'z)`` (both products in one pass over the data, ``G x`` into
    the work array ``out``; the residual's call passes the iteration's ``scaling``, before ``kkt_factor(scaling)``,
    so that the same pass may compute what the factorisation needs from the data), and
    ``kkt_factor_first(scaling, bx, by, bz, dz_out) -> (solve, (dx, dy, dz))``: the factorisation with the
    predictor's solve (the right-hand side of each iteration's first solve is known before the factorisation, so
    the problem may take its pass over the data with the factorisation's).  Work arrays spare the page
    faults of fresh cone-size arrays.
    Up to ``refine`` steps of iterative refinement follow each corrector solve once the relative gap is below
    ``refine_below`` (earlier iterates do not need the digits); :class:`Refinement` says when to stop.

    Parameters
    ----------
    prob : object
        The cone QP, with the members above.
    max_iter : int, default 100
        Iteration limit.
    tol_gap_abs, tol_gap_rel, tol_feas : float, default 1e-8
        The stopping test's tolerances (:class:`StoppingTest`).
    step_fraction : float, default 0.99
        The fraction of the largest step taken.
    refine : int, default 4
        The most refinement steps per corrector solve.
    refine_below : float, default 1e-4
        The relative gap below which the corrector is refined.
    verbose : bool, default False
        Log every iteration.
    sigma_rule : {"cvxopt", "mehrotra"}
        The centring rule: :func:`centring` from the predictor's step, or Mehrotra's from its gap.
    print_fn : callable, default print
        Receives the log's lines.
    early : tuple or None, default None
        ``(tol_gap_rel, tol_feas, accept)``: :func:`interior_point`'s early stop, with ``accept(x)`` judging the
        iterate's ``x``.
    hold : tuple or None, default None
        ``(tol_gap_rel, accept)``: :func:`interior_point`'s hold, with ``accept(x)`` judging the iterate's ``x``.

    Returns
    -------
    IPMResult
    """
    t_start = time.perf_counter()
    op = ConeQPOperator(prob, refine)
    if early is not None:
        gap_rel, feas, accept = early
        early = (gap_rel, feas, lambda: accept(op.x))
    if hold is not None:
        hold_gap, hold_accept = hold
        hold = (hold_gap, lambda: hold_accept(op.x))
    run = interior_point(
        op,
        max_iter=max_iter,
        tol_gap_abs=tol_gap_abs,
        tol_gap_rel=tol_gap_rel,
        tol_feas=tol_feas,
        step_fraction=step_fraction,
        refine=refine,
        refine_below=refine_below,
        verbose=verbose,
        sigma_rule=sigma_rule,
        print_fn=print_fn,
        early=early,
        hold=hold,
    )
    v = run.values
    return IPMResult(
        op.x,
        op.y,
        op.z,
        op.s,
        run.status,
        run.iterations,
        v["pcost"],
        v["dcost"],
        v["gap_abs"],
        v["gap_rel"],
        v["pres"],
        v["dres"],
        time.perf_counter() - t_start,
        run.log,
    )


class DenseConeQP:
    """A cone QP with dense matrices and a dense KKT solve (reference / small problems).

    Parameters
    ----------
    P : ndarray of shape (N, N)
        The quadratic term.
    q : ndarray of shape (N,)
        The linear term.
    G : ndarray of shape (cones.size, N)
        The cone constraints' matrix.
    h : ndarray of shape (cones.size,)
        Their right-hand side.
    cones : ConeSpec
        The cone.
    A : ndarray of shape (p, N), optional
        The equality constraints' matrix.
    b : ndarray of shape (p,), optional
        Their right-hand side.
    """

    def __init__(self, P, q, G, h, cones: ConeSpec, A=None, b=None):
        self.P, self.q, self.G, self.h, self.cones = P, q, G, h, cones
        n = q.shape[0]
        self.A = np.zeros((0, n)) if A is None else A
        self.b = np.zeros(0) if b is None else b

    def Px(self, x):
        return self.P @ x

    def Gx(self, x):
        return self.G @ x

    def GTz(self, z):
        return self.G.T @ z

    def Ax(self, x):
        return self.A @ x

    def ATy(self, y):
        return self.A.T @ y

    def kkt_factor(self, scaling: Scaling):
        WiG = (
            np.column_stack([scaling.apply(scaling.apply(g, inverse=True), inverse=True) for g in self.G.T])
            if self.G.shape[1]
            else np.zeros_like(self.G)
        )
        H = self.P + self.G.T @ WiG
        p = self.A.shape[0]
        K = np.block([[H, self.A.T], [self.A, np.zeros((p, p))]])
        lu = __import__("scipy.linalg", fromlist=["lu_factor"]).lu_factor(K)
        n = self.q.shape[0]

        def solve(bx, by, bz, dz_out=None):  # dz in a new array (dz_out unused)
            # dz = W^{-2} (G dx - bz)  =>  (P + G'W^{-2}G) dx + A'dy = bx + G'W^{-2} bz
            wbz = scaling.apply(scaling.apply(bz, inverse=True), inverse=True)
            sol = __import__("scipy.linalg", fromlist=["lu_solve"]).lu_solve(
                lu, np.concatenate([bx + self.G.T @ wbz, by])
            )
            dx, dy = sol[:n], sol[n:]
            dz = scaling.apply(scaling.apply(self.G @ dx - bz, inverse=True), inverse=True)
            return dx, dy, dz

        return solve
