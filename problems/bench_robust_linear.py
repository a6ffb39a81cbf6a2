"""Benchmark: the linear robust SVM family (prints measured ratios; not a test).

Part 1 -- grouped robust SOCP (eq. 4), n = 50, k = 2 groups, L in {2000, 20000}:
    this project's builder + Clarabel solve, against (a) a plain vectorised CVXPY model
    written directly in this file and (b) the naive model with one CVXPY constraint
    per sample (only at L = 500: it is the slow pattern the builders avoid, and takes minutes at
    L = 2000).
Part 2 -- stochastic solvers on the nominal problem (eq. 1/5) at L = 10^6, n = 50:
    time to reach a 1e-3 relative objective gap, against scikit-learn's LinearSVC
    (liblinear, hinge loss, dual coordinate descent), and the time of one epoch
    against one ``X @ w`` pass.  The reference optimum is the best objective found
    by any method (liblinear with tight tolerance, long stochastic runs).

``rsvm-conic bench robust-linear [--quick]`` (quick: L = 2000 and L = 10^5).
"""

from __future__ import annotations

import os
import time
import warnings

import cvxpy as cp
import numpy as np

from rsvm_conic.datasets.synthetic import make_uncertain_classification
from rsvm_conic.formulations import nominal_svm, robust_svm
from rsvm_conic.solvers.conic import SOLVER_OPTIONS
from rsvm_conic.uncertainty import UncertaintySet, psd_sqrt


def _plain_model(X, y, Sigma, groups, C, radius):
    """A direct vectorised CVXPY model of eq. 4 with one SOC per group."""
    L, n = X.shape
    w, b, xi = cp.Variable(n), cp.Variable(), cp.Variable(L, nonneg=True)
    A = psd_sqrt(Sigma)
    t = cp.Variable(len(Sigma))
    cons = [cp.multiply(y, X @ w + b) + xi - radius * t[groups] >= 1]
    cons += [cp.norm(A[g].T @ w, 2) <= t[g] for g in range(len(Sigma))]  # one cone per group
    return cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * cp.sum(xi)), cons)


def _naive_model(X, y, Sigma, groups, C, radius):
    """One Python-level constraint per sample (what the builders avoid)."""
    L, n = X.shape
    w, b, xi = cp.Variable(n), cp.Variable(), cp.Variable(L, nonneg=True)
    A = psd_sqrt(Sigma)
    cons = [y[i] * (X[i] @ w + b) + xi[i] - radius * cp.norm(A[groups[i]].T @ w, 2) >= 1 for i in range(L)]
    return cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * cp.sum(xi)), cons)


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def part1(sizes, n=50, C=1.0, radius=1.0, naive_max=2000):
    print(
        "Part 1: grouped robust SOCP, n = %d, k = 2, Clarabel (times include model building; %d cores)"
        % (n, os.cpu_count())
    )
    print(
        f"{'L':>7} {'rsvm-conic [s]':>15} {'plain CVXPY [s]':>16} {'ratio':>7} {'naive [s]':>10} "
        f"{'naive/ours':>11} {'max rel. obj. diff':>19}"
    )
    for L in sizes:
        X, y, Sigma, groups = make_uncertain_classification(L, n, separation=2.0, noise_scale=0.3, random_state=0)
        ours, t_ours = _timed(
            lambda: robust_svm(X, y, UncertaintySet(Sigma=Sigma, groups=groups, radius=radius), C=C).solve("clarabel")
        )
        plain = _plain_model(X, y, Sigma, groups, C, radius)
        _, t_plain = _timed(lambda: plain.solve(solver="CLARABEL", **SOLVER_OPTIONS["CLARABEL"]))
        diffs = [abs(plain.value - ours.objective) / ours.objective]
        if L <= naive_max:
            naive = _naive_model(X, y, Sigma, groups, C, radius)
            _, t_naive = _timed(lambda: naive.solve(solver="CLARABEL", **SOLVER_OPTIONS["CLARABEL"]))
            diffs.append(abs(naive.value - ours.objective) / ours.objective)
            naive_s, ratio_s = f"{t_naive:10.2f}", f"{t_naive / t_ours:11.1f}"
        else:
            naive_s, ratio_s = f"{'skipped':>10}", f"{'-':>11}"
        print(f"{L:>7} {t_ours:15.2f} {t_plain:16.2f} {t_plain / t_ours:7.2f} {naive_s} {ratio_s} {max(diffs):19.1e}")


def _first_time_below(history, target):
    for epoch, value, seconds in history:
        if value <= target:
            return epoch, seconds
    return None, None


def part2(L, n=50, lam=1e-4):
    from sklearn.svm import LinearSVC

    C = 1.0 / (lam * L)
    print(f"\nPart 2: nominal SVM, L = {L}, n = {n}, lam = {lam:g} (C = {C:.3g}); objective P = 1/2|w|^2 + C sum hinge")
    rng = np.random.default_rng(0)
    X, y, _, _ = make_uncertain_classification(L, n, separation=2.0, noise_scale=0.3, n_groups=1, random_state=1)
    f = nominal_svm(X, y, C=C)
    w = rng.standard_normal(n)
    reps = 5
    _, t_xw = _timed(lambda: [X @ w for _ in range(reps)])
    t_xw /= reps
    scale = C * L  # P = C L F
    runs = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svc = LinearSVC(loss="hinge", dual=True, C=C, max_iter=200, intercept_scaling=10.0)
        _, t_svc = _timed(lambda: svc.fit(X, y))
        sq = LinearSVC(loss="squared_hinge", dual=False, C=C)
        _, t_sq = _timed(lambda: sq.fit(X, y))
    p_svc = f.objective_wb(svc.coef_.ravel(), float(svc.intercept_[0]))
    for name in ("sgd", "prox"):
        runs[name] = f.solve(name, max_epochs=60, tol=1e-7, patience=5, seed=0)
    best = min([p_svc] + [r.objective for r in runs.values()])
    target = (1 + 1e-3) * best
    print(f"one X @ w pass: {t_xw * 1e3:.1f} ms; reference optimum (best found) P* = {best:.8g}")
    print(f"{'method':<26} {'time to 1e-3 gap [s]':>21} {'epochs':>7} {'final rel. gap':>15} {'epoch/(X@w)':>12}")
    for name, sol in runs.items():
        hist = sol.info["history"]
        hist_p = [(e, v * scale, s) for e, v, s in hist]
        ep, secs = _first_time_below(hist_p, target)
        per_epoch = hist[-1][2] / hist[-1][0]
        reach = f"{secs:21.2f}" if secs is not None else f"{'not reached':>21}"
        print(
            f"{name + ' (this project)':<26} {reach} {str(ep or '-'):>7} {(sol.objective - best) / best:15.2e} "
            f"{per_epoch / t_xw:12.1f}"
        )
        runs[name] = (secs, per_epoch)
    print(
        f"{'LinearSVC hinge, dual CD':<26} {t_svc:21.2f} {'-':>7} {(p_svc - best) / best:15.2e} {'-':>12}"
        "   (liblinear, 200 passes at most; its bias is regularised)"
    )
    print(
        f"{'LinearSVC sq. hinge, primal':<26} {t_sq:21.2f} {'-':>7} {'other problem':>15} {'-':>12}"
        "   (squared hinge: a scale reference only)"
    )
    for name, (secs, _) in runs.items():
        if secs is not None:
            print(
                f"ratio LinearSVC(hinge) time / {name} time to 1e-3 gap: {t_svc / secs:.2f}; "
                f"LinearSVC(squared hinge, primal) / {name}: {t_sq / secs:.2f}"
            )


def run(quick: bool = False) -> int:
    print("(timings on this machine, measured side by side in one run)")
    part1([500, 2000] if quick else [500, 2000, 20000], naive_max=500)
    part2(100_000 if quick else 1_000_000)
    return 0


BENCHMARKS = {"robust-linear": run}

if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.exit(run(quick="--quick" in sys.argv))
