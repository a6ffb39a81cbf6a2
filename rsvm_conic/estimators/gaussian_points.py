"""PkSVC: SVM on Gaussian points (x_i, Sigma_i), expected RBF kernel (Chen, Georgiou & Tannenbaum 2019, corrected).

``method="exact"``: libsvm (``SVC(kernel="precomputed")``) on the Gram matrix of
:func:`~rsvm_conic.kernels.gaussian_points.expected_rbf_kernel`.  With all training Sigma = 0
(or None) the expected kernel *is* the RBF kernel ``exp(-||x - y||^2 / (2 sigma^2))``, and the fit
goes to libsvm's own ``SVC(kernel="rbf", gamma=1/(2 sigma^2))`` (no n x n Gram matrix in Python:
7-100x faster, identical model; ``rbf_route_`` records it).  Test points with covariances are
then scored with the expected kernel against the support vectors.  ``method="random_features"``: a linear SVM
(libsvm ``SVC(kernel="linear")``) on :class:`GaussianPointRFF` features, for large data.
Covariances go to ``fit``/``predict``/``decision_function`` (None = exact points)::

    PkSVC(C=1.0, sigma=2.0).fit(X, y, Sigma=S).predict(X_new, Sigma=S_new)
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.svm import SVC
from sklearn.utils.validation import check_is_fitted

from .._validation import check_choice, check_positive, validate_estimator_input
from ._base import BinaryClassifierTags
from ..kernels.gaussian_points import GaussianPointRFF, as_covariances, expected_rbf_kernel

METHODS = ("exact", "random_features")


class PkSVC(BinaryClassifierTags, ClassifierMixin, BaseEstimator):
    """Probabilistic kernel SVM on Gaussian points; see module docstring."""

    def __init__(self, C=1.0, sigma=1.0, method="exact", n_components=200, tol=1e-3, random_state=None):
        self.C = C
        self.sigma = sigma
        self.method = method
        self.n_components = n_components
        self.tol = tol
        self.random_state = random_state

    def fit(self, X, y, Sigma=None):
        check_choice(self.method, "method", METHODS)
        C = check_positive(self.C, "C")
        sigma = check_positive(self.sigma, "sigma")
        X, y_pm, classes = validate_estimator_input(self, X, y, reset=True)
        S, _ = as_covariances(Sigma, *X.shape)
        self.classes_ = classes
        self.X_fit_, self.Sigma_fit_ = X, S
        self.rbf_route_ = False
        if self.method == "exact" and not np.any(S):
            # exact points: E k = k, the RBF kernel with gamma = 1 / (2 sigma^2); libsvm computes it itself
            self.rbf_route_ = True
            self.svc_ = SVC(kernel="rbf", gamma=1.0 / (2.0 * sigma * sigma), C=C, tol=self.tol).fit(X, y_pm)
        elif self.method == "exact":
            K = expected_rbf_kernel(X, S, sigma=sigma)
            self.svc_ = SVC(kernel="precomputed", C=C, tol=self.tol).fit(K, y_pm)
        else:
            self.features_ = GaussianPointRFF(self.n_components, sigma, self.random_state).fit(X)
            self.svc_ = SVC(kernel="linear", C=C, tol=self.tol).fit(self.features_.transform(X, S), y_pm)
        return self

    def decision_function(self, X, Sigma=None):
        """Score of Gaussian points (X, Sigma); positive means ``classes_[1]``."""
        check_is_fitted(self, "svc_")
        X = validate_estimator_input(self, X, reset=False)
        S, _ = as_covariances(Sigma, *X.shape)
        if self.rbf_route_:
            if not np.any(S):
                return self.svc_.decision_function(X)
            sv = self.svc_.support_  # uncertain test points: expected kernel against the (exact) support vectors
            K = expected_rbf_kernel(X, S, self.X_fit_[sv], self.Sigma_fit_[sv], sigma=self.sigma)
            return K @ self.svc_.dual_coef_[0] + self.svc_.intercept_[0]
        if self.method == "exact":
            K = expected_rbf_kernel(X, S, self.X_fit_, self.Sigma_fit_, sigma=self.sigma)
            return self.svc_.decision_function(K)
        return self.svc_.decision_function(self.features_.transform(X, S))

    def predict(self, X, Sigma=None):
        scores = self.decision_function(X, Sigma)  # checks fitted first
        return self.classes_[(scores >= 0).astype(int)]

    def score(self, X, y, Sigma=None, sample_weight=None):
        from sklearn.metrics import accuracy_score

        return accuracy_score(y, self.predict(X, Sigma), sample_weight=sample_weight)
