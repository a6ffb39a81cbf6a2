"""The numpy path of :mod:`.cone_loops`: every kernel vectorised over the rows, same arguments, same results.

A small solve runs these instead of the compiled kernels (see :func:`rsvm_conic._jit.numpy_paths` and
:data:`.cone_loops.NUMPY_BELOW`): for data of a few ten thousand entries, a fresh process would spend seconds
compiling what numpy does in milliseconds.  Each function writes the same output arrays and returns the same values
as its compiled twin (to rounding: numpy sums in another order; ``tests/test_cone_loops.py`` checks every pair on
random inputs, to a tolerance scaled to the inputs' magnitude), including the conventions for NaN (a norm of an
array holding NaN is NaN; a step search ignores NaN ratios) and empty arrays (a norm of nothing is 0).
"""

from __future__ import annotations

import numpy as np

__all__: list[str] = []  # installed on the compiled kernels by cone_loops; not a public module


def _rowdot_einsum(A, B):
    return np.einsum("ij,ij->i", A, B)


#: row-wise dot products ``sum_j A_ij B_ij``: numpy's ``vecdot`` (numpy >= 2; half einsum's call overhead on the
#: small cone batches), einsum before
_rowdot = getattr(np, "vecdot", _rowdot_einsum)


def _tail(A, B):
    """Row-wise ``A[:, 1:]' B[:, 1:]`` (the ``u1'v1`` of cone rows)."""
    return _rowdot(A[:, 1:], B[:, 1:])


def _apply(wbar, sc, sgn, V):
    """``W V`` row by row (``sc = beta, sgn = 1``; ``W^{-1} V``: ``sc = 1 / beta, sgn = -1``), a new array."""
    w0 = wbar[:, 0]
    dot = _tail(wbar, V)
    v0 = V[:, 0]
    coef = sgn * v0 + dot / (1.0 + w0)
    O = np.empty_like(V)
    O[:, 0] = sc * (w0 * v0 + sgn * dot)
    O[:, 1:] = sc[:, None] * (wbar[:, 1:] * coef[:, None] + V[:, 1:])
    return O


def _jdet(Q):
    nr = np.sqrt(_tail(Q, Q))
    return (Q[:, 0] - nr) * (Q[:, 0] + nr)


def _inside_all(O):
    nr = np.sqrt(_tail(O, O))
    o0 = O[:, 0]
    return bool(np.all((o0 > 0.0) & ((o0 - nr) * (o0 + nr) > 0.0)))


def _min_root(x0, d0, dd, xd, c):
    """Vectorised :func:`.cone_loops._min_root` (inf where the ray stays inside)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = d0 * d0 - dd
        b = x0 * d0 - xd
        disc = b * b - a * c
        leaves = (a < 0.0) | ((b < 0.0) & (disc >= 0.0))
        den = np.sqrt(np.maximum(disc, 0.0)) - b
        root = np.where(den > 0.0, c / den, 0.0)
    return np.where(leaves, root, np.inf)


def _smallest(*parts):
    """The smallest entry over ``parts`` (NaN ignored, as a loop's ``r < best`` does), inf for none."""
    return float(min((np.fmin.reduce(p, initial=np.inf) for p in parts), default=np.inf))


def _inv_max(*parts):
    """``1 / max(0, max_i r_i)`` over ``parts`` (NaN ignored), inf when the maximum is 0."""
    m = max(float(np.fmax.reduce(p, initial=0.0)) for p in parts)
    return 1.0 / m if m > 0.0 else np.inf


#: up to this many groups, sums over groups of rows are one matrix product with a (rows, groups) indicator matrix
#: (BLAS); more groups: one ``np.bincount`` over the flattened entries (``np.add.at`` is unbuffered and several
#: times slower than either)
DENSE_GROUPS = 32


def _group_add(out, gidx, v):
    """``out[g] += sum_{i : gidx_i = g} v_i`` (``v`` of shape (L,))."""
    out += np.bincount(gidx, weights=v, minlength=out.shape[0])


def _indicator(u, gidx, k):
    """The (L, k) matrix with ``u_i`` at ``(i, gidx_i)`` and zeros elsewhere."""
    L = u.shape[0]
    M = np.zeros((L, k))
    M[np.arange(L), gidx] = u
    return M


def _group_rows(X, v, gidx, k):
    """``out[g] = sum_{i : gidx_i = g} v_i x_i`` (k, n) for more than :data:`DENSE_GROUPS` groups."""
    L, n = X.shape
    flat = (gidx[:, None] * n + np.arange(n)).ravel()
    return np.bincount(flat, weights=(v[:, None] * X).ravel(), minlength=k * n).reshape(k, n)


def _rows_in_c(rho, dm, dx, bzm, bxi, bzx):
    return -rho * bzm - dm * (bxi - dx * bzx) / (dm + dx)


def fill_centred_rows(X, y, sr, gam, gidx, mg, i0, B):
    """The numpy twin of :func:`.cone_loops.fill_centred_rows` (parameters and results there)."""
    m, n1 = B.shape
    n = n1 - 1
    r = slice(i0, i0 + m)
    ys = y[r] * sr[r]
    np.multiply(X[r], ys[:, None], out=B[:, :n])
    B[:, n] = ys
    k = mg.shape[0]
    if not mg.any():  # no cones (gamma = 0): nothing to centre
        return
    gs = gam[r] * sr[r]
    # the centring gamma_i m_g: one group's is an outer product; a product with the indicator matrix has one
    # nonzero term per entry, so it is gs_i m_g exactly (no gather of an (m, n + 1) array)
    if k == 1:
        B -= np.multiply.outer(gs, mg[0])
    else:
        B -= _indicator(gs, gidx[r], k) @ mg if k <= DENSE_GROUPS else gs[:, None] * mg[gidx[r]]


def fill_centred_rows_in(X, y, sr, gam, gidx, mg, i0, B, rho, dm, dx, bzm, bxi, bzx, c, gsum, acc):
    """The numpy twin of :func:`.cone_loops.fill_centred_rows_in` (parameters and results there)."""
    fill_centred_rows(X, y, sr, gam, gidx, mg, i0, B)
    m, n1 = B.shape
    n = n1 - 1
    r = slice(i0, i0 + m)
    ci = _rows_in_c(rho[r], dm[r], dx[r], bzm[r], bxi[r], bzx[r])
    c[r] = ci
    _group_add(gsum, gidx[r], gam[r] * ci)
    yc = y[r] * ci
    acc[:n] += X[r].T @ yc
    acc[n] += yc.sum()


def group_row_sums(X, v, gidx, k):
    """The numpy twin of :func:`.cone_loops.group_row_sums` (parameters and results there)."""
    if k <= DENSE_GROUPS:
        return np.ascontiguousarray((X.T @ _indicator(v, gidx, k)).T)
    return _group_rows(X, v, gidx, k)


def row_dot(X, i, w):
    """The numpy twin of :func:`.cone_loops.row_dot` (parameters and results there)."""
    return float(X[i] @ w)


def matvec_pair(X, w, v):
    """The numpy twin of :func:`.cone_loops.matvec_pair` (parameters and results there)."""
    return X @ w, X.T @ v


def matvec_pair_groups(X, w, v, u, gidx, k):
    """The numpy twin of :func:`.cone_loops.matvec_pair_groups` (parameters and results there)."""
    return X @ w, X.T @ v, group_row_sums(X, u, gidx, k)


def orthant_nt_scaling(s, z, w, lam):
    """The numpy twin of :func:`.cone_loops.orthant_nt_scaling` (parameters and results there)."""
    w[:] = np.sqrt(s / z)
    if lam is not None:
        lam[:] = z * w


def margin_weights(w, gam, y):
    """The numpy twin of :func:`.cone_loops.margin_weights` (parameters and results there)."""
    L = gam.shape[0]
    d = 1.0 / (w[: 2 * L] * w[: 2 * L])
    dm, dx = d[:L], d[L:]
    rho = dm * dx / (dm + dx)
    return d, rho, rho * gam * y


def margin_rows_gx(xw, y, b, xi, gam, t, gidx, zm, zx):
    """The numpy twin of :func:`.cone_loops.margin_rows_gx` (parameters and results there)."""
    v = -(y * (xw + b)) - xi
    zm[:] = v + gam * t[gidx] if t.shape[0] > 0 else v
    zx[:] = -xi


def orthant_max_step(x, d):
    """The numpy twin of :func:`.cone_loops.orthant_max_step` (parameters and results there)."""
    return _inv_max(-d / x)


def soc_jdet(Q):
    """The numpy twin of :func:`.cone_loops.soc_jdet` (parameters and results there)."""
    return _jdet(Q)


def soc_apply(wbar, beta, V, inverse, O):
    """The numpy twin of :func:`.cone_loops.soc_apply` (parameters and results there)."""
    O[:] = _apply(wbar, 1.0 / beta, -1.0, V) if inverse else _apply(wbar, beta, 1.0, V)


def soc_apply_sq(wbar, beta, V, inverse, O):
    """The numpy twin of :func:`.cone_loops.soc_apply_sq` (parameters and results there)."""
    sc, sgn = (1.0 / beta, -1.0) if inverse else (beta, 1.0)
    O[:] = _apply(wbar, sc, sgn, _apply(wbar, sc, sgn, V))


def soc_add_apply_sq(wbar, beta, V, O):
    """The numpy twin of :func:`.cone_loops.soc_add_apply_sq` (parameters and results there)."""
    O += _apply(wbar, beta, 1.0, _apply(wbar, beta, 1.0, V))


def ninf(v):
    """The numpy twin of :func:`.cone_loops.ninf` (parameters and results there)."""
    a = np.abs(np.ravel(v))
    return float(a.max()) if a.size else 0.0


def soc_inv_ninf(wbar, beta, V):
    """The numpy twin of :func:`.cone_loops.soc_inv_ninf` (parameters and results there)."""
    return ninf(_apply(wbar, 1.0 / beta, -1.0, V))


def soc_kkt_rz(wbar, beta, BZ, DZ, RZ):
    """The numpy twin of :func:`.cone_loops.soc_kkt_rz` (parameters and results there)."""
    RZ[:] = (BZ - RZ) + _apply(wbar, beta, 1.0, _apply(wbar, beta, 1.0, DZ))
    return ninf(_apply(wbar, 1.0 / beta, -1.0, RZ))


def soc_step(X, D, a, O):
    """The numpy twin of :func:`.cone_loops.soc_step` (parameters and results there)."""
    O[:] = X + a * D
    return _inside_all(O)


def soc_step_scaled(wbar, beta, X, D, a, O):
    """The numpy twin of :func:`.cone_loops.soc_step_scaled` (parameters and results there)."""
    O[:] = X + a * _apply(wbar, beta, 1.0, D)
    return _inside_all(O)


def orthant_step_scaled(w, x, d, a, o):
    """The numpy twin of :func:`.cone_loops.orthant_step_scaled` (parameters and results there)."""
    o[:] = x + a * (d * w)
    return bool(np.all(o > 0.0))


def orthant_step(x, d, a, o):
    """The numpy twin of :func:`.cone_loops.orthant_step` (parameters and results there)."""
    o[:] = x + a * d
    return bool(np.all(o > 0.0))


def soc_jprod(U, V, O):
    """The numpy twin of :func:`.cone_loops.soc_jprod` (parameters and results there)."""
    s = U[:, 0] * V[:, 0] + _tail(U, V)
    O[:, 1:] = U[:, :1] * V[:, 1:] + V[:, :1] * U[:, 1:]
    O[:, 0] = s


def soc_jdiv(Lm, R, O):
    """The numpy twin of :func:`.cone_loops.soc_jdiv` (parameters and results there)."""
    u0 = (Lm[:, 0] * R[:, 0] - _tail(Lm, R)) / _jdet(Lm)
    O[:, 1:] = (R[:, 1:] - u0[:, None] * Lm[:, 1:]) / Lm[:, :1]
    O[:, 0] = u0


def soc_min_step(X, D):
    """The numpy twin of :func:`.cone_loops.soc_min_step` (parameters and results there)."""
    c = np.maximum(_jdet(X), 0.0)
    return _smallest(_min_root(X[:, 0], D[:, 0], _tail(D, D), _tail(X, D), c))


def soc_newton_rhs(Lm, DSA, DZA, shift, corrector, wbar, beta, RZ, U, O):
    """The numpy twin of :func:`.cone_loops.soc_newton_rhs` (parameters and results there)."""
    l0, L1 = Lm[:, 0], Lm[:, 1:]
    if corrector:
        a0, b0 = DSA[:, :1], DZA[:, :1]
        r1 = -(l0[:, None] * L1 + l0[:, None] * L1) - (a0 * DZA[:, 1:] + b0 * DSA[:, 1:])
        ll = _rowdot(L1, L1)
        r0 = (-(l0 * l0 + ll) - (a0[:, 0] * b0[:, 0] + _tail(DSA, DZA))) + shift
        nr = np.sqrt(ll)
        u0 = (l0 * r0 - _rowdot(L1, r1)) / ((l0 - nr) * (l0 + nr))
        U1 = (r1 - u0[:, None] * L1) * (1.0 / l0)[:, None]
    else:
        u0, U1 = -l0, -L1
    U[:, 1:] = U1
    U[:, 0] = u0
    w0, b = wbar[:, 0], beta
    wu = _tail(wbar, U)
    coef = u0 + wu / (1.0 + w0)
    O0 = -RZ[:, 0] - b * (w0 * u0 + wu)
    O[:, 1:] = -RZ[:, 1:] - b[:, None] * (wbar[:, 1:] * coef[:, None] + U[:, 1:])
    O[:, 0] = O0


def orthant_newton_rhs(lam, dsa, dza, shift, corrector, w, rz, u, o):
    """The numpy twin of :func:`.cone_loops.orthant_newton_rhs` (parameters and results there)."""
    ui = ((-(lam * lam) - dsa * dza) + shift) / lam if corrector else -lam
    u[:] = ui
    o[:] = -rz - ui * w


def soc_scaled_dirs(wbar, beta, Lm, U, DZ, DZT):
    """The numpy twin of :func:`.cone_loops.soc_scaled_dirs` (parameters and results there)."""
    T = _apply(wbar, beta, 1.0, DZ)
    DZT[:] = T
    U -= T
    c = np.maximum(_jdet(Lm), 0.0)
    D, L2 = np.concatenate((U, T)), np.concatenate((Lm, Lm))  # both directions' rows: one root search
    return _smallest(_min_root(L2[:, 0], D[:, 0], _tail(D, D), _tail(L2, D), np.concatenate((c, c))))


def orthant_scaled_dirs(w, lam, u, dz, dzt):
    """The numpy twin of :func:`.cone_loops.orthant_scaled_dirs` (parameters and results there)."""
    t = dz * w
    dzt[:] = t
    u -= t
    return _inv_max(-u / lam, -t / lam)


def residual_norms(Gx, s, h, z):
    """The numpy twin of :func:`.cone_loops.residual_norms` (parameters and results there)."""
    Gx[:] = (Gx + s) - h
    return ninf(Gx), ninf(s), ninf(z)


def soc_nt_scaling_lam(S, Z, wbar, beta, LAM):
    """The numpy twin of :func:`.cone_loops.soc_nt_scaling_lam` (parameters and results there)."""
    ss, zz, sz = _tail(S, S), _tail(Z, Z), _tail(S, Z)
    s0, z0 = S[:, 0], Z[:, 0]
    ns, nz = np.sqrt(ss), np.sqrt(zz)
    ds, dz = np.sqrt((s0 - ns) * (s0 + ns)), np.sqrt((z0 - nz) * (z0 + nz))
    g2 = 2.0 * np.sqrt(0.5 * (1.0 + ((s0 / ds) * (z0 / dz) + sz / (ds * dz))))
    w0 = (s0 / ds + z0 / dz) / g2
    b = np.sqrt(ds / dz)
    W1 = S[:, 1:] * (1.0 / (ds * g2))[:, None] - Z[:, 1:] * (1.0 / (dz * g2))[:, None]
    if LAM is not None:
        wz = _rowdot(W1, Z[:, 1:])
        coef = z0 + wz / (1.0 + w0)
        lam0 = b * (w0 * z0 + wz)
        lam1 = b[:, None] * (W1 * coef[:, None] + Z[:, 1:])
    wbar[:, 0] = w0
    wbar[:, 1:] = W1
    beta[:] = b
    if LAM is not None:
        LAM[:, 0] = lam0
        LAM[:, 1:] = lam1


def soc_nt_scaling(S, Z, wbar, beta):
    """The numpy twin of :func:`.cone_loops.soc_nt_scaling` (parameters and results there)."""
    soc_nt_scaling_lam(S, Z, wbar, beta, None)


def robust_solve_rows_in(X, y, gam, gidx, rho, dm, dx, bzm, bxi, bzx, c, gsum):
    """The numpy twin of :func:`.cone_loops.robust_solve_rows_in` (parameters and results there)."""
    ci = _rows_in_c(rho, dm, dx, bzm, bxi, bzx)
    c[:] = ci
    _group_add(gsum, gidx, gam * ci)
    yc = y * ci
    return X.T @ yc, float(yc.sum())


def robust_solve_rows_out(X, y, gam, gidx, rho, dm, dx, bzm, bxi, bzx, c, dw, db, dt, dxi, zm, zx):
    """The numpy twin of :func:`.cone_loops.robust_solve_rows_out` (parameters and results there)."""
    a = y * (X @ dw + db)
    g = gam * dt[gidx]
    d = (bxi - dx * bzx - dm * bzm - dm * (a - g)) / (dm + dx)
    dxi[:] = d
    zm[:] = rho * (g - a) + c
    zx[:] = dx * (-d - bzx)


def soc_rhs_terms(wbar, den, ib2, BZ, r0, T):
    """The numpy twin of :func:`.cone_loops.soc_rhs_terms` (parameters and results there)."""
    dot = _tail(wbar, BZ)
    r0[:] = (den * BZ[:, 0] - 2.0 * wbar[:, 0] * dot) * ib2
    f = 2.0 * dot / den
    T[:, : BZ.shape[1] - 1] = (BZ[:, 1:] - f[:, None] * wbar[:, 1:]) * ib2[:, None]


def cone_gx_rows(F, w, t, Z):
    """The numpy twin of :func:`.cone_loops.cone_gx_rows` (parameters and results there)."""
    Z[:, 0] = -t
    Z[:, 1:] = F * -w


def cone_gx_gtz_rows(F, w, t, Zin, Z):
    """The numpy twin of :func:`.cone_loops.cone_gx_gtz_rows` (parameters and results there)."""
    cone_gx_rows(F, w, t, Z)
    return np.einsum("ij,ij->j", F, Zin[:, 1:])


def cone_gram_rows(wbar, F, M, scale, last, qc, ib2, sw1, sw2, i0, B1, B2, dg):
    """The numpy twin of :func:`.cone_loops.cone_gram_rows` (parameters and results there)."""
    m, n = B1.shape
    r = slice(i0, i0 + m)
    Fr = F[r, :n]
    fw = Fr * wbar[r, 1 : n + 1]
    B1[:] = fw * sw1[r, None]
    B2[:, :n] = (scale[r, None] * M[r, :n] + qc[r, None] * fw) * sw2[r, None]
    B2[:, n] = (last[r] + 0.0) * sw2[r]
    dg += ib2[r] @ (Fr * Fr)


def cone_rhs_rows(wbar, den, ib2, d00, F, M, scale, last, qc, BZ, psi0, ag, hg, r0, acc):
    """The numpy twin of :func:`.cone_loops.cone_rhs_rows` (parameters and results there)."""
    m, d1 = BZ.shape
    n = d1 - 1
    dot = _tail(wbar, BZ)
    r = (den * BZ[:, 0] - 2.0 * wbar[:, 0] * dot) * ib2
    r0[:] = r
    f = 2.0 * dot / den
    c1 = ag / hg * (psi0 - r)
    c2 = (ag * r + d00 * psi0) / hg
    W1, Fm = wbar[:, 1 : n + 1], F[:m, :n]
    acc[:n] += (
        c1 @ (scale[:m, None] * M[:m, :n])
        - c2 @ (qc[:m, None] * (Fm * W1))
        - np.einsum("ij,ij->j", Fm, (BZ[:, 1:] - f[:, None] * W1) * ib2[:, None])
    )
    acc[n] += np.sum(last[:m] * c1 - 0.0 * c2)


def cone_back_rows(wbar, beta, d00, F, M, scale, last, qc, BZ, psi0, r0, ag, hg, du, dt, Z):
    """The numpy twin of :func:`.cone_loops.cone_back_rows` (parameters and results there)."""
    m, d1 = BZ.shape
    n = d1 - 1
    Fm, W1 = F[:m, :n], wbar[:, 1:]
    md = scale[:m] * (M[:m, :n] @ du[:n]) + last[:m] * du[n]
    qd = qc[:m] * ((Fm * W1) @ du[:n])
    t = (psi0 - r0) / hg + (ag * md - d00 * qd) / hg
    dt[:] = t
    w0, sc = wbar[:, 0], 1.0 / beta
    v0 = -t - BZ[:, 0]
    V1 = -Fm * du[:n] - BZ[:, 1:]
    dot = _rowdot(W1, V1)
    coef = -v0 + dot / (1.0 + w0)
    p0 = sc * (w0 * v0 - dot)
    P1 = sc[:, None] * (W1 * coef[:, None] + V1)
    dot = _rowdot(W1, P1)
    coef = -p0 + dot / (1.0 + w0)
    Z[:, 0] = sc * (w0 * p0 - dot)
    Z[:, 1:] = sc[:, None] * (W1 * coef[:, None] + P1)
