"""PkSVC: SVM on Gaussian points (x_i, Sigma_i), expected RBF kernel [CGT19, corrected].

``method="exact"``: libsvm (``SVC(kernel="precomputed")``) on the Gram matrix of
:func:`~rsvm_conic.kernels.gaussian_points.expected_rbf_kernel`.  With all training Sigma = 0
(or None) the expected kernel *is* the RBF kernel ``exp(-||x - y||^2 / (2 sigma^2))``, and the fit
goes to libsvm's own ``SVC(kernel="rbf", gamma=1/(2 sigma^2))`` (no n x n Gram matrix in Python:
7-100x faster, the same model; ``rbf_route_`` records it).  Every route is polished in double
precision and certified (``solver_stats_``, see :class:`PkSVC`).  Test points with covariances are
then scored with the expected kernel against the support vectors.  ``method="random_features"``: a linear SVM
(libsvm ``SVC(kernel="linear")``) on :class:`GaussianPointRFF` features, for large data.
Covariances go to ``fit``/``predict``/``decision_function`` (None = exact points)::

    PkSVC(C=1.0, sigma=2.0).fit(X, y, Sigma=S).predict(X_new, Sigma=S_new)
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.svm import SVC
from sklearn.utils.validation import check_is_fitted

from .._validation import check_choice, check_positive, validate_estimator_input
from ..certify.contract import solver_stats
from ._base import BinaryClassifierTags, keep_weighted, sample_weights
from ..kernels.gaussian_points import GaussianPointRFF, as_covariances, expected_rbf_kernel
from ..kernels.rbf import gaussian_kernel
from ..exceptions import SolverError
from ..solvers.svm_polish import certified_svm_dual
from ..solvers.svm_dual import libsvm_alpha

METHODS = ("exact", "random_features")


#: libsvm's own (KKT) stopping tolerance; the certificate, not this, decides whether a fit is optimal
LIBSVM_TOL = 1e-5
#: largest n for which an uncertified active-set polish falls back to projected Newton on the full Gram matrix
FULL_POLISH_MAX = 5000


class PkSVC(BinaryClassifierTags, ClassifierMixin, BaseEstimator):
    """Probabilistic kernel SVM on Gaussian points (x_i, Sigma_i), expected RBF kernel; see the module docstring.

    ``tol`` is the certified relative duality gap of the returned SVM (default 1e-6).  libsvm
    stores its kernel cache in single precision, which limits its solutions to about 1e-5 relative
    (measured 3.4e-5 at C = 100 whatever its own tolerance); the fit therefore polishes libsvm's
    solution in double precision on the problem restricted to its support vectors (an exact Newton
    step on the active set, then projected Newton; only the support's kernel columns are formed) and
    certifies it on the whole problem: the SVM objective of the returned ``dual_coef_`` / ``intercept_`` (the
    best bias; at a large C whose optimum separates the data, the model rescaled to margins >= 1, see
    :func:`~rsvm_conic.solvers.svm_polish.certified_svm_dual`) minus the dual objective of the (feasible)
    multipliers.  ``solver_stats_`` holds the certificate.  If that does not certify, projected Newton on the full
    Gram matrix is tried (``n <= 5000``), else :class:`~rsvm_conic.exceptions.SolverError` is raised.

    Parameters
    ----------
    C : float, default=1.0
        Weight of the hinge loss.
    sigma : float, default=1.0
        Bandwidth of the RBF kernel ``exp(-||x - y||^2 / (2 sigma^2))`` whose expectation is taken.
    method : {"exact", "random_features"}, default="exact"
        Exact expected kernel (libsvm on its Gram matrix) or a linear SVM on random features of Gaussian points.
    n_components : int, default=200
        Number of random frequencies (``method="random_features"``).
    tol : float, default=1e-6
        Certified relative duality gap of the returned SVM.
    random_state : int, Generator or None, default=None
        Seed of the random features.
    class_weight : dict, "balanced" or None, default=None
        Weight of each class's hinge terms (``C_i = C * class_weight[y_i] * sample_weight[i]``), as in
        scikit-learn's ``SVC``; ``"balanced"``: ``L / (2 * count(y_i))``.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels.
    support_ : ndarray of int
        Indices of the support vectors.
    dual_coef_ : ndarray of shape (1, n_support)
        ``scale * y_i alpha_i`` on the support vectors (``scale = solver_stats_["scale"]``: 1, or the hard-margin
        rescaling of a large-C fit).
    X_fit_, Sigma_fit_ : ndarray
        Training means and covariances (test points are scored against the support vectors).
    intercept_ : ndarray of shape (1,)
        Bias.
    coef_ : ndarray of shape (1, 2 * n_components)
        Weights on the random features (``method="random_features"``).
    features_ : GaussianPointRFF
        The fitted random-feature map (``method="random_features"``).
    rbf_route_ : bool
        True when all training covariances are zero and the fit went to libsvm's own RBF kernel.
    solver_stats_ : dict
        Route, status and certificate of the SVM solve.
    """

    def __init__(
        self, C=1.0, sigma=1.0, method="exact", n_components=200, tol=1e-6, random_state=None, class_weight=None
    ):
        self.class_weight = class_weight
        self.C = C
        self.sigma = sigma
        self.method = method
        self.n_components = n_components
        self.tol = tol
        self.random_state = random_state

    def fit(self, X, y, Sigma=None, sample_weight=None):
        """Fit the SVM on the Gaussian points ``(x_i, Sigma_i)``.

        Parameters
        ----------
        X : array-like of shape (L, n)
            Means of the training points.
        y : array-like of shape (L,)
            Binary labels.
        Sigma : array-like of shape (L, n, n) or (L, n), or None, default=None
            Covariance of each point (full, or its diagonal), in the units of X squared; None: exact points (the
            RBF kernel).  After a ``StandardScaler`` the covariances are ``D^-1 Sigma_i D^-1``
            (:func:`rsvm_conic.uncertainty.scale_covariance`).
        sample_weight : array-like of shape (L,) or None, default=None
            Nonnegative weight of each point's hinge term (``C_i = C * sample_weight[i] * class weight``: libsvm's
            weighted box ``0 <= alpha_i <= C_i``, and the certificate's); an integer weight is the same as
            repeating the point, 0 drops it.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        check_choice(self.method, "method", METHODS)
        C = check_positive(self.C, "C")
        sigma = check_positive(self.sigma, "sigma")
        tol = check_positive(self.tol, "tol")
        X, y_pm, classes = validate_estimator_input(self, X, y, reset=True)
        S, _ = as_covariances(Sigma, *X.shape)
        weights = sample_weights(y_pm, classes, sample_weight, self.class_weight)
        if weights is not None:
            keep = keep_weighted(weights, y_pm, classes)
            X, y_pm, S, weights = X[keep], y_pm[keep], S[keep], weights[keep]  # weight 0: no part in the problem
        Cb = C if weights is None else C * weights  # the dual box: 0 <= alpha_i <= C_i
        self.classes_ = classes
        self.X_fit_, self.Sigma_fit_ = X, S
        self.rbf_route_ = False
        t0 = time.perf_counter()
        if self.method == "exact" and not np.any(S):
            # exact points: E k = k, the RBF kernel with gamma = 1 / (2 sigma^2); libsvm computes it itself
            self.rbf_route_ = True
            svc = SVC(kernel="rbf", gamma=1.0 / (2.0 * sigma * sigma), C=C, tol=LIBSVM_TOL)
            svc.fit(X, y_pm, sample_weight=weights)
            columns = lambda idx: gaussian_kernel(X, X[idx], sigma)
            route = "libsvm-rbf"
        elif self.method == "exact":
            K = expected_rbf_kernel(X, S, sigma=sigma)
            svc = SVC(kernel="precomputed", C=C, tol=LIBSVM_TOL).fit(K, y_pm, sample_weight=weights)
            columns = lambda idx: K[:, idx]
            route = "libsvm-precomputed"
        else:
            self.features_ = GaussianPointRFF(self.n_components, sigma, self.random_state).fit(X)
            Phi = self.features_.transform(X, S)
            svc = SVC(kernel="linear", C=C, tol=LIBSVM_TOL).fit(Phi, y_pm, sample_weight=weights)
            columns = lambda idx: Phi @ Phi[idx].T
            route = "libsvm-features"
        alpha = libsvm_alpha(svc, X.shape[0])
        alpha, scale, b, info = certified_svm_dual(
            columns,
            y_pm,
            Cb,
            alpha,
            tol,
            route=route,
            full_kernel=(lambda: columns(np.arange(X.shape[0]))) if X.shape[0] <= FULL_POLISH_MAX else None,
        )
        info.time = time.perf_counter() - t0
        if info.status != "optimal":
            raise SolverError(
                f"PkSVC: {route} ended at a certified relative gap {info.gap_rel:.2e} > tol = {tol:g} "
                f"even after polishing; raise tol or rescale the data."
            )
        self.solver_stats_ = solver_stats(info)
        self.support_ = np.flatnonzero(alpha)
        self.dual_coef_ = scale * (y_pm * alpha)[self.support_][None, :]
        self.intercept_ = np.array([b])
        if self.method == "random_features":
            self.coef_ = self.dual_coef_[0] @ Phi[self.support_]
        return self

    def decision_function(self, X, Sigma=None):
        """Score of Gaussian points (X, Sigma); positive means ``classes_[1]``."""
        check_is_fitted(self, "dual_coef_")
        X = validate_estimator_input(self, X, reset=False)
        S, _ = as_covariances(Sigma, *X.shape)
        b = self.intercept_[0]
        if self.method == "random_features":
            return self.features_.transform(X, S) @ self.coef_ + b
        sv = self.support_
        if self.rbf_route_ and not np.any(S):
            K = gaussian_kernel(X, self.X_fit_[sv], self.sigma)
        else:  # uncertain points: the expected kernel against the support vectors
            Ssv = self.Sigma_fit_[sv]
            if Ssv.ndim == 2 and Ssv.shape[0] == Ssv.shape[1]:  # (m, n) diagonals with m = n read as ambiguous:
                full = np.zeros(Ssv.shape + (Ssv.shape[1],))  # pass them as per-point matrices
                idx = np.arange(Ssv.shape[1])
                full[:, idx, idx] = Ssv
                Ssv = full
            K = expected_rbf_kernel(X, S, self.X_fit_[sv], Ssv, sigma=self.sigma)
        return K @ self.dual_coef_[0] + b

    def predict(self, X, Sigma=None):
        scores = self.decision_function(X, Sigma)  # checks fitted first
        return self.classes_[(scores >= 0).astype(int)]

    def score(self, X, y, Sigma=None, sample_weight=None):
        from sklearn.metrics import accuracy_score

        return accuracy_score(y, self.predict(X, Sigma), sample_weight=sample_weight)
