"""Benchmark: the hyperbolic machine ([ElD19, chapter 3]) with its CCP steps by the structured interior point
(``HyperbolicSVC(solver="ipm")``) and by first-order steps (``solver="fista"``), before and after the boosted CCP
([AFV18]) and its stopping rule, with exact and with inexact, screened interior-point steps, beside ``SVC()`` and the
nearest-class-mean rule in the same feature space.

``rsvm-conic bench hyperbolic [--quick]`` prints one row per data set and configuration: 300 digits (trained on the
first 300 rows, tested on the other 1497), the full digits (1797 rows, training accuracy; not with ``--quick``) and iris
(150 rows, training accuracy). The configurations: ``ipm-plain`` (the plain CCP with the former settings: ``boost=0``,
at most 30 steps per start, ``tol=1e-6``), ``ipm`` and ``fista`` (the estimator's defaults: ``tol=1e-4``, at most 30
steps; ``ipm`` boosted, with inexact steps and screened starts, ``fista`` not boosted, its steps being inexact),
``ipm-exact`` (the ``ipm`` default with every step solved to the interior point's tight tolerance and every start run to
``tol``: ``step_accuracy="exact"``), ``ipm-warm`` (the default with each step's interior point warm-started from the
previous step's point: ``HyperbolicProblem.solve("ipm", warm=True)`` on the estimator's features, its time that of the
CCP alone) and, on the full digits, the automatic route (``anchors`` beyond 1000 rows, not boosted; inexact warm-started
steps, screened starts) and ``anchors-exact`` (the same route with exact cold steps and every start to ``tol``:
``step_accuracy="exact"``). Each row: the fit's time, training / test accuracy, the objective, the median certified gap
of its convex steps (in units of the objective), the time ratio to ``ipm-plain`` and to ``ipm-exact`` measured in the
same run, the interior-point iterations over all steps and starts (``its``), ``SVC()``'s time and accuracy, the
nearest-class-mean rule's accuracy (``HyperbolicSVC(max_iter=0, n_starts=1)``: the CCP's first start, in the same
feature space), and the CCP steps and stopping reason of every start. Without ``--quick`` it also fits the 300 digits
with the SOCP steps (``solver="ccp"``, the automatic route at this size) before and after. Times are wall-clock seconds
of one fit each (after a warm-up fit that compiles the numba kernels); on a loaded machine read the ratios, measured
side by side.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

__all__ = ["run"]

#: the former defaults: the plain CCP, 30 steps at most per start, tolerance 1e-6
PLAIN = dict(boost=0.0, max_iter=30, tol=1e-6)


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


#: the CCP of ``HyperbolicSVC(solver="ipm")`` with other options of ``HyperbolicProblem.solve("ipm")``: warm-started
#: steps (``ipm-warm``)
MACHINE = {"ipm-warm": dict(warm=True)}


class _Machine:
    """``HyperbolicSVC(solver="ipm")``'s CCP with the options ``options``, on the features of the estimator ``base``
    (fitted to ``X``, ``y``) and with the CCP settings of ``settings``."""

    def __init__(self, base, settings, X, y, options):
        from rsvm_conic.formulations.hyperbolic import HyperbolicProblem

        self.base, self.settings, self.options, self.solver_ = base, settings, options, "ipm"
        codes = np.searchsorted(base.classes_, y)
        self.machine = HyperbolicProblem(base._train_features(X), codes, base.classes_.size, base.gamma_, base.lam)

    def fit(self, X, y):
        """The CCP on the features of ``X`` (those the estimator was fitted on)."""
        b = self.settings
        self.sol = self.machine.solve(
            "ipm", n_starts=b.n_starts, max_iter=b.max_iter, tol=b.tol, random_state=b.random_state, **self.options
        )
        self.solver_stats_, self.objective_ = self.sol.info, self.sol.objective
        self.histories_, self.stops_ = self.sol.info["histories"], self.sol.info["stops"]
        return self

    def predict(self, X):
        return self.base.classes_[self.machine.predict(self.sol, self.base._map(X))]


def _configs(name, quick):
    configs = [
        ("ipm-plain", dict(solver="ipm", **PLAIN)),
        ("ipm-exact", dict(solver="ipm", step_accuracy="exact")),
        ("ipm-warm", None),
        ("ipm", dict(solver="ipm")),
        ("fista", dict(solver="fista")),
    ]
    if not quick and name == "digits-300":
        configs += [("ccp-plain", dict(solver="ccp", **PLAIN)), ("ccp", dict(solver="ccp"))]
    if name == "digits-1797":
        configs += [("anchors-exact", dict(step_accuracy="exact")), ("auto", {})]
    return configs


def run(quick: bool = False) -> int:
    from sklearn.svm import SVC

    from rsvm_conic.estimators import HyperbolicSVC

    names = ("digits-300", "iris") if quick else ("digits-300", "digits-1797", "iris")
    head = (
        f"{'data':<12} {'config':<10} {'route':<8} {'fit [s]':>8} {'/plain':>7} {'/exact':>7} {'its':>5} "
        f"{'train':>6} {'test':>6} "
        f"{'objective':>10} {'step gap':>9} {'SVC [s]':>8} {'SVC tr':>6} {'SVC te':>6} {'NCM tr':>6} {'NCM te':>6}"
        "  steps per start; stops"
    )
    print(
        "HyperbolicSVC before (plain CCP; exact steps) and after (boosted, tol=1e-4; inexact steps, screened starts) "
        "vs SVC() and the nearest class mean"
    )
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
            t_plain = t_exact = None
            for label, kw in _configs(name, quick):
                if kw is None:  # the CCP alone, on the features of the default's estimator
                    machine = _Machine(HyperbolicSVC(max_iter=0).fit(X, y), HyperbolicSVC(), X, y, MACHINE[label])
                    t_h, h = _fit(lambda: machine, X, y)
                else:
                    t_h, h = _fit(lambda: HyperbolicSVC(**kw), X, y)
                t_plain = t_h if label == "ipm-plain" else t_plain
                t_exact = t_h if label == "ipm-exact" else t_exact
                gaps = [g for run in h.solver_stats_.get("step_gaps", []) for g in run]
                its = sum(sum(run) for run in h.solver_stats_.get("step_iterations", []))
                steps = "/".join(str(len(hist) - 1) for hist in h.histories_)
                print(
                    f"{name:<12} {label:<10} {h.solver_:<8} {t_h:>8.2f} {t_h / t_plain:>7.2f} "
                    f"{t_h / t_exact if t_exact else float('nan'):>7.2f} {its:>5d} {_acc(h, X, y):>6.3f} "
                    f"{_acc(h, Xt, yt):>6.3f} {h.objective_:>10.4f} {np.median(gaps) if gaps else float('nan'):>9.2e} "
                    f"{t_s:>8.4f} {_acc(s, X, y):>6.3f} {_acc(s, Xt, yt):>6.3f} {_acc(ncm, X, y):>6.3f} "
                    f"{_acc(ncm, Xt, yt):>6.3f}  {steps}; {','.join(h.stops_)}",
                    flush=True,
                )
    print("\ngoals: 300 digits <= 3 s, full digits <= 20 s; accuracy >= the nearest class mean's")
    return 0


BENCHMARKS = {"hyperbolic": run}
