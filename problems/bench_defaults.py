"""Benchmark: each estimator's *default* fit against the fastest certified route and scikit-learn.

For every estimator with a ``solver`` (linear, kernel-matrix, Weston-Watkins) and for PkSVC,
measured side by side in one run (best of 3, one BLAS thread each):

* ``default`` -- ``Estimator().fit`` with ``solver="auto"`` (the route it picked is printed);
* ``fastest`` -- every exact route of the formulation's backend table timed on the same data
  (routes that fail to certify are shown as such), and the fastest certified one;
* ``sklearn`` -- scikit-learn's closest estimator on the same data (``SVC(kernel="linear")`` and
  ``LinearSVC``; for the robust models these solve the nominal problem: same size, another model;
  ``SVC(kernel="precomputed")`` on the mean kernel for the kernel-matrix SVMs, ``SVC(kernel="rbf")`` and
  ``LinearSVC(multi_class="crammer_singer")`` for Weston-Watkins, ``SVC(kernel="rbf")`` for PkSVC);
  scikit-learn's solvers are not certified (libsvm stops on a KKT tolerance, with a single-precision
  kernel cache);
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
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC

from rsvm_conic.datasets.bhadra2010 import make_bhadra2010
from rsvm_conic.datasets.synthetic import make_uncertain_classification
from rsvm_conic.estimators import ChanceConstrainedSVC, KernelRobustSVC, NominalSVC, PkSVC, RobustSVC, WestonWatkinsSVC
from rsvm_conic.exceptions import SolverError


def _best_of(fn, repeat=3):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = fn()
        elapsed = time.perf_counter() - t0
        if elapsed < best:
            best, out = elapsed, res
    return best, out


def _linear_peers(X, y, C):
    C = min(C, 1e3)
    return {
        "SVC": lambda: SVC(kernel="linear", C=C, max_iter=10**6).fit(X, y),
        "LinearSVC": lambda: LinearSVC(C=C, dual="auto", max_iter=10**5).fit(X, y),
    }


def _linear_case(name, make, X, y, fit_kw, C):
    routes = [r for r in make()._formulation.BACKENDS if r not in ("sgd", "prox", "scs")]
    return dict(name=name, make=make, X=X, y=y, fit_kw=fit_kw, routes=routes, peers=_linear_peers(X, y, C))


def _cases(quick):
    Xc, yc = load_breast_cancer(return_X_y=True)
    Xc = StandardScaler().fit_transform(Xc)
    L = 4000 if quick else 20000
    Xs, ys, Sig, grp = make_uncertain_classification(L, 20, separation=1.0, random_state=0)
    Xo, yo, *_ = make_uncertain_classification(1850 if quick else 7400, 20, separation=0.5, random_state=1)
    diag = np.tile(np.linspace(0.05, 0.3, 20), (L, 1))  # one diagonal ellipsoid per sample
    eye = dict(Sigma=np.ones(Xc.shape[1]))  # the identity: a radius in the units of X
    cases = [
        _linear_case("NominalSVC()", lambda **kw: NominalSVC(**kw), Xc, yc, {}, 1.0),
        _linear_case("NominalSVC(C=100), overlapping", lambda **kw: NominalSVC(C=100, **kw), Xo, yo, {}, 100.0),
        _linear_case("NominalSVC(C=1e12)", lambda **kw: NominalSVC(C=1e12, **kw), Xc, yc, {}, 1e12),
        _linear_case(
            "RobustSVC(), 2 ellipsoids", lambda **kw: RobustSVC(**kw), Xs, ys, dict(Sigma=Sig, sigma_index=grp), 1.0
        ),
        _linear_case(
            "RobustSVC(norm=inf, radius=0.1)",
            lambda **kw: RobustSVC(norm=np.inf, radius=0.1, **kw),
            Xc,
            yc,
            eye,
            1.0,
        ),
        _linear_case(
            "RobustSVC(radius=0.2), per-sample",
            lambda **kw: RobustSVC(radius=0.2, **kw),
            Xs,
            ys,
            dict(Sigma=diag, sigma_index="sample"),
            1.0,
        ),
        _linear_case(
            "ChanceConstrainedSVC(gaussian, 0.2)",
            lambda **kw: ChanceConstrainedSVC(distribution="gaussian", epsilon=0.2, **kw),
            Xc,
            yc,
            eye,
            1.0,
        ),
    ]
    # uncertain kernel matrices [BBBB10, Sec. 5.1 data], fitted from symmetric samples
    data = make_bhadra2010(3, "gaussian", n_per_class=100 if quick else 300, n_samples=50, symmetric=True)
    Kbar = data.K_samples.mean(axis=0)
    svc_pre = {"SVC": lambda: SVC(kernel="precomputed", C=1.0).fit(Kbar, data.y)}
    cases += [
        dict(
            name="KernelRobustSVC() (socp), samples",
            make=lambda **kw: KernelRobustSVC(**kw),
            X=data.K_samples,
            y=data.y,
            fit_kw={},
            routes=["newton", "ipm", "clarabel"],
            peers=svc_pre,
        ),
        dict(
            name="KernelRobustSVC(method='qp'), samples",
            make=lambda **kw: KernelRobustSVC(method="qp", **kw),
            X=data.K_samples,
            y=data.y,
            fit_kw={},
            routes=["libsvm", "clarabel"],
            peers=svc_pre,
        ),
    ]
    # multi-class [ElD19]: digits, 10 classes; auto -> cd (exact), alm, the dual QP and the primal L-BFGS beside it
    Xd, yd = load_digits(return_X_y=True)
    nd = 300 if quick else 600
    Xd = StandardScaler().fit_transform(Xd[:nd])
    yd = yd[:nd]
    cases.append(
        dict(
            name=f"WestonWatkinsSVC(), digits {nd}x10",
            make=lambda **kw: WestonWatkinsSVC(**kw),
            X=Xd,
            y=yd,
            fit_kw={},
            routes=["cd", "alm", "dual", "primal"],
            peers={
                "SVC": lambda: SVC(kernel="rbf", gamma=1.0 / (2 * 5 * Xd.shape[1])).fit(Xd, yd),
                "LinearSVC": lambda: LinearSVC(multi_class="crammer_singer", max_iter=10**5).fit(Xd, yd),
            },
        )
    )
    # Gaussian points without covariances: PkSVC routes to libsvm's rbf kernel, polished and certified
    Xp, yp = make_classification(2000 if quick else 8000, 20, flip_y=0.1, random_state=0)
    Xp = StandardScaler().fit_transform(Xp)
    sig = float(np.sqrt(Xp.shape[1]))
    cases.append(
        dict(
            name="PkSVC(C=100), no covariances",
            make=lambda **kw: PkSVC(C=100.0, sigma=sig),
            X=Xp,
            y=yp,
            fit_kw={},
            routes=[],
            peers={"SVC": lambda: SVC(kernel="rbf", gamma=1 / (2 * sig**2), C=100.0).fit(Xp, yp)},
        )
    )
    return cases


def run(quick: bool = False) -> int:
    from threadpoolctl import threadpool_limits

    print(f"defaults vs fastest certified route vs scikit-learn; {os.cpu_count()} cores, one BLAS thread, best of 3")
    head = (
        f"{'case':<38} {'default':>8} {'route':>18} {'gap':>8} {'fastest':>8} {'route':>9} {'ratio':>6} "
        f"{'SVC':>8} {'LinSVC':>8} {'outside':>8}"
    )
    print(head)
    print("-" * len(head))
    worst = 0.0
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in _cases(quick):
            make, X, y, fit_kw = case["make"], case["X"], case["y"], case["fit_kw"]
            t_def, est = _best_of(lambda: make().fit(X, y, **fit_kw))
            stats = est.solver_stats_
            routes = {"default": t_def}
            for route in case["routes"]:
                try:
                    routes[route], _ = _best_of(lambda: make(solver=route).fit(X, y, **fit_kw))
                except (SolverError, ValueError):
                    routes[route] = np.inf  # the route does not certify this instance
            fastest = min(routes, key=routes.get)
            peers = {k: _best_of(fn, 1)[0] for k, fn in case["peers"].items()}
            outside = ""
            if stats.get("route") == "ipm" and stats.get("solve_time"):
                outside = f"{1 - stats['solve_time'] / t_def:.0%}"
            ratio = t_def / routes[fastest]
            worst = max(worst, ratio)
            print(
                f"{case['name']:<38} {t_def:>8.3f} {str(stats['route'])[-18:]:>18} {stats['gap_rel']:>8.1e} "
                f"{routes[fastest]:>8.3f} {fastest:>9} {ratio:>6.2f} {peers.get('SVC', np.nan):>8.3f} "
                f"{peers.get('LinearSVC', np.nan):>8.3f} {outside:>8}"
            )
    print(
        f"\nworst default / fastest certified route: {worst:.2f} (goal <= 1.5).  Peers (not certified, other "
        "models for the robust rows): linear rows SVC(kernel='linear') and LinearSVC at min(C, 1e3); kernel-matrix "
        "rows SVC on the mean kernel; WW rows SVC(rbf, one-vs-one) and LinearSVC(crammer_singer); PkSVC: SVC(rbf) "
        "at scikit-learn's tol = 1e-3"
    )
    return 0


BENCHMARKS = {"defaults": run}
