"""Named problem instances: benchmarks, paper-table reproductions and runner checks.

Every module in this package may define any of four dicts, keyed by a
dash-separated name:

* ``INSTANCES`` -- name -> :class:`rsvm_conic.runner.ProblemInstance` (``rsvm-conic check NAME``),
* ``REPRODUCTIONS`` -- name -> :class:`rsvm_conic.runner.GridExperiment` (``rsvm-conic reproduce NAME``:
  a paper's table or figure),
* ``GRIDS`` -- name -> :class:`rsvm_conic.runner.GridExperiment` (``rsvm-conic run NAME``: other grids),
* ``BENCHMARKS`` -- name -> ``fn(quick: bool) -> int`` (``rsvm-conic bench NAME``).

Reproductions and grids share one contract and one code path: independent cells (``cells(quick)``,
``fn(cell)``, each seeded from its specification), run resumably and in parallel (joblib/loky or a
Dask cluster; ``n_jobs`` default :func:`rsvm_conic.runner.default_n_jobs`: 1 with ``quick``, else
``min(2, cores)``), then a report that writes the tables/figures from the cells and returns a summary
and whether the experiment's checks passed (exit code 0 / 1).

Output layout of every grid and reproduction, in ``OUT`` (``--out``; default ``results/NAME``, or
``results/NAME-quick`` with ``--quick``):

* ``results.jsonl`` -- one JSON record per finished cell (cell, result, package versions), resumed
  by the next run; ``results.jsonl.lock`` while a run writes it, ``results.jsonl.damaged`` for lines
  set aside; ``--fresh`` renames the old file;
* the report's tables (``.md``, ``.csv``, ``.json``) and figures (``.png``) beside it, named in each
  module's docstring.

What ``rsvm-conic list`` prints, and the extras an entry needs, come from :data:`CATALOGUE`: a static table
(kind, name, module, one line, extras) read without importing any problem module, so that listing costs no
solver import.  ``tests/test_startup.py`` checks it against the modules' dicts: a new entry is added both to
its module and to the table.  :func:`registry` and :func:`get` import the modules themselves.

Some entries need an optional extra (:data:`EXTRAS`: the extra's name -> the modules it installs);
:func:`missing_extras` says which of an entry's extras are not installed, and :func:`extra_of` maps a
missing module (an ``ImportError``'s ``name``) to the extra that installs it.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import NamedTuple

KINDS = ("INSTANCES", "REPRODUCTIONS", "BENCHMARKS", "GRIDS")

#: optional extra -> the top-level modules it installs (pyproject.toml's ``[project.optional-dependencies]``)
EXTRAS = {
    "dask": ("dask", "distributed", "zarr", "google_crc32c"),
    "plot": ("matplotlib",),
}


class Entry(NamedTuple):
    """One named entry of :data:`CATALOGUE`.

    Attributes
    ----------
    kind : str
        One of :data:`KINDS` (``INSTANCES``, ``REPRODUCTIONS``, ``BENCHMARKS``, ``GRIDS``): a dict of the module.
    name : str
        The entry's name on the command line.
    module : str
        The module of this package that defines it.
    description : str
        One line on what it computes.
    extras : tuple of str
        The extras it needs (keys of :data:`EXTRAS`).
    """

    kind: str
    name: str
    module: str
    description: str
    extras: tuple[str, ...] = ()


_DASK, _PLOT = ("dask",), ("plot",)

#: every entry of every module, without importing them (``rsvm-conic list``)
CATALOGUE = (
    # rsvm-conic check NAME: one problem, every backend, certified gaps side by side
    Entry(
        "INSTANCES",
        "chance-gaussian-small",
        "linear_robust",
        "Gaussian chance-constrained SVM, epsilon=0.1, L=400 train, n=5, k=2",
    ),
    Entry(
        "INSTANCES",
        "chance-ipm-class",
        "bench_robust_ipm",
        "chance-constrained SVM (Chebyshev, eps = 0.1), per-class covariances: IPM vs Clarabel",
    ),
    Entry(
        "INSTANCES",
        "feature-robust-nystroem",
        "feature_robust",
        "formulation (10), Nystroem m=16 (Prop. 4.2, corrected), breast_cancer L=120",
    ),
    Entry(
        "INSTANCES",
        "feature-robust-rff",
        "feature_robust",
        "formulation (10), RFF D=16, pbar=inf (per-sample rotations), breast_cancer L=120",
    ),
    Entry(
        "INSTANCES",
        "nominal-breast-cancer",
        "linear_robust",
        "nominal linear SVM (eq. 1) on scikit-learn's breast cancer data, C=0.1",
    ),
    Entry(
        "INSTANCES",
        "robust-ipm-class",
        "bench_robust_ipm",
        "robust SVM (eq. 4), L = 1500, n = 10: structured IPM vs CVXPY + Clarabel/SCS, one ellipsoid per class",
    ),
    Entry(
        "INSTANCES",
        "robust-ipm-sample",
        "bench_robust_ipm",
        "robust SVM (eq. 4), L = 1500, n = 10: structured IPM vs CVXPY + Clarabel/SCS, one ellipsoid per sample",
    ),
    Entry(
        "INSTANCES",
        "robust-ipm-shared",
        "bench_robust_ipm",
        "robust SVM (eq. 4), L = 1500, n = 10: structured IPM vs CVXPY + Clarabel/SCS, one shared ellipsoid",
    ),
    Entry(
        "INSTANCES",
        "robust-large",
        "linear_robust",
        "grouped-ellipsoid robust SVM SOCP, L=20000 train, n=50, k=2 groups, C=0.05 (lam=1e-3)",
    ),
    Entry(
        "INSTANCES",
        "robust-outofcore",
        "robust_outofcore",
        "robust SVM (grouped ellipsoids, L=20000 train, n=20): in-memory interior point vs the same on Dask row blocks",
        _DASK,
    ),
    Entry(
        "INSTANCES",
        "robust-outofcore-sample",
        "robust_outofcore",
        "robust SVM (one diagonal ellipsoid per sample, L=4800 train, n=10): in-memory interior point vs the same "
        "on Dask row blocks",
        _DASK,
    ),
    Entry(
        "INSTANCES",
        "robust-small",
        "linear_robust",
        "grouped-ellipsoid robust SVM SOCP (eq. 4), L=400 train, n=5, k=2 groups, C=0.25",
    ),
    Entry(
        "INSTANCES",
        "robust-small-inf",
        "linear_robust",
        "box (p = inf) robust SVM, L=400 train, n=5, k=2 groups, C=0.25",
    ),
    Entry(
        "INSTANCES",
        "rsvm-qp-small",
        "bhadra2010_table1",
        "RSVM_QP ([BBBB10] Thm 4), n=48: libsvm vs Clarabel vs SCS",
    ),
    Entry(
        "INSTANCES",
        "rsvm-socp-small",
        "bhadra2010_table1",
        "RSVM_SOCP ([BBBB10] eq. 16), n=48: projected Newton vs cone interior point vs Clarabel vs SCS",
    ),
    Entry(
        "INSTANCES",
        "safe-svm-bilevel",
        "safe_svm",
        "safe SVM eq. (7): exact hypergradient vs the stochastic bi-level method, 2 Gaussians L=100, N_val=200",
    ),
    Entry(
        "INSTANCES",
        "ww-wine-rff-dual-vs-primal",
        "dakdouki2019_table4_2",
        "WW-M-SVM (eq. 1.9) on Wine, 60 random Fourier features: primal QP (Clarabel, SCS), kernel dual QP "
        "(Clarabel) and the numpy L-BFGS primal solver on the same features",
    ),
    # rsvm-conic run NAME: grids of independent cells (resumable)
    Entry(
        "GRIDS",
        "kernel-chance-mc",
        "kernel_chance_mc",
        "KernelRobustSVC's chance constraint on fresh kernel draws, moments estimated from S samples",
    ),
    Entry(
        "GRIDS",
        "linear-noise-grid",
        "linear_noise_grid",
        "nominal vs robust vs chance-constrained SVM under injected noise, breast cancer, k-fold",
    ),
    Entry(
        "GRIDS",
        "robust-outofcore",
        "robust_outofcore",
        "robust SVMs over C fitted on a chunked store (Zarr) on Dask row blocks; --data PATH, default a synthetic "
        "store",
        _DASK,
    ),
    # rsvm-conic reproduce NAME: a paper's table or figure
    Entry(
        "REPRODUCTIONS",
        "bhadra2010-readings",
        "bhadra2010_readings",
        "[BBBB10] Table 1 under the readings Sec. 5.1 leaves open (symmetric noise, random multiplier, QN "
        "multi-start, the figures' test noise, the paper regime's neighbours)",
    ),
    Entry(
        "REPRODUCTIONS",
        "bhadra2010-readings-medium",
        "bhadra2010_readings",
        "[BBBB10] Table 1 under the readings Sec. 5.1 leaves open, on 3 data sets per block (about an hour on one "
        "worker)",
    ),
    Entry(
        "REPRODUCTIONS",
        "bhadra2010-table1",
        "bhadra2010_table1",
        "[BBBB10], Sec. 5.1: Table 1 and Figures 1-3 on the synthetic data",
        _PLOT,
    ),
    Entry(
        "REPRODUCTIONS",
        "couellan2020-fig1",
        "couellan2020_fig1",
        "Figure 1 of [CJ20]: four noisy XOR points mapped onto the circle by RFF with D = 2",
        _PLOT,
    ),
    Entry(
        "REPRODUCTIONS",
        "dakdouki2019-table4-2",
        "dakdouki2019_table4_2",
        "Thesis [ElD19] Table 4.2 / 4.3 and Fig. 4.2: WW-M-SVM with the Gaussian kernel vs kappa^m",
        _PLOT,
    ),
    Entry(
        "REPRODUCTIONS",
        "rff-error",
        "rff_error",
        "RFF uniform approximation error against D, beside the bound of Rahimi & Recht 2007",
        _PLOT,
    ),
    # rsvm-conic bench NAME: measured ratios, side by side in one run
    Entry(
        "BENCHMARKS",
        "auto-routes",
        "bench_auto_routes",
        'the routes behind two solver="auto" choices, timed side by side on the same data',
    ),
    Entry(
        "BENCHMARKS",
        "bhadra2010-table1",
        "bhadra2010_table1",
        "the [BBBB10] reproduction's wall time per cell, extrapolated, and RSVM_QP against SVC(kernel='precomputed')",
    ),
    Entry(
        "BENCHMARKS",
        "first-hour",
        "bench_first_hour",
        "a new user's first hour: start-up, each estimator's first and second fit, fits beside two busy processes",
    ),
    Entry(
        "BENCHMARKS",
        "constant-threshold",
        "bench_constant",
        "what the constant-classifier warning costs against the solve",
    ),
    Entry(
        "BENCHMARKS",
        "dakdouki2019-table4-2",
        "dakdouki2019_table4_2",
        "the [ElD19] reproduction's full wall time (fresh results directory), per data set and model",
    ),
    Entry(
        "BENCHMARKS",
        "wasserstein",
        "bench_wasserstein",
        "WassersteinSVC's default route against the same model in CVXPY + Clarabel and the dro package's model",
    ),
    Entry(
        "BENCHMARKS",
        "defaults",
        "bench_defaults",
        "each estimator's default fit against the fastest certified route and scikit-learn",
    ),
    Entry(
        "BENCHMARKS",
        "feature-robust-adversarial",
        "feature_robust",
        "robust (10) on RFF vs nominal RBF SVM: clean accuracy and adversarial error, breast_cancer / wine",
    ),
    Entry(
        "BENCHMARKS",
        "hyperbolic",
        "bench_hyperbolic",
        "HyperbolicSVC on 300 / 1797 digits and iris beside SVC, class means; plain/boosted CCP, exact/inexact steps",
    ),
    Entry(
        "BENCHMARKS",
        "hyperbolic-step",
        "bench_hyperbolic_step",
        "one hyperbolic CCP step by the structured interior point: iterations per tolerance; vs Clarabel on anchors",
    ),
    Entry(
        "BENCHMARKS",
        "hyperbolic-class-weight",
        "bench_hyperbolic_class_weight",
        "HyperbolicSVC's model on scikit-learn's class-weight check: ccp (Clarabel 1e-7, 1e-11) vs ipm",
    ),
    Entry(
        "BENCHMARKS",
        "kernel-qp",
        "bench_kernel",
        "the kernel-robust QP route (libsvm) against CVXPY + Clarabel and scikit-learn's SVC",
    ),
    Entry(
        "BENCHMARKS",
        "paths",
        "bench_paths",
        "a warm-started radius path against cold fits, RobustSVCCV against GridSearchCV, on magic",
    ),
    Entry(
        "BENCHMARKS",
        "robust-ipm",
        "bench_robust_ipm",
        "the structure-exploiting interior point against CVXPY + Clarabel",
    ),
    Entry(
        "BENCHMARKS",
        "robust-ipm-bound",
        "bench_robust_ipm",
        "the interior point at the largest size of its target (quick: L = 2e4, n = 50)",
    ),
    Entry(
        "BENCHMARKS",
        "robust-ipm-grid",
        "bench_robust_ipm",
        "the interior point over a grid of C, warm against cold",
    ),
    Entry(
        "BENCHMARKS",
        "robust-ipm-refine",
        "bench_robust_ipm",
        "the interior point's iterative refinement: one correction against the default, in memory and on Dask "
        "row blocks",
        _DASK,
    ),
    Entry(
        "BENCHMARKS",
        "robust-ipm-scale",
        "bench_robust_ipm",
        "which column scales the interior point certifies",
    ),
    Entry(
        "BENCHMARKS",
        "robust-linear",
        "bench_robust_linear",
        "the linear robust SVM family: every route side by side",
    ),
    Entry(
        "BENCHMARKS",
        "robust-outofcore",
        "robust_outofcore",
        "a robust SVM on a store larger than the workers' memory: time, passes, peak memory, certified gap",
        _DASK,
    ),
    Entry(
        "BENCHMARKS",
        "stochastic",
        "bench_stochastic",
        "the stochastic solvers at the machine's limit",
    ),
    Entry(
        "BENCHMARKS",
        "store-checks",
        "robust_outofcore",
        "what checking every chunk of a store costs: checked vs unchecked passes and fits",
        _DASK,
    ),
    Entry(
        "BENCHMARKS",
        "ww-exact",
        "bench_ww",
        "the exact Weston-Watkins route (cd) against the other exact route (alm) and scikit-learn",
    ),
)


def catalogue(kind: str) -> dict[str, Entry]:
    """The :data:`CATALOGUE` entries of one kind, by name (no problem module is imported).

    Parameters
    ----------
    kind : str
        The kind of entry.

    Returns
    -------
    dict
        Name -> :class:`Entry`.
    """
    _check_kind(kind)
    return {e.name: e for e in CATALOGUE if e.kind == kind}


def extra_of(module: str | None) -> str | None:
    """The extra of :data:`EXTRAS` that installs ``module`` (a dotted name; its top level counts), or None.

    Parameters
    ----------
    module : str or None
        A module name (e.g. ``ImportError.name``).

    Returns
    -------
    str or None
    """
    top = (module or "").split(".")[0]
    return next((extra for extra, mods in EXTRAS.items() if top in mods), None)


def missing_extras(entry: Entry) -> list[str]:
    """The extras of ``entry`` whose modules do not import here.

    Parameters
    ----------
    entry : Entry
        The entry.

    Returns
    -------
    list of str
    """
    missing = []
    for extra in entry.extras:
        for mod in EXTRAS[extra]:
            try:
                importlib.import_module(mod)
            except ImportError:
                missing.append(extra)
                break
    return missing


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")


def _modules():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            yield importlib.import_module(f"{__name__}.{info.name}")


def registry(kind: str) -> dict:
    """All entries of one kind across the package's modules (imports every module).

    Parameters
    ----------
    kind : str
        The kind of entry.

    Returns
    -------
    dict
        Name -> the entry's object (an instance, a grid, a benchmark function, ...).
    """
    _check_kind(kind)
    out = {}
    for mod in _modules():
        for name, entry in getattr(mod, kind, {}).items():
            if name in out:
                raise RuntimeError(f"problem name {name!r} is defined twice ({mod.__name__})")
            out[name] = entry
    return out


def get(kind: str, name: str):
    """The entry ``name`` of ``kind``, importing only its module (:data:`CATALOGUE` says which).

    Parameters
    ----------
    kind : str
        The kind of entry.
    name : str
        Its name.

    Returns
    -------
    object
        The entry's object.

    Raises
    ------
    KeyError
        Naming the available entries, if there is none of that name.
    """
    entry = catalogue(kind).get(name)
    if entry is None:
        available = ", ".join(sorted(catalogue(kind))) or "none"
        raise KeyError(f"no {kind[:-1].lower()} named {name!r}; available: {available}")
    return getattr(importlib.import_module(f"{__name__}.{entry.module}"), kind)[name]
