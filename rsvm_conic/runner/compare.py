"""Solve one problem instance with several backends and check that they agree."""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..formulations.base import Formulation, Solution


@dataclass
class ProblemInstance:
    """A named problem: a built formulation plus held-out data to score it on.

    Attributes
    ----------
    name, description : str
        The instance's name and one line on it.
    build : callable
        ``build() -> (formulation, test, y_test)``, called lazily so that listing instances costs nothing.
        ``test`` is whatever ``formulation.decision_function`` accepts (X for linear models, kernel rows for
        kernel models) and ``y_test`` its labels in {-1, +1}.
    backends : tuple of str, optional
        The routes compared (default: every route of the formulation).
    backend_options : dict
        Route name -> keyword arguments of its solve.
    rtol : float, default 1e-3
        Agreement required between backends (relative objective gap, :func:`distance_to_best`).
    value_atol : dict
        Solution value key -> tolerance on ``max |values[key] - reference's|`` (e.g. a learned parameter).
    """

    name: str
    description: str
    build: Callable[[], tuple[Formulation, Any, np.ndarray]]
    backends: tuple[str, ...] | None = None
    backend_options: dict[str, dict] = field(default_factory=dict)
    rtol: float = 1e-3  # agreement required between backends (relative objective gap)
    #: values compared too: key -> tolerance on ``max |values[key] - reference's|`` (e.g. a learned parameter)
    value_atol: dict[str, float] = field(default_factory=dict)


@dataclass
class BackendReport:
    """One backend's row of :func:`compare_backends`.

    Attributes
    ----------
    backend, status : str
        The route and its status (``"error"`` when it raised).
    objective : float
        The route's primal objective.
    gap : float
        Distance to the best objective among the backends compared (:func:`distance_to_best`): agreement between
        backends, not a certificate.
    accuracy, agreement : float
        Test accuracy, and the fraction of test predictions equal to the reference backend's.
    time : float
        Wall seconds of the solve.
    error : str or None
        The exception's message, for a route that raised.
    value_diff : dict
        Compared key -> ``max |values[key] - reference's|``.
    certified_gap : float
        The backend's own optimality certificate, primal minus a feasible dual value, relative
        (``SolveInfo.gap_rel``; NaN when the route gives no dual bound).
    """

    backend: str
    status: str
    objective: float
    gap: float
    accuracy: float
    agreement: float
    time: float
    error: str | None = None
    value_diff: dict[str, float] = field(default_factory=dict)  # max |values[key] - reference's| per compared key
    certified_gap: float = math.nan


def distance_to_best(value: float, best: float) -> float:
    """Distance of an objective value from the best one, relative to ``max(1, |best|)``.

    Agreement between backends, not a certificate (the certified gap of one solve is
    :func:`rsvm_conic.certify.contract.relative_gap`).

    Parameters
    ----------
    value, best : float
        The objective compared and the best among the backends.

    Returns
    -------
    float
        ``|value - best| / max(1, |best|)``.
    """
    return abs(value - best) / max(1.0, abs(best))


def compare_backends(
    formulation: Formulation,
    test,
    y_test,
    backends=None,
    backend_options=None,
    reference: str | None = None,
    value_keys=(),
) -> tuple[list[BackendReport], dict[str, Solution]]:
    """Solve with every backend, then report objective, gap to the best, accuracy and agreement.

    A backend that raises is reported with its error (status ``"error"``); it does not stop the others.

    Parameters
    ----------
    formulation : Formulation
        The built problem.
    test, y_test
        Held-out data for ``formulation.decision_function`` and its labels in {-1, +1}.
    backends : sequence of str, optional
        The routes (default: every route of the formulation).
    backend_options : dict, optional
        Route name -> keyword arguments of its solve.
    reference : str, optional
        The route the others' predictions and values are compared with (default: the first that succeeded).
    value_keys : sequence of str, default ()
        Keys of ``solution.values`` whose largest absolute difference from the reference's is reported.

    Returns
    -------
    reports : list of BackendReport
        One per backend, in order.
    solutions : dict
        Route name -> its :class:`~rsvm_conic.certify.contract.Solution`, for the routes that succeeded.
    """
    backends = tuple(backends or formulation.backends)
    backend_options = backend_options or {}
    solutions: dict[str, Solution] = {}
    errors: dict[str, tuple[str, float]] = {}
    for backend in backends:
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                sol = formulation.solve(backend, **backend_options.get(backend, {}))
            if caught:
                sol.info.setdefault("warnings", [str(w.message) for w in caught])
            solutions[backend] = sol
        except Exception as exc:  # reported, not swallowed: shows up as status "error"
            errors[backend] = (f"{type(exc).__name__}: {exc}", time.perf_counter() - t0)
    if not solutions:
        raise RuntimeError("every backend failed: " + "; ".join(f"{b}: {e}" for b, (e, _) in errors.items()))
    best = min(s.objective for s in solutions.values())
    ref_name = reference if reference in solutions else next(iter(solutions))
    y_test = np.asarray(y_test)
    ref_pred = formulation.predict(solutions[ref_name], test)
    reports = []
    for backend in backends:
        if backend in solutions:
            sol = solutions[backend]
            pred = formulation.predict(sol, test)
            reports.append(
                BackendReport(
                    backend,
                    sol.status,
                    sol.objective,
                    distance_to_best(sol.objective, best),
                    float(np.mean(pred == y_test)),
                    float(np.mean(pred == ref_pred)),
                    sol.time,
                    value_diff={
                        key: float(
                            np.max(np.abs(np.asarray(sol.values[key]) - np.asarray(solutions[ref_name].values[key])))
                        )
                        for key in value_keys
                    },
                    certified_gap=math.nan if sol.certificate is None else float(sol.certificate.gap_rel),
                )
            )
        else:
            err, elapsed = errors[backend]
            reports.append(BackendReport(backend, "error", math.nan, math.nan, math.nan, math.nan, elapsed, err))
    return reports, solutions


#: the legend printed under :func:`format_reports`' table: what each column holds
REPORT_LEGEND = (
    "certified gap = (primal - dual bound) / max(|primal|, |dual bound|), the backend's own certificate of "
    "optimality (status optimal iff it meets the backend's tolerance; n/a: the route gives no dual bound)",
    "above best = (objective - lowest objective among the backends) / max(1, |lowest|): agreement between the "
    "backends, not a certificate",
    "test acc = accuracy on the held-out data; agree = fraction of held-out predictions equal to the first "
    "backend that solved",
)


def _cell(value: float, fmt: str) -> str:
    return "n/a" if value is None or not math.isfinite(value) else format(value, fmt)


def format_reports(reports: list[BackendReport], title: str = "") -> str:
    """A Markdown table of :func:`compare_backends`' reports.

    One row per backend, with a legend saying what each column holds; errors and compared values follow the table.

    Parameters
    ----------
    reports : list of BackendReport
        The rows.
    title : str, default ""
        A heading printed above the table.

    Returns
    -------
    str
        The Markdown text.
    """
    lines = [title, ""] if title else []
    lines += [
        "| backend | status | objective | certified gap | above best | test acc | agree | time [s] |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    notes = []
    for r in reports:
        lines.append(
            f"| {r.backend} | {r.status} | {_cell(r.objective, '.10g')} | {_cell(r.certified_gap, '.2e')} | "
            f"{_cell(r.gap, '.2e')} | {_cell(r.accuracy, '.4f')} | {_cell(r.agreement, '.4f')} | {r.time:.3f} |"
        )
        if r.error:
            notes.append(f"{r.backend} error: {r.error}")
        notes += [f"{r.backend}: max |{key} - reference's {key}| = {diff:.3g}" for key, diff in r.value_diff.items()]
    lines += ["", *REPORT_LEGEND]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines)


def check_instance(instance: ProblemInstance, backends=None) -> tuple[list[BackendReport], bool]:
    """Build and solve an instance with all its backends and check their agreement.

    Parameters
    ----------
    instance : ProblemInstance
        The instance.
    backends : sequence of str, optional
        The routes (default: the instance's).

    Returns
    -------
    reports : list of BackendReport
        One per backend.
    ok : bool
        True if every gap is within the instance's ``rtol`` and every compared value within its ``value_atol``.
    """
    formulation, test, y_test = instance.build()
    reports, _ = compare_backends(
        formulation,
        test,
        y_test,
        backends or instance.backends,
        instance.backend_options,
        value_keys=tuple(instance.value_atol),
    )
    ok = all(r.error is None and r.gap <= instance.rtol for r in reports) and all(
        r.value_diff.get(key, 0.0) <= tol for r in reports for key, tol in instance.value_atol.items()
    )
    return reports, ok
