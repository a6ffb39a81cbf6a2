"""Structured interior point for one convex step of the hyperbolic machine's CCP [ElD19, chapter 3].

The step (the CCP majoriser scaled by ``gamma``, the tangent's constants dropped; the same problem as the
formulation's CVXPY model and :class:`~rsvm_conic.solvers.hyperbolic_step.MajoriserStep`)::

    minimise    gamma lam ||R||^2 + sum_i s_i g_i - q . mu - e . R
    subject to  g_i >= (sum_j nu_ij - nu_il) / 2 + [l != y_i] (gamma + (R_l - R_{y_i}) / 2)   (every i, l),
                ||O_k - phi_i|| <= nu_ik,   O_k = sum_{a in k} mu_a A_a,   mu_k in the simplex,   R >= 0,

over the hulls of each class's anchors ``A_a``: the class points (the ``ipm`` route) or k-means centroids (the
``anchors`` route).  Each cone is written in its class's coordinates (as the formulation's model): with ``c_k``
the mean of the class's anchors, ``B_k`` (r_k x D) an orthonormal basis of their span around it,
``F_k = (A_k - c_k) B_k'`` and ``v_k = F_k' mu_k``, ``||O_k - phi_i||^2 = ||v_k - z_ik||^2 + p_ik^2`` with
``z_ik = B_k (phi_i - c_k)`` and ``p_ik`` the distance of ``phi_i - c_k`` to the span.  The cone form of
:mod:`.engine` has ``x = (mu, v, R, nu, g)``: an orthant of ``m + C + n C`` rows (``mu >= 0`` over the ``m``
anchors, ``R >= 0``, the ``C`` pieces of every sample) and one batch of ``n`` cones ``(nu_ik, v_k - z_ik, p_ik)``
per class; equalities ``F_k' mu_k = v_k`` and ``sum mu_k = 1``.

KKT solve in closed form.  Each sample's ``(nu_i, g_i)`` meets only its own ``C`` pieces and cones, so the Newton
system ``(P + G' W^-2 G) dx + A' dy = r`` eliminates them with one ``(C + 1)``-square block per sample (the blocks
formed by one product with the pieces' rows, inverted as one batch), leaving a dense Schur complement ``S`` over
``(v, R)`` (size ``r + C``, ``r = sum_k r_k <= min(m, C D)``), whose ``(v, v)`` part is one small product per pair
of classes ``j <= k`` (``n r^2`` flops per factorisation, the upper triangle only); ``mu`` is diagonal (its
orthant), and the equalities leave one dense ``(r + C)``-square system ``A H^-1 A' = F' diag(1/d_mu) F +
(S^-1)_vv`` (``S^-1`` from ``S``'s Cholesky factor, LAPACK ``potri``).  Each solve is then two triangular
pairs with ``S``'s factor and one with the equalities' factor.  No array of shape ``(n, n)`` beyond these.
The class geometry (:class:`HyperbolicGeometry`) is computed once per fit and reused by every step and start; only
``q`` and ``e`` change.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from ..._jit import jit
from .engine import ConeSpec, cone_ipm

__all__ = ["HyperbolicGeometry", "HyperbolicStepCone", "solve_step_ipm"]


@jit(error_model="numpy")
def _spd_inverses(K):
    """The inverses of a batch of symmetric positive definite matrices, in place, one Cholesky factor each.

    Parameters
    ----------
    K : ndarray of shape (n, m, m)
        The matrices (only their lower triangles are read); overwritten with their inverses.

    Returns
    -------
    bool
        Whether every matrix was positive definite (when not, ``K`` holds no inverse).
    """
    n, m = K.shape[0], K.shape[1]
    L = np.empty((m, m))
    Li = np.empty((m, m))
    for i in range(n):
        for j in range(m):  # L L' = K_i
            s = K[i, j, j]
            for p in range(j):
                s -= L[j, p] * L[j, p]
            if not s > 0.0:
                return False
            L[j, j] = np.sqrt(s)
            for r in range(j + 1, m):
                s = K[i, r, j]
                for p in range(j):
                    s -= L[r, p] * L[j, p]
                L[r, j] = s / L[j, j]
        for j in range(m):  # Li = L^-1, lower triangular
            Li[j, j] = 1.0 / L[j, j]
            for r in range(j + 1, m):
                s = 0.0
                for p in range(j, r):
                    s -= L[r, p] * Li[p, j]
                Li[r, j] = s / L[r, r]
        for a in range(m):  # K^-1 = Li' Li
            for b in range(a, m):
                s = 0.0
                for p in range(b, m):
                    s += Li[p, a] * Li[p, b]
                K[i, a, b] = s
                K[i, b, a] = s
    return True


class HyperbolicGeometry:
    """The step's data that do not depend on the tangent: each class's coordinates (module docstring).

    Parameters
    ----------
    Phi : ndarray of shape (n, D)
        Feature vectors (trusted).  Without ``anchors`` they are also the anchors, so sorted by class (``codes``
        non-decreasing).
    codes : ndarray of shape (n,)
        Class codes ``0..C-1``, every class non-empty.
    weights : ndarray of shape (n,)
        The sample weights ``s_i`` (positive).
    gamma, lam : float
        The machine's margin parameter and the weight of ``||R||^2``.
    anchors : ndarray of shape (m, D) or None, default=None
        The points whose hulls hold the centres (e.g. per-class k-means centroids), sorted by class; None: the
        samples themselves.
    anchor_class : ndarray of shape (m,) or None, default=None
        The class of each anchor, non-decreasing, every class present (with ``anchors``).
    """

    def __init__(self, Phi, codes, weights, gamma: float, lam: float, anchors=None, anchor_class=None):
        n, D = Phi.shape
        if anchors is None:
            anchors, anchor_class = Phi, codes
        self.n, self.m, self.D, self.C = n, anchors.shape[0], D, int(anchor_class.max()) + 1
        self.codes, self.weights, self.gamma, self.lam = codes, np.asarray(weights, float), float(gamma), float(lam)
        self.starts = np.searchsorted(anchor_class, np.arange(self.C + 1))  # each class's anchors
        self.F, self.Z, self.P, self.bases, self.offdir = [], [], [], [], []
        for k in range(self.C):
            Ak = anchors[self.starts[k] : self.starts[k + 1]]
            ck = Ak.mean(axis=0)
            _, S, Vt = np.linalg.svd(Ak - ck, full_matrices=False)
            r = int(np.sum(S > 1e-12 * max(S[0], 1e-300))) if S.size else 0
            Bk = Vt[:r]
            Pc = Phi - ck
            Zk = Pc @ Bk.T
            off = Pc - Zk @ Bk
            p = np.linalg.norm(off, axis=1)
            self.F.append((Ak - ck) @ Bk.T)
            self.Z.append(Zk)
            self.P.append(p)
            self.bases.append(Bk)
            self.offdir.append(np.where(p[:, None] > 1e-12, off / np.maximum(p, 1e-300)[:, None], 0.0))
        self.r = np.array([B.shape[0] for B in self.bases])
        self.voff = np.concatenate([[0], np.cumsum(self.r)])
        self.colcls = np.repeat(np.arange(self.C), self.r)
        Y = np.zeros((n, self.C))
        Y[np.arange(n), codes] = 1.0
        self.Y = Y
        C = self.C
        # the pieces' R rows: [l != y_i] (e_l - e_{y_i}) / 2, shape (n, C pieces, C radii)
        self.GR = 0.5 * ((1.0 - Y)[:, :, None] * (np.eye(C)[None, :, :] - Y[:, None, :]))


class HyperbolicStepCone:
    """One CCP step as a cone QP for :func:`~.engine.cone_ipm`, with the reduced KKT solve of the module docstring.

    Parameters
    ----------
    geo : HyperbolicGeometry
        The class coordinates, shared by all steps.
    q : ndarray of shape (m,)
        The tangent's linear term in ``mu`` (one entry per anchor).
    e : ndarray of shape (C,)
        The tangent's linear term in ``R``.
    """

    def __init__(self, geo: HyperbolicGeometry, q, e):
        self.geo = g = geo
        n, m, C, r = g.n, g.m, g.C, int(g.r.sum())
        self.sl = {
            "mu": slice(0, m),
            "v": slice(m, m + r),
            "R": slice(m + r, m + r + C),
            "nu": slice(m + r + C, m + r + C + n * C),
            "g": slice(m + r + C + n * C, m + n + r + C + n * C),
        }
        self.N = m + n + r + C + n * C
        self.nr = r
        self.cones = ConeSpec(m + C + n * C, [(n, int(rk) + 2) for rk in g.r])
        self.q = np.zeros(self.N)
        self.q[self.sl["mu"]] = -q
        self.q[self.sl["R"]] = -e
        self.q[self.sl["g"]] = g.weights
        h_l = np.zeros(m + C + n * C)
        h_l[m + C :] = (-g.gamma * (1.0 - g.Y)).ravel()
        parts = [h_l]
        for k in range(C):
            H = np.zeros((n, int(g.r[k]) + 2))
            H[:, 1:-1] = -g.Z[k]
            H[:, -1] = g.P[k]
            parts.append(H.ravel())
        self.h = np.concatenate(parts)
        self.b = np.concatenate([np.zeros(r), np.ones(C)])
        # the pieces' local rows: nu_ij has (1 - [j = l]) / 2, g_i has -1; their products, row l of the pieces'
        # Gram matrix ``sum_l d_il Gloc_l Gloc_l'`` flattened, so that the n local blocks are one product
        Gloc = np.hstack([0.5 * (1.0 - np.eye(C)), -np.ones((C, 1))])
        self.Gpair = (Gloc[:, :, None] * Gloc[:, None, :]).reshape(C, (C + 1) ** 2)

    # -- products --------------------------------------------------------------------------------------
    def _split(self, x):
        g = self.geo
        return (
            x[self.sl["mu"]],
            x[self.sl["v"]],
            x[self.sl["R"]],
            x[self.sl["nu"]].reshape(g.n, g.C),
            x[self.sl["g"]],
        )

    def Px(self, x):
        out = np.zeros_like(x)
        out[self.sl["R"]] = 2.0 * self.geo.gamma * self.geo.lam * x[self.sl["R"]]
        return out

    def Gx(self, x):
        g = self.geo
        mu, v, R, nu, gi = self._split(x)
        lin = 0.5 * (nu.sum(axis=1, keepdims=True) - nu) + g.GR @ R - gi[:, None]
        out = np.empty(self.cones.size)
        m, C = g.m, g.C
        out[:m] = -mu
        out[m : m + C] = -R
        out[m + C : self.cones.n_l] = lin.ravel()
        _, blocks = self.cones.split(out)
        for k, blk in enumerate(blocks):
            blk[:, 0] = -nu[:, k]
            blk[:, 1:-1] = -v[g.voff[k] : g.voff[k + 1]]
            blk[:, -1] = 0.0
        return out

    def GTz(self, z):
        g = self.geo
        n, m, C = g.n, g.m, g.C
        out = np.empty(self.N)
        out[self.sl["mu"]] = -z[:m]
        zh = z[m + C : m + C + n * C].reshape(n, C)
        out[self.sl["R"]] = -z[m : m + C] + zh.ravel() @ g.GR.reshape(n * C, C)
        nu = 0.5 * (zh.sum(axis=1, keepdims=True) - zh)
        out[self.sl["g"]] = -zh.sum(axis=1)
        _, zq = self.cones.split(z)
        v = out[self.sl["v"]]
        for k, Zk in enumerate(zq):
            nu[:, k] -= Zk[:, 0]
            v[g.voff[k] : g.voff[k + 1]] = -Zk[:, 1:-1].sum(axis=0)
        out[self.sl["nu"]] = nu.ravel()
        return out

    def _Fmu(self, mu):
        """``(F_k' mu_k)_k``, stacked (r,)."""
        g = self.geo
        return np.concatenate([g.F[k].T @ mu[g.starts[k] : g.starts[k + 1]] for k in range(g.C)])

    def Ax(self, x):
        mu = x[self.sl["mu"]]
        return np.concatenate([self._Fmu(mu) - x[self.sl["v"]], np.add.reduceat(mu, self.geo.starts[:-1])])

    def _ATy_mu(self, y):
        g = self.geo
        yv, ys = y[: self.nr], y[self.nr :]
        return np.concatenate([g.F[k] @ yv[g.voff[k] : g.voff[k + 1]] + ys[k] for k in range(g.C)])

    def ATy(self, y):
        out = np.zeros(self.N)
        out[self.sl["mu"]] = self._ATy_mu(y)
        out[self.sl["v"]] = -y[: self.nr]
        return out

    # -- the reduced KKT solve ---------------------------------------------------------------------------
    def kkt_factor(self, scaling):
        g = self.geo
        n, m, C, r = g.n, g.m, g.C, self.nr
        voff = g.voff
        dl = scaling.d_l
        d_mu, d_R, d_h = dl[:m], dl[m : m + C], dl[m + C :].reshape(n, C)
        a_nu = np.empty((n, C))  # the cones' diagonal on nu_ik
        Cflat = np.empty((n, r))  # the cones' nu_ik - v_k coupling, in v_k's coordinates
        S = np.zeros((r + C, r + C))  # the Schur complement over (v, R); upper triangle only
        for k in range(C):
            wb, bt = scaling.wbar[k], scaling.beta[k]
            ib2 = 1.0 / bt**2
            w0, wv = wb[:, 0], wb[:, 1:-1]
            a_nu[:, k] = ib2 * (2.0 * w0 * w0 - 1.0)
            sl = slice(voff[k], voff[k + 1])
            Cflat[:, sl] = (-2.0 * ib2 * w0)[:, None] * wv
            Wv = wv * np.sqrt(2.0 * ib2)[:, None]
            S[sl, sl] = Wv.T @ Wv
            S[sl, sl][np.diag_indices(int(g.r[k]))] += ib2.sum()
        # the local blocks (nu_i, g_i): the pieces' Gram matrix (one product with the pieces' rows, whose sums have
        # terms of one sign: no cancellation when d_h spans many orders of magnitude) plus the cones' diagonal
        K = (d_h @ self.Gpair).reshape(n, C + 1, C + 1)
        diag = np.arange(C)
        K[:, diag, diag] += a_nu
        if not _spd_inverses(K):
            raise np.linalg.LinAlgError("a sample's local block of the KKT system is not positive definite")
        Kinv = K
        # the locals x R block: the pieces' rows times their R rows [l != y_i] (e_l - e_{y_i}) / 2
        dh_off = d_h * (1.0 - g.Y)
        BR = np.empty((n, C + 1, C))
        BR[:, :C, :] = 0.25 * dh_off[:, None, :]
        BR[:, diag, diag] = 0.0
        BR[:, C, :] = -0.5 * dh_off
        BR[np.arange(n), :, g.codes] = -BR.sum(axis=2)
        X = Kinv @ BR
        BRf, Xf = BR.reshape(n * (C + 1), C), X.reshape(n * (C + 1), C)
        SRR = (g.GR * d_h[:, :, None]).reshape(n * C, C).T @ g.GR.reshape(n * C, C) - BRf.T @ Xf
        SRR[diag, diag] += d_R + 2.0 * g.gamma * g.lam
        S[r:, r:] = SRR
        Xnu = np.ascontiguousarray(X[:, :C, :].transpose(1, 0, 2))  # (C, n, C): class k's rows contiguous
        for k in range(C):
            sl = slice(voff[k], voff[k + 1])
            Ck = Cflat[:, sl]
            S[sl, r:] = -(Ck.T @ Xnu[k])
            # the blocks (j <= k, k) of sum_i Cflat_i' Kinv_i Cflat_i, one small product each (faster than one
            # product per class with the weights gathered over all its columns)
            for j in range(k + 1):
                sj = slice(voff[j], voff[j + 1])
                S[sj, sl] -= (Cflat[:, sj] * Kinv[:, j, k, None]).T @ Ck
        cS, info = lapack.dpotrf(S, lower=0, clean=0, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"the KKT system's Schur complement is not positive definite (potrf {info})")
        Sinv, info = lapack.dpotri(cS, lower=0)  # its upper triangle, read by dpotrf below
        if info != 0:
            raise np.linalg.LinAlgError(f"the KKT system's Schur complement is singular (potri {info})")
        # A H^-1 A' over the equalities (F_k' mu_k - v_k, sum mu_k)
        imu = 1.0 / d_mu
        T = np.zeros((r + C, r + C))
        T[:r, :r] = Sinv[:r, :r]
        for k in range(C):
            sl, ms = slice(voff[k], voff[k + 1]), slice(g.starts[k], g.starts[k + 1])
            Fw = g.F[k] * imu[ms][:, None]
            T[sl, sl] += Fw.T @ g.F[k]
            T[sl, r + k] = Fw.sum(axis=0)
            T[r + k, r + k] = imu[ms].sum()
        cT, info = lapack.dpotrf(T, lower=0, clean=0, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"the KKT system's equality block is not positive definite (potrf {info})")
        BRt = BRf.T
        sl_x = self.sl

        def solve(bx, by, bz, dz_out=None):
            rx = bx + self.GTz(scaling.apply_inv_sq(bz))
            rmu, rv, rR = rx[sl_x["mu"]], rx[sl_x["v"]], rx[sl_x["R"]]
            rl = np.empty((n, C + 1))
            rl[:, :C] = rx[sl_x["nu"]].reshape(n, C)
            rl[:, C] = rx[sl_x["g"]]
            t = (Kinv @ rl[:, :, None])[:, :, 0]
            Ct = np.concatenate([Cflat[:, g.voff[k] : g.voff[k + 1]].T @ t[:, k] for k in range(C)])
            rgl = np.concatenate([rv - Ct, rR - BRt @ t.ravel()])
            # [diag(d_mu) + S] dx + A' dy = (rmu, rgl),  A dx = by
            umu = rmu * imu
            ug = lapack.dpotrs(cS, rgl, lower=0)[0]
            Au = np.concatenate([self._Fmu(umu) - ug[:r], np.add.reduceat(umu, g.starts[:-1])])
            dy = lapack.dpotrs(cT, Au - by, lower=0)[0]
            dmu = (rmu - self._ATy_mu(dy)) * imu
            dg = lapack.dpotrs(cS, np.concatenate([rgl[:r] + dy[:r], rgl[r:]]), lower=0)[0]
            dv, dR = dg[:r], dg[r:]
            Bd = (BRf @ dR).reshape(n, C + 1)
            for k in range(C):
                Bd[:, k] += Cflat[:, g.voff[k] : g.voff[k + 1]] @ dv[g.voff[k] : g.voff[k + 1]]
            dl_ = (Kinv @ (rl - Bd)[:, :, None])[:, :, 0]
            dx = np.concatenate([dmu, dv, dR, dl_[:, :C].ravel(), dl_[:, C]])
            dz = scaling.apply_inv_sq(self.Gx(dx) - bz)
            return dx, dy, dz

        return solve


def solve_step_ipm(
    geo: HyperbolicGeometry,
    q,
    e,
    *,
    tol_gap: float = 1e-10,
    gap_abs: float | None = None,
    tol_feas: float = 1e-8,
    max_iter: int = 100,
    start=None,
):
    """One CCP step by the interior point, with the dual point that certifies it.

    Parameters
    ----------
    geo : HyperbolicGeometry
        The class coordinates of the anchors, and the samples.
    q : ndarray of shape (m,)
        The tangent's linear term in ``mu`` (one entry per anchor).
    e : ndarray of shape (C,)
        The tangent's linear term in ``R``.
    tol_gap : float, default=1e-10
        The interior point's gap tolerance, relative (to the step's value when it exceeds 1) and absolute: the step
        stops at the first iterate within it, on the same path whatever the tolerance, and its gap is certified in
        any case (the dual point returned).  Tight by default: the step's value is a difference of large terms
        (the tangent cancels most of the loss), so a gap relative to it is coarse in units of the objective
        (measured on scikit-learn's class-weight check, weights 1000 : 1e-4: at 1e-8 the certified gaps were of the
        order of the objective itself, at 1e-10 below 1e-3 of it).  A CCP step needs its gap small against the
        largest decrease still possible from its start, ``P(start) - D``: ``rsvm-conic bench hyperbolic-step``
        prints, on 300 digits, the iterations per tolerance and that ratio (17.7 iterations at 1e-10, 13.0 at
        1e-5 with gaps at most 1.4e-2 of it, 12.0 at 1e-4 with gaps up to 0.14 of it).
    gap_abs : float or None, default=None
        An absolute gap target in units of the step's value (``gamma`` times the objective's units) instead of
        ``tol_gap``: the interior point stops at the first iterate whose gap is below it, with no relative test
        (the CCP's inexact steps, :func:`~rsvm_conic.solvers.hyperbolic_step.ipm_ccp`).
    tol_feas : float, default=1e-8
        Its feasibility tolerance.
    max_iter : int, default=100
        Its iteration limit.
    start : tuple or None, default=None
        ``(x, y, z, s)``: the primal-dual point of an earlier step on the same geometry (the constraints do not
        depend on the tangent, so ``x`` stays primal feasible), e.g. its ``result``'s; the interior point starts
        there with ``s`` and ``z`` moved ``1e-3`` along the cone's identity (None: the engine's own start).

    Returns
    -------
    mu : ndarray of shape (m,)
        The anchors' simplex weights (clipped to the simplices).
    R : ndarray of shape (C,)
        The radii (clipped at 0).
    dual : tuple
        ``(pi, U)``: the pieces' weights per sample, rows on the simplex (n, C), and the cones' dual vectors in
        feature coordinates (n, C, D), ``||U_ij|| <= s_i (1 - pi_ij) / 2``: a feasible point of the step's dual
        whose value is a lower bound on its optimum (:meth:`~rsvm_conic.solvers.hyperbolic_step.MajoriserStep.bound`
        after summing).
    result : IPMResult
        The interior point's result (status, iterations, costs).
    """
    prob = HyperbolicStepCone(geo, q, e)
    if start is not None:
        x0, y0, z0, s0 = start
        shift = 1e-3 * prob.cones.identity()
        prob.initial_point = lambda: (x0.copy(), y0.copy(), z0 + shift, s0 + shift)
    tols = (tol_gap, tol_gap) if gap_abs is None else (gap_abs, 0.0)
    res = cone_ipm(prob, tol_gap_abs=tols[0], tol_gap_rel=tols[1], tol_feas=tol_feas, max_iter=max_iter)
    n, m, C = geo.n, geo.m, geo.C
    mu = np.clip(res.x[prob.sl["mu"]], 0.0, None)
    sums = np.add.reduceat(mu, geo.starts[:-1])
    mu = mu / np.where(sums > 0, sums, 1.0)[np.repeat(np.arange(C), np.diff(geo.starts))]
    R = np.clip(res.x[prob.sl["R"]], 0.0, None)
    zh = np.clip(res.z[m + C : m + C + n * C].reshape(n, C), 0.0, None)
    tot = zh.sum(axis=1, keepdims=True)
    pi = np.where(tot > 0, zh / np.where(tot > 0, tot, 1.0), 1.0 / C)
    _, zq = prob.cones.split(res.z)
    U = np.empty((n, C, geo.D))
    for k, Zk in enumerate(zq):
        # the cone's dual x-part in feature coordinates, its pairing with O_k - phi_i preserved
        U[:, k, :] = -(Zk[:, 1:-1] @ geo.bases[k] - Zk[:, -1:] * geo.offdir[k])
    cap = 0.5 * geo.weights[:, None] * (1.0 - pi)
    norms = np.linalg.norm(U, axis=2)
    U *= np.where(norms > cap, cap / np.maximum(norms, 1e-300), 1.0)[:, :, None]
    return mu, R, (pi, U), res
