import numpy as np
import pytest
from scipy import integrate

from rsvm_conic.datasets.toys import make_xor_thesis
from rsvm_conic.kernels.consolidation import (
    ConsolidationKernel,
    consolidation_directions,
    fourier_coefficients,
    h_periodic,
    h_periodic_m,
)
from rsvm_conic.kernels.rbf import gaussian_kernel


def _fitted(m=41, seed=0, **kw):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 3))
    y = rng.integers(0, 3, size=60)
    return ConsolidationKernel(sigma=1.3, m=m, n_subclasses=3, **kw).fit(X, y), X


def test_fourier_coefficients_numerically():
    d = 2.7
    for j in range(0, 8):
        val, _ = integrate.quad(lambda t: h_periodic(t, d) * np.cos(2 * np.pi * j * t / d), 0, d, limit=200)
        coef = val / d if j == 0 else 2 * val / d
        expected = 1 / 3 if j == 0 else 4 / (j**2 * np.pi**2)
        assert coef == pytest.approx(expected, abs=1e-10)
        # the sine coefficients vanish (h_d is even)
        s, _ = integrate.quad(lambda t: h_periodic(t, d) * np.sin(2 * np.pi * j * t / d), 0, d, limit=200)
        assert abs(s) < 1e-10
    assert np.allclose(fourier_coefficients(3), [1 / 3, 4 / np.pi**2, 1 / np.pi**2, 4 / (9 * np.pi**2)])


def test_h_periodic_definition_and_series_bound():
    d = 1.7
    t = np.linspace(-5, 5, 2001)
    s = np.mod(t, d)
    assert np.allclose(h_periodic(t, d), 4 * s**2 / d**2 - 4 * s / d + 1)
    for m in (1, 5, 41):
        err = np.max(np.abs(h_periodic(t, d) - h_periodic_m(t, d, m)))
        assert err <= 4 / (np.pi**2 * m) + 1e-12
    # Chebyshev recurrence = direct cosine sum
    direct = 1 / 3 + sum(4 / (j**2 * np.pi**2) * np.cos(2 * np.pi * j * t / d) for j in range(1, 12))
    assert np.allclose(h_periodic_m(t, d, 11), direct)


def test_kappa_diagonal_is_one_and_kappa_m_diagonal():
    k, X = _fitted(m=None)
    assert k.n_directions > 0
    assert np.allclose(np.diag(k(X)), 1.0)
    km, _ = _fitted(m=10)
    assert np.allclose(np.diag(km(X)), km.diag_value())
    assert km.diag_value() < 1.0


@pytest.mark.parametrize("m", [1, 3, 41])
def test_prop_4_2_truncation_bound(m):
    k, X = _fitted(m=None)
    km, _ = _fitted(m=m)
    Y = np.random.default_rng(5).normal(size=(40, 3)) * 3
    gap = np.max(np.abs(k(X, Y) - km(X, Y)))
    assert gap <= 4 / (np.pi**2 * m)
    # non-uniform tau: still within the bound (it only needs sum tau <= 1)
    k2, _ = _fitted(m=None, tau0=0.1)
    k2m, _ = _fitted(m=m, tau0=0.1)
    assert np.max(np.abs(k2(X, Y) - k2m(X, Y))) <= 4 / (np.pi**2 * m)


def test_kappa_m_matches_definition_by_brute_force():
    km, X = _fitted(m=6)
    Y = X[:7] + 0.3
    a = fourier_coefficients(6)
    mu = km.mu()
    brute = np.zeros((X.shape[0], Y.shape[0]))
    for r in range(X.shape[0]):
        for c in range(Y.shape[0]):
            delta = X[r] - Y[c]
            g = np.exp(-delta @ delta / (2 * km.sigma**2))
            val = km.tau_[0] * g
            for i in range(km.n_directions):
                val += km.tau_[i + 1] * sum(a[j] * np.cos(mu[i, j] @ delta) for j in range(7)) * g
            brute[r, c] = val
    assert np.allclose(km(X, Y), brute, atol=1e-12)


@pytest.mark.parametrize("m", [None, 41])
def test_gram_psd(m):
    k, X = _fitted(m=m)
    K = k(X)
    assert np.allclose(K, K.T)
    assert np.linalg.eigvalsh(K).min() > -1e-9


def test_translation_invariance_prop_4_1():
    rng = np.random.default_rng(2)
    c = np.array([1.0, -2.0, 0.5])
    X, Y = rng.normal(size=(10, 3)), rng.normal(size=(12, 3))
    for m in (None, 41):
        # M = 1, tau_0 = 0, no envelope: exact invariance under x -> x + j (c11 - c12)
        k = ConsolidationKernel(sigma=1.0, sigma_dir=np.inf, m=m, tau0=0.0, directions=c[None])
        for j in (-2, 1, 3):
            assert np.allclose(k(X + j * c, Y), k(X, Y), atol=1e-10)
        # the printed mu_ij (2 pi j u, without 1/d) would break it: check it is not our kernel
        # with a finite envelope the periodic part is invariant and the envelope ratio is exact
        ke = ConsolidationKernel(sigma=1.0, sigma_dir=2.0, m=m, tau0=0.0, directions=c[None])
        ratio = gaussian_kernel(X + c, Y, 2.0) / gaussian_kernel(X, Y, 2.0)
        assert np.allclose(ke(X + c, Y), ke(X, Y) * ratio, atol=1e-10)
        assert not np.allclose(ke(X + c, Y), ke(X, Y), atol=1e-3)


def test_printed_mu_breaks_invariance():
    # Def. 4.2 as printed: mu_ij = 2 pi j u (period 1, not d): not invariant under the translation
    c = np.array([1.0, -2.0, 0.5])
    d = np.linalg.norm(c)
    u = c / d
    delta = np.random.default_rng(0).normal(size=3)
    printed = lambda z: sum(fourier_coefficients(5)[j] * np.cos(2 * np.pi * j * u @ z) for j in range(6))
    assert abs(printed(delta + c) - printed(delta)) > 1e-3
    k = ConsolidationKernel(sigma=1.0, sigma_dir=np.inf, m=5, tau0=0.0, directions=c[None])
    assert k(delta[None] + c, np.zeros((1, 3)))[0, 0] == pytest.approx(k(delta[None], np.zeros((1, 3)))[0, 0])


def test_random_features_converge_to_kappa_m():
    km, X = _fitted(m=8, seed=3)
    K = km(X[:20])
    errs = []
    for D in (500, 8000, 64000):
        Z = km.random_features(D, random_state=1).transform(X[:20])
        errs.append(np.max(np.abs(Z @ Z.T - K)))
    assert errs[-1] < 0.03
    assert errs[-1] < errs[0]
    # unbiasedness: average of many independent small maps
    avg = np.mean(
        [(lambda Z: Z @ Z.T)(km.random_features(200, random_state=s).transform(X[:5])) for s in range(400)], axis=0
    )
    assert np.max(np.abs(avg - km(X[:5]))) < 0.02


def test_xor_direction_rule_keeps_within_class_translation():
    X, y, _ = make_xor_thesis(20, seed=0)
    k = ConsolidationKernel(sigma=2.0, m=41, n_subclasses=2).fit(X, y)
    assert k.n_directions == 2  # one diagonal translation per class survives
    V = np.abs(k.directions_)
    assert np.allclose(V / V[:, :1], 1.0, atol=0.2)  # both along (1, +-1)


def test_exclusion_rule_drops_translation_that_links_classes():
    # class 0 centres at 0 and (4, 0); class 1 centre at (8, 0): v = (4, 0) maps (4, 0) onto (8, 0)
    centres = np.array([[0.0, 0.0], [4.0, 0.0], [8.0, 0.0], [0.0, 5.0]])
    owner = np.array([0, 0, 1, 1])
    V, pairs, excluded = consolidation_directions(centres, owner, 0.25)
    assert [tuple(p) for p in pairs] == [(2, 3)]
    assert excluded and excluded[0][0] == (0, 1)


def test_bad_input():
    with pytest.raises(ValueError):
        ConsolidationKernel(sigma=-1.0)
    with pytest.raises(ValueError):
        ConsolidationKernel(m=-2)
    with pytest.raises(ValueError):
        ConsolidationKernel()(np.zeros((2, 2)))
    k, X = _fitted()
    with pytest.raises(ValueError):
        k(np.zeros((2, 5)))
    with pytest.raises(ValueError):
        k(np.array([[np.nan, 0, 0]]))
    with pytest.raises(ValueError):
        ConsolidationKernel(directions=np.zeros((1, 2)))
    with pytest.raises(ValueError):
        ConsolidationKernel(m=None, directions=np.ones((1, 2))).random_features(10)


def test_issue_input_diagonal_exactly_one():
    """Regression (found by test_fuzz_consolidation_kernel with a newer hypothesis): one point far from
    the origin, one class, so no direction: kappa^m(x, x) = tau_0 G_0(0) = 1, but the Gram-form
    distance ||x||^2 + ||x||^2 - 2 x.x left 3.7e-9 and gave 0.99999999813735485."""
    X = np.array([[2040.91912139, -2555.66503131, 418.09884673]])
    k = ConsolidationKernel(sigma=1.0, sigma_dir=None, m=11, n_subclasses=2, tau0=0.5).fit(X, [0])
    assert k.n_directions == 0 and k.diag_value() == 1.0
    assert k(X)[0, 0] == 1.0
    assert k(X, X.copy())[0, 0] == 1.0


@pytest.mark.parametrize("m", [None, 0, 3, 11])
@pytest.mark.parametrize("offset", [0.0, 1e3, 1e4, 1e6])
def test_large_offsets_match_extended_precision_definition(m, offset):
    """Far from the origin the kernel is as accurate as near it: every entry matches the definition
    evaluated on direct differences in long double, within a bound that depends on the data's
    spread and dimension but not on its offset; the diagonal is exact and the Gram matrix symmetric."""
    from _fuzzutil import consolidation_reference, consolidation_tolerance

    rng = np.random.default_rng(11)
    shift = offset * rng.standard_normal(3)
    X = rng.normal(size=(30, 3)) * 2.0 + shift
    y = rng.integers(0, 3, size=30)
    Y = rng.normal(size=(9, 3)) * 2.0 + shift
    Y[0] = X[4]  # a row shared by X and Y
    for sigma_dir in (None, np.inf):
        k = ConsolidationKernel(sigma=1.5, sigma_dir=sigma_dir, m=m, n_subclasses=3).fit(X, y)
        assert k.n_directions > 0
        G, H = k(X), k(X, Y)
        tol = consolidation_tolerance(k, X, Y)
        assert tol < 1e-9  # the bound itself does not grow with the offset
        np.testing.assert_allclose(G, consolidation_reference(k, X).astype(float), rtol=0, atol=tol)
        np.testing.assert_allclose(H, consolidation_reference(k, X, Y).astype(float), rtol=0, atol=tol)
        np.testing.assert_allclose(np.diag(G), k.diag_value(), rtol=0, atol=tol)
        np.testing.assert_allclose(G, G.T, rtol=0, atol=2 * tol)
        assert abs(H[4, 0] - k.diag_value()) <= tol  # a row shared by X and Y: the diagonal value


@pytest.mark.parametrize("tol", [0.0, 0.1, 0.25, 0.5, 1.0])
def test_exclusion_tolerance_against_brute_force(tol):
    """Issue 15: exclusion_tol is a documented parameter.  Brute force over every same-class pair and every
    (centre a, other-class centre b, orientation): a pair is kept iff no ||a +- v - b|| <= tol ||v||."""
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(12, 3))
    owner = np.repeat([0, 1, 2], 4)
    V, pairs, excluded = consolidation_directions(centres, owner, tol)
    kept = set()
    for p in range(12):
        for q in range(p + 1, 12):
            if owner[p] != owner[q]:
                continue
            v = centres[q] - centres[p]
            hit = any(
                np.linalg.norm(centres[a] + s * v - centres[b]) <= tol * np.linalg.norm(v)
                for a in range(12)
                for b in range(12)
                for s in (1.0, -1.0)
                if owner[a] != owner[b]
            )
            if not hit:
                kept.add((p, q))
    assert {tuple(pq) for pq in pairs} == kept
    assert len(kept) + len(excluded) == 3 * 6


def test_exclusion_tolerance_large_enough_gives_the_gaussian_kernel():
    """Once no direction survives, kappa^m is the Gaussian kernel: the WW machines coincide."""
    from rsvm_conic.estimators import WestonWatkinsSVC

    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    km = WestonWatkinsSVC(C=10.0, kernel="consolidation", sigma=1.0, exclusion_tol=1e6, n_subclasses=3).fit(X, y)
    assert km.kernel_obj_.n_directions == 0
    g = WestonWatkinsSVC(C=10.0, kernel="rbf", sigma=1.0).fit(X, y)
    assert km.solver_stats_["primal"] == pytest.approx(g.solver_stats_["primal"], rel=1e-6)
    assert np.array_equal(km.predict(X), g.predict(X))
    with pytest.raises(ValueError, match="exclusion_tol"):
        WestonWatkinsSVC(kernel="consolidation", exclusion_tol=-1.0, n_subclasses=2).fit(X, y)
