"""Benchmark: the hyperbolic machine ([ElD19, chapter 3]) with its CCP steps by the structured interior point
(``HyperbolicSVC(solver="ipm")``) and by first-order steps (``solver="fista"``), the other settings default, beside
``SVC()`` and the nearest-class-mean rule in the same feature space, and its three step solvers side by side.

``rsvm-conic bench hyperbolic [--quick]`` prints one row per data set and step solver (``ipm``, ``fista``): 300 digits
(trained on the first 300 rows, tested on the other 1497), the full digits (1797 rows, training accuracy) and iris (150
rows, training accuracy), each with the fit's time, training / test accuracy, CCP steps of its longest start, the
starts' stopping reasons and the median certified gap of its convex steps (in units of the objective), beside
``SVC()``'s time and accuracy and the nearest-class-mean rule's accuracy (``HyperbolicSVC(max_iter=0, n_starts=1)``: the
CCP's first start, in the same feature space). Without ``--quick`` it also fits the 300 digits with the SOCP steps
(``solver="ccp"``, the default route at this size: CVXPY + Clarabel, several minutes) and prints the three step solvers'
times, objectives and test accuracies and the time ratios to ``ccp`` measured in the same run. Times are wall-clock
seconds of one fit each (after a warm-up fit that compiles the numba kernels).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

__all__ = ["run"]


def _data(name):
    from sklearn.datasets import load_digits, load_iris

    if name == "iris":
        X, y = load_iris(return_X_y=True)
        return X, y, None, None
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    if name == "digits-300":
        return X[:300], y[:300], X[300:], y[300:]
    return X, y, None, None


def _fit(make, X, y):
    t0 = time.perf_counter()
    est = make().fit(X, y)
    return time.perf_counter() - t0, est


def _acc(est, X, y):
    return float("nan") if X is None else float(np.mean(est.predict(X) == y))


def run(quick: bool = False) -> int:
    from sklearn.svm import SVC

    from rsvm_conic.estimators import HyperbolicSVC

    names = ("digits-300", "iris") if quick else ("digits-300", "digits-1797", "iris")
    head = (
        f"{'data':<12} {'solver':<6} {'fit [s]':>8} {'train':>6} {'test':>6} {'CCP':>4} {'step gap':>9} {'SVC [s]':>8} "
        f"{'ratio':>8} {'SVC tr':>6} {'SVC te':>6} {'NCM tr':>6} {'NCM te':>6}  stops"
    )
    print('HyperbolicSVC(solver="ipm" / "fista") vs SVC() and the nearest class mean; one fit each, wall time')
    print(head)
    print("-" * len(head))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        HyperbolicSVC(solver="fista", n_starts=1, max_iter=1).fit(*_data("iris")[:2])  # compiles the kernels
        HyperbolicSVC(solver="ipm", n_starts=1, max_iter=1).fit(*_data("iris")[:2])
        for name in names:
            X, y, Xt, yt = _data(name)
            t_s, s = _fit(SVC, X, y)
            ncm = HyperbolicSVC(max_iter=0, n_starts=1).fit(X, y)
            for solver in ("ipm", "fista"):
                t_h, h = _fit(lambda: HyperbolicSVC(solver=solver), X, y)
                gaps = [g for run in h.solver_stats_["step_gaps"] for g in run]
                print(
                    f"{name:<12} {solver:<6} {t_h:>8.2f} {_acc(h, X, y):>6.3f} {_acc(h, Xt, yt):>6.3f} "
                    f"{h.n_iter_ - 1:>4d} {np.median(gaps) if gaps else 0.0:>9.2e} {t_s:>8.4f} {t_h / t_s:>8.0f} "
                    f"{_acc(s, X, y):>6.3f} {_acc(s, Xt, yt):>6.3f} {_acc(ncm, X, y):>6.3f} {_acc(ncm, Xt, yt):>6.3f}  "
                    f"{','.join(h.stops_)}"
                )
        if not quick:
            X, y, Xt, yt = _data("digits-300")
            fits = {solver: _fit(lambda: HyperbolicSVC(solver=solver), X, y) for solver in ("ipm", "fista", "ccp")}
            t_c = fits["ccp"][0]
            print("\n300 digits, the three step solvers in this run:")
            for solver, (t, est) in fits.items():
                print(
                    f"  {solver:<6} {t:>8.2f} s  objective {est.objective_:.4f}  test {_acc(est, Xt, yt):.3f}  "
                    f"ccp / {solver} time {t_c / t:.1f}"
                )
    print("\ngoals: 300 digits <= 3 s, full digits <= 20 s; accuracy >= the nearest class mean's")
    return 0


BENCHMARKS = {"hyperbolic": run}
