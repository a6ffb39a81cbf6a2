"""The convex-concave procedure (CCP) driver: the iteration over convex steps and starts, with the exact acceptance
test of every step, for a difference-of-convex objective ``f`` (the hyperbolic machine of [ElD19, chapter 3]).

The driver sees points only through two callables, never a formulation:

* ``objective(point) -> float``: ``f`` at a point (computed exactly, in numpy);
* ``step(point) -> (candidate, majoriser, inaccurate, failures)``: one convex step from ``point``: the minimiser of
  the majoriser ``M(. | point)`` (or None: when every solver failed, with their failure messages; with no failure,
  when the step certified that no point lowers the majoriser by more than the tolerance, which ends the run as
  ``stationary``), ``M(candidate | point)``, whether the solver reported an inaccurate status, and the failure
  messages of the attempts made.

Monotone decrease: ``f(candidate) <= M(candidate | point) <= M(point | point) = f(point)`` in exact arithmetic.
The step's solver is inexact, so a candidate that increases ``f`` by more than ``1e-9 (1 + |f|)`` is rejected and the
run stops there (``fixed_point``); every accepted step is a decrease, and an inaccurate solve yields only a candidate,
subject to the same test.  A step that lowers ``f`` by at most ``tol (1 + |f|)`` ends the run (``converged``).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..exceptions import SolverError, SolverWarning
from .conic import solve_cvxpy

__all__ = ["CLARABEL_CCP", "best_run", "ccp_runs", "socp_ccp", "solve_step"]

#: Clarabel's settings for the CCP majorisers.  The CCP checks every step in numpy, so 1e-7 solves suffice
#: and are robust.  QDLDL, not the multithreaded faer factorisation that Clarabel 0.11 picks by default:
#: measured on one Letter majoriser (300 points, 26 classes, 20 features: 7800 cones of dimension 21),
#: 17 iterations took 73 s with faer (its 2 threads), 12 s with faer on one thread, 5 s with QDLDL.
CLARABEL_CCP = {"tol_gap_abs": 1e-7, "tol_gap_rel": 1e-7, "tol_feas": 1e-7, "direct_solve_method": "qdldl"}


def solve_step(problem, solver, options):
    """One CCP majoriser: a CVXPY problem solved by ``solver`` with ``options``, then (on SolverError) at the solver's
    own default tolerances, then by SCS.

    Parameters
    ----------
    problem : cvxpy.Problem
        The majoriser, its parameters set.
    solver : str
        The CVXPY solver tried first.
    options : dict
        Its options.

    Returns
    -------
    stats : dict or None
        :func:`~rsvm_conic.solvers.conic.solve_cvxpy`'s statistics, or None when every attempt failed.
    failures : list of str
        The failure message of each failed attempt.

    An inaccurate status is not an error here: the caller keeps the candidate only if the true objective decreases,
    so its warning is recorded and dropped.
    """
    attempts = [(solver, options)]
    loose = {k: v for k, v in options.items() if not k.startswith("tol_")}
    if loose != options:
        attempts.append((solver, loose))
    if solver != "scs":
        attempts.append(("scs", {}))
    failures = []
    for name, opts in attempts:
        try:
            with warnings.catch_warnings(record=True):
                warnings.simplefilter("always")
                return solve_cvxpy(problem, name, accept_inaccurate=True, **opts), failures
        except SolverError as exc:
            failures.append(
                f"{name}{' (solver default tolerances)' if opts is loose and name == solver else ''}: {exc}"
            )
    return None, failures


def ccp_runs(starts, objective, step, *, max_iter: int, tol: float) -> list[dict]:
    """The CCP from each start.

    Parameters
    ----------
    starts : list
        The starting points (any objects ``objective`` and ``step`` take, e.g. tuples of arrays).
    objective : callable
        ``objective(point) -> float``, the function minimised.
    step : callable
        ``step(point) -> (candidate or None, M(candidate | point), inaccurate, failures)`` (module docstring).
    max_iter : int
        Steps per start at most.
    tol : float
        A step lowering the objective by at most ``tol (1 + |f|)`` ends the run.

    Returns
    -------
    list of dict
        One per start: ``point`` (the last accepted point), ``f``, ``history`` (f per accepted point), ``stop``
        (``converged``, ``fixed_point``, ``stationary``, ``max_iter`` or ``solver_failed: ...``), ``inaccurate``
        (inaccurate solves), ``retries`` (failure messages), ``majorizer_drops`` (``f(point) - M(candidate | point)``
        per step, non-negative up to the solver's accuracy).
    """
    runs = []
    for point in starts:
        fval = objective(point)
        hist, stop, n_inaccurate, retries, m_drop = [fval], "max_iter", 0, [], []
        for _ in range(max_iter):
            candidate, majoriser, inaccurate, failures = step(point)
            retries.extend(failures)
            if candidate is None:  # no failure: the step certified that no step can lower f by more than tol
                stop = "solver_failed: " + " | ".join(failures) if failures else "stationary"
                break
            if inaccurate:
                n_inaccurate += 1  # still only a candidate: accepted below iff f decreases
            m_drop.append(fval - majoriser)  # >= 0 up to the solver's accuracy
            f_new = objective(candidate)
            if f_new > fval + 1e-9 * (1.0 + abs(fval)):
                # the majoriser's minimiser cannot increase f in exact arithmetic: the current
                # point is a fixed point of the CCP to the step solver's accuracy
                stop = "fixed_point"
                break
            decrease = fval - f_new
            point, fval = candidate, f_new
            hist.append(fval)
            if decrease <= tol * (1.0 + abs(fval)):
                stop = "converged"
                break
        runs.append(
            dict(
                point=point,
                f=fval,
                history=hist,
                stop=stop,
                inaccurate=n_inaccurate,
                retries=retries,
                majorizer_drops=m_drop,
            )
        )
    return runs


def best_run(runs, label) -> int:
    """The index of the best start (least final objective) among the runs whose steps did not all fail.

    Parameters
    ----------
    runs : list of dict
        :func:`ccp_runs`' runs.
    label : str
        The procedure's name in messages.

    Returns
    -------
    int
        The index of the best run.

    Raises
    ------
    SolverError
        When every run ended with a failed step (a failed solve is never returned as a trained model).
    """
    ok = [i for i, r in enumerate(runs) if not r["stop"].startswith("solver_failed")]
    if not ok:
        raise SolverError(
            f"{label}: the SOCP step failed in every start, at every route tried: "
            + "; ".join(r["stop"][len("solver_failed: ") :] for r in runs)
            + ". Rescale the features (e.g. a smaller kernel width) or lower lam."
        )
    if len(ok) < len(runs):
        warnings.warn(
            f"{label}: {len(runs) - len(ok)} of {len(runs)} starts ended with a failed SOCP "
            "step (every route tried) and were discarded; the best of the others is returned.",
            SolverWarning,
            stacklevel=4,
        )
    return min(ok, key=lambda i: runs[i]["f"])


def socp_ccp(build, anchors, starts, objective, tangent, majoriser, *, solver, options, max_iter, tol) -> list[dict]:
    """The CCP with each step a CVXPY model (:func:`solve_step`), the centres in the hulls of ``anchors``.

    Parameters
    ----------
    build : callable
        ``build() -> dict``: the step's model, called at the first step: ``problem`` (a cvxpy.Problem), its
        variables ``mus`` (simplex weights per class) and ``R``, its parameters ``qs`` (per class) and ``e``.
    anchors : list of ndarray
        Per class, the points whose hull holds the centre.
    starts : list of tuple
        Points ``(mus, R)``.
    objective : callable
        ``objective((mus, R, O)) -> f``.
    tangent : callable
        ``tangent(O, R) -> (Q, e)``: the tangent's gradient in the centres (C, D) and in ``R`` (C,).
    majoriser : callable
        ``majoriser(O, R, O_t, R_t) -> M(O, R | O_t, R_t)``.
    solver : str
        The CVXPY solver tried first.
    options : dict
        Its options.
    max_iter : int
        Steps per start at most.
    tol : float
        :func:`ccp_runs`' tolerance.

    Returns
    -------
    list of dict
        :func:`ccp_runs`' runs, each with its final ``mus``, ``R``, ``O``.
    """
    built = {}

    def O_of(mus):
        return np.stack([mu @ A for mu, A in zip(mus, anchors)])

    def step(point):
        """One majoriser from ``(mus, R, O)``: its minimiser, its value there, inaccurate, failures."""
        import cvxpy as cp

        _, R, O = point
        Q, e = tangent(O, R)  # d/dmu_k of the tangent = A_k Q_k
        if "P" not in built:
            built["P"] = build()
        P = built["P"]
        for k, A in enumerate(anchors):
            P["qs"][k].value = A @ Q[k]
        P["e"].value = e
        stats, failures = solve_step(P["problem"], solver, options)
        if stats is None:
            return None, None, False, failures
        mus_new = []
        for mu in P["mus"]:  # renormalise round-off on each simplex
            v = np.clip(np.asarray(mu.value), 0.0, None)
            mus_new.append(v / v.sum())
        R_new = np.clip(np.asarray(P["R"].value), 0.0, None)
        O_new = O_of(mus_new)
        # the majoriser at its minimiser (its value at the current point is f there)
        return (mus_new, R_new, O_new), majoriser(O_new, R_new, O, R), stats["status"] != cp.OPTIMAL, failures

    runs = ccp_runs([(mus, R, O_of(mus)) for mus, R in starts], objective, step, max_iter=max_iter, tol=tol)
    for run in runs:
        run["mus"], run["R"], run["O"] = run.pop("point")
    return runs
