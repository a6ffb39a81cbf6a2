"""Nonlinear robust SVMs on explicit feature maps [CJ20, Sec. 4] and the safe SVM (Sec. 3, eq. 7).

``RobustFeatureSVC`` maps the data with random Fourier features or the Nystroem map, bounds the
image of the input uncertainty set (Prop. 4.1 / 4.2, corrected; see
:mod:`rsvm_conic.uncertainty.feature_bounds`) and solves formulation (10)::

    RobustFeatureSVC(feature_map="rff", n_components=200, sigma=3.0, radius=0.1, norm=2).fit(X, y)

The input set is ``||Sigma_i^{-1/2} dx_i||_norm <= radius * sample_radius_i`` (``Sigma``/``sigma_index``
as in :class:`~rsvm_conic.estimators.RobustSVC`; without ``Sigma``: ``0.02**2`` times the pooled within-class
covariance of X, :func:`~rsvm_conic.estimators.linear.default_noise_covariance`).  ``feature_norm`` is pbar, the
norm of the feature-space bound (RFF: 1, 2 or inf; Nystroem: 2).  ``solver``: ``"auto"`` (the structured
interior point ``"ipm"`` for ``feature_norm=2``, else Clarabel, with visible fallbacks; certified to a 1e-6
relative gap at every size), ``"ipm"``, ``"clarabel"``, ``"scs"``, ``"sgd"``, ``"prox"`` (the stochastic routes
certify their own ``tol``, 1e-3 by default).  ``radius=0`` gives the nominal linear SVM on the same features.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._validation import check_choice, check_fit_keywords, check_norm, check_positive, validate_estimator_input
from ..certify.contract import solver_stats
from ._base import BinaryClassifierTags, drop_samples, fit_uncertainty, keep_weighted, sample_weights
from .linear import default_noise_covariance, warn_constant_classifier
from ..formulations.feature_robust import FeatureRobustProblem
from ..kernels.feature_maps import NystroemMap, RandomFourierFeatures
from ..uncertainty.feature_bounds import VARIANTS, nystroem_feature_bound, rff_feature_bound
from ..uncertainty.sets import UncertaintySet

FEATURE_MAPS = ("rff", "nystroem")
SOLVERS = ("auto", "ipm", "clarabel", "scs", "sgd", "prox")


class RobustFeatureSVC(BinaryClassifierTags, ClassifierMixin, BaseEstimator):
    """Robust SVM (eq. 10 of [CJ20]) on random Fourier or Nystroem features.

    The input uncertainty set is mapped to a feature-space bound (Prop. 4.1 / 4.2, corrected) and the robust
    SVM is solved on the features; see the module docstring.  A fit whose classifier is constant (``zeta = 0``)
    warns with the reason (:class:`~rsvm_conic.exceptions.ConstantClassifierWarning`).

    The defaults assume noise of covariance ``0.02**2 * W`` when ``fit`` gets no ``Sigma`` (``W`` the pooled
    within-class covariance of X: a standard deviation of 2 % of the classes' own spread,
    :func:`~rsvm_conic.estimators.linear.default_noise_covariance`), a radius of half that noise's standard
    deviation (the feature-space bound is looser than the linear model's: at a radius of 1, bupa's held-out accuracy
    fell to the majority rate on some splits) and scikit-learn's ``gamma="scale"`` bandwidth.  On every vendored
    binary data set, standardised, they give an informative model (3-fold CV: banana 0.86, bupa 0.67, magic 0.80;
    majority 0.53, 0.58, 0.62): ``tests/test_defaults.py``.

    Parameters
    ----------
    feature_map : {"rff", "nystroem"}, default="rff"
        Explicit feature map: random Fourier features (cos/sin pairs) or the Nystroem map.
    n_components : int, default=100
        Number of random frequencies (RFF) or landmarks (Nystroem).
    sigma : float or "scale", default="scale"
        Bandwidth of the approximated RBF kernel ``exp(-||x - y||^2 / (2 sigma^2))``; ``"scale"``:
        ``sqrt(n_features * X.var() / 2)``, scikit-learn's ``gamma="scale"`` (``sqrt(n_features / 2)`` on
        standardised data).
    radius : float, default=0.5
        Radius of the input uncertainty set ``||Sigma_i^{-1/2} dx_i||_norm <= radius * sample_radius_i``, in noise
        standard deviations (with ``Sigma=np.ones(n_features)``: in the units of X); 0 gives the nominal linear SVM
        on the same features.
    norm : {1, 2, inf}, default=2
        Norm of the input uncertainty set.
    feature_norm : {1, 2, inf}, default=2
        Norm pbar of the feature-space bound (RFF: 1, 2 or inf; Nystroem: 2 only).
    C : float, default=1.0
        Weight of the robust hinge loss against the regulariser.
    solver : {"auto", "ipm", "clarabel", "scs", "sgd", "prox"}, default="auto"
        ``"auto"``: the structured interior point for ``feature_norm=2`` (one shared cone), else Clarabel; visible
        fallbacks (Clarabel at looser solver tolerances, SCS), every result certified to a 1e-6 relative gap
        (``rsvm-conic bench auto-routes`` measures the routes side by side).  ``"sgd"`` / ``"prox"`` certify their
        own ``tol`` (``solver_options``, default 1e-3) and warn when they stop above it.
    bound : {"corrected", "printed"}, default="corrected"
        Which feature-space bound: the corrected one (valid) or the paper's printed form (kept for comparison).
    solver_options : dict or None, default=None
        Extra keyword arguments for the solver route.
    random_state : int, Generator or None, default=None
        Seed of the feature map.
    class_weight : dict, "balanced" or None, default=None
        Weight of each class's loss terms (``C_i = C * class_weight[y_i] * sample_weight[i]``), as in scikit-learn's
        ``SVC``; ``"balanced"``: ``L / (2 * count(y_i))``.  The stochastic routes take no weights.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    coef_ : ndarray of shape (1, n_features_map)
        Weights on the features.
    intercept_ : ndarray of shape (1,)
        Bias.
    feature_map_ : RandomFourierFeatures or NystroemMap
        The fitted feature map (``features(X)`` applies it).
    Gamma_ : ndarray
        The feature-space uncertainty bound the robust SVM was solved with.
    objective_ : float
        Optimal objective value of formulation (10).
    solver_stats_ : dict
        Route, status and certificate of the solve.
    n_features_in_ : int
        Number of input features seen in ``fit``.
    """

    def __init__(
        self,
        feature_map="rff",
        n_components=100,
        sigma="scale",
        radius=0.5,
        norm=2,
        feature_norm=2,
        C=1.0,
        solver="auto",
        bound="corrected",
        solver_options=None,
        random_state=None,
        class_weight=None,
    ):
        self.feature_map = feature_map
        self.n_components = n_components
        self.sigma = sigma
        self.radius = radius
        self.norm = norm
        self.feature_norm = feature_norm
        self.C = C
        self.solver = solver
        self.bound = bound
        self.solver_options = solver_options
        self.random_state = random_state
        self.class_weight = class_weight

    def _make_map(self, X):
        sigma = self.sigma
        if isinstance(sigma, str):
            check_choice(sigma, "sigma", ("scale",))
            sigma = float(np.sqrt(X.shape[1] * X.var() / 2.0)) or 1.0  # scikit-learn's gamma="scale"
        if self.feature_map == "rff":
            return RandomFourierFeatures(self.n_components, sigma, self.random_state)
        return NystroemMap(self.n_components, sigma, random_state=self.random_state)

    def fit(self, X, y, Sigma=None, sigma_index=None, sample_radius=None, sample_weight=None, **keywords):
        """Fit the feature map and the robust SVM on its features.

        Parameters
        ----------
        X : array-like of shape (L, n)
            Training samples.
        y : array-like of shape (L,)
            Binary labels.
        Sigma : array-like or None, default=None
            Noise covariances of the inputs, in the units of X squared; the shapes of
            :meth:`RobustSVC.fit <rsvm_conic.estimators.RobustSVC.fit>` (None: ``0.02**2`` times the pooled
            within-class covariance of the inputs).  After a ``StandardScaler`` they are ``D^-1 Sigma D^-1``
            (:func:`rsvm_conic.uncertainty.scale_covariance`).
        sigma_index : array-like of shape (L,) of int, "sample", or None, default=None
            The position of each sample's matrix along Sigma's first axis (not ``groups``, which scikit-learn's
            model selection gives to the splitter).
        sample_radius : array-like of shape (L,) or None, default=None
            Per-sample multipliers (>= 0) of the radius.
        sample_weight : array-like of shape (L,) or None, default=None
            Nonnegative weight of each sample's loss term (``C_i = C * sample_weight[i] * class weight``); an integer
            weight is the same as repeating the sample, 0 drops it.  The feature map is fitted on the samples of
            positive weight (random Fourier features do not depend on them; Nystroem's landmarks are drawn from
            them unweighted, so there the equivalence with repeated rows holds for the SVM given the map).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        check_fit_keywords(self, keywords)
        check_choice(self.feature_map, "feature_map", FEATURE_MAPS)
        check_choice(self.solver, "solver", SOLVERS)
        check_choice(self.bound, "bound", VARIANTS)
        check_positive(self.C, "C")
        radius = check_positive(self.radius, "radius", strict=False)
        pbar = check_norm(self.feature_norm)
        if self.feature_map == "nystroem" and pbar != 2.0:
            raise ValueError(
                "the Nystroem bound (Prop. 4.2) is a 2-norm bound; use feature_norm=2 or feature_map='rff'."
            )
        X, y_pm, classes = validate_estimator_input(self, X, y, reset=True)
        weights = sample_weights(y_pm, classes, sample_weight, self.class_weight)
        if weights is not None:
            keep = keep_weighted(weights, y_pm, classes)
            if not np.all(keep):  # a sample of weight 0 takes no part in the problem
                Sigma, sigma_index, sample_radius = drop_samples(keep, X.shape[0], Sigma, sigma_index, sample_radius)
                X, y_pm, weights = X[keep], y_pm[keep], weights[keep]
        Sigma, groups = fit_uncertainty(Sigma, sigma_index, *X.shape)
        unc = UncertaintySet(
            Sigma=default_noise_covariance(X, y_pm, weights) if Sigma is None and groups is None else Sigma,
            groups=groups,
            p=check_norm(self.norm),
            radius=radius,
            sample_scale=sample_radius,
            sample_scale_name="sample_radius",
        ).resolve(*X.shape)
        fmap = self._make_map(X).fit(X)
        Phi = fmap.transform(X)
        if self.feature_map == "rff":
            Gamma = rff_feature_bound(fmap, X, unc, pbar, self.bound)
            form = FeatureRobustProblem(
                Phi, y_pm, Gamma, pbar, self.C, rotations=fmap.rotations(X), sample_weight=weights
            )
        else:
            Gamma = nystroem_feature_bound(fmap, X, unc, self.bound)
            form = FeatureRobustProblem(
                Phi, y_pm, Gamma, 2, self.C, R=np.sqrt(fmap.eigenvalues_), sample_weight=weights
            )
        solver = self.solver
        sol = form.solve(solver, **(self.solver_options or {}))
        if sol.status != "optimal":
            gap = sol.certificate.gap_rel if sol.certificate is not None else float("inf")
            warnings.warn(
                f"RobustFeatureSVC: solver {solver!r} stopped at max_epochs with certified relative gap "
                f"{gap:.2e} > tol = {sol.certificate.tol if sol.certificate is not None else 0:g} (status "
                f"{sol.status!r}); increase max_epochs in solver_options or use solver='auto' (an exact route "
                "certified to 1e-6).",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.feature_map_ = fmap
        self.Gamma_ = Gamma
        self.classes_ = classes
        self.coef_ = np.asarray(sol["w"], dtype=float).reshape(1, -1)
        self.intercept_ = np.array([float(sol["b"])])
        self.objective_ = float(sol.objective)
        self.solver_stats_ = solver_stats(sol)
        warn_constant_classifier(self, form, Phi, reason=self._constant_reason)
        return self

    def _constant_reason(self, formulation) -> str:
        return (
            f"The robust hinge on these features is smallest at zeta = 0: the feature-space uncertainty bound "
            f"(radius {self.radius:g} mapped to Gamma_i up to {float(np.max(self.Gamma_)):.3g}) exceeds what the "
            "margins can absorb, or the features do not separate the classes. C does not change this (the "
            "regulariser is flat at zeta = 0); try a smaller radius (radius=0 is the nominal SVM on the same "
            "features) or another sigma / n_components."
        )

    def features(self, X):
        """The explicit feature map phi(X) the classifier is linear in (named so that scikit-learn
        does not mistake the classifier for a transformer)."""
        check_is_fitted(self, "coef_")
        return self.feature_map_.transform(validate_estimator_input(self, X, reset=False))

    def decision_function(self, X):
        """``<zeta, phi(x)> + b``; positive means ``classes_[1]``."""
        return self.features(X) @ self.coef_.ravel() + self.intercept_[0]

    def input_gradient(self, X):
        """Gradient of the decision function w.r.t. the input, one row per sample (for attacks)."""
        check_is_fitted(self, "coef_")
        return self.feature_map_.input_gradient(validate_estimator_input(self, X, reset=False), self.coef_.ravel())

    def predict(self, X):
        scores = self.decision_function(X)  # checks fitted first
        return self.classes_[(scores >= 0).astype(int)]


class SafeSVC(BinaryClassifierTags, ClassifierMixin, BaseEstimator):
    """Safe SVM [CJ20, eq. 7]: learn per-feature ellipsoid semi-axes, then fit the robust SVM.

    The semi-axes sigma in ``[sigma_min, sigma_max]`` are learned on a validation split by hypergradient descent or
    by the paper's stochastic bi-level method (:class:`~rsvm_conic.formulations.safe.SafeProblem`, ``solver``); then the
    exact robust SVM (eq. 4, ``Sigma = diag(sigma)^2``) is refitted on all the data by the fastest certified route.

    Parameters
    ----------
    C : float, default=1.0
        Weight of the robust hinge loss against the regulariser.
    sigma_min, sigma_max : float, default=0.05, 1.0
        Box in which each semi-axis is learned.
    validation_fraction : float, default=0.3
        Share of the data held out (stratified) for the upper-level (validation) loss.
    tau : float, default=0.05
        Softplus smoothing of the hinge on both levels (``tau -> 0`` recovers the non-smooth problem).
    max_iter : int or None, default=None
        Iterations of the upper-level search (None: the backend's default, 100 hypergradient steps or 300 outer
        iterations of the stochastic method).
    solver : {"hypergradient", "stochastic_bilevel"}, default="hypergradient"
        Backend of the upper-level search (``SafeProblem.BACKENDS``).
    random_state : int or None, default=None
        Seed of the validation split and of the stochastic method (None: seed 0 for the latter).
    class_weight : dict, "balanced" or None, default=None
        Weight of each class's loss terms (``C_i = C * class_weight[y_i] * sample_weight[i]``) on both levels and in
        the final robust SVM, as in scikit-learn's ``SVC``; ``"balanced"``: ``L / (2 * count(y_i))``.  Weighted fits
        need ``solver="hypergradient"``.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels.
    sigma_ : ndarray of shape (n_features,)
        Learned semi-axes.
    bilevel_ : SafeResult
        The upper-level search (history, iterations, the certificate of its lower level on the training split).
    n_iter_ : int
        Iterations of the upper-level search.
    coef_ : ndarray of shape (1, n_features)
        Weights of the final robust SVM.
    intercept_ : ndarray of shape (1,)
        Its bias.
    objective_ : float
        Its optimal objective value.
    solver_stats_ : dict
        Certificate of the final robust SVM (the upper-level search over sigma is non-convex and carries no
        optimality certificate).
    """

    def __init__(
        self,
        C=1.0,
        sigma_min=0.05,
        sigma_max=1.0,
        validation_fraction=0.3,
        tau=0.05,
        max_iter=None,
        solver="hypergradient",
        random_state=None,
        class_weight=None,
    ):
        self.C = C
        self.class_weight = class_weight
        self.sigma_min = sigma_min
        self.sigma_max = sigma_max
        self.validation_fraction = validation_fraction
        self.tau = tau
        self.max_iter = max_iter
        self.solver = solver
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        """Learn the semi-axes on a validation split, then fit the robust SVM on all the data.

        Parameters
        ----------
        X : array-like of shape (L, n)
            Training samples.
        y : array-like of shape (L,)
            Binary labels.
        sample_weight : array-like of shape (L,) or None, default=None
            Nonnegative weight of each sample's loss terms (``C_i = C * sample_weight[i] * class weight``) in the
            lower level, the validation loss and the final robust SVM; 0 drops the sample.  Given the learned sigma, an
            integer weight is the same as repeating the sample; the validation split is a split of samples, so the
            learned sigma itself can differ from the repeated samples' (their copies may fall on both sides).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        from sklearn.model_selection import train_test_split

        from ..formulations.robust import RobustProblem
        from ..formulations.safe import SafeProblem

        check_positive(self.C, "C")
        check_choice(self.solver, "solver", tuple(SafeProblem.BACKENDS))
        if self.max_iter is not None and (int(self.max_iter) != self.max_iter or self.max_iter < 1):
            raise ValueError(f"max_iter must be a positive integer or None; got {self.max_iter!r}.")
        if not 0 < float(self.validation_fraction) < 1:
            raise ValueError(f"validation_fraction must lie in (0, 1); got {self.validation_fraction}.")
        X, y_pm, classes = validate_estimator_input(self, X, y, reset=True)
        weights = sample_weights(y_pm, classes, sample_weight, self.class_weight)
        wa = wv = None
        if weights is not None:
            if self.solver != "hypergradient":
                raise ValueError(
                    f"solver={self.solver!r} does not take sample weights (sample_weight or class_weight); the route "
                    "that does: 'hypergradient'."
                )
            keep = keep_weighted(weights, y_pm, classes)
            X, y_pm, weights = X[keep], y_pm[keep], weights[keep]  # a sample of weight 0 takes no part
            Xa, Xv, ya, yv, wa, wv = train_test_split(
                X, y_pm, weights, test_size=self.validation_fraction, stratify=y_pm, random_state=self.random_state
            )
        else:
            Xa, Xv, ya, yv = train_test_split(
                X, y_pm, test_size=self.validation_fraction, stratify=y_pm, random_state=self.random_state
            )
        bil = SafeProblem(
            Xa,
            ya,
            Xv,
            yv,
            C=self.C,
            sigma_min=self.sigma_min,
            sigma_max=self.sigma_max,
            tau=self.tau,
            sample_weight=wa,
            sample_weight_val=wv,
        )
        if self.solver == "hypergradient":
            opts = {} if self.max_iter is None else {"max_iter": int(self.max_iter)}
        else:
            seed = 0 if self.random_state is None else self.random_state
            opts = {"seed": seed} if self.max_iter is None else {"seed": seed, "n_outer": int(self.max_iter)}
        res = bil.solve(self.solver, **opts)
        sol = RobustProblem(
            X, y_pm, UncertaintySet(Sigma=res.sigma**2, radius=1.0), C=self.C, sample_weight=weights
        ).solve("auto")
        self.classes_ = classes
        self.sigma_ = res.sigma
        self.bilevel_ = res
        self.n_iter_ = res.iterations
        # the final model is the exact robust SVM at the learned sigma: certified like RobustSVC's
        self.solver_stats_ = solver_stats(sol)
        self.coef_ = np.asarray(sol["w"], dtype=float).reshape(1, -1)
        self.intercept_ = np.array([float(sol["b"])])
        self.objective_ = float(sol.objective)
        return self

    def decision_function(self, X):
        check_is_fitted(self, "coef_")
        return validate_estimator_input(self, X, reset=False) @ self.coef_.ravel() + self.intercept_[0]

    def predict(self, X):
        scores = self.decision_function(X)  # checks fitted first
        return self.classes_[(scores >= 0).astype(int)]
