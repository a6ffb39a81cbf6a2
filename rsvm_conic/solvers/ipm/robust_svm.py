"""Structure-exploiting interior point for the robust linear SVM SOCP [CJ20, eq. 4].

:class:`RobustSVMCone` is the model in the cone form of :mod:`.engine` (``x = (w, b, xi, t)``, an orthant of
margin and ``xi >= 0`` slacks, one second-order cone per group), whose Newton system is reduced in closed form to
one (n + 1) x (n + 1) Schur complement assembled without cancellation (:mod:`.kkt`); :func:`robust_svm_ipm` and
:func:`solve_robust_ipm` are the array entries.  The derivation of the reduced system is in the user guide
(``docs/guide/robust.md``, "The structured interior point").

The model is always primal and dual feasible, so a run ends ``optimal``, ``max_iter`` or ``numerical_error``;
degenerate inputs (NaN/inf data, a single class, p != 2) are rejected with a ValueError that says what to fix, and
a run that does not certify raises :class:`~rsvm_conic.exceptions.SolverError` unless ``accept_inaccurate=True``
(then a :class:`~rsvm_conic.exceptions.SolverWarning` names the status).
"""

from __future__ import annotations

import numpy as np

from ..._threads import blas_threads_for
from ..._validation import check_two_classes, is_dask_array
from .engine import REFINE_STEPS, ConeSpec, Scaling, cone_ipm
from .kkt import (
    START_SHARE,
    START_SLACK,
    ConeTerms,
    GroupMeans,
    Workspace,
    centred_gram,
    cholesky_factor,
    cholesky_solve,
    cone_rows_gx,
    start_cone_t,
    sum_apply_rows,
)
from .cone_loops import (
    cone_gx_gtz_rows,
    group_row_sums,
    margin_rows_gx,
    margin_weights,
    matvec_pair_groups,
    matvec_pair,
    numpy_path_for,
    robust_solve_rows_in,
    robust_solve_rows_out,
)
from .status import column_rms, finish_status

__all__ = ["RobustSVMCone", "robust_svm_ipm", "solve_robust_ipm"]


class RobustSVMCone:
    """The robust SVM SOCP as a cone QP with the structured KKT solve.

    The reduction is derived in ``docs/guide/robust.md`` ("The structured interior point").

    Parameters
    ----------
    X : ndarray of shape (L, n)
        The samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    C : float or ndarray of shape (L,)
        The hinge's weight (shared or per sample).
    gamma : ndarray of shape (L,)
        The radii ``gamma_i`` (>= 0).
    factors : ndarray of shape (k, n) or (k, n, n)
        Diagonal square roots or the factors ``A_g``.
    diagonal : bool
        Whether ``factors`` are diagonal.
    group_index : ndarray of shape (L,)
        Each sample's group.
    """

    def __init__(self, X, y, C, gamma, factors, diagonal, group_index):  # noqa: C901
        X = np.ascontiguousarray(X, dtype=float)
        self.X, self.y = X, np.asarray(y, dtype=float)
        self.L, self.n = X.shape
        L, n = self.L, self.n
        self.C = C if np.ndim(C) else float(C)  # a number, or one weight C_i = C s_i per sample
        gamma = np.asarray(gamma, dtype=float)
        group_index = np.asarray(group_index)
        # keep the groups that carry uncertainty (some gamma_i > 0)
        k_all = factors.shape[0]
        active = np.zeros(k_all, dtype=bool)
        active[group_index[gamma > 0]] = True  # (repeated indices: the same True)
        self.active = active  # which of the given groups are the problem's k cones
        remap = np.cumsum(active) - 1
        self.k = int(active.sum())
        self.factors = np.ascontiguousarray(factors[active])
        self.diagonal = bool(diagonal)
        self.gamma = np.where(active[group_index], gamma, 0.0)
        self.gidx = (
            np.where(active[group_index], remap[group_index], 0).astype(np.intp)
            if self.k
            else np.zeros(L, dtype=np.intp)
        )
        k = self.k
        if self.k and not self.diagonal:
            self.AAt = np.einsum("kij,klj->kil", self.factors, self.factors)
        self.per_sample = self.k == L and bool(np.all(self.gidx == np.arange(L)))
        self.cones = ConeSpec(2 * L, [(k, n + 1)] if k else [])
        self.work = Workspace()
        self._derived: dict = {}  # what was derived from one scaling at one version (:meth:`_derived_for`)
        self.nx = n + 1 + L + k
        self.q = np.concatenate([np.zeros(n + 1), np.broadcast_to(self.C, (L,)), np.zeros(k)])
        self.h = np.concatenate([-np.ones(L), np.zeros(L), np.zeros(k * (n + 1))])
        self.b = np.zeros(0)

    def initial_point(self):
        """w = 0, b = 0, alpha = 0.3 C and the xi rows' multipliers 0.7 C (:data:`~.kkt.START_SHARE`; the xi rows of
        the dual residual vanish), hinge slacks ``xi_i = 3 + gamma_i t_g`` (:data:`~.kkt.START_SLACK`: margin slacks
        2), cone pairs (t_g, 0) and (z0_g, 0) with z0_g = sum_{i in g} gamma_i alpha_i (so the t rows vanish too) and
        t_g scaled to the radii and to z0_g (:func:`~.kkt.start_cone_t`): a start centred for this model, which needs
        fewer iterations than CVXOPT's shifted least-squares start."""
        k, C = self.k, self.C
        x = np.zeros(self.nx)
        z = np.empty(self.cones.size)
        zm, zx, Z = self.split_z(z)
        zm[:] = START_SHARE * C
        zx[:] = (1.0 - START_SHARE) * C
        w, b, xi, t = self.split_x(x)
        if k:
            z0 = self.segsum(self.gamma * zm)
            Z[:] = 0.0
            Z[:, 0] = z0
            gamma_max = np.zeros(k)
            np.maximum.at(gamma_max, self.gidx, self.gamma)
            t[:] = start_cone_t(z0, gamma_max, float(np.mean(C)))
            xi[:] = START_SLACK + self.gamma * t[self.gidx]
        else:
            xi[:] = START_SLACK
        s = self.h - self.Gx(x)
        return x, np.zeros(0), z, s

    # ------------------------------------------------------------------ pieces of x, z
    def split_x(self, x):
        n, L = self.n, self.L
        return x[:n], x[n], x[n + 1 : n + 1 + L], x[n + 1 + L :]

    def split_z(self, z):
        L, k, n = self.L, self.k, self.n
        return z[:L], z[L : 2 * L], z[2 * L :].reshape(k, n + 1)

    def cone_multipliers(self, z, k_all):
        """Rows ``z_g`` (shape (k_all, n); 0 for groups without a cone) of the certificate's dual point
        ``w = sum_i alpha_i y_i x_i - sum_g A_g z_g``: minus the vector parts of the cones' multipliers."""
        out = np.zeros((k_all, self.n))
        if self.k:
            out[self.active] = -self.split_z(z)[2][:, 1:]
        return out

    def segsum(self, v):
        if self.k == 1:
            return np.array([v.sum()])
        return np.bincount(self.gidx, weights=v, minlength=self.k)

    # ------------------------------------------------------------------ operators
    def Px(self, x):
        out = np.zeros_like(x)
        out[: self.n] = x[: self.n]
        return out

    def Gx(self, x, Xw=None, out=None, cone_rows=True):
        """``G x`` (into ``out``); ``Xw``: ``X w`` if known; ``cone_rows=False``: the cones' rows are written
        already."""
        w, b, xi, t = self.split_x(x)
        out = np.empty(self.cones.size) if out is None else out
        zm, zx, Z = self.split_z(out)
        margin_rows_gx(self.X @ w if Xw is None else Xw, self.y, b, xi, self.gamma, t, self.gidx, zm, zx)
        if self.k and cone_rows:
            cone_rows_gx(self.factors, self.diagonal, w, t, Z)
        return out

    def GTz(self, z, XTyz=None, AZ=None):
        """``G' z``; ``XTyz``: ``X' (y z_m)`` if known; ``AZ``: the cones' ``sum_g A_g z_g1`` if known."""
        zm, zx, Z = self.split_z(z)
        out = np.empty(self.nx)
        w, _, xi, t = self.split_x(out)
        yz = self.y * zm
        w[:] = -(self.X.T @ yz if XTyz is None else XTyz)
        if self.k:
            w -= sum_apply_rows(self.factors, self.diagonal, Z[:, 1:]) if AZ is None else AZ
            t[:] = self.segsum(self.gamma * zm) - Z[:, 0]
        out[self.n] = -yz.sum()
        xi[:] = -zm - zx
        return out

    def Gx_GTz(self, x, z, out=None, scaling=None):
        """``(G x, G' z)`` with the two products by ``X`` done in one pass over its rows (``G x`` into ``out``), and
        with diagonal factors the cones' parts of both in one pass over the factors
        (:func:`~.cone_loops.cone_gx_gtz_rows`).  ``scaling``: the iteration's NT scaling; with grouped cones the
        same pass then sums the rows of ``X`` that :meth:`kkt_factor` needs for the group means (kept for it while
        ``scaling`` is not updated again: :attr:`Scaling.version`)."""
        if scaling is not None and self.k and not self.per_sample:
            cg = self._mean_weights(scaling)[3]
            Xw, XTyz, sums = matvec_pair_groups(self.X, x[: self.n], self.y * z[: self.L], cg, self.gidx, self.k)
            self._derived_for(scaling)["group_sums"] = sums  # for kkt_factor(scaling)
        else:
            Xw, XTyz = matvec_pair(self.X, x[: self.n], self.y * z[: self.L])
        if not (self.k and self.diagonal):
            return self.Gx(x, Xw, out), self.GTz(z, XTyz)
        out = np.empty(self.cones.size) if out is None else out
        w, _, _, t = self.split_x(x)
        AZ = cone_gx_gtz_rows(self.factors, w, t, self.split_z(z)[2], self.split_z(out)[2])
        return self.Gx(x, Xw, out, cone_rows=False), self.GTz(z, XTyz, AZ)

    def Ax(self, x):
        return np.zeros(0)

    def ATy(self, y):
        return np.zeros(self.nx)

    # ------------------------------------------------------------------ KKT solve
    def _derived_for(self, scaling: Scaling) -> dict:
        """The quantities derived from ``scaling`` ("weights": :meth:`_mean_weights`' values; "group_sums": the row
        sums of the residual's pass, for :meth:`kkt_factor`), emptied when it is another scaling or was updated since
        (:attr:`Scaling.version`)."""
        kept = self._derived
        if kept.get("scaling") is not scaling or kept.get("version") != scaling.version:
            kept = self._derived = {"scaling": scaling, "version": scaling.version}
        return kept

    def _mean_weights(self, scaling: Scaling):
        """``(dm, dx, rho, c)`` of the margin rows: ``rho = dm dx / (dm + dx)`` and ``c = rho gamma y``, the weights
        of the group means' row sums; computed once per update of ``scaling`` (the residual's pass and the
        factorisation both need them)."""
        kept = self._derived_for(scaling)
        if "weights" not in kept:
            d, rho, c = margin_weights(scaling.w_l, self.gamma, self.y)  # d = scaling.d_l, in the same pass
            kept["weights"] = d[: self.L], d[self.L :], rho, c
        return kept["weights"]

    def kkt_factor(self, scaling: Scaling):
        return self._factor(scaling)[0]

    def kkt_factor_first(self, scaling: Scaling, bx, by, bz, dz_out=None):
        """``(solve, (dx, dy, dz))``: :meth:`kkt_factor` and its solve of ``(bx, by, bz)`` (``dz`` into ``dz_out``),
        whose first half shares the centred Gram matrix's pass over ``X`` (grouped or no cones; the same sums as
        the separate solve)."""
        return self._factor(scaling, (bx, by, bz, dz_out))

    def _factor(self, scaling: Scaling, first=None):
        L, n, k, X, y, gam = self.L, self.n, self.k, self.X, self.y, self.gamma
        dm, dx, rho, cg = self._mean_weights(scaling)
        kd = max(k, 1)  # the group sums below have one slot even without cones (gamma = 0 there)

        def rows_in_args(bx, bz):  # the first half's arrays: (dm, dx, bzm, bxi, bzx, c, gsum)
            bzm, bzx, _ = self.split_z(bz)
            return (dm, dx, bzm, self.split_x(bx)[2], bzx, np.empty(L), np.zeros(kd))

        pre = None  # the first right-hand side's first half, when the Gram matrix's pass does it
        if first is not None and not self.per_sample:
            pre = rows_in_args(first[0], first[2]) + (np.zeros(n + 1),)
        S = np.zeros((n + 1, n + 1))
        if k:
            cones = ConeTerms(self.factors, self.diagonal, scaling.beta[0], scaling.wbar[0], self.work)
            D00 = cones.D00
            ag = self.segsum(rho * gam**2)  # sum_{i in g} rho_i gamma_i^2 (> 0 for active groups)
            if self.per_sample:  # m_i = (c_i / a_i) [x_i; 1], never formed
                scale = cg / ag
                means = GroupMeans(X, scale, scale)
            else:  # m_g = sum_{i in g} rho_i gamma_i y_i [x_i; 1] / a_g
                mg = np.empty((k, n + 1))
                sums = self._derived_for(scaling).pop("group_sums", None)  # from the residual's pass, if it ran
                if sums is None:
                    sums = group_row_sums(X, cg, self.gidx, k)
                mg[:, :n] = sums / ag[:, None]
                mg[:, n] = self.segsum(cg) / ag
                means = GroupMeans.of(mg)
                # margin rows, centred by the group means: sum_i rho_i (a_i - gamma_i m_g)(a_i - gamma_i m_g)'
                # (= X'rho X - sum_g a_g m_g m_g', without the cancellation; zero for per-sample groups)
                S += centred_gram(X, y, rho, gam, self.gidx, mg, rows_in=pre)
            hg = ag + D00
            # the cones' terms and the coupling through t_g: a series combination of a_g and (D_g)_00 on m_g + qhat_g
            cones.add_schur(S, means, ag * D00 / hg, None if self.diagonal else self.AAt)
        else:  # [X 1]' diag(rho) [X 1] (y_i^2 = 1)
            S += centred_gram(X, y, rho, np.zeros(L), self.gidx, np.zeros((1, n + 1)), rows_in=pre)
        S[np.arange(n), np.arange(n)] += 1.0
        cho = cholesky_factor(S)
        dt0 = np.zeros(1)

        def solve(bx, by, bz, dz_out=None, halves=None):
            # halves: (dm, dx, bzm, bxi, bzx, c, sgc, acc) of this right-hand side's first half, done already
            bw, bb, bxi, bt = self.split_x(bx)
            BZ = self.split_z(bz)[2]
            if halves is None:
                _, _, bzm, _, bzx, c, sgc = args = rows_in_args(bx, bz)  # sgc = segsum(gamma c)
                xtyc, syc = robust_solve_rows_in(X, y, gam, self.gidx, rho, *args)
            else:
                _, _, bzm, _, bzx, c, sgc, acc = halves
                xtyc, syc = acc[:n], acc[n]
            phi = np.empty(n + 1)
            phi[:n] = bw + xtyc
            phi[n] = bb + syc
            dz = np.empty(self.cones.size) if dz_out is None else dz_out
            zm, zx, Z = self.split_z(dz)
            if k:
                psi0 = bt - sgc
                r0 = cones.reduced_rhs(BZ, psi0, ag, hg, means, phi)
                du = cholesky_solve(cho, phi)
                dt = cones.back(BZ, psi0, r0, ag, hg, means, du, Z)
            else:
                du = cholesky_solve(cho, phi)
                dt = np.zeros(0)
            dw, db = du[:n], float(du[n])
            out_x = np.empty(self.nx)
            w_, _, dxi, t_ = self.split_x(out_x)
            w_[:] = dw
            out_x[n] = db
            t_[:] = dt
            robust_solve_rows_out(
                X, y, gam, self.gidx, rho, dm, dx, bzm, bxi, bzx, c, dw, db, dt if k else dt0, dxi, zm, zx
            )
            return out_x, np.zeros(0), dz

        if first is None:
            return solve, None
        return solve, solve(*first, halves=pre)


def _check_labels(y):
    y = np.asarray(y, dtype=float)
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError("y must hold labels in {-1, +1}.")
    check_two_classes(
        y, "y", reason="the robust SVM then has optimum w = 0 with a non-unique, unbounded set of intercepts b"
    )
    return y


def robust_svm_ipm(
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
    refine=REFINE_STEPS,
    start=None,
    early=None,
    hold=None,
):
    """Solve the robust SVM SOCP; returns ``(values, info)`` with ``values = {w, b, xi, t}``.

    ``C`` is a number or one positive weight ``C_i`` per sample (in-memory samples), ``factors`` is ``(k, n)``
    (diagonal square roots) or ``(k, n, n)`` (A_g), ``group_index`` maps samples to groups, ``gamma`` holds
    gamma_i = radius * scale_i (>= 0); ``refine``: the most refinement steps per corrector solve
    (:class:`~.engine.Refinement`).  A Dask array ``X`` (with ``y``, ``gamma``, ``group_index`` -- and
    per-sample factors -- chunked along its rows) is solved on its row blocks by
    :func:`~.row_block_ipm.robust_svm_ipm_dask`, nothing gathered.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        The samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    C : float or ndarray of shape (L,)
        The hinge's weight (shared or per sample).
    gamma : ndarray of shape (L,)
        The radii ``gamma_i`` (>= 0).
    factors : ndarray of shape (k, n) or (k, n, n)
        Diagonal square roots or the factors ``A_g``.
    diagonal : bool
        Whether ``factors`` are diagonal.
    group_index : ndarray of shape (L,)
        Each sample's group.
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
    refine : int, default 4
        The most refinement steps per corrector solve.
    start : callable or None, default None
        In memory: ``start(prob) -> (x, y, z, s)``, the start point on the :class:`RobustSVMCone` ``prob`` (``s, z``
        interior; a warm start, :func:`~rsvm_conic.solvers.working_set.warm_point`); None:
        :meth:`RobustSVMCone.initial_point`.
    early : tuple or None, default None
        ``(tol_gap_rel, tol_feas, accept)``: the run ends ``optimal`` at the first iterate that meets
        the stopping test at these looser tolerances and whose weights ``w`` ``accept(w)`` accepts
        (:func:`~.engine.interior_point`); None: the tolerances above only.
    hold : tuple or None, default None
        ``(tol_gap_rel, accept)``: an iterate that meets the stopping test ends the run only when ``accept(w)``
        accepts its weights or it meets this tighter relative gap (:func:`~.engine.interior_point`).

    Returns
    -------
    values : dict
        ``w``, ``b``, ``xi``, ``t``.
    info : dict
        Status, iterations, ``pcost``, ``dcost``, gaps, residuals, ``alpha`` and ``cone_multipliers``.

    Raises
    ------
    ValueError
        For labels outside {-1, +1}, non-finite data, negative radii or a non-positive C.
    SolverError
        When the run does not end optimal (unless ``accept_inaccurate``).
    """
    if is_dask_array(X):
        from .row_block_ipm import robust_svm_ipm_dask

        return robust_svm_ipm_dask(
            X,
            y,
            C,
            gamma,
            factors,
            diagonal,
            group_index,
            max_iter=max_iter,
            tol_gap_abs=tol_gap_abs,
            tol_gap_rel=tol_gap_rel,
            tol_feas=tol_feas,
            verbose=verbose,
            accept_inaccurate=accept_inaccurate,
            print_fn=print_fn,
            refine=refine,
            early=early,
            hold=hold,
        )
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise ValueError("X must be a finite 2-D array (impute or drop NaN/inf entries).")
    y = _check_labels(y)
    gamma = np.asarray(gamma, dtype=float)
    if gamma.shape != (X.shape[0],) or not np.all(np.isfinite(gamma)) or np.any(gamma < 0):
        raise ValueError("gamma must hold one finite, nonnegative number per sample.")
    if not np.all(np.isfinite(factors)):
        raise ValueError("the uncertainty factors contain NaN or inf.")
    C = np.asarray(C, dtype=float) if np.ndim(C) else float(C)
    if np.shape(C) not in ((), (X.shape[0],)) or not (np.all(np.isfinite(C)) and np.all(C > 0)):
        raise ValueError(f"C must be finite and > 0 (a number, or one per sample: C_i = C s_i); got {C}.")
    factors = np.asarray(factors, dtype=float)
    # small data: the compiled loops' numpy twins (nothing compiled) and one BLAS thread (the Schur matrix's rank-k
    # updates, L (n + 1)^2 flops per iteration, are too small to share)
    with numpy_path_for(max(X.size, factors.size)), blas_threads_for(X.shape[0] * (X.shape[1] + 1) ** 2):
        prob = RobustSVMCone(X, y, C, gamma, factors, diagonal, group_index)
        if start is not None:
            prob.initial_point = lambda: start(prob)
        if early is not None:
            gap_rel, feas, accept = early
            early = (gap_rel, feas, lambda x: accept(x[: prob.n]))
        if hold is not None:
            hold_gap, hold_accept = hold
            hold = (hold_gap, lambda x: hold_accept(x[: prob.n]))
        res = cone_ipm(
            prob,
            max_iter=max_iter,
            tol_gap_abs=tol_gap_abs,
            tol_gap_rel=tol_gap_rel,
            tol_feas=tol_feas,
            verbose=verbose,
            print_fn=print_fn,
            refine=refine,
            early=early,
            hold=hold,
        )
    w, b, xi, t_act = prob.split_x(res.x)
    t = np.zeros(factors.shape[0])
    if prob.k:
        t[prob.active] = t_act
    info = {
        "status": res.status,
        "iterations": res.iterations,
        "pcost": res.pcost,
        "dcost": res.dcost,
        "gap_abs": res.gap_abs,
        "gap_rel": res.gap_rel,
        "pres": res.pres,
        "dres": res.dres,
        "solve_time": res.time,
        "log": res.log,
        "n_cones": prob.k,
        "alpha": prob.split_z(res.z)[0].copy(),
        "cone_multipliers": prob.cone_multipliers(res.z, factors.shape[0]),
    }
    finish_status(info, accept_inaccurate, lambda: column_rms(X))
    return {"w": np.array(w), "b": float(b), "xi": np.array(xi), "t": t}, info


def solve_robust_ipm(X, y, C, gamma=None, factors=None, diagonal=True, group_index=None, **opts):
    """Backend ``"ipm"`` of the linear SVMs (nominal, robust, chance-constrained) on trusted arrays.

    Parameters
    ----------
    X, y : arrays (L, n) and (L,)
        Samples and labels in {-1, +1}, in memory or as Dask arrays chunked along the rows (then the interior
        point runs on the row blocks, :func:`~.row_block_ipm.robust_svm_ipm_dask`, nothing gathered).
    C : float or array (L,)
        The hinge weights: a number or one ``C_i = C s_i`` per in-memory sample.
    gamma : array (L,) or None
        The per-sample radii ``gamma_i`` of the resolved uncertainty; None for the nominal SVM (no cone).
    factors, diagonal, group_index
        The resolved uncertainty's factors ``(k, n)`` (diagonal) or ``(k, n, n)`` and each sample's group.
    **opts
        ``max_iter``, ``tol_gap_abs``, ``tol_gap_rel``, ``tol_feas``, ``verbose``, ``accept_inaccurate``,
        ``refine``, ``early``, ``hold`` (:func:`robust_svm_ipm`).

    Returns
    -------
    values : dict
        ``w``, ``b``, ``xi``, ``t``.
    info : dict
        The run's status, iterations, costs, residuals, margin multipliers ``alpha`` and (in memory) the cones'
        multipliers.
    """
    L, n = X.shape
    rows = is_dask_array(X)
    if gamma is None:  # nominal SVM: no cone
        if rows:
            import dask.array as da

            group_index, gamma = da.zeros(L, dtype=np.intp, chunks=X.chunks[0]), da.zeros(L, chunks=X.chunks[0])
        else:
            group_index, gamma = np.zeros(L, dtype=np.intp), np.zeros(L)
        factors, diagonal = np.zeros((1, n)), True
    if rows:  # validated at the public boundary
        from .row_block_ipm import robust_svm_ipm_dask

        return robust_svm_ipm_dask(X, y, C, gamma, factors, diagonal, group_index, check_input=False, **opts)
    return robust_svm_ipm(X, y, C, gamma, factors, diagonal, group_index, **opts)
