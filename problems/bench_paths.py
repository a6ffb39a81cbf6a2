"""Certified radius paths and cross-validation with warm starts, against cold fits, side by side in one run.

``rsvm-conic bench paths`` (``--quick``: 3000 samples, fewer points) on the vendored ``magic`` data (19020 x 10,
standardised), ``RobustSVC`` with its default noise covariance:

* a path of 20 radii (:func:`~rsvm_conic.estimators.path.radius_path`, the default grid from the radius at which
  the fit is constant down to 1e-3 of it, its time including that grid's; its first point, constant, is certified
  without an interior point) against the same grid plus 20 cold fits at its radii: every point certified,
  objectives equal within the two certified gaps, and the interior point's iterations per warm-started point
  against a cold fit's at the same radii;
* (full run only) the same on a synthetic instance of 40000 x 20 with 10 default radii;
* ``RobustSVCCV`` against ``GridSearchCV(RobustSVC())`` over the same grid (3 C x 10 radii, 3 folds): the same
  selected (C, radius).

Each time (wall clock, and the process's CPU time, less sensitive to other processes' load) is the best of 3 rounds
(2 for the cross-validation; 1 with ``--quick``) in which the compared computations run interleaved, so that on a
loaded machine both sides of a ratio meet about the same load; the paths' interior-point iterations in total (the
path's against the cold fits') do not depend on the load at all.  It exits 1
if a point is not certified, an objective differs by more than the certified gaps or the selections differ; the
ratios are printed, not asserted (timings depend on the machine's load).
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

from rsvm_conic.exceptions import ConstantClassifierWarning


def _data(quick: bool):
    from sklearn.preprocessing import StandardScaler

    from rsvm_conic.datasets.keel import load_dataset

    X, y = load_dataset("magic")
    idx = np.random.default_rng(0).permutation(y.size)[: 3000 if quick else y.size]
    return StandardScaler().fit_transform(X[idx]), y[idx]


def _timed(*fns, repeats: int = 1, cpu: dict | None = None):
    """``[(seconds, output), ...]`` of each function: the best of ``repeats`` rounds, the functions interleaved in each
    round (on a loaded machine each comparison then meets about the same load).  ``cpu``: a dict that receives each
    function's best process CPU time under its index (less sensitive than the wall time to other processes' load)."""
    best = [(float("inf"), None)] * len(fns)
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            t0, c0 = time.perf_counter(), time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConstantClassifierWarning)  # a path's first point is constant
                out = fn()
            best[k] = (min(best[k][0], time.perf_counter() - t0), out)
            if cpu is not None:
                cpu[k] = min(cpu.get(k, float("inf")), time.process_time() - c0)
    return best


def _iterations(path_stats, cold_stats):
    """The median interior-point iterations of the path's warm-started points (summed over their reduced problems)
    and of the cold fits at the same radii, and the totals over the path and over the cold fits (the load does not
    change them)."""
    warm = [s["iterations"] for s in path_stats if s.get("warm_start") is not None]
    cold = [s["iterations"] for s, p in zip(cold_stats, path_stats) if p.get("warm_start") is not None]
    totals = (sum(s["iterations"] for s in path_stats), sum(s["iterations"] for s in cold_stats))
    return ((int(np.median(warm)), int(np.median(cold))) if warm else (0, 0)) + totals


def run(quick: bool = False) -> int:
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    from rsvm_conic.estimators import RobustSVC
    from rsvm_conic.estimators.cv import RobustSVCCV
    from rsvm_conic.estimators.path import default_radii, radius_path

    X, y = _data(quick)
    n_radii = 8 if quick else 20
    print(
        f"Warm-started paths against cold fits: magic {X.shape[0]} x {X.shape[1]}, RobustSVC(C=1), "
        f"{os.cpu_count()} cores"
    )
    repeats = 1 if quick else 3
    ((t_grid, radii),) = _timed(lambda: default_radii(RobustSVC(), X, y, n_radii=n_radii))
    print(f"default grid: {n_radii} radii from {radii[0]:.4g} (w = 0 from there on) to {radii[-1]:.3g}, {t_grid:.2f} s")
    cpu = {}
    (t_grid, _), (t_path, path), (t_cold, cold) = _timed(
        lambda: default_radii(RobustSVC(), X, y, n_radii=n_radii),
        lambda: radius_path(RobustSVC(), X, y, n_radii=n_radii),  # its own grid included
        lambda: [RobustSVC(radius=r).fit(X, y) for r in radii],
        repeats=repeats,
        cpu=cpu,
    )
    gaps = np.array([c.solver_stats_["gap_abs"] for c in cold])
    diff = np.abs(np.array([c.objective_ for c in cold]) - path.objectives[0])
    certified = all(s["status"] == "optimal" for s in path.stats[0]) and all(
        c.solver_stats_["status"] == "optimal" for c in cold
    )
    agree = bool(np.all(diff <= gaps + path.gaps_abs[0] + 1e-12 * np.abs(path.objectives[0])))
    warm = sum(s.get("warm_start") is not None for s in path.stats[0])
    constant = sum(s["route"] == "threshold" for s in path.stats[0])
    its_warm, its_cold, total_warm, total_cold = _iterations(path.stats[0], [c.solver_stats_ for c in cold])
    print("the path's time includes its default grid; the cold fits' time is the grid's plus the fits'")
    print(f"{'':24} {'time[s]':>8} {'ratio':>6}  points: certified, max rel. gap, warm-started, constant")
    print(
        f"{'path (warm starts)':24} {t_path:8.2f} {(t_grid + t_cold) / t_path:6.2f}  {certified}, "
        f"{path.gaps.max():.1e}, {warm}/{n_radii}, {constant}/{n_radii}"
    )
    print(f"{'grid + cold fits':24} {t_grid + t_cold:8.2f} {1.0:6.2f}  objectives equal within the gaps: {agree}")
    print(f"interior-point iterations per warm-started point (median) {its_warm}, per cold fit {its_cold}")
    print(f"interior-point iterations in total: path {total_warm}, cold fits {total_cold}")
    print(
        f"CPU time: path {cpu[1]:.2f} s, grid + cold fits {cpu[0] + cpu[2]:.2f} s, "
        f"ratio {(cpu[0] + cpu[2]) / cpu[1]:.2f}"
    )

    if not quick:  # a larger instance: the reduced problems' share of the interior point's work shrinks with L
        rng = np.random.default_rng(0)
        L, n = 40000, 20
        ys = rng.integers(0, 2, L)
        Xs = rng.standard_normal((L, n)) + (2 * ys - 1)[:, None] * rng.standard_normal(n) * 2.4 / np.sqrt(n)
        ((t_g, rs),) = _timed(lambda: default_radii(RobustSVC(), Xs, ys, n_radii=10))
        cpu = {}
        (t_g, _), (t_p, p), (t_c, c) = _timed(
            lambda: default_radii(RobustSVC(), Xs, ys, n_radii=10),
            lambda: radius_path(RobustSVC(), Xs, ys, n_radii=10),
            lambda: [RobustSVC(radius=r).fit(Xs, ys) for r in rs],
            repeats=repeats,
            cpu=cpu,
        )
        t_c += t_g
        ok = all(s["status"] == "optimal" for s in p.stats[0]) and bool(
            np.all(
                np.abs(np.array([e.objective_ for e in c]) - p.objectives[0])
                <= np.array([e.solver_stats_["gap_abs"] for e in c]) + p.gaps_abs[0] + 1e-12 * np.abs(p.objectives[0])
            )
        )
        certified, agree = certified and ok, agree and ok
        print(f"\nsynthetic {L} x {n} (two Gaussian classes), 10 default radii")
        print(f"{'path (warm starts)':24} {t_p:8.2f} {t_c / t_p:6.2f}  {ok}, {p.gaps.max():.1e}")
        print(f"{'grid + cold fits':24} {t_c:8.2f} {1.0:6.2f}")
        its_warm, its_cold, total_warm, total_cold = _iterations(p.stats[0], [e.solver_stats_ for e in c])
        print(f"interior-point iterations per warm-started point (median) {its_warm}, per cold fit {its_cold}")
        print(f"interior-point iterations in total: path {total_warm}, cold fits {total_cold}")
        print(
            f"CPU time: path {cpu[1]:.2f} s, grid + cold fits {cpu[0] + cpu[2]:.2f} s, "
            f"ratio {(cpu[0] + cpu[2]) / cpu[1]:.2f}"
        )

    Cs = [0.1, 1.0] if quick else [0.1, 1.0, 10.0]
    grid = radii[:: max(n_radii // 10, 1)]
    cv = StratifiedKFold(3)
    cpu = {}
    (t_cv, cvest), (t_gs, gs) = _timed(
        lambda: RobustSVCCV(Cs=Cs, radii=grid, cv=cv).fit(X, y),
        lambda: GridSearchCV(RobustSVC(), {"C": Cs, "radius": list(grid)}, cv=cv, error_score="raise").fit(X, y),
        repeats=min(repeats, 2),
        cpu=cpu,
    )
    same = (cvest.C_, cvest.radius_) == (gs.best_params_["C"], float(gs.best_params_["radius"]))
    print(f"\ncross-validation over {len(Cs)} C x {len(grid)} radii, 3 folds, then the refit")
    print(f"{'RobustSVCCV':24} {t_cv:8.2f} {t_gs / t_cv:6.2f}  C_ = {cvest.C_:g}, radius_ = {cvest.radius_:.4g}")
    print(
        f"{'GridSearchCV(RobustSVC)':24} {t_gs:8.2f} {1.0:6.2f}  C = {gs.best_params_['C']:g}, radius = "
        f"{float(gs.best_params_['radius']):.4g}; same selection: {same}; "
        f"mean scores max diff {np.abs(cvest.scores_.mean(0).ravel() - gs.cv_results_['mean_test_score']).max():.1e}"
    )
    print(f"CPU time: RobustSVCCV {cpu[0]:.2f} s, GridSearchCV {cpu[1]:.2f} s, ratio {cpu[1] / cpu[0]:.2f}")
    return 0 if certified and agree and same else 1


BENCHMARKS = {"paths": run}
