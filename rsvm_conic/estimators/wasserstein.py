"""The Wasserstein distributionally robust linear SVM as a scikit-learn estimator
(:class:`~rsvm_conic.formulations.wasserstein.WassersteinProblem`)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import check_choice, check_integer, check_norm, check_positive, validate_estimator_input
from ..certify.contract import solver_stats
from ..formulations.wasserstein import EXACT_TOL, WassersteinProblem
from ._base import BinaryClassifierTags, keep_weighted, sample_weights
from .linear import warn_constant_classifier


def _constant_reason(formulation) -> str:
    """Why the fitted classifier is constant: the radius against the threshold from which ``w = 0``
    (:meth:`~rsvm_conic.formulations.wasserstein.WassersteinProblem.zero_threshold`)."""
    threshold = formulation.zero_threshold()
    if threshold is None:
        return (
            f"The radius {formulation.radius:g} with label-flip cost kappa = {formulation.kappa:g} buys more "
            "worst-case loss than any direction of w saves on these data: choose a smaller radius or a larger kappa."
        )
    if threshold <= 0.0:
        return "No direction beats a constant score on these data at any radius (the classes' weighted means coincide)."
    return (
        f"The radius {formulation.radius:g} is at or above {threshold:.4g}, from which w = 0 is optimal on these data "
        "(the worst-case transport outweighs every direction's gain): choose a radius below it."
    )


class WassersteinSVC(BinaryClassifierTags, LinearClassifierMixin, BaseEstimator):
    """Wasserstein distributionally robust hinge-loss SVM [SKE19]: the linear classifier with the smallest worst-case
    expected hinge loss over every distribution within type-1 Wasserstein distance ``radius`` of the (weighted)
    empirical distribution, transport cost ``||x - x'||_norm + kappa 1[y != y']``.

    The problem (an LP for norm 1 or inf, an SOCP for norm 2), its derivation, dual and worst-case distribution are in
    :mod:`rsvm_conic.formulations.wasserstein` and the user guide (``docs/guide/wasserstein.md``).  The radius is a
    length in the units of X (standardise X first, e.g. with ``StandardScaler``, for a radius in standard
    deviations); at and above a data-dependent radius the optimum is ``w = 0``.

    Parameters
    ----------
    radius : float > 0, default=0.01
        Radius of the Wasserstein ball: the mean distance (in ``norm``, in the units of X) the adversary may move the
        samples, plus ``kappa`` times the fraction of labels it flips.  The default is a fixed 0.01, not chosen from
        the data.
    norm : 1, 2 or inf, default=2
        The norm p of the transport cost on the features (the weights are regularised in its dual norm).
    kappa : float > 0 or inf, default=inf
        Cost of flipping a label; inf: labels are certain.
    solver : {"auto", "ipm", "clarabel", "scs"}, default="auto"
        ``"auto"``: the structured interior point, falling back visibly (a SolverWarning) to Clarabel, then SCS.
    tol : float, default=1e-6
        The certified relative gap every fit must meet.
    max_iter : int, default=100
        Iteration limit of the interior point.
    warm_start : bool, default=False
        Reuse the previous fit's solution and precomputations when ``fit`` is called again on the same X, y and
        weights (e.g. after ``set_params(radius=r)``); other data start cold.
    class_weight : dict, "balanced" or None, default=None
        Weight of each class's samples in the empirical distribution (times ``sample_weight``).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    coef_ : ndarray of shape (1, n_features)
        Weights ``w``.
    intercept_ : ndarray of shape (1,)
        Bias ``b``.
    objective_ : float
        The worst-case expected hinge loss of the fitted classifier over the ball (the primal objective).
    solver_stats_ : dict
        The route that ran, its status, the primal objective, a certified lower bound (``dual``) and the relative gap.
    worst_distribution_ : tuple (points, labels, weights)
        A worst-case distribution in the ball, built from the optimal dual point: support points of shape (m, n),
        their labels (in ``classes_``) and probabilities; its expected hinge loss at the fitted classifier is
        ``objective_`` up to the certified gap.
    n_iter_ : int
        Iterations of the route that ran.
    n_features_in_ : int
        Number of features seen in ``fit``.
    """

    def __init__(
        self,
        radius=0.01,
        norm=2,
        kappa=np.inf,
        solver="auto",
        tol=EXACT_TOL,
        max_iter=100,
        warm_start=False,
        class_weight=None,
    ):
        self.radius = radius
        self.norm = norm
        self.kappa = kappa
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.class_weight = class_weight

    def fit(self, X, y, sample_weight=None):
        """Fit the classifier.

        Parameters
        ----------
        X : array-like of shape (L, n)
            Training samples.
        y : array-like of shape (L,)
            Binary labels.
        sample_weight : array-like of shape (L,) or None, default=None
            Nonnegative weights of the samples in the empirical distribution (``pi_i`` proportional to
            ``sample_weight[i] * class weight``); an integer weight is the same as repeating the row, 0 drops it.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        check_choice(self.solver, "solver", ("auto", *WassersteinProblem.BACKENDS))
        radius = check_positive(self.radius, "radius")
        kappa = check_positive(self.kappa, "kappa", allow_inf=True)
        p = check_norm(self.norm)
        tol = check_positive(self.tol, "tol")
        max_iter = check_integer(self.max_iter, "max_iter")
        X, y_pm, classes = validate_estimator_input(self, X, y, reset=True)
        weights = sample_weights(y_pm, classes, sample_weight, self.class_weight)
        if weights is not None:
            keep = keep_weighted(weights, y_pm, classes)
            X, y_pm, weights = X[keep], y_pm[keep], weights[keep]
        formulation = self._formulation_for(X, y_pm, weights, p, kappa, radius)
        options = {"tol": tol}
        ipm = {"tol": tol, "max_iter": max_iter, "warm": bool(self.warm_start)}
        if self.solver == "auto":
            sol = formulation.solve("auto", ipm=ipm, clarabel=options, scs=options)
        else:
            sol = formulation.solve(self.solver, **(ipm if self.solver == "ipm" else options))
        self.classes_ = classes
        self.coef_ = np.asarray(sol["w"], dtype=float).reshape(1, -1)
        self.intercept_ = np.array([float(sol["b"])])
        self.objective_ = float(sol.objective)
        self.solver_stats_ = solver_stats(sol)
        self.n_iter_ = int(self.solver_stats_.get("iterations") or 1)
        points, labels, probs = formulation.worst_distribution(
            sol["w"], sol["b"], sol.info["alpha"], sol.info.get("beta")
        )
        self.worst_distribution_ = (points, classes[(labels > 0).astype(int)], probs)
        self._formulation = formulation
        warn_constant_classifier(self, formulation, X, _constant_reason)
        return self

    def radius_threshold(self, X, y, sample_weight=None):
        """The radius ``R*`` from which the fit is constant (``w = 0``) on these data (labels certain: ``kappa =
        inf``), by one minimum-norm problem instead of the SVM (Wolfe's algorithm for ``norm=2``, a small conic
        program otherwise; :meth:`~rsvm_conic.formulations.wasserstein.WassersteinProblem.zero_threshold`): the start of
        :func:`~rsvm_conic.estimators.path.default_radii`'s grid.

        Parameters
        ----------
        X, y, sample_weight
            As in :meth:`fit`.

        Returns
        -------
        ZeroThreshold
            ``lower = upper = R*`` (``direction`` zeros, ``programs`` 1).

        Raises
        ------
        ValueError
            For a finite ``kappa`` (no closed threshold: pass the radii).
        """
        import time

        from ..solvers.zero_threshold import ZeroThreshold

        kappa = check_positive(self.kappa, "kappa", allow_inf=True)
        if np.isfinite(kappa):
            raise ValueError(
                f"the radius threshold is computed for certain labels (kappa = inf) only; got kappa = {kappa:g}: "
                "pass the radii explicitly."
            )
        p = check_norm(self.norm)
        X, y_pm, classes = validate_estimator_input(self, X, y, reset=True)
        weights = sample_weights(y_pm, classes, sample_weight, self.class_weight)
        if weights is not None:
            keep = keep_weighted(weights, y_pm, classes)
            X, y_pm, weights = X[keep], y_pm[keep], weights[keep]
        t0 = time.perf_counter()
        r = WassersteinProblem(X, y_pm, 1.0, p, kappa, check_input=False, sample_weight=weights).zero_threshold()
        return ZeroThreshold(r, r, np.zeros(X.shape[1]), 1, time.perf_counter() - t0)

    def __getstate__(self):
        """The warm-start state (the last formulation, with its compiled CVXPY model) is not pickled."""
        state = self.__dict__.copy()
        state.pop("_formulation", None)
        return state

    def _formulation_for(self, X, y, weights, p, kappa, radius):
        """The previous fit's formulation at the new radius when warm-starting on the same data, else a new one."""
        prev = getattr(self, "_formulation", None) if self.warm_start else None
        if (
            prev is not None
            and prev.p == p
            and prev.kappa == kappa
            and prev.X.shape == X.shape
            and np.array_equal(prev.y, y)
            and np.array_equal(prev.X, X)
            and (prev.sample_weight is None) == (weights is None)
            and (weights is None or np.array_equal(prev.sample_weight, weights))
        ):
            return prev.set_params(radius=radius)
        return WassersteinProblem(X, y, radius, p, kappa, check_input=False, sample_weight=weights)

    def decision_function(self, X):
        """Signed score; positive means ``classes_[1]``.

        Parameters
        ----------
        X : array-like of shape (L, n)
            Samples.

        Returns
        -------
        ndarray of shape (L,)
        """
        check_is_fitted(self, "coef_")
        X = validate_estimator_input(self, X, reset=False)
        return X @ self.coef_.ravel() + self.intercept_[0]
