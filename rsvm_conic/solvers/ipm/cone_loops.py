"""Compiled one-pass loops over rows (numba): the interior points' hot loops, and the row dot product that the
Weston-Watkins epoch (:mod:`.multiclass.cd`) also uses.

Each kernel reads its operands once and fuses work that numpy would spread over several passes and temporaries:
over the rows of ``X`` (centred Gram rows, group sums, matrix-vector pairs, the per-sample halves of a Newton
solve) and over the rows of a batch of second-order cones (the cone algebra of :mod:`.engine`, the orthant's NT
scaling and steps, the robust SVM's cone parts of the Newton solve).  Only sums may be reordered (numba's
``fastmath={"reassoc"}``) so that row dot products vectorise; NaN and inf propagate as in numpy.
:mod:`.cone_loops_numpy` holds the numpy form of each kernel.  Which kernel fuses what, and why, is in
``docs/performance.md`` ("The compiled cone loops").  The kernels take trusted float64 arrays and intp group
indices (validated by the caller).
"""

from __future__ import annotations

import numpy as np
from ..._jit import jit, numpy_paths

__all__ = [
    "cone_back_rows",
    "cone_gram_rows",
    "cone_gx_gtz_rows",
    "cone_gx_rows",
    "cone_rhs_rows",
    "fill_centred_rows",
    "fill_centred_rows_in",
    "group_row_sums",
    "margin_rows_gx",
    "margin_weights",
    "matvec_pair",
    "matvec_pair_groups",
    "ninf",
    "numpy_path_for",
    "orthant_max_step",
    "orthant_nt_scaling",
    "orthant_newton_rhs",
    "orthant_scaled_dirs",
    "orthant_step",
    "orthant_step_scaled",
    "residual_norms",
    "robust_solve_rows_in",
    "robust_solve_rows_out",
    "row_dot",
    "soc_add_apply_sq",
    "soc_apply",
    "soc_apply_sq",
    "soc_jdet",
    "soc_inv_ninf",
    "soc_jdiv",
    "soc_jprod",
    "soc_kkt_rz",
    "soc_min_step",
    "soc_newton_rhs",
    "soc_nt_scaling",
    "soc_nt_scaling_lam",
    "soc_rhs_terms",
    "soc_scaled_dirs",
    "soc_step",
    "soc_step_scaled",
]


@jit(error_model="numpy")
def fill_centred_rows(X, y, sr, gam, gidx, mg, i0, B):
    """Rows ``i0 .. i0 + len(B) - 1``: ``B[r] = sr_i (y_i [x_i; 1] - gam_i m_{g(i)})`` (``B`` is (m, n + 1)).

    Parameters
    ----------
    X : ndarray of shape (L, n)
        The samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    sr : ndarray of shape (L,)
        ``sqrt(rho_i)``.
    gam : ndarray of shape (L,)
        The radii ``gamma_i``.
    gidx : ndarray of intp, shape (L,)
        Each sample's group.
    mg : ndarray of shape (k, n + 1)
        The group means ``m_g``.
    i0 : int
        The block's first row.
    B : ndarray of shape (m, n + 1)
        Receives the block's rows.
    """
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


@jit(error_model="numpy")
def fill_centred_rows_in(X, y, sr, gam, gidx, mg, i0, B, rho, dm, dx, bzm, bxi, bzx, c, gsum, acc):
    """:func:`fill_centred_rows` and, in the same loop over each row, :func:`robust_solve_rows_in` for those rows:
    ``c`` and ``gsum`` as there, and its two returns accumulated into ``acc`` (n + 1,), ``X' (y c)`` in
    ``acc[:n]`` and ``sum_i y_i c_i`` in ``acc[n]`` -- in row order over consecutive blocks, so the same sums.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        The samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    sr : ndarray of shape (L,)
        ``sqrt(rho_i)``.
    gam : ndarray of shape (L,)
        The radii ``gamma_i``.
    gidx : ndarray of intp, shape (L,)
        Each sample's group.
    mg : ndarray of shape (k, n + 1)
        The group means ``m_g``.
    i0 : int
        The block's first row.
    B : ndarray of shape (m, n + 1)
        Receives the block's rows.
    rho : ndarray of shape (L,)
        The series weights ``rho_i``.
    dm, dx : ndarray of shape (L,)
        The diagonal of ``W^-2`` on the margin rows and on the rows of ``xi >= 0``.
    bzm, bxi, bzx : ndarray of shape (L,)
        The right-hand side's margin rows, ``xi`` rows and ``xi >= 0`` rows.
    c : ndarray of shape (L,)
        Receives ``c_i``.
    gsum : ndarray of shape (k,)
        Accumulates ``sum_{i in g} gam_i c_i``.
    acc : ndarray of shape (n + 1,)
        Accumulates ``(X' (y c), sum_i y_i c_i)``.
    """
    m, n1 = B.shape
    n = n1 - 1
    tot = acc[n]
    for r in range(m):
        i = i0 + r
        ys = y[i] * sr[i]
        gs = gam[i] * sr[i]
        g = gidx[i]
        ci = _rows_in_c(rho[i], dm[i], dx[i], bzm[i], bxi[i], bzx[i])
        c[i] = ci
        gsum[g] += gam[i] * ci
        yc = y[i] * ci
        tot += yc
        for j in range(n):
            xij = X[i, j]
            B[r, j] = ys * xij - gs * mg[g, j]
            acc[j] += yc * xij
        B[r, n] = ys - gs * mg[g, n]
    acc[n] = tot


@jit(error_model="numpy")
def group_row_sums(X, v, gidx, k):
    """``out[g] = sum_{i : gidx_i = g} v_i x_i`` (k, n), one pass over the rows of ``X``.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        The samples.
    v : ndarray of shape (L,)
        The weights.
    gidx : ndarray of intp, shape (L,)
        Each sample's group.
    k : int
        The number of groups.

    Returns
    -------
    ndarray of shape (k, n)
    """
    L, n = X.shape
    out = np.zeros((k, n))
    for i in range(L):
        vi = v[i]
        if vi != 0.0:
            g = gidx[i]
            for j in range(n):
                out[g, j] += vi * X[i, j]
    return out


@jit(error_model="numpy", fastmath={"reassoc"})
def row_dot(X, i, w):
    """``x_i' w`` (row i of ``X``), summed in any order (so that it vectorises, where a sequential sum is bound by
    the adder's latency; deterministic for a given build).  Also compiled into :func:`.multiclass.cd.ww_cd_epoch`;
    numba's on-disk cache of that module does not notice an edit here (clear its ``__pycache__`` after changing
    this).

    Parameters
    ----------
    X : ndarray of shape (L, n)
        The rows.
    i : int
        The row.
    w : ndarray of shape (n,)
        The vector.

    Returns
    -------
    float
    """
    s = 0.0
    for j in range(X.shape[1]):
        s += X[i, j] * w[j]
    return s


@jit(error_model="numpy", fastmath={"reassoc"})
def matvec_pair(X, w, v):
    """``(X w, X' v)`` in one pass over the rows of ``X``: a row's dot product and its update of ``X' v`` share one
    loop over its entries (the dot product summed in any order, the entries of ``X' v`` in row order).

    Parameters
    ----------
    X : ndarray of shape (L, n)
        The rows.
    w : ndarray of shape (n,)
        The vector of ``X w``.
    v : ndarray of shape (L,)
        The vector of ``X' v``.

    Returns
    -------
    xw : ndarray of shape (L,)
    xtv : ndarray of shape (n,)
    """
    L, n = X.shape
    xw = np.empty(L)
    xtv = np.zeros(n)
    for i in range(L):
        vi = v[i]
        s = 0.0
        for j in range(n):
            xij = X[i, j]
            s += xij * w[j]
            xtv[j] += vi * xij
        xw[i] = s
    return xw, xtv


@jit(error_model="numpy", fastmath={"reassoc"})
def matvec_pair_groups(X, w, v, u, gidx, k):
    """``(X w, X' v, G)`` in one pass over the rows of ``X``, with ``G[g] = sum_{i : gidx_i = g} u_i x_i`` (k, n):
    :func:`matvec_pair` and :func:`group_row_sums` in one loop per row (the sums over rows in row order).

    Parameters
    ----------
    X : ndarray of shape (L, n)
        The rows.
    w : ndarray of shape (n,)
        The vector of ``X w``.
    v : ndarray of shape (L,)
        The vector of ``X' v``.
    u : ndarray of shape (L,)
        The weights of the group sums.
    gidx : ndarray of intp, shape (L,)
        Each sample's group.
    k : int
        The number of groups.

    Returns
    -------
    xw : ndarray of shape (L,)
    xtv : ndarray of shape (n,)
    G : ndarray of shape (k, n)
    """
    L, n = X.shape
    xw = np.empty(L)
    xtv = np.zeros(n)
    out = np.zeros((k, n))
    for i in range(L):
        vi = v[i]
        ui = u[i]
        g = gidx[i]
        s = 0.0
        for j in range(n):
            xij = X[i, j]
            s += xij * w[j]
            xtv[j] += vi * xij
            out[g, j] += ui * xij
        xw[i] = s
    return xw, xtv, out


@jit(error_model="numpy")
def orthant_nt_scaling(s, z, w, lam):
    """The NT scaling of the orthant in one pass: ``w = sqrt(s / z)`` and, unless ``lam`` is None, ``lam = z w``.

    Parameters
    ----------
    s, z : ndarray of shape (m,)
        The interior pair.
    w : ndarray of shape (m,)
        Receives the scaling.
    lam : ndarray of shape (m,) or None
        Receives ``z w``.
    """
    for i in range(s.shape[0]):
        wi = np.sqrt(s[i] / z[i])
        w[i] = wi
        if lam is not None:
            lam[i] = z[i] * wi


@jit(error_model="numpy")
def margin_weights(w, gam, y):
    """The robust SVM's weights at an orthant scaling ``w`` (its L margin rows, then its L rows of ``xi >= 0``), in
    one pass: ``d = w^-2`` (the diagonal of ``W^-2``), ``rho = dm dx / (dm + dx)`` (``dm, dx`` its two halves) and
    ``c = rho gam y``.

    Parameters
    ----------
    w : ndarray of shape (2 L,)
        The orthant's NT scaling.
    gam : ndarray of shape (L,)
        The radii ``gamma_i``.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.

    Returns
    -------
    d : ndarray of shape (2 L,)
        ``w^-2``.
    rho : ndarray of shape (L,)
    c : ndarray of shape (L,)
    """
    L = gam.shape[0]
    d = np.empty(2 * L)
    rho = np.empty(L)
    c = np.empty(L)
    for i in range(L):
        dm = 1.0 / (w[i] * w[i])
        dx = 1.0 / (w[L + i] * w[L + i])
        d[i] = dm
        d[L + i] = dx
        r = dm * dx / (dm + dx)
        rho[i] = r
        c[i] = r * gam[i] * y[i]
    return d, rho, c


@jit(error_model="numpy")
def margin_rows_gx(xw, y, b, xi, gam, t, gidx, zm, zx):
    """The robust SVM's orthant rows of ``G x`` from ``X w``: ``zm = -y (X w + b) - xi + gam t_g`` (no ``t`` term
    when ``t`` is empty) and ``zx = -xi``.

    Parameters
    ----------
    xw : ndarray of shape (L,)
        ``X w``.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    b : float
        The bias.
    xi : ndarray of shape (L,)
        The slacks.
    gam : ndarray of shape (L,)
        The radii ``gamma_i``.
    t : ndarray of shape (k,)
        The cones' first entries (may be empty).
    gidx : ndarray of intp, shape (L,)
        Each sample's group.
    zm, zx : ndarray of shape (L,)
        Receive the margin rows and the rows of ``xi >= 0``.
    """
    cones = t.shape[0] > 0
    for i in range(xw.shape[0]):
        v = -(y[i] * (xw[i] + b)) - xi[i]
        zm[i] = v + (gam[i] * t[gidx[i]] if cones else 0.0)
        zx[i] = -xi[i]


@jit(error_model="numpy")
def orthant_max_step(x, d):
    """Largest ``a`` with ``x + a d >= 0`` (``x > 0``; inf if ``d >= 0``), one pass without temporaries:
    ``1 / max_i(-d_i / x_i)`` (a branch-free maximum, which vectorises where the minimum of ``-x_i / d_i`` over
    ``d_i < 0`` does not; the two agree to a unit in the last place).

    Parameters
    ----------
    x : ndarray of shape (m,)
        A positive point.
    d : ndarray of shape (m,)
        The direction.

    Returns
    -------
    float
    """
    m = 0.0
    for i in range(x.shape[0]):
        r = -d[i] / x[i]
        if r > m:
            m = r
    return 1.0 / m if m > 0.0 else np.inf


# ---------------------------------------------------------------------------------- second-order cones
# A batch of m cones of dimension d is an (m, d) array, one cone per row ``(u0, u1)``; the kernels below
# are the row loops of :mod:`.engine`'s cone algebra, each one pass over its operands.


@jit(error_model="numpy", fastmath={"reassoc"})
def _tail_dot(A, i, B, k):
    """``sum_{j >= 1} A[i, j] B[k, j]`` (the ``u1'v1`` of two cone rows), summed in any order as
    :func:`row_dot` is: a sequential sum is bound by the adder's latency."""
    s = 0.0
    for j in range(1, A.shape[1]):
        s += A[i, j] * B[k, j]
    return s


@jit(error_model="numpy")
def _row_jdet(Q, i):
    """``u0^2 - ||u1||^2`` of row i, as the product ``(u0 - ||u1||)(u0 + ||u1||)`` (limits cancellation)."""
    nr = np.sqrt(_tail_dot(Q, i, Q, i))
    return (Q[i, 0] - nr) * (Q[i, 0] + nr)


@jit(error_model="numpy")
def soc_jdet(Q):
    """``u0^2 - ||u1||^2`` per row (:func:`_row_jdet`).

    Parameters
    ----------
    Q : ndarray of shape (m, d)
        One cone element per row.

    Returns
    -------
    ndarray of shape (m,)
    """
    out = np.empty(Q.shape[0])
    for i in range(Q.shape[0]):
        out[i] = _row_jdet(Q, i)
    return out


@jit(error_model="numpy")
def _apply_row(wbar, i, sc, sgn, V, k, O, r):
    """``O[r] = W_i V[k]`` for cone row ``i`` (``sc = beta_i, sgn = 1``; ``W_i^{-1}``: ``1 / beta_i, -1``)."""
    w0 = wbar[i, 0]
    dot = _tail_dot(wbar, i, V, k)
    v0 = V[k, 0]
    coef = sgn * v0 + dot / (1.0 + w0)
    O[r, 0] = sc * (w0 * v0 + sgn * dot)
    for j in range(1, V.shape[1]):
        O[r, j] = sc * (wbar[i, j] * coef + V[k, j])


@jit(error_model="numpy")
def soc_apply(wbar, beta, V, inverse, O):
    """``O = W V`` (or ``W^{-1} V``) row by row, ``W = beta [[w0, w1'], [w1, I + w1 w1' / (1 + w0)]]``
    (the NT scaling of :class:`~.engine.Scaling`; ``W^{-1}`` flips the sign of ``w1`` and inverts beta).

    Parameters
    ----------
    wbar : ndarray of shape (m, d)
        The NT points, one cone per row.
    beta : ndarray of shape (m,)
        The NT factors.
    V : ndarray of shape (m, d)
        The rows to scale.
    inverse : bool
        Apply ``W^{-1}``.
    O : ndarray of shape (m, d)
        Receives the result.
    """
    sgn = -1.0 if inverse else 1.0
    for i in range(V.shape[0]):
        _apply_row(wbar, i, 1.0 / beta[i] if inverse else beta[i], sgn, V, i, O, i)


@jit(error_model="numpy")
def soc_apply_sq(wbar, beta, V, inverse, O):
    """``O = W^2 V`` (or ``W^{-2} V``): :func:`soc_apply` twice per row, the intermediate row kept in a
    scratch row, so the result equals two calls bit for bit at one pass over the operands instead of two.

    Parameters
    ----------
    wbar : ndarray of shape (m, d)
        The NT points, one cone per row.
    beta : ndarray of shape (m,)
        The NT factors.
    V : ndarray of shape (m, d)
        The rows to scale.
    inverse : bool
        Apply ``W^{-2}``.
    O : ndarray of shape (m, d)
        Receives the result.
    """
    sgn = -1.0 if inverse else 1.0
    tmp = np.empty((1, V.shape[1]))
    for i in range(V.shape[0]):
        sc = 1.0 / beta[i] if inverse else beta[i]
        _apply_row(wbar, i, sc, sgn, V, i, tmp, 0)
        _apply_row(wbar, i, sc, sgn, tmp, 0, O, i)


@jit(error_model="numpy")
def soc_add_apply_sq(wbar, beta, V, O):
    """``O += W^2 V`` row by row (:func:`soc_apply_sq` into a scratch row, then the sum).

    Parameters
    ----------
    wbar : ndarray of shape (m, d)
        The NT points, one cone per row.
    beta : ndarray of shape (m,)
        The NT factors.
    V : ndarray of shape (m, d)
        The rows to scale.
    O : ndarray of shape (m, d)
        Accumulates the result.
    """
    tmp = np.empty((2, V.shape[1]))
    for i in range(V.shape[0]):
        _apply_row(wbar, i, beta[i], 1.0, V, i, tmp, 0)
        _apply_row(wbar, i, beta[i], 1.0, tmp, 0, tmp, 1)
        for j in range(V.shape[1]):
            O[i, j] += tmp[1, j]


@jit(error_model="numpy")
def soc_inv_ninf(wbar, beta, V):
    """``max |W^{-1} V|`` over the entries of the rows (:func:`soc_apply`'s inverse, formed row by row in a scratch
    row and never stored; 0 for no rows, NaN if an entry is NaN, as :func:`ninf` of the stored product).

    Parameters
    ----------
    wbar : ndarray of shape (m, d)
        The NT points, one cone per row.
    beta : ndarray of shape (m,)
        The NT factors.
    V : ndarray of shape (m, d)
        The rows.

    Returns
    -------
    float
    """
    d = V.shape[1]
    tmp = np.empty((1, d))
    mx = 0.0
    nan = False
    for i in range(V.shape[0]):
        _apply_row(wbar, i, 1.0 / beta[i], -1.0, V, i, tmp, 0)
        for j in range(d):
            a = abs(tmp[0, j])
            if a > mx:
                mx = a
            if a != a:
                nan = True
    return np.nan if nan else mx


@jit(error_model="numpy")
def soc_kkt_rz(wbar, beta, BZ, DZ, RZ):
    """The cone rows of a KKT residual, ``RZ <- (BZ - RZ) + W^2 DZ`` (``RZ`` holds ``G dx`` on entry; ``W^2`` as
    :func:`soc_add_apply_sq` applies it), and its norm in the step's metric, ``max |W^{-1} RZ|`` (returned, as
    :func:`soc_inv_ninf` of the result): one pass where the subtraction, :func:`soc_add_apply_sq`, :func:`soc_apply`
    and :func:`ninf` take four, with the same bits.

    Parameters
    ----------
    wbar : ndarray of shape (m, d)
        The NT points, one cone per row.
    beta : ndarray of shape (m,)
        The NT factors.
    BZ : ndarray of shape (m, d)
        The right-hand side's cone rows.
    DZ : ndarray of shape (m, d)
        The direction of ``z``.
    RZ : ndarray of shape (m, d)
        ``G dx`` on entry, the residual on exit.

    Returns
    -------
    float
    """
    m, d = BZ.shape
    tmp = np.empty((3, d))
    mx = 0.0
    nan = False
    for i in range(m):
        b = beta[i]
        _apply_row(wbar, i, b, 1.0, DZ, i, tmp, 0)
        _apply_row(wbar, i, b, 1.0, tmp, 0, tmp, 1)
        for j in range(d):
            RZ[i, j] = (BZ[i, j] - RZ[i, j]) + tmp[1, j]
        _apply_row(wbar, i, 1.0 / b, -1.0, RZ, i, tmp, 2)
        # soc_inv_ninf's maximum, repeated inline: a shared helper returning (max, nan) keeps numba from
        # vectorising the loop
        for j in range(d):
            a = abs(tmp[2, j])
            if a > mx:
                mx = a
            if a != a:
                nan = True
    return np.nan if nan else mx


_ABS_MASK = 0x7FFFFFFFFFFFFFFF  # clears the sign bit of a float64's bit pattern
_INF_BITS = 0x7FF0000000000000  # +inf; the patterns above it (sign cleared) are NaNs


@jit(error_model="numpy")
def ninf(v):
    """``max |v_i|`` (0 for an empty ``v``; NaN if any entry is NaN, as ``np.max(np.abs(v))``), one pass
    without the temporary of ``np.abs``.  The maximum is taken over the bit patterns with the sign bit cleared:
    for float64 these order as the absolute values do, inf included, and every NaN lies above inf; an integer
    maximum vectorises, where the float comparison with its NaN test does not.

    Parameters
    ----------
    v : ndarray
        The vector.

    Returns
    -------
    float
    """
    b = np.ascontiguousarray(v).view(np.int64)
    m = 0
    for i in range(b.shape[0]):
        a = b[i] & _ABS_MASK
        m = a if a > m else m
    if m > _INF_BITS:
        return np.nan
    return np.array([m]).view(np.float64)[0]


@jit(error_model="numpy", inline="always")
def _inside(o0, nrm2):
    """``o0 > 0`` and ``det = (o0 - ||o1||)(o0 + ||o1||) > 0`` (:func:`_row_jdet`'s product; the test of
    :func:`~.engine.interior`), from ``nrm2 = ||o1||^2``."""
    nr = np.sqrt(nrm2)
    return o0 > 0.0 and (o0 - nr) * (o0 + nr) > 0.0


@jit(error_model="numpy", fastmath={"reassoc"})
def soc_step(X, D, a, O):
    """``O = X + a D`` row by row; returns whether every row of ``O`` is strictly inside the cone as computed
    in floating point (:func:`_inside`), with the row's norm summed (in any order) as its step is written.

    Parameters
    ----------
    X, D : ndarray of shape (m, d)
        The point and the direction.
    a : float
        The step.
    O : ndarray of shape (m, d)
        Receives the step.

    Returns
    -------
    bool
    """
    m, d = X.shape
    ok = True
    for i in range(m):
        o0 = X[i, 0] + a * D[i, 0]
        O[i, 0] = o0
        nrm = 0.0
        for j in range(1, d):
            o = X[i, j] + a * D[i, j]
            O[i, j] = o
            nrm += o * o
        if not _inside(o0, nrm):
            ok = False
    return ok


@jit(error_model="numpy", fastmath={"reassoc"})
def soc_step_scaled(wbar, beta, X, D, a, O):
    """:func:`soc_step` along ``W D`` (:func:`soc_apply`'s entries, formed in the step's loop and never stored).

    Parameters
    ----------
    wbar : ndarray of shape (m, d)
        The NT points, one cone per row.
    beta : ndarray of shape (m,)
        The NT factors.
    X, D : ndarray of shape (m, d)
        The point and the direction.
    a : float
        The step.
    O : ndarray of shape (m, d)
        Receives the step.

    Returns
    -------
    bool
    """
    m, d = X.shape
    ok = True
    for i in range(m):
        w0, b, v0 = wbar[i, 0], beta[i], D[i, 0]
        dot = 0.0
        for j in range(1, d):
            dot += wbar[i, j] * D[i, j]
        coef = v0 + dot / (1.0 + w0)
        o0 = X[i, 0] + a * (b * (w0 * v0 + dot))
        O[i, 0] = o0
        nrm = 0.0
        for j in range(1, d):
            o = X[i, j] + a * (b * (wbar[i, j] * coef + D[i, j]))
            O[i, j] = o
            nrm += o * o
        if not _inside(o0, nrm):
            ok = False
    return ok


@jit(error_model="numpy")
def orthant_step_scaled(w, x, d, a, o):
    """:func:`orthant_step` along ``w d``.

    Parameters
    ----------
    w : ndarray of shape (m,)
        The orthant's NT scaling.
    x, d : ndarray of shape (m,)
        The point and the direction.
    a : float
        The step.
    o : ndarray of shape (m,)
        Receives the step.

    Returns
    -------
    bool
    """
    ok = True
    for i in range(x.shape[0]):
        o[i] = x[i] + a * (d[i] * w[i])
        if not o[i] > 0.0:
            ok = False
    return ok


@jit(error_model="numpy")
def orthant_step(x, d, a, o):
    """``o = x + a d``; returns whether every entry is ``> 0``.

    Parameters
    ----------
    x, d : ndarray of shape (m,)
        The point and the direction.
    a : float
        The step.
    o : ndarray of shape (m,)
        Receives the step.

    Returns
    -------
    bool
    """
    ok = True
    for i in range(x.shape[0]):
        o[i] = x[i] + a * d[i]
        if not o[i] > 0.0:
            ok = False
    return ok


@jit(error_model="numpy")
def soc_jprod(U, V, O):
    """Jordan product per row: ``O0 = u'v``, ``O1 = u0 v1 + v0 u1``.

    Parameters
    ----------
    U, V : ndarray of shape (m, d)
        The factors.
    O : ndarray of shape (m, d)
        Receives the product.
    """
    m, d = U.shape
    for i in range(m):
        u0, v0 = U[i, 0], V[i, 0]
        s = u0 * v0 + _tail_dot(U, i, V, i)
        for j in range(1, d):
            O[i, j] = u0 * V[i, j] + v0 * U[i, j]
        O[i, 0] = s


@jit(error_model="numpy")
def soc_jdiv(Lm, R, O):
    """Solve ``lam o u = r`` per row (``lam`` interior): ``u0 = (l0 r0 - l1'r1) / det(lam)``,
    ``u1 = (r1 - u0 l1) / l0``.

    Parameters
    ----------
    Lm : ndarray of shape (m, d)
        Interior rows ``lam``.
    R : ndarray of shape (m, d)
        The right-hand sides.
    O : ndarray of shape (m, d)
        Receives ``u``.
    """
    m, d = Lm.shape
    for i in range(m):
        dot = _tail_dot(Lm, i, R, i)
        l0 = Lm[i, 0]
        u0 = (l0 * R[i, 0] - dot) / _row_jdet(Lm, i)
        O[i, 0] = u0
        for j in range(1, d):
            O[i, j] = (R[i, j] - u0 * Lm[i, j]) / l0


@jit(error_model="numpy", inline="always")
def _min_root(x0, d0, dd, xd, c):
    """The largest ``a`` with ``x + a d`` in the cone (``x`` interior; inf where the ray stays inside): the smallest
    positive root of ``det(x + a d) = 0``, from ``dd = d1'd1``, ``xd = x1'd1`` and ``c = max(det x, 0)``."""
    a = d0 * d0 - dd
    b = x0 * d0 - xd
    disc = b * b - a * c
    if a < 0.0 or (b < 0.0 and disc >= 0.0):
        den = np.sqrt(max(disc, 0.0)) - b
        return c / den if den > 0.0 else 0.0
    return np.inf


@jit(error_model="numpy")
def _row_min_step(X, D, i, c):
    """:func:`_min_root` of rows ``X[i]`` and ``D[i]``; ``c = max(det X_i, 0)`` (:func:`_row_jdet`)."""
    return _min_root(X[i, 0], D[i, 0], _tail_dot(D, i, D, i), _tail_dot(X, i, D, i), c)


@jit(error_model="numpy")
def soc_min_step(X, D):
    """Largest ``a`` (inf if none) with ``X_i + a D_i`` in the cone for every row (``X`` interior): the
    smallest positive root of ``det(X_i + a D_i) = 0`` over the rows where the ray leaves the cone.

    Parameters
    ----------
    X : ndarray of shape (m, d)
        Interior rows.
    D : ndarray of shape (m, d)
        The directions.

    Returns
    -------
    float
    """
    best = np.inf
    for i in range(X.shape[0]):
        r = _row_min_step(X, D, i, max(_row_jdet(X, i), 0.0))
        if r < best:
            best = r
    return best


# ---------------------------------------------------------------------------------- fused steps of the driver
# Each kernel below does, row by row, what a sequence of the kernels above does in several passes over the cone
# arrays, reading and writing each operand once (the same values to rounding: a row's products are summed together
# in one loop, in any order).


@jit(error_model="numpy", fastmath={"reassoc"})
def soc_newton_rhs(Lm, DSA, DZA, shift, corrector, wbar, beta, RZ, U, O):
    """Per row: ``U = lam \\ r`` and the cone rows of the Newton right-hand side, ``O = -RZ - W U``
    (:func:`soc_apply`'s formula).  Predictor: ``r = -lam o lam``, whose solution is ``U = -lam`` exactly (``DSA``,
    ``DZA`` are not read).  Corrector: ``r = -lam o lam - dsa o dza + shift e`` (``e = (1, 0)``), solved as
    :func:`soc_jdiv` does; one loop writes ``r1`` (in ``U``'s row) with ``l1'l1``, ``dsa1'dza1`` and ``l1'r1``, one
    writes ``u1 = (r1 - u0 l1) / l0`` (with the reciprocal of ``l0``) and ``w1'u1``, one writes ``O``.  Tail sums are
    taken in any order.

    Parameters
    ----------
    Lm : ndarray of shape (m, d)
        The scaled point ``lam``.
    DSA, DZA : ndarray of shape (m, d)
        The predictor's scaled directions (read by the corrector only).
    shift : float
        ``sigma mu``.
    corrector : bool
        The corrector's right-hand side (else the predictor's).
    wbar : ndarray of shape (m, d)
        The NT points, one cone per row.
    beta : ndarray of shape (m,)
        The NT factors.
    RZ : ndarray of shape (m, d)
        The primal residual's cone rows.
    U, O : ndarray of shape (m, d)
        Receive ``u`` and the right-hand side.
    """
    m, d = Lm.shape
    for i in range(m):
        l0 = Lm[i, 0]
        wu = 0.0
        if corrector:
            a0, b0 = DSA[i, 0], DZA[i, 0]
            ll = pt = lr = 0.0
            for j in range(1, d):
                lj = Lm[i, j]
                rj = -(l0 * lj + l0 * lj) - (a0 * DZA[i, j] + b0 * DSA[i, j])
                U[i, j] = rj
                ll += lj * lj
                pt += DSA[i, j] * DZA[i, j]
                lr += lj * rj
            r0 = (-(l0 * l0 + ll) - (a0 * b0 + pt)) + shift
            nr = np.sqrt(ll)
            u0 = (l0 * r0 - lr) / ((l0 - nr) * (l0 + nr))
            il0 = 1.0 / l0
            for j in range(1, d):
                uj = (U[i, j] - u0 * Lm[i, j]) * il0
                U[i, j] = uj
                wu += wbar[i, j] * uj
        else:
            u0 = -l0
            for j in range(1, d):
                uj = -Lm[i, j]
                U[i, j] = uj
                wu += wbar[i, j] * uj
        U[i, 0] = u0
        w0, b = wbar[i, 0], beta[i]
        coef = u0 + wu / (1.0 + w0)
        O[i, 0] = -RZ[i, 0] - b * (w0 * u0 + wu)
        for j in range(1, d):
            O[i, j] = -RZ[i, j] - b * (wbar[i, j] * coef + U[i, j])


@jit(error_model="numpy")
def orthant_newton_rhs(lam, dsa, dza, shift, corrector, w, rz, u, o):
    """:func:`soc_newton_rhs` on the nonnegative orthant: ``u = r / lam`` (``-lam`` for the predictor) and
    ``o = -rz - w u``.

    Parameters
    ----------
    lam : ndarray of shape (m,)
        The scaled point.
    dsa, dza : ndarray of shape (m,)
        The predictor's scaled directions (read by the corrector only).
    shift : float
        ``sigma mu``.
    corrector : bool
        The corrector's right-hand side (else the predictor's).
    w : ndarray of shape (m,)
        The orthant's NT scaling.
    rz : ndarray of shape (m,)
        The primal residual's orthant rows.
    u, o : ndarray of shape (m,)
        Receive ``u`` and the right-hand side.
    """
    for i in range(lam.shape[0]):
        li = lam[i]
        if corrector:
            ui = ((-(li * li) - dsa[i] * dza[i]) + shift) / li
        else:
            ui = -li
        u[i] = ui
        o[i] = -rz[i] - ui * w[i]


@jit(error_model="numpy", fastmath={"reassoc"})
def soc_scaled_dirs(wbar, beta, Lm, U, DZ, DZT):
    """Per row: ``DZT = W DZ`` and ``U -= DZT`` (the scaled directions of ``z`` and ``s``); returns the largest
    step from ``Lm`` along both (:func:`soc_min_step` of each, their minimum).  Two loops per row: ``w1'dz1``, then
    the directions' tails with the five tail products that both step lengths need (``l1'l1``, ``t1't1``, ``l1't1``,
    ``u1'u1``, ``l1'u1``, summed in any order as the row dot products are).

    Parameters
    ----------
    wbar : ndarray of shape (m, d)
        The NT points, one cone per row.
    beta : ndarray of shape (m,)
        The NT factors.
    Lm : ndarray of shape (m, d)
        The scaled point ``lam``.
    U : ndarray of shape (m, d)
        The Newton step's ``u``, overwritten with the direction of ``s``.
    DZ : ndarray of shape (m, d)
        The direction of ``z``.
    DZT : ndarray of shape (m, d)
        Receives ``W DZ``.

    Returns
    -------
    float
    """
    m, d = U.shape
    best = np.inf
    for i in range(m):
        w0, b, v0 = wbar[i, 0], beta[i], DZ[i, 0]
        dot = 0.0
        for j in range(1, d):
            dot += wbar[i, j] * DZ[i, j]
        coef = v0 + dot / (1.0 + w0)
        t0 = b * (w0 * v0 + dot)
        DZT[i, 0] = t0
        u0 = U[i, 0] - t0
        U[i, 0] = u0
        ll = tt = lt = uu = lu = 0.0
        for j in range(1, d):
            t = b * (wbar[i, j] * coef + DZ[i, j])
            DZT[i, j] = t
            u = U[i, j] - t
            U[i, j] = u
            lj = Lm[i, j]
            ll += lj * lj
            tt += t * t
            lt += lj * t
            uu += u * u
            lu += lj * u
        l0 = Lm[i, 0]
        nr = np.sqrt(ll)
        c = max((l0 - nr) * (l0 + nr), 0.0)  # once for both directions
        r = _min_root(l0, u0, uu, lu, c)
        if r < best:
            best = r
        r = _min_root(l0, t0, tt, lt, c)
        if r < best:
            best = r
    return best


@jit(error_model="numpy")
def orthant_scaled_dirs(w, lam, u, dz, dzt):
    """:func:`soc_scaled_dirs` on the orthant: ``dzt = w dz``, ``u -= dzt``, and the largest step from ``lam``
    along both (:func:`orthant_max_step`'s ``1 / max(-d / lam)`` over both).

    Parameters
    ----------
    w : ndarray of shape (m,)
        The orthant's NT scaling.
    lam : ndarray of shape (m,)
        The scaled point.
    u : ndarray of shape (m,)
        The Newton step's ``u``, overwritten with the direction of ``s``.
    dz : ndarray of shape (m,)
        The direction of ``z``.
    dzt : ndarray of shape (m,)
        Receives ``w dz``.

    Returns
    -------
    float
    """
    m = 0.0
    for i in range(lam.shape[0]):
        t = dz[i] * w[i]
        dzt[i] = t
        ui = u[i] - t
        u[i] = ui
        r = -ui / lam[i]
        if r > m:
            m = r
        r = -t / lam[i]
        if r > m:
            m = r
    return 1.0 / m if m > 0.0 else np.inf


@jit(error_model="numpy")
def residual_norms(Gx, s, h, z):
    """``Gx <- Gx + s - h`` (the primal residual, written over ``Gx``) and ``(||Gx + s - h||_inf, ||s||_inf,
    ||z||_inf)``, one pass over the four flat vectors (each norm as :func:`ninf`: NaN if an entry is NaN).

    Parameters
    ----------
    Gx : ndarray of shape (m,)
        ``G x`` on entry, the primal residual on exit.
    s, h, z : ndarray of shape (m,)
        The slack, the right-hand side and the multipliers.

    Returns
    -------
    nr, ns, nz : float
        The infinity norms of the residual, ``s`` and ``z``.
    """
    nr = ns = nz = 0.0
    nan = False
    for i in range(Gx.shape[0]):
        v = (Gx[i] + s[i]) - h[i]
        Gx[i] = v
        a, b, c = abs(v), abs(s[i]), abs(z[i])
        if a > nr:
            nr = a
        if b > ns:
            ns = b
        if c > nz:
            nz = c
        if a != a or c != c:  # a NaN in s makes the residual NaN
            nan = True
    if nan:  # the rare path: each norm again, NaN where its vector holds one
        return ninf(Gx), ninf(s), ninf(z)
    return nr, ns, nz


@jit(error_model="numpy", fastmath={"reassoc"})
def soc_nt_scaling_lam(S, Z, wbar, beta, LAM):
    """The NT scaling point ``wbar`` and factor ``beta`` of each row pair ``(s, z)`` (both interior), and with an
    array ``LAM`` (not None) also ``LAM = W Z`` (:func:`soc_apply`'s formula).  Per row: one loop for the three tail
    products ``s1's1``, ``z1'z1``, ``s1'z1``; one writing ``w1`` with ``w1'z1``; one writing ``LAM``'s tail.  The tail
    sums are taken in any order (as the row dot products are) and ``w1 = (s1 / ds - z1 / dz) / g`` is formed with
    the reciprocals of ``ds g`` and ``dz g`` (a division per entry costs more than the rest of the row).

    Parameters
    ----------
    S, Z : ndarray of shape (m, d)
        The interior pairs.
    wbar : ndarray of shape (m, d)
        Receives the NT points.
    beta : ndarray of shape (m,)
        Receives the NT factors.
    LAM : ndarray of shape (m, d) or None
        Receives ``W Z``.
    """
    m, d = S.shape
    for i in range(m):
        ss = zz = sz = 0.0
        for j in range(1, d):
            a, c = S[i, j], Z[i, j]
            ss += a * a
            zz += c * c
            sz += a * c
        s0, z0 = S[i, 0], Z[i, 0]
        ns, nz = np.sqrt(ss), np.sqrt(zz)
        ds, dz = np.sqrt((s0 - ns) * (s0 + ns)), np.sqrt((z0 - nz) * (z0 + nz))
        g2 = 2.0 * np.sqrt(0.5 * (1.0 + ((s0 / ds) * (z0 / dz) + sz / (ds * dz))))
        w0 = (s0 / ds + z0 / dz) / g2
        wbar[i, 0] = w0
        b = np.sqrt(ds / dz)
        beta[i] = b
        ps, pz = 1.0 / (ds * g2), 1.0 / (dz * g2)
        wz = 0.0
        for j in range(1, d):
            w = S[i, j] * ps - Z[i, j] * pz
            wbar[i, j] = w
            wz += w * Z[i, j]
        if LAM is not None:
            coef = z0 + wz / (1.0 + w0)
            LAM[i, 0] = b * (w0 * z0 + wz)
            for j in range(1, d):
                LAM[i, j] = b * (wbar[i, j] * coef + Z[i, j])


@jit(error_model="numpy")
def soc_nt_scaling(S, Z, wbar, beta):
    """The NT scaling point ``wbar`` and factor ``beta`` of each row pair ``(s, z)`` (both interior):
    :func:`soc_nt_scaling_lam` without ``LAM``.

    Parameters
    ----------
    S, Z : ndarray of shape (m, d)
        The interior pairs.
    wbar : ndarray of shape (m, d)
        Receives the NT points.
    beta : ndarray of shape (m,)
        Receives the NT factors.
    """
    soc_nt_scaling_lam(S, Z, wbar, beta, None)


# ---------------------------------------------------------------------------------- robust SVM Newton solve
@jit(error_model="numpy", inline="always")
def _rows_in_c(rho, dm, dx, bzm, bxi, bzx):
    """A margin row's ``c_i`` of :func:`robust_solve_rows_in`."""
    return -rho * bzm - dm * (bxi - dx * bzx) / (dm + dx)


@jit(error_model="numpy")
def robust_solve_rows_in(X, y, gam, gidx, rho, dm, dx, bzm, bxi, bzx, c, gsum):
    """The per-sample half of a robust-SVM Newton solve before the Schur system, in one pass over ``X``:
    ``c_i = -rho_i bzm_i - dm_i (bxi_i - dx_i bzx_i) / (dm_i + dx_i)`` (written to ``c``),
    ``gsum[g] += gam_i c_i`` and the returned ``(X' (y c), sum_i y_i c_i)``.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        The samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    gam : ndarray of shape (L,)
        The radii ``gamma_i``.
    gidx : ndarray of intp, shape (L,)
        Each sample's group.
    rho : ndarray of shape (L,)
        The series weights ``rho_i``.
    dm, dx : ndarray of shape (L,)
        The diagonal of ``W^-2`` on the margin rows and on the rows of ``xi >= 0``.
    bzm, bxi, bzx : ndarray of shape (L,)
        The right-hand side's margin rows, ``xi`` rows and ``xi >= 0`` rows.
    c : ndarray of shape (L,)
        Receives ``c_i``.
    gsum : ndarray of shape (k,)
        Accumulates ``sum_{i in g} gam_i c_i``.

    Returns
    -------
    xtv : ndarray of shape (n,)
        ``X' (y c)``.
    tot : float
        ``sum_i y_i c_i``.
    """
    L, n = X.shape
    xtv = np.zeros(n)
    tot = 0.0
    for i in range(L):
        ci = _rows_in_c(rho[i], dm[i], dx[i], bzm[i], bxi[i], bzx[i])
        c[i] = ci
        gsum[gidx[i]] += gam[i] * ci
        yc = y[i] * ci
        tot += yc
        for j in range(n):
            xtv[j] += yc * X[i, j]
    return xtv, tot


@jit(error_model="numpy")
def robust_solve_rows_out(X, y, gam, gidx, rho, dm, dx, bzm, bxi, bzx, c, dw, db, dt, dxi, zm, zx):
    """The per-sample half after it, in one pass over ``X``: with ``a_i = y_i (x_i'dw + db)`` and
    ``g_i = gam_i dt_{g(i)}``, ``dxi_i = (bxi_i - dx_i bzx_i - dm_i bzm_i - dm_i (a_i - g_i)) / (dm_i + dx_i)``,
    ``zm_i = rho_i (g_i - a_i) + c_i`` and ``zx_i = dx_i (-dxi_i - bzx_i)``.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        The samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    gam : ndarray of shape (L,)
        The radii ``gamma_i``.
    gidx : ndarray of intp, shape (L,)
        Each sample's group.
    rho : ndarray of shape (L,)
        The series weights ``rho_i``.
    dm, dx : ndarray of shape (L,)
        The diagonal of ``W^-2`` on the margin rows and on the rows of ``xi >= 0``.
    bzm, bxi, bzx : ndarray of shape (L,)
        The right-hand side's margin rows, ``xi`` rows and ``xi >= 0`` rows.
    c : ndarray of shape (L,)
        The first half's ``c_i``.
    dw : ndarray of shape (n,)
        The Schur solve's ``dw``.
    db : float
        Its ``db``.
    dt : ndarray of shape (k,)
        The cones' ``dt_g``.
    dxi, zm, zx : ndarray of shape (L,)
        Receive ``dxi`` and the margin and ``xi >= 0`` rows of ``dz``.
    """
    L, n = X.shape
    for i in range(L):
        a = y[i] * (row_dot(X, i, dw) + db)
        g = gam[i] * dt[gidx[i]]
        d = (bxi[i] - dx[i] * bzx[i] - dm[i] * bzm[i] - dm[i] * (a - g)) / (dm[i] + dx[i])
        dxi[i] = d
        zm[i] = rho[i] * (g - a) + c[i]
        zx[i] = dx[i] * (-d - bzx[i])


@jit(error_model="numpy")
def soc_rhs_terms(wbar, den, ib2, BZ, r0, T):
    """Per cone row (:meth:`~.kkt.ConeTerms.rhs_terms`): with ``d = w1'bz1``,
    ``r0 = (den bz0 - 2 w0 d) ib2`` and ``T = (bz1 - (2 d / den) w1) ib2``.

    Parameters
    ----------
    wbar : ndarray of shape (m, d)
        The NT points, one cone per row.
    den : ndarray of shape (m,)
        ``2 w0^2 - 1``.
    ib2 : ndarray of shape (m,)
        ``beta^-2``.
    BZ : ndarray of shape (m, d)
        The right-hand side's cone rows.
    r0 : ndarray of shape (m,)
        Receives ``r0``.
    T : ndarray of shape (m, d - 1)
        Receives ``T``.
    """
    m, d1 = BZ.shape
    for i in range(m):
        dot = _tail_dot(wbar, i, BZ, i)
        r0[i] = (den[i] * BZ[i, 0] - 2.0 * wbar[i, 0] * dot) * ib2[i]
        f = 2.0 * dot / den[i]
        for j in range(1, d1):
            T[i, j - 1] = (BZ[i, j] - f * wbar[i, j]) * ib2[i]


# The cones' parts of the robust SVM's Newton system (diagonal factors ``F``).  The group means ``m_g`` and the
# vectors ``qhat_g = qc_g [F_g o w1_g; 0]`` of :class:`~.kkt.ConeTerms` are formed entry by entry where they
# are used: ``m_g = (scale_g M_g[:n], last_g)`` with ``M`` the data rows for per-sample cones (so no X-sized array
# holds them) or the grouped means themselves (``scale = 1``).


@jit(error_model="numpy")
def cone_gx_rows(F, w, t, Z):
    """The cones' rows of ``G x`` for diagonal factors: ``Z[i] = (-t_i, F_i o (-w))``.

    Parameters
    ----------
    F : ndarray of shape (m, n)
        The cones' diagonal factors.
    w : ndarray of shape (n,)
        The weights.
    t : ndarray of shape (m,)
        The cones' first entries.
    Z : ndarray of shape (m, n + 1)
        Receives the rows.
    """
    m, n = F.shape
    for i in range(m):
        Z[i, 0] = -t[i]
        for j in range(n):
            Z[i, j + 1] = F[i, j] * -w[j]


@jit(error_model="numpy")
def cone_gx_gtz_rows(F, w, t, Zin, Z):
    """:func:`cone_gx_rows` (``Z[i] = (-t_i, F_i o (-w))``, written) and the cones' part of a ``G' z``,
    ``sum_i F_i o Zin[i, 1:]`` (returned), in one pass over ``F`` (``Zin`` and ``Z`` distinct).

    Parameters
    ----------
    F : ndarray of shape (m, n)
        The cones' diagonal factors.
    w : ndarray of shape (n,)
        The weights.
    t : ndarray of shape (m,)
        The cones' first entries.
    Zin : ndarray of shape (m, n + 1)
        The multipliers' cone rows.
    Z : ndarray of shape (m, n + 1)
        Receives the rows of ``G x``.

    Returns
    -------
    ndarray of shape (n,)
    """
    m, n = F.shape
    acc = np.zeros(n)
    for i in range(m):
        Z[i, 0] = -t[i]
        for j in range(n):
            f = F[i, j]
            Z[i, j + 1] = f * -w[j]
            acc[j] += f * Zin[i, j + 1]
    return acc


@jit(error_model="numpy")
def cone_gram_rows(wbar, F, M, scale, last, qc, ib2, sw1, sw2, i0, B1, B2, dg):
    """Rows ``i0 .. i0 + len(B1) - 1`` of the two factors of the cones' Schur terms, ready for BLAS rank-k
    updates: ``B1[r] = sw1_i (F_i o w1_i)`` and ``B2[r] = sw2_i (m_i + qhat_i)``; and ``dg += ib2_i F_i o F_i``
    over these rows (the diagonal term).

    Parameters
    ----------
    wbar : ndarray of shape (m, d)
        The NT points, one cone per row.
    F : ndarray of shape (m, n)
        The cones' diagonal factors.
    M : ndarray
        The group means' factored rows (:class:`~.kkt.GroupMeans`).
    scale, last : ndarray of shape (m,)
        The means' scales and last entries.
    qc : ndarray of shape (m,)
        ``qhat_g = qc_g [F_g o w1_g; 0]``.
    ib2 : ndarray of shape (m,)
        ``beta^-2``.
    sw1, sw2 : ndarray of shape (m,)
        The rows' weights of the two factors.
    i0 : int
        The block's first cone.
    B1 : ndarray of shape (r, n)
        Receives the first factor's rows.
    B2 : ndarray of shape (r, n + 1)
        Receives the second factor's rows.
    dg : ndarray of shape (n,)
        Accumulates the diagonal term.
    """
    m, n = B1.shape
    for r in range(m):
        i = i0 + r
        s, q, a1, a2, b = scale[i], qc[i], sw1[i], sw2[i], ib2[i]
        for j in range(n):
            f = F[i, j]
            fw = f * wbar[i, j + 1]
            B1[r, j] = fw * a1
            B2[r, j] = (s * M[i, j] + q * fw) * a2
            dg[j] += b * (f * f)
        B2[r, n] = (last[i] + 0.0) * a2


@jit(error_model="numpy")
def cone_rhs_rows(wbar, den, ib2, d00, F, M, scale, last, qc, BZ, psi0, ag, hg, r0, acc):
    """The cones' part of a reduced right-hand side (:meth:`~.kkt.ConeTerms.reduced_rhs`), one pass over
    the cone rows: :func:`soc_rhs_terms`' ``r0`` (written) and ``T`` (kept in registers), then
    ``acc -= sum_g [F_g T_g; 0]`` and ``acc += sum_g m_g c1_g - qhat_g c2_g`` with ``c1 = a (psi0 - r0) / h`` and
    ``c2 = (a r0 + d00 psi0) / h``.

    Parameters
    ----------
    wbar : ndarray of shape (m, d)
        The NT points, one cone per row.
    den : ndarray of shape (m,)
        ``2 w0^2 - 1``.
    ib2 : ndarray of shape (m,)
        ``beta^-2``.
    d00 : ndarray of shape (m,)
        ``(D_g)_00``.
    F : ndarray of shape (m, n)
        The cones' diagonal factors.
    M : ndarray
        The group means' factored rows (:class:`~.kkt.GroupMeans`).
    scale, last : ndarray of shape (m,)
        The means' scales and last entries.
    qc : ndarray of shape (m,)
        ``qhat_g = qc_g [F_g o w1_g; 0]``.
    BZ : ndarray of shape (m, n + 1)
        The right-hand side's cone rows.
    psi0 : ndarray of shape (m,)
        The t rows less their margin part.
    ag, hg : ndarray of shape (m,)
        ``a_g`` and ``h_g`` of the t-elimination.
    r0 : ndarray of shape (m,)
        Receives ``r0``.
    acc : ndarray of shape (n + 1,)
        The reduced right-hand side, updated.
    """
    m, d1 = BZ.shape
    n = d1 - 1
    for i in range(m):
        dot = _tail_dot(wbar, i, BZ, i)
        r = (den[i] * BZ[i, 0] - 2.0 * wbar[i, 0] * dot) * ib2[i]
        r0[i] = r
        f = 2.0 * dot / den[i]
        c1 = ag[i] / hg[i] * (psi0[i] - r)
        c2 = (ag[i] * r + d00[i] * psi0[i]) / hg[i]
        s, q = scale[i], qc[i]
        for j in range(n):
            acc[j] += (
                (s * M[i, j]) * c1
                - (q * (F[i, j] * wbar[i, j + 1])) * c2
                - F[i, j] * ((BZ[i, j + 1] - f * wbar[i, j + 1]) * ib2[i])
            )
        acc[n] += last[i] * c1 - 0.0 * c2


@jit(error_model="numpy", fastmath={"reassoc"})
def cone_back_rows(wbar, beta, d00, F, M, scale, last, qc, BZ, psi0, r0, ag, hg, du, dt, Z):
    """The cones' rows of a direction after the Schur solve ``du = (dw, db)`` (:meth:`~.kkt.ConeTerms.back`),
    one pass: ``dt = (psi0 - r0) / h + (a m'du - d00 qhat'du) / h`` and ``Z = W^{-2} ((-dt, -F o dw) - BZ)``, with
    the two ``W^{-1}`` applications of :func:`soc_apply_sq`.  Four loops per row: ``m'du`` with ``qhat'du``; the
    vector ``v`` (in ``Z``'s row) with ``w1'v1``; ``W^{-1} v`` (in ``Z``'s row) with ``w1'(W^{-1} v)_1``; ``Z``.
    Tail sums are taken in any order.

    Parameters
    ----------
    wbar : ndarray of shape (m, d)
        The NT points, one cone per row.
    beta : ndarray of shape (m,)
        The NT factors.
    d00 : ndarray of shape (m,)
        ``(D_g)_00``.
    F : ndarray of shape (m, n)
        The cones' diagonal factors.
    M : ndarray
        The group means' factored rows (:class:`~.kkt.GroupMeans`).
    scale, last : ndarray of shape (m,)
        The means' scales and last entries.
    qc : ndarray of shape (m,)
        ``qhat_g = qc_g [F_g o w1_g; 0]``.
    BZ : ndarray of shape (m, n + 1)
        The right-hand side's cone rows.
    psi0 : ndarray of shape (m,)
        The t rows less their margin part.
    r0 : ndarray of shape (m,)
        :func:`soc_rhs_terms`' ``r0``.
    ag, hg : ndarray of shape (m,)
        ``a_g`` and ``h_g`` of the t-elimination.
    du : ndarray of shape (n + 1,)
        The Schur solve's ``(dw, db)``.
    dt : ndarray of shape (m,)
        Receives ``dt``.
    Z : ndarray of shape (m, n + 1)
        Receives the cones' rows of ``dz``.
    """
    m, d1 = BZ.shape
    n = d1 - 1
    for i in range(m):
        hd = fd = 0.0
        for j in range(n):
            hd += M[i, j] * du[j]
            fd += (F[i, j] * wbar[i, j + 1]) * du[j]
        md = scale[i] * hd + last[i] * du[n]
        qd = qc[i] * fd
        t = (psi0[i] - r0[i]) / hg[i] + (ag[i] * md - d00[i] * qd) / hg[i]
        dt[i] = t
        w0, sc = wbar[i, 0], 1.0 / beta[i]
        v0 = -t - BZ[i, 0]
        dot = 0.0
        for j in range(1, d1):
            vj = -F[i, j - 1] * du[j - 1] - BZ[i, j]
            Z[i, j] = vj
            dot += wbar[i, j] * vj
        coef = -v0 + dot / (1.0 + w0)
        p0 = sc * (w0 * v0 - dot)
        dot = 0.0
        for j in range(1, d1):
            pj = sc * (wbar[i, j] * coef + Z[i, j])
            Z[i, j] = pj
            dot += wbar[i, j] * pj
        coef = -p0 + dot / (1.0 + w0)
        Z[i, 0] = sc * (w0 * p0 - dot)
        for j in range(1, d1):
            Z[i, j] = sc * (wbar[i, j] * coef + Z[i, j])


# ---------------------------------------------------------------------------------- the numpy path
#: Data of fewer entries than this run the numpy twins of these kernels (:mod:`.cone_loops_numpy`) instead of
#: compiling them: the interior points decide with :func:`numpy_path_for` (``rsvm-conic bench first-hour`` measures
#: the first fit in a fresh process either way).
NUMPY_BELOW = 200_000


def numpy_path_for(entries: int):
    """The context in which a solve over data of ``entries`` entries runs: the numpy twins below
    :data:`NUMPY_BELOW` (no compilation: a small fit in a fresh process starts at once), the compiled kernels from
    there on.

    Parameters
    ----------
    entries : int
        The number of entries of the solve's largest array (e.g. ``X.size``).

    Returns
    -------
    contextlib.AbstractContextManager
        :func:`rsvm_conic._jit.numpy_paths` with the choice.
    """
    return numpy_paths(entries < NUMPY_BELOW)


def _install_numpy_twins() -> None:
    from . import cone_loops_numpy

    for name in __all__:
        if name != "numpy_path_for":
            globals()[name].numpy = getattr(cone_loops_numpy, name)


_install_numpy_twins()
