"""Certified regularisation paths: one estimator refitted along a grid of radii (and C) with warm starts.

:func:`radius_path` walks a decreasing sequence of radii (for each C of an increasing sequence, in a snake order
so that every point starts from its neighbour) through the estimator's own warm-start protocol::

    est.set_params(radius=r, warm_start=True)
    est.fit(X, y, **fit_params)

In the rows of C after the first, a point whose radius gave a non-constant fit at the previous C is fitted by
``est._fit_from(w, b, X, y, **fit_params)`` (estimators that have it, the linear ones) with that fit's ``(w, b)``:
it starts from that point or from its neighbour along the radius, whichever has the lower objective at its
parameters (on ``rsvm-conic bench paths``'s cross-validation folds, 878 interior-point iterations in total
against 985 from the radius neighbour alone).

so every point is a fit like any other: certified (``solver_stats_``), or a :class:`~rsvm_conic.exceptions.SolverError`.
Any estimator with a ``radius`` (or only a ``C``) and ``warm_start`` parameter follows it.  The default radii
(:func:`default_radii`) start at the radius from which the classifier is constant (``w = 0``; the estimator's
``radius_threshold``, computed from the data without solving the SVM) and fall geometrically.
``rsvm-conic bench paths`` measures a path against cold fits.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
from sklearn.base import clone

from .._validation import check_integer, check_positive
from ..exceptions import ConstantClassifierWarning
from .linear import PATH_DATA

__all__ = ["PathResult", "default_radii", "radius_path"]

#: a threshold radius below this (in noise standard deviations) is 0: w = 0 even without uncertainty
CONSTANT_BELOW = 1e-6


class PathResult(NamedTuple):
    """The fits of a path, on the grid ``Cs x radii``.

    Attributes
    ----------
    Cs : ndarray of shape (n_Cs,) or None
        The values of C, increasing (None for an estimator without a C; ``n_Cs = 1`` then).
    radii : ndarray of shape (n_radii,) or None
        The radii, decreasing (None for an estimator without a radius).
    coefs : ndarray of shape (n_Cs, n_radii, n_features)
        ``coef_`` of each fit (``n_radii = 1`` without a radius).
    intercepts : ndarray of shape (n_Cs, n_radii)
        ``intercept_`` of each fit.
    objectives : ndarray of shape (n_Cs, n_radii)
        The primal objective of each fit.
    gaps : ndarray of shape (n_Cs, n_radii)
        Each fit's certified relative gap (``solver_stats_["gap_rel"]``).
    gaps_abs : ndarray of shape (n_Cs, n_radii)
        Each fit's certified absolute gap (primal minus a feasible dual value).
    stats : list of list of dict
        Each fit's ``solver_stats_``.
    classes : ndarray of shape (2,)
        The fits' ``classes_``.
    """

    Cs: np.ndarray
    radii: np.ndarray | None
    coefs: np.ndarray
    intercepts: np.ndarray
    objectives: np.ndarray
    gaps: np.ndarray
    gaps_abs: np.ndarray
    stats: list
    classes: np.ndarray


def default_radii(estimator, X, y, *, n_radii: int = 20, ratio: float = 1e-3, **fit_params) -> np.ndarray:
    """The default radii of a path: from the radius at which the fit becomes constant down geometrically.

    Parameters
    ----------
    estimator : estimator with ``radius_threshold(X, y, **fit_params)``
        E.g. :class:`~rsvm_conic.estimators.RobustSVC`.
    X, y : array-like
        The data.
    n_radii : int, default=20
        Number of radii.
    ratio : float in (0, 1), default=1e-3
        The smallest radius over the largest.
    **fit_params
        The uncertainty (``Sigma``, ``sigma_index``, ``sample_radius``), as given to ``fit``.

    Returns
    -------
    ndarray of shape (n_radii,)
        Decreasing: ``t * ratio**(k / (n_radii - 1))`` with ``t`` the threshold's upper end (``w = 0`` at every
        radius from ``t`` on; ``w != 0`` below its lower end, which it meets to a relative 1e-5), so the first fit
        of the path is constant and the next ones are not.

    Raises
    ------
    ValueError
        When the estimator has no threshold for these data (no robust term, weighted samples) or ``w != 0`` at every
        radius: pass the radii.
    """
    n_radii = check_integer(n_radii, "n_radii", minimum=2)
    ratio = check_positive(ratio, "ratio")
    if ratio >= 1.0:
        raise ValueError(f"ratio must be in (0, 1) (the smallest radius over the largest); got {ratio}.")
    threshold = getattr(estimator, "radius_threshold", None)
    if threshold is None:
        raise ValueError(f"{type(estimator).__name__} has no radius_threshold: pass the radii.")
    zt = threshold(X, y, **fit_params)
    top = zt.upper if math.isfinite(zt.upper) else zt.lower
    if not math.isfinite(top):
        raise ValueError(
            "on these data w != 0 at every radius: there is no data-driven largest radius; pass the radii."
        )
    if top <= CONSTANT_BELOW:
        raise ValueError(
            f"on these data the classifier is constant (w = 0) at every radius (from {top:.3g} on): no radius "
            "changes it, and the nominal SVM is constant too."
        )
    return top * ratio ** (np.arange(n_radii) / (n_radii - 1))


def radius_path(estimator, X, y, radii=None, Cs=None, *, n_radii: int = 20, ratio: float = 1e-3, **fit_params):
    """Fit ``estimator`` along decreasing radii (for each C) with warm starts; every point certified.

    Parameters
    ----------
    estimator : estimator
        With a ``warm_start`` parameter and ``C``, ``radius`` or both (:class:`~rsvm_conic.estimators.RobustSVC`,
        :class:`~rsvm_conic.estimators.NominalSVC` for C only, :class:`~rsvm_conic.estimators.WassersteinSVC` for
        the radius only).
        It is cloned: the estimator passed is not fitted.
    X, y : array-like
        The data.
    radii : array-like or None, default=None
        The radii (sorted decreasing); None: :func:`default_radii` (for an estimator with a radius).
    Cs : array-like or None, default=None
        The values of C (sorted increasing); None: the estimator's C (if it has one).
    n_radii : int, default=20
        Number of default radii.
    ratio : float, default=1e-3
        The default radii's smallest over largest.
    **fit_params
        Given to every ``fit`` (the uncertainty: ``Sigma``, ``sigma_index``, ``sample_radius``, ``sample_weight``).

    Returns
    -------
    PathResult
        A constant point (``w = 0``, expected from the default grid's first radius on) gives no
        ``ConstantClassifierWarning``: its coefficients are zeros in ``coefs``.

    Raises
    ------
    ValueError
        For radii (Cs) given to an estimator without a radius (C), or negative radii / non-positive Cs.
    SolverError
        When a point does not certify (as its fit does).
    """
    token = PATH_DATA.set([None, None])  # every fit gets the same, unmodified objects: their key is computed once
    try:
        est = clone(estimator).set_params(warm_start=True)
        has_radius = "radius" in est.get_params()
        if radii is not None and not has_radius:
            raise ValueError(f"{type(estimator).__name__} has no radius parameter: pass Cs only.")
        if has_radius:
            if radii is None:
                radii = default_radii(est, X, y, n_radii=n_radii, ratio=ratio, **fit_params)
            radii = np.sort(np.array([check_positive(r, "radius", strict=False) for r in np.ravel(radii)]))[::-1]
        has_C = "C" in est.get_params()
        if Cs is not None and not has_C:
            raise ValueError(f"{type(estimator).__name__} has no C parameter: pass radii only.")
        Cs = (
            np.sort(np.array([check_positive(c, "C") for c in np.ravel([est.C] if Cs is None else Cs)]))
            if has_C
            else None
        )
        points = [None] if radii is None else list(radii)
        rows = [None] if Cs is None else list(Cs)
        grid = np.empty((len(rows), len(points)), dtype=object)
        for i, C in enumerate(rows):
            order = range(len(points)) if i % 2 == 0 else range(len(points) - 1, -1, -1)  # snake: from a neighbour
            for j in order:
                params = {k: v for k, v in (("C", C), ("radius", points[j])) if v is not None}
                with warnings.catch_warnings():  # constant points are part of a path (its first, at R*)
                    warnings.simplefilter("ignore", ConstantClassifierWarning)
                    est.set_params(**params)
                    prev = None if i == 0 else grid[i - 1, j]  # the same radius at the previous C
                    if prev is not None and np.any(prev[0]) and hasattr(est, "_fit_from"):
                        est._fit_from(prev[0], prev[1], X, y, **fit_params)
                    else:
                        est.fit(X, y, **fit_params)
                grid[i, j] = (est.coef_.ravel().copy(), float(est.intercept_[0]), dict(est.solver_stats_))
    finally:
        PATH_DATA.reset(token)
    stats = [[grid[i, j][2] for j in range(len(points))] for i in range(len(rows))]

    def field(name):
        return np.array([[s[name] for s in row] for row in stats], dtype=float)

    return PathResult(
        Cs=Cs,
        radii=radii,
        coefs=np.array([[g[0] for g in row] for row in grid]),
        intercepts=np.array([[g[1] for g in row] for row in grid]),
        objectives=field("primal"),
        gaps=field("gap_rel"),
        gaps_abs=field("gap_abs"),
        stats=stats,
        classes=est.classes_,
    )
