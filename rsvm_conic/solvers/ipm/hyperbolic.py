"""Structured interior point for one convex step of the hyperbolic machine's CCP [ElD19, chapter 3].

The step (the CCP majoriser scaled by ``gamma``, the tangent's constants dropped; the same problem as the
formulation's CVXPY model and :class:`~rsvm_conic.solvers.hyperbolic_step.MajoriserStep`)::

    minimise    gamma lam ||R||^2 + sum_i s_i g_i - q . mu - e . R
    subject to  g_i >= (sum_j nu_ij - nu_il) / 2 + [l != y_i] (gamma + (R_l - R_{y_i}) / 2)   (every i, l),
                ||O_k - phi_i|| <= nu_ik,   O_k = sum_{a in k} mu_a phi_a,   mu_k in the simplex,   R >= 0.

Each cone is written in its class's coordinates (as the formulation's model): with ``c_k`` the mean of the class
points, ``B_k`` (r_k x D) an orthonormal basis of their span around it, ``F_k = (A_k - c_k) B_k'`` and
``v_k = F_k' mu_k``, ``||O_k - phi_i||^2 = ||v_k - z_ik||^2 + p_ik^2`` with ``z_ik = B_k (phi_i - c_k)`` and
``p_ik`` the distance of ``phi_i - c_k`` to the span.  The cone form of :mod:`.engine` has
``x = (mu, v, R, nu, g)``: an orthant of ``n + C + n C`` rows (``mu >= 0``, ``R >= 0``, the ``C`` pieces of every
sample) and one batch of ``n`` cones ``(nu_ik, v_k - z_ik, p_ik)`` per class; equalities ``F_k' mu_k = v_k`` and
``sum mu_k = 1``.

KKT solve in closed form.  Each sample's ``(nu_i, g_i)`` meets only its own ``C`` pieces and cones, so the Newton
system ``(P + G' W^-2 G) dx + A' dy = r`` eliminates them with one ``(C + 1)``-square block per sample (a batched
inverse), leaving a dense Schur complement ``S`` over ``(v, R)`` (size ``r + C``, ``r = sum_k r_k <= min(n, C D)``:
``n r^2`` flops per factorisation); ``mu`` is diagonal (its orthant), and the equalities leave one dense
``(r + C)``-square system ``A H^-1 A'``.  No array of shape ``(n, n)`` beyond these.  The class geometry
(:class:`HyperbolicGeometry`) is computed once per fit and reused by every step and start; only ``q`` and ``e``
change.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from .engine import ConeSpec, cone_ipm

__all__ = ["HyperbolicGeometry", "HyperbolicStepCone", "solve_step_ipm"]


class HyperbolicGeometry:
    """The step's data that do not depend on the tangent: each class's coordinates (module docstring).

    Parameters
    ----------
    Phi : ndarray of shape (n, D)
        Feature vectors (trusted), the samples sorted by class (``codes`` non-decreasing).
    codes : ndarray of shape (n,)
        Class codes ``0..C-1``, non-decreasing, every class non-empty.
    weights : ndarray of shape (n,)
        The sample weights ``s_i`` (positive).
    gamma, lam : float
        The machine's margin parameter and the weight of ``||R||^2``.
    """

    def __init__(self, Phi, codes, weights, gamma: float, lam: float):
        n, D = Phi.shape
        self.n, self.C = n, int(codes.max()) + 1
        self.codes, self.weights, self.gamma, self.lam = codes, np.asarray(weights, float), float(gamma), float(lam)
        self.starts = np.searchsorted(codes, np.arange(self.C + 1))
        self.F, self.Z, self.P, self.bases, self.offdir = [], [], [], [], []
        for k in range(self.C):
            Ak = Phi[self.starts[k] : self.starts[k + 1]]
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
        # the pieces' local rows: nu_ij has 1/2 (1 - [j = l]), g_i has -1
        C = self.C
        self.Gloc = np.hstack([0.5 * (1.0 - np.eye(C)), -np.ones((C, 1))])
        # the pieces' R rows: [l != y_i] (e_l - e_{y_i}) / 2, shape (n, C pieces, C radii)
        off = 1.0 - Y
        self.GR = 0.5 * (off[:, :, None] * (np.eye(C)[None, :, :] - Y[:, None, :]))


class HyperbolicStepCone:
    """One CCP step as a cone QP for :func:`~.engine.cone_ipm`, with the reduced KKT solve of the module docstring.

    Parameters
    ----------
    geo : HyperbolicGeometry
        The class coordinates, shared by all steps.
    q : ndarray of shape (n,)
        The tangent's linear term in ``mu``.
    e : ndarray of shape (C,)
        The tangent's linear term in ``R``.
    """

    def __init__(self, geo: HyperbolicGeometry, q, e):
        self.geo = g = geo
        n, C, r = g.n, g.C, int(g.r.sum())
        self.sl = {
            "mu": slice(0, n),
            "v": slice(n, n + r),
            "R": slice(n + r, n + r + C),
            "nu": slice(n + r + C, n + r + C + n * C),
            "g": slice(n + r + C + n * C, 2 * n + r + C + n * C),
        }
        self.N = 2 * n + r + C + n * C
        self.nr = r
        self.cones = ConeSpec(n + C + n * C, [(n, int(rk) + 2) for rk in g.r])
        self.q = np.zeros(self.N)
        self.q[self.sl["mu"]] = -q
        self.q[self.sl["R"]] = -e
        self.q[self.sl["g"]] = g.weights
        h_l = np.zeros(n + C + n * C)
        h_l[n + C :] = (-g.gamma * (1.0 - g.Y)).ravel()
        parts = [h_l]
        for k in range(C):
            H = np.zeros((n, int(g.r[k]) + 2))
            H[:, 1:-1] = -g.Z[k]
            H[:, -1] = g.P[k]
            parts.append(H.ravel())
        self.h = np.concatenate(parts)
        self.b = np.concatenate([np.zeros(r), np.ones(C)])

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
        lin = 0.5 * (nu.sum(axis=1, keepdims=True) - nu) + np.einsum("ilm,m->il", g.GR, R) - gi[:, None]
        parts = [-mu, -R, lin.ravel()]
        for k in range(g.C):
            blk = np.zeros((g.n, int(g.r[k]) + 2))
            blk[:, 0] = -nu[:, k]
            blk[:, 1:-1] = -v[g.voff[k] : g.voff[k + 1]][None, :]
            parts.append(blk.ravel())
        return np.concatenate(parts)

    def GTz(self, z):
        g = self.geo
        n, C = g.n, g.C
        out = np.zeros(self.N)
        out[self.sl["mu"]] = -z[:n]
        zh = z[n + C : n + C + n * C].reshape(n, C)
        out[self.sl["R"]] = -z[n : n + C] + np.einsum("il,ilm->m", zh, g.GR)
        nu = 0.5 * (zh.sum(axis=1, keepdims=True) - zh)
        out[self.sl["g"]] = -zh.sum(axis=1)
        _, zq = self.cones.split(z)
        v = out[self.sl["v"]]
        for k, Zk in enumerate(zq):
            nu[:, k] -= Zk[:, 0]
            v[g.voff[k] : g.voff[k + 1]] = -Zk[:, 1:-1].sum(axis=0)
        out[self.sl["nu"]] = nu.ravel()
        return out

    def Ax(self, x):
        g = self.geo
        mu, v = x[self.sl["mu"]], x[self.sl["v"]]
        top = np.concatenate([g.F[k].T @ mu[g.starts[k] : g.starts[k + 1]] for k in range(g.C)]) - v
        return np.concatenate([top, np.add.reduceat(mu, g.starts[:-1])])

    def ATy(self, y):
        g = self.geo
        out = np.zeros(self.N)
        yv, ys = y[: self.nr], y[self.nr :]
        out[self.sl["mu"]] = np.concatenate([g.F[k] @ yv[g.voff[k] : g.voff[k + 1]] + ys[k] for k in range(g.C)])
        out[self.sl["v"]] = -yv
        return out

    # -- the reduced KKT solve ---------------------------------------------------------------------------
    def kkt_factor(self, scaling):
        g = self.geo
        n, C, r = g.n, g.C, self.nr
        dl = scaling.d_l
        d_mu, d_R, d_h = dl[:n], dl[n : n + C], dl[n + C :].reshape(n, C)
        a_nu = np.empty((n, C))  # the cones' diagonal on nu_ik
        Cflat = np.empty((n, r))  # the cones' nu_ik - v_k coupling, in v_k's coordinates
        Svv = np.zeros((r, r))
        for k in range(C):
            wb, bt = scaling.wbar[k], scaling.beta[k]
            ib2 = 1.0 / bt**2
            w0, wv = wb[:, 0], wb[:, 1:-1]
            a_nu[:, k] = ib2 * (2.0 * w0 * w0 - 1.0)
            sl = slice(g.voff[k], g.voff[k + 1])
            Cflat[:, sl] = (-2.0 * ib2 * w0)[:, None] * wv
            Wv = wv * np.sqrt(2.0 * ib2)[:, None]
            Svv[sl, sl] = Wv.T @ Wv + ib2.sum() * np.eye(int(g.r[k]))
        # the local blocks (nu_i, g_i): the pieces' Gram matrix plus the cones' diagonal
        K = np.einsum("lj,il,lk->ijk", g.Gloc, d_h, g.Gloc)
        K[:, np.arange(C), np.arange(C)] += a_nu
        BR = np.einsum("lj,il,ilm->ijm", g.Gloc, d_h, g.GR)  # (n, C + 1, C): locals x R
        Kinv = np.linalg.inv(K)
        X = Kinv @ BR
        S = np.zeros((r + C, r + C))
        S[:r, :r] = Svv
        SRR = np.einsum("ilm,il,ilp->mp", g.GR, d_h, g.GR)
        SRR[np.diag_indices(C)] += d_R + 2.0 * g.gamma * g.lam
        S[r:, r:] = SRR - np.einsum("ijm,ijl->ml", BR, X)
        for k in range(C):
            sl = slice(g.voff[k], g.voff[k + 1])
            M = Cflat * Kinv[:, g.colcls, k]
            S[:r, sl] -= M.T @ Cflat[:, sl]
            S[sl, r:] -= Cflat[:, sl].T @ X[:, k, :]
        S[r:, :r] = S[:r, r:].T
        S = 0.5 * (S + S.T)
        cS = sla.cho_factor(S, check_finite=False)
        Sinv_v = sla.cho_solve(cS, np.eye(r + C)[:, :r], check_finite=False)[:r]  # (S^-1)_vv
        # A H^-1 A' over the equalities (F_k' mu_k - v_k, sum mu_k)
        imu = 1.0 / d_mu
        T = np.zeros((r + C, r + C))
        T[:r, :r] = Sinv_v
        for k in range(C):
            sl, ms = slice(g.voff[k], g.voff[k + 1]), slice(g.starts[k], g.starts[k + 1])
            Fw = g.F[k] * imu[ms][:, None]
            T[sl, sl] += Fw.T @ g.F[k]
            T[sl, r + k] = Fw.sum(axis=0)
            T[r + k, sl] = T[sl, r + k]
            T[r + k, r + k] = imu[ms].sum()
        cT = sla.cho_factor(T, check_finite=False)

        def solve(bx, by, bz, dz_out=None):
            rx = bx + self.GTz(scaling.apply_inv_sq(bz))
            rmu, rv, rR, rnu, rg = self._split(rx)
            rl = np.concatenate([rnu, rg[:, None]], axis=1)
            t = np.einsum("ijk,ik->ij", Kinv, rl)
            rg_v = rv.copy()
            for k in range(C):
                rg_v[g.voff[k] : g.voff[k + 1]] -= Cflat[:, g.voff[k] : g.voff[k + 1]].T @ t[:, k]
            rgl = np.concatenate([rg_v, rR - np.einsum("ijm,ij->m", BR, t)])
            # [diag(d_mu) + S] dx + A' dy = (rmu, rgl),  A dx = by
            umu = rmu * imu
            ug = sla.cho_solve(cS, rgl, check_finite=False)
            Au = np.concatenate(
                [
                    np.concatenate([g.F[k].T @ umu[g.starts[k] : g.starts[k + 1]] for k in range(C)]) - ug[:r],
                    np.add.reduceat(umu, g.starts[:-1]),
                ]
            )
            dy = sla.cho_solve(cT, Au - by, check_finite=False)
            ATy = self.ATy(dy)
            dmu = (rmu - ATy[self.sl["mu"]]) * imu
            corr = np.zeros(r + C)
            corr[:r] = ATy[self.sl["v"]]
            dg = sla.cho_solve(cS, rgl - corr, check_finite=False)
            dv, dR = dg[:r], dg[r:]
            Bd = np.einsum("ijm,m->ij", BR, dR)
            for k in range(C):
                Bd[:, k] += Cflat[:, g.voff[k] : g.voff[k + 1]] @ dv[g.voff[k] : g.voff[k + 1]]
            dl_ = np.einsum("ijk,ik->ij", Kinv, rl - Bd)
            dx = np.concatenate([dmu, dv, dR, dl_[:, :C].ravel(), dl_[:, C]])
            dz = scaling.apply_inv_sq(self.Gx(dx) - bz)
            return dx, dy, dz

        return solve


def solve_step_ipm(
    geo: HyperbolicGeometry, q, e, *, tol_gap: float = 1e-10, tol_feas: float = 1e-8, max_iter: int = 100
):
    """One CCP step by the interior point, with the dual point that certifies it.

    Parameters
    ----------
    geo : HyperbolicGeometry
        The class coordinates (samples sorted by class).
    q : ndarray of shape (n,)
        The tangent's linear term in ``mu``.
    e : ndarray of shape (C,)
        The tangent's linear term in ``R``.
    tol_gap : float, default=1e-10
        The interior point's gap tolerances (relative and absolute).  Tight: the step's value is a difference of
        large terms (the tangent cancels most of the loss), so a gap relative to it is coarse in units of the
        objective (measured on scikit-learn's class-weight check, weights 1000 : 1e-4: at 1e-8 the certified gaps
        were of the order of the objective itself, at 1e-10 below 1e-3 of it).
    tol_feas : float, default=1e-8
        Its feasibility tolerance.
    max_iter : int, default=100
        Its iteration limit.

    Returns
    -------
    mu : ndarray of shape (n,)
        The simplex weights (clipped to the simplices).
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
    res = cone_ipm(prob, tol_gap_abs=tol_gap, tol_gap_rel=tol_gap, tol_feas=tol_feas, max_iter=max_iter)
    n, C = geo.n, geo.C
    mu = np.clip(res.x[prob.sl["mu"]], 0.0, None)
    sums = np.add.reduceat(mu, geo.starts[:-1])
    mu = mu / np.where(sums > 0, sums, 1.0)[np.repeat(np.arange(C), np.diff(geo.starts))]
    R = np.clip(res.x[prob.sl["R"]], 0.0, None)
    zh = np.clip(res.z[n + C : n + C + n * C].reshape(n, C), 0.0, None)
    tot = zh.sum(axis=1, keepdims=True)
    pi = np.where(tot > 0, zh / np.where(tot > 0, tot, 1.0), 1.0 / C)
    _, zq = prob.cones.split(res.z)
    D = geo.bases[0].shape[1] if geo.bases[0].size else geo.offdir[0].shape[1]
    U = np.empty((n, C, D))
    for k, Zk in enumerate(zq):
        # the cone's dual x-part in feature coordinates, its pairing with O_k - phi_i preserved
        U[:, k, :] = -(Zk[:, 1:-1] @ geo.bases[k] - Zk[:, -1:] * geo.offdir[k])
    cap = 0.5 * geo.weights[:, None] * (1.0 - pi)
    norms = np.linalg.norm(U, axis=2)
    U *= np.where(norms > cap, cap / np.maximum(norms, 1e-300), 1.0)[:, :, None]
    return mu, R, (pi, U), res
