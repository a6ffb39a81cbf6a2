"""scikit-learn style estimators for the linear SVM family (nominal, robust, chance-constrained).

Uncertainty is data, not a hyper-parameter, so it goes to ``fit``::

    RobustSVC(C=1.0, radius=0.5, norm=2).fit(X, y, Sigma=Sigma, groups=groups)

``solver`` picks the route; the choices are the formulation's backend table
(:attr:`~rsvm_conic.formulations._linear.LinearSVMFormulation.BACKENDS`) plus ``"auto"``, the
default: the fastest route that certifies the instance (the structure-exploiting interior point
for p = 2 and the nominal model, Clarabel for p in {1, inf}, libsvm for the nominal model with
more features than samples, a stochastic method past the interior point's work limit), falling
back visibly (a SolverWarning names both routes) to the next exact route.  ``solver_stats_`` says
which route ran and its certified optimality gap (primal minus a feasible dual value).  A route
that does not certify its result raises :class:`~rsvm_conic.solvers.conic.SolverError`.

A fit whose classifier is constant (``w = 0``: every prediction is one class) warns with the
reason (:func:`warn_constant_classifier`): the uncertainty (radius, or kappa(epsilon) times Sigma)
exceeds what the data's margins can absorb, and the radius (epsilon) at which ``w != 0`` on these
data -- computed from the data by a subdifferential test at ``w = 0``
(:meth:`~rsvm_conic.formulations._linear.LinearSVMFormulation.zero_threshold`), not by solving the SVM
again; or, when even the nominal SVM is constant, that no C changes it.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
from scipy.stats import norm as normal
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import check_choice, check_norm, check_positive, is_dask_array, validate_estimator_input
from ..formulations.chance import ChanceConstrainedSVM
from ..formulations.nominal import NominalSVM
from ..formulations.robust import RobustSVM
from ..uncertainty.chance import DISTRIBUTIONS, kappa
from ..uncertainty.sets import UncertaintySet
from ._base import BinaryClassifierTags


class ConstantClassifierWarning(UserWarning):
    """The fitted linear classifier is constant (w = 0); the message says why and what to change."""


def _is_constant(w, X) -> bool:
    """``w = 0`` up to round-off relative to the data: every score equals the intercept."""
    if is_dask_array(X):  # both maxima in one pass
        from .._validation import dask_compute

        score, size = dask_compute(abs(X @ w).max(), abs(X).max())
        return float(score) <= 1e-7 * (1.0 + float(size))
    size = max(float(np.max(X)), -float(np.min(X)))  # max |X| without an |X| copy
    return float(np.max(np.abs(X @ w))) <= 1e-7 * (1.0 + size)


#: the reason when even the nominal SVM is constant (the subdifferential test at w = 0 does not involve C)
NO_DIRECTION = (
    "No direction beats a constant score on these data, at any C and without uncertainty: the smaller class's "
    "mean is a weighted mean of the larger class's samples with no weight above 1 / (the smaller class's size) "
    "(for balanced classes: the class means coincide). C and the uncertainty do not change this; other features do."
)


def warn_constant_classifier(estimator, formulation, X, reason=None, *, stacklevel: int = 3) -> bool:
    """Warn with :class:`ConstantClassifierWarning` if ``estimator``'s fitted ``coef_`` is constant on ``X``.

    Parameters
    ----------
    estimator : fitted estimator
        With ``coef_`` (one row), ``intercept_`` and ``classes_`` set.
    formulation : LinearSVMFormulation
        The formulation that was solved (its data, its robust term at the fitted parameter values).
    X : array of shape (L, n)
        The samples the classifier scores (the features for a feature-space model).
    reason : callable or None, default=None
        ``reason(formulation) -> str``; None: :func:`constant_reason`.
    stacklevel : int, default=3
        Passed to :func:`warnings.warn` (3: the caller of the estimator's ``fit``).

    Returns
    -------
    bool
        Whether it warned.

    Notes
    -----
    Never raises and never solves the SVM again: the reason (:func:`constant_reason`) comes from the data and the
    fitted parameters; if computing it fails, the message says so instead.  ``RobustSVC`` and
    ``ChanceConstrainedSVC`` call it at the end of ``fit``; another estimator on a
    :class:`~rsvm_conic.formulations._linear.LinearSVMFormulation` calls
    ``warn_constant_classifier(self, formulation, X)`` once ``coef_``, ``intercept_`` and ``classes_`` are set.
    """
    try:
        constant = _is_constant(np.asarray(estimator.coef_, dtype=float).ravel(), X)
    except Exception:  # a diagnostic never turns a certified fit into an exception
        return False
    if not constant:
        return False
    try:
        why = (reason or constant_reason)(formulation)
    except Exception as exc:
        why = f"(The reason could not be computed: {type(exc).__name__}: {exc}.)"
    label = estimator.classes_[int(float(estimator.intercept_[0]) > 0)]
    warnings.warn(
        f"{type(estimator).__name__}: the fitted classifier is constant (w = 0; every prediction is {label}). {why}",
        ConstantClassifierWarning,
        stacklevel=stacklevel,
    )
    return True


def _threshold(formulation):
    """``(ZeroThreshold or None, why not)``: the formulation's threshold; never raises."""
    try:
        zt = formulation.zero_threshold()
    except Exception as exc:  # a diagnostic never turns a certified fit into an exception
        return None, f"it could not be computed ({type(exc).__name__}: {exc})"
    if zt is None:
        why = "it is not computed for samples given as a Dask array" if formulation.dask else "no robust term"
        return None, why
    return zt, ""


#: relative width below which a threshold's bracket is reported as one number
BRACKET_RTOL = 1e-3
#: a threshold below this fraction of the fitted value is reported as 0 (constant without uncertainty)
ZERO_RTOL = 1e-6
#: the reason when no radius makes w = 0 (the fit's w is 0 only to the constant test's round-off)
UNTOUCHED = (
    "On these data w != 0 at every radius (the uncertainty leaves an improving direction untouched): this fit's "
    "scores vary by less than 1e-7 (1 + max |X|); a larger C or rescaled features show it."
)


def constant_reason(formulation) -> str:
    """Why a robust linear SVM's fitted classifier is constant, and the value of its radius parameter
    (``formulation.gamma_param``) at which it stops being so.

    Parameters
    ----------
    formulation : LinearSVMFormulation
        The solved formulation, at the fitted parameter values.

    Returns
    -------
    str
        ``"... w != 0 needs <param> < T ..."`` with T the threshold at and above which ``w = 0`` is optimal
        (bracketed to :data:`BRACKET_RTOL`), a certified value below which ``w != 0`` when the threshold is only
        bounded, :data:`NO_DIRECTION` when even the nominal model is constant.
    """
    name = formulation.gamma_param or "radius"
    value = float(formulation.param_value(name)) if formulation.gamma_param else 0.0
    head = f"The uncertainty {name} {value:g} exceeds what the data's margins can absorb"
    tail = "(or a smaller Sigma, or more separated classes)"
    zt, why = _threshold(formulation)
    if zt is None:
        return NO_DIRECTION if why == "no robust term" else f"{head} {tail}; the threshold {name}: {why}."
    if zt.upper <= ZERO_RTOL * value:
        return NO_DIRECTION
    if math.isinf(zt.lower):
        return UNTOUCHED
    if zt.lower >= (1.0 - BRACKET_RTOL) * zt.upper:
        return f"{head}: on these data w != 0 needs {name} < {zt.upper:.4g} {tail}."
    return (
        f"{head} {tail}: on these data w != 0 for {name} < {zt.lower:.4g} (certified); the threshold lies between "
        f"that and {min(zt.upper, value):.4g}."
    )


class _LinearSVCBase(BinaryClassifierTags, LinearClassifierMixin, BaseEstimator):
    _formulation = None  # the formulation class: its BACKENDS table lists the routes

    @classmethod
    def _solvers(cls):
        return ("auto", *cls._formulation.BACKENDS)

    def _build(self, X, y, Sigma, groups, sample_radius):  # pragma: no cover - abstract
        raise NotImplementedError

    #: whether ``fit`` takes Sigma / groups / sample_radius (read from a store given as a path)
    _uncertain = True

    def fit(self, X, y=None, Sigma=None, groups=None, sample_radius=None):
        """Fit on (X, y); ``Sigma``/``groups`` describe the uncertainty (see UncertaintySet).

        X, y (and the per-sample groups, sample_radius) may be Dask arrays chunked along rows: the fit then
        runs on their row blocks, on the current Dask scheduler (e.g. a ``distributed.Client(address)``),
        and nothing of size L is gathered (:mod:`rsvm_conic.solvers.dask_ipm`).  ``X`` may also be the
        path of a chunked store (:mod:`rsvm_conic.datasets.zarr_store`): its X, y and uncertainty are read
        as Dask arrays.
        """
        if isinstance(X, (str, os.PathLike)):
            X, y, Sigma, groups, sample_radius = self._from_store(X, y, Sigma, groups, sample_radius)
        check_choice(self.solver, "solver", self._solvers())
        check_positive(self.C, "C")
        X, y_pm, classes = validate_estimator_input(self, X, y, reset=True)
        formulation = self._build(X, y_pm, Sigma, groups, sample_radius)
        sol = formulation.solve(self.solver, **(self.solver_options or {}))
        if sol.status != "optimal":  # only an explicitly chosen stochastic route gets here uncertified
            gap = sol.certificate.gap_rel if sol.certificate is not None else float("inf")
            warnings.warn(
                f"{type(self).__name__}: solver {self.solver!r} stopped at max_epochs "
                f"({sol.info.get('epochs', sol.info.get('rounds'))}; max_rounds on Dask row blocks) with certified "
                f"relative gap {gap:.2e} > "
                f"{sol.certificate.tol if sol.certificate is not None else 0:g} (status {sol.status!r}); "
                "increase max_epochs (max_rounds) in solver_options or use solver='auto' (an exact, certified route).",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.classes_ = classes
        self.coef_ = np.asarray(sol["w"], dtype=float).reshape(1, -1)
        self.intercept_ = np.array([float(sol["b"])])
        self.objective_ = float(sol.objective)
        stats = {"backend": sol.backend, "status": sol.status, "time": sol.time}
        if sol.certificate is not None:
            stats.update(sol.certificate.as_dict())
        stats.update(
            {
                k: v
                for k, v in sol.info.items()
                if k not in ("history", "log", "alpha", "cone_multipliers") and k not in stats
            }
        )
        self.solver_stats_ = stats
        warn_constant_classifier(self, formulation, X, self._constant_reason)
        return self

    def _from_store(self, path, y, Sigma, groups, sample_radius):
        from ..datasets.zarr_store import open_dataset

        if any(v is not None for v in (y, Sigma, groups, sample_radius)):
            raise ValueError("fit(path) reads y, Sigma, groups and sample_radius from the store; pass none of them.")
        ds = open_dataset(path)
        unc = ds.uncertainty() if self._uncertain else {}
        return ds.X, ds.y, unc.get("Sigma"), unc.get("groups"), unc.get("sample_radius")

    def _constant_reason(self, formulation) -> str:
        return NO_DIRECTION

    def decision_function(self, X):
        """Signed distance-like score; positive means ``classes_[1]``."""
        check_is_fitted(self, "coef_")
        X = validate_estimator_input(self, X, reset=False)
        return X @ self.coef_.ravel() + self.intercept_[0]


class NominalSVC(_LinearSVCBase):
    """Soft-margin linear SVM ([CJ20, eq. 1]): ``min 1/2||w||^2 + C sum hinge``.

    Parameters
    ----------
    C : float > 0
        Weight of the hinge losses.
    solver : str
        ``"auto"`` (default: the interior point, or libsvm when features outnumber samples),
        ``"libsvm"``, ``"ipm"``, ``"clarabel"``, ``"scs"``, ``"sgd"``, ``"prox"``.
    solver_options : dict, optional
        Options of the chosen route (for ``"auto"``: ``{route: {...}}``).

    Attributes
    ----------
    coef_, intercept_, classes_ : the fitted classifier.
    objective_ : float, the primal objective.
    solver_stats_ : dict, the route that ran, its status and certified gap (``gap_rel``).
    """

    _formulation = NominalSVM
    _uncertain = False

    def __init__(self, C=1.0, solver="auto", solver_options=None):
        self.C = C
        self.solver = solver
        self.solver_options = solver_options

    def _build(self, X, y, Sigma, groups, sample_radius):
        if Sigma is not None or groups is not None or sample_radius is not None:
            raise ValueError(
                "NominalSVC ignores uncertainty; use RobustSVC or ChanceConstrainedSVC to pass Sigma/groups."
            )
        return NominalSVM(X, y, C=self.C, check_input=False)


class RobustSVC(_LinearSVCBase):
    """Worst-case robust linear SVM ([CJ20, eq. 4]) over ``||Sigma^{-1/2} dx||_norm <= radius``.

    Parameters
    ----------
    C : float > 0
        Weight of the robust hinge losses.
    radius : float >= 0
        Radius of the uncertainty set (times ``sample_radius`` per sample, if given to ``fit``).
    norm : 1, 2 or inf
        The norm of the uncertainty set.
    solver : str
        ``"auto"`` (default: the interior point for norm 2, Clarabel for 1 and inf), ``"ipm"``,
        ``"clarabel"``, ``"scs"``, ``"sgd"``, ``"prox"``.
    solver_options : dict, optional
        Options of the chosen route (for ``"auto"``: ``{route: {...}}``).

    Attributes
    ----------
    coef_, intercept_, classes_ : the fitted classifier.
    objective_ : float, the primal objective.
    solver_stats_ : dict, the route that ran, its status and certified gap (``gap_rel``).
    """

    _formulation = RobustSVM

    def __init__(self, C=1.0, radius=1.0, norm=2, solver="auto", solver_options=None):
        self.C = C
        self.radius = radius
        self.norm = norm
        self.solver = solver
        self.solver_options = solver_options

    def _build(self, X, y, Sigma, groups, sample_radius):
        check_positive(self.radius, "radius", strict=False)
        unc = UncertaintySet(
            Sigma=Sigma,
            groups=groups,
            p=check_norm(self.norm),
            radius=self.radius,
            sample_scale=sample_radius,
            sample_scale_name="sample_radius",
        )
        return RobustSVM(X, y, unc, C=self.C, check_input=False)

    def _constant_reason(self, formulation) -> str:
        return constant_reason(formulation)


class ChanceConstrainedSVC(_LinearSVCBase):
    """Chance-constrained linear SVM: each margin constraint holds with probability >= 1 - epsilon
    under noise of covariance ``Sigma`` (Chebyshev: any law; Gaussian: normal noise).

    Parameters
    ----------
    C : float > 0
        Weight of the slacks.
    epsilon : float in (0, 1)
        Allowed probability that a margin constraint fails (Gaussian: epsilon <= 1/2).
    distribution : "chebyshev" or "gaussian"
        Noise model that sets kappa(epsilon).
    solver : str
        ``"auto"`` (default: the interior point), ``"ipm"``, ``"clarabel"``, ``"scs"``, ``"sgd"``, ``"prox"``.
    solver_options : dict, optional
        Options of the chosen route (for ``"auto"``: ``{route: {...}}``).

    Attributes
    ----------
    coef_, intercept_, classes_ : the fitted classifier.
    objective_ : float, the primal objective.
    solver_stats_ : dict, the route that ran, its status and certified gap (``gap_rel``).
    """

    _formulation = ChanceConstrainedSVM

    def __init__(self, C=1.0, epsilon=0.1, distribution="chebyshev", solver="auto", solver_options=None):
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
        return ChanceConstrainedSVM(
            X, y, Sigma, groups, C=self.C, epsilon=self.epsilon, distribution=self.distribution, check_input=False
        )

    def _constant_reason(self, formulation) -> str:
        head = (
            f"kappa(epsilon) = {kappa(self.epsilon, self.distribution):.4g} times the noise covariance exceeds "
            "what the data's margins can absorb"
        )
        zt, why = _threshold(formulation)
        if zt is None:
            return f"{head} (or a smaller Sigma); the threshold kappa: {why}."
        k_now = float(formulation.param_value("kappa"))
        if zt.upper <= ZERO_RTOL * k_now:
            return NO_DIRECTION
        if math.isinf(zt.lower):
            return UNTOUCHED

        def eps(k):
            return float(normal.sf(k)) if self.distribution == "gaussian" else 1.0 / (1.0 + k * k)

        if zt.lower >= (1.0 - BRACKET_RTOL) * zt.upper:
            return (
                f"{head}: on these data w != 0 needs kappa < {zt.upper:.4g}, i.e. epsilon > {eps(zt.upper):.4g} "
                "(or a smaller Sigma)."
            )
        return (
            f"{head} (or a smaller Sigma): on these data w != 0 for kappa < {zt.lower:.4g}, i.e. epsilon > "
            f"{eps(zt.lower):.4g} (certified); the threshold lies between that and {min(zt.upper, k_now):.4g}."
        )
