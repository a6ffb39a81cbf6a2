"""Benchmark: ``WassersteinSVC``'s default route against the same model through CVXPY + Clarabel and the ``dro``
package's Wasserstein SVM.

Data: two overlapping Gaussian classes (seeded), ``L = 20000`` samples of ``n = 50`` standardised features
(``--quick``: 2000 x 20), radius 0.05.  Timed side by side in one run, best of 2 (1 at full size), after one
untimed fit of ours (which compiles the interior point's cone kernels at this size, once per machine):

* ``ours`` -- ``WassersteinSVC()``'s default ``solver="auto"`` (the structured interior point,
  :mod:`rsvm_conic.solvers.ipm.wasserstein`), certified to a 1e-6 relative gap;
* ``clarabel`` -- ``WassersteinSVC(solver="clarabel")``: the same problem as a CVXPY model solved by Clarabel (model
  building and compilation included, as a user pays them), certified the same way;
* ``dro`` -- ``dro.linear_model.WassersteinDRO(model_type="svm", solver="CLARABEL")`` (the ``dro`` package, an
  open-source solver given explicitly), when the package is installed; its objective is printed beside ours, as the
  package reports it and as our objective evaluates its ``(theta, b)``.  ``dro`` is not a dependency (install it
  with ``pip install --no-deps dro``: its ``linear_model`` needs only CVXPY, NumPy, SciPy and scikit-learn; the
  package's ``__init__`` imports PyTorch for its neural models, so the benchmark loads ``dro.linear_model``'s two
  modules without it).

Rows: p = 2 with kappa = inf and kappa = 1, p = 1 with kappa = inf.  Printed: times, the ratios ``clarabel / ours``
and ``dro / ours``, the objectives and our certified gap.  Goal: ``clarabel / ours >= 10`` at full size.
``rsvm-conic bench wasserstein [--quick]``.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

RADIUS = 0.05


def _data(L: int, n: int):
    rng = np.random.default_rng(0)
    y = np.where(rng.random(L) < 0.5, -1.0, 1.0)
    X = rng.standard_normal((L, n)) + 0.4 * y[:, None] * rng.standard_normal(n)[None, :]
    return (X - X.mean(0)) / X.std(0), y


def _load_dro():
    """``dro.linear_model.wasserstein_dro.WassersteinDRO`` without the package's ``__init__`` (which imports
    PyTorch for models not used here); ``(None, why)`` when the package is not installed."""
    import importlib
    import importlib.util
    import sys
    import types

    spec = importlib.util.find_spec("dro")
    if spec is None or not spec.submodule_search_locations:
        return None, "the dro package is not installed (pip install --no-deps dro)"
    root = list(spec.submodule_search_locations)[0]
    for name, path in (("dro", root), ("dro.linear_model", os.path.join(root, "linear_model"))):
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__path__ = [path]
            sys.modules[name] = module
    try:
        return importlib.import_module("dro.linear_model.wasserstein_dro").WassersteinDRO, ""
    except ImportError as exc:
        return None, f"dro.linear_model could not be imported ({exc})"


def _timed(fn, repeat: int):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = fn()
        best = min(best, time.perf_counter() - t0)
        out = res
    return best, out


def run(quick: bool = False) -> int:
    from rsvm_conic.estimators import WassersteinSVC
    from rsvm_conic.formulations.wasserstein import WassersteinProblem

    L, n = (2000, 20) if quick else (20000, 50)
    repeat = 2 if quick else 1
    X, y = _data(L, n)
    WassersteinDRO, why = _load_dro()
    print(
        f"WassersteinSVC (default route) vs CVXPY + Clarabel vs dro's WassersteinDRO; L = {L}, n = {n}, radius = "
        f"{RADIUS}, {os.cpu_count()} cores; best of {repeat}"
    )
    head = (
        f"{'p':>3} {'kappa':>5} {'route':>6} {'ours [s]':>9} {'clar [s]':>9} {'dro [s]':>8} {'clar/ours':>9} "
        f"{'dro/ours':>8} {'ours obj':>12} {'clar obj':>12} {'dro obj':>12} {'dro (ours)':>12} {'gap_rel':>8}"
    )
    print(head)
    print("-" * len(head))
    worst = np.inf
    WassersteinSVC(radius=RADIUS).fit(X, y)  # untimed: compiles the cone kernels at this size (cached on disk after)
    for p, kappa in ((2, np.inf), (2, 1.0), (1, np.inf)):
        t_ours, ours = _timed(lambda: WassersteinSVC(radius=RADIUS, norm=p, kappa=kappa).fit(X, y), repeat)
        t_clar, clar = _timed(
            lambda: WassersteinSVC(radius=RADIUS, norm=p, kappa=kappa, solver="clarabel").fit(X, y), repeat
        )
        t_dro = dro_obj = dro_ours = np.nan
        if WassersteinDRO is not None:

            def fit_dro():
                model = WassersteinDRO(input_dim=n, model_type="svm", solver="CLARABEL")
                model.update({"eps": RADIUS, "p": p, "kappa": kappa if np.isfinite(kappa) else "inf"})
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(X, y)
                return model

            try:
                t_dro, model = _timed(fit_dro, repeat)
            except Exception as exc:  # reported, not raised: the benchmark measures the other rows
                why = f"dro's fit failed: {type(exc).__name__}: {exc}"
            else:
                dro_obj = model.robust_obj
                problem = WassersteinProblem(X, y, RADIUS, p, kappa, check_input=False)
                dro_ours = problem.objective_wb(np.asarray(model.theta, dtype=float), float(model.b))
        st = ours.solver_stats_
        ratio = t_clar / t_ours
        worst = min(worst, ratio)
        print(
            f"{p:>3g} {kappa:>5g} {st['route']:>6} {t_ours:>9.2f} {t_clar:>9.2f} {t_dro:>8.2f} {ratio:>9.1f} "
            f"{t_dro / t_ours:>8.1f} {ours.objective_:>12.8f} {clar.objective_:>12.8f} {dro_obj:>12.8f} "
            f"{dro_ours:>12.8f} {st['gap_rel']:>8.1e}"
        )
        for name, est in (("ours", ours), ("clarabel", clar)):
            if est.solver_stats_["status"] != "optimal":
                print(f"  {name} did not certify: {est.solver_stats_}")
                return 1
    if why:
        print(f"dro: not run: {why}.")
    print(
        f"\nworst clarabel / ours: {worst:.1f} (goal >= 10 at L = 20000, n = 50).  'dro (ours)' is our objective"
        " at dro's (theta, b): its worst-case expected hinge loss (>= the optimum; dro has no certificate)."
    )
    return 0 if quick or worst >= 10 else 1


BENCHMARKS = {"wasserstein": run}
