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
spends < 10% of its time outside the solver.

A second table (:func:`peer_table`) puts every public estimator's default fit beside scikit-learn's closest estimator
and beside a named floor the model itself imposes, each measured in the same run (one BLAS thread, best of 2; breast
cancer 569 x 30 standardised, digits 1797 x 64 / 16): the nominal problem by the same interior point for the robust
linear models and the random-feature model, reading the S kernel samples once, the eigendecompositions of the model's
PSD projections (the mean kernel's, when it is not positive definite, and beta's) and one libsvm solve on the mean
for the kernel-matrix model, the number of lower-level solves times one ``LinearSVC`` fit of the lower level's size
for the safe SVM, the kernel's Cholesky rows plus ``LinearSVC(multi_class="crammer_singer")`` on them (a joint
multi-class SVM on the same rows) for Weston-Watkins, the Gram matrix once for the hyperbolic machine. Goal: within
10x of the peer or within 1.5x of the floor.
``rsvm-conic bench defaults [--quick]``.
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


def _best_of(fn, repeat=3, long=30.0):
    """The best time of ``repeat`` calls of ``fn`` (one call when the first takes over ``long`` seconds) and the
    result of the best."""
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = fn()
        elapsed = time.perf_counter() - t0
        if elapsed < best:
            best, out = elapsed, res
        if elapsed > long:
            break
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


def _class_covariances(X, y, scale=0.1):
    """One covariance per class, ``scale**2`` times the class's own (and the class index of each sample)."""
    classes, index = np.unique(y, return_inverse=True)
    return np.stack([scale**2 * np.cov(X[index == k], rowvar=False) for k in range(len(classes))]), index


def _peer_cases(quick):
    """The rows of :func:`peer_table`: (name, data label, default fit, route of the fit, peer name, peer fit,
    floor name, floor fit)."""
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.model_selection import GridSearchCV

    from rsvm_conic._validation import shifted_cholesky_ok
    from rsvm_conic.estimators.path import default_radii
    from rsvm_conic.estimators import (
        HyperbolicSVC,
        RobustFeatureSVC,
        RobustSVCCV,
        SafeSVC,
        WassersteinSVC,
        WassersteinSVCCV,
    )
    from rsvm_conic.kernels.rbf import gaussian_kernel, thesis_sigma
    from rsvm_conic.solvers.multiclass.certificate import gram_rows

    Xc, yc = load_breast_cancer(return_X_y=True)
    Xc = StandardScaler().fit_transform(Xc)
    Xd, yd = load_digits(return_X_y=True)
    Xd = Xd / 16.0
    if quick:
        Xd, yd = Xd[:600], yd[:600]
    Sig, idx = _class_covariances(Xc, yc)
    cov = dict(Sigma=Sig, sigma_index=idx)
    nominal_ipm = lambda: NominalSVC(solver="ipm").fit(Xc, yc)  # noqa: E731
    bc, dg = f"breast cancer {Xc.shape[0]}x{Xc.shape[1]}", f"digits {Xd.shape[0]}x{Xd.shape[1]}"
    svc_lin = ("SVC(kernel='linear')", lambda: SVC(kernel="linear").fit(Xc, yc))
    lin = ("LinearSVC()", lambda: LinearSVC().fit(Xc, yc))
    rows = [
        ("NominalSVC()", bc, lambda: NominalSVC().fit(Xc, yc), *svc_lin, "one libsvm solve", svc_lin[1]),
        ("RobustSVC(), one covariance per class", bc, lambda: RobustSVC().fit(Xc, yc, **cov), *lin,
         "the nominal SVM by the same interior point", nominal_ipm),
        ("ChanceConstrainedSVC()", bc, lambda: ChanceConstrainedSVC().fit(Xc, yc), *lin,
         "the nominal SVM by the same interior point", nominal_ipm),
    ]  # fmt: skip
    # random features: the map and the nominal SVM on its features by the same interior point
    fmap = RobustFeatureSVC(random_state=0).fit(Xc, yc).feature_map_
    rows.append(
        ("RobustFeatureSVC()", bc, lambda: RobustFeatureSVC(random_state=0).fit(Xc, yc), "SVC()",
         lambda: SVC().fit(Xc, yc), "the map + the nominal SVM on it by the same interior point",
         lambda: NominalSVC(solver="ipm").fit(fmap.transform(Xc), yc))
    )  # fmt: skip
    data = make_bhadra2010(3, "gaussian", n_per_class=100, n_samples=20, symmetric=True)
    Kbar = data.K_samples.mean(axis=0)
    beta = KernelRobustSVC().fit(data.K_samples, data.y).formulation_.beta  # the fit's beta (symmetrised)

    def kernel_floor():  # what the model's definition makes any fit compute, each by the fastest numpy call
        mean = data.K_samples.mean(axis=0)  # the samples read once
        mean = 0.5 * (mean + mean.T)
        if not shifted_cholesky_ok(mean, 0.0):  # K_bar: the mean's projection onto the PSD cone
            np.linalg.eigh(mean)
        np.linalg.eigh(beta)  # beta_hat: the PSD part of beta
        return SVC(kernel="precomputed").fit(mean, data.y)

    rows.append(
        ("KernelRobustSVC(), 20 kernel samples", f"[BBBB10] n={data.y.shape[0]}",
         lambda: KernelRobustSVC().fit(data.K_samples, data.y), "SVC(kernel='precomputed')",
         lambda: SVC(kernel="precomputed").fit(Kbar, data.y),
         "the S kernel samples read once + the eigendecompositions of the model's two PSD projections (mean "
         "kernel, beta) + one libsvm solve on the mean", kernel_floor)
    )  # fmt: skip
    Xp, yp = make_classification(2000, 20, flip_y=0.1, random_state=0)
    Xp = StandardScaler().fit_transform(Xp)
    sig = float(np.sqrt(Xp.shape[1]))
    svc_p = lambda: SVC(kernel="rbf", gamma=1 / (2 * sig**2)).fit(Xp, yp)  # noqa: E731
    rows.append(
        ("PkSVC(sigma), no covariances", "make_classification 2000x20", lambda: PkSVC(sigma=sig).fit(Xp, yp),
         "SVC()", svc_p, "one libsvm solve", svc_p)
    )  # fmt: skip
    # safe SVM: every lower-level solve is at least a linear SVM of the training split's size
    n_train = int(np.ceil(0.7 * Xc.shape[0]))

    def safe_floor(solves):
        return lambda: [LinearSVC().fit(Xc[:n_train], yc[:n_train]) for _ in range(solves)]

    rows.append(
        ("SafeSVC()", bc, lambda: SafeSVC(random_state=0).fit(Xc, yc), "LinearSVC()", lin[1],
         "lower-level solves x one LinearSVC() of the training split", safe_floor)
    )  # fmt: skip
    sd = thesis_sigma(Xd.shape[1])

    def ww_floor():
        F, _ = gram_rows(gaussian_kernel(Xd, Xd, sd))
        return LinearSVC(multi_class="crammer_singer").fit(F, yd)

    rows.append(
        ("WestonWatkinsSVC()", dg, lambda: WestonWatkinsSVC().fit(Xd, yd), "SVC()", lambda: SVC().fit(Xd, yd),
         "the kernel's Cholesky rows + LinearSVC(crammer_singer) on them", ww_floor)
    )  # fmt: skip
    # the Wasserstein SVM: an LP/SOCP of the robust SVM's shape, by its own structured interior point
    rows.append(
        ("WassersteinSVC()", bc, lambda: WassersteinSVC().fit(Xc, yc), *lin,
         "the nominal SVM by the robust SVM's interior point", nominal_ipm)
    )  # fmt: skip
    # the CV estimators: 5 folds x 10 radii along warm-started paths, against scikit-learn's path CV estimator
    # and, as the floor, the same grid by GridSearchCV with cold fits
    lrcv = ("LogisticRegressionCV(Cs=10)", lambda: LogisticRegressionCV(Cs=10).fit(Xc, yc))
    grid = "GridSearchCV over the same grid (cold fits)"

    def radii(est, **fit_kw):  # the CV estimators' default grid (best of 2 times the second, cached call)
        key = type(est).__name__
        if key not in grids:
            grids[key] = list(default_radii(est, Xc, yc, n_radii=10, **fit_kw))
        return grids[key]

    grids = {}
    rows.append(
        ("RobustSVCCV()", bc, lambda: RobustSVCCV().fit(Xc, yc, **cov), *lrcv, grid,
         lambda: GridSearchCV(RobustSVC(), {"radius": radii(RobustSVC(), **cov)}).fit(Xc, yc, **cov))
    )  # fmt: skip
    rows.append(
        ("WassersteinSVCCV()", bc, lambda: WassersteinSVCCV().fit(Xc, yc), *lrcv, grid,
         lambda: GridSearchCV(WassersteinSVC(), {"radius": radii(WassersteinSVC())}).fit(Xc, yc))
    )  # fmt: skip
    Xh, yh = (Xd[:100], yd[:100]) if quick else (Xd[:300], yd[:300])
    rows.append(
        ("HyperbolicSVC()", f"digits {Xh.shape[0]}x64", lambda: HyperbolicSVC().fit(Xh, yh), "SVC()",
         lambda: SVC().fit(Xh, yh), "the RBF Gram matrix, once",
         lambda: gaussian_kernel(Xh, Xh, thesis_sigma(Xh.shape[1])))
    )  # fmt: skip
    return rows


PEER_GOALS = {"peer": 10.0, "floor": 1.5}


def peer_table(quick: bool = False) -> tuple[list[str], bool]:
    """Markdown rows: each public estimator's default fit beside scikit-learn's closest estimator and a named floor
    the model imposes, all in this run (one BLAS thread, best of 2); returns (rows, goals met).

    Parameters
    ----------
    quick : bool, default False
        600 digits instead of 1797, 100 for the hyperbolic machine instead of 300.

    Returns
    -------
    rows : list of str
    ok : bool
        Whether every row is within ``PEER_GOALS["peer"]`` of its peer or ``PEER_GOALS["floor"]`` of its floor.
    """
    from threadpoolctl import threadpool_limits

    results = []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, data, fit, peer, peer_fit, floor, floor_fit in _peer_cases(quick):
            t_fit, est = _best_of(fit, 2)
            fitted = getattr(est, "best_estimator_", est)  # a CV estimator: the refit's route and gap
            stats = getattr(fitted, "solver_stats_", None) or {"route": getattr(fitted, "solver_", "?")}
            if name == "SafeSVC()":  # the floor depends on the fit's number of lower-level solves
                solves = int(est.bilevel_.certificate.detail["lower_solves"])
                floor_fit, floor = floor_fit(solves), f"{solves} {floor}"
            results.append(
                dict(name=name, data=data, time=t_fit, route=stats.get("route"), gap=stats.get("gap_rel", np.nan),
                     iterations=stats.get("iterations"),
                     peer=peer, peer_time=_best_of(peer_fit, 2)[0], floor=floor, floor_time=_best_of(floor_fit, 2)[0])
            )  # fmt: skip
    return peer_rows(results)


def peer_rows(results: list[dict]) -> tuple[list[str], bool]:
    """The table of :func:`peer_table` from its measurements; returns (rows, goals met).

    Parameters
    ----------
    results : list of dict
        One per fit: ``name``, ``data``, ``time``, ``route``, ``gap``, ``peer``, ``peer_time``, ``floor``,
        ``floor_time`` (seconds), optionally ``iterations`` (the route's, printed beside it).

    Returns
    -------
    rows : list of str
    ok : bool
    """
    rows = [
        "| default fit | data | time | route, gap | closest scikit-learn | its time | ratio | floor | floor time "
        "| / floor | goal |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ok = True
    for r in results:
        ratio, over = r["time"] / r["peer_time"], r["time"] / r["floor_time"]
        good = ratio <= PEER_GOALS["peer"] or over <= PEER_GOALS["floor"]
        ok &= good
        its = r.get("iterations")
        route = f"{r['route']} ({its} it)" if isinstance(its, (int, np.integer)) else r["route"]
        rows.append(
            f"| `{r['name']}` | {r['data']} | {r['time']:.3f} s | {route}, {r['gap']:.1e} | `{r['peer']}` | "
            f"{r['peer_time']:.4f} s | {ratio:.1f} | {r['floor']} | {r['floor_time']:.4f} s | {over:.2f} | "
            f"{'pass' if good else 'miss'} |"
        )
    return rows, ok


def run(quick: bool = False) -> int:
    from threadpoolctl import threadpool_limits

    rows, ok = peer_table(quick)
    print(
        f"### Default fits against scikit-learn's closest estimator and a named floor ({os.cpu_count()} cores, load "
        f"average {os.getloadavg()[0]:.2f}, one BLAS thread, best of 2)\n\n" + "\n".join(rows),
        flush=True,
    )
    print(
        f"\ngoal: within {PEER_GOALS['peer']:.0f}x of the peer or {PEER_GOALS['floor']}x of the floor; all met: {ok}\n",
        flush=True,
    )

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
