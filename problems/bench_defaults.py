"""Benchmark: each estimator's *default* fit against the fastest certified route and scikit-learn.

For every case, measured side by side in one run (best of 3, one BLAS thread each):

* ``default`` -- ``Estimator().fit`` with ``solver="auto"`` (the route it picked is printed);
* ``fastest`` -- every exact route of the formulation's backend table timed on the same data
  (routes that fail to certify are shown as such), and the fastest certified one;
* ``sklearn`` -- scikit-learn's closest estimator on the same data (``SVC(kernel="linear")`` and
  ``LinearSVC``; for the robust models these solve the nominal problem: same size, another model);
* the certified relative gap of the default fit, and for the per-sample interior point the share
  of the fit spent outside the solver.

Goal: every default within 1.5x of the fastest certified route; the per-sample interior point
spends < 10% of its time outside the solver.  ``rsvm-conic bench defaults [--quick]``.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC

from rsvm_conic.datasets.synthetic import make_uncertain_classification
from rsvm_conic.estimators import ChanceConstrainedSVC, NominalSVC, RobustSVC
from rsvm_conic.solvers.conic import SolverError


def _best_of(fn, repeat=3):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = fn()
        elapsed = time.perf_counter() - t0
        if elapsed < best:
            best, out = elapsed, res
    return best, out


def _cases(quick):
    Xc, yc = load_breast_cancer(return_X_y=True)
    Xc = StandardScaler().fit_transform(Xc)
    L = 4000 if quick else 20000
    Xs, ys, Sig, grp = make_uncertain_classification(L, 20, separation=1.0, random_state=0)
    Xo, yo, *_ = make_uncertain_classification(1850 if quick else 7400, 20, separation=0.5, random_state=1)
    diag = np.tile(np.linspace(0.05, 0.3, 20), (L, 1))  # one diagonal ellipsoid per sample
    return [
        ("NominalSVC()", lambda **kw: NominalSVC(**kw), Xc, yc, {}),
        ("NominalSVC(C=100), overlapping", lambda **kw: NominalSVC(C=100, **kw), Xo, yo, {}),
        ("NominalSVC(C=1e12)", lambda **kw: NominalSVC(C=1e12, **kw), Xc, yc, {}),
        ("RobustSVC(), 2 ellipsoids", lambda **kw: RobustSVC(**kw), Xs, ys, dict(Sigma=Sig, groups=grp)),
        ("RobustSVC(norm=inf, radius=0.1)", lambda **kw: RobustSVC(norm=np.inf, radius=0.1, **kw), Xc, yc, {}),
        ("RobustSVC(radius=0.2), per-sample", lambda **kw: RobustSVC(radius=0.2, **kw), Xs, ys,
         dict(Sigma=diag, groups="sample")),
        ("ChanceConstrainedSVC(gaussian, 0.2)",
         lambda **kw: ChanceConstrainedSVC(distribution="gaussian", epsilon=0.2, **kw), Xc, yc, {}),
    ]


def run(quick: bool = False) -> int:
    from threadpoolctl import threadpool_limits

    print(f"defaults vs fastest certified route vs scikit-learn; {os.cpu_count()} cores, one BLAS thread, "
          "best of 3")
    head = (f"{'case':<36} {'default':>8} {'route':>8} {'gap':>8} {'fastest':>8} {'route':>8} {'ratio':>6} "
            f"{'SVC':>8} {'LinSVC':>8} {'outside':>8}")
    print(head)
    print("-" * len(head))
    worst = 0.0
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, make, X, y, fit_kw in _cases(quick):
            t_def, est = _best_of(lambda: make().fit(X, y, **fit_kw))
            stats = est.solver_stats_
            routes = {}
            for route in est._formulation.BACKENDS:
                if route in ("sgd", "prox", "scs"):
                    continue  # first-order routes certify 1e-3 / are slower; the exact routes set the bar
                try:
                    routes[route], _ = _best_of(lambda: make(solver=route).fit(X, y, **fit_kw))
                except (SolverError, ValueError):
                    routes[route] = np.inf
            fastest = min(routes, key=routes.get)
            t_svc, _ = _best_of(lambda: SVC(kernel="linear", C=min(est.C, 1e3), max_iter=10**6).fit(X, y), 1)
            t_lin, _ = _best_of(lambda: LinearSVC(C=min(est.C, 1e3), dual="auto", max_iter=10**5).fit(X, y), 1)
            outside = ""
            if stats.get("route") == "ipm" and stats.get("solve_time"):
                outside = f"{1 - stats['solve_time'] / t_def:.0%}"
            ratio = t_def / routes[fastest]
            worst = max(worst, ratio)
            print(f"{name:<36} {t_def:>8.3f} {stats['route']:>8} {stats['gap_rel']:>8.1e} {routes[fastest]:>8.3f} "
                  f"{fastest:>8} {ratio:>6.2f} {t_svc:>8.3f} {t_lin:>8.3f} {outside:>8}")
    print(f"\nworst default / fastest certified route: {worst:.2f} (goal <= 1.5); SVC/LinSVC columns solve the "
          "nominal problem at min(C, 1e3) (LinSVC: liblinear, not certified)")
    return 0


BENCHMARKS = {"defaults": run}
