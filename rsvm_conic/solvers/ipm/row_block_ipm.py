"""The structured interior point of :mod:`.robust_svm` on Dask row blocks: exact robust SVMs on data that do not
fit one machine's memory.

Same model, main loop, stopping test, refinement and certificate as :func:`~.robust_svm.robust_svm_ipm`
(:class:`~.robust_svm.RobustSVMCone`, :func:`~.engine.interior_point`, the Schur complement of :mod:`.kkt`): this
module is the loop's operator on row blocks.  Every per-sample quantity stays in the workers' chunks
(:class:`~.row_blocks.RowBlocks`) and the client holds what is O(n + k n) and solves the small system.  An
iteration is three passes over the row blocks (the step with the sums at the new iterate, the predictor's step,
the corrector's; plus one per refinement correction), each returning O(n^2) numbers whatever L
(:func:`robust_svm_ipm_dask`).  The passes, what goes over the network and the cost are described in
``docs/dask.md`` ("The exact interior point on row blocks"); ``tests/test_dask_ipm.py`` checks the iterates
against the in-memory route.
"""

from __future__ import annotations

import time

import numpy as np

from ..._validation import check_positive, is_dask_array
from .engine import (
    REFINE_STEPS,
    ConeSpec,
    Measures,
    Scaling,
    _ninf,
    backoff,
    interior_point,
    jdiv,
    kkt_failures,
    newton_rhs,
    scaled_directions,
    step_into,
)
from .kkt import (
    START_SHARE,
    START_SLACK,
    ConeTerms,
    GroupMeans,
    centred_gram,
    cholesky_factor,
    cholesky_solve,
    cone_rows_gx,
    start_cone_t,
    sum_apply_rows,
    weighted_gram,
)
from .row_blocks import RowBlocks
from .cone_loops import group_row_sums
from .status import column_rms, finish_status

__all__ = ["robust_svm_ipm_dask", "MAX_CLIENT_GROUPS"]

#: grouped cones (and their multipliers) live on the client: at most this many groups
MAX_CLIENT_GROUPS = 100_000


class _Eval:
    """A block's rows at one iterate: residuals, scaling, the local part of the reduced KKT system."""


class _Block:
    """One row block's part of :class:`~.robust_svm.RobustSVMCone` (its rows of every operator)."""

    def __init__(self, blk, cfg):
        self.cfg = cfg
        self.X, self.y = blk["X"], blk["y"]
        self.Lb, self.n = self.X.shape
        self.mode = cfg["mode"]
        self.sample = self.mode == "sample"
        if self.mode == "grouped":
            g = blk["gi"]
            act = cfg["active"][g]
            self.gam = np.where(act, blk["gamma"], 0.0)
            self.gi = np.where(act, cfg["remap"][g], 0).astype(np.intp)
        elif self.sample:
            self.gam, self.F = blk["gamma"], blk["F"]
        self.cones = ConeSpec(2 * self.Lb, [(self.Lb, self.n + 1)] if self.sample else [])

    # ------------------------------------------------------------------ pieces
    def split_z(self, z):
        Lb = self.Lb
        return z[:Lb], z[Lb : 2 * Lb], z[2 * Lb :].reshape(Lb if self.sample else 0, self.n + 1)

    def initial(self, tg):
        """RobustSVMCone.initial_point's rows (``tg``: the grouped cones' t_g, on the client)."""
        C, Lb, n = self.cfg["C"], self.Lb, self.n
        z = np.empty(self.cones.size)
        zm, zx, Z = self.split_z(z)
        zm[:] = START_SHARE * C
        zx[:] = (1.0 - START_SHARE) * C
        t = None
        if self.sample:
            Z[:] = 0.0
            Z[:, 0] = self.gam * zm
            t = start_cone_t(Z[:, 0], self.gam, C)
            xi = START_SLACK + self.gam * t
        elif self.mode == "grouped":
            xi = START_SLACK + self.gam * tg[self.gi]
        else:
            xi = np.full(Lb, START_SLACK)
        Xw = np.zeros(Lb)
        s = -self.Gx(np.zeros(n), 0.0, xi, t, tg, Xw)
        s[:Lb] -= 1.0
        return {"xi": xi, "t": t, "z": z, "s": s, "Xw": Xw}

    def Gx(self, w, b, xi, t, tg, Xw=None):
        """Rows of ``G x`` (margin rows, xi >= 0 rows, per-sample cones); ``Xw``: ``X @ w`` if known."""
        out = np.empty(self.cones.size)
        zm, zx, Z = self.split_z(out)
        marg = self.y * ((self.X @ w if Xw is None else Xw) + b)
        if self.sample:
            zm[:] = -marg - xi + self.gam * t
            cone_rows_gx(self.F, self.cfg["diagonal"], w, t, Z)
        elif self.mode == "grouped":
            zm[:] = -marg - xi + self.gam * tg[self.gi]
        else:
            zm[:] = -marg - xi
        zx[:] = -xi
        return out

    def GTz(self, z, sums=True):
        """This block's own rows of ``G'z`` (xi, per-sample t) and, with ``sums``, its sums for the rows of
        w, b (and grouped t)."""
        zm, zx, Z = self.split_z(z)
        gt = self.gam * zm - Z[:, 0] if self.sample else None
        part = {}
        if sums:
            yz = self.y * zm
            gw = -(self.X.T @ yz)
            part["gtz_b"] = -float(yz.sum())
            if self.sample:
                gw = gw - sum_apply_rows(self.F, self.cfg["diagonal"], Z[:, 1:])
            elif self.mode == "grouped":
                part["gtz_t"] = np.bincount(self.gi, weights=self.gam * zm, minlength=self.cfg["k"])
            part["gtz_w"] = gw
        return part, -zm - zx, gt

    # ------------------------------------------------------------------ one iterate
    def at(self, st, glob, sums=False) -> _Eval:
        """Residuals, NT scaling and the local KKT quantities at the state ``st`` (global part ``glob``);
        ``sums``: also this block's sums for the residual rows of w, b, t_g (``E.part``)."""
        E = _Eval()
        C, Lb = self.cfg["C"], self.Lb
        E.xi, E.t, E.z, E.s = st["xi"], st["t"], st["z"], st["s"]
        rz = self.Gx(glob["w"], glob["b"], E.xi, E.t, glob["tg"], st["Xw"]) + E.s
        rz[:Lb] += 1.0
        E.rz = rz
        E.part, gxi, gt = self.GTz(E.z, sums)
        E.rx_xi = C + gxi
        E.rx_t = gt
        E.sc = sc = Scaling(self.cones, E.s, E.z)
        E.lam = sc.apply(E.z)
        E.e = self.cones.identity()
        d = sc.d_l
        E.dm, E.dx = d[:Lb], d[Lb:]
        E.delta = E.dm + E.dx
        E.rho = E.dm * E.dx / E.delta
        if self.sample:
            E.ct = ct = ConeTerms(self.F, self.cfg["diagonal"], sc.beta[0], sc.wbar[0])
            E.ag = E.rho * self.gam**2
            scale = E.rho * self.gam * self.y / E.ag
            E.mg = GroupMeans(self.X, scale, scale)  # m_i = (c_i / a_i) [x_i; 1], never formed
            E.hg = E.ag + ct.D00
        return E

    def stats(self, E) -> dict:
        """Sums for the residuals, objective values, gap and norms of the main loop's measures."""
        part = dict(E.part)
        zm = self.split_z(E.z)[0]
        x_rx = float(E.xi @ E.rx_xi)
        max_x, max_rx = _ninf(E.xi), _ninf(E.rx_xi)
        if self.sample:
            x_rx += float(E.t @ E.rx_t)
            max_x = max(max_x, _ninf(E.t))
            max_rx = max(max_rx, _ninf(E.rx_t))
        part.update(
            sum_xi=float(E.xi.sum()),
            sum_zm=float(zm.sum()),
            x_rx=x_rx,
            sz=float(E.s @ E.z),
            max_x=max_x,
            max_s=_ninf(E.s),
            max_z=_ninf(E.z),
            max_rx=max_rx,
            max_rz=_ninf(E.rz),
        )
        return part

    def schur(self, E) -> dict:
        """This block's part of the Schur complement (the client adds the identity, grouped cone terms)."""
        n, X, y, rho = self.n, self.X, self.y, E.rho
        if self.mode == "grouped":
            k = self.cfg["k"]
            ag = np.bincount(self.gi, weights=rho * self.gam**2, minlength=k)
            cg = rho * self.gam * y
            sa = np.empty((k, n + 1))
            sa[:, :n] = group_row_sums(X, cg, self.gi, k)
            sa[:, n] = np.bincount(self.gi, weights=cg, minlength=k)
            m = np.divide(sa, ag[:, None], out=np.zeros_like(sa), where=ag[:, None] > 0)
            return {"centred": (ag, sa, centred_gram(X, y, rho, self.gam, self.gi, m))}
        S = np.zeros((n + 1, n + 1))
        if self.sample:
            F = self.F
            AAt = None if self.cfg["diagonal"] else np.einsum("kij,klj->kil", F, F)
            E.ct.add_schur(S, E.mg, E.ag * E.ct.D00 / E.hg, AAt)
        else:
            S[:n, :n] = weighted_gram(X, rho)
            Xr = X.T @ rho
            S[:n, n] = Xr
            S[n, :n] = Xr
            S[n, n] = rho.sum()
        return {"S": S}

    # ------------------------------------------------------------------ the KKT solve, split
    def prep(self, E, rhs, sums=True):
        """Local half of the KKT solve before the client's: what :meth:`back` needs and, with ``sums``, this
        block's part of the reduced right-hand side (``phi``; grouped: ``sgc = segsum(gamma c)``)."""
        bxi, bt, bz = rhs
        bzm, bzx, BZ = self.split_z(bz)
        c = -E.rho * bzm - E.dm * (bxi - E.dx * bzx) / E.delta
        part = {}
        aux = (c, None, None)
        phi = np.zeros(self.n + 1)
        if self.sample:  # the cones' part of this block's phi (discarded without sums: r0 is what back needs)
            psi0 = bt - self.gam * c
            r0 = E.ct.reduced_rhs(BZ, psi0, E.ag, E.hg, E.mg, phi)
            aux = (c, r0, psi0)
        if not sums:
            return part, aux
        yc = self.y * c
        phi[: self.n] += self.X.T @ yc
        phi[self.n] += yc.sum()
        part["phi"] = phi
        if self.mode == "grouped":
            part["sgc"] = np.bincount(self.gi, weights=self.gam * c, minlength=self.cfg["k"])
        return part, aux

    def back(self, E, rhs, aux, du, dtg):
        """Local half after the client's solve ``du = (dw, db)`` (grouped: and ``dt_g``): this block's rows
        of the direction, ``(dxi, dt, dz)``."""
        bxi, _, bz = rhs
        bzm, bzx, BZ = self.split_z(bz)
        c, r0, psi0 = aux
        n = self.n
        dw, db = du[:n], du[n]
        dt = None
        dz = np.empty(self.cones.size)
        zm, zx, Z = self.split_z(dz)
        if self.sample:
            dt = E.ct.back(BZ, psi0, r0, E.ag, E.hg, E.mg, du, Z)
            gdt = self.gam * dt
        elif self.mode == "grouped":
            gdt = self.gam * dtg[self.gi]
        else:
            gdt = 0.0
        adu = self.y * (self.X @ dw + db)
        dxi = (bxi - E.dx * bzx - E.dm * bzm - E.dm * (adu - gdt)) / E.delta
        zm[:] = E.rho * (gdt - adu) + c
        zx[:] = E.dx * (-dxi - bzx)
        return dxi, dt, dz

    def residual(self, E, rhs, d, du, dtg, sums=False):
        """The KKT residual ``b - K d`` of a direction (:class:`~.engine.ConeQPOperator`'s, on these rows): its local
        rows; with ``sums`` also this block's sums for the global rows and the local part of its error norm."""
        bxi, bt, bz = rhs
        dxi, dt, dz = d
        part, gxi, gt = self.GTz(dz, sums)
        rxi = bxi - gxi
        rt = None if gt is None else bt - gt
        rz = E.sc.add_apply_sq(dz, bz - self.Gx(du[: self.n], du[self.n], dxi, dt, dtg))
        if not sums:
            return part, (rxi, rt, rz)
        err = max(_ninf(rxi), _ninf(E.sc.apply(rz, inverse=True)))
        if rt is not None:
            err = max(err, _ninf(rt))
        part["max_r"] = err
        return part, (rxi, rt, rz)

    # ------------------------------------------------------------------ directions of one iteration
    def newton_rhs(self, E, dsa=None, dza=None, shift=0.0):
        """``(u, rhs)`` of a Newton step (:func:`~.engine.newton_rhs` on these rows):
        ``u = lam \\ r`` for the complementarity right-hand side ``r`` and ``rhs = (-rx_xi, -rx_t, -rz - W u)``."""
        size = self.cones.size
        u, bz = newton_rhs(self.cones, E.sc, E.lam, dsa, dza, shift, E.rz, np.empty(size), np.empty(size))
        return u, (-E.rx_xi, None if E.rx_t is None else -E.rx_t, bz)

    def predictor(self, E, it):
        """The predictor's rows: ``(rhs, dsa, dza, step)`` (``dsa``, ``dza``: scaled directions; ``step``: the
        largest step along both, this block's part of the predictor's step length)."""
        u, rhs = self.newton_rhs(E)
        _, aux = self.prep(E, rhs, sums=False)
        d = self.back(E, rhs, aux, *it["pred"])
        dza = np.empty(self.cones.size)
        step = scaled_directions(self.cones, E.sc, E.lam, u, d[2], dza)  # u becomes dsa
        return rhs, u, dza, step

    def corrector(self, E, it):
        """The corrector's rows after every correction the client has solved for: ``(u, rhs, d)``."""
        _, dsa, dza, _ = self.predictor(E, it)
        u, rhs = self.newton_rhs(E, dsa, dza, it["shift"])
        _, aux = self.prep(E, rhs, sums=False)
        du, dtg = it["corr"][0]
        d = self.back(E, rhs, aux, du, dtg)
        for du_e, dtg_e in it["corr"][1:]:
            _, r = self.residual(E, rhs, d, du, dtg)
            _, aux = self.prep(E, r, sums=False)
            e = self.back(E, r, aux, du_e, dtg_e)
            d = (d[0] + e[0], None if d[1] is None else d[1] + e[1], d[2] + e[2])
            du = du + du_e
            dtg = None if dtg is None else dtg + dtg_e
        return u, rhs, d


def _prefixed(prefix, part):
    return {prefix + k: v for k, v in part.items()}


def _start_pass(blk, st, plan):
    """The pass of :meth:`_RowBlockOperator.start` and :meth:`~_RowBlockOperator.move`: the start point or the
    step, then the sums at the new iterate: residuals, costs, norms, the Schur complement and the predictor's
    reduced right-hand side."""
    B = _Block(blk, plan["cfg"])
    if st is None:
        st = B.initial(plan["glob"]["tg"])
    elif plan["move"] is not None:
        st, halvings = _step(B, st, *plan["move"], plan["glob"]["w"])
        if halvings:  # the client repeats the pass with the shorter step
            return st, {"max_halvings": float(halvings)}
    E = B.at(st, plan["glob"], sums=True)
    part = B.stats(E)
    part.update(B.schur(E))
    part.update(_prefixed("p_", B.prep(E, B.newton_rhs(E)[1])[0]))
    part["max_halvings"] = 0.0
    return st, part


def _step(B, st, it, step, w_new):
    """``(new state, 0)`` after the step along the iteration ``it``'s direction (recomputed), or ``(st, h)``
    when this block's s and z need h halvings of the step to stay interior (:func:`~.engine.backoff`, the rule of
    :meth:`~.engine.ConeQPOperator.move`; 30: none).  The state keeps ``X @ w`` of its iterate (``w_new`` after the
    step), computed once per iteration."""
    E = B.at(st, it["glob"])
    u, _, d = B.corrector(E, it)
    scaled_directions(B.cones, E.sc, E.lam, u, d[2], np.empty(B.cones.size))  # u becomes dst
    s_new, z_new = np.empty(B.cones.size), np.empty(B.cones.size)

    def trial(a):
        _, inside = step_into(B.cones, st["s"], u, a, out=s_new, scaling=E.sc)
        if inside:
            _, inside = step_into(B.cones, st["z"], d[2], a, out=z_new)
        return inside

    halvings = backoff(trial, step)
    if halvings is None:
        return st, 30
    if halvings:
        return st, halvings
    return {
        "xi": st["xi"] + step * d[0],
        "t": None if d[1] is None else st["t"] + step * d[1],
        "z": z_new,
        "s": s_new,
        "Xw": B.X @ w_new,
    }, 0


def _predictor_pass(blk, st, plan):
    """The pass of :meth:`_RowBlockOperator.predictor_step`: the predictor's largest step (and Mehrotra's sums),
    and the corrector's reduced right-hand side in two parts, without and with the centring term."""
    B = _Block(blk, plan["cfg"])
    it = plan["it"]
    E = B.at(st, it["glob"])
    _, dsa, dza, step = B.predictor(E, it)
    part = {"min_step": step}
    if plan["gap_terms"]:
        lam = E.lam
        part["gap_terms"] = np.array([lam @ lam, lam @ dsa + lam @ dza, dsa @ dza])
    part.update(_prefixed("c0_", B.prep(E, B.newton_rhs(E, dsa, dza)[1])[0]))
    u1 = jdiv(B.cones, E.lam, E.e)
    rhs1 = (np.zeros(B.Lb), None if E.rx_t is None else np.zeros(B.Lb), -E.sc.apply(u1))
    part.update(_prefixed("c1_", B.prep(E, rhs1)[0]))
    return part


def _corrector_pass(blk, st, plan):
    """The pass of :meth:`_RowBlockOperator.corrector` and of each refinement correction: the corrector's largest
    step; when refining, also the KKT residual's global sums, error norm and reduced right-hand side."""
    B = _Block(blk, plan["cfg"])
    it = plan["it"]
    E = B.at(st, it["glob"])
    u, rhs, d = B.corrector(E, it)
    step = scaled_directions(B.cones, E.sc, E.lam, u, d[2], np.empty(B.cones.size))  # u becomes dst
    finite = all(np.all(np.isfinite(v)) for v in (d[0], d[2], u) + (() if d[1] is None else (d[1],)))
    part = {"min_step": step, "min_finite": float(finite)}
    if plan["scale"]:
        bxi, bt, bz = rhs
        scale = max(_ninf(bxi), _ninf(E.sc.apply(bz, inverse=True)))
        part["max_b"] = scale if bt is None else max(scale, _ninf(bt))
    if plan["refine"]:
        du = sum(c[0] for c in it["corr"])
        dtg = None if it["corr"][0][1] is None else sum(c[1] for c in it["corr"])
        rpart, r = B.residual(E, rhs, d, du, dtg, sums=True)
        part.update(_prefixed("r_", rpart))
        part.update(_prefixed("e_", B.prep(E, r)[0]))
    return part


def _setup_pass(blk, plan):
    """Which groups carry uncertainty (some gamma_i > 0), the range of gamma and, per group, the sum and the largest
    of its gamma_i (the grouped cones' start, :func:`~.kkt.start_cone_t`)."""
    gam = blk["gamma"]
    out = {"min_gamma": float(np.min(gam)), "max_gamma": float(np.max(gam))}
    if "gi" in blk:
        gi = blk["gi"]
        out["active"] = np.bincount(gi[gam > 0], minlength=plan["k_all"]).astype(float)
        out["gamma_sum"] = np.bincount(gi, weights=gam, minlength=plan["k_all"])
        gmax = np.zeros(plan["k_all"])
        np.maximum.at(gmax, gi, gam)
        out["max_group_gamma"] = gmax
    return out


class _Cones:
    """The grouped cones on the client: their part of every operator (cone rows of G x, G'z, ...)."""

    def __init__(self, factors, diagonal, n):
        self.F, self.diag, self.n = factors, diagonal, n
        self.k = factors.shape[0]
        self.spec = ConeSpec(0, [(self.k, n + 1)])
        self.AAt = None if diagonal else np.einsum("kij,klj->kil", factors, factors)

    def Gx(self, w, tg):
        """Cone rows ``(-t_g, -A_g'w)`` (flat)."""
        out = np.empty((self.k, self.n + 1))
        cone_rows_gx(self.F, self.diag, w, tg, out)
        return out.ravel()

    def GTz_w(self, Z):
        """The cones' part of the w rows of ``G'z``: ``-sum_g A_g z_g1``."""
        return -sum_apply_rows(self.F, self.diag, Z.reshape(self.k, -1)[:, 1:])


def robust_svm_ipm_dask(
    X,
    y,
    C,
    gamma,
    factors,
    diagonal,
    group_index,
    *,
    max_iter=100,
    tol_gap_abs=1e-8,
    tol_gap_rel=1e-8,
    tol_feas=1e-8,
    verbose=False,
    accept_inaccurate=False,
    print_fn=print,
    step_fraction=0.99,
    refine=REFINE_STEPS,
    refine_below=1e-4,
    check_input=True,
    early=None,
    hold=None,
):
    """:func:`~.robust_svm.robust_svm_ipm` for Dask arrays: ``X`` (L, n), ``y`` in {-1, +1}, ``gamma`` and
    ``group_index`` (L,), chunked along rows; ``factors`` a small numpy array ``(k, n)`` / ``(k, n, n)`` for
    grouped cones, or a Dask array ``(L, n)`` / ``(L, n, n)`` of per-sample factors (``group_index`` then
    unused).  Returns ``(values, info)`` as robust_svm_ipm does, except that the per-sample values ``xi``
    (and ``t`` of per-sample cones) and ``info["alpha"]`` are Dask arrays persisted in the workers.
    ``info`` also has ``passes`` (reads of X) and ``max_fetched_bytes`` (the largest result of a pass
    that reached the client).  ``check_input=False`` skips the validation pass (trusted arrays, e.g. from
    a formulation that validated them).

    Parameters
    ----------
    X : dask.array.Array of shape (L, n)
        The samples, chunked along rows.
    y : dask.array.Array of shape (L,)
        Labels in {-1, +1}.
    C : float
        The hinge's weight.
    gamma : dask.array.Array of shape (L,)
        The radii.
    factors : ndarray or dask.array.Array
        Grouped factors (numpy) or per-sample factors (Dask, with X's row chunks).
    diagonal : bool
        Whether ``factors`` are diagonal.
    group_index : dask.array.Array of shape (L,)
        Each sample's group (unused with per-sample factors).
    max_iter : int, default 100
        Iteration limit.
    tol_gap_abs, tol_gap_rel, tol_feas : float, default 1e-8
        The stopping test's tolerances.
    verbose : bool, default False
        Log every iteration.
    accept_inaccurate : bool, default False
        Warn rather than raise when the run does not certify.
    print_fn : callable, default print
        Receives the log's lines.
    step_fraction : float, default 0.99
        The fraction of the largest step taken.
    refine : int, default 4
        The most refinement steps per corrector solve.
    refine_below : float, default 1e-4
        The relative gap below which the corrector is refined.
    check_input : bool, default True
        Run the validation pass (False: trusted arrays).
    early : tuple or None, default None
        ``(tol_gap_rel, tol_feas, accept)``: the run ends ``optimal`` at the first iterate that meets the stopping
        test at these looser tolerances and whose weights ``w`` ``accept(w)`` accepts (as in memory).
    hold : tuple or None, default None
        ``(tol_gap_rel, accept)``: an iterate that meets the stopping test ends the run only when ``accept(w)``
        accepts its weights or it meets this tighter relative gap (as in memory).

    Returns
    -------
    values : dict
        ``w``, ``b``, ``xi``, ``t`` (per-sample values as persisted Dask arrays).
    info : dict
        As :func:`~.robust_svm.robust_svm_ipm`'s, plus ``passes`` and ``max_fetched_bytes``.

    Raises
    ------
    ValueError
        For invalid data (checked in one pass unless ``check_input=False``).
    SolverError
        When the run does not end optimal (unless ``accept_inaccurate``).
    """
    t0 = time.perf_counter()
    C = check_positive(C, "C")
    if check_input:
        _check_dask_inputs(X, y, gamma, factors)
    L, n = X.shape
    sample = is_dask_array(factors)
    blocks = RowBlocks(X, y=y, gamma=gamma, **({"F": factors} if sample else {"gi": group_index}))
    # ---- which groups are cones (RobustSVMCone.__init__): a pass over gamma and the group index
    k_all = int(factors.shape[0])
    info0, _ = blocks.run(_setup_pass, {"k_all": k_all}, uses=("gamma",) if sample else ("gamma", "gi"))
    cfg = {"C": C, "diagonal": bool(diagonal), "k": 0}
    cones = None
    if info0["max_gamma"] <= 0.0:
        cfg["mode"] = "nominal"
    elif sample:
        if info0["min_gamma"] <= 0.0:
            raise ValueError(
                "per-sample ellipsoids on Dask arrays need gamma_i > 0 for every sample (some "
                "sample_radius are 0): give those samples a small radius, or a shared or grouped "
                "ellipsoid."
            )
        cfg.update(mode="sample", k=L)
    else:
        active = info0["active"] > 0
        k = int(active.sum())
        if k > MAX_CLIENT_GROUPS:
            raise ValueError(
                f"{k} uncertainty groups: grouped cones live on the client (at most "
                f"{MAX_CLIENT_GROUPS}); for one ellipsoid per sample pass groups='sample'."
            )
        cfg.update(mode="grouped", k=k, active=active, remap=np.cumsum(active) - 1)
        cfg["tg"] = start_cone_t(START_SHARE * C * info0["gamma_sum"][active], info0["max_group_gamma"][active], C)
        cones = _Cones(np.ascontiguousarray(np.asarray(factors, dtype=float)[active]), bool(diagonal), n)
    k = cfg["k"]
    op = _RowBlockOperator(blocks, cfg, cones, L, n, C)
    run = interior_point(
        op,
        max_iter=max_iter,
        tol_gap_abs=tol_gap_abs,
        tol_gap_rel=tol_gap_rel,
        tol_feas=tol_feas,
        verbose=verbose,
        print_fn=print_fn,
        step_fraction=step_fraction,
        refine=refine,
        refine_below=refine_below,
        early=None if early is None else (early[0], early[1], lambda: early[2](op.glob["w"])),
        hold=None if hold is None else (hold[0], lambda: hold[1](op.glob["w"])),
    )
    states, glob = op.states, op.glob
    t = np.zeros(k_all)
    if cfg["mode"] == "grouped":
        t[cfg["active"]] = glob["tg"]
    elif cfg["mode"] == "sample":
        t = blocks.vector(states, _entry_t)
    info = {"status": run.status, "iterations": run.iterations, **run.values, "log": run.log}
    info.update(
        solve_time=time.perf_counter() - t0,
        n_cones=k,
        passes=blocks.passes,
        max_fetched_bytes=blocks.fetched,
        blocks=blocks.n_blocks,
        alpha=blocks.vector(states, _margin_multipliers),
    )
    finish_status(
        info,
        accept_inaccurate,
        lambda: column_rms(X),
        "use solver='prox' (on the row blocks, certified to its own gap)",
    )
    return {"w": glob["w"], "b": float(glob["b"]), "xi": blocks.vector(states, _entry_xi), "t": t}, info


def _margin_multipliers(st):
    """A block's multipliers of the margin rows (``alpha``): the first orthant block of z."""
    return st["z"][: st["xi"].shape[0]]


def _entry_xi(st):
    return st["xi"]


def _entry_t(st):
    return st["t"]


def _check_dask_inputs(X, y, gamma, factors):
    """robust_svm_ipm's checks, lazily: shapes now, values in one reduction pass."""
    from ..._validation import check_dask_values

    if X.ndim != 2:
        raise ValueError("X must be a finite 2-D array (impute or drop NaN/inf entries).")
    L = X.shape[0]
    if y.shape != (L,) or gamma.shape != (L,):
        raise ValueError("y and gamma must hold one entry per row of X.")
    checks = {
        "X": ("finite", X, "X must be a finite 2-D array (impute or drop NaN/inf entries)."),
        "y": ("pm", y, "y must hold labels in {-1, +1} of both classes."),
        "gamma": ("nonnegative", gamma, "gamma must hold one finite, nonnegative number per sample."),
    }
    if is_dask_array(factors):
        checks["factors"] = ("finite", factors, "the uncertainty factors contain NaN or inf.")
    elif not np.all(np.isfinite(factors)):
        raise ValueError("the uncertainty factors contain NaN or inf.")
    check_dask_values(checks)


class _RowBlockOperator:
    """The iteration-level operator of :func:`~.engine.interior_point` on row blocks: the per-sample part of the
    iterate lives in the workers (the blocks' states), the client holds ``w, b`` and the grouped cones' ``t_g``,
    ``s``, ``z``, and solves the reduced system.  Each phase is at most one pass over the blocks: ``start`` and
    ``move`` one (repeated when a block needs a shorter step), ``measure`` and ``factor_predictor`` none (they use
    the last ``move``'s sums), ``predictor_step`` one, ``corrector`` one and each refinement correction one."""

    def __init__(self, blocks, cfg, cones, L, n, C):
        self.blocks, self.cfg, self.cones, self.n = blocks, cfg, cones, n
        self.k = k = cfg["k"]
        self.grouped = cfg["mode"] == "grouped"
        self.degree = 2 * L + k
        self.norms = (C, 1.0, 0.0)
        self.C = C
        self.glob = {"w": np.zeros(n), "b": 0.0, "tg": cfg["tg"].copy() if self.grouped else None}
        self.states = None

    def _corrector_pass(self, refine: bool, scale: bool) -> dict:
        plan = {"cfg": self.cfg, "it": self.it, "refine": refine, "scale": scale}
        return self.blocks.run(_corrector_pass, plan, self.states)[0]

    def start(self):
        glob, k, n = self.glob, self.k, self.n
        plan = {"cfg": self.cfg, "glob": glob, "move": None}
        self.R, self.states = self.blocks.run(_start_pass, plan, None, keep=True)
        if self.grouped:  # the cones' slack (t_g, A_g'w) = (1, 0); z0_g = sum_{i in g} gamma_i alpha_i
            self.Sc = -self.cones.Gx(glob["w"], glob["tg"])
            self.Zc = np.zeros(k * (n + 1))
            self.Zc.reshape(k, n + 1)[:, 0] = self.R["gtz_t"]

    def measure(self) -> Measures:
        """The residuals ``rx = Px + q + G'z``, ``rz = Gx + s - h``, costs, gap and norms, from the blocks' sums and
        the client's rows."""
        R, glob, k, n, cones = self.R, self.glob, self.k, self.n, self.cones
        w, b = glob["w"], glob["b"]
        rx_w = w + R["gtz_w"]
        rx_b = R["gtz_b"]
        x_rx = b * rx_b + R["x_rx"]
        nx = max(_ninf(w), abs(b), R["max_x"])
        ns, nz, max_rx, max_rz = R["max_s"], R["max_z"], R["max_rx"], R["max_rz"]
        gap = R["sz"]
        rx_t = self.rz_c = None
        if self.grouped:
            Zc, Sc = self.Zc, self.Sc
            rx_w = rx_w + cones.GTz_w(Zc)
            rx_t = R["gtz_t"] - Zc.reshape(k, n + 1)[:, 0]
            self.rz_c = rz_c = cones.Gx(w, glob["tg"]) + Sc
            x_rx += float(glob["tg"] @ rx_t)
            nx = max(nx, _ninf(glob["tg"]))
            ns, nz = max(ns, _ninf(Sc)), max(nz, _ninf(Zc))
            max_rx = max(max_rx, _ninf(rx_t))
            max_rz = max(max_rz, _ninf(rz_c))
            gap += float(Sc @ Zc)
        max_rx = max(max_rx, _ninf(rx_w), abs(rx_b))
        x_rx += float(w @ rx_w)
        xPx = float(w @ w)
        self.bglob = (-rx_w, -rx_b, None if rx_t is None else -rx_t)
        pcost = 0.5 * xPx + self.C * R["sum_xi"]
        dcost = -0.5 * xPx + R["sum_zm"] + x_rx
        return Measures(pcost, dcost, gap, max_rz, max_rx, nx, ns, nz, {"passes": self.blocks.passes})

    def factor_predictor(self):
        R = self.R
        Sc, Zc = (self.Sc, self.Zc) if self.grouped else (None, None)
        with kkt_failures():
            self.system = system = _System(R, self.cfg, self.cones, Sc, Zc, self.n)
            self.pred = system.solve(R, "p_", self.bglob, system.pred_bz(self.rz_c) if self.grouped else None)
        self.it = {"glob": self.glob, "pred": self.pred[:2]}

    def predictor_step(self, gap_terms: bool):
        plan = {"cfg": self.cfg, "it": self.it, "gap_terms": gap_terms}
        self.R2 = R2 = self.blocks.run(_predictor_pass, plan, self.states)[0]
        amax = R2["min_step"]
        terms = R2["gap_terms"] if gap_terms else None
        if self.grouped:
            system = self.system
            amax = min(amax, system.cone_step(self.pred[2], system.u_pred))
            if gap_terms:
                lam, dsa, dza = system.lam, system.dsa_c, system.dza_c
                terms = terms + np.array([lam @ lam, lam @ dsa + lam @ dza, dsa @ dza])
        return amax, None if terms is None else tuple(float(t) for t in terms)

    def corrector(self, shift: float, refining: bool):
        R2 = self.R2
        c_part = {key: R2["c0_" + key] + shift * R2["c1_" + key] for key in ("phi", "sgc") if "c0_" + key in R2}
        self.bz_c = bz_c = self.system.corr_bz(self.rz_c, shift) if self.grouped else None
        with kkt_failures():
            corr = self.system.solve(c_part, "", self.bglob, bz_c)
        self.it.update(shift=shift, corr=[corr[:2]])
        self.dZc = corr[2]
        self.R3 = self._corrector_pass(refining, refining)

    # ------------------------------------------------------------------ refinement of the corrector
    def _residual_rows(self) -> float:
        """The client's rows of the current direction's KKT residual (kept for the next correction) and the
        residual's norm, from the last corrector pass's sums."""
        R3, it, bglob, n, k = self.R3, self.it, self.bglob, self.n, self.k
        du = sum(c[0] for c in it["corr"])
        rw = bglob[0] - du[:n] - R3["r_gtz_w"]
        rb = bglob[1] - R3["r_gtz_b"]
        rt = rzc = None
        err = max(R3["r_max_r"], abs(rb))
        if self.grouped:  # the cones' rows, and their part of the w rows
            cones, sc, dZc = self.cones, self.system.sc, self.dZc
            dtg = sum(c[1] for c in it["corr"])
            rw = rw - cones.GTz_w(dZc)
            rt = bglob[2] - (R3["r_gtz_t"] - dZc.reshape(k, n + 1)[:, 0])
            rzc = self.bz_c - cones.Gx(du[:n], dtg) + sc.apply_sq(dZc)
            err = max(err, _ninf(rt), _ninf(sc.apply(rzc, inverse=True)))
        self.r = (rw, rb, rt), rzc
        return max(err, _ninf(rw))

    def refine_residual(self):
        err = self._residual_rows()
        bglob, R3 = self.bglob, self.R3
        scale = max(_ninf(bglob[0]), abs(bglob[1]), R3["max_b"], 1e-300)
        if self.grouped:
            scale = max(scale, _ninf(self.system.sc.apply(self.bz_c, inverse=True)), _ninf(bglob[2]))
        return scale, err

    def refine_correct(self) -> float:
        self.kept = self.R3, self.dZc
        R3 = self.R3
        with kkt_failures():
            e = self.system.solve({key[2:]: v for key, v in R3.items() if key.startswith("e_")}, "", *self.r)
        self.it["corr"].append(e[:2])
        if self.grouped:
            self.dZc = self.dZc + e[2]
        self.R3 = self._corrector_pass(True, False)
        return self._residual_rows()

    def refine_keep(self, keep: bool):
        if not keep:  # the direction before the last correction stays, with its pass's values
            self.it["corr"].pop()
            self.R3, self.dZc = self.kept

    # ------------------------------------------------------------------ the step
    def corrector_step(self):
        it = self.it
        amax = self.R3["min_step"]
        self.du = du = sum(c[0] for c in it["corr"])
        self.dtg = dtg = sum(c[1] for c in it["corr"]) if self.grouped else None
        finite = self.R3["min_finite"] > 0 and np.all(np.isfinite(du))
        if self.grouped:
            system, dZc = self.system, self.dZc
            self.dst_c = dst = system.u_corr.copy()
            amax = min(amax, scaled_directions(self.cones.spec, system.sc, system.lam, dst, dZc, np.empty(dZc.shape)))
            finite = finite and all(np.all(np.isfinite(v)) for v in (dZc, dst, dtg))
        return amax, bool(finite)

    def move(self, step: float):
        n, glob, grouped = self.n, self.glob, self.grouped
        if grouped:  # the client's cones first, by the blocks' rule (their pass then needs no repeat for them)
            spec, sc = self.cones.spec, self.system.sc
            Sn, Zn = np.empty(self.Sc.shape), np.empty(self.Zc.shape)

            def trial(a):
                _, inside = step_into(spec, self.Sc, self.dst_c, a, out=Sn, scaling=sc)
                if inside:
                    _, inside = step_into(spec, self.Zc, self.dZc, a, out=Zn)
                return inside

        halvings = 0
        while True:
            if grouped:
                h = backoff(trial, step * 0.5**halvings)
                if h is None:
                    return None
                halvings += h
            a = step * 0.5**halvings
            new = {
                "w": glob["w"] + a * self.du[:n],
                "b": glob["b"] + a * self.du[n],
                "tg": glob["tg"] + a * self.dtg if grouped else None,
            }
            plan = {"cfg": self.cfg, "glob": new, "move": (self.it, a)}
            R, states = self.blocks.run(_start_pass, plan, self.states, keep=True)
            if R["max_halvings"] == 0:
                break
            halvings += int(R["max_halvings"])
            if halvings >= 30:
                return None
        self.R, self.states, self.glob = R, states, new
        if grouped:
            self.Sc, self.Zc = Sn, Zn
        return halvings


class _System:
    """The client's side of one iteration: the factored Schur complement, and for grouped cones their
    scaling and t-eliminated terms (RobustSVMCone.kkt_factor's global part)."""

    def __init__(self, R, cfg, cones, Sc, Zc, n):
        self.n, self.cfg, self.cones = n, cfg, cones
        mode = cfg["mode"]
        S = np.zeros((n + 1, n + 1))
        if mode == "grouped":
            self.sc = sc = Scaling(cones.spec, Sc, Zc)
            self.lam = sc.apply(Zc)
            ag, sa, F = R["centred"]
            S += F
            self.ct = ct = ConeTerms(cones.F, cones.diag, sc.beta[0], sc.wbar[0])
            self.ag = ag
            self.mg = GroupMeans.of(sa / ag[:, None])
            self.hg = ag + ct.D00
            ct.add_schur(S, self.mg, ag * ct.D00 / self.hg, cones.AAt)
        else:
            S += R["S"]
        S[np.arange(n), np.arange(n)] += 1.0
        self.cho = cholesky_factor(S)

    # the grouped cones' parts of the predictor and corrector (the in-memory operator's, on their rows)
    def pred_bz(self, rz):
        """The cone rows of the predictor's right-hand side ``-rz - W u`` (``lambda o u = -lambda o lambda``)."""
        spec = self.cones.spec
        self.u_pred, bz = newton_rhs(
            spec, self.sc, self.lam, None, None, 0.0, rz, np.empty(spec.size), np.empty(spec.size)
        )
        return bz

    def cone_step(self, dZ, u):
        """The cones' largest predictor step (and their scaled directions, kept for the corrector)."""
        self.dsa_c, self.dza_c = u.copy(), np.empty(dZ.shape)
        return scaled_directions(self.cones.spec, self.sc, self.lam, self.dsa_c, dZ, self.dza_c)

    def corr_bz(self, rz, shift):
        """The cone rows of the corrector's right-hand side (Mehrotra's second-order term, centring ``shift``)."""
        spec = self.cones.spec
        self.u_corr, bz = newton_rhs(
            spec,
            self.sc,
            self.lam,
            self.dsa_c,
            self.dza_c,
            shift,
            rz,
            np.empty(spec.size),
            np.empty(spec.size),
        )
        return bz

    def solve(self, P, prefix, bglob, bz_c):
        """The reduced system's solution ``(du, dt_g, dz_cones)`` from the blocks' sums ``P`` and the global
        rows of the right-hand side (RobustSVMCone.kkt_factor's solve, global part)."""
        n = self.n
        bw, bb, bt = bglob
        phi = P[prefix + "phi"].copy()
        phi[:n] += bw
        phi[n] += bb
        if self.cfg["mode"] != "grouped":
            return cholesky_solve(self.cho, phi), None, None
        ct, ag, hg, mg = self.ct, self.ag, self.hg, self.mg
        k = ag.shape[0]
        BZ = bz_c.reshape(k, n + 1)
        psi0 = bt - P[prefix + "sgc"]
        r0 = ct.reduced_rhs(BZ, psi0, ag, hg, mg, phi)
        du = cholesky_solve(self.cho, phi)
        dZ = np.empty((k, n + 1))
        dt = ct.back(BZ, psi0, r0, ag, hg, mg, du, dZ)
        return du, dt, dZ.ravel()
