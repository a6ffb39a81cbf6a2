"""Solving CVXPY models with real conic solvers, with statuses you can trust.

``solve_cvxpy`` never returns a silently wrong model: an infeasible, unbounded or
failed solve raises :class:`SolverError`; an ``optimal_inaccurate`` status raises
unless ``accept_inaccurate=True`` (then it warns, naming solver and status).
Falling back from one solver to the other is the formulations' chain
(:func:`rsvm_conic.certify.contract.first_certified`, routes ``clarabel`` then ``scs``).
What a solver prints to the standard output (SCS prints its errors even with ``verbose=False``) is
captured (:func:`captured_stdout`) and quoted in the SolverError of a failed solve.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import threading
import time
import warnings
from typing import TYPE_CHECKING
from ..exceptions import SolverError, SolverWarning

if TYPE_CHECKING:
    import cvxpy as cp


#: Default options: tight tolerances so that different backends can be compared.
SOLVER_OPTIONS = {
    "CLARABEL": dict(tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9, max_iter=500),
    "SCS": dict(eps_abs=1e-8, eps_rel=1e-8, max_iters=200_000, acceleration_lookback=10),
}

_NAMES = {"clarabel": "CLARABEL", "scs": "SCS"}


def conic_solver_name(name: str) -> str:
    """CVXPY's name of a conic solver.

    Parameters
    ----------
    name : str
        ``"clarabel"`` or ``"scs"``, in any case.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        For any other name.
    """
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

    ``solver`` is ``"clarabel"`` or ``"scs"``.
    ``quiet_inaccurate`` (with ``accept_inaccurate``): return an ``optimal_inaccurate`` result
    without a warning -- for callers that certify the point themselves by a duality gap.

    Parameters
    ----------
    problem : cvxpy.Problem
        The model to solve.
    solver : {"clarabel", "scs"}
        The conic solver.
    accept_inaccurate : bool, default False
        Return an ``optimal_inaccurate`` result (with a :class:`~rsvm_conic.exceptions.SolverWarning`) rather
        than raise.
    quiet_inaccurate : bool, default False
        With ``accept_inaccurate``, no warning.
    verbose : bool, default False
        Print the solver's log.
    **options
        Passed to the solver.

    Returns
    -------
    dict
        ``{"status", "time", "solver", "iterations"}``.

    Raises
    ------
    SolverError
        When the solver fails or, without ``accept_inaccurate``, ends inaccurate.
    """
    import cvxpy as cp

    name = conic_solver_name(solver)
    opts = dict(SOLVER_OPTIONS[name])
    opts.update(options)
    t0 = time.perf_counter()
    printed: list[str] = []
    try:
        with contextlib.nullcontext() if verbose else captured_stdout(printed), warnings.catch_warnings():
            # an inaccurate status is reported below, in this package's terms (SolverError or SolverWarning)
            warnings.filterwarnings("ignore", "Solution may be inaccurate", UserWarning)
            problem.solve(solver=name, verbose=verbose, **opts)
    except (cp.error.SolverError, ValueError) as exc:  # SCS raises ValueError when it cannot set up its work
        said = " ".join(" ".join(printed).split())[:500]
        raise SolverError(f"{name} raised an error: {exc}" + (f" (solver output: {said})" if said else "")) from exc
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


_STDOUT_LOCK = threading.Lock()
_stdout_state = {"depth": 0, "saved": None, "file": None, "sys_saved": None, "sys": None}


@contextlib.contextmanager
def captured_stdout(printed: list):
    """Capture the standard output for the block: the process's file descriptor 1 (a C library's ``printf``)
    goes to a temporary file and ``sys.stdout`` (an extension's ``PySys_WriteStdout``, as SCS's) to a string;
    what was written is appended to ``printed`` (as text) at the end.

    Threads share one redirection (the first to enter sets it up, the last to leave restores both), so a
    block also collects what other threads print meanwhile.  Where fd 1 cannot be duplicated (no standard
    output), only ``sys.stdout`` is captured.

    Parameters
    ----------
    printed : list
        Receives the captured text at the end of the block.

    Yields
    ------
    None
    """
    sys.stdout.flush()
    with _STDOUT_LOCK:
        state = _stdout_state
        if state["depth"] == 0:
            try:
                saved = os.dup(1)
            except OSError:
                saved = None
            if saved is not None:
                tmp = tempfile.TemporaryFile()
                os.dup2(tmp.fileno(), 1)
                state.update(saved=saved, file=tmp)
            state.update(sys_saved=sys.stdout, sys=io.StringIO())
            sys.stdout = state["sys"]
        state["depth"] += 1
        tmp, text = state["file"], state["sys"]
        start = os.lseek(tmp.fileno(), 0, os.SEEK_END) if tmp is not None else 0
        text_start = text.tell()
    try:
        yield printed
    finally:
        with _STDOUT_LOCK:
            said = ""
            if tmp is not None:
                _flush_c_stdout()
                end = os.lseek(tmp.fileno(), 0, os.SEEK_END)
                os.lseek(tmp.fileno(), start, os.SEEK_SET)
                said = os.read(tmp.fileno(), end - start).decode(errors="replace")
            printed.append(said + text.getvalue()[text_start:])
            state["depth"] -= 1
            if state["depth"] == 0:
                sys.stdout = state["sys_saved"]
                if state["saved"] is not None:
                    os.dup2(state["saved"], 1)
                    os.close(state["saved"])
                    state["file"].close()
                state.update(saved=None, file=None, sys_saved=None, sys=None)


def _flush_c_stdout() -> None:
    """``fflush(stdout)`` of the C library (its buffer is written to fd 1 before fd 1 is restored)."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no C library to flush (e.g. Windows without msvcrt lookup)
        pass
