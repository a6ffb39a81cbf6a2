"""Benchmark: the hyperbolic machine ([ElD19, chapter 3]) on scikit-learn's class-weight check, per CCP route and
step accuracy: why ``HyperbolicSVC(solver="ipm")`` is not the automatic route.

``rsvm-conic bench hyperbolic-class-weight`` fits ``HyperbolicSVC()``'s model (its features, ``gamma="auto"``, three
starts, at most 1000 CCP steps as the check sets) on the check's data (``make_blobs(centers=C, cluster_std=20,
random_state=0)``, half for training, class weights ``1000 : 1e-4``) by the ``ccp`` route (each step by CVXPY +
Clarabel at the CCP's settings ``solvers.ccp.CLARABEL_CCP``, and at ``1e-11``), by ``ipm`` (each step by the structured
interior point) and by the plain (unboosted) ``ipm``.  Each row: every start's final objective, CCP steps and stopping
reason, the best start's share of test points predicted class 0 (the check needs more than 0.87) and its training
accuracy on class 0 and on the other classes.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["run"]

#: (label, route, options): the routes compared
ROUTES = (
    ("ccp (Clarabel 1e-7)", "ccp", {}),
    ("ccp (Clarabel 1e-11)", "ccp", {"tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11, "tol_feas": 1e-10}),
    ("ipm", "ipm", {}),
    ("ipm, boost=0", "ipm", {"boost": 0.0}),
)


def _check_data(n_centers):
    from sklearn.datasets import make_blobs
    from sklearn.model_selection import train_test_split

    from rsvm_conic.estimators import HyperbolicSVC
    from rsvm_conic.estimators.multiclass import multiclass_weights
    from rsvm_conic.formulations.hyperbolic import HyperbolicProblem

    X, y = make_blobs(centers=n_centers, random_state=0, cluster_std=20)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=0)
    class_weight = {0: 1000.0, **{k: 1e-4 for k in range(1, n_centers)}}
    est = HyperbolicSVC(class_weight=class_weight, max_iter=0, n_starts=1).fit(Xtr, ytr)  # the features only
    codes = np.searchsorted(est.classes_, ytr)
    weights = multiclass_weights(codes, est.classes_, None, class_weight)
    machine = HyperbolicProblem(
        est._map(Xtr), codes, est.classes_.size, gamma=est.gamma_, lam=est.lam, sample_weight=weights
    )
    return machine, est._map(Xte), codes


def run(quick: bool = False) -> int:
    from threadpoolctl import threadpool_limits

    head = (
        f"{'C':>2} {'route':<21} {'objective per start':<36} {'steps':<10} {'stops':<34} {'test -> 0':>9} "
        f"{'train acc 0 / others':>20}"
    )
    print(head)
    print("-" * len(head))
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")
        for n_centers in (2,) if quick else (2, 3):
            machine, Phi_test, codes = _check_data(n_centers)
            for label, route, options in ROUTES:
                sol = machine.solve(route, n_starts=3, max_iter=1000, tol=1e-4, random_state=0, **options)
                finals = " ".join(f"{h[-1]:.4f}" if h[-1] >= 1 else f"{h[-1]:.5g}" for h in sol.info["histories"])
                steps = "/".join(str(len(h)) for h in sol.info["histories"])
                stops = "/".join(sol.info["stops"])
                share = float(np.mean(machine.predict(sol, Phi_test) == 0))
                train = machine.predict(sol, machine.Phi)
                acc0 = float(np.mean(train[codes == 0] == 0))
                acc_other = float(np.mean(train[codes != 0] == codes[codes != 0]))
                print(
                    f"{n_centers:>2} {label:<21} {finals:<36} {steps:<10} {stops:<34} {share:>9.2f} "
                    f"{acc0:>10.2f} / {acc_other:.2f}"
                )
    return 0


BENCHMARKS = {"hyperbolic-class-weight": run}
