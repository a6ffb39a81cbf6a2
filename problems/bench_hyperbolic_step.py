"""Benchmark: one convex CCP step of the hyperbolic machine ([ElD19, chapter 3]) by the structured interior point
(:func:`rsvm_conic.solvers.ipm.hyperbolic.solve_step_ipm`), at several step tolerances, and against CVXPY + Clarabel
on the ``anchors`` route's step.

``rsvm-conic bench hyperbolic-step [--quick]`` prints two tables, on the features ``HyperbolicSVC()`` trains on
(digits / 16, the top 30 eigen-features of its kernel, ``gamma="auto"``):

* 300 digits, the exact route's steps along the CCP from the class means (each next point the step's tight
  minimiser): per relative gap tolerance ``tol_gap``, the mean interior-point iterations and time per step, the
  largest certified gap over the steps relative to the largest decrease still possible from the start
  (``P(start) - D``, the measure a CCP step is stopped on), and the iteration and time ratios to ``tol_gap=1e-10``
  (the iterations do not depend on the machine's load);
* the full digits with 20 k-means anchors per class: the first steps by CVXPY + Clarabel (the settings of the
  CCP, ``solvers.ccp.CLARABEL_CCP``) and by the interior point (``tol_gap=1e-10``), each step's value at both
  points, the interior point's certified gap and the time ratio measured in the same run.

Each table ends with the interior point's time per iteration at ``tol_gap=1e-10`` (its best step's: the load of a shared
machine only adds) and its ratio to a named floor:
the dense calls of one factorisation of the reduced KKT system (module docstring of
:mod:`rsvm_conic.solvers.ipm.hyperbolic`) timed alone at the step's sizes in the same run, LAPACK ``potrf + potri +
potrf`` of an ``(r + C)``-square matrix and the ``syrk`` of an ``(n, r)`` one (one factorisation per iteration;
the ratio's excess is the solves, the engine's passes over the ``C n`` cones and the factorisation's vectorised
rest).

Times are wall-clock seconds on one BLAS thread.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

__all__ = ["run"]

TOLERANCES = (1e-10, 1e-8, 1e-6, 1e-5, 1e-4)


def _machine(n):
    from sklearn.datasets import load_digits

    from rsvm_conic.estimators import HyperbolicSVC
    from rsvm_conic.formulations.hyperbolic import HyperbolicProblem

    X, y = load_digits(return_X_y=True)
    X, y = X[:n] / 16.0, y[:n]
    est = HyperbolicSVC(max_iter=0, n_starts=1).fit(X, y)
    codes = np.searchsorted(est.classes_, y)
    return HyperbolicProblem(est._map(X), codes, est.classes_.size, gamma=est.gamma_, lam=est.lam)


def _step_data(f, anchors):
    from rsvm_conic.solvers.hyperbolic_step import MajoriserStep
    from rsvm_conic.solvers.ipm.hyperbolic import HyperbolicGeometry

    Pa = np.vstack(anchors)
    ca = np.repeat(np.arange(len(anchors)), [a.shape[0] for a in anchors])
    s = np.ones(f.Phi.shape[0])
    step = MajoriserStep(f.Phi, f.codes, Pa, ca, s, f.gamma, f.lam)
    return step, HyperbolicGeometry(f.Phi, f.codes, s, f.gamma, f.lam, anchors=Pa, anchor_class=ca)


def _ipm(f, step, geo, tol):
    from rsvm_conic.solvers.hyperbolic_step import dual_summary
    from rsvm_conic.solvers.ipm.hyperbolic import solve_step_ipm

    t0 = time.perf_counter()
    mu, R, (pi, U), res = solve_step_ipm(geo, step.q, step.e, tol_gap=tol)
    elapsed = time.perf_counter() - t0
    bound = step.bound(dual_summary(f.Phi, f.codes, geo.weights, f.gamma, pi, U))
    return mu, R, step.value(mu, R), bound, res.iterations, elapsed


def _dense_floor(n, r, C, reps=7):
    """One factorisation's dense calls timed alone (best of ``reps``, seconds): ``potrf``, ``potri`` and ``potrf``
    of an ``(r + C)``-square positive definite matrix and the ``syrk`` of an ``(n, r)`` one."""
    from scipy.linalg import lapack

    rng = np.random.default_rng(0)
    A = rng.normal(size=(r + C, 2 * (r + C)))
    S = np.asfortranarray(A @ A.T)
    T = rng.normal(size=(n, r))
    best = np.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        L = lapack.dpotrf(S, lower=1)[0]
        lapack.dpotri(L, lower=1)
        lapack.dpotrf(S, lower=1)
        T.T @ T
        best = min(best, time.perf_counter() - t0)
    return best


def _per_iteration(label, per, geo):
    """The interior point's time per iteration (the best step's, seconds) and its ratio to :func:`_dense_floor` at
    the step's sizes."""
    r = int(geo.r.sum())
    floor = _dense_floor(geo.n, r, geo.C)
    print(
        f"{label}: {1e3 * per:.2f} ms per interior-point iteration (best step); floor (potrf + potri + potrf of "
        f"{r + geo.C}, syrk of {geo.n} x {r}, timed alone) {1e3 * floor:.2f} ms; ratio {per / floor:.2f}"
    )


def _warm_up(geo):
    """One interior-point iteration, so that no timed step loads the compiled kernels."""
    from rsvm_conic.solvers.ipm.hyperbolic import solve_step_ipm

    solve_step_ipm(geo, np.zeros(geo.m), np.zeros(geo.C), max_iter=1)


def _tolerances(n_steps):
    f = _machine(300)
    anchors = [f.Phi[f.codes == k] for k in range(f.n_classes)]
    step, geo = _step_data(f, anchors)
    mus, R = [np.full(a.shape[0], 1.0 / a.shape[0]) for a in anchors], np.zeros(f.n_classes)
    _warm_up(geo)
    rows = {tol: [] for tol in TOLERANCES}
    for _ in range(n_steps):
        step.set_tangent(*f._tangent(np.stack([m @ a for m, a in zip(mus, anchors)]), R))
        start = step.value(np.concatenate(mus), R)
        for tol in TOLERANCES:
            mu, R_new, primal, bound, its, elapsed = _ipm(f, step, geo, tol)
            rows[tol].append((its, elapsed, (primal - bound) / max(start - bound, 1e-300)))
            if tol == TOLERANCES[0]:
                nxt = (mu, R_new)
        mu, R = nxt
        mus = [mu[a:b] for a, b in zip(geo.starts[:-1], geo.starts[1:])]
    print(f"300 digits (D = 30, C = 10): {n_steps} CCP steps from the class means, the interior point per tolerance")
    head = (
        f"{'tol_gap':>8} {'iterations':>10} {'s / step':>9} {'max gap / room':>15} {'iterations / 1e-10':>19} "
        f"{'time / 1e-10':>13}"
    )
    print(head)
    print("-" * len(head))
    base_its, base_secs = np.array(rows[TOLERANCES[0]])[:, :2].mean(axis=0)
    for tol, r in rows.items():
        its, secs, ratio = np.array(r).T
        print(
            f"{tol:>8.0e} {its.mean():>10.1f} {secs.mean():>9.3f} {ratio.max():>15.1e} {its.mean() / base_its:>19.2f} "
            f"{secs.mean() / base_secs:>13.2f}"
        )
    its, secs = np.array(rows[TOLERANCES[0]])[:, :2].T
    _per_iteration(f"tol_gap {TOLERANCES[0]:.0e}", float(np.min(secs / its)), geo)


def _anchors(n_steps):
    from rsvm_conic.solvers.ccp import CLARABEL_CCP, kmeans_anchors, solve_step

    f = _machine(1797)
    anchors, sizes = kmeans_anchors(f.Phi, f.codes, f.n_classes, 20, np.random.default_rng(0))
    step, geo = _step_data(f, anchors)
    P = f._class_socp(anchors)
    mus, R = [w / w.sum() for w in sizes], np.zeros(f.n_classes)
    print(f"\nfull digits (1797 x 30, 20 anchors per class, r = {int(geo.r.sum())}): the first {n_steps} steps")
    head = (
        f"{'step':>4} {'Clarabel [s]':>12} {'value':>15} {'ipm [s]':>8} {'iterations':>10} {'value':>15} "
        f"{'certified gap':>13} {'ratio':>6}"
    )
    print(head)
    print("-" * len(head))
    per = np.inf
    for t in range(n_steps):
        Q, e = f._tangent(np.stack([m @ a for m, a in zip(mus, anchors)]), R)
        step.set_tangent(Q, e)
        for k, a in enumerate(anchors):
            P["qs"][k].value = a @ Q[k]
        P["e"].value = e
        t0 = time.perf_counter()
        solve_step(P["problem"], "clarabel", CLARABEL_CCP)
        t_c = time.perf_counter() - t0
        mu_c = np.concatenate([np.clip(m.value, 0, None) / np.clip(m.value, 0, None).sum() for m in P["mus"]])
        value_c = step.value(mu_c, np.clip(P["R"].value, 0, None))
        mu, R, primal, bound, its, t_i = _ipm(f, step, geo, TOLERANCES[0])
        print(
            f"{t:>4d} {t_c:>12.2f} {value_c:>15.8f} {t_i:>8.2f} {its:>10d} {primal:>15.8f} {primal - bound:>13.1e} "
            f"{t_c / t_i:>6.1f}"
        )
        mus = [mu[a:b] for a, b in zip(geo.starts[:-1], geo.starts[1:])]
        per = min(per, t_i / its)
    _per_iteration("interior point", per, geo)


def run(quick: bool = False) -> int:
    from threadpoolctl import threadpool_limits

    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")
        _tolerances(3 if quick else 10)
        _anchors(1 if quick else 3)
    return 0


BENCHMARKS = {"hyperbolic-step": run}
