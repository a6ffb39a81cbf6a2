"""Euclidean projections onto the probability simplex and onto p-norm balls (p in {1, 2, inf}).

The l1 ball is the simplex case: for ``||z||_1 > r`` the projection is ``sign(z) * P_simplex(|z|, r)``,
with the sort-based simplex projection of Duchi, Shalev-Shwartz, Singer & Chandra (2008): sort
``v`` decreasingly, ``rho = #{j : j v_(j) > sum_{l <= j} v_(l) - r}``, ``theta = (sum_{l <= rho} v_(l) - r) / rho``,
``x = max(v - theta, 0)``; O(n log n) per row, vectorised over rows.
"""

from __future__ import annotations

import numpy as np

__all__ = ["project_pball", "project_simplex"]


def project_simplex(V: np.ndarray, radius=1.0) -> np.ndarray:
    """Projection of ``v`` (or of each row of V) onto ``{x >= 0, sum x = radius}`` (radius per row or shared).

    At ``radius = 0`` the result is 0 (``rho`` is floored at 1, so ``theta = max v``)."""
    V = np.asarray(V, dtype=float)
    W = np.atleast_2d(V)
    r = np.broadcast_to(np.asarray(radius, dtype=float), W.shape[:1])
    srt = -np.sort(-W, axis=1)
    css = np.cumsum(srt, axis=1) - r[:, None]
    ks = np.arange(1, W.shape[1] + 1)
    rho = np.maximum(np.sum(srt * ks > css, axis=1), 1)
    theta = css[np.arange(W.shape[0]), rho - 1] / rho
    return np.maximum(W - theta[:, None], 0.0).reshape(V.shape)


def project_pball(Z: np.ndarray, radius, p: float) -> np.ndarray:
    """Projection of each row of Z onto ``{z : ||z||_p <= radius}`` (radius per row or shared, p in {1, 2, inf})."""
    radius = np.broadcast_to(np.maximum(np.asarray(radius, dtype=float), 0.0), Z.shape[:1])
    if p == np.inf:
        return np.clip(Z, -radius[:, None], radius[:, None])
    if p == 2.0:
        nrm = np.sqrt(np.sum(Z * Z, axis=1))
        f = np.divide(radius, nrm, out=np.ones_like(nrm), where=nrm > radius)
        return Z * f[:, None]
    A = np.abs(Z)
    out = Z.copy()
    over = np.sum(A, axis=1) > radius
    if np.any(over):
        out[over] = np.sign(Z[over]) * project_simplex(A[over], radius[over])
    return out
