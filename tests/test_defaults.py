"""Defaults a first call can use: every estimator at its defaults gives an informative model on every vendored binary
data set, standardised (cross-validated accuracy above the majority rate by two standard errors, both classes
predicted).

No linear model is informative on banana (its class means nearly coincide; the nominal linear SVM is no better than
the majority rate there): the linear estimators' defaults are then checked to cost nothing against the nominal SVM.
"""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

from rsvm_conic.datasets import load_dataset
from rsvm_conic.datasets.keel import VENDORED
from rsvm_conic.estimators import (
    ChanceConstrainedSVC,
    HyperbolicSVC,
    KernelRobustSVC,
    NominalSVC,
    PkSVC,
    RobustFeatureSVC,
    RobustSVC,
    SafeSVC,
    WestonWatkinsSVC,
)
from rsvm_conic.kernels.rbf import gaussian_kernel

BINARY = sorted(name for name, entry in VENDORED.items() if entry[4] == 2)
#: rows drawn (seeded) from each set, predicted by 3-fold cross-validation: two standard errors of the majority
#: rate are then 4.6-5.3 points
N_ROWS, FOLDS = 450, 3
LINEAR = ("NominalSVC", "RobustSVC", "ChanceConstrainedSVC", "SafeSVC")
#: every public estimator, at its defaults (a seed where the estimator draws random numbers)
DEFAULTS = {
    "NominalSVC": NominalSVC,
    "RobustSVC": RobustSVC,
    "ChanceConstrainedSVC": ChanceConstrainedSVC,
    "RobustFeatureSVC": lambda: RobustFeatureSVC(random_state=0),
    "SafeSVC": lambda: SafeSVC(random_state=0),
    "PkSVC": PkSVC,
    "WestonWatkinsSVC": WestonWatkinsSVC,
    "KernelRobustSVC": KernelRobustSVC,
}


def _data(name):
    X, y = load_dataset(name)
    y = (y == np.unique(y)[0]).astype(int)
    if y.size > N_ROWS:
        keep = np.random.default_rng(0).choice(y.size, N_ROWS, replace=False)
        X, y = X[keep], y[keep]
    return X, y


def _fit_predict(make, Xtr, ytr, Xte):
    """Fit the estimator at its defaults and predict the test rows; KernelRobustSVC gets kernel samples (RBF kernels
    of the inputs under small noise, bandwidth sqrt(n_features / 2), scikit-learn's ``gamma="scale"``)."""
    est = make()
    if isinstance(est, KernelRobustSVC):
        rng = np.random.default_rng(0)
        sigma = np.sqrt(Xtr.shape[1] / 2.0)
        samples = np.stack([gaussian_kernel(Z, Z, sigma) for Z in Xtr + 0.1 * rng.standard_normal((10, *Xtr.shape))])
        est.fit(samples, ytr)
        return est.predict(gaussian_kernel(Xte, Xtr, sigma))
    est.fit(Xtr, ytr)
    return est.predict(Xte)


def _cv_accuracy(make, name):
    """Cross-validated accuracy, each fold standardised on its training rows; and the majority rate's two standard
    errors."""
    X, y = _data(name)
    pred = np.empty_like(y)
    for train, test in StratifiedKFold(FOLDS, shuffle=True, random_state=0).split(X, y):
        scaler = StandardScaler().fit(X[train])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a constant fit warns; the accuracy below says what matters here
            pred[test] = _fit_predict(make, scaler.transform(X[train]), y[train], scaler.transform(X[test]))
    majority = max(y.mean(), 1.0 - y.mean())
    return float(np.mean(pred == y)), len(np.unique(pred)), majority, 2.0 * np.sqrt(majority * (1 - majority) / y.size)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("estimator", sorted(DEFAULTS))
def test_the_defaults_give_an_informative_model(estimator, name):
    accuracy, n_predicted, majority, two_se = _cv_accuracy(DEFAULTS[estimator], name)
    if name == "banana" and estimator in LINEAR:
        nominal, _, _, _ = _cv_accuracy(NominalSVC, name)
        assert nominal <= majority + two_se  # no linear model is informative here
        assert accuracy >= nominal - two_se, f"{estimator}() on {name}: accuracy {accuracy:.3f}, nominal {nominal:.3f}"
        return
    assert n_predicted == 2 and accuracy > majority + two_se, (
        f"{estimator}() on {name}: accuracy {accuracy:.3f}, majority {majority:.3f} (+ {two_se:.3f})"
    )


@pytest.mark.long
@pytest.mark.parametrize("name", BINARY)
def test_the_hyperbolic_machine_defaults_give_an_informative_model(name):
    """HyperbolicSVC's convex-concave procedure takes 10-60 s per fit on 300 rows (slow)."""
    accuracy, n_predicted, majority, two_se = _cv_accuracy(HyperbolicSVC, name)
    assert n_predicted == 2 and accuracy > majority + two_se, f"accuracy {accuracy:.3f}, majority {majority:.3f}"


def test_the_default_noise_is_a_fixed_fraction_of_the_within_class_spread():
    """Without Sigma the robust linear estimators assume noise of covariance 0.02**2 W (W the pooled within-class
    covariance, in the data's own units): the fit equals one given that Sigma explicitly, and differs from the
    identity's."""
    Xtr, ytr = _data("bupa")
    Xtr = StandardScaler().fit_transform(Xtr)
    Xc = Xtr.copy()
    for c in (0, 1):
        Xc[ytr == c] -= Xc[ytr == c].mean(axis=0)
    W = Xc.T @ Xc / ytr.size
    for make in (RobustSVC, ChanceConstrainedSVC, lambda: RobustFeatureSVC(random_state=0)):
        default = make().fit(Xtr, ytr)
        explicit = make().fit(Xtr, ytr, Sigma=0.02**2 * W)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the identity is too large a noise here: a constant fit warns
            identity = make().fit(Xtr, ytr, Sigma=np.ones(Xtr.shape[1]))
        scale = np.abs(explicit.coef_).max()
        assert np.allclose(default.coef_, explicit.coef_, rtol=1e-5, atol=1e-5 * scale)
        assert not np.allclose(default.coef_, identity.coef_, rtol=1e-2, atol=1e-2 * scale)


def test_the_default_noise_covariance_on_dask_row_blocks_equals_the_in_memory_one():
    da = pytest.importorskip("dask.array")
    from rsvm_conic.estimators.linear import default_noise_covariance

    X, y = _data("bupa")
    y_pm = np.where(y == 1, 1.0, -1.0)
    W = default_noise_covariance(X, y_pm)
    W_dask = default_noise_covariance(da.from_array(X, chunks=(100, -1)), da.from_array(y_pm, chunks=100))
    assert np.allclose(W_dask, W, rtol=1e-10, atol=1e-12 * np.abs(W).max())
    Xc = np.vstack([X[y == c] - X[y == c].mean(axis=0) for c in (0, 1)])
    assert np.allclose(W, 0.02**2 * Xc.T @ Xc / y.size, rtol=1e-10, atol=1e-12 * np.abs(W).max())


def test_the_default_noise_covariance_with_integer_weights_is_that_of_repeated_rows():
    """Pinned: the default covariance ignored the weights, so a weighted default fit differed from the fit on
    repeated rows (tests/test_sample_weight.py's equivalence failed for RobustSVC, ChanceConstrainedSVC and
    RobustFeatureSVC once the default changed)."""
    from rsvm_conic.estimators.linear import default_noise_covariance

    X, y = _data("bupa")
    y_pm = np.where(y == 1, 1.0, -1.0)
    counts = np.random.default_rng(0).integers(1, 4, size=y.size)
    W = default_noise_covariance(X, y_pm, counts.astype(float))
    W_rep = default_noise_covariance(np.repeat(X, counts, axis=0), np.repeat(y_pm, counts))
    assert np.allclose(W, W_rep, rtol=1e-10, atol=1e-12 * np.abs(W_rep).max())


def test_the_feature_map_bandwidth_scales_with_the_data():
    """RobustFeatureSVC's sigma="scale" is scikit-learn's gamma="scale": sqrt(n_features X.var() / 2), so rescaling
    X rescales the bandwidth with it; another string is a ValueError naming the choice."""
    X, y = _data("bupa")
    for factor in (1.0, 1e-3, 1e3):
        est = RobustFeatureSVC(n_components=20, random_state=0).fit(factor * X, y)
        expected = np.sqrt(X.shape[1] * (factor * X).var() / 2.0)
        assert est.feature_map_.sigma == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="scale"):
        RobustFeatureSVC(sigma="auto").fit(X, y)
