"""Benchmark: what the constant-classifier warning costs against the solve (prints measured ratios; not a test).

The instance of ``rsvm-conic bench robust-ipm`` (:func:`rsvm_conic.problems.bench_robust_ipm._data`): two
Gaussian classes, labels drawn at random (so the classes are not balanced), one ellipsoid per class, n = 50, C = 1,
at radius 5 -- large enough that the optimum is ``w = 0``.  ``RobustSVC.fit`` then warns with the radius below
which ``w != 0``, computed from the data (:mod:`rsvm_conic.solvers.zero_threshold`: a subdifferential test at
``w = 0`` and small conic programs), not by solving the SVM again.

Printed, measured side by side in one run (best of ``REPEATS``, the timed calls alternating so that both see the
same load): the solve (``RobustProblem(...).solve("auto")``: the interior point and its certificate), the fit
(validation, the same solve, the warning), the threshold computation alone, and the ratios fit / solve and
threshold / solve.  Then the threshold is checked by two exact solves (the interior point at 0.999 and 1.001 times
it: ``w != 0`` below, ``w = 0`` above; ``max |X w|`` printed).

``rsvm-conic bench constant-threshold [--quick]`` (quick: L = 20000; full: L = 20000 and 200000).
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

from rsvm_conic.estimators import RobustSVC
from rsvm_conic.exceptions import ConstantClassifierWarning
from rsvm_conic.formulations.robust import RobustProblem

from .bench_robust_ipm import _data

REPEATS = 5
RADIUS = 5.0


def _best(fn, repeats):
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def measure(L, n=50, repeats=REPEATS, print_fn=print):
    """One row: times of the solve, the fit and the threshold (best of ``repeats``) and the threshold's check."""
    X, y, unc = _data(L, n, 2)
    with warnings.catch_warnings():  # warm-up, not timed: the compiled row loops load on the first solve
        warnings.simplefilter("ignore")
        RobustSVC(C=1.0, radius=RADIUS).fit(X, y, Sigma=unc.Sigma, sigma_index=unc.groups)
    t_solve = t_fit = t_thr = np.inf
    msgs = []
    for _ in range(repeats):  # alternate the three timed calls
        t, sol = _best(lambda: RobustProblem(X, y, unc, C=1.0, radius=RADIUS).solve("auto"), 1)
        t_solve = min(t_solve, t)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            t, est = _best(
                lambda: RobustSVC(C=1.0, radius=RADIUS).fit(X, y, Sigma=unc.Sigma, sigma_index=unc.groups), 1
            )
        t_fit = min(t_fit, t)
        msgs = [str(w.message) for w in rec if w.category is ConstantClassifierWarning]
        f = RobustProblem(X, y, unc, C=1.0, radius=RADIUS)
        t, zt = _best(f.zero_threshold, 1)
        t_thr = min(t_thr, t)
    checks = {}
    f = RobustProblem(X, y, unc, C=1.0, radius=RADIUS)
    for factor in (0.999, 1.001):
        f.set_params(radius=factor * zt.upper)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            w = f.solve("ipm")["w"]
        checks[factor] = float(np.max(np.abs(X @ w)))
    row = dict(
        L=L,
        n=n,
        n_pos=int(np.sum(y > 0)),
        solve=t_solve,
        route=sol.time,
        fit=t_fit,
        threshold=t_thr,
        programs=zt.programs,
        lower=zt.lower,
        upper=zt.upper,
        below=checks[0.999],
        above=checks[1.001],
        warned=bool(msgs),
    )
    print_fn(
        f"{L:>7} {n:>3} {row['n_pos']:>6} | {t_solve:8.3f} {t_fit:8.3f} {t_thr:9.3f} {zt.programs:>3} | "
        f"{t_fit / t_solve:9.2f} {t_thr / t_solve:9.2f} | {zt.upper:10.6g} {zt.upper / zt.lower - 1:9.1e} | "
        f"{checks[0.999]:11.2e} {checks[1.001]:11.2e}"
    )
    return row


def run(quick: bool = False) -> int:
    print(
        f"Constant-classifier warning vs the solve: two class ellipsoids, C = 1, radius {RADIUS:g} (w = 0), "
        f"best of {REPEATS}, {os.cpu_count()} cores; solve = interior point + certificate"
    )
    hdr = (
        f"{'L':>7} {'n':>3} {'L_+':>6} | {'solve[s]':>8} {'fit[s]':>8} {'thresh[s]':>9} {'LPs':>3} | "
        f"{'fit/solve':>9} {'thr/solve':>9} | {'threshold':>10} {'bracket':>9} | {'|Xw| 0.999':>11} {'|Xw| 1.001':>11}"
    )
    print(hdr)
    print("-" * len(hdr))
    ok = True
    for L in (20000,) if quick else (20000, 200000):
        row = measure(L, print_fn=lambda s: print(s, flush=True))
        ok &= row["warned"] and row["below"] > 1e-4 and row["above"] < 1e-4
    return 0 if ok else 1


BENCHMARKS = {"constant-threshold": run}

if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.exit(run(quick="--quick" in sys.argv))
