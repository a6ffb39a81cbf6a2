"""scikit-learn style estimators for the linear SVM family (nominal, robust, chance-constrained).

Uncertainty is data, not a hyper-parameter, so it goes to ``fit``::

    RobustSVC(C=1.0, radius=0.5, norm=2).fit(X, y, Sigma=Sigma, sigma_index=index)

``solver`` picks the route; the choices are the formulation's backend table
(:attr:`~rsvm_conic.formulations._linear.LinearProblem.BACKENDS`) plus ``"auto"``, the
default: the fastest route that certifies the instance (the structure-exploiting interior point
for p = 2 and the nominal model, Clarabel for p in {1, inf}, libsvm for the nominal model with
more features than samples, a stochastic method past the interior point's work limit), falling
back visibly (a SolverWarning names both routes) to the next exact route.  ``solver_stats_`` says
which route ran and its certified optimality gap (primal minus a feasible dual value).  A route
that does not certify its result raises :class:`~rsvm_conic.exceptions.SolverError`.

A fit whose classifier is constant (``w = 0``: every prediction is one class) warns with the
reason (:func:`warn_constant_classifier`): the uncertainty (radius, or kappa(epsilon) times Sigma)
exceeds what the data's margins can absorb, and the radius (epsilon) at which ``w != 0`` on these
data -- computed from the data by a subdifferential test at ``w = 0``
(:meth:`~rsvm_conic.formulations._linear.LinearProblem.zero_threshold`), not by solving the SVM
again; or, when even the nominal SVM is constant, that no C changes it.
"""

from __future__ import annotations

import contextvars
import hashlib
import math
import os
import time
import warnings
from typing import NamedTuple

import numpy as np
from scipy.stats import norm as normal
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import (
    check_choice,
    check_fit_keywords,
    check_norm,
    check_positive,
    dask_compute,
    is_dask_array,
    validate_estimator_input,
)
from ..formulations.chance import ChanceConstrainedProblem
from ..formulations.nominal import NominalProblem
from ..formulations.robust import RobustProblem
from ..uncertainty.chance import DISTRIBUTIONS, kappa
from ..uncertainty.sets import UncertaintySet
from ._base import BinaryClassifierTags, drop_samples, fit_uncertainty, keep_weighted, sample_weights
from ..exceptions import ConstantClassifierWarning, SolverError
from ..certify.contract import Solution, solver_stats
from ..formulations._linear import EXACT_TOL
from ..solvers.working_set import warm_mu, working_set_ipm


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
    formulation : LinearProblem
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
    :class:`~rsvm_conic.formulations._linear.LinearProblem` calls
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


def _threshold(formulation, threshold=None):
    """``(ZeroThreshold or None, why not)``: the formulation's threshold (``threshold`` when given); never raises."""
    try:
        zt = formulation.zero_threshold() if threshold is None else threshold
    except Exception as exc:  # a diagnostic never turns a certified fit into an exception
        return None, f"it could not be computed ({type(exc).__name__}: {exc})"
    if zt is None:
        why = (
            "it is not computed for samples given as a Dask array"
            if not formulation.samples.in_memory
            else "it is not computed for weighted samples"
            if formulation.sample_weight is not None
            else "no robust term"
        )
        return None, why
    return zt, ""


def _one_program_threshold(formulation):
    """The threshold of an unweighted in-memory robust SVM with p = 2, one noise factor and every sample of one
    radius by one minimum-norm problem (:func:`~rsvm_conic.solvers.zero_threshold.constant_threshold`), on the scale
    of the current radius; None in any other case or when that problem does not bracket it."""
    from ..solvers.zero_threshold import constant_threshold

    if not formulation.samples.in_memory or formulation.sample_weight is not None:
        return None
    unc = formulation.current_uncertainty()
    if unc is None or unc.p != 2.0 or unc.factors.shape[0] != 1 or np.ptp(unc.gamma) or not unc.gamma[0] > 0:
        return None
    ops = formulation.datafit().factor_ops()
    return constant_threshold(formulation.X, formulation.y, ops, unc.factors[0], unc.diagonal)


def _radius_threshold(formulation, radius):
    """:func:`_one_program_threshold` on the radius's scale (computed at radius 1, the formulation left at
    ``radius``)."""
    formulation.set_params(radius=1.0)
    try:
        return _one_program_threshold(formulation)
    finally:
        formulation.set_params(radius=radius)


#: relative width below which a threshold's bracket is reported as one number
BRACKET_RTOL = 1e-3
#: a threshold below this fraction of the fitted value is reported as 0 (constant without uncertainty)
ZERO_RTOL = 1e-6
#: the reason when no radius makes w = 0 (the fit's w is 0 only to the constant test's round-off)
UNTOUCHED = (
    "On these data w != 0 at every radius (the uncertainty leaves an improving direction untouched): this fit's "
    "scores vary by less than 1e-7 (1 + max |X|); a larger C or rescaled features show it."
)


def constant_reason(formulation, threshold=None) -> str:
    """Why a robust linear SVM's fitted classifier is constant, and the value of its radius parameter
    (``formulation.gamma_param``) at which it stops being so.

    Parameters
    ----------
    formulation : LinearProblem
        The solved formulation, at the fitted parameter values.
    threshold : ZeroThreshold or None, default=None
        The formulation's threshold on its parameter's scale, if known (None: computed).

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
    zt, why = _threshold(formulation, threshold)
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


#: the noise's standard deviation assumed when ``fit`` gets no ``Sigma``, as a fraction of the classes' own spread
NOISE_SCALE = 0.02


def default_noise_covariance(X, y, sample_weight=None):
    """The noise covariance assumed when ``fit`` gets no ``Sigma``: ``NOISE_SCALE**2`` times the pooled within-class
    covariance ``W = sum_i s_i (x_i - m_{y_i})(x_i - m_{y_i})' / sum_i s_i`` of the training data (``m_c``: class
    ``c``'s weighted mean; ``s_i``: the fit's weights, 1 without them, so that integer weights give the covariance of
    repeated rows).

    Parameters
    ----------
    X : ndarray or Dask array of shape (L, n)
        Trusted samples (a Dask array chunked along rows: two passes over its blocks, nothing of size L gathered).
    y : ndarray or Dask array of shape (L,)
        Labels in {-1, +1}, aligned with the rows of ``X``.
    sample_weight : ndarray of shape (L,) or None, default=None
        Positive weights of the samples (in-memory data only).

    Returns
    -------
    ndarray of shape (n, n)
        ``NOISE_SCALE**2 * W``: the noise's standard deviation along any direction is ``NOISE_SCALE`` (2 %) of the
        classes' own standard deviation along it.
    """
    pos = y > 0
    s = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    if is_dask_array(X):  # the Dask routes take no weights
        s = 1.0
    spos = pos * s
    stats = (
        X.T @ spos,
        (X.T @ s) if np.ndim(s) else X.sum(axis=0),
        spos.sum(),
        np.sum(s) if np.ndim(s) else X.shape[0],
    )
    if is_dask_array(X):
        stats = dask_compute(*stats)
    sums, totals, counts, total = (np.asarray(v, dtype=float) for v in stats)
    m_pos = sums / max(float(counts), 1e-300)
    m_neg = (totals - sums) / max(float(total) - float(counts), 1e-300)
    centred = X - m_neg - pos[:, None] * (m_pos - m_neg)
    W = (centred * s[:, None]).T @ centred if np.ndim(s) else centred.T @ centred
    if is_dask_array(W):
        (W,) = dask_compute(W)
    W = np.asarray(W, dtype=float) / float(total)
    return NOISE_SCALE**2 * 0.5 * (W + W.T)


#: ``[data, key]`` inside :func:`~rsvm_conic.estimators.path.radius_path`: the objects its fits get (the data and fit
#: parameters, the same at every point and not modified between the fits) and their :meth:`_LinearSVCBase._data_key`
PATH_DATA = contextvars.ContextVar("rsvm_conic_path_data", default=None)


class _WarmState(NamedTuple):
    """What a fit with ``warm_start=True`` keeps for the next fit on the same data."""

    key: tuple  # :meth:`_LinearSVCBase._data_key` of the fit
    formulation: object  # the problem built (validated data, weights, resolved uncertainty, CVXPY model once built)
    X: np.ndarray  # the samples of the problem (those of positive weight)
    classes: np.ndarray  # the fit's classes_
    w: np.ndarray | None  # the last non-constant solution, where the next working set starts (None: no fit yet)
    b: float | None
    gamma: np.ndarray | None = None  # the radii gamma_i of that solution
    solution: Solution | None = None  # the certified solution of the last fit
    values: tuple | None = None  # :meth:`_LinearSVCBase._warm_values` of that fit
    threshold: object = None  # the ZeroThreshold of these data (``radius_threshold``), on the radius's scale
    constant: tuple | None = None  # (r0, a, z): the dual point over C certifying w = 0 at every radius >= r0, any C
    step: float | None = None  # ||w - w_prev|| / ||w|| between the last two non-constant fits of one C (warm_mu)
    C: float | None = None  # the C of the solution w


class _LinearSVCBase(BinaryClassifierTags, LinearClassifierMixin, BaseEstimator):
    _formulation = None  # the formulation class: its BACKENDS table lists the routes

    @classmethod
    def _solvers(cls):
        return ("auto", *cls._formulation.BACKENDS)

    def _build(self, X, y, Sigma, groups, sample_radius, weights):  # pragma: no cover - abstract
        raise NotImplementedError

    #: whether ``fit`` takes Sigma / groups / sample_radius (read from a store given as a path)
    _uncertain = True

    def fit(self, X, y=None, Sigma=None, sigma_index=None, sample_radius=None, sample_weight=None, **keywords):
        """Fit the classifier on (X, y) and the uncertainty of the samples.

        Parameters
        ----------
        X : array-like of shape (L, n), Dask array, or str / path
            Training samples (Dask: chunked along rows; the fit then runs on their row blocks on the current Dask
            scheduler and nothing of size L is gathered, :mod:`rsvm_conic.solvers.ipm.row_block_ipm`).  A path is a
            chunked store (:mod:`rsvm_conic.datasets.zarr_store`) whose X, y and uncertainty are read as Dask arrays.
        y : array-like of shape (L,)
            Binary labels.
        Sigma : array-like or None, default=None
            Noise covariances, in the units of X squared: None (``0.02**2`` times the pooled within-class
            covariance of X, :func:`default_noise_covariance`), shape (n,) (one shared diagonal), (n, n)
            (one shared matrix), (1, n) or (1, n, n) (the same, shared, never sliced by cross-validation), (L, n, n)
            (one matrix per sample), or (k, n) / (k, n, n) with ``sigma_index`` (one diagonal / matrix per group).
            A scaler changes the units: after ``StandardScaler`` (``x -> D^-1 (x - mean)``, ``D = diag(scale_)``)
            the covariance is ``D^-1 Sigma D^-1`` (:func:`rsvm_conic.uncertainty.scale_covariance`).
        sigma_index : array-like of shape (L,) of int, "sample", or None, default=None
            The position of each sample's matrix along Sigma's first axis (``"sample"``: Sigma holds one diagonal
            per sample, shape (L, n)).  scikit-learn's model selection slices it with the samples; ``groups`` is not
            accepted (scikit-learn's ``GridSearchCV`` / ``cross_validate`` give ``groups`` to the splitter).
        sample_radius : array-like of shape (L,) or None, default=None
            Per-sample multipliers (>= 0) of the uncertainty, in units of the radius.
        sample_weight : array-like of shape (L,) or None, default=None
            Nonnegative weight of each sample's loss term (``C_i = C * sample_weight[i] * class weight``); an integer
            weight is the same as repeating the sample, 0 drops it.  Not for Dask samples.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        check_fit_keywords(self, keywords)
        formulation, X, classes, key, warm = self._prepare(X, y, Sigma, sigma_index, sample_radius, sample_weight)
        sol, threshold = self._solve(formulation, warm)
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
        self.solver_stats_ = solver_stats(sol)
        self._warm = None
        if key is not None:
            w, b = self.coef_.ravel(), self.intercept_[0]
            unc = formulation.current_uncertainty()
            gamma = None if unc is None else unc.gamma
            step, C = (None, self.C) if warm is None else (warm.step, self.C)
            if not np.any(w) and warm is not None and warm.w is not None and np.any(warm.w):
                w, b, gamma, C = warm.w, warm.b, warm.gamma, warm.C  # constant: the next fit starts from the last
            elif np.any(w) and warm is not None and warm.w is not None and np.any(warm.w):
                # a step along the radius predicts the next one; a step in C does not (the next is along the radius)
                step = float(np.linalg.norm(w - warm.w) / np.linalg.norm(w)) if warm.C == self.C else None
            constant = sol.values.get("constant") or (None if warm is None else warm.constant)
            self._warm = _WarmState(
                key, formulation, X, classes, w, b, gamma, sol, self._warm_values(), threshold, constant, step, C
            )
        warn_constant_classifier(self, formulation, X, self._constant_reason)
        return self

    def _fit_from(self, coef, intercept, X, y, **fit_params):
        """``fit``, its interior point started at ``(coef, intercept)`` (:meth:`_start_point`): a solution at the same
        radius on other data (a cross-validated estimator's refit starts from its folds' mean at the selected point)
        or at another C (a path's previous row of C).  The start only saves iterations: the working-set warm start
        certifies the point on the whole problem of these data, else the fit is the cold one; nothing is kept for a
        next fit beyond what ``warm_start`` keeps."""
        self._start = (np.asarray(coef, dtype=float).ravel(), float(intercept))
        try:
            return self.fit(X, y, **fit_params)
        finally:
            del self._start

    #: the estimator's parameters that a warm start changes on the formulation kept from the previous fit
    _path_params = ("C",)

    def _path_values(self) -> dict:
        return {name: getattr(self, name) for name in self._path_params}

    def _warm_values(self) -> tuple:
        """What, besides the data, a fit's solution depends on: the path parameters and the route's settings."""
        return (self._path_values(), self.solver, repr(self.solver_options))

    def _structure(self) -> tuple:
        """The parameters, besides the data, that the formulation kept by a warm start was built with."""
        return (type(self).__name__, repr(self.class_weight))

    def _data_key(self, *data) -> tuple:
        """What identifies a fit's problem up to the path parameters: the estimator's structure and a hash of the data
        and fit parameters as given (shapes, types, bytes, a data frame's column names), so that other data is never
        mistaken for the previous fit's, even the same array modified in place.  Inside
        :func:`~rsvm_conic.estimators.path.radius_path` (:data:`PATH_DATA`) the key of the path's data is computed
        once: its fits get the same objects, which nothing modifies between them."""
        memo = PATH_DATA.get()
        if memo is not None and memo[0] is not None and len(memo[0]) == len(data):
            if all(a is b for a, b in zip(memo[0], data)) and memo[1][:-1] == self._structure():
                return memo[1]
        key = self._hash_key(data)
        if memo is not None:
            memo[:] = [data, key]
        return key

    def _hash_key(self, data) -> tuple:
        digest = hashlib.blake2b(digest_size=20)
        for a in data:
            if a is None or isinstance(a, str):
                digest.update(repr(a).encode())
                continue
            digest.update(repr(list(getattr(a, "columns", ()))).encode())
            a = np.ascontiguousarray(a)
            digest.update(repr((a.shape, a.dtype.str)).encode())
            digest.update(a.data if a.dtype != object else repr(a.tolist()).encode())
        return (*self._structure(), digest.hexdigest())

    def _solve(self, formulation, warm):
        """``(solution, threshold)``: the certified solution at the current parameters and the data's threshold
        (:meth:`radius_threshold`'s ZeroThreshold, or None while unknown), kept for the next warm fit.

        With a warm start on the interior point's route: the constant classifier certified by the threshold's dual
        point where it may be optimal (:meth:`_may_be_constant`; the threshold is computed then, by one minimum-norm
        problem, if no earlier fit on these data did, so that a path solves one for all its constant points), else the
        previous fit's solution (or the point given to :meth:`_fit_from`, :meth:`_start_point`) on a reduced problem,
        or on the whole problem where the reduced one would save too little
        (:func:`~rsvm_conic.solvers.working_set.working_set_ipm`, from a non-constant point); else (or when neither
        certifies) ``formulation.solve(self.solver)``."""
        options = dict(self.solver_options or {})
        threshold = None if warm is None else warm.threshold  # of the same data: kept along a path
        if warm is not None and warm.solution is not None and warm.values == self._warm_values():
            return warm.solution, threshold  # the same problem, solved and certified by the previous fit
        if self.solver == "auto" and options and all(isinstance(v, dict) for v in options.values()):
            options = dict(options.get("ipm", {}))
        tol = options.pop("tol", EXACT_TOL)
        if self.warm_start and self._warm_route(formulation) and self._may_be_constant(formulation, warm):
            if threshold is None and (warm is None or warm.constant is None):
                threshold = _radius_threshold(formulation, self.radius)
            if threshold is None or threshold.dual is None or self.radius >= threshold.upper:
                sol = self._constant_solution(formulation, None if warm is None else warm.constant, threshold, tol)
                if sol is not None:
                    return sol, threshold
        start = self._start_point(formulation, warm)
        if start is not None and self._warm_route(formulation):
            unc = formulation.current_uncertainty()
            arrays = (None, None, False, None)
            if unc is not None:
                arrays = (unc.gamma, unc.factors, unc.diagonal, unc.group_index)
            t0 = time.perf_counter()
            try:
                w, b, cert, detail = working_set_ipm(
                    formulation.X,
                    formulation.y,
                    formulation.C_box,
                    *arrays,
                    start[0],
                    start[1],
                    lambda w, b, a: formulation.certificate("ipm", w, b, a, tol=tol),
                    gamma_prev=start[2],
                    tol_rel=tol,
                    mu=start[3],
                    **options,
                )
            except SolverError:
                pass
            else:
                cert.time, cert.iterations = time.perf_counter() - t0, detail["iterations"]
                info = {"warm_start": "working set", **{f"warm_{k}": v for k, v in detail.items() if k != "time"}}
                return Solution("ipm", cert.status, cert.primal, cert.time, {"w": w, "b": b}, info, cert), threshold
        return formulation.solve(self.solver, **(self.solver_options or {})), threshold

    def _start_point(self, formulation, warm):
        """``(w, b, gamma_prev, mu)``, the working-set warm start's point, or None (a cold fit): the previous fit's
        non-constant solution on these data (``warm``) or the point given to :meth:`_fit_from` (a solution at the same
        radius on other data or at another C), whichever has the lower objective at the current parameters."""
        points = []
        if warm is not None and warm.w is not None and np.any(warm.w):
            points.append((warm.w, warm.b, warm.gamma, warm_mu(warm.step)))
        given = getattr(self, "_start", None)
        if given is not None and given[0].shape == (formulation.X.shape[1],) and np.any(given[0]):
            if np.all(np.isfinite(given[0])) and np.isfinite(given[1]):
                points.append((given[0], given[1], None, warm_mu(None)))
        if len(points) > 1:
            points.sort(key=lambda p: formulation.objective_wb(p[0], p[1]))
        return points[0] if points else None

    def _may_be_constant(self, formulation, warm) -> bool:
        """Whether a warm fit tries the constant classifier first: the radius is at or above the data's threshold
        (when ``radius_threshold`` computed it), or the previous fit on these data was constant, or (the first fit)
        the radius is not below the threshold's lower bound from one direction (one pass over the data)."""
        radius = getattr(self, "radius", None)
        if radius is None or not radius > 0:
            return False
        if warm is not None and warm.constant is not None and radius >= warm.constant[0]:
            return True  # w = 0 at a smaller radius (for any C)
        if warm is not None and warm.threshold is not None:
            return math.isfinite(warm.threshold.upper) and radius >= warm.threshold.upper
        if warm is not None and warm.solution is not None:
            return not np.any(warm.solution["w"])
        zt = formulation.zero_threshold(max_programs=0)
        return zt is not None and radius >= zt.lower

    def _constant_solution(self, formulation, constant, threshold, tol):
        """The constant classifier ``(0, b)`` certified without an interior point by a dual point of the threshold
        problem (p = 2, one noise factor, every sample of one radius, unweighted): ``constant`` (a previous fit's
        ``(r0, a, z)``, from ``r0`` on) or, at and above ``threshold``'s upper end, the dual point of its program; else
        :func:`~rsvm_conic.solvers.zero_threshold.constant_dual_point` at this radius.  None: not constant at this
        radius, or not that case."""
        from ..solvers.zero_threshold import constant_dual_point

        unc = formulation.current_uncertainty()
        if unc is None or unc.p != 2.0 or unc.factors.shape[0] != 1 or formulation.sample_weight is not None:
            return None
        if np.ptp(unc.gamma) or not unc.gamma[0] > 0:
            return None
        t0 = time.perf_counter()
        X, y = formulation.X, formulation.y
        w = np.zeros(X.shape[1])
        b = min((1.0, -1.0), key=lambda c: formulation.objective_wb(w, c))
        C = formulation.C
        known = [constant]  # dual points over C known to hold from a radius on
        if threshold is not None and threshold.dual is not None:
            known.append((threshold.upper, *threshold.dual))
        for r0, a, z in (k for k in known if k is not None and self.radius >= k[0]):
            cert = formulation.certificate("threshold", w, b, C * a, tol=tol, multipliers=C * z[None, :])
            if cert.certified:
                cert.time, cert.iterations = time.perf_counter() - t0, 0
                return Solution("threshold", cert.status, cert.primal, cert.time, {"w": w, "b": b}, {}, cert)
        alpha, multipliers = constant_dual_point(X, y, C, unc.gamma[0], unc.factors[0], unc.diagonal)
        if alpha is None:
            return None
        cert = formulation.certificate("threshold", w, b, alpha, tol=tol, multipliers=multipliers)
        if not cert.certified:
            return None
        cert.time, cert.iterations = time.perf_counter() - t0, 0
        values = {"w": w, "b": b, "constant": (float(self.radius), alpha / C, multipliers[0] / C)}
        return Solution("threshold", cert.status, cert.primal, cert.time, values, {}, cert)

    def _warm_route(self, formulation) -> bool:
        """Whether the interior point is the route this fit runs (the one the working-set warm start uses)."""
        if self.solver not in ("auto", "ipm") or not formulation.samples.in_memory:
            return False
        if "ipm" not in formulation.backends:
            return False
        return self.solver == "ipm" or formulation.auto_routes()[0] == "ipm"

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_warm", None)  # the previous fit's data and problem: not part of the fitted model
        return state

    def _prepare(self, X, y, Sigma, sigma_index, sample_radius, sample_weight):
        """``(formulation, X, classes, key, warm)``: the problem of a fit at the current parameters (the previous fit's,
        updated, when a warm start applies: ``warm`` is then its :class:`_WarmState`), the samples it holds (those of
        positive weight) and the data's key (None without ``warm_start``)."""
        if isinstance(X, (str, os.PathLike)):
            X, y, Sigma, sigma_index, sample_radius = self._from_store(X, y, Sigma, sigma_index, sample_radius)
        check_choice(self.solver, "solver", self._solvers())
        check_positive(self.C, "C")
        key = (
            None
            if is_dask_array(X) or not self.warm_start
            else self._data_key(X, y, Sigma, sigma_index, sample_radius, sample_weight)
        )
        warm = getattr(self, "_warm", None)
        if key is not None and warm is not None and warm.key == key:  # the same data: only C / the radius changed
            warm.formulation.set_params(**self._path_values())
            return warm.formulation, warm.X, warm.classes, key, warm
        X, y_pm, classes = validate_estimator_input(self, X, y, reset=True)
        weights = sample_weights(y_pm, classes, sample_weight, self.class_weight, dask=is_dask_array(X))
        if weights is not None:
            keep = keep_weighted(weights, y_pm, classes)
            if not np.all(keep):  # a sample of weight 0 takes no part in the problem
                Sigma, sigma_index, sample_radius = drop_samples(keep, X.shape[0], Sigma, sigma_index, sample_radius)
                X, y_pm, weights = X[keep], y_pm[keep], weights[keep]
        if self._uncertain:
            Sigma, sigma_index = fit_uncertainty(Sigma, sigma_index, *X.shape)
        formulation = self._build(X, y_pm, Sigma, sigma_index, sample_radius, weights)
        return formulation, X, classes, key, None

    def _from_store(self, path, y, Sigma, sigma_index, sample_radius):
        from ..datasets.zarr_store import open_dataset

        if any(v is not None for v in (y, Sigma, sigma_index, sample_radius)):
            raise ValueError(
                "fit(path) reads y, Sigma, sigma_index (the store's groups) and sample_radius from the store; pass "
                "none of them."
            )
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
    class_weight : dict, "balanced" or None, default=None
        Weight of each class's loss terms (``C_i = C * class_weight[y_i] * sample_weight[i]``), as in scikit-learn's
        ``SVC``; ``"balanced"``: ``L / (2 * count(y_i))``.  The stochastic routes take no weights.

    warm_start : bool, default=False
        When True, a ``fit`` on the same data as the previous one (the same samples, labels and fit parameters, checked
        by a hash) after ``set_params`` of C reuses that fit: its validated problem (weights, the factors of Sigma, the
        default noise covariance, a CVXPY model once built) and, on the interior point's route, its solution, whose
        margins pick a reduced problem (:mod:`rsvm_conic.solvers.working_set`); the result is certified on the whole
        problem like any fit.  Other data, or another class_weight, fit from scratch.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    coef_ : ndarray of shape (1, n_features)
        Weights ``w`` of the linear classifier.
    intercept_ : ndarray of shape (1,)
        Bias ``b``.
    objective_ : float
        Primal objective at the returned classifier (with the sample weights).
    solver_stats_ : dict
        The route that ran (``backend``), its ``status``, the primal objective, a certified lower bound on the
        optimum (``dual``) and their relative gap (``gap_rel``).
    n_features_in_ : int
        Number of features seen in ``fit``.
    """

    _formulation = NominalProblem
    _uncertain = False

    def __init__(self, C=1.0, solver="auto", solver_options=None, class_weight=None, warm_start=False):
        self.C = C
        self.solver = solver
        self.solver_options = solver_options
        self.class_weight = class_weight
        self.warm_start = warm_start

    def _build(self, X, y, Sigma, groups, sample_radius, weights):
        if Sigma is not None or groups is not None or sample_radius is not None:
            raise ValueError(
                "NominalSVC ignores uncertainty; use RobustSVC or ChanceConstrainedSVC to pass Sigma/sigma_index."
            )
        return NominalProblem(X, y, C=self.C, check_input=False, sample_weight=weights)


class RobustSVC(_LinearSVCBase):
    """Worst-case robust linear SVM ([CJ20, eq. 4]) over ``||Sigma^{-1/2} dx||_norm <= radius``.

    The radius counts standard deviations of the noise whose covariance is ``Sigma`` (given to ``fit``): with
    ``Sigma=np.ones(n_features)`` (the identity) it is a length in the units of X.  Without ``Sigma`` the noise is
    assumed to have covariance ``0.02**2 * W`` (:func:`default_noise_covariance`; ``W`` the pooled within-class
    covariance of X): its standard deviation along any direction is 2 % of the classes' own spread, and the
    default ``radius=1.0`` keeps every sample's margin against such a perturbation.  On the vendored binary data
    sets, standardised, the defaults are as accurate as the nominal SVM (3-fold CV: bupa 0.69 against 0.70, magic
    0.81 against 0.81; banana is not linearly separable, for either): ``tests/test_defaults.py``.

    Parameters
    ----------
    C : float > 0
        Weight of the robust hinge losses.
    radius : float >= 0, default=1.0
        Radius of the uncertainty set, in noise standard deviations (times ``sample_radius`` per sample, if given
        to ``fit``).
    norm : 1, 2 or inf
        The norm of the uncertainty set.
    solver : str
        ``"auto"`` (default: the interior point for norm 2, Clarabel for 1 and inf), ``"ipm"``,
        ``"clarabel"``, ``"scs"``, ``"sgd"``, ``"prox"``.
    solver_options : dict, optional
        Options of the chosen route (for ``"auto"``: ``{route: {...}}``).
    class_weight : dict, "balanced" or None, default=None
        Weight of each class's loss terms (``C_i = C * class_weight[y_i] * sample_weight[i]``), as in scikit-learn's
        ``SVC``; ``"balanced"``: ``L / (2 * count(y_i))``.  The stochastic routes take no weights.

    warm_start : bool, default=False
        When True, a ``fit`` on the same data as the previous one (the same samples, labels and fit parameters, checked
        by a hash) after ``set_params`` of C or the radius reuses that fit: its validated problem (weights, the factors
        of Sigma, the default noise covariance, a CVXPY model once built) and, on the interior point's route, its
        solution, whose margins pick a reduced problem (:mod:`rsvm_conic.solvers.working_set`); the result is certified
        on the whole problem like any fit.  Other data, or another norm or class_weight, fit from scratch.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    coef_ : ndarray of shape (1, n_features)
        Weights ``w`` of the linear classifier.
    intercept_ : ndarray of shape (1,)
        Bias ``b``.
    objective_ : float
        Primal objective at the returned classifier (with the sample weights).
    solver_stats_ : dict
        The route that ran (``backend``), its ``status``, the primal objective, a certified lower bound on the
        optimum (``dual``) and their relative gap (``gap_rel``).
    n_features_in_ : int
        Number of features seen in ``fit``.
    """

    _formulation = RobustProblem

    _path_params = ("C", "radius")

    def __init__(
        self, C=1.0, radius=1.0, norm=2, solver="auto", solver_options=None, class_weight=None, warm_start=False
    ):
        self.C = C
        self.radius = radius
        self.norm = norm
        self.solver = solver
        self.solver_options = solver_options
        self.class_weight = class_weight
        self.warm_start = warm_start

    def _structure(self) -> tuple:
        return (*super()._structure(), repr(self.norm))

    def radius_threshold(self, X, y=None, Sigma=None, sigma_index=None, sample_radius=None, sample_weight=None):
        """The radius from which the fit is constant (``w = 0``) on these data, without solving the SVM.

        With ``warm_start=True`` the problem built here is kept for the next ``fit`` on the same data.

        Parameters
        ----------
        X, y, Sigma, sigma_index, sample_radius, sample_weight
            As in :meth:`fit`.

        Returns
        -------
        ZeroThreshold
            ``upper``: ``w = 0`` at every radius from it on (inf if not bracketed); ``lower``: ``w != 0`` at every
            radius below it.  With p = 2, one noise covariance and one radius for every sample, by one minimum-norm
            problem (:func:`~rsvm_conic.solvers.zero_threshold.constant_threshold`, whose dual point then certifies
            the constant fits of a warm start); otherwise, or when that problem does not bracket it,
            :meth:`~rsvm_conic.formulations._linear.LinearProblem.zero_threshold` (when its default working set
            leaves the threshold unbracketed, once more with every sample in reach).

        Raises
        ------
        ValueError
            When the threshold is not computed: weighted samples (``sample_weight`` or ``class_weight``) or samples
            given as a Dask array or a store.
        """
        formulation, X, classes, key, warm = self._prepare(X, y, Sigma, sigma_index, sample_radius, sample_weight)
        formulation.set_params(radius=1.0)  # the threshold is computed on the scale of a positive radius
        zt = _one_program_threshold(formulation)
        if zt is None:
            zt = formulation.zero_threshold()
        if zt is not None and not zt.bracketed and math.isfinite(zt.lower):  # a wider working set brackets it
            zt = formulation.zero_threshold(max_programs=100, band=512, max_working=X.shape[0])
        formulation.set_params(radius=self.radius)
        if zt is None:
            raise ValueError(
                "the radius threshold is computed for unweighted in-memory samples only (no sample_weight or "
                "class_weight, no Dask array); pass the radii explicitly."
            )
        if key is not None:
            self._warm = (_WarmState(key, formulation, X, classes, None, None) if warm is None else warm)._replace(
                threshold=zt
            )
        return zt

    def _build(self, X, y, Sigma, groups, sample_radius, weights):
        check_positive(self.radius, "radius", strict=False)
        unc = UncertaintySet(
            Sigma=default_noise_covariance(X, y, weights) if Sigma is None and groups is None else Sigma,
            groups=groups,
            p=check_norm(self.norm),
            radius=self.radius,
            sample_scale=sample_radius,
            sample_scale_name="sample_radius",
        )
        return RobustProblem(X, y, unc, C=self.C, check_input=False, sample_weight=weights)

    def _constant_reason(self, formulation) -> str:
        warm = getattr(self, "_warm", None)  # a warm start keeps the data's threshold: not computed again
        return constant_reason(formulation, None if warm is None else warm.threshold)


class ChanceConstrainedSVC(_LinearSVCBase):
    """Chance-constrained linear SVM: each margin constraint holds with probability >= 1 - epsilon
    under noise of covariance ``Sigma`` (Chebyshev: any law; Gaussian: normal noise).

    The guarantee is about the noise covariance given to ``fit`` as ``Sigma``.  Without ``Sigma`` the noise is
    assumed to have covariance ``0.02**2 * W`` (:func:`default_noise_covariance`; ``W`` the pooled within-class
    covariance of X: a standard deviation of 2 % of the classes' own spread along any direction), and the
    guarantee holds for noise of that size: at the defaults (``epsilon=0.1``, Chebyshev, kappa = 3) each margin
    constraint holds with probability >= 0.9 under any zero-mean noise of that covariance.  Pass your measured
    noise covariance as ``Sigma`` for a guarantee about your noise (``Sigma=np.ones(n_features)``: unit variance in
    the units of X).  On the vendored binary data sets, standardised, the defaults are as accurate as the nominal
    SVM (3-fold CV: bupa 0.69 against 0.70, magic 0.81 against 0.81; banana is not linearly separable, for
    either): ``tests/test_defaults.py``.

    Parameters
    ----------
    C : float > 0, default=1.0
        Weight of the slacks.
    epsilon : float in (0, 1), default=0.1
        Allowed probability that a margin constraint fails (Gaussian: epsilon <= 1/2).
    distribution : "chebyshev" or "gaussian", default="chebyshev"
        Noise model that sets kappa(epsilon).
    solver : str
        ``"auto"`` (default: the interior point), ``"ipm"``, ``"clarabel"``, ``"scs"``, ``"sgd"``, ``"prox"``.
    solver_options : dict, optional
        Options of the chosen route (for ``"auto"``: ``{route: {...}}``).
    class_weight : dict, "balanced" or None, default=None
        Weight of each class's loss terms (``C_i = C * class_weight[y_i] * sample_weight[i]``), as in scikit-learn's
        ``SVC``; ``"balanced"``: ``L / (2 * count(y_i))``.  The stochastic routes take no weights.

    warm_start : bool, default=False
        When True, a ``fit`` on the same data as the previous one (the same samples, labels and fit parameters, checked
        by a hash) after ``set_params`` of C or epsilon reuses that fit: its validated problem (weights, the factors of
        Sigma, the default noise covariance, a CVXPY model once built) and, on the interior point's route, its solution,
        whose margins pick a reduced problem (:mod:`rsvm_conic.solvers.working_set`); the result is certified on the
        whole problem like any fit.  Other data, or another distribution or class_weight, fit from scratch.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    coef_ : ndarray of shape (1, n_features)
        Weights ``w`` of the linear classifier.
    intercept_ : ndarray of shape (1,)
        Bias ``b``.
    objective_ : float
        Primal objective at the returned classifier (with the sample weights).
    solver_stats_ : dict
        The route that ran (``backend``), its ``status``, the primal objective, a certified lower bound on the
        optimum (``dual``) and their relative gap (``gap_rel``).
    n_features_in_ : int
        Number of features seen in ``fit``.
    """

    _formulation = ChanceConstrainedProblem

    _path_params = ("C", "epsilon")

    def __init__(
        self,
        C=1.0,
        epsilon=0.1,
        distribution="chebyshev",
        solver="auto",
        solver_options=None,
        class_weight=None,
        warm_start=False,
    ):
        self.C = C
        self.epsilon = epsilon
        self.distribution = distribution
        self.solver = solver
        self.solver_options = solver_options
        self.class_weight = class_weight
        self.warm_start = warm_start

    def _structure(self) -> tuple:
        return (*super()._structure(), repr(self.distribution))

    def _build(self, X, y, Sigma, groups, sample_radius, weights):
        check_choice(self.distribution, "distribution", DISTRIBUTIONS)
        kappa(self.epsilon, self.distribution)  # validates epsilon
        if sample_radius is not None:
            raise ValueError("ChanceConstrainedSVC takes no sample_radius; epsilon sets the factor.")
        if Sigma is None and groups is None:
            Sigma = default_noise_covariance(X, y, weights)
        return ChanceConstrainedProblem(
            X,
            y,
            Sigma,
            groups,
            C=self.C,
            epsilon=self.epsilon,
            distribution=self.distribution,
            check_input=False,
            sample_weight=weights,
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
