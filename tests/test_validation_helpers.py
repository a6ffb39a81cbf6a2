"""The one-helper-per-check validators of rsvm_conic._validation and the entry points routed through them."""

import numpy as np
import pytest

from rsvm_conic._validation import (
    check_binary_labels,
    check_codes,
    check_psd,
    check_symmetric,
    check_two_classes,
    encode_labels,
    low_rank_psd_ok,
    psd_eigh,
    psd_factor,
    symmetric_part,
)


def _psd(n=12, r=7, seed=0):
    A = np.random.default_rng(seed).normal(size=(n, r))
    return A @ A.T


def test_check_two_classes():
    np.testing.assert_array_equal(check_two_classes(["b", "a", "b"]), ["a", "b"])
    with pytest.raises(ValueError, match=r"single class \(.a.\).*Pass samples of at least two classes"):
        check_two_classes(["a", "a"])
    with pytest.raises(ValueError, match="codes holds a single class"):
        check_two_classes([0, 0], "codes", classes=np.arange(1))
    with pytest.raises(ValueError, match="forces alpha = 0"):
        check_two_classes(np.ones(4), reason="y'alpha = 0 then forces alpha = 0")


@pytest.mark.parametrize(
    "call",
    [
        lambda y: check_binary_labels(y, y.size),
        lambda y: encode_labels(y),
        lambda y: check_codes(np.zeros(y.size, int), y.size),
        lambda y: __import__("rsvm_conic.uncertainty.kernel_matrix", fromlist=["x"]).validate_kernel_problem(
            np.eye(y.size), y, np.zeros((y.size, y.size)), 1.0, 1.0
        ),
        lambda y: __import__("rsvm_conic.solvers.rsvm_socp", fromlist=["x"]).solve_rsvm_socp(
            np.eye(y.size), np.zeros((y.size, y.size)), y, 1.0, 1.0
        ),
    ],
)
def test_every_single_class_check_says_the_same(call):
    with pytest.raises(ValueError, match="single class .*Pass samples of at least two classes"):
        call(np.ones(6))


def test_check_symmetric_and_psd():
    S = _psd()
    np.testing.assert_array_equal(check_symmetric(S), S)
    bad = S.copy()
    bad[0, 1] += 1.0
    with pytest.raises(ValueError, match="not symmetric"):
        check_symmetric(bad, "S")
    with pytest.raises(ValueError, match="block 1"):
        check_symmetric(np.stack([S, bad]), "S")
    check_psd(S)  # rank deficient but PSD
    check_psd(S - 1e-12 * np.eye(12))  # round-off negatives pass
    with pytest.raises(ValueError, match="not positive semidefinite.*negative eigenvalue.*do this"):
        check_psd(S - 0.1 * np.eye(12), "S", hint="do this")
    with pytest.raises(ValueError, match=r"\(block 1\) is not positive semidefinite"):
        check_psd(np.stack([S, S - 0.1 * np.eye(12)]), "S")


def test_large_symmetric_check_by_blocks_is_the_whole_array_expression():
    """check_symmetric of one large matrix (row blocks, no n x n temporaries): the same bits as (S + S^T) / 2 and
    the same verdicts, asymmetry threshold included."""
    rng = np.random.default_rng(3)
    n = 700  # >= 2 blocks of 256, the last one partial
    S = _psd(n, 5, seed=1)
    S += 1e-12 * rng.standard_normal((n, n))  # asymmetric at round-off level: accepted and symmetrised
    out = check_symmetric(S, rtol=1e-8)
    np.testing.assert_array_equal(out, 0.5 * (S + S.T))
    bad = S.copy()
    bad[600, 3] += 1e-6 * np.abs(S).max()
    with pytest.raises(ValueError, match="S is not symmetric"):
        check_symmetric(bad, "S", rtol=1e-8)
    check_symmetric(bad, "S", rtol=1e-5)


@pytest.mark.parametrize("n", [1, 2, 127, 128, 129, 300])
def test_symmetry_scan_is_the_numpy_reductions(n):
    """The compiled one-pass scan: max |S - S^T|, max S, min S (every entry, tile edges included) and whether every
    entry is finite, against numpy; a NaN or an inf anywhere (diagonal, either triangle, a tile's edge) is seen."""
    from rsvm_conic._validation import _SCAN_TILE, _symmetry_scan

    rng = np.random.default_rng(n)
    S = rng.standard_normal((n, n))
    for M in (S, 0.5 * (S + S.T)):
        asym, smax, smin, finite = _symmetry_scan(M, _SCAN_TILE)
        assert finite
        assert asym == np.max(np.abs(M - M.T)) and smax == M.max() and smin == M.min()
    for i, j in {(0, 0), (n - 1, 0), (0, n - 1), (n // 2, n // 3), (n - 1, n - 1)}:
        for bad in (np.nan, np.inf, -np.inf):
            M = S.copy()
            M[i, j] = bad
            assert not _symmetry_scan(M, _SCAN_TILE)[3]


def test_exactly_symmetric_matrix_is_returned_as_is():
    """A finite, exactly symmetric, contiguous matrix equals its symmetrisation bit for bit, so check_symmetric and
    symmetric_part return it without a copy (Fortran order too); anything else gets the symmetrised copy, with
    the same bits as (S + S^T) / 2 (NaN included), and return_scale gives max(1, max |S_sym|) of what is returned."""
    S = _psd(40, 6, seed=2)
    S = 0.5 * (S + S.T)
    assert check_symmetric(S) is S and symmetric_part(S) is S
    F = np.asfortranarray(S)
    assert check_symmetric(F) is F and symmetric_part(F) is F
    out, scale = check_symmetric(S, return_scale=True)
    assert out is S and scale == max(1.0, np.abs(S).max())
    small = 1e-3 * S
    assert check_symmetric(small, return_scale=True)[1] == 1.0
    view = np.zeros((80, 80))
    view[::2, ::2] = S  # a strided view: symmetric, not contiguous
    got = check_symmetric(view[::2, ::2])
    assert got is not S and got.flags.c_contiguous
    np.testing.assert_array_equal(got, S)
    near = S.copy()
    near[3, 5] += 1e-12
    for got in (check_symmetric(near), symmetric_part(near)):
        assert got is not near
        np.testing.assert_array_equal(got, 0.5 * (near + near.T))
    out, scale = check_symmetric(near, return_scale=True)
    assert scale == max(1.0, np.abs(out).max())
    nan = S.copy()
    nan[1, 2] = np.nan
    for got in (check_symmetric(nan), symmetric_part(nan)):
        assert got is not nan
        np.testing.assert_array_equal(got, 0.5 * (nan + nan.T))


def test_low_rank_residual_is_the_frobenius_norm():
    """The compiled residual of low_rank_psd_ok: ||S - R'R||_F^2 and max |S| against numpy (relative 1e-12: its sums
    are reordered), NaN propagated."""
    from rsvm_conic._validation import _low_rank_residual

    rng = np.random.default_rng(5)
    for n, r in ((1, 1), (130, 3), (257, 8)):
        S = rng.standard_normal((n, n))
        R = rng.standard_normal((r, n))
        sq, smax = _low_rank_residual(S, R)
        ref = np.sum((S - R.T @ R) ** 2)
        assert abs(sq - ref) <= 1e-12 * ref and smax == np.abs(S).max()
        S[n // 2, 0] = np.nan
        assert np.isnan(_low_rank_residual(S, R)[0])


@pytest.mark.parametrize("seed", [0] + [pytest.param(seed, marks=pytest.mark.slow) for seed in (1, 2, 3)])
def test_low_rank_psd_proof_agrees_with_the_eigenvalues(seed):
    """low_rank_psd_ok proves lambda_min >= -slack only where it holds (eigvalsh decides), for PSD low-rank
    matrices (proved), indefinite ones with small diagonals (never proved) and full-rank ones (not attempted
    past max_rank); check_psd through it gives the same verdicts as before."""
    rng = np.random.default_rng(seed)
    n = 300
    X = rng.standard_normal((n, 1 + seed))
    K = X @ X.T
    slack = 1e-8 * n * np.abs(K).max()
    assert low_rank_psd_ok(K, slack)  # rank 1 + seed
    assert low_rank_psd_ok(np.zeros((n, n)), 0.0)
    u = rng.standard_normal(n)
    v = u + 1e-3 * rng.standard_normal(n)
    bad = K + 10.0 * slack * (np.outer(u, v) + np.outer(v, u) - 2.0 * np.outer(u, u))  # indefinite, tiny diagonal
    assert np.linalg.eigvalsh(bad)[0] < -slack
    assert not low_rank_psd_ok(bad, slack)
    with pytest.raises(ValueError, match="not positive semidefinite"):
        check_psd(bad, neg_tol=1e-8 * n)
    sharp = K - 1.2 * slack * np.outer(u, u) / (u @ u)  # ||E||_F ~ 1.2 slack: a proof that shrank it would lie
    assert np.linalg.eigvalsh(sharp)[0] < -slack
    assert not low_rank_psd_ok(sharp, slack)
    barely = K - 0.5 * slack * np.outer(u, u) / (u @ u)  # lambda_min = -slack / 2: PSD to the slack
    assert np.linalg.eigvalsh(barely)[0] >= -slack
    check_psd(barely, neg_tol=1e-8 * n)
    full = _psd(n, n, seed=seed)  # full rank: more directions than max_rank, nothing proved, Cholesky decides
    assert not low_rank_psd_ok(full, 1e-8 * n * np.abs(full).max())
    check_psd(full, neg_tol=1e-8 * n)


def test_psd_eigh_and_factor():
    S = _psd()
    vals, vecs = psd_eigh(S, drop_tol=1e-10)
    assert vals.shape == (7,) and vecs.shape == (12, 7) and np.all(vals > 0)
    L, U, lam = psd_factor(S, drop_tol=1e-10, return_eig=True)
    np.testing.assert_allclose(L @ L.T, S, atol=1e-10)
    np.testing.assert_array_equal(lam, vals)
    R = psd_factor(S, form="sqrt")
    np.testing.assert_allclose(R, R.T, atol=1e-12)
    np.testing.assert_allclose(R @ R, S, atol=1e-9)
    indef = S - np.eye(12)
    with pytest.raises(ValueError, match="negative eigenvalue"):
        psd_factor(indef)
    v_clip, _ = psd_eigh(indef, on_negative="clip")  # the projection: never raises
    v_keep, _ = psd_eigh(indef, on_negative="keep")
    assert v_keep[0] < 0 and v_clip[0] == 0.0
    np.testing.assert_array_equal(v_clip, np.maximum(v_keep, 0.0))
    # absolute floor: -1e-9 passes with neg_atol = 1e-8 on a tiny matrix, not without it
    tiny = np.diag([1e-9, -1e-9])
    psd_eigh(tiny, neg_tol=1e-8, neg_atol=1e-8)
    with pytest.raises(ValueError):
        psd_eigh(tiny, neg_tol=1e-8)


def test_ww_kernel_dual_trusted_inputs_and_shared_factor():
    from rsvm_conic.formulations.multiclass_ww import WestonWatkinsKernelDual
    from rsvm_conic.solvers.multiclass.certificate import gram_factor as ww_factor

    rng = np.random.default_rng(3)
    X = rng.normal(size=(24, 3))
    K = np.exp(-0.5 * np.sum((X[:, None] - X[None]) ** 2, axis=-1))
    codes = np.arange(24) % 3
    a = WestonWatkinsKernelDual(K, codes, 3, 1.0).solve("clarabel")
    b = WestonWatkinsKernelDual(K, codes, 3, 1.0, check_input=False, factor=ww_factor(K)[0]).solve("clarabel")
    np.testing.assert_array_equal(a["beta"], b["beta"])
    with pytest.raises(ValueError, match="single class"):
        WestonWatkinsKernelDual(K, np.zeros(24, int), None, 1.0)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda X, y, Xv, yv: _feature(X, y, Gamma=-1.0), r"Gamma must hold 30 nonnegative numbers"),
        (lambda X, y, Xv, yv: _feature(X, y, rotations=(np.ones((30, 3)), np.ones((30, 2)))), "rotations must be"),
        (lambda X, y, Xv, yv: _feature(X, y, R=np.array([1.0, -1, 1, 1, 1, 1])), "diagonal R must be positive"),
        (lambda X, y, Xv, yv: _feature(X, y, R=np.ones((5, 5))), r"R must be \(D,\) or \(D, D\)"),
        (lambda X, y, Xv, yv: _safe(X, y, Xv, yv + 5.0), "y_val must hold one label per row of X_val"),
        (lambda X, y, Xv, yv: _safe(X, y, Xv, yv, sigma_min=2.0, sigma_max=1.0), "need 0 <= sigma_min <= sigma_max"),
        (lambda X, y, Xv, yv: _safe(X, y, Xv, yv, sigma_max=np.inf), "need 0 <= sigma_min <= sigma_max"),
    ],
)
def test_formulation_inputs_are_checked_once_with_a_message(build, message):
    """The feature-space and bi-level formulations check their own inputs with the shared helpers of
    ``_validation`` (one per check): each bad input gets a ValueError saying what to fix."""
    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(30, 6)), rng.normal(size=(10, 6))
    y, yv = np.where(X[:, 0] > 0, 1.0, -1.0), np.where(Xv[:, 0] > 0, 1.0, -1.0)
    with pytest.raises(ValueError, match=message):
        build(X, y, Xv, yv)


def _feature(X, y, Gamma=0.1, **kw):
    from rsvm_conic.formulations import FeatureRobustProblem

    return FeatureRobustProblem(X, y, Gamma, pbar=1 if "rotations" in kw else 2, **kw)


def _safe(X, y, Xv, yv, **kw):
    from rsvm_conic.formulations import SafeProblem

    return SafeProblem(X, y, Xv, yv, **kw)
