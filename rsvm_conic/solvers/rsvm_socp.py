"""RSVM_SOCP [BBBB10, eq. 16]: its objective, the projected-Newton route and the cone IPM.

:class:`RobustKernelObjective` is the reduced function ``F(alpha) = Phi(alpha, alpha**2)`` of eq. 16 after
eliminating ``t, t'`` (value, gradient, Hessian, multipliers), shared by every route, by the certificates of
:mod:`rsvm_conic.solvers.kernel_uncertainty` and by RSVM_QN (:mod:`rsvm_conic.solvers.quasi_newton`).
:func:`solve_rsvm_socp` and :func:`rsvm_socp_grid` run a projected Newton (active-set) method on ``F``,
warm-started along a grid, stopped by the Frank-Wolfe gap of a Lagrangian bound (:func:`ipm_certificate`,
:func:`~rsvm_conic.certify.kernel.frank_wolfe_gap`); :func:`rsvm_socp_ipm` solves the exact conic form with the
engine of :mod:`rsvm_conic.solvers.ipm.engine` and is the fallback.  The certificate, the Newton step, the warm
starts and the fallback are derived in the user guide (``docs/guide/kernel_robust.md``, "The RSVM_SOCP solver");
``rsvm-conic bench robust-ipm-grid`` measures the routes against each other.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import numpy as np

from .._threads import blas_threads_by
import scipy.linalg as sla
from scipy.linalg.lapack import dpotrf, dpotrs

from .._validation import check_two_classes, psd_factor
from ..certify.contract import SolveInfo, certify, relative_gap
from ..certify.kernel import frank_wolfe_gap, lagrangian_lower_bound
from ..certify.projections import project_dual_set
from ..exceptions import SolverError
from .ipm.engine import ConeSpec, Scaling, cone_ipm
from .ipm.cone_loops import numpy_path_for
from .svm_dual import libsvm_dual, submatrix

__all__ = [
    "RSVMSOCPResult",
    "RobustKernelObjective",
    "solve_rsvm_socp",
    "rsvm_socp_grid",
    "rsvm_socp_ipm",
    "ipm_certificate",
    "prepare_beta",
]


# ------------------------------------------------------------------------------------ helpers
def prepare_beta(beta, n: int, factor: bool = False, psd_tol: float = 1e-10):
    """``(beta_hat, B)`` from a PSD ``beta_hat`` (n x n) or, with ``factor=True``, a factor ``B`` (r x n).

    Parameters
    ----------
    beta : ndarray
        ``beta_hat`` of shape (n, n), or with ``factor=True`` a factor ``B`` of shape (r, n).
    n : int
        The number of samples.
    factor : bool, default False
        Whether ``beta`` is a factor.
    psd_tol : float, default 1e-10
        Negative eigenvalues down to ``-psd_tol max|lambda|`` count as 0.

    Returns
    -------
    beta_hat : ndarray of shape (n, n)
    B : ndarray of shape (r, n)
        ``B'B = beta_hat``.

    Raises
    ------
    ValueError
        For NaN or inf, a wrong shape, or a ``beta_hat`` that is not PSD.
    """
    beta = np.asarray(beta, dtype=float)
    if not np.all(np.isfinite(beta)):
        raise ValueError("beta contains NaN or inf.")
    if factor:
        if beta.ndim != 2 or beta.shape[1] != n:
            raise ValueError(f"a beta factor B must have shape (r, {n}); got {beta.shape}.")
        return beta.T @ beta, beta
    if beta.shape != (n, n):
        raise ValueError(f"beta must be an {n} x {n} PSD matrix (or pass factor=True with B); got {beta.shape}.")
    beta = 0.5 * (beta + beta.T)
    # one eigendecomposition checks (lambda_min >= -psd_tol max|lambda|) and factors (null directions dropped)
    B = psd_factor(
        beta,
        "beta",
        neg_tol=psd_tol,
        drop_tol=1e-14,
        hint="RSVM_SOCP needs a PSD beta: use rsvm_conic.uncertainty.kernel_matrix.psd_part(beta) "
        "(Sec. 5.1's PSD approximation)",
    ).T
    if B.shape[0] == 0:
        B = np.zeros((1, n))
    return beta, B


@dataclass
class RSVMSOCPResult:
    """One RSVM_SOCP solve.

    Attributes
    ----------
    alpha, nu : ndarray of shape (n,)
        The solution of (16').
    objective : float
        ``Phi(alpha, nu)``.
    status : str
        ``"optimal"`` when certified.
    route : str
        The route that ran.
    iterations : int
        Its iterations.
    time : float
        Wall-clock seconds.
    info : dict
        Route-specific extras.
    solve_info : SolveInfo or None
        The certificate: primal ``F``, a feasible dual value.
    """

    alpha: np.ndarray
    nu: np.ndarray
    objective: float
    status: str
    route: str
    iterations: int
    time: float
    info: dict = field(default_factory=dict)
    solve_info: SolveInfo | None = None  # certificate: primal F, feasible dual value (see solve_rsvm_socp)


# ------------------------------------------------------------------------------------ exact conic route
class _RSVMSOCPCone:
    """(16') as a cone QP: x = (alpha, nu, tau); orthant (alpha >= 0, C - alpha >= 0); n second-order cones
    (c + nu_i / c, nu_i / c - c, 2 alpha_i), each ``nu_i >= alpha_i^2`` for any ``c = boost > 0`` (the rows differ by
    a hyperbolic rotation of the cone: ``c = 1`` is the usual ``(1 + nu, nu - 1, 2 alpha)``); one cone (tau, B nu);
    y'alpha = 0."""

    def __init__(self, Q, B, y, C, kappa, boost=1.0):
        n = Q.shape[0]
        self.n, self.r = n, B.shape[0]
        self.Q, self.B, self.y, self.C, self.kappa = Q, B, y, C, kappa
        self.c = float(boost)
        self.BtB = B.T @ B
        self.cones = ConeSpec(2 * n, [(n, 3), (1, self.r + 1)])
        self.q = np.concatenate([-np.ones(n), np.zeros(n), [0.5 * kappa]])
        h = np.zeros(self.cones.size)
        hl, (h3, hb) = self.cones.split(h)
        hl[n:] = C
        h3[:, 0] = self.c
        h3[:, 1] = -self.c
        self.h = h
        self.b = np.zeros(1)

    def Px(self, x):
        out = np.zeros_like(x)
        out[: self.n] = self.Q @ x[: self.n]
        return out

    def Gx(self, x):
        n = self.n
        a, nu, tau = x[:n], x[n : 2 * n], x[2 * n]
        out = np.empty(self.cones.size)
        ol, (o3, ob) = self.cones.split(out)
        ol[:n] = -a
        ol[n:] = a
        o3[:, 0] = -nu / self.c
        o3[:, 1] = -nu / self.c
        o3[:, 2] = -2.0 * a
        ob[0, 0] = -tau
        ob[0, 1:] = -(self.B @ nu)
        return out

    def GTz(self, z):
        n = self.n
        zl, (z3, zb) = self.cones.split(z)
        out = np.empty(2 * n + 1)
        out[:n] = -zl[:n] + zl[n:] - 2.0 * z3[:, 2]
        out[n : 2 * n] = -(z3[:, 0] + z3[:, 1]) / self.c - self.B.T @ zb[0, 1:]
        out[2 * n] = -zb[0, 0]
        return out

    def Ax(self, x):
        return np.array([self.y @ x[: self.n]])

    def ATy(self, v):
        out = np.zeros(2 * self.n + 1)
        out[: self.n] = self.y * v[0]
        return out

    def kkt_factor(self, scaling: Scaling):
        n = self.n
        d = scaling.d_l
        H = np.zeros((2 * n + 1, 2 * n + 1))
        H[:n, :n] = self.Q
        ia, iv = np.arange(n), np.arange(n, 2 * n)
        # rotated cones: D_i = beta^-2 (2 J w w' J - J); G rows: (-nu, -nu, -2 alpha)
        b3, w3 = scaling.beta[0], scaling.wbar[0].copy()
        w3[:, 1:] *= -1.0
        D = (2.0 * w3[:, :, None] * w3[:, None, :] - np.diag([1.0, -1.0, -1.0])) / (b3**2)[:, None, None]
        H[ia, ia] += d[:n] + d[n:] + 4.0 * D[:, 2, 2]
        H[ia, iv] += 2.0 * (D[:, 2, 0] + D[:, 2, 1]) / self.c
        H[iv, ia] = H[ia, iv]
        H[iv, iv] += (D[:, 0, 0] + 2.0 * D[:, 0, 1] + D[:, 1, 1]) / self.c**2
        # big cone (tau, B nu)
        bb, wb = scaling.beta[1][0], scaling.wbar[1][0]
        w0, w1 = wb[0], wb[1:]
        Bw = self.B.T @ w1
        H[n : 2 * n, n : 2 * n] += (self.BtB + 2.0 * np.outer(Bw, Bw)) / bb**2
        col = -2.0 * w0 * Bw / bb**2  # B' D_10
        H[n : 2 * n, 2 * n] += col
        H[2 * n, n : 2 * n] += col
        H[2 * n, 2 * n] += (2.0 * w0**2 - 1.0) / bb**2
        H[np.diag_indices_from(H)] += 1e-13 * (1.0 + np.abs(np.diag(H)).max())
        cho = sla.cho_factor(H, lower=False)
        Ay = np.zeros(2 * n + 1)
        Ay[:n] = self.y
        u2 = sla.cho_solve(cho, Ay)
        yu2 = float(Ay @ u2)

        def solve(bx, by, bz, dz_out=None):  # dz in a new array (dz_out unused)
            wbz = scaling.apply_inv_sq(bz)
            u1 = sla.cho_solve(cho, bx + self.GTz(wbz))
            dy = (float(Ay @ u1) - by[0]) / yu2
            dx = u1 - dy * u2
            dz = scaling.apply_inv_sq(self.Gx(dx) - bz)
            return dx, np.array([dy]), dz

        return solve


@blas_threads_by(lambda Q, B, y, *args, **kwargs: float(np.size(y)) ** 3)  # n x n factorisations
def rsvm_socp_ipm(Q, B, y, C, kappa, **opts):
    """Solve (16') exactly with the cone IPM (the interior-point method for RSVM_SOCP: the fallback of
    :func:`solve_rsvm_socp` and the ``"ipm"`` route of ``KernelRobustSOCPProblem``); returns ``(alpha, nu, info)``.

    ``opts`` go to :func:`~rsvm_conic.solvers.ipm.engine.cone_ipm` (``max_iter``, ``tol_gap_rel``, ...); here
    ``refine`` defaults to at most 3 steps of iterative refinement per corrector solve (the engine's default is
    :data:`~.ipm.engine.REFINE_STEPS`, with :class:`~.ipm.engine.Refinement`'s rule).  Near the optimum every rotated
    cone ``alpha_i^2 <= nu_i`` is active, the scalings' entries span many orders of magnitude,
    and the normal equations' solve loses its digits (a KKT residual of order one or more relative to the
    right-hand side in the last iterations): one correction does not repair it and the iterates lose primal
    feasibility, while up to three, by :class:`~.ipm.engine.Refinement`'s rule (fewer once the residual is below 1e-6
    of the right-hand side or stops falling), do.  A step costs a product with ``Q`` and two triangular solves,
    little beside a factorisation per iteration.  ``rsvm-conic bench robust-ipm-grid`` prints how many points of the
    paper's grid this route solves to ``optimal``.

    ``boost`` (default ``sqrt(C)``) writes each rotated cone as ``(c + nu / c, nu / c - c, 2 alpha)``: with c = 1
    the first two entries, ``1 + nu`` and ``nu - 1``, differ by 2 while ``nu`` reaches ``C^2``, and a cone's
    distance to its boundary is a small difference of such entries, so at large C the iterates lose that distance to
    rounding.  ``c = sqrt(C)`` balances the two entries over the range of ``nu`` (smaller and larger powers of C
    leave more runs short of ``optimal`` on Sec. 5.1's data).  A run that does not end optimal is run once more with
    c = 1 unless the caller gave ``boost``; ``info["attempts"]`` lists ``(boost, status, iterations)`` of each run.

    Parameters
    ----------
    Q : ndarray of shape (n, n)
        ``Y K_bar Y``.
    B : ndarray of shape (r, n)
        A factor of ``beta_hat``.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    C : float or ndarray of shape (n,)
        The box's bound.
    kappa : float
        The robust term's weight.
    **opts
        ``boost``, and options of :func:`~rsvm_conic.solvers.ipm.engine.cone_ipm`.

    Returns
    -------
    alpha : ndarray of shape (n,)
    nu : ndarray of shape (n,)
    info : dict
        ``status``, ``iterations``, ``gap_rel``, ``pres``, ``dres``, ``pcost``, ``dcost``, ``boost``, ``attempts``.
    """
    opts.setdefault("refine", 3)
    n = Q.shape[0]
    if kappa == 0:  # no robust term: drop nu, tau (they would be unbounded above); plain SVM dual
        B = np.zeros((1, n))
    given = "boost" in opts
    c_max = float(np.max(C))  # the weighted box: its largest bound sets the scale
    boosts = [opts.pop("boost")] if given else [float(np.sqrt(c_max))] + ([1.0] if c_max != 1.0 else [])
    attempts = []
    for boost in boosts:
        with numpy_path_for(Q.size + B.size):  # small: the cone kernels' numpy twins, nothing compiled
            res = cone_ipm(_RSVMSOCPCone(Q, B, y, C, kappa, boost), **opts)
        attempts.append((boost, res.status, res.iterations))
        if res.status == "optimal":
            break
    alpha, nu = res.x[:n], res.x[n : 2 * n]
    if kappa == 0:
        nu = alpha**2
    return (
        alpha,
        nu,
        {
            "status": res.status,
            "iterations": sum(a[2] for a in attempts),
            "gap_rel": res.gap_rel,
            "pres": res.pres,
            "dres": res.dres,
            "pcost": res.pcost,
            "dcost": res.dcost,
            "boost": boost,
            "attempts": attempts,
        },
    )


# ------------------------------------------------------------------------------------ the objective
class RobustKernelObjective:
    """``F(alpha) = 1/2 alpha'Q alpha + kappa/2 sqrt(nu'M nu) - e'alpha``, ``nu = alpha * alpha``: problem (15)
    with ``t`` eliminated -- its value, gradient, Hessian and multipliers, for every route.

    ``M`` is ``beta_hat`` (PSD: RSVM_SOCP, eq. 16') or the original ``beta`` (RSVM_QN, eq. 17: symmetric,
    elementwise nonnegative).  With a factor ``B`` (r x n, ``B'B = M``) the products with ``M`` go through
    ``B`` when r is small (``3 r < n``).  With ``u = M nu`` and ``s = sqrt(max(nu'u, 0))``:

    * gradient ``Q alpha - e + kappa alpha * u / s`` (the robust term is 2-homogeneous; where ``s = 0``,
      e.g. at ``alpha = 0``, its gradient is taken as 0);
    * Hessian ``Q + kappa [diag(u)/s + 2 D_a M D_a / s - 2 (a*u)(a*u)'/s^3]`` (``D_a = diag(alpha)``),
      with ``max(u, 0)`` in the diagonal term: the same where ``M`` is elementwise nonnegative (then
      ``u >= 0``); elsewhere it keeps the Newton matrix nearer to PSD;
    * multipliers of ``alpha_i^2 <= nu_i`` in (16') at any ``nu``: ``lam = kappa/2 M nu / sqrt(nu'M nu)``.

    ``kappa`` is fixed per object; :meth:`at_kappa` gives the same data with another ``kappa``.

    Parameters
    ----------
    Q : ndarray of shape (n, n)
        ``Y K_bar Y``.
    M : ndarray of shape (n, n)
        ``beta_hat`` or ``beta``.
    kappa : float
        The robust term's weight.
    B : ndarray of shape (r, n), optional
        A factor with ``B'B = M``.
    """

    def __init__(self, Q, M, kappa, B=None):
        self.Q, self.M, self.B = Q, M, B
        self.kappa = float(kappa)
        self.low_rank = B is not None and B.shape[0] * 3 < B.shape[1]
        self._cache = {}  # diag(M), max row sum of |M|: shared by the at_kappa copies

    def at_kappa(self, kappa) -> "RobustKernelObjective":
        other = copy.copy(self)
        other.kappa = float(kappa)
        return other

    @property
    def M_diag(self) -> np.ndarray:
        if "diag" not in self._cache:
            self._cache["diag"] = np.diag(self.M).copy()
        return self._cache["diag"]

    @property
    def M_absrow(self) -> float:
        """``max_i sum_j |M_ij|``."""
        if "absrow" not in self._cache:
            self._cache["absrow"] = float(np.abs(self.M).sum(axis=1).max())
        return self._cache["absrow"]

    def M_times(self, v) -> np.ndarray:
        return self.B.T @ (self.B @ v) if self.low_rank else self.M @ v

    def _M_rows(self, idx, v) -> np.ndarray:
        """``M[idx, :] @ v``."""
        return self.B[:, idx].T @ (self.B @ v) if self.low_rank else self.M[idx] @ v

    def _M_block(self, idx) -> np.ndarray:
        return self.B[:, idx].T @ self.B[:, idx] if self.low_rank else submatrix(self.M, idx, idx)

    def evaluate(self, alpha):
        """``(F, Q alpha, u, s)`` at ``alpha``; ``Q alpha`` through the support's columns when alpha is sparse."""
        nz = np.flatnonzero(alpha)
        Qa = self.Q[:, nz] @ alpha[nz] if nz.size * 4 < alpha.size else self.Q @ alpha
        nu = alpha * alpha
        u = self.M_times(nu)
        s = float(np.sqrt(max(float(nu @ u), 0.0)))
        F = 0.5 * float(alpha @ Qa) + 0.5 * self.kappa * s - float(alpha.sum())
        return F, Qa, u, s

    def value(self, alpha) -> float:
        return self.evaluate(alpha)[0]

    def value_and_gradient(self, alpha):
        parts = self.evaluate(alpha)
        return parts[0], self.gradient(alpha, parts)

    def gradient(self, alpha, parts=None) -> np.ndarray:
        """``grad F(alpha)``; ``parts`` from :meth:`evaluate` at the same ``alpha`` (computed if None)."""
        _, Qa, u, s = self.evaluate(alpha) if parts is None else parts
        g = Qa - 1.0
        if self.kappa > 0 and s > 0:
            g = g + self.kappa * alpha * u / s
        return g

    def robust_term(self, alpha) -> float:
        """``sqrt(nu'M nu)`` at ``nu = alpha**2`` (``t = alpha'Q alpha + kappa robust_term``)."""
        nu = alpha * alpha
        return float(np.sqrt(max(float(nu @ self.M_times(nu)), 0.0)))

    def multipliers(self, nu) -> np.ndarray:
        """``lam = kappa/2 M nu / sqrt(nu'M nu)`` (0 where ``kappa = 0`` or ``nu'M nu = 0``)."""
        u = self.M_times(nu)
        s = float(np.sqrt(max(float(nu @ u), 0.0)))
        return 0.5 * self.kappa * u / s if (self.kappa > 0 and s > 0) else np.zeros_like(nu)

    def hessian(self, alpha, parts, idx=None) -> np.ndarray:
        """The block ``H[idx, idx]`` of the Hessian (all of it for ``idx=None``); a new array."""
        _, _, u, s = parts
        if idx is None:
            idx = np.arange(alpha.size)
            H = self.Q.copy()
        else:
            H = submatrix(self.Q, idx, idx)
        if self.kappa > 0 and s > 0:
            m = idx.size
            af, uf = alpha[idx], u[idx]
            au = af * uf
            # kappa ((2/s) (af af' * M_FF) - (2/s^3) (au)(au)'), the same operations in the same order, in place on
            # the new block of M (IEEE products commute: bitwise the value of the expression, two temporaries)
            T = self._M_block(idx)
            T *= af[:, None]
            T *= af[None, :]
            T *= 2.0 / s
            O = np.outer(au, au)
            O *= 2.0 / s**3
            T -= O
            T *= self.kappa
            H += T
            H.flat[:: m + 1] += self.kappa * np.maximum(uf, 0.0) / s  # the diagonal, in place
        return H

    def hessian_rows_times(self, alpha, parts, idx, d) -> np.ndarray:
        """``H[idx, :] @ d``."""
        _, _, u, s = parts
        hd = self.Q[idx] @ d
        if self.kappa > 0 and s > 0:
            af = alpha[idx]
            au = af * u[idx]
            hd += self.kappa * (
                (2.0 / s) * af * self._M_rows(idx, alpha * d)
                - (2.0 / s**3) * au * float((alpha * u) @ d)
                + np.maximum(u[idx], 0.0) / s * d[idx]
            )
        return hd


# ------------------------------------------------------------------------------------ projected Newton
def _newton_direction(F, parts, a, g, y, C, bound, target):
    """Newton step on ``F`` (``parts = F.evaluate(a)``): bound coordinates move to ``target``; free ones
    solve the Newton system with ``y'(alpha + d) = 0``."""
    n = a.size
    d = np.zeros(n)
    d[bound] = target[bound] - a[bound]
    idx = np.flatnonzero(~bound)
    m = idx.size
    if not m:
        return d, 0
    H = F.hessian(a, parts, idx)
    H.flat[:: m + 1] += 1e-10 * (1.0 + float(np.max(np.abs(H.flat[:: m + 1]))))
    yf = y[idx]
    rhs = np.empty((m, 2))
    rhs[:, 0] = -g[idx]
    rhs[:, 1] = yf
    if m < n and d.any():  # the bound moves enter through the Hessian's (free, bound) block: H[F, :] @ d (d_F = 0;
        rhs[:, 0] -= F.hessian_rows_times(a, parts, idx, d)  # with no move the product is exactly 0: skipped)
    b = rhs[:, 0].copy()  # -(g_F + H_FB d_B), for the face step
    # the multiple of y_F in the right side is the multiplier's business, not H_FF's: near a solution -g_F is
    # nearly b y_F (b the bias), and v1 = H^-1(-g_F) and mu v2 would cancel however well conditioned H_FF is;
    # solving for the part orthogonal to y_F (the same step in exact arithmetic) leaves the cancellation test
    # below to measure H_FF's conditioning on the face only
    mu0 = float(yf @ b) / m  # yf'yf = m
    rhs[:, 0] -= mu0 * yf
    c, info = dpotrf(H, lower=0, clean=0, overwrite_a=1)
    cd = np.abs(c.diagonal()) if info == 0 else None
    if info != 0 or float(cd.min()) ** 2 < _SINGULAR_FACE * float(cd.max()) ** 2:
        # H_FF singular or nearly so (cond(H_FF) >= (max c_ii / min c_ii)^2): the Schur complement below
        # would cancel catastrophically; solve on the face {y_F'd_F = fixed} in an orthonormal basis instead
        return _face_direction(F, parts, a, g, y, C, idx, d, b)
    v, info = dpotrs(c, rhs, lower=0)
    v1, v2 = v[:, 0], v[:, 1]
    mu = (float(yf @ v1) + float(y @ d) + float(y @ a)) / float(yf @ v2)
    dF = v1 - mu * v2
    big = max(float(np.max(np.abs(v1))), abs(mu) * float(np.max(np.abs(v2))))
    if big > _CANCELLATION * float(np.max(np.abs(dF))):  # v1 and mu v2 cancel: H_FF nearly singular on the face
        return _face_direction(F, parts, a, g, y, C, idx, d, b)
    d[idx] = dF
    # enforce y'(alpha + d) = 0 exactly (H_FF can be nearly singular, e.g. a low-rank kernel, kappa = 0)
    d[idx] -= yf * (float(y @ (a + d)) / m)
    return d, m


_EPS8 = 8.0 * float(np.finfo(float).eps)
#: (min c_ii / max c_ii)^2 of the Cholesky factor of H_FF below which the Newton step is taken on the face
#: by an eigendecomposition (:func:`_face_direction`) instead of the Schur complement of y_F
_SINGULAR_FACE = 1e-8
#: ... or where the two Cholesky solutions cancel in ``v1 - mu v2`` by more than this factor (the diagonal ratio
#: detects a singular H_FF only when its null vector is spread out; the cancellation then shows it)
_CANCELLATION = 1e4


def _face_direction(F, parts, a, g, y, C, idx, d, b):
    """The Newton step on the free set ``idx`` for a singular or nearly singular ``H_FF`` (e.g. a rank-deficient
    kernel with ``kappa = 0``): ``d`` holds the bound moves, ``b = -(g_F + H_FB d_B)``.

    With ``Z`` an orthonormal basis of ``{y_F'z = 0}`` and ``d_p = -y_F (y'(alpha + d_B)) / m`` (so that
    ``y'(alpha + d) = 0``), ``d_F = d_p + Z w`` minimises the quadratic model over the face: ``Z'H_FF Z w =
    Z'(b - H_FF d_p)``, solved in the eigenbasis of ``Z'H_FF Z``.  On its range the step is the minimum-norm
    Newton step.  Where the reduced gradient has a component ``c_0`` in its null space the model is linear
    (unbounded below) along ``-c_0``: the step is then that ray alone, scaled to reach the first bound (the
    line search of the caller takes it or a part of it), so that each such step adds a bound to the working
    set.  A null-space component at round-off level (a flat, non-unique face) is ignored."""
    m = idx.size
    yf = y[idx]
    H = F.hessian(a, parts, idx)
    H = 0.5 * (H + H.T)
    d_p = -yf * (float(y @ (a + d)) / m)
    if m == 1:
        d[idx] = d_p
        return d, m
    Qf = np.linalg.qr(yf[:, None], mode="complete")[0]
    Z = Qf[:, 1:]
    lam, V = np.linalg.eigh(Z.T @ H @ Z)
    ZV = Z @ V
    c = ZV.T @ (b - H @ d_p)  # minus the reduced gradient, in the eigenbasis
    rng = lam > 1e-10 * float(np.max(np.abs(lam)))  # the range of Z'H_FF Z (all False for H_FF = 0)
    c0 = np.where(rng, 0.0, c)
    lin = float(np.linalg.norm(c0))
    if lin > 1e-9 * (1.0 + float(np.linalg.norm(g[idx]))) * np.sqrt(m):
        r = ZV @ c0  # descent ray on which the model is linear
        base = a[idx] + d_p
        with np.errstate(divide="ignore", invalid="ignore"):
            top = C[idx] if np.ndim(C) else C  # the weighted box: one bound per coordinate
            lim = np.where(r < 0, base / -r, np.where(r > 0, (top - base) / r, np.inf))
        t = float(np.min(lim))
        d[idx] = d_p + r * (t if np.isfinite(t) and t > 0 else 1.0)
        return d, m
    w = np.zeros(lam.size)
    w[rng] = c[rng] / lam[rng]
    d[idx] = d_p + ZV @ w
    return d, m


def _lagrangian_bound(q_absmax, a, g, y, C, F) -> float:
    """The SVM-duality bound of :func:`~rsvm_conic.certify.kernel.lagrangian_lower_bound` at ``a`` for (16') with
    its multipliers ``lam >= 0`` (``g`` the gradient ``Q a + 2 lam a - e``, ``F = q(a)``), the margins' rounding
    bounded by ``eps`` times the number of support terms and ``max |Q| sum(a)`` (``q_absmax = max |Q|``)."""
    nz = np.count_nonzero(a)
    err = max(nz, 1) * float(np.finfo(float).eps) * (q_absmax * float(a.sum()) + float(np.max(np.abs(g + 1))))
    return lagrangian_lower_bound(F, g, a, y, C, err)


def _svm_start(Q, y, C, lam):
    """libsvm (:func:`~rsvm_conic.solvers.svm_dual.libsvm_dual`) on the SVM dual with the fixed-multiplier
    kernel ``K_bar + 2 diag(lam)``.

    At the optimum of (16') with its multipliers ``lam* = kappa/2 u/s``, the Lagrangian
    ``1/2 a'(Q + 2 diag(lam*))a - e'a`` is minimised over S by the optimum itself, and ``u/s`` is
    invariant to the scale of alpha; so ``lam`` from a neighbouring grid point (or from alpha = 1 for
    a cold start) gives a start close to the new optimum at the cost of one small libsvm solve."""
    Kmod = y[:, None] * Q * y[None, :] + np.diag(2.0 * np.maximum(lam, 0.0))
    a, _ = libsvm_dual(Kmod, y, C, tol=1e-4)
    return project_dual_set(np.minimum(a, C), y, C)


@blas_threads_by(lambda K_bar, beta, y, *args, **kwargs: float(np.size(y)) ** 3)  # n x n factorisations
def solve_rsvm_socp(
    K_bar,
    beta,
    y,
    C,
    kappa,
    warm_start=None,
    *,
    factor=False,
    tol=1e-9,
    max_iter=60,
    fallback=True,
    svm_start=False,
    check_input=True,
    objective=None,
) -> RSVMSOCPResult:
    """Solve RSVM_SOCP (eq. 16) for one (C, kappa): projected Newton, the cone IPM as fallback (module docstring).

    ``beta`` is a PSD ``beta_hat`` (n x n) or, with ``factor=True``, a factor ``B`` with ``B'B = beta_hat``.
    ``warm_start``: an ``alpha`` (e.g. the previous grid point's); it is projected onto the new
    feasible set, or with ``svm_start=True`` only its multipliers are used (one libsvm solve with
    kernel ``K_bar + 2 diag(lambda)``, :func:`_svm_start`; better after a large change of C).  Without a
    warm start the same libsvm start is used with the multipliers of ``alpha = 1``.  ``tol``: certified
    relative accuracy of the objective (``F - OPT <= fw_gap <= tol max(|F|, |F - fw_gap|)``), recorded in
    ``result.solve_info``.  ``fallback=False``: no cone IPM (:class:`SolverError` if Newton does not
    certify).  ``check_input=False``: trusted arrays from a caller that validated them (``K_bar`` finite
    and symmetric, ``y`` in {-1, +1} with both classes, ``B`` finite): not checked again.
    ``objective``: a :class:`RobustKernelObjective` of this problem already built (any ``kappa``; it must
    carry the factor ``B``) for the validated labels ``y``; ``K_bar``, ``beta``, ``factor`` are then unused.
    Raises :class:`SolverError` if neither route certifies optimality.

    Parameters
    ----------
    K_bar : ndarray of shape (n, n)
        The expected kernel matrix.
    beta : ndarray
        ``beta_hat`` (n, n) or, with ``factor=True``, ``B`` (r, n).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    C : float or ndarray of shape (n,)
        The box's bound.
    kappa : float
        The robust term's weight.
    warm_start : ndarray of shape (n,), optional
        A start.
    factor : bool, default False
        Whether ``beta`` is a factor.
    tol : float, default 1e-9
        The certified relative accuracy.
    max_iter : int, default 60
        Newton iterations before the fallback.
    fallback : bool, default True
        Fall back to the cone IPM.
    svm_start : bool, default False
        Use only the warm start's multipliers.
    check_input : bool, default True
        Check the arrays (False: trusted).
    objective : RobustKernelObjective, optional
        This problem's objective, already built.

    Returns
    -------
    RSVMSOCPResult

    Raises
    ------
    SolverError
        If neither route certifies optimality.
    """
    t0 = time.perf_counter()
    if objective is None:
        y, objective = _prepare(K_bar, beta, y, factor, check_input)
    B = objective.B
    C = np.asarray(C, dtype=float) if np.ndim(C) else float(C)  # one bound per sample: the weighted box
    kappa = float(kappa)
    if not (np.all(np.isfinite(C)) and np.all(C > 0)):
        raise ValueError(f"C must be finite and > 0; got {C}.")
    C_total = float(np.sum(C)) if np.ndim(C) else C * y.size
    if not (np.isfinite(kappa) and kappa >= 0):
        raise ValueError(f"kappa must be finite and >= 0; got {kappa}.")
    Fobj = objective.at_kappa(kappa)
    Q = Fobj.Q
    n = y.size
    if warm_start is None:  # cold: libsvm with the multipliers of alpha = 1 (see _svm_start)
        a = _svm_start(Q, y, C, Fobj.multipliers(np.ones(n)))
    elif svm_start:  # e.g. after a change of C: libsvm with the previous point's multipliers
        w = np.asarray(warm_start, dtype=float)
        a = _svm_start(Q, y, C, Fobj.multipliers(w * w))
    else:
        a = np.asarray(warm_start, dtype=float)
        if a.min() < 0 or np.any(a > C) or abs(float(y @ a)) > 1e-13 * C_total:
            a = project_dual_set(np.minimum(a, C), y, C)
    eps_b = 1e-12 * C
    it, gap, lam_min, F = 0, np.inf, 0.0, np.nan
    certified = False
    n_newton = n_pg = 0
    trace = []
    parts = None  # objective pieces of the current point when the line search already computed them
    known = None  # (gradient, Frank-Wolfe gap) of the current point when step (0) already computed them
    c = q_absmax = None
    for it in range(max_iter + 1):
        if abs(float(y @ a)) > 1e-13 * C_total:  # keep iterates exactly feasible (ray steps can drift)
            a = project_dual_set(a, y, C)
            parts = known = None
        parts = parts if parts is not None else Fobj.evaluate(a)
        F, _, u, s = parts
        if known is None:
            g = Fobj.gradient(a, parts)
            gap = frank_wolfe_gap(g, a, y, C)
        else:
            g, gap = known
        lam_min = float(np.min(u)) * 0.5 * kappa / s if (kappa > 0 and s > 0) else 0.0  # min of the multipliers
        lam_ok = lam_min >= -1e-12 * max(1.0, float(np.max(np.abs(u))))
        lower = F - gap
        if relative_gap(F, lower) > tol and lam_ok:  # the Frank-Wolfe bound pays C min_S g's: at a large C the
            if q_absmax is None:  # SVM duality bound is the tight one
                q_absmax = float(np.max(np.abs(Q)))
            lower = max(lower, _lagrangian_bound(q_absmax, a, g, y, C, F))
        if relative_gap(F, lower) <= tol and lam_ok:
            certified = True
            break
        if it == max_iter:
            break
        # semismooth Newton on alpha = P_S(alpha - c g): the exact projection gives the multiplier of
        # y'alpha = 0 and the working set (coordinates clipped at 0 or C); free coordinates take a
        # Newton step with the bound coordinates moved onto their bounds.
        if c is None:  # step scale for the working-set test: 1 / typical curvature (fixed per call)
            Hd = np.diag(Q).copy()  # the Hessian's diagonal at the first iterate
            if kappa > 0 and s > 0:
                Hd += kappa * (np.maximum(u, 0.0) / s + 2.0 * a * a * Fobj.M_diag / s)
            c = 1.0 / max(float(np.partition(Hd, n // 2)[n // 2]), 1e-12)
        p = project_dual_set(a - c * g, y, C)
        bound = (p <= 0.0) | (p >= C)
        target = p.copy()
        for _inner in range(10):
            d, m = _newton_direction(Fobj, parts, a, g, y, C, bound, target)
            # free coordinates sitting on a bound that the step would push outside: fix them there
            blocked = ~bound & (((a <= eps_b) & (d < 0)) | ((a >= C - eps_b) & (d > 0)))
            if not blocked.any():
                break
            bound = bound | blocked
            target[blocked] = a[blocked]
        parts = known = None
        took_newton = float(g @ d) < 0
        t = 1.0
        accepted = False
        if took_newton:
            slack = 1e-15 * max(1.0, abs(F))
            # the first bound hit along d: a / -d where d < 0, (C - a) / d where d > 0 (no division by 0)
            lim = np.full(n, np.inf)
            np.divide(np.where(d < 0, a, C - a), np.abs(d), out=lim, where=d != 0)
            t_max = float(lim.min())
            # (0) a predicted decrease below the rounding of F itself (large C, alpha'Q alpha cancelling on a
            # rank-deficient kernel): F cannot judge the step (a backtracking search on it accepts round-off
            # noise at tiny t); take the full step when F stays within its rounding and the Frank-Wolfe gap
            # (the certificate, from the accurate gradient) shrinks
            if q_absmax is None:
                q_absmax = float(np.max(np.abs(Q)))
            sa = float(a.sum())
            noise = _EPS8 * (n * q_absmax * sa * sa + sa + kappa * n * s)
            if -float(g @ d) <= noise:  # (the full step stays feasible for t_max >= 1: no projection needed)
                a_new = np.clip(a + d, 0.0, C) if t_max >= 1.0 else project_dual_set(a + d, y, C)
                parts_new = Fobj.evaluate(a_new)
                F_new = parts_new[0]
                if F_new <= F + noise:
                    g_new = Fobj.gradient(a_new, parts_new)
                    gap_new = frank_wolfe_gap(g_new, a_new, y, C)
                    accepted = gap_new < gap
                    if accepted:  # the next iteration starts from them
                        known = (g_new, gap_new)
            if not accepted and t_max >= 1.0:  # the full step stays feasible (y'd = 0): no projection needed
                a_new = np.clip(a + d, 0.0, C)
                parts_new = Fobj.evaluate(a_new)
                F_new = parts_new[0]
                accepted = F_new <= F + 1e-4 * float(g @ d) + slack
            # (i) the projection arc P_S(alpha + t d) for t = 1, 1/2, 1/4 (lets many bounds change at once)
            for _ in range(3 if not accepted else 0):
                a_new = project_dual_set(a + t * d, y, C)
                parts_new = Fobj.evaluate(a_new)
                F_new = parts_new[0]
                if F_new <= F + 1e-4 * float(g @ (a_new - a)) + slack:
                    accepted = True
                    break
                t *= 0.5
            if not accepted:
                # (ii) the feasible ray alpha + t d (y'd = 0), t <= the first bound hit
                t = min(1.0, t_max)
                gd = float(g @ d)
                for _ in range(40):
                    a_new = np.clip(a + t * d, 0.0, C)
                    parts_new = Fobj.evaluate(a_new)
                    F_new = parts_new[0]
                    if F_new <= F + 1e-4 * t * gd + slack:
                        accepted = True
                        break
                    t *= 0.5
        trace.append((F, gap, t if accepted else -1.0, int(m)))
        if accepted:
            n_newton += 1
        else:  # projected gradient with backtracking
            Lk = (
                float(np.abs(Q).sum(axis=1).max())
                + (kappa * Fobj.M_absrow * float(np.max(C)) if kappa > 0 else 0.0)
                + 1e-12
            )
            for _ in range(50):
                a_new = project_dual_set(a - g / Lk, y, C)
                parts_new = Fobj.evaluate(a_new)
                F_new = parts_new[0]
                dd = a_new - a
                if F_new <= F + float(g @ dd) + 0.5 * Lk * float(dd @ dd):
                    break
                Lk *= 2.0
            n_pg += 1
        if np.array_equal(a_new, a):
            break
        a, parts = a_new, parts_new
    info = {"fw_gap": gap, "lambda_min": lam_min, "newton_steps": n_newton, "pg_steps": n_pg, "trace": trace}
    if certified:
        elapsed = time.perf_counter() - t0
        cert = certify(
            "rsvm_socp/projected-newton", F, lower, tol, iterations=it, time=elapsed, detail={"lambda_min": lam_min}
        )
        return RSVMSOCPResult(a, a * a, float(F), "optimal", "projected-newton", it, elapsed, info, cert)
    if not fallback:
        raise SolverError(
            f"projected Newton did not certify optimality after {it} iterations "
            f"(Frank-Wolfe gap {gap:.3g}, min lambda {lam_min:.3g})."
        )
    alpha, nu, ipm_info = rsvm_socp_ipm(Q, B, y, C, kappa)
    info.update({"ipm": ipm_info, "newton_reason": f"gap {gap:.3g}, min lambda {lam_min:.3g} after {it} its"})
    if ipm_info["status"] != "optimal":
        raise SolverError(f"RSVM_SOCP: projected Newton uncertified and the cone IPM returned {ipm_info['status']!r}.")
    obj = 0.5 * float(alpha @ Q @ alpha) + 0.5 * kappa * float(np.linalg.norm(B @ nu)) - float(alpha.sum())
    elapsed = time.perf_counter() - t0
    cert = ipm_certificate("rsvm_socp/cone-ipm", ipm_info, tol, iterations=it + ipm_info["iterations"], time=elapsed)
    return RSVMSOCPResult(alpha, nu, obj, "optimal", "cone-ipm", it + ipm_info["iterations"], elapsed, info, cert)


def ipm_certificate(route, ipm_info, tol, **kwargs) -> SolveInfo:
    """The cone IPM's own certificate: its primal value ``Phi(alpha, nu)`` and the Lagrangian dual value at
    its dual point (feasible to ``tol_feas = 1e-8``); its status "optimal" means ``gap_rel <= 1e-8``
    (Clarabel's semantics), so the tolerance is ``max(tol, 1e-8)``.

    Parameters
    ----------
    route : str
        The route named in the certificate.
    ipm_info : dict
        :func:`rsvm_socp_ipm`'s ``info`` (``pcost``, ``dcost``, ``gap_rel``, ``pres``, ``dres``).
    tol : float
        The requested relative gap.
    **kwargs
        Further :class:`SolveInfo` fields.

    Returns
    -------
    SolveInfo
    """
    return certify(
        route,
        float(ipm_info["pcost"]),
        float(ipm_info["dcost"]),
        max(tol, 1e-8),
        detail={"ipm_gap_rel": ipm_info["gap_rel"], "pres": ipm_info["pres"], "dres": ipm_info["dres"]},
        **kwargs,
    )


def _prepare(K_bar, beta, y, factor, check_input=True):
    """``(y, F)``: the labels and the objective :class:`RobustKernelObjective` (``kappa = 0``, with the factor)."""
    if not check_input:  # validated at the caller's boundary (symmetric K_bar, labels, finite factor)
        y = np.asarray(y, dtype=float)
        beta_hat, B = (beta.T @ beta, beta) if factor else prepare_beta(beta, y.shape[0], factor)
        Q = y[:, None] * K_bar * y[None, :]
        return y, RobustKernelObjective(Q, beta_hat, 0.0, B)
    K_bar = np.asarray(K_bar, dtype=float)
    if K_bar.ndim != 2 or K_bar.shape[0] != K_bar.shape[1] or not np.all(np.isfinite(K_bar)):
        raise ValueError("K_bar must be a finite square matrix.")
    n = K_bar.shape[0]
    y = np.asarray(y, dtype=float)
    if y.shape != (n,) or not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError(f"y must hold {n} labels in {{-1, +1}}.")
    check_two_classes(y, "y", classes=np.unique(y), reason="y'alpha = 0 then forces alpha = 0")
    K_bar = 0.5 * (K_bar + K_bar.T)
    beta_hat, B = prepare_beta(beta, n, factor)
    Q = y[:, None] * K_bar * y[None, :]
    return y, RobustKernelObjective(Q, beta_hat, 0.0, B)


def rsvm_socp_grid(K_bar, beta, y, Cs, kappas, *, factor=False, tol=1e-9, max_iter=60, fallback=True):
    """Solve over the grid ``Cs x kappas`` in a serpentine order, warm-starting each point from the
    previous one; returns ``{(C, kappa): RSVMSOCPResult}``.

    For ``n <= SMALL_N`` the BLAS thread pool is limited to one thread during the grid: at these
    sizes (n x n Cholesky factorisations of the free set, matrix-vector products) thread start-up
    costs more than it saves.  The results agree with the unlimited path to round-off (tested).

    Parameters
    ----------
    K_bar : ndarray of shape (n, n)
        The expected kernel matrix.
    beta : ndarray
        ``beta_hat`` (n, n) or, with ``factor=True``, ``B`` (r, n).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    Cs, kappas : sequence of float
        The grid.
    factor : bool, default False
        Whether ``beta`` is a factor.
    tol : float, default 1e-9
        The certified relative accuracy.
    max_iter : int, default 60
        Newton iterations per point before the fallback.
    fallback : bool, default True
        Fall back to the cone IPM.

    Returns
    -------
    dict
        ``{(C, kappa): RSVMSOCPResult}``.
    """
    n = np.asarray(y).shape[0]
    if n > SMALL_N:
        return _grid(K_bar, beta, y, Cs, kappas, factor, tol, max_iter, fallback)
    with _blas_controller().limit(limits=1):
        return _grid(K_bar, beta, y, Cs, kappas, factor, tol, max_iter, fallback)


SMALL_N = 1000
_CONTROLLER = []


def _blas_controller():
    """One ``threadpoolctl.ThreadpoolController`` per process: building it scans the loaded libraries
    (comparable to solving a warm grid at small n), so it is built once, on
    the first grid (numpy's and scipy's BLAS are loaded by then: this module imports both)."""
    if not _CONTROLLER:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def _grid(K_bar, beta, y, Cs, kappas, factor, tol, max_iter, fallback):
    y_checked, F = _prepare(K_bar, beta, y, factor)
    out = {}
    prev, prev_C = None, None
    for i, C in enumerate(Cs):
        ks = list(kappas) if i % 2 == 0 else list(kappas)[::-1]
        for kp in ks:
            res = solve_rsvm_socp(
                None,
                None,
                y_checked,
                C,
                kp,
                prev,
                tol=tol,
                max_iter=max_iter,
                fallback=fallback,
                svm_start=prev is not None and C != prev_C,
                objective=F,
            )
            out[(C, kp)] = res
            prev, prev_C = res.alpha, C
    return out
