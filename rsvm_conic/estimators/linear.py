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
reason -- the uncertainty (radius, or kappa(epsilon) times Sigma) exceeds what the data's margins
can absorb -- and the largest radius (smallest epsilon) for which ``w != 0`` on these data.
"""

from __future__ import annotations

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
        import dask

        score, size = dask.compute(abs(X @ w).max(), abs(X).max())
        return float(score) <= 1e-7 * (1.0 + float(size))
    return float(np.max(np.abs(X @ w))) <= 1e-7 * (1.0 + float(np.max(np.abs(X))))


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
        stats.update({k: v for k, v in sol.info.items() if k not in ("history", "log", "alpha") and k not in stats})
        self.solver_stats_ = stats
        if _is_constant(self.coef_.ravel(), X):
            self._warn_constant(formulation)
        return self

    def _from_store(self, path, y, Sigma, groups, sample_radius):
        from ..datasets.zarr_store import open_dataset

        if any(v is not None for v in (y, Sigma, groups, sample_radius)):
            raise ValueError("fit(path) reads y, Sigma, groups and sample_radius from the store; pass none of them.")
        ds = open_dataset(path)
        unc = ds.uncertainty() if self._uncertain else {}
        return ds.X, ds.y, unc.get("Sigma"), unc.get("groups"), unc.get("sample_radius")

    def _warn_constant(self, formulation):
        label = self.classes_[int(self.intercept_[0] > 0)]
        warnings.warn(
            f"{type(self).__name__}: the fitted classifier is constant (w = 0; every prediction is "
            f"{label}). {self._constant_reason(formulation)}",
            ConstantClassifierWarning,
            stacklevel=3,
        )

    def _constant_reason(self, formulation) -> str:
        return "The optimal separating direction is 0 at this C: increase C."

    def decision_function(self, X):
        """Signed distance-like score; positive means ``classes_[1]``."""
        check_is_fitted(self, "coef_")
        X = validate_estimator_input(self, X, reset=False)
        return X @ self.coef_.ravel() + self.intercept_[0]


def largest_informative_gamma(formulation, rtol: float = 1e-3, max_solves: int = 30) -> float:
    """The threshold ``g*`` of the radius / kappa parameter above which the optimum has ``w = 0``,
    by bisection between 0 (assumed informative; checked) and the current value (constant).

    The robust objective is convex in (w, b) and the optimal ``||w||`` is non-increasing in the
    radius, so the set of radii with ``w = 0`` is an interval ``[g*, inf)``.  Returns 0 when even
    ``g = 0`` gives ``w = 0`` (then C is what is too small).
    """
    name = formulation.gamma_param
    g_orig = g_hi = float(formulation.param_value(name))
    X = formulation.X
    try:

        def constant(g):
            formulation.set_params(**{name: g})
            return _is_constant(formulation.solve("auto")["w"], X)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if constant(0.0):
                return 0.0
            g_lo = 0.0
            for _ in range(max_solves):
                if g_hi - g_lo <= rtol * g_hi:
                    break
                mid = 0.5 * (g_lo + g_hi)
                if constant(mid):
                    g_hi = mid
                else:
                    g_lo = mid
            return g_lo
    finally:
        formulation.set_params(**{name: g_orig})


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
        r = largest_informative_gamma(formulation)
        if r == 0.0:
            return super()._constant_reason(formulation)
        return (
            f"The uncertainty radius {self.radius:g} exceeds what the data's margins can absorb: on these data "
            f"w != 0 needs radius < {r:.4g} (or a smaller Sigma, or more separated classes)."
        )


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
        k = largest_informative_gamma(formulation)
        if k == 0.0:
            return super()._constant_reason(formulation)
        eps = float(normal.sf(k)) if self.distribution == "gaussian" else 1.0 / (1.0 + k * k)
        return (
            f"kappa(epsilon) = {kappa(self.epsilon, self.distribution):.4g} times the noise covariance exceeds "
            f"what the data's margins can absorb: on these data w != 0 needs kappa < {k:.4g}, i.e. "
            f"epsilon > {eps:.4g} (or a smaller Sigma)."
        )
