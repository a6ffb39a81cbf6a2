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
anchors, ``R >= 0``, the ``C`` pieces of every sample) and one batch of ``C n`` cones ``(nu_ik, v_k - z_ik, 0, ...,
0, p_ik)`` of dimension ``rmax + 2`` (``rmax = max_k r_k``; class-major), so that each of the engine's cone passes is
one compiled call; equalities ``F_k' mu_k = v_k`` and ``sum mu_k = 1``.  The padding is exact: its rows of ``G`` and
``h`` are zero, so the start point has zeros there, the Nesterov-Todd point of a pair with zero padding has zero
padding, and every Newton step keeps it zero (its rows decouple: the scaling acts on them as ``beta I``); the
iterates are those of the unpadded cones (the sums in the cone kernels only gain exact zeros).  The padding costs
the engine's passes ``(rmax + 2) / (mean_k r_k + 2)`` times the unpadded work: nothing where every class spans
``D`` dimensions or has as many anchors (the k-means anchors), more with classes of fewer points than ``D``.

KKT solve in closed form.  Each sample's ``(nu_i, g_i)`` meets only its own ``C`` pieces and cones, so the Newton
system ``(P + G' W^-2 G) dx + A' dy = r`` eliminates them with one ``(C + 1)``-square block ``K_i`` per sample,
inverted in closed form (:func:`_local_inverses`: eliminating ``g_i`` leaves a diagonal minus a rank-one matrix, so
the ``(nu_i, nu_i)`` block of ``K_i^-1`` is ``diag(1 / delta_i) + rho_i rho_i' / sig_i``, every entry a sum of terms
of one sign).  That leaves a dense Schur complement ``S`` over ``(v, R)`` (size ``r + C``, ``r = sum_k r_k <= min(m,
C D)``), whose ``(v, v)`` part is the rank-one terms of all samples in one symmetric product (``n r^2`` flops, BLAS
``syrk``) plus each class's diagonal block, the classes in one batched product (``n r^2 / C`` flops); ``mu`` is
diagonal (its orthant), and the equalities leave one dense ``(r + C)``-square system ``A H^-1 A' = F' diag(1/d_mu)
F + (S^-1)_vv`` (``S^-1`` from ``S``'s Cholesky factor, LAPACK ``potri``; each class's ``F_k' diag(1/d_mu) F_k`` in
one batched product).  A factorisation is thus ``potrf + potri + potrf`` of size ``r + C`` and the ``syrk``, plus
``O(n C (rmax + C))`` vectorised work; each solve is two triangular pairs with ``S``'s factor and one with the
equalities' factor, the rest ``O(n C rmax)``.  (Eliminating the equalities' multipliers instead, ``S +
(M^-1)_vv``, saves ``potri`` and a ``potrf`` but adds ``M^-1``, which grows like the inverse of the inactive
anchors' weights: the solves lose their digits in the last iterations and the 300-digits step ends at
``numerical_error``.)  ``rsvm-conic bench hyperbolic-step`` prints the time per iteration beside these dense
calls timed alone at the same sizes (the floor).  No array of shape ``(n, n)`` beyond these.  The class geometry
(:class:`HyperbolicGeometry`) is computed once per fit and reused by every step and start; only ``q`` and ``e``
change.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from .engine import ConeSpec, cone_ipm

__all__ = ["HyperbolicGeometry", "HyperbolicStepCone", "solve_step_ipm"]


def _local_inverses(d_h, a_nu, offones):
    """The inverses of every sample's local block ``K_i`` over ``(nu_i, g_i)``, in closed form.

    ``K_i`` is the pieces' Gram matrix ``sum_l d_il g_l g_l'`` (``g_l``: piece ``l``'s row ``((1 - e_l) / 2, -1)``)
    plus the cones' diagonal ``a_i`` on ``nu_i``.  Eliminating ``g_i`` leaves ``diag(delta_i) - d_i d_i' / (4 D_i)``
    (``delta_i = a_i + d_i / 4``, ``D_i = sum_l d_il``), whose inverse is ``diag(1 / delta_i) + rho_i rho_i' / sig_i``
    (``rho_i = d_i / delta_i``, ``sig_i = 4 rho_i' a_i``); the ``(nu_i, g_i)`` column of ``K_i^-1`` is that inverse
    times ``e_i / (2 D_i)`` (``e_il = sum_{j != l} d_ij``) and its ``(g_i, g_i)`` entry ``(1 + e_i' kg_i / 2) / D_i``.
    Every sum has terms of one sign: no cancellation when ``d_i`` spans many orders of magnitude.

    Parameters
    ----------
    d_h : ndarray of shape (n, C)
        The pieces' weights (positive).
    a_nu : ndarray of shape (n, C)
        The cones' diagonal on ``nu`` (positive).
    offones : ndarray of shape (C, C)
        ``1 - I``.

    Returns
    -------
    Kinv : ndarray of shape (n, C + 1, C + 1)
        The inverses.
    rho, sig : ndarray of shapes (n, C) and (n,)
        The rank-one part ``rho_i rho_i' / sig_i`` of their ``(nu, nu)`` blocks.
    delta : ndarray of shape (n, C)
        The rest of those blocks is ``diag(1 / delta_i)``.
    """
    n, C = d_h.shape
    delta = a_nu + 0.25 * d_h
    rho = d_h / delta
    sig = 4.0 * np.sum(rho * a_nu, axis=1)
    dsum = d_h.sum(axis=1)
    dex = d_h @ offones  # the other pieces' sum
    kg = (rho * (np.sum(rho * dex, axis=1) / sig)[:, None] + dex / delta) / (2.0 * dsum)[:, None]
    diag = np.arange(C)
    Kinv = np.empty((n, C + 1, C + 1))
    Kinv[:, :C, :C] = rho[:, :, None] * (rho / sig[:, None])[:, None, :]
    Kinv[:, diag, diag] += 1.0 / delta
    Kinv[:, :C, C] = kg
    Kinv[:, C, :C] = kg
    Kinv[:, C, C] = (1.0 + 0.5 * np.sum(dex * kg, axis=1)) / dsum
    return Kinv, rho, sig, delta


class HyperbolicGeometry:
    """The step's data that do not depend on the tangent: each class's coordinates (module docstring), and the index
    arrays of the padded layouts the products and the KKT solve work in.

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
        self._padded_layouts()

    def _padded_layouts(self):
        """Every class's coordinates padded to the largest ``r_k`` (``rmax``), so that a product over the classes is
        one batched call, and the index arrays between the stacked and the padded coordinates."""
        n, m, C, r = self.n, self.m, self.C, int(self.r.sum())
        self.rmax = rmax = int(self.r.max())
        self.dim = d = rmax + 2  # one batch of C n cones (nu_ik, v_k - z_ik, 0 ..., p_ik), class-major
        pos = np.arange(r) - self.voff[self.colcls]  # each v coordinate's place in its class
        self.vcols = self.colcls * d + 1 + pos  # v in a sample's C cones
        self.vpad = self.colcls * rmax + pos  # v in the classes' padded coordinates (C, rmax)
        H = np.zeros((C, n, d))  # the cones' rows of h
        self.Fbig = np.zeros((m, r))  # F_k block-diagonal: (F_k' mu_k)_k = Fbig' mu
        self.anchor_class = np.repeat(np.arange(C), np.diff(self.starts))
        mk = np.diff(self.starts)
        self.mmax = mmax = int(mk.max())
        self.apad = self.anchor_class * mmax + np.arange(m) - self.starts[self.anchor_class]
        Fe = np.zeros((C * mmax, rmax + 1))  # the equalities' rows (F_k, 0 ..., 1) per class, padded
        for k in range(C):
            rk, rows = int(self.r[k]), slice(self.starts[k], self.starts[k + 1])
            H[k, :, 1 : rk + 1] = -self.Z[k]
            H[k, :, -1] = self.P[k]
            self.Fbig[rows, self.voff[k] : self.voff[k + 1]] = self.F[k]
            Fe[self.apad[rows], :rk] = self.F[k]
        Fe[self.apad, rmax] = 1.0
        self.h_cones = H.ravel()
        self.Fe = Fe.reshape(C, mmax, rmax + 1)
        # each class's (v_k, v_k) block: its place in the (r + C)-square Schur complement and in a padded batch
        # of (rmax, rmax) or (rmax + 1, rmax + 1) blocks
        a, b = np.meshgrid(np.arange(r), np.arange(r), indexing="ij")
        same = self.colcls[a] == self.colcls[b]
        a, b = a[same], b[same]
        k, pa, pb = self.colcls[a], pos[a], pos[b]
        self.bd_dst = a * (r + C) + b
        self.bd_src = (k * rmax + pa) * rmax + pb
        self.bde_src = (k * (rmax + 1) + pa) * (rmax + 1) + pb
        self.offones = 1.0 - np.eye(C)
        self.notY = 1.0 - self.Y
        # the equalities' block of class k (M_k, padded to (rmax + 1)-square): its place in the (r + C)-square
        # system (the (v_k, v_k) block, the (v_k, sum mu_k) column and the (sum mu_k, sum mu_k) entry; upper
        # triangle) and in the batch
        ke = np.arange(C)
        self.eq_dst = np.concatenate(
            [self.bd_dst, np.arange(r) * (r + C) + r + self.colcls, (r + ke) * (r + C) + r + ke]
        )
        self.eq_src = np.concatenate(
            [
                self.bde_src,
                (self.colcls * (rmax + 1) + pos) * (rmax + 1) + rmax,
                (ke * (rmax + 1) + rmax) * (rmax + 1) + rmax,
            ]
        )
        # the entries (i, l, y_i) of the locals x R block (n, C + 1, C)
        self.br_y = ((np.arange(n)[:, None] * (C + 1) + np.arange(C + 1)[None, :]) * C + self.codes[:, None]).ravel()


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
        self.cones = ConeSpec(m + C + n * C, [(C * n, g.dim)])
        self.q = np.zeros(self.N)
        self.q[self.sl["mu"]] = -q
        self.q[self.sl["R"]] = -e
        self.q[self.sl["g"]] = g.weights
        h_l = np.zeros(m + C + n * C)
        h_l[m + C :] = (-g.gamma * (1.0 - g.Y)).ravel()
        self.h = np.concatenate([h_l, g.h_cones])
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

    def _cones(self, v):
        """The cones' rows of a cone vector, (C, n, dim)."""
        g = self.geo
        return v[self.cones.n_l :].reshape(g.C, g.n, g.dim)

    def Px(self, x):
        out = np.zeros_like(x)
        out[self.sl["R"]] = 2.0 * self.geo.gamma * self.geo.lam * x[self.sl["R"]]
        return out

    def Gx(self, x):
        g = self.geo
        mu, v, R, nu, gi = self._split(x)
        lin = 0.5 * (nu.sum(axis=1, keepdims=True) - nu + g.notY * (R[None, :] - R[g.codes][:, None])) - gi[:, None]
        out = np.empty(self.cones.size)
        m, C = g.m, g.C
        out[:m] = -mu
        out[m : m + C] = -R
        out[m + C : self.cones.n_l] = lin.ravel()
        vrow = np.zeros(C * g.dim)
        vrow[g.vcols] = -v
        cq = self._cones(out)
        cq[:] = vrow.reshape(C, 1, g.dim)
        cq[:, :, 0] = -nu.T
        return out

    def GTz(self, z):
        g = self.geo
        n, m, C = g.n, g.m, g.C
        out = np.empty(self.N)
        out[self.sl["mu"]] = -z[:m]
        zh = z[m + C : m + C + n * C].reshape(n, C)
        zo = zh * g.notY
        out[self.sl["R"]] = 0.5 * (zo.sum(axis=0) - np.bincount(g.codes, zo.sum(axis=1), C)) - z[m : m + C]
        zq = self._cones(z)
        nu = 0.5 * (zh.sum(axis=1, keepdims=True) - zh) - zq[:, :, 0].T
        out[self.sl["g"]] = -zh.sum(axis=1)
        out[self.sl["v"]] = -zq.sum(axis=1).ravel()[g.vcols]
        out[self.sl["nu"]] = nu.ravel()
        return out

    def _Ay_mu(self, mu):
        """The equalities' rows on ``mu``: ``((F_k' mu_k)_k, (sum mu_k)_k)``, stacked (r + C,)."""
        return np.concatenate([self.geo.Fbig.T @ mu, np.add.reduceat(mu, self.geo.starts[:-1])])

    def Ax(self, x):
        out = self._Ay_mu(x[self.sl["mu"]])
        out[: self.nr] -= x[self.sl["v"]]
        return out

    def _ATy_mu(self, y):
        g = self.geo
        return g.Fbig @ y[: self.nr] + y[self.nr :][g.anchor_class]

    def ATy(self, y):
        out = np.zeros(self.N)
        out[self.sl["mu"]] = self._ATy_mu(y)
        out[self.sl["v"]] = -y[: self.nr]
        return out

    # -- the reduced KKT solve ---------------------------------------------------------------------------
    def kkt_factor(self, scaling):
        g = self.geo
        n, m, C, r, rmax = g.n, g.m, g.C, self.nr, g.rmax
        dl = scaling.d_l
        d_mu, d_R, d_h = dl[:m], dl[m : m + C], dl[m + C :].reshape(n, C)
        wb = scaling.wbar[0]
        W = wb.reshape(C, n, g.dim)
        ib2 = 1.0 / scaling.beta[0].reshape(C, n) ** 2
        w0 = W[:, :, 0]
        cw = -2.0 * ib2 * w0  # the cones' nu_ik - v_k coupling is cw_ik wv_ik
        a_nu = (ib2 * (2.0 * w0 * w0 - 1.0)).T  # the cones' diagonal on nu_ik, (n, C)
        Cp = W[:, :, 1 : rmax + 1] * cw[:, :, None]  # (C, n, rmax), zero on the padding
        Kinv, rho, sig, delta = _local_inverses(d_h, a_nu, g.offones)  # the samples' local blocks (nu_i, g_i)
        S = np.empty((r + C, r + C))  # the Schur complement over (v, R); upper triangle read
        # (v, v): the local inverses' rank-one parts in one product over all classes (n r^2 flops), each class's
        # cone blocks with the local inverses' diagonal parts in one batched product
        Cf = (Cp * (rho / np.sqrt(sig)[:, None]).T[:, :, None]).transpose(1, 0, 2).reshape(n, C * rmax)
        if r < C * rmax:
            Cf = Cf[:, g.vpad]
        np.negative(Cf.T @ Cf, out=S[:r, :r])
        # 2 ib2 - 4 ib2^2 w0^2 / delta without its cancellation, over cw^2 (wv's coefficient, on Cp's rows)
        gam = 2.0 * ib2 * (0.25 * d_h.T - ib2) / (delta.T * cw * cw)
        B = np.matmul((Cp * gam[:, :, None]).transpose(0, 2, 1), Cp)
        rd = np.arange(rmax)
        B[:, rd, rd] += ib2.sum(axis=1)[:, None]
        S.ravel()[g.bd_dst] += B.ravel()[g.bd_src]
        # the locals x R block: the pieces' rows times their R rows [l != y_i] (e_l - e_{y_i}) / 2
        dh_off = d_h * g.notY
        diag = np.arange(C)
        BR = np.empty((n, C + 1, C))
        BR[:, :C, :] = 0.25 * dh_off[:, None, :]
        BR[:, diag, diag] = 0.0
        BR[:, C, :] = -0.5 * dh_off
        ycol = np.empty((n, C + 1))
        ycol[:, :C] = -0.25 * (dh_off @ g.offones)
        ycol[:, C] = 0.5 * dh_off.sum(axis=1)
        BR.ravel()[g.br_y] = ycol.ravel()
        X = Kinv @ BR
        BRf, Xf = BR.reshape(n * (C + 1), C), X.reshape(n * (C + 1), C)
        # the pieces' (R, R) block sum_il d_il GR_il GR_il': [l != y_i] (e_l - e_{y_i}) / 2 summed by class pairs
        DY = g.Y.T @ dh_off
        SRR = 0.25 * (np.diag(dh_off.sum(axis=0) + DY.sum(axis=1)) - DY - DY.T) - BRf.T @ Xf
        SRR[diag, diag] += d_R + 2.0 * g.gamma * g.lam
        S[r:, r:] = SRR
        Xnu = np.ascontiguousarray(X[:, :C, :].transpose(1, 0, 2))  # (C, n, C)
        S[:r, r:] = -np.matmul(Cp.transpose(0, 2, 1), Xnu).reshape(C * rmax, C)[g.vpad]
        # S.T is Fortran-ordered and its lower triangle is S's upper one: LAPACK works in place
        cS, info = lapack.dpotrf(S.T, lower=1, clean=0, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"the KKT system's Schur complement is not positive definite (potrf {info})")
        Sinv, info = lapack.dpotri(cS, lower=1)  # its lower triangle
        if info != 0:
            raise np.linalg.LinAlgError(f"the KKT system's Schur complement is singular (potri {info})")
        # A H^-1 A' over the equalities (F_k' mu_k - v_k, sum mu_k): (S^-1)_vv plus each class's block
        # M_k = [F_k 1]' diag(1 / d_mu) [F_k 1], one batched product
        imu = 1.0 / d_mu
        ip = np.zeros(C * g.mmax)
        ip[g.apad] = imu
        M = np.matmul((g.Fe * ip.reshape(C, g.mmax, 1)).transpose(0, 2, 1), g.Fe)
        T = np.zeros((r + C, r + C))
        T[:r, :r] = Sinv.T[:r, :r]
        T.ravel()[g.eq_dst] += M.ravel()[g.eq_src]
        cT, info = lapack.dpotrf(T.T, lower=1, clean=0, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"the KKT system's equality block is not positive definite (potrf {info})")
        BRt = BRf.T
        CpT = Cp.transpose(0, 2, 1)
        sl_x = self.sl

        def solve(bx, by, bz, dz_out=None):
            rx = bx + self.GTz(scaling.apply_inv_sq(bz))
            rmu, rv, rR = rx[sl_x["mu"]], rx[sl_x["v"]], rx[sl_x["R"]]
            rl = np.empty((n, C + 1, 1))
            rl[:, :C, 0] = rx[sl_x["nu"]].reshape(n, C)
            rl[:, C, 0] = rx[sl_x["g"]]
            t = (Kinv @ rl)[:, :, 0]
            Ct = np.matmul(CpT, t[:, :C].T[:, :, None]).ravel()[g.vpad]
            rgl = np.concatenate([rv - Ct, rR - BRt @ t.ravel()])
            # [diag(d_mu) + S] dx + A' dy = (rmu, rgl),  A dx = by
            umu = rmu * imu
            Au = self._Ay_mu(umu)
            Au[:r] -= lapack.dpotrs(cS, rgl, lower=1)[0][:r]
            dy = lapack.dpotrs(cT, Au - by, lower=1)[0]
            dmu = (rmu - self._ATy_mu(dy)) * imu
            rgl[:r] += dy[:r]
            dg = lapack.dpotrs(cS, rgl, lower=1)[0]
            dv, dR = dg[:r], dg[r:]
            vp = np.zeros(C * rmax)
            vp[g.vpad] = dv
            Bd = (BRf @ dR).reshape(n, C + 1, 1)
            Bd[:, :C, 0] += np.matmul(Cp, vp.reshape(C, rmax, 1))[:, :, 0].T
            dl_ = (Kinv @ (rl - Bd))[:, :, 0]
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
    zq = prob._cones(res.z)
    U = np.empty((n, C, geo.D))
    for k in range(C):
        # the cone's dual x-part in feature coordinates, its pairing with O_k - phi_i preserved
        U[:, k, :] = -(zq[k, :, 1 : int(geo.r[k]) + 1] @ geo.bases[k] - zq[k, :, -1:] * geo.offdir[k])
    cap = 0.5 * geo.weights[:, None] * (1.0 - pi)
    norms = np.linalg.norm(U, axis=2)
    U *= np.where(norms > cap, cap / np.maximum(norms, 1e-300), 1.0)[:, :, None]
    return mu, R, (pi, U), res
