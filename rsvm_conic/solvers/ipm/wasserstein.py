"""Structured interior point for the Wasserstein distributionally robust hinge-loss SVM [SKE19].

The problem (derived in :mod:`rsvm_conic.formulations.wasserstein` and ``docs/guide/wasserstein.md``)::

    minimise    radius lam + sum_i pi_i s_i
    subject to  s_i >= 1 - y_i (<w, x_i> + b),   s_i >= 1 + y_i (<w, x_i> + b) - kappa lam  (finite kappa),
                s_i >= 0,   ||w||_q <= lam

in the cone form of :mod:`.engine`, ``x = (w, b, lam[, v], s)``: an orthant of ``2L`` or ``3L`` sample rows plus the
norm's rows when they are linear (q = inf: ``+-w_j <= lam``; q = 1: ``+-w_j <= v_j``, ``sum v <= lam``), and for
q = 2 one second-order cone ``(lam, w)``.  The norm constraint couples only the ``m = n + 2`` (q = 1: ``2n + 2``)
small variables, so the Newton system ``(G' W^-2 G) dx = r`` reduces in closed form: each ``s_i`` meets only its own
rows, with diagonal ``e_i = dA_i + dB_i + dC_i`` (``d = z / s`` of its three rows), and eliminating it leaves one
``m x m`` system::

    S_uu   = [X 1]' diag(rho) [X 1],        rho_i = (4 dA_i dB_i + dC_i (dA_i + dB_i)) / e_i
    S_ulam = -kappa [X 1]' (y dB (2 dA + dC) / e),   S_lamlam = kappa^2 sum_i dB_i (dA_i + dC_i) / e_i

(``u = (w, b)``; without the flipped rows ``dB = 0``; ``rho`` written without cancellation) plus the norm rows' block
``G_N' W_N^-2 G_N``, placed in closed form (``O(n^2)``).  Per factorisation one weighted Gram matrix (``L m^2``
flops, through one weighted copy of ``[X 1]``) and a Cholesky factorisation of ``S``; per solve four matrix-vector
products with ``[X 1]``.  No array of shape ``(L, n, n)``.
"""

from __future__ import annotations

import numpy as np

from ..._threads import blas_threads_for
from .engine import ConeSpec, Scaling, cone_ipm
from .cone_loops import numpy_path_for
from .kkt import cholesky_factor, cholesky_solve
from .status import column_rms, finish_status

__all__ = ["WassersteinCone", "solve_wasserstein_ipm"]


class WassersteinCone:
    """The Wasserstein SVM as a cone LP/SOCP for :func:`~.engine.cone_ipm`, with the reduced KKT solve of the module
    docstring.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        Samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    pi : ndarray of shape (L,)
        The empirical distribution's weights (positive, summing to 1).
    radius : float
        The ball's radius (> 0).
    kappa : float
        The label-flip cost (> 0, or inf).
    q : {1, 2, inf}
        The dual norm on ``w``.
    scale : float, default 1.0
        The objective's scale: the cone QP's objective is the problem's divided by it.
    """

    def __init__(self, X, y, pi, radius, kappa, q, scale=1.0):
        self.L, self.n = L, n = X.shape
        self.X1 = np.empty((L, n + 1))
        self.X1[:, :n] = X
        self.X1[:, n] = 1.0
        self.y = np.asarray(y, dtype=float)
        self.kappa = float(kappa)
        self.flip = bool(np.isfinite(self.kappa))
        self.q_norm = float(q)
        self.m = m = n + 2 + (n if q == 1.0 else 0)  # w, b, lam[, v]
        self.lam = n + 1
        # the norm's rows on the small variables: linear (q = 1, inf) or one SOC (q = 2)
        if q == 2.0:
            GN = np.zeros((0, m))
            GC = np.zeros((n + 1, m))
            GC[0, self.lam] = -1.0
            GC[1:, :n] = -np.eye(n)
        elif np.isinf(q):
            GN = np.zeros((2 * n, m))
            GN[:n, :n], GN[n:, :n] = np.eye(n), -np.eye(n)
            GN[:, self.lam] = -1.0
            GC = np.zeros((0, m))
        else:
            GN = np.zeros((2 * n + 1, m))
            v = slice(n + 2, 2 * n + 2)
            GN[:n, :n], GN[n : 2 * n, :n] = np.eye(n), -np.eye(n)
            GN[:n, v], GN[n : 2 * n, v] = -np.eye(n), -np.eye(n)
            GN[2 * n, v], GN[2 * n, self.lam] = 1.0, -1.0
            GC = np.zeros((0, m))
        self.GN, self.GC = GN, GC
        self.rows = (2 + self.flip) * L  # sample rows: A, [B,] C
        self.cones = ConeSpec(self.rows + GN.shape[0], [(1, n + 1)] if GC.shape[0] else [])
        self.nx = m + L
        self.q = np.zeros(self.nx)
        self.q[self.lam] = radius / scale
        self.q[m:] = pi / scale
        self.h = np.zeros(self.cones.size)
        self.h[: (1 + self.flip) * L] = -1.0
        self.b = np.zeros(0)
        if q == 1.0 and self.flip:  # the centred start takes more iterations there: the engine's start
            self.initial_point = None

    def initial_point(self):
        """A start centred for this model, as the robust SVM's (:meth:`.robust_svm.RobustSVMCone.initial_point`):
        ``w = 0``, ``b = 0``, ``s_i = 2`` (margin slacks 1, or ``1 + kappa lam`` on the flipped rows), the sample
        rows' multipliers sharing ``pi_i`` equally (the ``s`` rows of the dual residual vanish; a weight below a
        tenth of the mean, e.g. 0, shares a tenth of the mean instead, as the multipliers must be positive), and the
        norm's rows at slack 1 with multipliers that make the ``lam`` row vanish without flips: q = 2: ``lam = 1``,
        the cone's multiplier ``(radius, 0)``; q = inf: ``lam = 1``, ``radius / (2 n)`` per row; q = 1: ``v_j = 1``,
        ``lam = n + 1``, ``radius / 2`` on the pairs and ``radius`` on ``sum v <= lam``.

        On the default fit (breast cancer 569 x 30, radius 0.01, q = 2) it takes 14 iterations where the engine's
        shifted least-squares start takes 25; with q = 1 and a finite ``kappa`` it takes more, and the engine's
        start is used there (``rsvm-conic bench defaults`` prints the default fit's iterations).

        Returns
        -------
        x, y, z, s : ndarray
            The start; ``s`` and ``z`` strictly inside the cone.
        """
        n, m, lam = self.n, self.m, self.lam
        pi = self.q[m:]
        share = np.maximum(pi, 0.1 * pi.mean()) / (3.0 if self.flip else 2.0)
        x = np.zeros(self.nx)
        z = np.empty(self.cones.size)
        zA, zB, zC, zN, zS = self.split_rows(z)
        zA[:], zC[:] = share, share
        if self.flip:
            zB[:] = share
        x[m:] = 2.0
        r = self.q[lam]
        if self.q_norm == 2.0:
            zS[:] = 0.0
            zS[0] = r
            x[lam] = 1.0
        elif np.isinf(self.q_norm):
            zN[:] = r / (2 * n)
            x[lam] = 1.0
        else:
            zN[: 2 * n], zN[2 * n] = 0.5 * r, r
            x[n + 2 : 2 * n + 2] = 1.0
            x[lam] = n + 1.0
        s = self.h - self.Gx(x)
        return x, np.zeros(0), z, s

    # ------------------------------------------------------------------ pieces
    def split_rows(self, z):
        """``(zA, zB or None, zC, zN, zS)`` views of a cone vector."""
        L, f = self.L, self.flip
        zA = z[:L]
        zB = z[L : 2 * L] if f else None
        zC = z[(1 + f) * L : self.rows]
        zN = z[self.rows : self.cones.n_l]
        zS = z[self.cones.n_l :]
        return zA, zB, zC, zN, zS

    # ------------------------------------------------------------------ operators
    def Px(self, x):
        return np.zeros_like(x)

    def Ax(self, x):
        return np.zeros(0)

    def ATy(self, y):
        return np.zeros(self.nx)

    def Gx(self, x):
        m, n = self.m, self.n
        small, s = x[:m], x[m:]
        f = self.y * (self.X1 @ small[: n + 1])
        out = np.empty(self.cones.size)
        zA, zB, zC, zN, zS = self.split_rows(out)
        np.subtract(-f, s, out=zA)
        if self.flip:
            np.subtract(f - self.kappa * small[self.lam], s, out=zB)
        np.negative(s, out=zC)
        zN[:] = self.GN @ small
        zS[:] = self.GC @ small
        return out

    def GTz(self, z):
        m, n = self.m, self.n
        zA, zB, zC, zN, zS = self.split_rows(z)
        out = np.empty(self.nx)
        coef = -zA if zB is None else zB - zA
        out[: n + 1] = self.X1.T @ (self.y * coef)
        out[n + 1 : m] = 0.0
        if self.flip:
            out[self.lam] = -self.kappa * zB.sum()
        out[:m] += self.GN.T @ zN + self.GC.T @ zS
        out[m:] = -zA - zC if zB is None else -zA - zB - zC
        return out

    # ------------------------------------------------------------------ KKT solve
    def _add_norm_rows(self, S, dN, scaling: Scaling) -> None:
        """``S += G_N' W_N^-2 G_N``, the norm rows' block, in closed form (O(n^2); the rows' matrices are never
        multiplied): q = 2: ``W^-2`` of the cone ``(lam, w)`` placed on those coordinates; q = inf: the pairs
        ``+-w_j - lam``; q = 1: the pairs ``+-w_j - v_j`` and the row ``sum v - lam``."""
        n, lam, j = self.n, self.lam, np.arange(self.n)
        if self.q_norm == 2.0:
            beta, wbar = float(scaling.beta[0][0]), scaling.wbar[0][0]
            jw = wbar / (beta / np.sqrt(2.0))  # W^-2 = beta^-2 (2 J wbar wbar' J - J)
            jw[1:] = -jw[1:]
            idx = np.concatenate([[lam], j])
            S[np.ix_(idx, idx)] += np.outer(jw, jw)
            S[lam, lam] -= 1.0 / (beta * beta)
            S[j, j] += 1.0 / (beta * beta)
            return
        d1, d2 = dN[:n], dN[n : 2 * n]
        S[j, j] += d1 + d2
        if np.isinf(self.q_norm):
            S[j, lam] += d2 - d1
            S[lam, j] += d2 - d1
            S[lam, lam] += float(np.sum(d1 + d2))
            return
        v, d3 = n + 2 + j, float(dN[2 * n])
        S[j, v] += d2 - d1
        S[v, j] += d2 - d1
        S[v, v] += d1 + d2
        S[np.ix_(v, v)] += d3
        S[v, lam] -= d3
        S[lam, v] -= d3
        S[lam, lam] += d3

    def kkt_factor(self, scaling: Scaling):
        L, n, m, y, X1 = self.L, self.n, self.m, self.y, self.X1
        dl = scaling.d_l
        dA, dB, dC, dN, _ = self.split_rows(dl)
        dB = np.zeros(L) if dB is None else dB
        e = dA + dB + dC
        rho = (4.0 * dA * dB + dC * (dA + dB)) / e
        S = np.zeros((m, m))
        S[: n + 1, : n + 1] = X1.T @ (X1 * rho[:, None])
        if self.flip:
            k = self.kappa
            col = -k * (X1.T @ (y * dB * (2.0 * dA + dC) / e))
            S[: n + 1, self.lam] += col
            S[self.lam, : n + 1] += col
            S[self.lam, self.lam] += k * k * float(np.sum(dB * (dA + dC) / e))
        self._add_norm_rows(S, dN, scaling)
        cho = cholesky_factor(S)
        gA = dA - dB  # the s-coupling of the margin rows, times y_i [x_i; 1]

        def solve(bx, by, bz, dz_out=None):
            wz = scaling.apply_inv_sq(bz)  # W^-2 bz (two applications of W^-1, in one pass)
            r = bx + self.GTz(wz)
            rs = r[m:] / e
            rhs = r[:m].copy()
            rhs[: n + 1] -= X1.T @ (y * gA * rs)
            if self.flip:
                rhs[self.lam] -= self.kappa * float(dB @ rs)
            d_small = cholesky_solve(cho, rhs)
            coupling = y * gA * (X1 @ d_small[: n + 1])
            if self.flip:
                coupling += self.kappa * dB * d_small[self.lam]
            dx = np.empty(self.nx)
            dx[:m] = d_small
            dx[m:] = rs - coupling / e
            dz = scaling.apply_inv_sq(self.Gx(dx) - bz)
            return dx, np.zeros(0), dz

        return solve


def solve_wasserstein_ipm(
    X,
    y,
    pi,
    radius,
    kappa,
    q,
    *,
    scale=1.0,
    start=None,
    max_iter=100,
    tol_gap_abs=1e-14,
    tol_gap_rel=1e-9,
    tol_feas=1e-9,
    verbose=False,
    accept_inaccurate=True,
):
    """Solve the Wasserstein SVM with :func:`~.engine.cone_ipm` on :class:`WassersteinCone` (trusted arrays).

    Parameters
    ----------
    X : ndarray of shape (L, n)
        Samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    pi : ndarray of shape (L,)
        The empirical distribution's weights.
    radius : float
        The ball's radius (> 0).
    kappa : float
        The label-flip cost (> 0, or inf).
    q : {1, 2, inf}
        The dual norm on ``w``.
    scale : float, default 1.0
        An upper bound on the optimum (e.g. a constant classifier's objective): the run solves the problem divided by
        it, as its stopping test is absolute below objective 1; the multipliers are returned on the problem's scale.
    start : tuple or None, default None
        A previous run's ``(x, z, s)`` on the same data (``info["point"]``): the start, moved into the cone's
        interior (the orthant's entries and the cone's heads raised by 0.1); None: the centred start
        (:meth:`WassersteinCone.initial_point`).
        On a path of 20 radii (5000 x 30) it saves 17 % of the iterations (455 -> 376).
    max_iter : int, default 100
        Iteration limit.
    tol_gap_abs, tol_gap_rel, tol_feas : float, default 1e-14, 1e-9, 1e-9
        The stopping test's tolerances (the absolute gap's is below any objective's scale: the relative one decides).
    verbose : bool, default False
        Log every iteration.
    accept_inaccurate : bool, default True
        Return a run that stops short of the tolerances (its caller certifies the point); False: SolverError.

    Returns
    -------
    values : dict
        ``w``, ``b``, ``lam``.
    info : dict
        Status, iterations, costs, residuals, the multipliers ``alpha`` (hinge rows) and ``beta`` (flipped rows; None
        for kappa = inf), and ``point``: ``(x, z, s)`` for a warm start.
    """
    import warnings

    from ...exceptions import SolverWarning

    X = np.asarray(X, dtype=float)
    prob = WassersteinCone(X, y, pi, radius, kappa, q, scale)
    if start is not None and start[0].shape == (prob.nx,):
        x0, z0, s0 = (np.array(a) for a in start)
        shift = 1e-1  # of 1e-4, 1e-3, 1e-2 and 1e-1, the fewest iterations along a path of radii
        s0[: prob.cones.n_l] = np.maximum(s0[: prob.cones.n_l], 0.0) + shift
        z0[: prob.cones.n_l] = np.maximum(z0[: prob.cones.n_l], 0.0) + shift
        if prob.GC.shape[0]:  # the SOC pair: raise the head above the tail's norm
            for v in (s0, z0):
                c = v[prob.cones.n_l :]
                c[0] = max(c[0], float(np.linalg.norm(c[1:]))) + shift
        prob.initial_point = lambda: (x0, np.zeros(0), z0, s0)
    # small data: the cone kernels' numpy twins (nothing compiled: a first fit in a fresh process starts at once)
    with (
        numpy_path_for(X.size),
        blas_threads_for(X.shape[0] * (X.shape[1] + 1) ** 2),
        warnings.catch_warnings(),
    ):
        if accept_inaccurate:
            warnings.simplefilter("ignore", SolverWarning)
        # a step onto a cone's boundary divides by 0 in the cone kernels: the run's status and the caller's
        # certificate judge the point, and a non-finite one is never returned as a model (require_finite)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            res = cone_ipm(
                prob,
                max_iter=max_iter,
                tol_gap_abs=tol_gap_abs,
                tol_gap_rel=tol_gap_rel,
                tol_feas=tol_feas,
                verbose=verbose,
            )
        n = prob.n
        zA, zB, _, _, _ = prob.split_rows(res.z)
        info = {
            "status": res.status,
            "iterations": res.iterations,
            "pcost": res.pcost,
            "dcost": res.dcost,
            "gap_rel": res.gap_rel,
            "pres": res.pres,
            "dres": res.dres,
            "alpha": scale * zA,
            "beta": None if zB is None else scale * zB,
            "point": (res.x.copy(), res.z.copy(), res.s.copy()),
        }
        finish_status(info, accept_inaccurate, lambda: column_rms(X))
    values = {"w": res.x[:n].copy(), "b": float(res.x[n]), "lam": float(res.x[prob.lam])}
    return values, info
