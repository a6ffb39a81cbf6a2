"""The compiled cone loops (rsvm_conic.solvers.ipm.cone_loops) against plain numpy formulas."""

import numpy as np
import pytest

from rsvm_conic.solvers.ipm.kkt import centred_gram
from rsvm_conic.solvers.ipm.cone_loops import (
    group_row_sums,
    margin_rows_gx,
    margin_weights,
    matvec_pair,
    matvec_pair_groups,
    orthant_max_step,
    orthant_nt_scaling,
    robust_solve_rows_in,
    robust_solve_rows_out,
)


def _rows(L, n, k, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(L, n)) * rng.uniform(0.1, 10.0, n)
    y = np.where(rng.random(L) < 0.5, -1.0, 1.0)
    gidx = np.arange(L, dtype=np.intp) if k == "L" else rng.integers(0, k, L).astype(np.intp)
    return rng, X, y, gidx


@pytest.mark.parametrize("k", [1, 3, "L"])
@pytest.mark.parametrize("chunk", [None, 7, 64])
def test_centred_gram_is_the_centred_weighted_gram(k, chunk):
    L, n = 300, 9
    rng, X, y, gidx = _rows(L, n, k)
    kk = L if k == "L" else k
    rho, gam = rng.random(L) * 1e3, rng.random(L)
    gam[::5] = 0.0
    mg = rng.normal(size=(kk, n + 1))
    C = y[:, None] * np.column_stack([X, np.ones(L)]) - gam[:, None] * mg[gidx]
    ref = C.T @ (rho[:, None] * C)
    out = centred_gram(X, y, rho, gam, gidx, mg, chunk=chunk)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    np.testing.assert_array_equal(out, out.T)


@pytest.mark.parametrize("k", [0, 1, 3])
@pytest.mark.parametrize("chunk", [None, 7, 64])
def test_centred_gram_with_the_solves_first_half_is_both_passes_bitwise(k, chunk):
    """The Gram matrix's pass with a Newton solve's first half (``rows_in``): the same Gram matrix and the same
    ``c``, group sums, ``X' (y c)`` and ``sum y c`` as :func:`robust_solve_rows_in`, bit for bit, over several row
    blocks (k = 0: no cones, gamma = 0)."""
    L, n = 300, 9
    rng, X, y, gidx = _rows(L, n, max(k, 1), seed=11)
    kk = max(k, 1)
    gam = np.zeros(L) if k == 0 else rng.random(L)
    mg = np.zeros((1, n + 1)) if k == 0 else rng.normal(size=(k, n + 1))
    dm, dx = 10.0 ** rng.uniform(-6, 6, L), 10.0 ** rng.uniform(-6, 6, L)
    rho = dm * dx / (dm + dx)
    bzm, bxi, bzx = rng.normal(size=L), rng.normal(size=L), rng.normal(size=L)
    c, gsum, acc = np.full(L, np.nan), np.zeros(kk), np.zeros(n + 1)
    out = centred_gram(X, y, rho, gam, gidx, mg, chunk=chunk, rows_in=(dm, dx, bzm, bxi, bzx, c, gsum, acc))
    np.testing.assert_array_equal(out, centred_gram(X, y, rho, gam, gidx, mg, chunk=chunk))
    c0, gsum0 = np.empty(L), np.zeros(kk)
    xtyc, syc = robust_solve_rows_in(X, y, gam, gidx, rho, dm, dx, bzm, bxi, bzx, c0, gsum0)
    np.testing.assert_array_equal(c, c0)
    np.testing.assert_array_equal(gsum, gsum0)
    np.testing.assert_array_equal(acc[:n], xtyc)
    assert acc[n] == syc


def test_margin_kernels_are_the_numpy_formulas_bitwise():
    """The orthant's NT scaling, the robust SVM's margin weights and its orthant rows of ``G x``: one pass each,
    the numpy expressions they replace bit for bit (with and without cones)."""
    rng = np.random.default_rng(13)
    L = 257
    s, z = 10.0 ** rng.uniform(-8, 4, 2 * L), 10.0 ** rng.uniform(-8, 4, 2 * L)
    w, lam = np.empty(2 * L), np.empty(2 * L)
    orthant_nt_scaling(s, z, w, lam)
    np.testing.assert_array_equal(w, np.sqrt(s / z))
    np.testing.assert_array_equal(lam, z * np.sqrt(s / z))
    w2 = np.empty(2 * L)
    orthant_nt_scaling(s, z, w2, None)
    np.testing.assert_array_equal(w2, w)
    y = np.where(rng.random(L) < 0.5, -1.0, 1.0)
    gam = rng.random(L)
    gam[::4] = 0.0
    d, rho, c = margin_weights(w, gam, y)
    np.testing.assert_array_equal(d, 1.0 / w**2)
    dm, dx = d[:L], d[L:]
    np.testing.assert_array_equal(rho, dm * dx / (dm + dx))
    np.testing.assert_array_equal(c, rho * gam * y)
    xw, xi, b = rng.normal(size=L), rng.random(L), -0.3
    for k in (0, 1, 3):
        gidx = rng.integers(0, max(k, 1), L).astype(np.intp)
        t = rng.random(k)
        zm, zx = np.full(L, np.nan), np.full(L, np.nan)
        margin_rows_gx(xw, y, b, xi, gam, t, gidx, zm, zx)
        np.testing.assert_array_equal(zm, -(y * (xw + b)) - xi + (gam * t[gidx] if k else 0.0))
        np.testing.assert_array_equal(zx, -xi)


def test_group_sums_and_matvec_pair():
    L, n, k = 500, 13, 4
    rng, X, y, gidx = _rows(L, n, k, seed=1)
    v, w = rng.normal(size=L), rng.normal(size=n)
    v[::3] = 0.0
    ref = np.zeros((k, n))
    np.add.at(ref, gidx, v[:, None] * X)
    scale = np.abs(X).max() * np.abs(v).sum()
    np.testing.assert_allclose(group_row_sums(X, v, gidx, k), ref, atol=1e-13 * scale)
    xw, xtv = matvec_pair(X, w, v)
    np.testing.assert_allclose(xw, X @ w, atol=1e-13 * np.abs(X).max() * np.abs(w).sum())
    np.testing.assert_allclose(xtv, X.T @ v, atol=1e-13 * scale)


@pytest.mark.parametrize("k", [1, 4])
def test_matvec_pair_groups_is_both_passes_bitwise(k):
    """The residual's pass with the group sums of the factorisation: the same sums in the same order as
    ``matvec_pair`` and ``group_row_sums`` (rows with ``u_i = 0`` included), so the same bits."""
    L, n = 500, 13
    rng, X, y, gidx = _rows(L, n, k, seed=5)
    w, v, u = rng.normal(size=n), rng.normal(size=L), rng.normal(size=L)
    u[::3] = 0.0
    xw, xtv, sums = matvec_pair_groups(X, w, v, u, gidx, k)
    xw0, xtv0 = matvec_pair(X, w, v)
    np.testing.assert_array_equal(xw, xw0)
    np.testing.assert_array_equal(xtv, xtv0)
    np.testing.assert_array_equal(sums, group_row_sums(X, u, gidx, k))
    ref = np.zeros((k, n))
    np.add.at(ref, gidx, u[:, None] * X)
    np.testing.assert_allclose(sums, ref, atol=1e-13 * np.abs(X).max() * np.abs(u).sum())


def test_orthant_max_step_is_the_ratio_test():
    rng = np.random.default_rng(2)
    for _ in range(20):
        x, d = rng.random(50) + 1e-3, rng.normal(size=50)
        neg = d < 0
        assert orthant_max_step(x, d) == pytest.approx(np.min(-x[neg] / d[neg]), rel=1e-15)
    assert orthant_max_step(np.ones(5), np.abs(rng.normal(size=5))) == np.inf
    assert orthant_max_step(np.ones(5), np.zeros(5)) == np.inf


@pytest.mark.parametrize("k", [0, 2, "L"])
def test_newton_solve_halves_match_the_elementwise_formulas(k):
    L, n = 400, 11
    rng, X, y, gidx = _rows(L, n, 1 if k == 0 else k, seed=3)
    kk = 1 if k == 0 else (L if k == "L" else k)
    gam = np.zeros(L) if k == 0 else rng.random(L)
    dm, dx = 10.0 ** rng.uniform(-6, 6, L), 10.0 ** rng.uniform(-6, 6, L)
    rho = dm * dx / (dm + dx)
    bzm, bxi, bzx = rng.normal(size=L), rng.normal(size=L), rng.normal(size=L)
    c, gsum = np.empty(L), np.zeros(kk)
    xtyc, syc = robust_solve_rows_in(X, y, gam, gidx, rho, dm, dx, bzm, bxi, bzx, c, gsum)
    c_ref = -rho * bzm - dm * (bxi - dx * bzx) / (dm + dx)
    np.testing.assert_allclose(c, c_ref, rtol=1e-14)
    np.testing.assert_allclose(gsum, np.bincount(gidx, gam * c_ref, minlength=kk), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(xtyc, X.T @ (y * c_ref), rtol=1e-12, atol=1e-12 * np.abs(X.T).max() * np.abs(c).sum())
    assert syc == pytest.approx(float(np.sum(y * c_ref)), rel=1e-12, abs=1e-12 * np.abs(c).sum())
    dw, db, dt = rng.normal(size=n), 0.7, rng.normal(size=kk)
    dxi, zm, zx = np.empty(L), np.empty(L), np.empty(L)
    robust_solve_rows_out(X, y, gam, gidx, rho, dm, dx, bzm, bxi, bzx, c, dw, db, dt, dxi, zm, zx)
    a = y * (X @ dw + db)
    g = gam * dt[gidx]
    dxi_ref = (bxi - dx * bzx - dm * bzm - dm * (a - g)) / (dm + dx)
    tol = 1e-12 * (np.abs(X).max() * np.abs(dw).sum() + 1.0)
    np.testing.assert_allclose(dxi, dxi_ref, rtol=1e-10, atol=tol)
    np.testing.assert_allclose(zm, rho * (g - a) + c, rtol=1e-10, atol=tol * rho.max())
    np.testing.assert_allclose(zx, dx * (-dxi_ref - bzx), rtol=1e-10, atol=tol * dx.max())


def test_kernels_divide_by_zero_as_numpy_does():
    """A cone row on its boundary gives inf or nan (the engine then reports "numerical_error"), never a
    ZeroDivisionError (numba's default error model raises one; pinned: a run without refinement crashed)."""
    from rsvm_conic.solvers.ipm.cone_loops import soc_jdiv

    assert orthant_max_step(np.zeros(3), -np.ones(3)) == 0.0
    lam = np.array([[1.0, 1.0, 0.0]])  # det(lam) = 0
    out = np.empty((1, 3))
    with np.errstate(all="ignore"):
        soc_jdiv(lam, np.array([[1.0, 0.5, 0.0]]), out)
    assert not np.all(np.isfinite(out))


def _cone_rows(m, d, rng):
    """Interior cone rows: an NT point ``wbar`` (``wbar'J wbar = 1``) and its factor."""
    w1 = rng.normal(size=(m, d - 1)) * 10.0 ** rng.uniform(-3, 2, (m, 1))
    wbar = np.column_stack([np.sqrt(1.0 + np.sum(w1**2, axis=1)), w1])
    return wbar, 10.0 ** rng.uniform(-2, 2, m)


def test_soc_apply_sq_is_two_applications_bit_for_bit():
    from rsvm_conic.solvers.ipm.cone_loops import soc_apply, soc_apply_sq

    rng = np.random.default_rng(4)
    wbar, beta = _cone_rows(60, 7, rng)
    V = rng.normal(size=(60, 7))
    for inverse in (False, True):
        once, twice, fused = np.empty_like(V), np.empty_like(V), np.empty_like(V)
        soc_apply(wbar, beta, V, inverse, once)
        soc_apply(wbar, beta, once, inverse, twice)
        soc_apply_sq(wbar, beta, V, inverse, fused)
        np.testing.assert_array_equal(fused, twice)
    # and W^2 is the explicit beta^2 (2 wbar wbar' - J)
    J = np.diag(np.r_[1.0, -np.ones(6)])
    ref = np.stack([b**2 * (2.0 * np.outer(w, w) - J) @ v for w, b, v in zip(wbar, beta, V)])
    fused = np.empty_like(V)
    soc_apply_sq(wbar, beta, V, False, fused)
    np.testing.assert_allclose(fused, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())


def test_ninf_is_the_max_abs_with_nan_propagating():
    from rsvm_conic.solvers.ipm.cone_loops import ninf

    rng = np.random.default_rng(5)
    v = rng.normal(size=1001)
    assert ninf(v) == np.max(np.abs(v))
    assert ninf(np.zeros(0)) == 0.0
    v[7] = -np.inf
    assert ninf(v) == np.inf
    v[500] = np.nan
    assert np.isnan(ninf(v))
    v[0] = np.nan  # first entry NaN: not hidden by a later larger one
    v[7] = 0.0
    assert np.isnan(ninf(v))
    # the maximum is taken on bit patterns: signed zeros, subnormals, a negative NaN, strided input
    assert ninf(np.array([-0.0, 0.0])) == 0.0
    assert ninf(np.array([5e-324, -1e-310, 0.0])) == 1e-310
    assert np.isnan(ninf(np.array([1.0, -np.nan, -np.inf])))
    w = rng.normal(size=999)
    assert ninf(w[::3]) == np.max(np.abs(w[::3]))


@pytest.mark.parametrize("factored", [False, True])
@pytest.mark.parametrize("k", [1, 3, 40])
def test_cone_rhs_and_back_rows_match_the_full_factor_formulas(k, factored):
    """The compiled cone passes (diagonal factors) against ConeTerms' numpy path on the same factors written
    as full matrices: the reduced right-hand side, ``r0``, ``dt`` and the cone rows of ``dz``; the group means
    given as an array (grouped cones) or factored as ``(scale_g M_g, last_g)`` (per-sample cones: ``M = X``)."""
    from rsvm_conic.solvers.ipm.kkt import ConeTerms, GroupMeans

    rng = np.random.default_rng(6)
    n = 8
    F = rng.uniform(0.1, 2.0, (k, n))
    wbar, beta = _cone_rows(k, n + 1, rng)
    diag, full = ConeTerms(F, True, beta, wbar), ConeTerms(np.stack([np.diag(f) for f in F]), False, beta, wbar)
    BZ = rng.normal(size=(k, n + 1))
    if factored:
        mg = GroupMeans(rng.normal(size=(k, n)), rng.normal(size=k), rng.normal(size=k))
        dense = np.column_stack([mg.scale[:, None] * mg.M, mg.last])
        np.testing.assert_array_equal(mg.dense(n), dense)
    else:
        mg = GroupMeans.of(rng.normal(size=(k, n + 1)))
    psi0, ag = rng.normal(size=k), rng.uniform(0.1, 10.0, k)
    hg = ag + diag.D00
    base = rng.normal(size=n + 1)
    rhs_d, rhs_f = base.copy(), base.copy()
    r0_d, r0_f = diag.reduced_rhs(BZ, psi0, ag, hg, mg, rhs_d), full.reduced_rhs(BZ, psi0, ag, hg, mg, rhs_f)
    np.testing.assert_allclose(r0_d, r0_f, rtol=1e-12, atol=1e-12 * np.abs(r0_f).max())
    np.testing.assert_allclose(rhs_d, rhs_f, rtol=1e-10, atol=1e-11 * (np.abs(rhs_f).max() + k))
    du = rng.normal(size=n + 1)
    Z_d, Z_f = np.empty((k, n + 1)), np.empty((k, n + 1))
    dt_d, dt_f = diag.back(BZ, psi0, r0_f, ag, hg, mg, du, Z_d), full.back(BZ, psi0, r0_f, ag, hg, mg, du, Z_f)
    np.testing.assert_allclose(dt_d, dt_f, rtol=1e-12, atol=1e-12 * np.abs(dt_f).max())
    np.testing.assert_allclose(Z_d, Z_f, rtol=1e-9, atol=1e-10 * np.abs(Z_f).max())


@pytest.mark.parametrize("k", [1, 40, 8195])  # 8195: two row blocks of the rank-k updates, the last one short
def test_cone_schur_terms_match_the_full_factor_formulas(k):
    """ConeTerms.add_schur with diagonal factors (the compiled row blocks of both rank-k updates, the group means
    factored as per-sample cones give them) against the numpy path on the same factors written as full matrices,
    and against the terms summed cone by cone."""
    from rsvm_conic.solvers.ipm.kkt import ConeTerms, GroupMeans

    rng = np.random.default_rng(16)
    n = 6
    F = rng.uniform(0.1, 2.0, (k, n))
    wbar, beta = _cone_rows(k, n + 1, rng)
    full_F = np.stack([np.diag(f) for f in F])
    diag, full = ConeTerms(F, True, beta, wbar), ConeTerms(full_F, False, beta, wbar)
    mg = GroupMeans(rng.normal(size=(k, n)), rng.normal(size=k), rng.normal(size=k))
    wts = rng.uniform(0.1, 3.0, k)
    S0 = rng.normal(size=(n + 1, n + 1))
    S0 = S0 + S0.T
    S_d, S_f = S0.copy(), S0.copy()
    diag.add_schur(S_d, mg, wts)
    full.add_schur(S_f, mg, wts, np.einsum("kij,klj->kil", full_F, full_F))
    # the module docstring's terms, cone by cone
    w0, w1 = wbar[:, 0], wbar[:, 1:]
    den = 2 * w0**2 - 1
    m = np.column_stack([mg.scale[:, None] * mg.M, mg.last])
    q = np.zeros((k, n + 1))
    q[:, :n] = (-2 * w0 / den)[:, None] * F * w1
    ref = S0.copy()
    ref[:n, :n] += np.diag(np.einsum("k,kj->j", beta**-2.0, F**2))
    Aw = F * w1
    ref[:n, :n] -= np.einsum("k,kj,kl->jl", 2 * beta**-2.0 / den, Aw, Aw)
    ref += np.einsum("k,kj,kl->jl", wts, m + q, m + q)
    scale = np.abs(ref).max()
    np.testing.assert_allclose(S_d, ref, rtol=0, atol=1e-12 * scale * max(1.0, np.sqrt(k)))
    np.testing.assert_allclose(S_f, ref, rtol=0, atol=1e-12 * scale * max(1.0, np.sqrt(k)))
    np.testing.assert_array_equal(S_d, S_d.T)


def test_step_into_is_the_step_and_the_interior_test():
    from rsvm_conic.solvers.ipm.engine import ConeSpec, interior, step_into

    rng = np.random.default_rng(7)
    cones = ConeSpec(5, [(4, 3), (2, 6)])
    x = cones.identity() * 3.0 + 0.1 * rng.normal(size=cones.size)
    assert interior(cones, x)
    seen = set()
    for a in (0.0, 0.5, 1.0, 2.0, 4.0, 8.0):
        d = rng.normal(size=cones.size)
        out, inside = step_into(cones, x, d, a)
        np.testing.assert_array_equal(out, x + a * d)
        assert inside == interior(cones, x + a * d)
        seen.add(inside)
    assert seen == {True, False}
    # a cone row exactly on its boundary (det = 0) is outside, as for interior()
    on_boundary = x.copy()
    on_boundary[5:8] = [1.0, 1.0, 0.0]
    assert not step_into(cones, on_boundary, np.zeros(cones.size), 0.0)[1]
    assert step_into(cones, x, np.zeros(cones.size), 0.0)[1]


def _interior_pair(cones, rng):
    """A random interior pair (s, z) of ``cones`` and its NT scaling."""
    from rsvm_conic.solvers.ipm.engine import Scaling

    from rsvm_conic.solvers.ipm.engine import interior

    s, z = rng.normal(size=cones.size), rng.normal(size=cones.size)
    for v in (s, z):  # positive orthant part; each cone row's head above the norm of its tail (wide cones too)
        vl, vq = cones.split(v)
        vl[:] = np.abs(vl) + 0.1
        for V in vq:
            V[:, 0] = np.linalg.norm(V[:, 1:], axis=1) + rng.uniform(0.1, 2.0, V.shape[0])
    assert interior(cones, s) and interior(cones, z)
    sc = Scaling(cones, s, z)
    assert all(np.all(np.isfinite(a)) for a in [sc.w_l, *sc.wbar, *sc.beta])
    return s, z, sc


def _assert_rounding(actual, desired, scale=None, ulps=64):
    """``actual`` equals ``desired`` up to ``ulps`` units of rounding of ``scale`` (default ``max |desired|``): the
    fused kernels sum their row products in any order, so they agree with the separate operations to rounding."""
    actual, desired = np.asarray(actual, float), np.asarray(desired, float)
    scale = max(float(np.max(np.abs(desired), initial=0.0)), 1e-300) if scale is None else scale
    np.testing.assert_allclose(actual, desired, rtol=0, atol=ulps * np.finfo(float).eps * scale)


def test_fused_driver_steps_are_the_separate_operations():
    """The interior point's fused passes (the complementarity right-hand side, its division by lam and -rz - W u,
    rz + W^2 dz, the scaled directions with their step lengths, the primal residual with three norms) agree with the
    operations they replace (jprod, negation, subtraction, shift, jdiv, apply and subtraction; apply_sq and the sum;
    apply, subtraction and two max_step calls; two numpy sums and three ninf) to rounding, on cones of widths 2, 3
    and 51; the predictor's ``u = lam \\ (-lam o lam)`` is ``-lam`` exactly.  The refinement's residual
    ``bz - G dx + W^2 dz`` with its norm ``||W^-1 rz||_inf``, and ``||W^-1 bz||_inf``, equal the separate
    operations (subtraction, add_apply_sq, apply and ninf) bit for bit."""
    from rsvm_conic.solvers.ipm.engine import ConeSpec, jdiv, jprod, max_step, newton_rhs, scaled_directions
    from rsvm_conic.solvers.ipm.cone_loops import ninf, residual_norms

    rng = np.random.default_rng(8)
    cones = ConeSpec(7, [(5, 2), (4, 3), (30, 51)])
    assert cones.degree == 46
    s, z, sc = _interior_pair(cones, rng)
    lam = sc.apply(z)
    dsa, dza = rng.normal(size=cones.size), rng.normal(size=cones.size)
    shift = 0.37
    # predictor: u = lam \ (-lam o lam) = -lam; corrector: lam \ (-lam o lam - dsa o dza + shift e); both with
    # bz = -rz - W u
    m_lam_sq = -jprod(cones, lam, lam)
    rz = rng.normal(size=cones.size)
    m_rz = -rz
    u, bz = newton_rhs(cones, sc, lam, None, None, 0.0, rz, np.empty(cones.size), np.empty(cones.size))
    np.testing.assert_array_equal(u, -lam)
    _assert_rounding(u, jdiv(cones, lam, m_lam_sq))
    _assert_rounding(bz, m_rz - sc.apply(u))
    rl_ref = m_lam_sq - jprod(cones, dsa, dza)
    rl_ref_l, rl_ref_q = cones.split(rl_ref)
    rl_ref_l += shift
    for Q in rl_ref_q:
        Q[:, 0] += shift
    u, bz = newton_rhs(cones, sc, lam, dsa, dza, shift, rz, np.empty(cones.size), np.empty(cones.size))
    _assert_rounding(u, jdiv(cones, lam, rl_ref))
    _assert_rounding(jprod(cones, lam, u), rl_ref)  # it solves lam o u = r
    _assert_rounding(bz, m_rz - sc.apply(u))
    # a refinement's residual rz + W^2 dz
    np.testing.assert_array_equal(sc.add_apply_sq(u, m_rz.copy()), m_rz + sc.apply_sq(u))
    # the refinement's residual bz - G dx + W^2 dz over G dx, with its norm ||W^-1 rz||_inf, and ||W^-1 bz||_inf
    gdx, dz = rng.normal(size=cones.size), rng.normal(size=cones.size)
    ref = sc.add_apply_sq(dz, bz - gdx)
    got = gdx.copy()
    nrm = sc.kkt_rz(bz, dz, got)
    np.testing.assert_array_equal(got, ref)
    assert nrm == ninf(sc.apply(ref, inverse=True)) > 0
    assert sc.inv_norm(bz) == ninf(sc.apply(bz, inverse=True)) > 0
    bad = dz.copy()
    bad[-3] = np.nan  # a NaN in the last cone row's dz shows in the norm
    assert np.isnan(sc.kkt_rz(bz, bad, gdx.copy())) and np.isnan(sc.inv_norm(bad))
    # dzt = W dz, dst = u - dzt and the step length along both
    orthant, socs = ConeSpec(cones.n_l), ConeSpec(0, cones.soc)
    binding = set()
    for _ in range(60):  # scales drawn so that each of the four limits (orthant / cones, dst / dzt) binds somewhere
        uu, dz = (
            np.repeat(10.0 ** rng.uniform(-3, 1, 2), [7, cones.size - 7]) * rng.normal(size=cones.size)
            for _ in range(2)
        )
        dzt_ref = sc.apply(dz)
        dst_ref = uu - dzt_ref
        a_ref = min(max_step(cones, lam, dst_ref), max_step(cones, lam, dzt_ref))
        dzt = np.empty(cones.size)
        a = scaled_directions(cones, sc, lam, uu, dz, dzt)
        _assert_rounding(dzt, dzt_ref)
        _assert_rounding(uu, dst_ref, scale=max(np.max(np.abs(dst_ref)), np.max(np.abs(dzt_ref))))
        assert a == pytest.approx(a_ref, rel=1e-10)
        parts = {
            (name, which): max_step(part, lam[sl], v[sl])
            for name, part, sl in (("orthant", orthant, slice(0, 7)), ("cones", socs, slice(7, None)))
            for which, v in (("dst", dst_ref), ("dzt", dzt_ref))
        }
        binding.add(min(parts, key=parts.get))
    assert len(binding) == 4
    zero = np.zeros(cones.size)  # directions that never leave the cone: no limit
    assert scaled_directions(cones, sc, lam, zero.copy(), zero, np.empty(cones.size)) == np.inf
    # rz = Gx + s - h and ||rz||, ||s||, ||z||
    Gx, h = rng.normal(size=cones.size), rng.normal(size=cones.size)
    rz = Gx.copy()
    norms = residual_norms(rz, s, h, z)
    np.testing.assert_array_equal(rz, Gx + s - h)
    assert norms == (ninf(Gx + s - h), ninf(s), ninf(z))
    for where in range(3):  # a NaN in any operand gives NaN in its norm(s) only
        vs = [Gx.copy(), s.copy(), z.copy()]
        vs[where][9] = np.nan
        got = residual_norms(vs[0], vs[1], h, vs[2])
        assert [np.isnan(v) for v in got] == [where in (0, 1), where == 1, where == 2]


def test_scaling_with_lam_and_the_scaled_step_are_the_separate_operations():
    """``Scaling.update(s, z, lam)`` writes the scaling of ``Scaling(cones, s, z)`` bit for bit and ``lam = W z``
    (:meth:`Scaling.apply`) to rounding; the scaling is the NT scaling (``W^-1 s = W z``, ``wbar' J wbar = 1``); the
    step along ``W d`` (``step_into(..., scaling=)``) is the step along the stored ``W d`` to rounding, with the same
    interior test, on steps that stay inside and steps that leave (cones of widths 2, 3 and 51)."""
    from rsvm_conic.solvers.ipm.engine import ConeSpec, Scaling, interior, step_into

    rng = np.random.default_rng(9)
    cones = ConeSpec(7, [(5, 2), (4, 3), (30, 51)])
    s, z, sc = _interior_pair(cones, rng)
    lam = np.empty(cones.size)
    fused = Scaling(cones).update(s, z, lam)
    np.testing.assert_array_equal(fused.w_l, sc.w_l)
    for a, b in zip(fused.wbar + fused.beta, sc.wbar + sc.beta):
        np.testing.assert_array_equal(a, b)
    _assert_rounding(lam, sc.apply(z))
    _assert_rounding(sc.apply(s, inverse=True), lam)  # the NT scaling: W^-1 s = W z
    for wb in sc.wbar:
        _assert_rounding(wb[:, 0] ** 2 - np.sum(wb[:, 1:] ** 2, axis=1), np.ones(len(wb)), scale=np.max(wb**2))
    seen = set()
    for scale in (1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0):
        d = scale * rng.normal(size=cones.size)
        for a in (0.1, 1.0):
            out, inside = step_into(cones, s, d, a, scaling=sc)
            ref, ref_inside = step_into(cones, s, sc.apply(d), a)
            _assert_rounding(out, ref)
            assert inside == ref_inside == interior(cones, out)
            seen.add(inside)
    assert seen == {True, False}


# ------------------------------------------------------------------------------- the small problems' numpy path
class _NumpyWithoutAddAt:
    """numpy, except that ``np.add.at`` raises: the numpy path's group sums must be vectorised (``np.add.at`` is
    unbuffered and was the largest single cost of a small grouped-cone fit)."""

    class _Add:
        def __call__(self, *args, **kwargs):
            return np.add(*args, **kwargs)

        def __getattr__(self, name):
            if name == "at":
                raise AssertionError("np.add.at on the numpy path")
            return getattr(np.add, name)

    def __getattr__(self, name):
        return self._Add() if name == "add" else getattr(np, name)


@pytest.mark.parametrize(("k", "diagonal"), [(2, False), (2, True), (40, True)])
def test_small_grouped_fit_on_the_numpy_path_sums_groups_without_add_at(monkeypatch, k, diagonal):
    """A grouped-cone robust SVM small enough for the numpy path (k below and above the indicator product's group
    limit) runs without ``np.add.at`` and reaches the compiled path's optimum, to a tolerance scaled to it."""
    from rsvm_conic.solvers.ipm import cone_loops, cone_loops_numpy
    from rsvm_conic.solvers.ipm.robust_svm import robust_svm_ipm

    L, n = 300, 6
    rng, X, y, gidx = _rows(L, n, k, seed=17)
    X /= np.abs(X).max(axis=0)
    F = rng.uniform(0.05, 0.3, (k, n)) if diagonal else rng.normal(scale=0.1, size=(k, n, n))
    gam = rng.uniform(0.5, 1.5, L)
    assert X.size < cone_loops.NUMPY_BELOW
    with monkeypatch.context() as m:
        m.setattr(cone_loops, "NUMPY_BELOW", 0)  # the reference: the compiled kernels
        ref, ref_info = robust_svm_ipm(X, y, 1.0, gam, F, diagonal, gidx)
    monkeypatch.setattr(cone_loops_numpy, "np", _NumpyWithoutAddAt())
    vals, info = robust_svm_ipm(X, y, 1.0, gam, F, diagonal, gidx)
    assert info["status"] == ref_info["status"] == "optimal"
    assert info["iterations"] == ref_info["iterations"]
    assert info["pcost"] == pytest.approx(ref_info["pcost"], rel=1e-7)
    scale = max(1.0, float(np.abs(ref["w"]).max()))
    np.testing.assert_allclose(vals["w"], ref["w"], atol=1e-6 * scale)


def test_cholesky_helpers_are_scipys_factor_and_solve_bit_for_bit():
    """The reduced KKT matrix's factor and solves by LAPACK directly: scipy's cho_factor / cho_solve bits, and the
    same failures (LinAlgError when not positive definite, ValueError for NaN or inf, which the interior point
    turns into a numerical error)."""
    import scipy.linalg as sla

    from rsvm_conic.solvers.ipm.kkt import cholesky_factor, cholesky_solve

    rng = np.random.default_rng(3)
    for m, s in [(1, 1.0), (7, 1e3), (31, 1e-3), (101, 1.0)]:
        A = rng.normal(size=(2 * m + 3, m)) * s
        S, b = A.T @ A + s * s * np.eye(m), rng.normal(size=m) * s
        c, lower = sla.cho_factor(S, lower=False)
        mine = cholesky_factor(S)
        np.testing.assert_array_equal(np.triu(mine), np.triu(c))
        np.testing.assert_array_equal(cholesky_solve(mine, b), sla.cho_solve((c, lower), b))
    with pytest.raises(np.linalg.LinAlgError):
        cholesky_factor(np.diag([1.0, -1.0]))
    with pytest.raises(ValueError):
        cholesky_factor(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    with pytest.raises(ValueError):
        cholesky_solve(np.eye(2), np.array([1.0, np.inf]))
