import numpy as np
import pytest
from sklearn.svm import SVC

from rsvm_conic.estimators.gaussian_points import PkSVC
from rsvm_conic.kernels.gaussian_points import GaussianPointRFF, expected_rbf_kernel, expected_rbf_kernel_mc
from rsvm_conic.kernels.rbf import gaussian_kernel


def _random_cov(rng, n, scale=1.0):
    B = rng.normal(size=(n, n)) * scale
    return B @ B.T


def test_kernel_matches_monte_carlo_within_3_standard_errors_and_not_the_printed_power():
    rng = np.random.default_rng(0)
    n, sigma = 3, 1.3
    failures_printed = 0
    for trial in range(6):
        x1, x2 = rng.normal(size=n), rng.normal(size=n)
        S1, S2 = _random_cov(rng, n, 0.5), _random_cov(rng, n, 0.5)
        mean, se = expected_rbf_kernel_mc(x1, S1, x2, S2, sigma, n_mc=200_000, random_state=trial)
        k = expected_rbf_kernel(x1[None], S1[None], x2[None], S2[None], sigma)[0, 0]
        assert abs(k - mean) <= 3 * se, (trial, k, mean, se)
        kp = expected_rbf_kernel(x1[None], S1[None], x2[None], S2[None], sigma, variant="printed")[0, 0]
        failures_printed += abs(kp - mean) > 3 * se
    assert failures_printed == 6  # the printed +1/2 power never matches


def test_gram_matrix_entries_match_monte_carlo_diagonal_covariances():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4, 2))
    S = rng.uniform(0.05, 1.0, size=(4, 2))
    K = expected_rbf_kernel(X, S, sigma=0.8)
    for i in range(4):
        for j in range(4):  # i == j: two independent copies (mean-embedding inner product)
            mean, se = expected_rbf_kernel_mc(X[i], S[i], X[j], S[j], 0.8, n_mc=100_000, random_state=10 * i + j)
            assert abs(K[i, j] - mean) <= 3 * se


def test_full_and_diagonal_paths_agree():
    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(7, 3)), rng.normal(size=(5, 3))
    S, T = rng.uniform(0, 1, (7, 3)), rng.uniform(0, 1, (5, 3))
    Kd = expected_rbf_kernel(X, S, Y, T, sigma=1.1)
    Kf = expected_rbf_kernel(X, np.stack([np.diag(s) for s in S]), Y, np.stack([np.diag(t) for t in T]), sigma=1.1)
    assert np.allclose(Kd, Kf, rtol=1e-12, atol=1e-14)


def test_psd_and_printed_counterexample():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 3))
    S = np.stack([_random_cov(rng, 3, rng.uniform(0, 1)) for _ in range(60)])
    K = expected_rbf_kernel(X, S, sigma=1.0)
    assert np.allclose(K, K.T)
    assert np.linalg.eigvalsh(K)[0] > -1e-10
    # two points with the same mean, Sigma_1 = 0, Sigma_2 = a sigma^2: printed Gram has det < 0
    Xc = np.zeros((2, 1))
    Sc = np.array([[0.0], [2.0]])
    Kp = expected_rbf_kernel(Xc, Sc, sigma=1.0, variant="printed")
    assert np.linalg.eigvalsh(Kp)[0] < -0.1
    Kc = expected_rbf_kernel(Xc, Sc, sigma=1.0)
    assert np.linalg.eigvalsh(Kc)[0] >= 0


def test_zero_covariance_reduces_to_rbf_and_pksvc_equals_rbf_svc():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(80, 2))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=80) > 0, "a", "b")
    sigma = 0.9
    assert np.allclose(expected_rbf_kernel(X, None, sigma=sigma), gaussian_kernel(X, X, sigma), atol=1e-14)
    pk = PkSVC(C=2.0, sigma=sigma, tol=1e-8).fit(X, y, Sigma=np.zeros((80, 2)))
    svc = SVC(C=2.0, kernel="rbf", gamma=1 / (2 * sigma**2), tol=1e-8).fit(X, y)
    Xt = rng.normal(size=(50, 2))
    assert np.allclose(pk.decision_function(Xt), svc.decision_function(Xt), atol=1e-6)
    assert np.array_equal(pk.predict(Xt), svc.predict(Xt))


def test_random_features_unbiased_for_gaussian_points():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(5, 2))
    S = rng.uniform(0.1, 0.8, size=(5, 2))
    K = expected_rbf_kernel(X, S, sigma=1.0)
    est = []
    for seed in range(40):
        f = GaussianPointRFF(400, 1.0, random_state=seed).fit(X)
        P = f.transform(X, S)
        est.append(P @ P.T)
    est = np.array(est)
    mean, se = est.mean(0), est.std(0, ddof=1) / np.sqrt(len(est))
    assert np.all(np.abs(mean - K) <= 3.5 * se + 1e-12)


def test_pksvc_with_uncertainty_and_random_features_fit():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(100, 2))
    y = (X[:, 0] > 0).astype(int)
    S = rng.uniform(0.0, 0.5, size=(100, 2))
    exact = PkSVC(C=1.0, sigma=1.0).fit(X, y, Sigma=S)
    rf = PkSVC(C=1.0, sigma=1.0, method="random_features", n_components=300, random_state=0).fit(X, y, Sigma=S)
    assert exact.score(X, y, Sigma=S) > 0.85 and rf.score(X, y, Sigma=S) > 0.85
    assert np.mean(exact.predict(X, S) == rf.predict(X, S)) > 0.9


def test_bad_inputs_raise():
    X = np.zeros((3, 2))
    with pytest.raises(ValueError):
        expected_rbf_kernel(X, -np.ones((3, 2)))
    with pytest.raises(ValueError):
        expected_rbf_kernel(X, np.ones((4, 2)))
    with pytest.raises(ValueError):
        expected_rbf_kernel(X, sigma=0)
    with pytest.raises(ValueError):
        expected_rbf_kernel(np.zeros((2, 2)), np.eye(2))  # ambiguous L == n
    with pytest.raises(ValueError):
        expected_rbf_kernel(X, variant="other")
    with pytest.raises(ValueError):
        PkSVC(method="nope").fit(X, [0, 1, 0])
    with pytest.raises(ValueError):
        PkSVC(C=-1).fit(X, [0, 1, 0])
    with pytest.raises(ValueError):
        expected_rbf_kernel(X, np.array([[[1.0, 2.0], [0.0, 1.0]]] * 3))  # not symmetric


@pytest.mark.parametrize("sigma_fit", [None, "zeros"])
def test_pksvc_without_covariances_is_libsvm_rbf(sigma_fit):
    """Without Sigma the expected kernel is the RBF kernel exp(-||x - y||^2 / (2 sigma^2)): PkSVC routes to
    libsvm's own rbf kernel with gamma = 1 / (2 sigma^2) and equals SVC(kernel='rbf') exactly; the
    precomputed expected-kernel Gram matrix (the previous route) gives the same model to solver accuracy."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(120, 3))
    y = np.where(np.sin(2 * X[:, 0]) + X[:, 1] ** 2 - 0.8 + 0.3 * rng.normal(size=120) > 0, "p", "q")
    Xt = rng.normal(size=(60, 3))
    sigma, C = 0.7, 3.0
    S = None if sigma_fit is None else np.zeros((120, 3))
    pk = PkSVC(C=C, sigma=sigma, tol=1e-8).fit(X, y, Sigma=S)
    assert pk.rbf_route_ and pk.solver_stats_["status"] == "optimal" and pk.solver_stats_["gap_rel"] <= 1e-8
    svc = SVC(C=C, kernel="rbf", gamma=1 / (2 * sigma**2), tol=1e-8).fit(X, y)
    # the same model; PkSVC's is libsvm's polished in double precision (libsvm caches K in single)
    np.testing.assert_allclose(pk.decision_function(Xt), svc.decision_function(Xt), atol=1e-5)
    np.testing.assert_array_equal(pk.predict(Xt), svc.predict(Xt))
    # independent route: libsvm on the precomputed Gram matrix of the expected kernel
    pre = SVC(C=C, kernel="precomputed", tol=1e-8).fit(expected_rbf_kernel(X, None, sigma=sigma), y)
    ref = pre.decision_function(expected_rbf_kernel(Xt, None, X, None, sigma=sigma))
    np.testing.assert_allclose(pk.decision_function(Xt), ref, atol=1e-6)
    # uncertain test points: the expected kernel against the support vectors, as the precomputed route does
    St = rng.uniform(0.0, 0.4, size=(60, 3))
    ref_unc = pre.decision_function(expected_rbf_kernel(Xt, St, X, None, sigma=sigma))
    np.testing.assert_allclose(pk.decision_function(Xt, Sigma=St), ref_unc, atol=1e-6)
    # with training covariances the expected-kernel route is used
    assert not PkSVC(C=C, sigma=sigma).fit(X, y, Sigma=rng.uniform(0, 0.2, (120, 3))).rbf_route_


@pytest.mark.parametrize("offset", [0.0, 1e3, 1e4, 1e6])
@pytest.mark.parametrize("p", [1, 3, 8])
def test_squared_distances_far_from_origin_match_extended_precision(offset, p):
    """||x||^2 + ||y||^2 - 2 x.y cancels catastrophically far from the origin (relative error
    ~ eps offset^2 / distance^2).  squared_distances must keep its documented relative accuracy
    whatever the offset, give exactly 0 for coincident rows and a symmetric matrix for Y = X."""
    from _fuzzutil import sqdist_reference, sqdist_rtol

    from rsvm_conic.kernels.rbf import squared_distances

    rng = np.random.default_rng(int(offset) % 1000 + p)
    shift = offset * rng.standard_normal(p)
    X = rng.standard_normal((50, p)) + shift
    Y = rng.standard_normal((20, p)) * 1e-3 + X[:20]  # near neighbours of X's rows: the hard case
    Y[3] = X[7]
    X[10] = X[11]  # duplicate rows
    D, E = squared_distances(X), squared_distances(X, Y)
    assert np.all(np.diag(D) == 0) and D[10, 11] == 0 and D[11, 10] == 0 and E[7, 3] == 0
    assert np.array_equal(D, D.T)
    for got, ref in ((D, sqdist_reference(X)), (E, sqdist_reference(X, Y))):
        err = np.abs(got - ref) / np.where(ref > 0, ref, 1)
        assert float(err.max()) <= sqdist_rtol(p)
    # the Gaussian kernel: exact diagonal, and the same values as the expected-RBF kernel with no
    # covariance (which takes direct differences) up to the same relative accuracy of the distance
    K = gaussian_kernel(X, X, 0.7)
    assert np.all(np.diag(K) == 1.0)
    np.testing.assert_allclose(expected_rbf_kernel(X, None, sigma=0.7), K, rtol=0, atol=sqdist_rtol(p))


def test_squared_distances_blocks_give_the_same_result(monkeypatch):
    """The recomputation runs in blocks of rows and of flagged pairs; block sizes change nothing."""
    from rsvm_conic.kernels import rbf

    rng = np.random.default_rng(3)
    X = np.repeat(rng.standard_normal((7, 4)) + 1e4, 5, axis=0)  # many coincident rows
    Y = X[::3] + 1e-6
    full = rbf.squared_distances(X), rbf.squared_distances(X, Y)
    monkeypatch.setattr(rbf, "_BLOCK", 7)
    small = rbf.squared_distances(X), rbf.squared_distances(X, Y)
    for a, b in zip(full, small):
        assert np.array_equal(a, b)
    assert np.all(full[0][np.equal.outer(np.arange(35) // 5, np.arange(35) // 5)] == 0)


@pytest.mark.parametrize("method,cov", [("exact", False), ("exact", True), ("random_features", True)])
def test_pksvc_is_certified_against_an_exact_qp(method, cov):
    """Every route's certificate: the dual bound lies below the optimum of the SVM dual QP solved by
    Clarabel (an independent exact solve) and the returned point is within the certified gap of it."""
    import cvxpy as cp

    from rsvm_conic.kernels.gaussian_points import as_covariances

    rng = np.random.default_rng(11)
    X = rng.normal(size=(70, 2))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.4 * rng.normal(size=70) > 0.3, 1, -1)
    S = rng.uniform(0.0, 0.3, size=(70, 2)) if cov else None
    C = 10.0
    pk = PkSVC(C=C, sigma=0.8, method=method, n_components=80, random_state=0).fit(X, y, Sigma=S)
    info = pk.solver_stats_
    assert info["status"] == "optimal" and info["gap_rel"] <= 1e-6
    if method == "exact":
        K = expected_rbf_kernel(X, as_covariances(S, 70, 2)[0], sigma=0.8)
    else:
        Phi = pk.features_.transform(X, S)
        K = Phi @ Phi.T
    lam, U = np.linalg.eigh(0.5 * (K + K.T))
    L = U * np.sqrt(np.clip(lam, 0, None))
    a = cp.Variable(70)
    prob = cp.Problem(
        cp.Minimize(0.5 * cp.sum_squares(L.T @ cp.multiply(y, a)) - cp.sum(a)), [a >= 0, a <= C, y @ a == 0]
    )
    prob.solve(solver="CLARABEL")
    opt = -prob.value  # the SVM optimum (the dual QP's value, negated)
    scale = max(abs(opt), 1.0)
    assert info["dual"] <= opt + 1e-7 * scale
    assert info["primal"] - opt <= info["gap_abs"] + 1e-7 * scale
    # the claimed primal is the SVM objective of the returned model, evaluated from its coefficients
    w_sq = (pk.dual_coef_[0] @ K[np.ix_(pk.support_, pk.support_)] @ pk.dual_coef_[0]) if method == "exact" else None
    if method == "random_features":
        w_sq = float(pk.coef_ @ pk.coef_)
    yy = np.where(y == pk.classes_[1], 1.0, -1.0)
    evaluated = 0.5 * w_sq + C * np.sum(np.maximum(0.0, 1.0 - yy * pk.decision_function(X, Sigma=S)))
    assert evaluated == pytest.approx(info["primal"], rel=1e-9)


def test_pksvc_raises_when_it_cannot_certify(monkeypatch):
    from rsvm_conic.estimators import gaussian_points as gp
    from rsvm_conic.exceptions import SolverError

    rng = np.random.default_rng(12)
    X = rng.normal(size=(40, 2))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=40) > 0, 1, -1)
    monkeypatch.setattr(gp, "LIBSVM_TOL", 10.0)  # libsvm stops at once
    monkeypatch.setattr(gp, "FULL_POLISH_MAX", 0)  # and no full polish
    with pytest.raises(SolverError, match="certified relative gap"):
        PkSVC(C=100.0, sigma=0.5, tol=1e-12).fit(X, y)


def _separable_sets():
    """Standardised real data whose RBF optimum (sigma = 1) separates them: its multipliers stay below ~10 at every
    C from 1e4 on, so the optimum is the same for all those C."""
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    from rsvm_conic.datasets import load_dataset

    X, y = load_iris(return_X_y=True)
    yield "iris", StandardScaler().fit_transform(X), np.where(y == 0, 1, -1)
    X, y = load_dataset("bupa")
    yield "bupa", StandardScaler().fit_transform(X), np.where(y == 1, 1, -1)


@pytest.mark.parametrize("C", [1e8, 1e10])
def test_pksvc_certifies_a_large_C_whose_optimum_separates_the_data(C):
    """PkSVC(C=1e8) raised (certified gap 0.98-0.997 on these sets): the polish called every multiplier below 1e-9 C
    zero (0.1 at C = 1e8, most support vectors), and at the optimum the best-bias model pays C times the rounding of
    the support vectors' margins.  Now the polish thresholds follow the multipliers' scale and the model is rescaled
    to margins >= 1; the certificate is real (no floor: the absolute gap against the objective itself) and the
    optimum is the one at C = 1e4."""
    for name, X, y in _separable_sets():
        ref = PkSVC(C=1e4).fit(X, y)
        pk = PkSVC(C=C).fit(X, y)
        info = pk.solver_stats_
        assert info["status"] == "optimal", name
        assert info["gap_abs"] <= 1e-6 * abs(info["primal"]), name
        assert abs(info["primal"] - ref.solver_stats_["primal"]) <= 2e-6 * abs(ref.solver_stats_["primal"]), name
        # the claimed primal is the returned model's objective, evaluated from its coefficients: no hinge loss
        K = gaussian_kernel(X[pk.support_], X[pk.support_], 1.0)
        margins = y * pk.decision_function(X)
        assert np.min(margins) >= 1.0, name
        assert 0.5 * pk.dual_coef_[0] @ K @ pk.dual_coef_[0] == pytest.approx(info["primal"], rel=1e-9), name
