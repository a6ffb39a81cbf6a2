"""Cross-validated estimators that walk a certified, warm-started path per fold (like ``LogisticRegressionCV``).

``RobustSVCCV(Cs=..., radii=..., cv=5).fit(X, y, Sigma=S, sigma_index=g)`` splits the data as scikit-learn's
``GridSearchCV`` does (the same splitter from ``cv``; every fit parameter whose first axis has the length of X is
sliced with the training indices, the others are passed as they are, :mod:`tests.test_model_selection`), walks
:func:`~rsvm_conic.estimators.path.radius_path` on each fold's training rows, scores every point on the fold's
test rows, and selects the (C, radius) of the best mean score, ties going to the most regularised point (the
smallest C, then the largest radius: the first in ``GridSearchCV``'s order over ``{"C": Cs increasing, "radius":
radii decreasing}``).  A ``sample_weight`` fit parameter also weights each fold's score, as ``GridSearchCV`` (from
scikit-learn 1.9) forwards it to the scorer.  With ``refit=True`` the estimator is then fitted on all the data at
that point, its interior point started from the folds' mean solution there (the working-set warm start of
:mod:`rsvm_conic.solvers.working_set`, certified on all the data, else the cold fit; a :class:`RobustSVC` refit
on ``rsvm-conic bench paths``'s magic data takes 11 interior-point iterations on a reduced problem against 19
cold).  The folds' constant fits (the largest radii of a path, by design) do not warn; the refit's warnings
are issued under the cross-validated estimator's name.  :class:`PathCV` is the base: a new estimator with a path
needs its class and its own ``__init__``.
"""

from __future__ import annotations

import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, clone
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv
from sklearn.utils.validation import _check_method_params, check_is_fitted, validate_data

from .._validation import check_integer
from ..exceptions import ConstantClassifierWarning
from ._base import BinaryClassifierTags
from .linear import RobustSVC
from .path import default_radii, radius_path
from .wasserstein import WassersteinSVC

__all__ = ["PathCV", "RobustSVCCV", "WassersteinSVCCV"]


def _fold(estimator, X, y, train, test, radii, Cs, scorer, fit_params):
    """One fold: the path on the training rows, each point scored on the test rows."""
    params = _check_method_params(X, params=fit_params, indices=train)
    with warnings.catch_warnings():  # the largest radii of a path give constant fits by design
        warnings.simplefilter("ignore", ConstantClassifierWarning)
        path = radius_path(estimator, X[train], y[train], radii=radii, Cs=Cs, **params)
    weight = fit_params.get("sample_weight")
    weight = None if weight is None else np.asarray(weight, dtype=float)[test]  # scored with the test rows' weights
    if scorer is None:  # accuracy of every point at once, as LinearClassifierMixin.predict labels the scores
        labels = path.classes[(np.einsum("ijk,tk->ijt", path.coefs, X[test]) + path.intercepts[..., None] > 0) * 1]
        return np.average(labels == y[test], axis=-1, weights=weight), path
    point = clone(estimator)
    point.classes_, point.n_features_in_ = path.classes, X.shape[1]
    scores = np.empty(path.intercepts.shape)
    kw = {} if weight is None else {"sample_weight": weight}
    for i, j in np.ndindex(*scores.shape):
        point.coef_, point.intercept_ = path.coefs[i, j][None, :], np.array([path.intercepts[i, j]])
        scores[i, j] = scorer(point, X[test], y[test], **kw)
    return scores, path


class PathCV(BinaryClassifierTags, LinearClassifierMixin, BaseEstimator):
    """Base of the cross-validated path estimators (see the module docstring).

    A subclass sets ``_estimator`` (the estimator class, with ``warm_start`` and ``C``, ``radius`` or both) and
    ``_estimator_params`` (the names of its parameters that the subclass's ``__init__`` takes besides ``Cs``,
    ``radii``, ``n_radii``, ``cv``, ``scoring``, ``refit`` and ``n_jobs``; a subclass for an estimator without C
    takes no ``Cs``).

    Parameters
    ----------
    Cs : array-like of float, default=(1.0,)
        The values of C.
    radii : array-like of float or None, default=None
        The radii; None: :func:`~rsvm_conic.estimators.path.default_radii` on all the data (the same grid for every
        fold, as ``LogisticRegressionCV`` uses one grid of Cs).
    n_radii : int, default=10
        Number of default radii.
    cv : int, cross-validation generator or iterable, default=5
        As in ``GridSearchCV`` (an int: stratified K-fold).
    scoring : str, callable or None, default=None
        As in ``GridSearchCV``; None: accuracy.
    refit : bool, default=True
        Fit the estimator on all the data at the selected point (``best_estimator_``, its certificate in
        ``best_estimator_.solver_stats_``; this estimator's ``coef_`` and ``intercept_``).  False: only the
        selection (no model to predict with).
    n_jobs : int or None, default=None
        Folds run in parallel (joblib).
    """

    _estimator = None
    _estimator_params: tuple = ()

    def _make(self):
        return self._estimator(**{name: getattr(self, name) for name in self._estimator_params})

    def fit(self, X, y, groups=None, **fit_params):
        """Select C and the radius by cross-validation, then (``refit``) fit on all the data.

        Parameters
        ----------
        X : array-like of shape (L, n)
            Training samples.
        y : array-like of shape (L,)
            Binary labels.
        groups : array-like of shape (L,) or None, default=None
            Group labels for the splitter (as in ``GridSearchCV``; the uncertainty's groups are ``sigma_index``).
        **fit_params
            The estimator's fit parameters (``Sigma``, ``sigma_index``, ``sample_radius``, ``sample_weight``), sliced
            per fold as ``GridSearchCV`` slices them.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        estimator = self._make()
        X, y = validate_data(self, X, y, accept_sparse=False, dtype=np.float64, ensure_all_finite=False)
        has_radius = "radius" in estimator.get_params()
        radii = self.radii
        if has_radius and radii is None:
            if not hasattr(estimator, "radius_threshold"):
                raise ValueError(
                    f"{type(self).__name__} needs radii: {type(estimator).__name__} has no radius_threshold from "
                    "which a default grid would start."
                )
            n_radii = check_integer(self.n_radii, "n_radii", minimum=2)
            radii = default_radii(clone(estimator), X, y, n_radii=n_radii, **fit_params)
        if has_radius:
            radii = np.sort(np.ravel(np.asarray(radii, dtype=float)))[::-1]
        has_C = "C" in estimator.get_params()
        Cs = np.sort(np.ravel(np.asarray(self.Cs, dtype=float))) if has_C else None
        cv = check_cv(self.cv, y, classifier=True)
        scorer = None if self.scoring is None else check_scoring(estimator, scoring=self.scoring)
        splits = list(cv.split(X, y, groups))
        folds = Parallel(n_jobs=self.n_jobs)(
            delayed(_fold)(estimator, X, y, train, test, radii, Cs, scorer, fit_params) for train, test in splits
        )
        self.Cs_, self.radii_ = Cs, radii
        self.scores_ = np.stack([scores for scores, _ in folds])  # (n_folds, n_Cs, n_radii)
        self.coefs_paths_ = np.stack([path.coefs for _, path in folds])
        self.gaps_ = np.stack([path.gaps for _, path in folds])
        mean = self.scores_.mean(axis=0)
        i, j = np.unravel_index(int(np.argmax(mean)), mean.shape)  # the first maximum: the most regularised
        self.best_score_ = float(mean[i, j])
        self.C_ = float(Cs[i]) if has_C else None
        self.radius_ = float(radii[j]) if has_radius else None
        if self.refit:
            params = {k: v for k, v in (("C", self.C_), ("radius", self.radius_)) if v is not None}
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                best = clone(estimator).set_params(**params)
                paths = [path for _, path in folds]
                if hasattr(best, "_fit_from") and all(np.array_equal(p.classes, paths[0].classes) for p in paths):
                    # started from the folds' mean solution at (C_, radius_), certified on all the data
                    coef = np.mean([p.coefs[i, j] for p in paths], axis=0)
                    best._fit_from(coef, np.mean([p.intercepts[i, j] for p in paths]), X, y, **fit_params)
                else:
                    best.fit(X, y, **fit_params)
            inner = type(best).__name__
            for w in caught:  # the refit's warnings, a constant classifier's under this estimator's name
                message = str(w.message)
                if issubclass(w.category, ConstantClassifierWarning) and message.startswith(inner + ":"):
                    message = type(self).__name__ + message[len(inner) :]
                warnings.warn(message, w.category, stacklevel=2)
            self.best_estimator_ = best
            self.classes_, self.coef_, self.intercept_ = best.classes_, best.coef_, best.intercept_
            if hasattr(best, "n_iter_"):
                self.n_iter_ = best.n_iter_
        return self

    def decision_function(self, X):
        """The refitted estimator's score (``refit=True``); positive means ``classes_[1]``.

        Parameters
        ----------
        X : array-like of shape (L, n)
            Samples.

        Returns
        -------
        ndarray of shape (L,)
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.decision_function(X)


class RobustSVCCV(PathCV):
    """:class:`~rsvm_conic.estimators.RobustSVC` with C and the radius chosen by cross-validation along certified,
    warm-started paths (module docstring).

    Parameters
    ----------
    Cs : array-like of float, default=(1.0,)
        The values of C.
    radii : array-like of float or None, default=None
        The radii; None: ``n_radii`` radii from the one at which the classifier becomes constant on all the data
        down to 1e-3 of it (:func:`~rsvm_conic.estimators.path.default_radii`).
    n_radii : int, default=10
        Number of default radii.
    cv : int, cross-validation generator or iterable, default=5
        As in ``GridSearchCV``.
    scoring : str, callable or None, default=None
        As in ``GridSearchCV``; None: accuracy.
    refit : bool, default=True
        Fit on all the data at the selected point.
    n_jobs : int or None, default=None
        Folds run in parallel.
    norm, solver, solver_options, class_weight
        As in :class:`~rsvm_conic.estimators.RobustSVC`.

    Attributes
    ----------
    C_ : float
        The selected C.
    radius_ : float
        The selected radius.
    Cs_ : ndarray of shape (n_Cs,)
        The values of C, increasing.
    radii_ : ndarray of shape (n_radii,)
        The radii, decreasing.
    scores_ : ndarray of shape (n_folds, n_Cs, n_radii)
        Each fold's score at each point.
    best_score_ : float
        The selected point's mean score.
    coefs_paths_ : ndarray of shape (n_folds, n_Cs, n_radii, n_features)
        Each fold's ``coef_`` at each point.
    gaps_ : ndarray of shape (n_folds, n_Cs, n_radii)
        Each fold's certified relative gap at each point.
    best_estimator_ : RobustSVC
        Fitted on all the data at ``(C_, radius_)`` (``refit=True``).
    classes_, coef_, intercept_
        Those of ``best_estimator_`` (its certificate: ``best_estimator_.solver_stats_``).
    n_features_in_ : int
        Number of features seen in ``fit``.
    """

    _estimator = RobustSVC
    _estimator_params = ("norm", "solver", "solver_options", "class_weight")

    def __init__(
        self,
        Cs=(1.0,),
        radii=None,
        n_radii=10,
        cv=5,
        scoring=None,
        refit=True,
        n_jobs=None,
        norm=2,
        solver="auto",
        solver_options=None,
        class_weight=None,
    ):
        self.Cs = Cs
        self.radii = radii
        self.n_radii = n_radii
        self.cv = cv
        self.scoring = scoring
        self.refit = refit
        self.n_jobs = n_jobs
        self.norm = norm
        self.solver = solver
        self.solver_options = solver_options
        self.class_weight = class_weight


class WassersteinSVCCV(PathCV):
    """:class:`~rsvm_conic.estimators.WassersteinSVC` with the radius of its Wasserstein ball chosen by
    cross-validation along certified, warm-started paths (module docstring; the model has no C).

    Parameters
    ----------
    radii : array-like of float
        The radii (> 0; in the units of X).  None: ``n_radii`` radii falling geometrically from the radius at which
        ``w = 0`` (:meth:`~rsvm_conic.estimators.WassersteinSVC.radius_threshold`; ``kappa = inf`` only, else
        required).
    n_radii : int, default=10
        Length of the default grid.
    cv : int, cross-validation generator or iterable, default=5
        As in ``GridSearchCV``.
    scoring : str, callable or None, default=None
        As in ``GridSearchCV``; None: accuracy.
    refit : bool, default=True
        Fit on all the data at the selected radius.
    n_jobs : int or None, default=None
        Folds run in parallel.
    norm, kappa, solver, tol, max_iter, class_weight
        As in :class:`~rsvm_conic.estimators.WassersteinSVC`.

    Attributes
    ----------
    radius_ : float
        The selected radius.
    radii_ : ndarray of shape (n_radii,)
        The radii, decreasing.
    scores_ : ndarray of shape (n_folds, 1, n_radii)
        Each fold's score at each radius.
    best_score_ : float
        The selected radius's mean score.
    coefs_paths_ : ndarray of shape (n_folds, 1, n_radii, n_features)
        Each fold's ``coef_`` at each radius.
    gaps_ : ndarray of shape (n_folds, 1, n_radii)
        Each fold's certified relative gap at each radius.
    best_estimator_ : WassersteinSVC
        Fitted on all the data at ``radius_`` (``refit=True``).
    classes_, coef_, intercept_, n_iter_
        Those of ``best_estimator_`` (its certificate: ``best_estimator_.solver_stats_``).
    n_features_in_ : int
        Number of features seen in ``fit``.
    """

    _estimator = WassersteinSVC
    _estimator_params = ("norm", "kappa", "solver", "tol", "max_iter", "class_weight")

    def __init__(
        self,
        radii=None,
        n_radii=10,
        cv=5,
        scoring=None,
        refit=True,
        n_jobs=None,
        norm=2,
        kappa=np.inf,
        solver="auto",
        tol=1e-6,
        max_iter=100,
        class_weight=None,
    ):
        self.radii = radii
        self.n_radii = n_radii
        self.cv = cv
        self.scoring = scoring
        self.refit = refit
        self.n_jobs = n_jobs
        self.norm = norm
        self.kappa = kappa
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.class_weight = class_weight
