"""scikit-learn style estimators for the linear SVM family (nominal, robust, chance-constrained).

Uncertainty is data, not a hyper-parameter, so it goes to ``fit``::

    RobustSVC(C=1.0, radius=0.5, norm=2).fit(X, y, Sigma=Sigma, groups=groups)

``solver`` picks the backend: ``"clarabel"``, ``"scs"``, ``"auto"`` (Clarabel,
falling back visibly to SCS), ``"sgd"`` / ``"prox"`` (stochastic, for large L),
``"ipm"`` (structure-exploiting interior point, p = 2) and, for the nominal model,
``"libsvm"`` (certified by its duality gap, else re-solved with Clarabel).  A backend that does not certify optimality
raises :class:`~rsvm_conic.solvers.conic.SolverError`; a stochastic run that hits
``max_epochs`` before its stopping rule warns (ConvergenceWarning).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._validation import check_choice, check_norm, check_positive, validate_estimator_input
from ..formulations.chance import ChanceConstrainedSVM
from ..formulations.nominal import NominalSVM
from ..formulations.robust import RobustSVM
from ..uncertainty.chance import DISTRIBUTIONS, kappa
from ..uncertainty.sets import UncertaintySet
from ._base import BinaryClassifierTags

CONIC = ("clarabel", "scs", "auto")
STOCHASTIC = ("sgd", "prox")


class _LinearSVCBase(BinaryClassifierTags, ClassifierMixin, BaseEstimator):
    _solvers = CONIC + STOCHASTIC

    def _build(self, X, y, Sigma, groups, sample_radius):  # pragma: no cover - abstract
        raise NotImplementedError

    def fit(self, X, y, Sigma=None, groups=None, sample_radius=None):
        """Fit on (X, y); ``Sigma``/``groups`` describe the uncertainty (see UncertaintySet)."""
        check_choice(self.solver, "solver", self._solvers)
        check_positive(self.C, "C")
        X, y_pm, classes = validate_estimator_input(self, X, y, reset=True)
        formulation = self._build(X, y_pm, Sigma, groups, sample_radius)
        sol = formulation.solve(self.solver, **(self.solver_options or {}))
        if sol.status == "max_epochs":
            warnings.warn(f"{type(self).__name__}: solver {self.solver!r} stopped at max_epochs "
                          f"({sol.info.get('epochs')}) before its stopping rule held; increase max_epochs "
                          "in solver_options or use a conic solver.", ConvergenceWarning, stacklevel=2)
        self.classes_ = classes
        self.coef_ = np.asarray(sol["w"], dtype=float).reshape(1, -1)
        self.intercept_ = np.array([float(sol["b"])])
        self.objective_ = float(sol.objective)
        self.solver_stats_ = {"backend": sol.backend, "status": sol.status, "time": sol.time,
                              **{k: v for k, v in sol.info.items() if k != "history"}}
        return self

    def decision_function(self, X):
        """Signed distance-like score; positive means ``classes_[1]``."""
        check_is_fitted(self, "coef_")
        X = validate_estimator_input(self, X, reset=False)
        return X @ self.coef_.ravel() + self.intercept_[0]

    def predict(self, X):
        scores = self.decision_function(X)
        return self.classes_[(scores >= 0).astype(int)]


class NominalSVC(_LinearSVCBase):
    """Soft-margin linear SVM (file 000, eq. 1): ``min 1/2||w||^2 + C sum hinge``."""

    _solvers = CONIC + STOCHASTIC + ("libsvm",)

    def __init__(self, C=1.0, solver="libsvm", solver_options=None):
        self.C = C
        self.solver = solver
        self.solver_options = solver_options

    def _build(self, X, y, Sigma, groups, sample_radius):
        if Sigma is not None or groups is not None or sample_radius is not None:
            raise ValueError("NominalSVC ignores uncertainty; use RobustSVC or ChanceConstrainedSVC "
                             "to pass Sigma/groups.")
        return NominalSVM(X, y, C=self.C)


class RobustSVC(_LinearSVCBase):
    """Worst-case robust linear SVM (file 000, eq. 4) over ``||Sigma^{-1/2} dx||_norm <= radius``.

    ``solver="ipm"`` (norm 2 only) is the structure-exploiting interior-point method of
    :mod:`rsvm_conic.solvers.robust_ipm`."""

    _solvers = CONIC + STOCHASTIC + ("ipm",)

    def __init__(self, C=1.0, radius=1.0, norm=2, solver="clarabel", solver_options=None):
        self.C = C
        self.radius = radius
        self.norm = norm
        self.solver = solver
        self.solver_options = solver_options

    def _build(self, X, y, Sigma, groups, sample_radius):
        check_positive(self.radius, "radius", strict=False)
        unc = UncertaintySet(Sigma=Sigma, groups=groups, p=check_norm(self.norm), radius=self.radius,
                             sample_scale=sample_radius)
        return RobustSVM(X, y, unc, C=self.C)


class ChanceConstrainedSVC(_LinearSVCBase):
    """Chance-constrained linear SVM: each margin constraint holds with probability >= 1 - epsilon
    under noise of covariance ``Sigma`` (Chebyshev: any law; Gaussian: normal noise)."""

    _solvers = CONIC + STOCHASTIC + ("ipm",)

    def __init__(self, C=1.0, epsilon=0.1, distribution="chebyshev", solver="clarabel", solver_options=None):
        self.C = C
        self.epsilon = epsilon
        self.distribution = distribution
        self.solver = solver
        self.solver_options = solver_options

    def _build(self, X, y, Sigma, groups, sample_radius):
        check_choice(self.distribution, "distribution", DISTRIBUTIONS)
        kappa(self.epsilon, self.distribution)  # validates epsilon
        if sample_radius is not None:
            raise ValueError("ChanceConstrainedSVC takes no sample_radius; epsilon sets the factor.")
        return ChanceConstrainedSVM(X, y, Sigma, groups, C=self.C, epsilon=self.epsilon,
                                    distribution=self.distribution)
