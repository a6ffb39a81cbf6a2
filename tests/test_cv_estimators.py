"""RobustSVCCV: cross-validation along certified, warm-started paths, against GridSearchCV."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold

from rsvm_conic.estimators import RobustSVC, RobustSVCCV
from rsvm_conic.exceptions import ConstantClassifierWarning


def _data(seed=0, L=240, n=3):
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(L) % 3 == 0, 1, 0)
    X = rng.standard_normal((L, n)) + 1.2 * (2 * y - 1)[:, None] * np.eye(n)[0]
    S = np.stack([np.diag(rng.uniform(0.05, 0.6, n)), 0.4 * np.eye(n)])
    return X, y, S, rng.integers(0, 2, L)


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantClassifierWarning)
        return fn()


@pytest.mark.parametrize("scoring", [None, "balanced_accuracy"])
def test_selects_what_grid_search_selects_with_sigma_split_per_fold(scoring):
    """The pinned case: the same splitter, the uncertainty (Sigma shared, sigma_index per sample) sliced per fold
    as GridSearchCV slices it; the same mean scores at every point and the same selected (C, radius)."""
    X, y, S, g = _data()
    Cs, radii = [0.1, 10.0], [2.0, 0.5, 0.2, 0.05]
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    ours = _quiet(lambda: RobustSVCCV(Cs=Cs, radii=radii, cv=cv, scoring=scoring).fit(X, y, Sigma=S, sigma_index=g))
    grid = GridSearchCV(RobustSVC(), {"C": Cs, "radius": radii}, cv=cv, scoring=scoring, error_score="raise")
    _quiet(lambda: grid.fit(X, y, Sigma=S, sigma_index=g))
    assert ours.scores_.shape == (3, 2, 4) and np.all(ours.gaps_ <= 1e-6)
    assert np.allclose(ours.scores_.mean(axis=0).ravel(), grid.cv_results_["mean_test_score"], atol=1e-12)
    assert (ours.C_, ours.radius_) == (grid.best_params_["C"], grid.best_params_["radius"])
    assert ours.best_score_ == pytest.approx(grid.best_score_)
    best = grid.best_estimator_
    ga, gb = ours.best_estimator_.solver_stats_["gap_abs"], best.solver_stats_["gap_abs"]
    assert abs(ours.best_estimator_.objective_ - best.objective_) <= ga + gb + 1e-12 * abs(best.objective_)
    assert np.mean(ours.predict(X) == best.predict(X)) >= 0.99


def test_default_radii_and_per_sample_arrays():
    """Default radii (from the constant fit's radius on all the data, decreasing); per-sample sample_radius and
    sample_weight are sliced with the training rows, as GridSearchCV slices them."""
    X, y, S, g = _data(1)
    rng = np.random.default_rng(1)
    kw = dict(Sigma=S, sigma_index=g, sample_radius=rng.uniform(0.5, 1.5, X.shape[0]))
    ours = _quiet(lambda: RobustSVCCV(n_radii=4, cv=KFold(3)).fit(X, y, **kw))
    assert ours.radii_.shape == (4,) and np.all(np.diff(ours.radii_) < 0) and ours.Cs_.tolist() == [1.0]
    grid = GridSearchCV(RobustSVC(), {"radius": list(ours.radii_)}, cv=KFold(3), error_score="raise")
    _quiet(lambda: grid.fit(X, y, **kw))
    assert np.allclose(ours.scores_.mean(axis=0).ravel(), grid.cv_results_["mean_test_score"], atol=1e-12)
    assert ours.radius_ == grid.best_params_["radius"]


def test_refit_false_selects_without_a_model():
    X, y, S, g = _data(2)
    ours = _quiet(lambda: RobustSVCCV(radii=[1.0, 0.1], cv=2, refit=False).fit(X, y, Sigma=S, sigma_index=g))
    assert ours.C_ == 1.0 and ours.radius_ in (1.0, 0.1) and not hasattr(ours, "coef_")
    with pytest.raises(NotFittedError):
        ours.predict(X)


def test_groups_go_to_the_splitter():
    from sklearn.model_selection import GroupKFold

    X, y, S, g = _data(3)
    folds = (np.arange(X.shape[0]) // 7) % 5
    ours = _quiet(lambda: RobustSVCCV(radii=[0.5, 0.1], cv=GroupKFold(3)).fit(X, y, groups=folds, Sigma=S[0]))
    grid = GridSearchCV(RobustSVC(), {"radius": [0.5, 0.1]}, cv=GroupKFold(3), error_score="raise")
    _quiet(lambda: grid.fit(X, y, groups=folds, Sigma=S[0]))
    assert np.allclose(ours.scores_.mean(axis=0).ravel(), grid.cv_results_["mean_test_score"], atol=1e-12)


def test_wasserstein_cv_selects_what_grid_search_selects():
    """The same base for an estimator without C: the radius of the Wasserstein ball, sample weights sliced."""
    from rsvm_conic.estimators import WassersteinSVC, WassersteinSVCCV

    X, y, _, _ = _data(4, L=150)
    w = np.random.default_rng(4).integers(1, 3, X.shape[0]).astype(float)
    radii = [0.5, 0.1, 0.02, 0.005]
    cv = StratifiedKFold(3, shuffle=True, random_state=1)
    ours = _quiet(lambda: WassersteinSVCCV(radii=radii, cv=cv).fit(X, y, sample_weight=w))
    grid = GridSearchCV(WassersteinSVC(), {"radius": radii}, cv=cv, error_score="raise")
    _quiet(lambda: grid.fit(X, y, sample_weight=w))
    assert ours.C_ is None and ours.scores_.shape == (3, 1, 4) and np.all(ours.gaps_ <= 1e-6)
    # each fold's accuracy weighted by the test samples' weights, by hand
    weighted = np.array(
        [
            [
                np.average(
                    _quiet(lambda: WassersteinSVC(radius=r).fit(X[tr], y[tr], sample_weight=w[tr])).predict(X[te])
                    == y[te],
                    weights=w[te],
                )  # fmt: skip
                for r in radii
            ]
            for tr, te in cv.split(X, y)
        ]
    )
    assert np.allclose(ours.scores_[:, 0, :], weighted, atol=1e-12)
    assert ours.radius_ == radii[int(np.argmax(weighted.mean(axis=0)))]
    # scikit-learn >= 1.9 weights GridSearchCV's test scores too (older releases do not): then the two agree
    if np.allclose(grid.cv_results_["mean_test_score"], weighted.mean(axis=0), atol=1e-12):
        assert ours.radius_ == grid.best_params_["radius"]
    with pytest.raises(ValueError, match=r"kappa = inf\) only; got kappa = 1"):
        WassersteinSVCCV(kappa=1.0).fit(X, y)


def test_wasserstein_default_radii_start_where_w_becomes_zero():
    """The default grid of WassersteinSVCCV starts at R* (WassersteinSVC.radius_threshold): a cold fit just above it
    is constant (at R* itself w = 0 is one optimum of several), a fit at the grid's second radius is not."""
    from rsvm_conic.estimators import WassersteinSVC, WassersteinSVCCV
    from rsvm_conic.estimators.path import default_radii

    X, y, _, _ = _data(5, L=150)
    radii = default_radii(WassersteinSVC(), X, y, n_radii=6)
    assert np.all(np.diff(radii) < 0)

    def norm_w(r):
        return np.linalg.norm(_quiet(lambda: WassersteinSVC(radius=r).fit(X, y)).coef_)

    scale = np.linalg.norm(X, axis=1).max()
    assert norm_w(radii[0] * 1.01) <= 1e-6 * scale
    assert norm_w(radii[1]) > 1e-2
    ours = _quiet(lambda: WassersteinSVCCV(n_radii=6, cv=3).fit(X, y))
    assert np.allclose(ours.radii_, radii) and np.all(ours.gaps_ <= 1e-6)


def test_folds_in_parallel_give_the_same_scores():
    X, y, S, g = _data(5, L=120)
    kw = dict(radii=[1.0, 0.3, 0.1], Cs=[0.1, 1.0], cv=3)
    serial = _quiet(lambda: RobustSVCCV(**kw).fit(X, y, Sigma=S, sigma_index=g))
    parallel = _quiet(lambda: RobustSVCCV(n_jobs=2, **kw).fit(X, y, Sigma=S, sigma_index=g))
    assert np.array_equal(serial.scores_, parallel.scores_)
    assert (serial.C_, serial.radius_) == (parallel.C_, parallel.radius_)


def _cold_and_warm_agree(est, cold):
    ga, gb = est.solver_stats_["gap_abs"], cold.solver_stats_["gap_abs"]
    return abs(est.objective_ - cold.objective_) <= ga + gb + 1e-12 * abs(cold.objective_)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_refit_starts_from_the_folds_solutions_and_equals_a_cold_fit(seed):
    """The refit at the selected (C, radius) is warm-started from the folds' mean solution there (the working set,
    fewer interior-point iterations than a cold fit on these data) and certified on all the data: it equals the cold
    fit within the two certified gaps, and the model is an ordinary fit (no warm state kept, warm_start=False)."""
    X, y, S, g = _data(seed, L=600, n=4)
    ours = _quiet(lambda: RobustSVCCV(Cs=[0.3, 3.0], radii=[0.6, 0.2, 0.05], cv=3).fit(X, y, Sigma=S, sigma_index=g))
    best = ours.best_estimator_
    cold = _quiet(lambda: RobustSVC(C=ours.C_, radius=ours.radius_).fit(X, y, Sigma=S, sigma_index=g))
    assert np.any(cold.coef_) and best.solver_stats_["status"] == "optimal"
    assert best.solver_stats_.get("warm_start") == "working set"
    assert best.solver_stats_["iterations"] < cold.solver_stats_["iterations"]
    assert _cold_and_warm_agree(best, cold)
    assert best.warm_start is False and getattr(best, "_warm", None) is None and not hasattr(best, "_start")


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_a_start_far_from_the_solution_still_gives_the_certified_fit(scale):
    """A start from other data (any point: far, opposite, tiny) only changes the route: the fit is certified on these
    data and equals the cold fit within the certified gaps."""
    X, y, S, g = _data(4, L=300)
    cold = RobustSVC(C=2.0, radius=0.2).fit(X, y, Sigma=S, sigma_index=g)
    for coef, b in [(-scale * cold.coef_.ravel(), -1.0), (scale * np.ones(X.shape[1]), 5.0)]:
        est = RobustSVC(C=2.0, radius=0.2)._fit_from(coef, b, X, y, Sigma=S, sigma_index=g)
        assert est.solver_stats_["status"] == "optimal" and _cold_and_warm_agree(est, cold)
