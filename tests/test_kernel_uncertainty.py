"""Uncertainty model of a kernel matrix [BBBB10, Sec. 2]: eq. 9, kappa, estimation,
and the chance-constraint guarantees of Theorems 1 and 3 checked by Monte Carlo."""

import numpy as np
import pytest
from scipy.stats import norm

from rsvm_conic.datasets.bhadra2010 import base_noise, make_bhadra2010, noise_std, sample_kernels
from rsvm_conic.formulations.kernel_robust import KernelRobustSOCPProblem
from rsvm_conic.metrics import epsilon_effective
from rsvm_conic.uncertainty.chance import epsilon_from_kappa, kappa
from rsvm_conic.uncertainty.kernel_matrix import (
    KernelUncertainty,
    eq9_residual,
    finite_support_beta,
    gamma_closed_form,
    gamma_finite_support,
    psd_part,
    rank_one_approx,
    symmetric_noise_beta,
)

MUS = np.array([-0.99, -0.9, -0.6, -0.3, -0.05, 0.0, 1e-4, 0.05, 0.2, 0.5, 0.8, 0.97])
ZGRID = np.concatenate([-np.logspace(-6, 2, 4000)[::-1], np.logspace(-6, 2, 4000)])


# ---------------------------------------------------------------------------- eq. 9
def test_gamma_satisfies_eq9_on_dense_grid():
    gam, zstar = gamma_finite_support(MUS, return_argmax=True)
    for mu, g, zs in zip(MUS, gam, zstar):
        z = np.concatenate([ZGRID, [zs]])
        res = eq9_residual(z, mu, g)
        assert res.min() >= -1e-10 * max(1.0, np.max(np.abs(z)) ** 2 * g**2), (mu, res.min())


def test_gamma_is_minimal():
    gam, zstar = gamma_finite_support(MUS, return_argmax=True)
    for mu, g, zs in zip(MUS, gam, zstar):
        smaller = g * (1 - 1e-5)
        z = np.concatenate([ZGRID, [zs]])
        assert eq9_residual(z, mu, smaller).min() < 0, mu


def test_gamma_matches_closed_form_and_known_values():
    mu = np.linspace(-0.999, 0.999, 2001)
    np.testing.assert_allclose(gamma_finite_support(mu), gamma_closed_form(mu), atol=1e-7)
    assert gamma_finite_support(np.array([0.0]))[0] == pytest.approx(1.0, abs=1e-7)  # Hoeffding's lemma
    assert gamma_finite_support(np.array([1.0]))[0] == 0.0
    assert np.all(gamma_finite_support(mu) <= 1.0 + 1e-12)  # eq. 9 tightens the Taylor bound gamma = 1


def test_theorem2_mgf_bound_two_point_law():
    """log E exp(rZ) <= r^2 beta / 2 for every zero-mean law on [a, b]; the two-point law on {a, b}
    attains the convexity bound (11), so the bound with gamma is tight for it (ratio -> 1)."""
    rng = np.random.default_rng(0)
    r = np.linspace(-30, 30, 6001)
    for _ in range(20):
        a, b = -rng.uniform(0.05, 2), rng.uniform(0.05, 2)
        beta, l, c, mu, gamma = finite_support_beta(np.array([a]), np.array([b]))
        p_b = -a / (b - a)  # P(Z = b) for mean zero
        log_mgf = np.logaddexp(np.log1p(-p_b) + r * a, np.log(p_b) + r * b)
        bound = 0.5 * r**2 * beta[0]
        assert np.all(log_mgf <= bound + 1e-10)
        ratio = log_mgf[r != 0] / bound[r != 0]
        assert ratio.max() > 0.999  # gamma cannot be lowered


def test_finite_support_beta_bad_input():
    with pytest.raises(ValueError, match="contain 0"):
        finite_support_beta(np.array([0.1]), np.array([1.0]))
    with pytest.raises(ValueError, match="a <= b"):
        finite_support_beta(np.array([1.0]), np.array([-1.0]))
    with pytest.raises(ValueError):
        gamma_finite_support(np.array([1.5]))


# ---------------------------------------------------------------------------- kappa
def test_kappa_values_and_validation():
    """One kappa for every model (Theorems 1 and 3 here, Chebyshev for the linear chance constraint)."""
    for eps in (0.01, 0.05, 0.3, 0.5, 0.8):
        assert kappa(eps, "gaussian", allow_negative=True) == pytest.approx(-norm.ppf(eps), rel=1e-12)
        assert kappa(eps, "finite") == pytest.approx(np.sqrt(2 * np.log(1 / eps)), rel=1e-12)
        assert epsilon_from_kappa(kappa(eps, "finite"), "finite") == pytest.approx(eps, rel=1e-12)
    assert kappa(0.5, "gaussian") == pytest.approx(0.0, abs=1e-15)
    with pytest.raises(ValueError, match="non-convex"):  # kappa < 0 only on request
        kappa(0.8, "gaussian")
    for bad in (0.0, 1.0, -0.1, 1.5, float("nan"), True, "0.1"):
        with pytest.raises(ValueError):
            kappa(bad, "gaussian", allow_negative=True)
        with pytest.raises(ValueError):
            kappa(bad, "finite")
    with pytest.raises(ValueError, match="model"):
        kappa(0.1, "laplace")


# ---------------------------------------------------------------------------- estimation
def test_from_samples_estimates():
    data = make_bhadra2010(3, "uniform", n_per_class=10, n_samples=400)
    U = KernelUncertainty.from_samples(data.K_samples, data.K_bar)
    np.testing.assert_allclose(U.K_bar, data.K_bar)
    # uniform noise on [-l/2, l/2]: variance l^2/12, estimated support close to the true one
    true_var = (data.l * noise_std("uniform")) ** 2
    np.testing.assert_allclose(U.beta_gaussian, true_var, rtol=0.3, atol=1e-12)
    mask = data.l > 1e-3
    np.testing.assert_allclose((U.b - U.a)[mask], data.l[mask], rtol=0.05)
    assert np.allclose(U.beta("finite"), U.beta("finite").T)
    assert np.all(U.beta_finite >= 0)
    # without K_bar: symmetrised sample mean projected onto the PSD cone
    U2 = KernelUncertainty.from_samples(data.K_samples)
    assert np.linalg.eigvalsh(U2.K_bar)[0] >= -1e-9
    assert np.max(np.abs(U2.K_bar - data.K_bar)) < 0.2 * np.max(np.abs(data.K_bar))


@pytest.mark.parametrize("seed", range(6))
def test_from_samples_moments_and_symmetry_in_one_loop_equal_their_definitions(seed):
    """``from_samples`` estimates the Gaussian model's variance and the samples' symmetry in one loop over the
    samples: the mean and variance equal ``np.mean`` / ``np.var(ddof=1)`` to rounding (scaled to the entries'
    magnitude), and ``symmetric_noise`` equals the definition ``max |K^s - K^s'| <= 1000 eps max |K^s|`` checked
    on whole matrices, for symmetric samples and for one sample made asymmetric by 10x the tolerance at a random
    entry (on either side of the diagonal, beyond the 256-row strips for n = 300), float64 and float32 input."""
    rng = np.random.default_rng(seed)
    S, n = int(rng.integers(2, 6)), int(rng.choice([7, 300]))
    scale = 10.0 ** rng.uniform(-3, 3)
    A = rng.standard_normal((S, n, n)) * scale
    Ks = A + A.transpose(0, 2, 1)
    dtype = np.float32 if seed % 3 == 2 else np.float64
    eps = float(np.finfo(dtype).eps)
    if seed % 2:
        s, i, j = int(rng.integers(S)), int(rng.integers(n)), int(rng.integers(n))
        j = j if j != i else (i + 1) % n
        Ks[s, i, j] += 10 * 1000 * eps * np.abs(Ks[s]).max()
    Ks = Ks.astype(dtype)
    U = KernelUncertainty.from_samples(Ks, noise="gaussian")
    K64 = Ks.astype(np.float64)
    tol = 1e-12 * np.abs(K64).max() ** 2
    np.testing.assert_allclose(U.beta_gaussian, np.var(K64, axis=0, ddof=1), rtol=1e-12, atol=tol)
    expected = all(np.abs(K - K.T).max() <= 1000 * eps * np.abs(K).max() for K in K64)
    assert U.symmetric_noise == expected == (seed % 2 == 0)


def test_from_samples_and_parameters_bad_input():
    data = make_bhadra2010(1, "gaussian", n_per_class=5, n_samples=20)
    Ks = data.K_samples
    with pytest.raises(ValueError, match="NaN"):
        bad = Ks.copy()
        bad[0, 0, 0] = np.nan
        KernelUncertainty.from_samples(bad)
    with pytest.raises(ValueError, match="shape"):
        KernelUncertainty.from_samples(Ks[:, :, :-1])
    with pytest.raises(ValueError, match="at least 2"):
        KernelUncertainty.from_samples(Ks[:1])
    with pytest.raises(ValueError, match="shape"):
        KernelUncertainty.from_samples(Ks, data.K_bar[:-1, :-1])
    nonsym = data.K_bar.copy()
    nonsym[0, 1] += 1.0
    with pytest.raises(ValueError, match="symmetric"):
        KernelUncertainty.from_parameters(nonsym, sigma2=np.ones_like(nonsym))
    with pytest.raises(ValueError, match="positive semidefinite"):
        KernelUncertainty.from_parameters(-np.eye(4) - 1.0, sigma2=np.ones((4, 4)))
    with pytest.raises(ValueError, match="shape"):
        KernelUncertainty.from_parameters(data.K_bar, sigma2=np.ones((3, 3)))
    with pytest.raises(ValueError, match=">= 0"):
        KernelUncertainty.from_parameters(data.K_bar, sigma2=-np.ones_like(data.K_bar))
    with pytest.raises(ValueError, match="both a and b"):
        KernelUncertainty.from_parameters(data.K_bar, a=-np.ones_like(data.K_bar))
    with pytest.raises(ValueError, match="mean_psd"):
        KernelUncertainty.from_samples(Ks, mean_psd="nope")


def test_psd_part_and_rank_one():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((8, 8))
    beta = np.abs(A + A.T)
    bh, B = psd_part(beta)
    np.testing.assert_allclose(B.T @ B, bh, atol=1e-10)
    assert np.linalg.eigvalsh(bh - beta)[0] >= -1e-10  # conservative: beta_hat - beta is PSD
    rho = np.abs(rng.standard_normal(8))
    np.testing.assert_allclose(rank_one_approx(np.outer(rho, rho)), rho, rtol=1e-10)
    assert np.all(rank_one_approx(beta) >= 0)
    # large n takes the Lanczos path: same principal pair as a full eigendecomposition
    X = np.abs(rng.standard_normal((400, 3)))
    big = (X @ X.T) ** 2
    v, E = np.linalg.eigh(big)
    np.testing.assert_allclose(rank_one_approx(big), np.sqrt(v[-1]) * np.abs(E[:, -1]), rtol=1e-10, atol=1e-12)
    # a small spectral gap (a path graph's adjacency: eigenvalues 2 cos(k pi / 401), +-rho both): the short Lanczos
    # run does not converge and the default one decides, to the same pair
    path = np.diag(np.ones(399), 1) + np.diag(np.ones(399), -1)
    v, E = np.linalg.eigh(path)
    rho = np.sqrt(v[-1]) * np.abs(E[:, -1])
    np.testing.assert_allclose(rank_one_approx(path), rho, rtol=0, atol=1e-9 * rho.max())


# ---------------------------------------------------------------------------- Theorems 1 and 3
def _positive_instance(n=24, seed=0):
    rng = np.random.default_rng(seed)
    X = np.abs(rng.standard_normal((n, 2))) + 0.2
    y = np.where(X[:, 0] - X[:, 1] + 0.2 * rng.standard_normal(n) > 0, 1.0, -1.0)
    K = X @ X.T
    l = 0.25 * K  # K >= 0 entrywise, so beta ~ K o K is PSD and nonnegative
    return K, l, y


@pytest.mark.parametrize("eps", [0.05, 0.2])
def test_theorem1_gaussian_chance_constraint(eps):
    """Gaussian noise with known sigma: P(alpha'Y K Y alpha > t) <= eps; with beta PSD the bound
    is exact (Tr(ZV) is Gaussian with the modelled variance), so epsilon_effective ~ eps."""
    K, l, y = _positive_instance()
    sigma2 = l**2
    f = KernelRobustSOCPProblem(K, y, sigma2, C=1.0, kappa=kappa(eps, "gaussian"))
    sol = f.solve("ipm")
    rng = np.random.default_rng(1)
    Ks = sample_kernels(rng, K, l, "gaussian", 20000)
    e = epsilon_effective(sol["alpha"], y, sol["t"], Ks)
    mc = 4 * np.sqrt(eps * (1 - eps) / 20000)
    assert e <= eps + mc
    assert e >= eps - mc  # tight: the looseness is only Monte Carlo error here


@pytest.mark.parametrize("law", ["uniform", "beta"])
def test_theorem3_finite_support_chance_constraint(law):
    """Finite support [-l/2, l/2] (true support): P(violation) <= eps; report the looseness."""
    K, l, y = _positive_instance(seed=2)
    a, b = -0.5 * l, 0.5 * l
    U = KernelUncertainty.from_parameters(K, a=a, b=b)
    eps = 0.2
    f = KernelRobustSOCPProblem(K, y, U.beta("finite"), C=1.0, kappa=kappa(eps, "finite"))
    sol = f.solve("ipm")
    Ks = sample_kernels(np.random.default_rng(3), K, l, law, 20000)
    e = epsilon_effective(sol["alpha"], y, sol["t"], Ks)
    assert e <= eps + 4 * np.sqrt(eps * (1 - eps) / 20000)
    assert e < eps / 2  # the Hoeffding-type bound is loose (Fig. 3 of the paper)


def test_symmetric_noise_breaks_theorem1_and_corrected_beta_restores_it():
    """Lemma 1 needs all n^2 entries independent.  With Z_ij = Z_ji the printed beta
    underestimates Var Tr(ZV); symmetric_noise_beta (off-diagonal x2) restores the guarantee."""
    K, l, y = _positive_instance(seed=4)
    eps = 0.05
    rng = np.random.default_rng(5)
    Ks = sample_kernels(rng, K, l, "gaussian", 20000, symmetric=True)
    mc = 4 * np.sqrt(eps * (1 - eps) / 20000)
    printed = KernelRobustSOCPProblem(K, y, l**2, C=1.0, kappa=kappa(eps, "gaussian")).solve("ipm")
    e_printed = epsilon_effective(printed["alpha"], y, printed["t"], Ks)
    assert e_printed > eps + mc
    fixed = KernelRobustSOCPProblem(K, y, symmetric_noise_beta(l**2), C=1.0, kappa=kappa(eps, "gaussian")).solve("ipm")
    e_fixed = epsilon_effective(fixed["alpha"], y, fixed["t"], Ks)
    assert e_fixed <= eps + mc


def test_base_noise_laws_are_centred_with_stated_std():
    rng = np.random.default_rng(0)
    for law in ("gaussian", "uniform", "beta", "beta55"):
        z = base_noise(rng, law, 200000)
        assert abs(z.mean()) < 0.01
        assert z.std() == pytest.approx(noise_std(law), rel=0.02)
    with pytest.raises(ValueError):
        base_noise(rng, "cauchy", 3)


@pytest.mark.parametrize("eps", [0.05, 0.1, 0.3])
def test_estimator_defaults_keep_the_chance_constraint_on_symmetric_samples(eps):
    """Monte Carlo at the estimator's defaults: KernelRobustSVC fitted from symmetric kernel samples
    (as every sampled kernel matrix is) keeps P(alpha'Y K Y alpha > t) within epsilon + 3 SE on fresh
    symmetric noise; the paper's version (its beta and kappa: beta="paper", moment_error="ignore") does not
    (so the test can fail)."""
    from rsvm_conic.estimators import KernelRobustSVC

    K, l, y = _positive_instance(seed=0)
    train = sample_kernels(np.random.default_rng(10), K, l, "gaussian", 500, symmetric=True)
    test = sample_kernels(np.random.default_rng(11), K, l, "gaussian", 20000, symmetric=True)
    bound = eps + 3 * np.sqrt(eps * (1 - eps) / 20000)
    auto = KernelRobustSVC(epsilon=eps).fit(train, y)
    assert auto.beta_rule_ == "symmetric" and auto.solver_stats_["status"] == "optimal"
    assert epsilon_effective(auto.alpha_, y, auto.t_, test) <= bound
    paper = KernelRobustSVC(epsilon=eps, beta="paper", moment_error="ignore").fit(train, y)
    assert epsilon_effective(paper.alpha_, y, paper.t_, test) > bound


# ---------------------------------------------------------------------------- moments estimated from S samples
@pytest.mark.parametrize("case", range(16))
def test_kappa_estimated_covers_the_moment_error_for_every_weighting(case):
    """For a fixed alpha, K_hat = K_bar + Z_bar errs by -v'Z_bar v = U s / sqrt(S) (U ~ N(0, 1)) and the model's
    s_hat^2 = nu'beta_hat nu is s^2 times a weighted average W of independent chi-square(S - 1) / (S - 1) entry
    variances, independent of U.  The true constraint v'K_bar v + kappa s <= v'K_hat v + kappa_S s_hat fails iff
    U / sqrt(S) + kappa > kappa_S sqrt(W); kappa_estimated keeps that below 1 - confidence for random weightings
    (one entry: the exact tolerance factor), with the mean estimated or known, while the paper's kappa fails
    about half the time."""
    from rsvm_conic.uncertainty.chance import kappa_estimated

    rng = np.random.default_rng(500 + case)
    S = int(rng.choice([2, 3, 5, 10, 20, 50, 100, 500]))
    eps = float(rng.choice([0.01, 0.05, 0.1, 0.3, 0.5]))
    conf = float(rng.choice([0.9, 0.95, 0.99]))
    m = 1 if case < 4 else int(rng.integers(2, 40))
    p = rng.dirichlet(np.full(m, float(rng.choice([0.1, 1.0, 10.0]))))
    N = 50_000
    W = (rng.chisquare(S - 1, size=(N, m)) / (S - 1)) @ p
    U = rng.standard_normal(N)
    k = kappa(eps, "gaussian")
    tol = 3.0 * np.sqrt(conf * (1.0 - conf) / N)
    k_s = kappa_estimated(eps, "gaussian", S, confidence=conf)
    assert np.mean(U / np.sqrt(S) + k > k_s * np.sqrt(W)) <= 1.0 - conf + tol
    k_known = kappa_estimated(eps, "gaussian", S, confidence=conf, mean_known=True)
    assert np.mean(k > k_known * np.sqrt(W)) <= 1.0 - conf + tol
    assert np.mean(U / np.sqrt(S) + k > k * np.sqrt(W)) > 0.4  # the paper's kappa on estimated moments


@pytest.mark.parametrize("noise", ["gaussian", "finite"])
def test_kappa_estimated_keeps_the_true_constraint_on_estimated_kernel_moments(noise):
    """Brute force at a fixed alpha on kernel samples: S symmetric samples of a known law (Gaussian, resp.
    uniform with known support), the mean (and for the Gaussian model beta) estimated as the estimator does
    (sample mean, KernelUncertainty.from_samples' beta), t = v'K_hat v + kappa_S s_hat.  The true
    constraint v'K_bar v + kappa s <= t fails in at most 1 - confidence of the repetitions (+ 3 SE); the
    paper's kappa fails in about half of them."""
    from rsvm_conic.uncertainty.chance import kappa_estimated

    K, l, y = _positive_instance(n=12, seed=3)
    rng = np.random.default_rng(7)
    alpha = rng.uniform(0.2, 1.0, 12)
    v = alpha * y
    nu = v * v
    law = "gaussian" if noise == "gaussian" else "uniform"
    # the true beta of the law (symmetric noise): Gaussian sigma^2 = l^2; uniform l U[-1/2, 1/2]: support +-l/2
    beta_true = symmetric_noise_beta(l**2 if noise == "gaussian" else finite_support_beta(-l / 2, l / 2)[0])
    s_true = np.sqrt(nu @ beta_true @ nu)
    eps, conf, reps = 0.1, 0.95, 1000
    tol = 3.0 * np.sqrt(conf * (1.0 - conf) / reps)
    truth_lhs = v @ K @ v
    for S in (5, 20, 80):
        k, k_s = kappa(eps, noise), kappa_estimated(eps, noise, S, confidence=conf)
        Ks = sample_kernels(rng, K, l, law, reps * S, symmetric=True).reshape(reps, S, *K.shape)
        q_hat = np.einsum("rij,i,j->r", Ks.mean(axis=1), v, v)
        if noise == "gaussian":  # the model's variance estimate (checked against from_samples on the first)
            var = Ks.var(axis=1, ddof=1)
            beta_hat = 2.0 * var  # symmetric_noise_beta of each: off-diagonal doubled
            idx = np.arange(K.shape[0])
            beta_hat[:, idx, idx] = var[:, idx, idx]
            est = KernelUncertainty.from_samples(Ks[0], K, noise="gaussian").beta("gaussian")
            np.testing.assert_allclose(beta_hat[0], est, rtol=1e-10, atol=1e-14 * est.max())
            s_hat = np.sqrt(np.einsum("rij,i,j->r", beta_hat, nu, nu))
        else:  # the finite model's correction is for a given support
            s_hat = s_true
        truth = truth_lhs + k * s_true
        fail, paper_fail = np.mean(truth > q_hat + k_s * s_hat), np.mean(truth > q_hat + k * s_hat)
        assert fail <= 1.0 - conf + tol, (S, fail)
        assert paper_fail > 0.35, (S, paper_fail)


def test_kappa_estimated_values_and_input_checks():
    """Known values (the one-sided normal tolerance factor for S = 20, 90 % content, 95 % confidence is
    1.926), the limit S -> infinity, and one-line ValueErrors for bad input."""
    from rsvm_conic.uncertainty.chance import kappa_estimated

    assert kappa_estimated(0.1, "gaussian", 20) == pytest.approx(1.926, abs=1e-3)
    for noise in ("gaussian", "finite"):
        for known in (False, True):
            ks = [kappa_estimated(0.1, noise, S, mean_known=known) for S in (2, 10, 100, 10**4, 10**9)]
            assert all(a >= b for a, b in zip(ks, ks[1:])) and ks[-1] >= kappa(0.1, noise)
            assert ks[-1] == pytest.approx(kappa(0.1, noise), rel=1e-3)
    assert kappa_estimated(0.1, "finite", 50) == pytest.approx(kappa(0.1, "finite") + np.sqrt(2 * np.log(20) / 50))
    assert kappa_estimated(0.5, "gaussian", 20, mean_known=True) == 0.0  # kappa = 0 with the mean known
    for bad in (1, 0, 2.5, True, "20"):
        with pytest.raises(ValueError, match="n_samples must be an integer >= 2"):
            kappa_estimated(0.1, "gaussian", bad)
    for bad in (0.0, 1.0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="confidence"):
            kappa_estimated(0.1, "gaussian", 20, confidence=bad)
    with pytest.raises(ValueError, match="model"):
        kappa_estimated(0.1, "chebyshev", 20)
    with pytest.raises(ValueError, match="0.5"):
        kappa_estimated(0.7, "gaussian", 20)


@pytest.mark.parametrize("seed", range(4))
def test_symmetry_of_a_sample_is_decided_by_one_exact_comparison_when_it_holds_exactly(seed):
    """An exactly symmetric sample (a symmetric sampler's) is recognised by the comparison ``K == K'`` alone: the
    difference buffer of the tolerance test is not written (one pass per sample instead of the scale's two
    reductions, the difference and its two).  A sample symmetric only to rounding (within the tolerance)
    or asymmetric beyond it is still decided by the tolerance test."""
    from rsvm_conic.uncertainty.kernel_matrix import _sample_symmetric

    rng = np.random.default_rng(seed)
    n = int(rng.choice([5, 300]))
    A = rng.standard_normal((n, n)) * 10.0 ** rng.uniform(-3, 3)
    K = A + A.T
    buf = np.full((n, n), np.nan)
    assert _sample_symmetric(K, 1e-13, buf) and np.isnan(buf).all()
    i, j = int(rng.integers(n)), int(rng.integers(n))
    j = j if j != i else (i + 1) % n
    near, far = K.copy(), K.copy()
    near[i, j] += 1e-14 * np.abs(K).max()
    far[i, j] += 1e-11 * np.abs(K).max()
    assert _sample_symmetric(near, 1e-13, buf) and not _sample_symmetric(far, 1e-13, buf)


@pytest.mark.parametrize("known", [False, True])
def test_gaussian_factors_are_scipy_stats_quantiles_exactly(known):
    """``kappa`` and ``kappa_estimated`` evaluate the special functions behind ``scipy.stats``' quantiles directly:
    the values are ``norm.isf``, ``nct.ppf`` and ``chi2.ppf``'s, bit for bit, over epsilon, the number of samples
    (2 to 1e7) and the confidence.  Where ``nct.ppf`` is not ``nctdtrit`` (scipy 1.11 computes it by Boost: at
    epsilon 1e-6, S = 2, 7.011873806 against 7.011873443) the two agree to 1e-6 relative (0 at epsilon = 0.5, to
    rounding)."""
    from scipy import special
    from scipy.stats import chi2, nct

    from rsvm_conic.uncertainty.chance import kappa_estimated

    nc = float(norm.isf(1e-6)) * np.sqrt(2.0)  # the case where scipy 1.11's Boost quantile differs
    nct_is_nctdtrit = nct.ppf(0.5, 1, nc) == special.nctdtrit(1, nc, 0.5)
    for eps in (1e-6, 0.01, 0.1, 0.3, 0.5):
        k = float(norm.isf(eps))
        assert kappa(eps, "gaussian") == k
        for S in (2, 5, 20, 10**4, 10**7):
            for conf in (0.5, 0.95, 0.999):
                d = 1.0 - conf
                want = k * np.sqrt((S - 1) / chi2.ppf(d, S - 1)) if known else nct.ppf(1 - d, S - 1, k * np.sqrt(S))
                want = float(want) if known else float(want / np.sqrt(S))
                got = kappa_estimated(eps, "gaussian", S, confidence=conf, mean_known=known)
                assert got == want if known or nct_is_nctdtrit else abs(got - want) <= 1e-6 * abs(want) + 1e-12


@pytest.mark.parametrize("seed", range(4))
def test_mean_projection_over_its_positive_eigenpairs_is_the_psd_projection(seed):
    """``from_samples`` projects the symmetrised mean onto the PSD cone by a product over its positive eigenpairs
    only (a noisy low-rank mean has about half of them negative): the full projection ``E max(v, 0) E'`` to
    rounding (scaled to the mean's magnitude), for means of rank 1 to 40 of 60 plus symmetric noise."""
    rng = np.random.default_rng(seed)
    n, r = 60, int(rng.choice([1, 5, 40]))
    F = rng.standard_normal((n, r))
    N = rng.standard_normal((3, n, n)) * 0.1
    Ks = F @ F.T + N + N.transpose(0, 2, 1)
    mean = Ks.mean(axis=0)
    v, E = np.linalg.eigh(0.5 * (mean + mean.T))
    want = (E * np.maximum(v, 0.0)) @ E.T
    got = KernelUncertainty.from_samples(Ks, noise="gaussian").K_bar
    np.testing.assert_allclose(got, 0.5 * (want + want.T), rtol=0, atol=1e-12 * np.abs(want).max())
