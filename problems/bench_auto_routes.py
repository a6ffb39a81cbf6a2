"""Benchmark: the routes behind two ``solver="auto"`` choices, timed side by side on the same data.

* ``NominalSVC``: libsvm against the structured interior point (``ipm``), both certified to the same 1e-6
  relative gap, on standardised real data of 150-5000 rows (the vendored KEEL sets and scikit-learn's breast
  cancer / wine; two classes: the first label against the rest) at C = 0.1, 1 and 10.  A route that does not
  certify is shown as ``fail`` (``solver="auto"`` would then warn and fall back).
* ``RobustFeatureSVC`` (random Fourier features, ``feature_norm=2``): the interior point, Clarabel and the
  stochastic proximal method on MAGIC subsets of 3000-19020 rows, radius 0.01 and 0.1.  The exact routes
  certify 1e-6; ``prox`` its own 1e-3 (status ``max_iter`` when it stopped above it).

One BLAS thread, best of ``repeat`` runs each; the ratios are measured in this run (the absolute times depend on
the machine and its load).  ``rsvm-conic bench auto-routes [--quick]``.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

from rsvm_conic.exceptions import SolverError


def _best_of(fn, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            res = fn()
        except SolverError:
            return np.inf, None
        elapsed = time.perf_counter() - t0
        if elapsed < best:
            best, out = elapsed, res
    return best, out


def _data(name, rows=None, seed=0):
    from sklearn.datasets import load_breast_cancer, load_wine
    from sklearn.preprocessing import StandardScaler

    from rsvm_conic.datasets import load_dataset

    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
    elif name == "wine":
        X, y = load_wine(return_X_y=True)
    else:
        X, y = load_dataset(name)
    y = (y == np.unique(y)[0]).astype(int)
    if rows is not None and rows < y.size:
        idx = np.random.default_rng(seed).choice(y.size, rows, replace=False)
        X, y = X[idx], y[idx]
    return StandardScaler().fit_transform(X), y


def _nominal(quick, repeat):
    from rsvm_conic.estimators import NominalSVC

    sets = [("wine", None), ("bupa", None), ("breast_cancer", None), ("banana", 200), ("banana", 800)]
    sets += [("magic", 400), ("segment", 800)] if quick else [("magic", 200), ("magic", 800), ("segment", 2310)]
    sets += [] if quick else [("banana", 2000), ("magic", 5000)]
    head = f"{'NominalSVC: data':<24} {'rows':>5} {'C':>5} {'libsvm':>8} {'ipm':>8} {'libsvm/ipm':>10} {'auto':>8}"
    print(head)
    print("-" * len(head))
    ratios = []
    for name, rows in sets:
        X, y = _data(name, rows)
        for C in (0.1, 1.0, 10.0):
            t = {r: _best_of(lambda: NominalSVC(C=C, solver=r).fit(X, y), repeat)[0] for r in ("libsvm", "ipm")}
            _, est = _best_of(lambda: NominalSVC(C=C).fit(X, y), 1)
            ratio = t["libsvm"] / t["ipm"]
            ratios.append(ratio)
            cell = lambda v: f"{v:8.3f}" if np.isfinite(v) else f"{'fail':>8}"  # noqa: E731
            print(
                f"{name:<24} {X.shape[0]:>5} {C:>5g} {cell(t['libsvm'])} {cell(t['ipm'])} {ratio:>10.2f} "
                f"{est.solver_stats_['route'] if est is not None else 'fail':>8}"
            )
    finite = [r for r in ratios if np.isfinite(r)]
    print(
        f"libsvm / ipm: median {np.median(finite):.2f}, range {min(finite):.2f}-{max(finite):.2f} "
        f"({len(ratios) - len(finite)} of {len(ratios)} libsvm fits did not certify)\n"
    )


def _feature(quick, repeat):
    from rsvm_conic.estimators import RobustFeatureSVC

    sizes = (3000,) if quick else (3000, 8000, 19020)
    head = (
        f"{'RobustFeatureSVC: rows':<24} {'radius':>6} {'route':>9} {'time':>8} {'status':>9} {'gap':>9} "
        f"{'/ fastest':>9}"
    )
    print(head)
    print("-" * len(head))
    for rows in sizes:
        X, y = _data("magic", rows)
        for radius in (0.01, 0.1):
            res = {}
            for route in ("ipm", "clarabel", "prox"):
                reps = 1 if route == "prox" else repeat
                res[route] = _best_of(
                    lambda: RobustFeatureSVC(radius=radius, solver=route, random_state=0).fit(
                        X, y, Sigma=np.ones(X.shape[1])
                    ),
                    reps,
                )
            fastest = min(v[0] for r, v in res.items() if r != "prox")
            for route, (t, est) in res.items():
                st = est.solver_stats_ if est is not None else {"status": "fail", "gap_rel": np.inf}
                print(
                    f"{rows:<24} {radius:>6g} {route:>9} {t:>8.2f} {st['status']:>9} {st['gap_rel']:>9.1e} "
                    f"{t / fastest:>9.2f}"
                )


def _warm_up():
    """One fit of each route first: the compiled kernels' loading is not the routes' cost."""
    from rsvm_conic.estimators import NominalSVC, RobustFeatureSVC

    X, y = _data("wine")
    for route in ("libsvm", "ipm"):
        NominalSVC(solver=route).fit(X, y)
    RobustFeatureSVC(n_components=10, random_state=0).fit(X, y)


def run(quick: bool = False) -> int:
    from threadpoolctl import threadpool_limits

    repeat = 1 if quick else 3
    print(f"auto-route choices, measured side by side; {os.cpu_count()} cores, one BLAS thread, best of {repeat}\n")
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _warm_up()
        _nominal(quick, repeat)
        _feature(quick, repeat)
    return 0


BENCHMARKS = {"auto-routes": run}
