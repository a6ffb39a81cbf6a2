"""libsvm through scikit-learn's low-level ``_libsvm.fit`` (rsvm_conic.solvers.svm_dual.libsvm_dual) gives exactly
``SVC(kernel="precomputed")``'s solve; a different low-level interface falls back to ``SVC`` itself."""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from rsvm_conic.solvers import svm_dual
from rsvm_conic.solvers.svm_dual import libsvm_dual


def _problem(n, seed, labels=(-1.0, 1.0)):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, labels[1], labels[0])
    return X @ X.T + 0.1 * np.exp(-((X[:, None] - X[None]) ** 2).sum(-1)), y


@pytest.mark.parametrize(
    "seed, C, tol, labels",
    [
        (0, 1.0, 1e-7, (-1.0, 1.0)),
        (1, 10.0, 1e-3, (-1.0, 1.0)),
        (2, 0.1, 1e-9, (0.0, 3.0)),
        (3, 100.0, 1e-4, (1.0, -1.0)),
    ],
)
def test_lowlevel_matches_svc_exactly(seed, C, tol, labels):
    K, y = _problem(60, seed, labels)
    alpha, fit = libsvm_dual(K, y, C, tol=tol)
    assert fit.route == "libsvm"
    svc = SVC(C=C, kernel="precomputed", tol=tol).fit(K, y)
    np.testing.assert_array_equal(fit.support_, svc.support_)
    np.testing.assert_array_equal(fit.dual_coef_, svc.dual_coef_)
    np.testing.assert_array_equal(fit.intercept_, svc.intercept_)
    np.testing.assert_array_equal(fit.n_iter_, svc.n_iter_)
    ref, fit_svc = libsvm_dual(K, y, C, tol=tol, lowlevel=False)
    assert fit_svc.route == "SVC"
    np.testing.assert_array_equal(alpha, ref)
    assert alpha.min() >= 0 and alpha.max() <= C


def test_lowlevel_accepts_non_contiguous_and_integer_input():
    K, y = _problem(40, 4)
    Kf = np.asfortranarray(K)
    a1, _ = libsvm_dual(Kf, y.astype(int), 2.0)
    a2, _ = libsvm_dual(K, y, 2.0)
    np.testing.assert_array_equal(a1, a2)


class _Other:
    """A low-level module whose ``fit`` answers differently (another scikit-learn version)."""

    def __init__(self, how):
        self.how = how

    def set_verbosity_wrap(self, v):
        pass

    def fit(self, *args, **kwargs):
        from sklearn.svm import _libsvm

        if self.how == "signature":
            raise TypeError("fit() got an unexpected keyword argument 'random_seed'")
        out = _libsvm.fit(*args, **kwargs)
        return out[:-1] if self.how == "eight" else list(out)


@pytest.mark.parametrize("how", ["signature", "eight", "list"])
def test_other_lowlevel_interface_falls_back_to_svc(monkeypatch, how):
    K, y = _problem(50, 5)
    monkeypatch.setattr(svm_dual, "_libsvm_lowlevel", lambda: _Other(how))
    alpha, fit = libsvm_dual(K, y, 3.0)
    assert fit.route == "SVC"
    np.testing.assert_array_equal(alpha, libsvm_dual(K, y, 3.0, lowlevel=False)[0])
    monkeypatch.setattr(svm_dual, "_libsvm_lowlevel", lambda: None)  # no low-level module at all
    alpha2, fit2 = libsvm_dual(K, y, 3.0)
    assert fit2.route == "SVC"
    np.testing.assert_array_equal(alpha, alpha2)


def test_lowlevel_warns_like_svc_when_stopped_early():
    K, y = _problem(80, 6)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        _, fit = libsvm_dual(K, y, 100.0, max_iter=2)
    assert fit.fit_status_ == 1 and fit.route == "libsvm"
