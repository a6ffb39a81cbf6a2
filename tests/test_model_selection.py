"""The uncertainty through scikit-learn's model selection (no metadata routing, default splitters).

scikit-learn slices every fit parameter whose first axis has the length of X with the training indices and passes
the others as they are; it keeps ``groups`` for the splitter.  So the group index is ``sigma_index`` (``groups=``
raises, naming it), per-sample arrays follow the samples, and a shared Sigma that could be mistaken for a
per-sample one is passed with a leading axis of length 1 -- or fails with that advice, never silently.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, RobustScaler, StandardScaler

from rsvm_conic.estimators import ChanceConstrainedSVC, NominalSVC, RobustFeatureSVC, RobustSVC
from rsvm_conic.uncertainty import scale_covariance

EPS = float(np.finfo(float).eps)


def _data(L=60, n=3, seed=0):
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(L) % 2 == 0, 1, 0)
    X = rng.standard_normal((L, n)) + 1.5 * (2 * y - 1)[:, None] * np.eye(n)[0]
    S = np.stack([np.diag(rng.uniform(0.05, 0.3, n)), 0.2 * np.eye(n)])
    return rng, X, y, S, y.copy()  # sigma_index: one covariance per class


def _close(a, b):
    """Two certified fits of one problem: objectives within their gaps, w within sqrt(2 gap) each."""
    ga, gb = a.solver_stats_["gap_abs"], b.solver_stats_["gap_abs"]
    assert abs(a.objective_ - b.objective_) <= ga + gb + 64 * EPS * abs(a.objective_)
    assert np.linalg.norm(a.coef_ - b.coef_) <= np.sqrt(2 * ga) + np.sqrt(2 * gb) + 1e-12


def test_grid_search_passes_sigma_and_sigma_index_to_every_fit():
    """The issue's case: GridSearchCV(RobustSVC(), ...).fit(X, y, Sigma=S, groups=g) failed all 12 fits."""
    _, X, y, S, g = _data()
    grid = {"C": [0.1, 1.0, 10.0], "radius": [0.1, 0.5]}
    search = GridSearchCV(RobustSVC(), grid, cv=2, error_score="raise").fit(X, y, Sigma=S, sigma_index=g)
    scores = search.cv_results_["mean_test_score"]
    assert scores.shape == (6,) and np.all(np.isfinite(scores))


@pytest.mark.parametrize("make", [NominalSVC, RobustSVC, ChanceConstrainedSVC, RobustFeatureSVC])
def test_every_uncertain_estimator_refuses_groups_naming_sigma_index(make):
    _, X, y, S, g = _data()
    with pytest.raises(ValueError, match=f"{make.__name__}.fit takes no groups.*Pass sigma_index="):
        make().fit(X, y, Sigma=S, groups=g)


def test_groups_is_refused_naming_sigma_index():
    _, X, y, S, g = _data()
    with pytest.raises(ValueError, match="takes no groups.*sigma_index"):
        RobustSVC().fit(X, y, Sigma=S, groups=g)
    # through GridSearchCV, groups= goes to the splitter: the estimator sees Sigma alone and says what is missing
    with pytest.raises(ValueError, match="pass sigma_index=.*groups= goes to the splitter"), warnings.catch_warnings():
        # scikit-learn's own note that StratifiedKFold ignores groups (its splitter, not ours)
        warnings.filterwarnings("ignore", message="The groups parameter is ignored", category=UserWarning)
        GridSearchCV(RobustSVC(), {"C": [1.0]}, cv=2, error_score="raise").fit(X, y, Sigma=S, groups=g)
    with pytest.raises(TypeError, match="unexpected keyword"):
        RobustSVC().fit(X, y, sigma=S)


@pytest.mark.parametrize("kind", ["per-sample Sigma", "sigma_index", "sample_radius", "sample_weight"])
def test_cross_validate_keeps_per_sample_arrays_aligned(kind):
    """Each fold's model equals the direct fit on that fold's rows of every per-sample array."""
    rng, X, y, S, g = _data(L=40)
    L = X.shape[0]
    kw = {
        "per-sample Sigma": dict(Sigma=rng.uniform(0.05, 0.4, (L, 3, 1)) * np.eye(3)),
        "sigma_index": dict(Sigma=S, sigma_index=g),
        "sample_radius": dict(Sigma=S, sigma_index=g, sample_radius=rng.uniform(0.2, 2.0, L)),
        "sample_weight": dict(sample_weight=rng.integers(0, 4, L)),
    }[kind]
    cv = KFold(4, shuffle=True, random_state=0)
    res = cross_validate(RobustSVC(radius=0.3), X, y, cv=cv, params=kw, return_estimator=True, error_score="raise")
    for est, (train, _) in zip(res["estimator"], cv.split(X)):
        sliced = {k: (v[train] if np.shape(v)[:1] == (L,) else v) for k, v in kw.items()}
        _close(est, RobustSVC(radius=0.3).fit(X[train], y[train], **sliced))


def test_a_fold_that_misses_a_group_still_fits():
    """sigma_index holds positions along Sigma's first axis: a fold without some group fits with the others."""
    _, X, y, _, _ = _data(L=40)
    S = np.stack([0.1 * np.eye(3), 0.3 * np.eye(3), 2.0 * np.eye(3)])
    idx = np.where(np.arange(40) < 10, 2, np.arange(40) % 2)  # group 2 only in the first fold
    train = np.arange(10, 40)
    a = RobustSVC(radius=0.3).fit(X[train], y[train], Sigma=S, sigma_index=idx[train])
    b = RobustSVC(radius=0.3).fit(X[train], y[train], Sigma=S[:2], sigma_index=idx[train])
    _close(a, b)
    search = GridSearchCV(RobustSVC(), {"radius": [0.1, 0.3]}, cv=KFold(4), error_score="raise")
    search.fit(X, y, Sigma=S, sigma_index=idx)


def test_one_matrix_per_sample_with_sigma_index_is_refused():
    """n_groups == n_samples: cross-validation would slice Sigma with the samples, so the index is ambiguous."""
    _, X, y, _, _ = _data(L=20)
    S = np.stack([0.1 * np.eye(3)] * 20)
    with pytest.raises(ValueError, match="one matrix per sample .* Pass Sigma\\[sigma_index\\]"):
        RobustSVC().fit(X, y, Sigma=S, sigma_index=np.arange(20) % 2)
    with pytest.raises(ValueError, match="one matrix per sample .* Pass Sigma\\[sigma_index\\]"):  # weights drop rows
        RobustSVC().fit(X, y, Sigma=S, sigma_index=np.arange(20) % 2, sample_weight=np.r_[0.0, np.ones(19)])


@pytest.mark.parametrize("diagonal", [False, True])
def test_shared_sigma_with_as_many_features_as_samples(diagonal):
    """d == n_samples: a shared (d, d) or (d,) Sigma is sliced by cross-validation; the fold says so and how to
    pass it (Sigma[None]), and Sigma[None] gives each fold the direct fit with the shared Sigma."""
    rng = np.random.default_rng(3)
    L = d = 12
    y = np.where(np.arange(L) % 2 == 0, 1, 0)
    X = rng.standard_normal((L, d)) + 2.0 * (2 * y - 1)[:, None] * np.eye(d)[0]
    S = rng.uniform(0.05, 0.3, d) if diagonal else np.diag(rng.uniform(0.05, 0.3, d))
    est = RobustSVC(radius=0.2)
    with pytest.raises(ValueError, match=r"scikit-learn sliced it: pass a shared Sigma .*Sigma\[None\]"):
        cross_validate(est, X, y, cv=3, params={"Sigma": S}, error_score="raise")
    cv = KFold(3)
    res = cross_validate(est, X, y, cv=cv, params={"Sigma": S[None]}, return_estimator=True, error_score="raise")
    for fitted, (train, _) in zip(res["estimator"], cv.split(X)):
        _close(fitted, RobustSVC(radius=0.2).fit(X[train], y[train], Sigma=S))


@pytest.mark.parametrize("make", [StandardScaler, RobustScaler, MaxAbsScaler, MinMaxScaler, "divisors"])
def test_scale_covariance_is_the_covariance_of_the_scaled_noise(make):
    """Monte Carlo: noisy copies of x with covariance Sigma (units of X), scaled, have covariance
    scale_covariance(Sigma, scaler), within 5 standard errors of the sample covariance's entries."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 3)) * [1.0, 30.0, 0.01] + [0.0, 5.0, -1.0]
    B = rng.standard_normal((3, 3)) * [1.0, 30.0, 0.01]
    Sigma = B @ B.T / 3
    if make == "divisors":
        D = np.array([2.0, 40.0, 0.02])
        scaled, scaler = (lambda Z: Z / D), D
    else:
        scaler = make().fit(X)
        scaled = scaler.transform
    m = 200_000
    noisy = X[0] + rng.multivariate_normal(np.zeros(3), Sigma, size=m)
    Z = scaled(noisy)
    emp = np.cov(Z, rowvar=False)
    T = scale_covariance(Sigma, scaler)
    se = np.sqrt((np.outer(np.diag(T), np.diag(T)) + T**2) / m)  # std. error of a Gaussian sample covariance
    assert np.all(np.abs(emp - T) <= 5 * se)
    assert np.allclose(scale_covariance(np.diag(Sigma), scaler), np.diag(T), rtol=1e-12)
    assert np.allclose(scale_covariance(np.stack([Sigma, 2 * Sigma]), scaler), np.stack([T, 2 * T]), rtol=1e-12)


def test_scale_covariance_rejects_an_unfitted_scaler_and_bad_shapes():
    with pytest.raises(ValueError, match="fit it first"):
        scale_covariance(np.eye(2), StandardScaler())
    with pytest.raises(ValueError, match="Sigma has 3 features per row but the scaler has 2"):
        scale_covariance(np.eye(3), np.ones(2))
    with pytest.raises(ValueError, match="positive per-feature divisors"):
        scale_covariance(np.eye(2), np.array([1.0, 0.0]))


@pytest.mark.parametrize(
    "make",
    [
        lambda: RobustSVC(radius=0.5),
        lambda: ChanceConstrainedSVC(epsilon=0.3),
        lambda: RobustFeatureSVC(n_components=10, sigma=3.0, radius=0.05, random_state=0),
    ],
)
def test_pipeline_fit_equals_the_fit_on_scaled_data_with_the_scaled_sigma(make):
    rng = np.random.default_rng(2)
    y = np.where(np.arange(60) % 2 == 0, 1, 0)
    X = (rng.standard_normal((60, 3)) + 1.5 * (2 * y - 1)[:, None] * np.eye(3)[0]) * [1.0, 100.0, 0.01]
    Sigma = np.diag([0.3, 0.3 * 100**2, 0.3 * 0.01**2])  # noise in the units of X
    scaler = StandardScaler().fit(X)
    pipe = make_pipeline(StandardScaler(), make())
    name = pipe.steps[-1][0]
    pipe.fit(X, y, **{f"{name}__Sigma": scale_covariance(Sigma, scaler)})
    direct = make().fit(scaler.transform(X), y, Sigma=scale_covariance(Sigma, scaler))
    _close(pipe[-1], direct)
    assert np.array_equal(pipe.predict(X), direct.predict(scaler.transform(X)))


def test_grid_search_over_a_pipeline_with_sigma_as_a_fit_param():
    """GridSearchCV over C and the radius of Pipeline(StandardScaler(), RobustSVC()), Sigma as robustsvc__Sigma."""
    rng, X, y, S, g = _data(L=80)
    X = X * [1.0, 10.0, 0.1]
    scaler = StandardScaler().fit(X)
    S_scaled = scale_covariance(S * np.outer([1.0, 10.0, 0.1], [1.0, 10.0, 0.1]), scaler)
    pipe = make_pipeline(StandardScaler(), RobustSVC())
    grid = {"robustsvc__C": [0.1, 1.0], "robustsvc__radius": [0.1, 1.0]}
    search = GridSearchCV(pipe, grid, cv=3, error_score="raise")
    search.fit(X, y, robustsvc__Sigma=S_scaled, robustsvc__sigma_index=g)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"])) and search.best_score_ > 0.8
