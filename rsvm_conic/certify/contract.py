"""The solver contract: what every solve returns besides its values.

A solver is a function of arrays (data, hyper-parameters, options) that returns its values plus a
:class:`SolveInfo`: the route that ran, its status, iterations, time and a **certified optimality
bound** -- the primal objective minus the objective of a *feasible* dual point, absolute and
relative.  ``status == "optimal"`` means exactly ``gap_rel <= tol``; any other status names why the
bound was not met (``"uncertified"``, ``"max_iter"``, ``"inaccurate"``, ...).  Solvers never import
formulations.

:func:`solver_stats` is the one record of a solve an estimator stores.  :func:`first_certified` is the one fallback
chain (called by ``Formulation.solve("auto")`` only): routes in order until one certifies, a
:class:`~rsvm_conic.exceptions.SolverWarning` naming both routes at every fallback, a
:class:`~rsvm_conic.exceptions.SolverError` naming every route tried when none does.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from ..exceptions import SolverError, SolverWarning

#: statuses a SolveInfo may carry; only "optimal" certifies the result
STATUSES = ("optimal", "uncertified", "max_iter", "inaccurate", "failed")


def relative_gap(primal: float, dual: float, floor: float = 0.0) -> float:
    """``(primal - dual) / max(|primal|, |dual|, floor)`` (0 when all are 0); ``inf`` without a dual bound.

    ``floor`` keeps the ratio meaningful when the optimum itself is ~0 (e.g. a single class, where
    P* = 0): formulations pass a fraction of a trivial objective value, e.g. 1e-9 C L for the SVMs.

    Parameters
    ----------
    primal : float
        Objective of a primal point.
    dual : float
        Objective of a feasible dual point (``-inf`` when there is none).
    floor : float, default 0.0
        Lower limit of the denominator.

    Returns
    -------
    float
        The relative gap, ``inf`` without a dual bound.
    """
    if not math.isfinite(dual):
        return math.inf
    scale = max(abs(primal), abs(dual), floor)
    return 0.0 if scale == 0.0 else (primal - dual) / scale


@dataclass
class SolveInfo:
    """Route, status and certificate of one solve (see the module docstring).

    Attributes
    ----------
    route : str
        The route that ran.
    status : str
        ``"optimal"`` exactly when ``gap_rel <= tol``, else why not (``"uncertified"``, ``"max_iter"``, ...).
    primal : float
        The primal objective of the returned point.
    dual : float, default -inf
        The objective of a feasible dual point: a lower bound on the optimum.
    tol : float, default 1e-6
        The relative gap that counts as optimal.
    iterations : int or None
        Iterations the route took, if it counts them.
    time : float
        Wall-clock seconds of the solve (NaN when not timed).
    detail : dict
        Solver-specific extras (raw status, fallbacks), merged into :meth:`as_dict`.
    floor : float, default 0.0
        Lower limit of the gap's denominator (see :func:`relative_gap`).
    """

    route: str
    status: str
    primal: float
    dual: float = -math.inf  # objective of a feasible dual point: a lower bound on the optimum
    tol: float = 1e-6
    iterations: int | None = None
    time: float = math.nan
    detail: dict[str, Any] = field(default_factory=dict)  # solver-specific extras (raw status, fallbacks)
    floor: float = 0.0  # lower limit of the gap's denominator (see relative_gap)

    @property
    def gap_abs(self) -> float:
        return self.primal - self.dual

    @property
    def gap_rel(self) -> float:
        return relative_gap(self.primal, self.dual, self.floor)

    @property
    def certified(self) -> bool:
        return self.gap_rel <= self.tol

    def __getitem__(self, key: str):
        """``info["gap_rel"]``: an entry of :meth:`as_dict`."""
        return self.as_dict()[key]

    def as_dict(self) -> dict:
        return {
            "route": self.route,
            "status": self.status,
            "primal": self.primal,
            "dual": self.dual,
            "gap_abs": self.gap_abs,
            "gap_rel": self.gap_rel,
            "tol": self.tol,
            "iterations": self.iterations,
            "time": self.time,
            **self.detail,
        }


def certify(
    route: str, primal: float, dual: float, tol: float, *, failed_status: str = "uncertified", **kwargs
) -> SolveInfo:
    """A SolveInfo whose status is ``"optimal"`` iff the relative gap meets ``tol``, else ``failed_status``.

    Parameters
    ----------
    route : str
        The route that produced ``primal`` and ``dual``.
    primal, dual : float
        Primal objective and a feasible dual value.
    tol : float
        The relative gap that counts as optimal.
    failed_status : str, default "uncertified"
        The status when the gap misses ``tol``.
    **kwargs
        Further :class:`SolveInfo` fields (``iterations``, ``time``, ``detail``, ``floor``).

    Returns
    -------
    SolveInfo
    """
    info = SolveInfo(route=route, status="optimal", primal=float(primal), dual=float(dual), tol=float(tol), **kwargs)
    if not info.certified:
        info.status = failed_status
    return info


def first_certified(
    routes: Iterable[str], attempt: Callable[[str], tuple[Any, Any]], *, what: str, hint: str = ""
) -> tuple[Any, list[tuple[str, str]]]:
    """Try ``routes`` in order; return ``(result, failures)`` for the first route that certifies.

    ``attempt(route)`` returns ``(result, certificate)``, the certificate being a :class:`SolveInfo`,
    its :meth:`~SolveInfo.as_dict`, or None for a route that gives no bound (accepted as it is); a
    route fails when it raises :class:`SolverError` or its status is not ``"optimal"``.  Every
    fallback is announced by a :class:`SolverWarning` naming the failed route, why, and the next
    route; ``failures`` lists ``(route, why)`` for the routes tried before the returned one (callers
    record them).  When no route certifies, :class:`SolverError` names every route tried and why,
    followed by ``hint``.  ``what`` (a formulation or estimator name) prefixes every message.

    Parameters
    ----------
    routes : iterable of str
        Route names, in the order to try them.
    attempt : callable
        ``attempt(route) -> (result, certificate)``.
    what : str
        The caller's name, prefixed to every message.
    hint : str, default ""
        Advice appended to the error when no route certifies.

    Returns
    -------
    result : object
        The first certified route's result.
    failures : list of (str, str)
        ``(route, why)`` for each route tried before it.

    Raises
    ------
    SolverError
        When no route certifies.
    """
    routes = list(routes)
    failures: list[tuple[str, str]] = []
    for k, route in enumerate(routes):
        try:
            result, cert = attempt(route)
        except SolverError as exc:
            why = str(exc)
        else:
            why = _uncertified(cert)
            if why is None:
                return result, failures
        failures.append((route, why))
        if k + 1 < len(routes):
            warnings.warn(
                f"{what}: route {route!r} failed ({why}); falling back to {routes[k + 1]!r}.",
                SolverWarning,
                stacklevel=3,
            )
    tried = "; ".join(f"{route}: {why}" for route, why in failures)
    raise SolverError(f"{what}: no route returned a certified solution ({tried}).{' ' + hint if hint else ''}")


def require_finite(what: str, route: str, values: Mapping) -> None:
    """Raise :class:`~rsvm_conic.exceptions.SolverError` naming ``route`` when a numeric entry of a solve's
    ``values`` (its coefficients, bias, multipliers) holds NaN or inf: such a solve failed, whatever its
    certificate says, and is never returned as a model (in a fallback chain the next route runs).
    Non-numeric entries are not checked.

    Parameters
    ----------
    what : str
        The caller's name, prefixed to the message.
    route : str
        The route that produced ``values``.
    values : mapping
        The solve's values by name.

    Raises
    ------
    SolverError
        When a numeric value holds NaN or inf.
    """
    bad = []
    for key, value in values.items():
        if isinstance(value, (numbers.Real, np.ndarray)) and not isinstance(value, bool):
            arr = np.asarray(value)
            if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
                bad.append(key)
    if bad:
        raise SolverError(
            f"{what}: route {route!r} returned non-finite values ({', '.join(bad)}); the data or parameters are "
            "too large or too small for float64 in this route (rescale X, or try another solver)."
        )


def _uncertified(cert) -> str | None:
    """Why a certificate does not certify (None when it does, or when there is none)."""
    if cert is None:
        return None
    get = cert.get if isinstance(cert, Mapping) else lambda key: getattr(cert, key)
    if get("status") == "optimal":
        return None
    return f"certified relative gap {get('gap_rel'):.2e} > {get('tol'):g}, status {get('status')!r}"


@dataclass
class Solution:
    """What a backend returns: the model's variables plus how it got them.

    Attributes
    ----------
    backend : str
        The route that produced the values.
    status : str
        The route's status (``"optimal"`` for a certified solve).
    objective : float
        The primal objective at the values.
    time : float
        Wall-clock seconds of the solve.
    values : dict
        The model's variables by name (``sol["w"]`` reads one).
    info : dict
        Route-specific extras (multipliers, iteration logs, ``fallback_from``).
    certificate : SolveInfo or None
        Route, status and certified gap (None: the route gives no bound).
    """

    backend: str
    status: str
    objective: float
    time: float
    values: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    certificate: SolveInfo | None = None  # route, status and certified gap (None: route gives no bound)

    def __getitem__(self, key):
        return self.values[key]


#: entries of ``Solution.info`` that are not part of a solve's record (arrays, per-iteration logs)
_NOT_RECORDED = ("alpha", "certificate", "cone_multipliers", "gap_history", "history", "log")


def solver_stats(sol: "Solution | SolveInfo", objective_scale: float = 1.0) -> dict:
    """The record of a solve an estimator stores as ``solver_stats_``: the one place it is assembled.

    Parameters
    ----------
    sol : Solution or SolveInfo
        A formulation's solution (its certificate, route, time and the scalar entries of its ``info``, e.g.
        ``fallback_from``, the routes tried before and why), or a bare certificate.
    objective_scale : float, default 1.0
        Factor on ``primal``, ``dual`` and ``gap_abs`` when the estimator reports another scaling of the
        objective than its formulation (the relative gap does not change).

    Returns
    -------
    dict
        ``backend``, ``route``, ``status``, ``primal``, ``dual``, ``gap_abs``, ``gap_rel``, ``tol``,
        ``iterations``, ``time``, the certificate's detail and the solution's other scalar information.
    """
    if isinstance(sol, SolveInfo):
        sol = Solution(backend=sol.route, status=sol.status, objective=sol.primal, time=sol.time, certificate=sol)
    stats = {"backend": sol.backend, "route": sol.backend, "status": sol.status, "time": sol.time}
    if sol.certificate is not None:
        stats.update(sol.certificate.as_dict())
        if objective_scale != 1.0:
            for key in ("primal", "dual", "gap_abs"):
                stats[key] = objective_scale * stats[key]
    for key, value in sol.info.items():
        if key not in stats and key not in _NOT_RECORDED and not isinstance(value, np.ndarray):
            stats[key] = value
    return stats
