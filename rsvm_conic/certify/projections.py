"""Euclidean projections onto the sets of the dual points: the SVM dual set ``{0 <= a <= C, y'a = c}``, the
probability simplex and the p-norm balls (p in {1, 2, inf}).

The SVM dual set: ``a = clip(v - lam y, 0, C)`` with ``lam`` the root of the decreasing piecewise-linear
``phi(lam) = y'clip(v - lam y, 0, C) - c``.  :func:`project_dual_set` finds it exactly on the sorted breakpoints
(one sort) and then takes one Newton step on the root's linear piece when rounding left ``y'a`` off ``c`` (a sum
of C-sized steps loses the small ones at large C); :func:`dual_set_multiplier` finds the same root from passes
over data held in blocks (a callable returning ``phi`` and the number of free coordinates at a trial ``lam``).

The l1 ball is the simplex case: for ``||z||_1 > r`` the projection is ``sign(z) * P_simplex(|z|, r)``,
with the sort-based simplex projection of Duchi, Shalev-Shwartz, Singer & Chandra (2008): sort
``v`` decreasingly, ``rho = #{j : j v_(j) > sum_{l <= j} v_(l) - r}``, ``theta = (sum_{l <= rho} v_(l) - r) / rho``,
``x = max(v - theta, 0)``; O(n log n) per row, vectorised over rows.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["dual_set_multiplier", "project_dual_set", "project_pball", "project_simplex"]


def project_simplex(V: np.ndarray, radius=1.0) -> np.ndarray:
    """Projection of ``v`` (or of each row of V) onto ``{x >= 0, sum x = radius}`` (radius per row or shared).

    At ``radius = 0`` the result is 0 (``rho`` is floored at 1, so ``theta = max v``).

    Parameters
    ----------
    V : ndarray of shape (d,) or (m, d)
        The vector or rows to project.
    radius : float or ndarray of shape (m,), default 1.0
        The simplex's sum.

    Returns
    -------
    ndarray of the shape of ``V``
    """
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
    """Projection of each row of Z onto ``{z : ||z||_p <= radius}`` (radius per row or shared, p in {1, 2, inf}).

    Parameters
    ----------
    Z : ndarray of shape (m, d)
        The rows to project.
    radius : float or ndarray of shape (m,)
        The balls' radii (negative radii count as 0).
    p : float
        The norm: 1, 2 or inf.

    Returns
    -------
    ndarray of shape (m, d)
    """
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


def project_dual_set(v: np.ndarray, y: np.ndarray, C, level: float = 0.0) -> np.ndarray:
    """Euclidean projection of ``v`` onto ``{0 <= a <= C, y'a = level}``, the one projection onto the SVM dual set.

    Parameters
    ----------
    v : ndarray of shape (n,)
        The point to project.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    C : float or ndarray of shape (n,)
        The box's upper bound, one for all coordinates or one per coordinate (the weighted box ``0 <= a_i <= C_i``).
    level : float, default 0.0
        The value of ``y'a`` (0 for the SVM dual set).

    Returns
    -------
    ndarray of shape (n,)
        ``clip(v - lam y, 0, C)``, ``lam`` the root of ``phi(lam) = y'clip(v - lam y, 0, C) - level``.

    Notes
    -----
    Coordinate i contributes ``y_i a_i``, which decreases with slope -1 for ``lam`` in ``[lo_i, lo_i + C_i]``,
    ``lo_i = y_i v_i - C_i [y_i = 1]``, and is constant outside; so ``y'a = sum_{y_i = 1} C_i - sum_i clip(lam -
    lo_i, 0, C_i)`` and the root is found on the sorted breakpoints (one sort, one cumulative sum).  That sum
    adds C-sized steps: at C = 1e12 it loses ``y'a`` to 0.2; when ``|y'a - level|`` exceeds the rounding of the sum
    ``y'a`` itself, one Newton step on the root's linear piece (``lam += phi / #free``, kept if it lowers
    ``|phi|``) makes it exact.  The kernel routes certify ill-conditioned problems (C ||K|| ~ 1e8) at the last
    bit; there the sorted root is kept as it is (tests/test_rsvm_socp.py checks the bits).  Preallocated outputs
    and ufuncs: the hot path of the kernel routes (~50 calls per grid point).
    """
    n = v.size
    pos = y > 0
    pts = np.empty(2 * n)
    lo = np.multiply(y, v, out=pts[:n])
    lo -= C * pos
    target = float(np.sum(C[pos])) if np.ndim(C) else C * float(np.count_nonzero(pos))
    target -= level
    np.add(lo, C, out=pts[n:])
    order = np.argsort(pts, kind="stable")
    pts = pts[order]
    slope = (order < n).astype(np.float64)
    slope *= 2.0
    slope -= 1.0  # +1 for a lower breakpoint, -1 for an upper one
    np.cumsum(slope, out=slope)  # slope of sum clip(.) right of each point
    val = np.empty(2 * n)
    val[0] = 0.0
    step = np.subtract(pts[1:], pts[:-1], out=val[1:])
    step *= slope[:-1]
    np.cumsum(step, out=step)  # sum clip(.) at each point
    k = int(val.searchsorted(target, side="left"))
    if k == 0:
        lam = pts[0]
    elif k >= pts.size:
        lam = pts[-1]
    else:
        sl = slope[k - 1]
        lam = pts[k - 1] + (target - val[k - 1]) / sl if sl > 0 else pts[k]
    out = np.multiply(y, -lam)
    out += v
    np.maximum(out, 0.0, out=out)
    out = np.minimum(out, C, out=out)
    phi = float(y @ out) - level
    if abs(phi) > _SUM_ROUNDING * (float(np.sum(out)) + abs(level)):
        nfree = np.count_nonzero((out > 0.0) & (out < C))
        if nfree:
            new = np.clip(v - (lam + phi / nfree) * y, 0.0, C)
            if abs(float(y @ new) - level) < abs(phi):
                return new
    return out


#: ``|y'a - level|`` below this fraction of ``sum(a)`` is the rounding of the sum itself (64 eps)
_SUM_ROUNDING = 64 * np.finfo(float).eps


def dual_set_multiplier(evaluate, bracket, C, noise, max_iter: int = 60):
    """The root ``lam`` of :func:`project_dual_set` (level 0, one bound C) on data held in blocks.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(lam) -> (phi, nfree)``: ``y'clip(v - lam y, 0, C)`` and the number of coordinates strictly inside
        the box, from one pass over the blocks.
    bracket : tuple of float
        ``(min_i y_i v_i, max_i y_i v_i, n_pos, n_neg)``: ``phi(min - C) = C n_pos > 0 > -C n_neg = phi(max + C)``.
    C : float
        The box's upper bound.
    noise : float
        The rounding level of ``phi`` (e.g. ``4 eps C n``): a ``|phi|`` below it is a root.
    max_iter : int, default 60
        Passes allowed.

    Returns
    -------
    lam : float or None
        The root (``a = clip(v - lam y, 0, C)``), None when ``max_iter`` passes did not find it.
    passes : int
        Calls of ``evaluate``.

    Notes
    -----
    Newton steps on the piecewise-linear ``phi`` (its slope is minus the number of free coordinates), false
    position or bisection when a step leaves the bracket: a few passes land on the root's linear piece, where the
    step is exact.
    """
    lo, hi = bracket[0] - C, bracket[1] + C
    flo, fhi = C * bracket[2], -C * bracket[3]
    lam = 0.0 if lo < 0.0 < hi else 0.5 * (lo + hi)
    eps = 4 * np.finfo(float).eps
    for it in range(max_iter):
        phi, nfree = evaluate(lam)
        if abs(phi) <= noise:
            return lam, it + 1
        if phi > 0.0:
            lo, flo = lam, phi
        else:
            hi, fhi = lam, phi
        new = lam + phi / nfree if nfree else math.nan
        if not lo < new < hi:  # outside the bracket: false position, then bisection
            new = lo + (hi - lo) * flo / (flo - fhi)
            if not lo < new < hi:
                new = 0.5 * (lo + hi)
        if new == lam or hi - lo <= eps * max(abs(lo), abs(hi), C):
            return lam, it + 1
        lam = new
    return None, max_iter
