"""Structure-aware robust hinge for formulation (10) on random Fourier features.

For RFF with interleaved cos/sin pairs the feature-space set of sample i is
``{dphi : ||R_i dphi||_pbar <= Gamma_i}`` with ``R_i = diag(P_ij')`` block-diagonal of 2x2
rotations (Prop. 4.1).  Its worst case is (dphi = R_i' v, R_i orthogonal)

    min_{dphi} y <zeta, dphi> = -Gamma_i max_{||v||_pbar <= 1} <R_i zeta, v> = -Gamma_i ||R_i zeta||_qbar,

so the robust loss is ``max{0, 1 - y_i(<zeta, phi_i> + b) + Gamma_i ||R_i zeta||_qbar}``.  (Eq. (10)
of file 000 prints ``||R_i' zeta||``; in general the term is ``||R_i^{-T} zeta||``, which is
``R_i zeta`` for rotations and ``Lambda^{-1/2} zeta`` for the Nystroem ``R = Lambda^{1/2}``; the
two readings differ for qbar != 2 -- see tests/test_feature_robust.py.)

``R_i zeta`` costs O(D) per sample from the (cos, sin) of the angles, so the data fit never
forms the L x D x D factors.  It exposes the interface the stochastic solvers use
(``n_samples``, ``X``, ``y``, ``value``, ``subgradient``) plus ``restrict(idx)``; because
``stochastic._calibrate`` rebuilds a plain :class:`RobustHinge` from ``datafit.unc``, callers pass
a numeric ``eta0`` from :func:`calibrate_eta0` instead of ``eta0="auto"``.
"""

from __future__ import annotations

import numpy as np

from ..uncertainty.sets import dual_norm_subgradient, dual_norm_values
from .datafits import RobustHinge
from .penalties import L2Squared


def rotate(C, S, zeta):
    """``R_i zeta`` for every row (C, S of shape (m, D/2)): shape (m, D)."""
    zc, zs = zeta[0::2], zeta[1::2]
    out = np.empty((C.shape[0], 2 * C.shape[1]))
    out[:, 0::2] = C * zc + S * zs
    out[:, 1::2] = -S * zc + C * zs
    return out


def rotate_transpose(C, S, G):
    """``R_i' g_i`` for every row of G (m, D): shape (m, D)."""
    gc, gs = G[:, 0::2], G[:, 1::2]
    out = np.empty_like(G)
    out[:, 0::2] = C * gc - S * gs
    out[:, 1::2] = S * gc + C * gs
    return out


class RotatedRobustHinge(RobustHinge):
    """Robust hinge with per-sample rotation blocks: ``max{0, 1 - y(<z, phi> + b) + gamma_i ||R_i z||_q}``.

    Only the robust term differs from :class:`~rsvm_conic.solvers.datafits.RobustHinge` (``unc`` is
    None: ``stochastic._calibrate`` must not rebuild a plain hinge from it).
    """

    def __init__(self, X, y, cos, sin, gamma, q):
        super().__init__(X, y, None)
        self.cos, self.sin = cos, sin
        self.gamma = np.asarray(gamma, dtype=float)
        self.q = float(q)

    def restrict(self, idx) -> "RotatedRobustHinge":
        return RotatedRobustHinge(self.X[idx], self.y[idx], self.cos[idx], self.sin[idx], self.gamma[idx], self.q)

    def _penalty(self, w, idx=None):
        if not np.any(self.gamma):
            return 0.0
        C = self.cos if idx is None else self.cos[idx]
        S = self.sin if idx is None else self.sin[idx]
        g = self.gamma if idx is None else self.gamma[idx]
        return g * dual_norm_values(rotate(C, S, w), self.q)

    def _robust_subgradient(self, w, ia):
        """``sum_{i in ia} gamma_i R_i' dq(R_i w)``, ``dq`` a subgradient of ``||.||_q``."""
        if not np.any(self.gamma):
            return None
        C, S = self.cos[ia], self.sin[ia]
        G = dual_norm_subgradient(rotate(C, S, w), self.q)
        return self.gamma[ia] @ rotate_transpose(C, S, G)


def calibrate_eta0(datafit, lam, prox, batch_size=64, random_state=0, n_sub=2000) -> float:
    """Bottou's heuristic (as in :mod:`stochastic`): the eta_0 in 10^-3..10^3 that gives the lowest
    objective after one pass on a subsample; works for any data fit with ``restrict(idx)``."""
    from .stochastic import _objective, _pass

    rng = np.random.default_rng(random_state)
    L = datafit.n_samples
    sub = rng.choice(L, size=min(n_sub, L), replace=False)
    fit = datafit.restrict(sub)
    penalty = L2Squared(lam)
    n = datafit.X.shape[1]
    best, best_eta = np.inf, 1.0
    for eta0 in 10.0 ** np.arange(-3, 4):
        w, b, _, _ = _pass(fit, penalty, prox, np.zeros(n), 0.0, eta0, 0, rng.permutation(sub.shape[0]), batch_size)
        val = _objective(fit, penalty, w, b)
        if np.isfinite(val) and val < best:
            best, best_eta = val, eta0
    return float(best_eta)
