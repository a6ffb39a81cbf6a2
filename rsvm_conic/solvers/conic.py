"""Solving CVXPY models with real conic solvers, with statuses you can trust.

``solve_cvxpy`` never returns a silently wrong model: an infeasible, unbounded or
failed solve raises :class:`SolverError`; an ``optimal_inaccurate`` status raises
unless ``accept_inaccurate=True`` (then it warns, naming solver and status).
``solver="auto"`` tries Clarabel and falls back to SCS *visibly* (a warning
naming the solver that failed and why).
"""

from __future__ import annotations

import time
import warnings

import cvxpy as cp

#: Default options: tight tolerances so that different backends can be compared.
SOLVER_OPTIONS = {
    "CLARABEL": dict(tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9, max_iter=500),
    "SCS": dict(eps_abs=1e-8, eps_rel=1e-8, max_iters=200_000, acceleration_lookback=10),
}

_NAMES = {"clarabel": "CLARABEL", "scs": "SCS"}


class SolverError(RuntimeError):
    """A solver failed or returned a status that does not certify optimality."""


class SolverWarning(UserWarning):
    """A fallback happened or an inaccurate status was accepted on request."""


def conic_solver_name(name: str) -> str:
    try:
        return _NAMES[name.lower()]
    except KeyError:
        raise ValueError(f"unknown conic solver {name!r}; choose 'clarabel' or 'scs'.") from None


def solve_cvxpy(
    problem: cp.Problem,
    solver: str = "clarabel",
    *,
    accept_inaccurate: bool = False,
    quiet_inaccurate: bool = False,
    verbose: bool = False,
    **options,
) -> dict:
    """Solve ``problem`` and return ``{"status", "time", "solver", "iterations"}``.

    ``solver`` is ``"clarabel"``, ``"scs"`` or ``"auto"`` (Clarabel, then SCS on failure).
    ``quiet_inaccurate`` (with ``accept_inaccurate``): return an ``optimal_inaccurate`` result
    without a warning -- for callers that certify the point themselves by a duality gap.
    """
    if solver == "auto":
        try:
            return solve_cvxpy(
                problem,
                "clarabel",
                accept_inaccurate=accept_inaccurate,
                quiet_inaccurate=quiet_inaccurate,
                verbose=verbose,
                **options,
            )
        except SolverError as exc:
            warnings.warn(f"Clarabel failed ({exc}); falling back to SCS.", SolverWarning, stacklevel=2)
            return solve_cvxpy(
                problem,
                "scs",
                accept_inaccurate=accept_inaccurate,
                quiet_inaccurate=quiet_inaccurate,
                verbose=verbose,
                **options,
            )
    name = conic_solver_name(solver)
    opts = dict(SOLVER_OPTIONS[name])
    opts.update(options)
    t0 = time.perf_counter()
    try:
        problem.solve(solver=name, verbose=verbose, **opts)
    except cp.error.SolverError as exc:
        raise SolverError(f"{name} raised an error: {exc}") from exc
    elapsed = time.perf_counter() - t0
    status = problem.status
    if status == cp.OPTIMAL:
        pass
    elif status == cp.OPTIMAL_INACCURATE and accept_inaccurate and quiet_inaccurate:
        pass
    elif status == cp.OPTIMAL_INACCURATE and accept_inaccurate:
        warnings.warn(
            f"{name} returned status {status!r}; the solution was accepted on request "
            "(accept_inaccurate=True) but is not certified optimal.",
            SolverWarning,
            stacklevel=2,
        )
    else:
        hint = {
            cp.INFEASIBLE: "the solver could not find a feasible point; the SVM models of this package are "
            "always feasible, so this is a numerical failure (typically a very large C or badly "
            "scaled features: standardise X, lower C, or use the interior point solver='ipm')",
            cp.UNBOUNDED: "the solver reports an unbounded objective; the SVM models of this package are "
            "bounded below, so this is a numerical failure (typically a very large C or badly "
            "scaled features: standardise X, lower C, or use solver='ipm')",
            cp.OPTIMAL_INACCURATE: "the solver stopped before certifying optimality; try the other solver "
            "or rescale the data",
            cp.USER_LIMIT: "the solver hit its iteration or time limit; raise max_iter or rescale the data",
        }.get(status, "the solver did not report an optimal solution")
        raise SolverError(f"{name} returned status {status!r}: {hint}.")
    stats = problem.solver_stats
    return {
        "status": status,
        "time": elapsed,
        "solve_time": getattr(stats, "solve_time", None),
        "solver": name,
        "iterations": getattr(stats, "num_iters", None),
    }
