"""The convex-concave procedure (CCP) driver: the iteration over convex steps and starts, with the exact acceptance
test of every step, for a difference-of-convex objective ``f`` (the hyperbolic machine of [ElD19, chapter 3]).

The driver sees points only through two callables, never a formulation:

* ``objective(point) -> float``: ``f`` at a point (computed exactly, in numpy);
* ``step(point) -> (candidate, majoriser, gap, inaccurate, failures)``: one convex step from ``point``: the
  minimiser of the majoriser ``M(. | point)`` (or None: when every solver failed, with their failure messages; with
  no failure, when the step certified that no point lowers the majoriser by more than the tolerance, which ends the
  run as ``stationary``), ``M(candidate | point)``, the step's certified gap ``M(candidate | point) - min M(. |
  point)`` in units of ``f`` (an upper bound; 0 where the solver certifies only its own accuracy), whether the solver
  reported an inaccurate status, and the failure messages of the attempts made.

Monotone decrease: ``f(candidate) <= M(candidate | point) <= M(point | point) = f(point)`` in exact arithmetic.
The step's solver is inexact, so a candidate that increases ``f`` by more than ``1e-9 (1 + |f|)`` is rejected and the
run stops there (``fixed_point``); every accepted step is a decrease, and an inaccurate solve yields only a candidate,
subject to the same test.  A step that lowers ``f`` by at most ``tol (1 + |f|)`` and whose majoriser drop plus
certified gap, ``f(x) - min M(. | x)`` bounded above, is also at most that ends the run (``converged``): the current
point then minimises its own majoriser to within that amount, i.e. it is a critical point of the DC program (``0`` in
the difference of the subdifferentials) to that accuracy.  (For an exact step the second test follows from the first,
since ``f(x) - f(y) >= f(x) - M(y | x)``; an inexact step's small decrease alone proves nothing.)

Boosted steps (``extrapolate`` and ``boost > 0``; the boosted DCA of [AFV18]): after an accepted CCP step from ``x``
to ``y``, a line search along ``d = y - x`` tries ``z = y + s d`` (brought back into the feasible set by
``extrapolate``) for ``s = s0, s0 / 2, ...`` down to ``MIN_BOOST`` and keeps the first ``z`` that passes Armijo's test
``f(z) <= f(y) - alpha ||z - y||^2``; ``s0`` starts at ``boost``, doubles (up to ``MAX_BOOST``) after a first trial
accepted and otherwise restarts from the last step accepted (or ``boost``).  Every accepted point still lowers ``f``.
[AFV18]'s guarantees (``d`` a descent direction of ``f`` at ``y``, so the search succeeds; every limit point
critical) assume ``g`` and ``h`` of ``f = g - h`` strongly convex and differentiable, unconstrained; the nonsmooth
version [AV20] lets ``h`` be nonsmooth but keeps ``g`` differentiable, and the linearly constrained one [ACV22] keeps
``g`` differentiable too.  Here ``g = sum_i s_i G_i + gamma lam ||R||^2`` is a sum of maxima of distances (not
differentiable where a maximum ties or a centre meets a point), so ``d`` need not be a descent direction at ``y``
(projecting ``y + s d`` back onto the simplices is not covered either): the search may then find nothing and the step
is the plain CCP step.  What holds
without those conditions: ``f`` decreases monotonically and is bounded below (by 0), so it converges; the Armijo test
makes ``sum_k ||z_k - y_k||^2`` finite; and the stopping test above is the CCP's own.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..exceptions import SolverError, SolverWarning
from .conic import solve_cvxpy

__all__ = [
    "CLARABEL_CCP",
    "best_run",
    "boosted_step",
    "ccp_runs",
    "ccp_starts",
    "kmeans_anchors",
    "screened_runs",
    "socp_ccp",
    "solve_step",
    "tangent_coefficients",
]

#: Clarabel's settings for the CCP majorisers.  The CCP checks every step in numpy, so 1e-7 solves suffice
#: and are robust.  QDLDL, not the multithreaded faer factorisation that Clarabel 0.11 picks by default:
#: measured on one Letter majoriser (300 points, 26 classes, 20 features: 7800 cones of dimension 21),
#: 17 iterations took 73 s with faer (its 2 threads), 12 s with faer on one thread, 5 s with QDLDL.
#: the boosted line search ([AFV18]): the first extrapolation ``s`` tried after a CCP step, the largest the
#: self-adaptive rule reaches, the smallest tried, and Armijo's constant
BOOST = 8.0
MAX_BOOST = 64.0
MIN_BOOST = 0.1
ARMIJO = 1e-4

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


def boosted_step(point, candidate, f_candidate, objective, extrapolate, s0, alpha):
    """The boosted DCA's line search ([AFV18]): from the CCP step's point ``y = candidate`` along ``d = y - x``
    (``x = point``), the first of ``s = s0, s0 / 2, ...`` (at least ``MIN_BOOST``) whose point ``z`` (``y + s d``
    brought back into the feasible set by ``extrapolate``) passes Armijo's test ``f(z) <= f(y) - alpha ||z - y||^2``.

    Parameters
    ----------
    point, candidate : object
        ``x`` and ``y`` (any points ``extrapolate`` takes).
    f_candidate : float
        ``f(y)``.
    objective : callable
        ``objective(point) -> float``.
    extrapolate : callable
        ``extrapolate(point, candidate, s) -> (z, ||z - y||^2)``: the feasible point for ``y + s d``.
    s0 : float
        The first step tried.
    alpha : float
        Armijo's constant.

    Returns
    -------
    tuple or None
        ``(z, f(z), s)`` for the step accepted, or None when no step passes the test.
    """
    s = s0
    while s >= MIN_BOOST:
        new, moved2 = extrapolate(point, candidate, s)
        f_new = objective(new)
        if moved2 > 0 and f_new <= f_candidate - alpha * moved2:
            return new, f_new, s
        s *= 0.5
    return None


def ccp_runs(
    starts, objective, step, *, max_iter: int, tol: float, extrapolate=None, boost: float = 0.0, alpha: float = ARMIJO
) -> list[dict]:
    """The CCP from each start.

    Parameters
    ----------
    starts : list
        The starting points (any objects ``objective`` and ``step`` take, e.g. tuples of arrays).
    objective : callable
        ``objective(point) -> float``, the function minimised.
    step : callable
        ``step(point) -> (candidate or None, M(candidate | point), gap, inaccurate, failures)`` (module docstring).
    max_iter : int
        Steps per start at most.
    tol : float
        A step lowering the objective by at most ``tol (1 + |f|)``, its majoriser drop plus certified gap at most
        that too, ends the run.
    extrapolate : callable or None, default=None
        ``extrapolate(x, y, s) -> (z, ||z - y||^2)``: the boosted step's point (module docstring; None: no boosting).
    boost : float, default=0.0
        The boosted line search's first step ``s`` (0: none).
    alpha : float, default=ARMIJO
        Armijo's constant of the boosted line search.

    Returns
    -------
    list of dict
        One per start: ``point`` (the last accepted point), ``f``, ``history`` (f per accepted point), ``stop``
        (``converged``, ``fixed_point``, ``stationary``, ``max_iter`` or ``solver_failed: ...``), ``inaccurate``
        (inaccurate solves), ``retries`` (failure messages), ``majorizer_drops`` (``f(point) - M(candidate | point)``
        per step, non-negative up to the solver's accuracy), ``boosts`` (the boosted step ``s`` per accepted step, 0
        where the line search found none).
    """
    runs = []
    for point in starts:
        fval = objective(point)
        hist, stop, n_inaccurate, retries, m_drop, boosts = [fval], "max_iter", 0, [], [], []
        s0 = boost
        for _ in range(max_iter):
            candidate, majoriser, gap, inaccurate, failures = step(point)
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
            s_used = 0.0
            if extrapolate is not None and boost > 0 and f_new < fval:
                found = boosted_step(point, candidate, f_new, objective, extrapolate, s0, alpha)
                if found is not None:
                    candidate, f_new, s_used = found
                # self-adaptive: a first trial accepted doubles the next one, else the next starts at the last step
                s0 = min(2.0 * s0, MAX_BOOST) if s_used == s0 else max(s_used, boost)
            boosts.append(s_used)
            decrease = fval - f_new
            point, fval = candidate, f_new
            hist.append(fval)
            if decrease <= tol * (1.0 + abs(fval)) and m_drop[-1] + gap <= tol * (1.0 + abs(fval)):
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
                boosts=boosts,
            )
        )
    return runs


def screened_runs(starts, run, *, tol: float, screen_tol: float, max_iter: int) -> list[dict]:
    """The CCP from every start to the looser tolerance ``screen_tol`` first, then on to ``tol`` from the starts that
    can still win: the best one, then each other in order of its objective while that objective, less twice the best
    start's own decrease after screening, is below the best final objective.  The others stop ``screened``: converged
    to ``screen_tol``, above the best start's objective by more than twice what the best start gained after
    screening.

    Parameters
    ----------
    starts : list
        The starting points.
    run : callable
        ``run(point, tol, max_iter, resumed) -> dict``: one start's run (:func:`ccp_runs`' fields, lists of per-step
        records under any other keys); ``resumed``: the point ends the last run made, which it continues.
    tol : float
        The final tolerance.
    screen_tol : float
        The screening tolerance (> ``tol``).
    max_iter : int
        Steps per start at most, over both stages.

    Returns
    -------
    list of dict
        One run per start, in order; a continued run's records are those of both stages, its ``history`` and stop
        reason those of the whole run.
    """
    runs = [run(point, screen_tol, max_iter, False) for point in starts]
    live = sorted((i for i, r in enumerate(runs) if r["stop"] == "converged"), key=lambda i: runs[i]["f"])
    best_f, gain, last = np.inf, 0.0, len(runs) - 1
    for i in live:
        first = runs[i]
        if first["f"] - 2.0 * gain >= best_f:
            first["stop"] = "screened"
            continue
        more = run(first["point"], tol, max_iter - (len(first["history"]) - 1), i == last)
        last = i
        merged = {k: v + more[k] if isinstance(v, list) else more[k] for k, v in first.items()}
        merged["history"] = first["history"] + more["history"][1:]
        merged["inaccurate"] = first["inaccurate"] + more["inaccurate"]
        runs[i] = merged
        if merged["f"] < best_f:
            best_f, gain = merged["f"], max(gain, first["f"] - merged["f"])
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


def socp_ccp(
    build,
    anchors,
    starts,
    objective,
    tangent,
    majoriser,
    *,
    solver,
    options,
    max_iter,
    tol,
    boost=0.0,
    extrapolate=None,
) -> list[dict]:
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
    boost : float, default=0.0
        :func:`ccp_runs`' first boosted step (0: none).
    extrapolate : callable or None, default=None
        :func:`ccp_runs`' boosted points (e.g. :func:`~rsvm_conic.solvers.hyperbolic_step.simplex_extrapolation`
        over ``anchors``).

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
            return None, None, 0.0, False, failures
        mus_new = []
        for mu in P["mus"]:  # renormalise round-off on each simplex
            v = np.clip(np.asarray(mu.value), 0.0, None)
            mus_new.append(v / v.sum())
        R_new = np.clip(np.asarray(P["R"].value), 0.0, None)
        O_new = O_of(mus_new)
        # the majoriser at its minimiser (its value at the current point is f there)
        M = majoriser(O_new, R_new, O, R)
        return (mus_new, R_new, O_new), M, 0.0, stats["status"] != cp.OPTIMAL, failures

    points = [(mus, R, O_of(mus)) for mus, R in starts]
    runs = ccp_runs(points, objective, step, max_iter=max_iter, tol=tol, extrapolate=extrapolate, boost=boost)
    for run in runs:
        run["mus"], run["R"], run["O"] = run.pop("point")
    return runs


def tangent_coefficients(dist, R, codes, shift: float = 0.0, sample_weight=None):
    """Coefficients of the tangent of ``sum_i s_i H_i`` with ``H_i = max(shift + a_i, b_i)`` ([ElD19, chapter 3]).

    The active branch (ties -> ``a``) and, inside ``a``, the maximising ``l`` are picked at the current point, so
    ``sum_i H_i ~ sum_ij c_ij n_ij + sum_il e_il R_l`` (+ constants).  ``shift = 0`` for the concave part of the CCP,
    ``shift = gamma`` for the pieces ``G_i`` of the convex majoriser.

    Parameters
    ----------
    dist : ndarray of shape (n, C)
        The distances ``n_ij = ||O_j - phi_i||`` at the current point.
    R : ndarray of shape (C,)
        The radii at the current point.
    codes : ndarray of shape (n,)
        The class codes ``y_i``.
    shift : float, default=0.0
        The constant added to the branch ``a``.
    sample_weight : ndarray of shape (n,) or None, default=None
        The weights ``s_i`` multiplying row i of ``c`` and ``e`` (ones when None).

    Returns
    -------
    c : ndarray of shape (n, C)
        The coefficients on the distances.
    e : ndarray of shape (n, C)
        The coefficients on the radii.
    H : ndarray of shape (n,)
        ``max(a, b)``, unweighted.
    """
    n, C = dist.shape
    rows = np.arange(n)
    Y = np.zeros((n, C), dtype=bool)
    Y[rows, codes] = True
    off = np.where(Y, 0.0, dist)
    noff = off.sum(axis=1)
    # branch value for l != y: R_l + sum_{j not in {y, l}} n_ij = R_l + noff - n_il
    branch = np.where(Y, -np.inf, R[None, :] + noff[:, None] - dist)
    lstar = np.argmax(branch, axis=1)
    a = 0.5 * (branch[rows, lstar] + dist[rows, codes] - R[codes])
    b = 0.5 * noff
    use_a = (shift + a) >= b
    c = np.zeros((n, C))
    e = np.zeros((n, C))
    # branch a: (R_l* + sum_{j not in {y,l*}} n_ij + n_iy - R_y) / 2
    ca = 0.5 * (~Y).astype(float)
    ca[rows, lstar] = 0.0
    ca[rows, codes] = 0.5
    c[use_a] = ca[use_a]
    e[rows[use_a], lstar[use_a]] += 0.5
    e[rows[use_a], codes[use_a]] -= 0.5
    # branch b: sum_{j != y} n_ij / 2
    c[~use_a] = 0.5 * (~Y[~use_a]).astype(float)
    if sample_weight is not None:
        c *= sample_weight[:, None]
        e *= sample_weight[:, None]
    return c, e, np.maximum(a, b)


def ccp_starts(weights, n_starts: int, gamma: float, rng) -> list[tuple]:
    """The CCP's starts ``(mus, R)`` over per-class hulls.

    Start 0: the simplex weights proportional to ``weights`` (per class; the sample weights for the exact route, the
    cluster sizes for the anchors: the (weighted) class means either way) with ``R = 0``, the nearest-class-mean
    rule; starts 1..: flat Dirichlet weights and ``R`` uniform in ``[0, gamma]``.

    Parameters
    ----------
    weights : list of ndarray
        Per class, the positive weights of its hull's points.
    n_starts : int
        The number of starts.
    gamma : float
        The margin parameter (the upper end of the random radii).
    rng : numpy.random.Generator
        The random starts' generator.

    Returns
    -------
    list of tuple
        The starts ``(mus, R)``: per class simplex weights, and the radii (C,).
    """
    pts = []
    for s in range(n_starts):
        if s == 0:
            mus, R = [w / w.sum() for w in weights], np.zeros(len(weights))
        else:
            mus = [rng.dirichlet(np.ones(w.size)) for w in weights]
            R = rng.uniform(0, gamma, size=len(weights))
        pts.append((mus, R))
    return pts


def kmeans_anchors(Phi, codes, n_classes: int, n_anchors: int, rng, sample_weight=None):
    """Per class, ``p <= n_anchors`` k-means centroids (each a (weighted) mean of class points) and their masses.

    A class with at most ``n_anchors`` points keeps its points as anchors.  The mass-weighted centroids average to
    the (weighted) class mean exactly.

    Parameters
    ----------
    Phi : ndarray of shape (n, D)
        The feature vectors.
    codes : ndarray of shape (n,)
        The class codes ``0..n_classes-1``.
    n_classes : int
        The number of classes.
    n_anchors : int
        The largest number of anchors per class.
    rng : numpy.random.Generator
        Draws each class's k-means seed.
    sample_weight : ndarray of shape (n,) or None, default=None
        The weights of the points (ones when None).

    Returns
    -------
    anchors : list of ndarray
        Per class, the anchors (p_k, D).
    sizes : list of ndarray
        Per class, the anchors' cluster masses (sums of sample weights), (p_k,).
    """
    from sklearn.cluster import MiniBatchKMeans

    w_all = np.ones(Phi.shape[0]) if sample_weight is None else sample_weight
    anchors, sizes = [], []
    for k in range(n_classes):
        Pk, wk = Phi[codes == k], w_all[codes == k]
        p = int(min(n_anchors, Pk.shape[0]))
        if p == Pk.shape[0]:
            anchors.append(Pk.copy())
            sizes.append(wk.copy())
            continue
        km = MiniBatchKMeans(n_clusters=p, random_state=int(rng.integers(2**31 - 1)), n_init=3, batch_size=2048).fit(
            Pk, sample_weight=None if sample_weight is None else wk
        )
        onehot = km.labels_[:, None] == np.arange(p)[None, :]  # (n_k, p)
        mass = wk @ onehot
        used = mass > 0
        anchors.append(((onehot[:, used] * wk[:, None]).T @ Pk) / mass[used][:, None])
        sizes.append(mass[used])
    return anchors, sizes
