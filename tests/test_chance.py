"""Chance-constrained SVM: kappa(epsilon) and Monte Carlo proof that the constraints hold."""

import numpy as np
import pytest
from scipy.stats import norm

from rsvm_conic.datasets.synthetic import make_uncertain_classification
from rsvm_conic.formulations import chance_constrained_svm
from rsvm_conic.uncertainty import epsilon_from_kappa, kappa

N_DRAWS = 100_000


def test_kappa_values_and_inverse():
    assert kappa(0.05, "gaussian") == pytest.approx(1.6448536, rel=1e-6)
    assert kappa(0.5, "gaussian") == 0.0
    assert kappa(0.1, "chebyshev") == pytest.approx(3.0)
    for dist in ("gaussian", "chebyshev"):
        for eps in (0.01, 0.1, 0.3):
            assert epsilon_from_kappa(kappa(eps, dist), dist) == pytest.approx(eps)


@pytest.mark.parametrize(
    "eps, dist",
    [
        (0.0, "chebyshev"),
        (1.0, "chebyshev"),
        (-0.1, "gaussian"),
        (0.7, "gaussian"),
        (float("nan"), "gaussian"),
        (0.1, "student"),
    ],
)
def test_kappa_rejects_bad_epsilon(eps, dist):
    with pytest.raises(ValueError):
        kappa(eps, dist)


def _fit(dist, eps):
    X, y, Sigma, groups = make_uncertain_classification(200, 4, separation=3.0, noise_scale=0.3, random_state=5)
    f = chance_constrained_svm(X, y, Sigma, groups, C=1.0, epsilon=eps, distribution=dist)
    sol = f.solve("clarabel")
    return f, sol, X, y


def _tight_constraints(f, sol, X, y):
    """Constraints that hold without slack (xi ~ 0) -- the ones the guarantee is about -- and the
    tight (active) ones among them."""
    w, b = sol["w"], sol["b"]
    xi = f.variables["xi"].value
    margin = y * (X @ w + b) - 1.0
    pen = f.current_uncertainty().robust_penalty(w)
    no_slack = xi < 1e-7
    active = no_slack & (np.abs(margin - pen) < 1e-6 * max(1, pen.max()))
    return no_slack, active, margin


def _violation_freq(f, sol, X, y, i, Z):
    """Fraction of perturbations Z (draws, n) for which sample i's margin constraint fails."""
    w, b = sol["w"], sol["b"]
    xi = f.variables["xi"].value[i]
    return np.mean(y[i] * ((X[i] + Z) @ w + b) + xi < 1.0)


@pytest.mark.parametrize("eps", [0.05, 0.2])
def test_gaussian_chance_constraint_holds(eps):
    f, sol, X, y = _fit("gaussian", eps)
    no_slack, active, _ = _tight_constraints(f, sol, X, y)
    assert active.sum() >= 2
    rng = np.random.default_rng(0)
    u = f.current_uncertainty()
    se = np.sqrt(eps * (1 - eps) / N_DRAWS)
    freqs = []
    # one set of draws per noise group (each constraint's probability is estimated separately)
    draws = [rng.multivariate_normal(np.zeros(X.shape[1]), A @ A.T, size=N_DRAWS) for A in u.factors]
    for i in np.flatnonzero(no_slack):
        freq = _violation_freq(f, sol, X, y, i, draws[u.group_index[i]])
        assert freq <= eps + 3 * se, (i, freq)
        if active[i]:
            freqs.append(freq)
    # at active constraints the Gaussian bound is exact: frequencies sit at epsilon
    assert np.mean(freqs) == pytest.approx(eps, abs=3 * se)


def _cantelli_worst(direction_unit, A, kap, size, rng, beyond=1e-6):
    """A law with mean 0 and covariance A A^T that puts mass 1/(1+k^2) at -k along ``direction_unit``
    (in the whitened space), k = kap (1 + beyond): the extremal distribution of the one-sided
    Chebyshev bound, pushed just past the boundary so that the violation is strict."""
    n = A.shape[0]
    kap = kap * (1.0 + beyond)
    p = 1.0 / (1.0 + kap * kap)
    z = np.where(rng.random(size) < p, -kap, 1.0 / kap)  # mean 0, variance 1
    G = rng.standard_normal((size, n))
    G -= np.outer(G @ direction_unit, direction_unit)  # orthogonal part keeps identity covariance
    eta = G + np.outer(z, direction_unit)
    return eta @ A.T


@pytest.mark.parametrize("eps", [0.1, 0.3])
def test_chebyshev_chance_constraint_holds_for_gaussian_and_worst_law(eps):
    f, sol, X, y = _fit("chebyshev", eps)
    no_slack, active, _ = _tight_constraints(f, sol, X, y)
    assert active.sum() >= 2
    rng = np.random.default_rng(1)
    u = f.current_uncertainty()
    w = sol["w"]
    se = np.sqrt(eps * (1 - eps) / N_DRAWS)
    worst = []
    gauss = [rng.multivariate_normal(np.zeros(X.shape[1]), A @ A.T, size=20_000) for A in u.factors]
    tight = np.flatnonzero(no_slack)
    # every active constraint, plus a sample of the strictly satisfied ones
    check = np.union1d(np.flatnonzero(active), rng.choice(tight, min(20, tight.size), replace=False))
    for i in check:
        A = u.factors[u.group_index[i]]
        Z = _cantelli_worst(y[i] * (A.T @ w) / np.linalg.norm(A.T @ w), A, f.param_value("kappa"), N_DRAWS, rng)
        if i == check[0]:  # the extremal law really has the covariance Sigma
            np.testing.assert_allclose(np.cov(Z.T), A @ A.T, atol=0.03 * np.abs(A @ A.T).max())
        freq = _violation_freq(f, sol, X, y, i, Z)
        assert freq <= eps + 3 * se
        if active[i]:
            worst.append(freq)
        assert _violation_freq(f, sol, X, y, i, gauss[u.group_index[i]]) <= eps  # Gaussian: far below
    # the bound is tight: the extremal law violates active constraints with frequency ~ epsilon
    assert np.mean(worst) == pytest.approx(eps, abs=4 * se)


def test_printed_chebyshev_factor_of_couellan_jan_2020_is_wrong():
    """[CJ20] prints gamma = sqrt(eps/(1-eps)); with it the worst-case law violates far more than eps."""
    eps = 0.1
    printed = np.sqrt(eps / (1 - eps))
    assert 1.0 / (1.0 + printed**2) == pytest.approx(0.9)  # Cantelli: violation up to 0.9, not 0.1
    X, y, Sigma, groups = make_uncertain_classification(200, 4, separation=3.0, noise_scale=0.3, random_state=5)
    f = chance_constrained_svm(X, y, Sigma, groups, C=1.0, epsilon=eps)
    f.set_params(kappa=printed)
    sol = f.solve("clarabel")
    _, active, _ = _tight_constraints(f, sol, X, y)
    i = np.flatnonzero(active)[0]
    u = f.current_uncertainty()
    A = u.factors[u.group_index[i]]
    rng = np.random.default_rng(2)
    Z = _cantelli_worst(y[i] * (A.T @ sol["w"]) / np.linalg.norm(A.T @ sol["w"]), A, printed, N_DRAWS, rng)
    assert _violation_freq(f, sol, X, y, i, Z) > 0.8


def test_set_params_epsilon_converts_to_kappa():
    X, y, Sigma, groups = make_uncertain_classification(50, 3, random_state=0)
    f = chance_constrained_svm(X, y, Sigma, groups, epsilon=0.2, distribution="gaussian")
    f.set_params(epsilon=0.05)
    assert f.param_value("kappa") == pytest.approx(norm.isf(0.05))
    with pytest.raises(ValueError, match="non-convex"):
        f.set_params(epsilon=0.8)
