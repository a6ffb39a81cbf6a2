"""Compiled one-pass kernels over rows (numba): the interior points' hot loops, and the row dot product that
the Weston-Watkins epoch (:mod:`.ww_cd`) also uses.

Each kernel reads its operands once and fuses work that numpy would spread over several passes and
temporaries.  Over the rows of a data matrix ``X`` (the robust SVM of :mod:`.robust_ipm`):

* :func:`fill_centred_rows` writes one row block of ``sqrt(rho_i) c_i``, ``c_i = y_i [x_i; 1] -
  gamma_i m_{g(i)}``, ready for a BLAS rank-k update (the centred Gram matrix of
  :func:`~rsvm_conic.solvers.robust_ipm.centred_gram`);
* :func:`group_row_sums` forms ``sum_{i in g} v_i x_i`` for every group ``g`` in one pass;
* :func:`matvec_pair` forms ``X w`` and ``X' v`` together in one pass (a residual evaluation);
* :func:`robust_solve_rows_in` and :func:`robust_solve_rows_out` are the per-sample halves of a Newton
  solve, each one pass over ``X`` with the elementwise work around its product.

Single-threaded and memory-bound, the products beat OpenBLAS's one-thread ``dgemv`` on tall ``X``
(measured 1.2-2x at 2e4-2e5 rows, 50-200 columns).  Over the rows of a batch of second-order cones
(an (m, d) array, one cone per row): the cone algebra of :mod:`.cone_ipm` (``soc_*``) and the
orthant's step length.  Only the row dot product (:func:`row_dot`) may sum in any order, so that it
vectorises; nothing else is relaxed, so NaN and inf propagate as in numpy.

The kernels take trusted float64 arrays and intp group indices (validated by the caller).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "fill_centred_rows",
    "group_row_sums",
    "matvec_pair",
    "orthant_max_step",
    "robust_solve_rows_in",
    "robust_solve_rows_out",
    "row_dot",
    "soc_apply",
    "soc_jdet",
    "soc_jdiv",
    "soc_jprod",
    "soc_min_step",
    "soc_nt_scaling",
    "soc_rhs_terms",
]


@njit(cache=True, error_model="numpy")
def fill_centred_rows(X, y, sr, gam, gidx, mg, i0, B):
    """Rows ``i0 .. i0 + len(B) - 1``: ``B[r] = sr_i (y_i [x_i; 1] - gam_i m_{g(i)})`` (``B`` is (m, n + 1))."""
    m, n1 = B.shape
    n = n1 - 1
    for r in range(m):
        i = i0 + r
        ys = y[i] * sr[i]
        gs = gam[i] * sr[i]
        g = gidx[i]
        for j in range(n):
            B[r, j] = ys * X[i, j] - gs * mg[g, j]
        B[r, n] = ys - gs * mg[g, n]


@njit(cache=True, error_model="numpy")
def group_row_sums(X, v, gidx, k):
    """``out[g] = sum_{i : gidx_i = g} v_i x_i`` (k, n), one pass over the rows of ``X``."""
    L, n = X.shape
    out = np.zeros((k, n))
    for i in range(L):
        vi = v[i]
        if vi != 0.0:
            g = gidx[i]
            for j in range(n):
                out[g, j] += vi * X[i, j]
    return out


@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def row_dot(X, i, w):
    """``x_i' w`` (row i of ``X``), summed in any order (so that it vectorises: 2x the speed of the sequential
    sum; deterministic for a given build).  Also compiled into :func:`.ww_cd.ww_cd_epoch`; numba's on-disk
    cache of that module does not notice an edit here (clear its ``__pycache__`` after changing this)."""
    s = 0.0
    for j in range(X.shape[1]):
        s += X[i, j] * w[j]
    return s


@njit(cache=True, error_model="numpy")
def matvec_pair(X, w, v):
    """``(X w, X' v)`` in one pass over the rows of ``X``."""
    L, n = X.shape
    xw = np.empty(L)
    xtv = np.zeros(n)
    for i in range(L):
        xw[i] = row_dot(X, i, w)
        vi = v[i]
        for j in range(n):
            xtv[j] += vi * X[i, j]
    return xw, xtv


@njit(cache=True, error_model="numpy")
def orthant_max_step(x, d):
    """Largest ``a`` with ``x + a d >= 0`` (``x > 0``; inf if ``d >= 0``), one pass without temporaries:
    ``1 / max_i(-d_i / x_i)`` (a branch-free maximum: 4x faster than the minimum of ``-x_i / d_i`` over
    ``d_i < 0``; the two agree to a unit in the last place)."""
    m = 0.0
    for i in range(x.shape[0]):
        r = -d[i] / x[i]
        if r > m:
            m = r
    return 1.0 / m if m > 0.0 else np.inf


# ---------------------------------------------------------------------------------- second-order cones
# A batch of m cones of dimension d is an (m, d) array, one cone per row ``(u0, u1)``; the kernels below
# are the row loops of :mod:`.cone_ipm`'s cone algebra, each one pass over its operands.


@njit(cache=True, error_model="numpy")
def _row_jdet(Q, i):
    """``u0^2 - ||u1||^2`` of row i, as the product ``(u0 - ||u1||)(u0 + ||u1||)`` (limits cancellation)."""
    s = 0.0
    for j in range(1, Q.shape[1]):
        s += Q[i, j] * Q[i, j]
    nr = np.sqrt(s)
    return (Q[i, 0] - nr) * (Q[i, 0] + nr)


@njit(cache=True, error_model="numpy")
def soc_jdet(Q):
    """``u0^2 - ||u1||^2`` per row (:func:`_row_jdet`)."""
    out = np.empty(Q.shape[0])
    for i in range(Q.shape[0]):
        out[i] = _row_jdet(Q, i)
    return out


@njit(cache=True, error_model="numpy")
def soc_apply(wbar, beta, V, inverse, O):
    """``O = W V`` (or ``W^{-1} V``) row by row, ``W = beta [[w0, w1'], [w1, I + w1 w1' / (1 + w0)]]``
    (the NT scaling of :class:`~.cone_ipm.Scaling`; ``W^{-1}`` flips the sign of ``w1`` and inverts beta)."""
    m, d = V.shape
    sgn = -1.0 if inverse else 1.0
    for i in range(m):
        w0 = wbar[i, 0]
        dot = 0.0
        for j in range(1, d):
            dot += wbar[i, j] * V[i, j]
        sc = 1.0 / beta[i] if inverse else beta[i]
        v0 = V[i, 0]
        coef = sgn * v0 + dot / (1.0 + w0)
        O[i, 0] = sc * (w0 * v0 + sgn * dot)
        for j in range(1, d):
            O[i, j] = sc * (wbar[i, j] * coef + V[i, j])


@njit(cache=True, error_model="numpy")
def soc_jprod(U, V, O):
    """Jordan product per row: ``O0 = u'v``, ``O1 = u0 v1 + v0 u1``."""
    m, d = U.shape
    for i in range(m):
        s = 0.0
        for j in range(d):
            s += U[i, j] * V[i, j]
        u0, v0 = U[i, 0], V[i, 0]
        for j in range(1, d):
            O[i, j] = u0 * V[i, j] + v0 * U[i, j]
        O[i, 0] = s


@njit(cache=True, error_model="numpy")
def soc_jdiv(Lm, R, O):
    """Solve ``lam o u = r`` per row (``lam`` interior): ``u0 = (l0 r0 - l1'r1) / det(lam)``,
    ``u1 = (r1 - u0 l1) / l0``."""
    m, d = Lm.shape
    for i in range(m):
        dot = 0.0
        for j in range(1, d):
            dot += Lm[i, j] * R[i, j]
        l0 = Lm[i, 0]
        u0 = (l0 * R[i, 0] - dot) / _row_jdet(Lm, i)
        O[i, 0] = u0
        for j in range(1, d):
            O[i, j] = (R[i, j] - u0 * Lm[i, j]) / l0


@njit(cache=True, error_model="numpy")
def soc_min_step(X, D):
    """Largest ``a`` (inf if none) with ``X_i + a D_i`` in the cone for every row (``X`` interior): the
    smallest positive root of ``det(X_i + a D_i) = 0`` over the rows where the ray leaves the cone."""
    m, d = X.shape
    best = np.inf
    for i in range(m):
        dd = 0.0
        xd = 0.0
        for j in range(1, d):
            dd += D[i, j] * D[i, j]
            xd += X[i, j] * D[i, j]
        a = D[i, 0] * D[i, 0] - dd
        b = X[i, 0] * D[i, 0] - xd
        c = max(_row_jdet(X, i), 0.0)
        disc = b * b - a * c
        if a < 0.0 or (b < 0.0 and disc >= 0.0):
            den = np.sqrt(max(disc, 0.0)) - b
            r = c / den if den > 0.0 else 0.0
            if r < best:
                best = r
    return best


@njit(cache=True, error_model="numpy")
def soc_nt_scaling(S, Z, wbar, beta):
    """The NT scaling point ``wbar`` and factor ``beta`` of each row pair ``(s, z)`` (both interior)."""
    m, d = S.shape
    for i in range(m):
        ds, dz = np.sqrt(_row_jdet(S, i)), np.sqrt(_row_jdet(Z, i))
        sz = 0.0
        for j in range(d):
            sz += (S[i, j] / ds) * (Z[i, j] / dz)
        g2 = 2.0 * np.sqrt(0.5 * (1.0 + sz))
        wbar[i, 0] = (S[i, 0] / ds + Z[i, 0] / dz) / g2
        for j in range(1, d):
            wbar[i, j] = (S[i, j] / ds - Z[i, j] / dz) / g2
        beta[i] = np.sqrt(ds / dz)


# ---------------------------------------------------------------------------------- robust SVM Newton solve
@njit(cache=True, error_model="numpy")
def robust_solve_rows_in(X, y, gam, gidx, rho, dm, dx, bzm, bxi, bzx, c, gsum):
    """The per-sample half of a robust-SVM Newton solve before the Schur system, in one pass over ``X``:
    ``c_i = -rho_i bzm_i - dm_i (bxi_i - dx_i bzx_i) / (dm_i + dx_i)`` (written to ``c``),
    ``gsum[g] += gam_i c_i`` and the returned ``(X' (y c), sum_i y_i c_i)``."""
    L, n = X.shape
    xtv = np.zeros(n)
    tot = 0.0
    for i in range(L):
        ci = -rho[i] * bzm[i] - dm[i] * (bxi[i] - dx[i] * bzx[i]) / (dm[i] + dx[i])
        c[i] = ci
        gsum[gidx[i]] += gam[i] * ci
        yc = y[i] * ci
        tot += yc
        for j in range(n):
            xtv[j] += yc * X[i, j]
    return xtv, tot


@njit(cache=True, error_model="numpy")
def robust_solve_rows_out(X, y, gam, gidx, rho, dm, dx, bzm, bxi, bzx, c, dw, db, dt, dxi, zm, zx):
    """The per-sample half after it, in one pass over ``X``: with ``a_i = y_i (x_i'dw + db)`` and
    ``g_i = gam_i dt_{g(i)}``, ``dxi_i = (bxi_i - dx_i bzx_i - dm_i bzm_i - dm_i (a_i - g_i)) / (dm_i + dx_i)``,
    ``zm_i = rho_i (g_i - a_i) + c_i`` and ``zx_i = dx_i (-dxi_i - bzx_i)``."""
    L, n = X.shape
    for i in range(L):
        a = y[i] * (row_dot(X, i, dw) + db)
        g = gam[i] * dt[gidx[i]]
        d = (bxi[i] - dx[i] * bzx[i] - dm[i] * bzm[i] - dm[i] * (a - g)) / (dm[i] + dx[i])
        dxi[i] = d
        zm[i] = rho[i] * (g - a) + c[i]
        zx[i] = dx[i] * (-d - bzx[i])


@njit(cache=True, error_model="numpy")
def soc_rhs_terms(wbar, den, ib2, BZ, r0, T):
    """Per cone row (:meth:`~.robust_ipm.ConeTerms.rhs_terms`): with ``d = w1'bz1``,
    ``r0 = (den bz0 - 2 w0 d) ib2`` and ``T = (bz1 - (2 d / den) w1) ib2``."""
    m, d1 = BZ.shape
    for i in range(m):
        dot = 0.0
        for j in range(1, d1):
            dot += wbar[i, j] * BZ[i, j]
        r0[i] = (den[i] * BZ[i, 0] - 2.0 * wbar[i, 0] * dot) * ib2[i]
        f = 2.0 * dot / den[i]
        for j in range(1, d1):
            T[i, j - 1] = (BZ[i, j] - f * wbar[i, j]) * ib2[i]
