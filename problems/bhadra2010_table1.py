"""[BBBB10], Sec. 5.1: Table 1 and Figures 1-3 on the synthetic data.

``rsvm-conic reproduce bhadra2010-table1 [--quick] [--out DIR] [--n-jobs 2]`` (``EXPERIMENT``, a
:class:`rsvm_conic.runner.GridExperiment`): the table and figure cells in ``OUT/results.jsonl`` (resumable),
``table1.md`` / ``table1.csv``, ``fig1.png`` - ``fig3.png`` and ``summary.json`` beside it;
:func:`partial_table` tabulates an interrupted run.

Protocol (Sec. 5.1.1): for each noise law (uniform, Gaussian, centred Beta(0.5, 0.5)),
20 datasets of 2 x 100 points, 100 noisy kernels each, 5-fold stratified CV, grid
``C in {0.1, 1, 5, 10, 50, 100}`` x ``epsilon in {0.05, ..., 0.5}``; for each classifier and
metric the grid point with the best CV accuracy averaged over the datasets is reported
(accuracy = 100 - error, as the paper's Table 1 does).  Seven classifiers: RSVM_QP, _SOCP,
_QN with Gaussian (g) and finite-support noise models, and the nominal SVM.

Two readings of the data scale (``REGIMES``), cells of the one experiment, one table block each.  The
paper never states the scale of its points, and it is exactly a factor on C: points x ``s`` multiply
``K_bar``, ``l`` and every sampled kernel by ``s^2`` and ``beta`` by ``s^4``, which is the problem at scale 1
with ``C x s^2`` (same predictions, objective x ``s^2``; tested).  ``"default"``: the generator's points
(std 0.7, centres (2, 2)); at this scale CV picks the smallest C for most classifiers.  ``"paper"``: points
x ``sqrt(1000)`` (the paper's C grid x 1000) with centres (1, 1).  We scale the points rather than the grid
so that the reported C stays on the grid the paper prints.  The paper regime's RSVM_QN is about 8x slower
(DFP at a large effective C), so the full run uses ``paper_datasets = 2`` of its 20 datasets to stay within
its time budget (issue 16: 8 minutes on 2 cores); at that C a few RSVM_SOCP grid points certify by no route:
they are counted and left out of their cell's mean (``_socp``).

Verdict per cell (:func:`verdict`): reproduced iff ``|ours - paper| <= TOL`` (5 points of accuracy); a
cell that is not reproduced gets the measured difference and, when the measured numbers match one, a
known cause (:data:`REASONS`).  The negative-eigenvalue mass of the estimated ``beta`` is measured per
cell and tabulated per regime, law and noise model.

Implementation choices (documented, see also the modules used):

* ``K_bar`` is the clean linear kernel (the paper computes it "from original datapoints");
  ``beta`` is estimated from the training block of the 100 samples; the test scores use the
  same samples' test-by-train rows (``n_s = 100`` per test point).
* RSVM_SOCP is solved by its default route ``"newton"`` (projected Newton, the cone IPM as its own
  fallback), certified by a Frank-Wolfe gap, warm-started along the grid from the previous point
  (by its multipliers after a change of C); an uncertified solve falls back to Clarabel with a
  warning and is counted in the cell's ``fallbacks``.  RSVM_QP uses libsvm.
  RSVM_QN runs DFP on (17) along the epsilon grid for each C: from the nominal SVM solution at
  the first epsilon, then from the previous epsilon's solution (plus ``QN_RANDOM_STARTS``
  random starts at every grid point; 0 by default to keep the table within its time budget --
  the estimator and the tests use several starts).
* All classifiers, the nominal SVM included, use the bias of Sec. 3 (all SVs, ``sv_tol = 1e-6``).
* Figures, per regime: Fig. 1 (RobustErr vs kappa, C = 10, RSVM_SOCP / _QN and their (g) versions vs
  the SVM), Fig. 2 (same with i.i.d. noise, RSVM_QP vs SVM), each in two constructions: the paper's (the
  training kappa is the x-axis and the test noise is scaled by it, so every curve meets the SVM's at
  kappa = 0) and ours (training epsilon fixed at ``FIG_EPS``, only the test noise moves); Fig. 3
  (epsilon_effective vs epsilon for RSVM_SOCP and RSVM_SOCP^(g), C = 10, fresh samples of the training
  kernel).  Computed on fold 0 of the first `fig_datasets` datasets (5 in the full run, to fit its time
  budget).  Coinciding curves are told apart by open markers of different sizes and dash patterns.
"""

from __future__ import annotations

import csv
import functools
import json
import time
import warnings
from pathlib import Path

import numpy as np

from rsvm_conic.datasets.bhadra2010 import make_bhadra2010, sample_kernels
from rsvm_conic.formulations.kernel_robust import RSVMQN, RSVMQP, RSVMSOCP, paper_bias
from rsvm_conic.metrics import epsilon_effective, kernel_robust_errors
from rsvm_conic.runner import (
    GridExperiment,
    ListOf,
    MapOf,
    Maybe,
    Number,
    ProblemInstance,
    Record,
    Text,
    seed_from_cell,
)
from rsvm_conic.solvers.conic import SolverError
from rsvm_conic.solvers.svm_dual import libsvm_dual
from rsvm_conic.uncertainty.chance import kappa
from rsvm_conic.uncertainty.kernel_matrix import KernelUncertainty

LAWS = ("uniform", "gaussian", "beta")
LAW_TITLES = {"uniform": "Uniform Distribution", "gaussian": "Gaussian Distribution", "beta": "beta(0.5, 0.5)"}
METHODS = ("qp_g", "socp_g", "qn_g", "qp", "socp", "qn", "svm")
METHOD_TITLES = {
    "qp_g": "QP(g)",
    "socp_g": "SOCP(g)",
    "qn_g": "QN(g)",
    "qp": "QP",
    "socp": "SOCP",
    "qn": "QN",
    "svm": "SVM",
}
METRICS = ("ME", "RE", "NE")
C_GRID = (0.1, 1.0, 5.0, 10.0, 50.0, 100.0)
EPS_GRID = tuple(round(0.05 * k, 2) for k in range(1, 11))
QN_RANDOM_STARTS = 0
FIG_EPS = 0.1
FIG_SCALES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)

#: Table 1 of the paper (accuracy %, columns as METHODS), typed from the paper.
PAPER_TABLE1 = {
    ("uniform", "ME"): (94.60, 96.15, 95.55, 95.30, 96.60, 95.60, 87.70),
    ("uniform", "RE"): (52.60, 93.30, 92.85, 74.20, 95.20, 94.60, 18.65),
    ("uniform", "NE"): (80.30, 95.94, 95.50, 83.20, 95.60, 95.60, 58.79),
    ("gaussian", "ME"): (95.45, 96.35, 95.95, 94.50, 95.60, 95.70, 71.95),
    ("gaussian", "RE"): (55.15, 93.70, 92.70, 64.30, 84.10, 84.10, 24.75),
    ("gaussian", "NE"): (74.27, 95.18, 94.92, 80.45, 94.80, 94.65, 52.69),
    ("beta", "ME"): (95.20, 96.15, 95.60, 95.35, 96.20, 95.95, 86.75),
    ("beta", "RE"): (47.45, 91.45, 91.35, 75.50, 94.30, 93.85, 5.20),
    ("beta", "NE"): (79.22, 95.91, 95.48, 85.35, 96.20, 95.95, 57.25),
}

#: The two readings of the unstated data scale (cells of the one experiment; see the module docstring).
#: Scaling the points by ``s`` is exactly multiplying ``C`` by ``s^2``: the paper regime's factor
#: ``sqrt(1000)`` is the paper's C grid times 1000 on points of the default size.
PAPER_SCALE = float(np.sqrt(1000.0))
REGIMES = {
    "default": {"data_scale": 1.0, "center": [2.0, 2.0]},
    "paper": {"data_scale": PAPER_SCALE, "center": [1.0, 1.0]},
}
REGIME_TITLES = {
    "default": "default reading (points at their generated size, centres (2, 2))",
    "paper": "paper regime (points x sqrt(1000), i.e. the C grid x 1000; centres (1, 1))",
}
#: A cell is "reproduced" when our accuracy is within TOL percentage points of the paper's.
TOL = 5.0

FULL = dict(
    n_datasets=20,
    n_folds=5,
    n_per_class=100,
    n_samples=100,
    C_grid=C_GRID,
    eps_grid=EPS_GRID,
    fig_samples=500,
    fig_datasets=5,
    regimes=tuple(REGIMES),
    paper_datasets=2,  # the paper regime's RSVM_QN is ~8x slower (large effective C): 2 datasets fit the time budget
)
QUICK = dict(
    n_datasets=2,
    n_folds=5,
    n_per_class=30,
    n_samples=40,
    C_grid=(1.0, 10.0),
    eps_grid=(0.1, 0.5),
    fig_samples=200,
    fig_datasets=1,
    regimes=tuple(REGIMES),
    paper_datasets=2,
)


# ----------------------------------------------------------------------------------------
# data (cached per process: the folds of one dataset share it)
# ----------------------------------------------------------------------------------------
def dataset_seed(law: str, dataset: int, n_per_class: int) -> int:
    return seed_from_cell({"law": law, "dataset": dataset, "n_per_class": n_per_class, "what": "bhadra2010"})


@functools.lru_cache(maxsize=2)
def _dataset(law: str, dataset: int, n_per_class: int, n_samples: int, iid: bool = False, regime: str = "default"):
    """One dataset of a regime; the regimes share the seeds (paired: same draws, other centre and size)."""
    data = make_bhadra2010(
        dataset_seed(law, dataset, n_per_class) + int(iid),
        law,
        n_per_class=n_per_class,
        n_samples=n_samples,
        iid=iid,
        center=tuple(REGIMES[regime]["center"]),
        data_scale=REGIMES[regime]["data_scale"],
    )
    unc = KernelUncertainty.from_samples(data.K_samples, data.K_bar)
    return data, unc


def _folds(y, n_folds, seed):
    from sklearn.model_selection import StratifiedKFold

    skf = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed % (2**31))
    return list(skf.split(np.zeros_like(y), y))


def _scores(alpha, b, y_tr, rows):
    """Scores of sampled rows ``(S, m, n)`` as one matrix-vector product (a 3-D ``@`` is ~30x slower)."""
    S, m, n = rows.shape
    return (rows.reshape(S * m, n) @ (y_tr * alpha)).reshape(S, m) + b


def _socp(f, **options):
    """RSVM_SOCP by projected Newton, Clarabel as fallback; None where no route certifies.

    At the paper regime's large effective C (data scale sqrt(1000)) a few grid points defeat every route
    (measured: about 1 in 16 at C = 100); they are counted and left out, never replaced by an uncertified point.
    """
    try:
        return f.solve("newton", fallback="clarabel", **options)
    except SolverError:
        return None


def _nominal(K, y, C):
    """Nominal SVM (libsvm on K_bar) with the Sec. 3 bias; alpha as a dense vector."""
    a, _ = libsvm_dual(K, y, C)
    return a, paper_bias(a, y, K, C)


# ----------------------------------------------------------------------------------------
# one cell = (law, dataset, fold): every method over the whole grid
# ----------------------------------------------------------------------------------------
def table_cell(cell: dict) -> dict:
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = _table_cell(cell)
    res["warnings"] = sorted({str(w.message)[:200] for w in caught})
    return res


def _table_cell(cell: dict) -> dict:
    law, ds, fold = cell["law"], cell["dataset"], cell["fold"]
    data, unc = _dataset(law, ds, cell["n_per_class"], cell["n_samples"], regime=cell["regime"])
    tr, te = _folds(data.y, cell["n_folds"], dataset_seed(law, ds, cell["n_per_class"]))[fold]
    U = unc.subset(tr)
    y_tr, y_te = data.y[tr], data.y[te]
    rows = np.ascontiguousarray(data.K_samples[:, te][:, :, tr])  # contiguous once: _scores reshapes it per solve
    Cs, epss = cell["C_grid"], cell["eps_grid"]
    out = {m: {k: [[None] * len(epss) for _ in Cs] for k in METRICS} for m in METHODS if m != "svm"}
    out["svm"] = {k: [None] * len(Cs) for k in METRICS}
    times = {m: 0.0 for m in METHODS}  # CPU seconds (process_time)
    info = {
        "fallbacks": 0,
        "uncertified": 0,
        "socp_iterations": [],
        "qn_iterations": [],
        "qn_violation": 0.0,
        "beta_hat_min": {},
        "neg_eig_mass": {},
    }

    pending = []

    def record(method, i, j, alpha, b):  # scored by flush(), one matrix product per method's grid
        pending.append((method, i, j, y_tr * alpha, b))

    def flush():
        if not pending:
            return
        S, m, n = rows.shape
        V = np.stack([p[3] for p in pending])  # (G, n)
        scores = V @ rows.reshape(S * m, n).T  # (G, S m): the sampled rows are read once for the whole grid
        for (method, i, j, _, b), F in zip(pending, scores):
            errs = kernel_robust_errors(F.reshape(S, m) + b, y_te)
            for k in METRICS:
                if j is None:
                    out[method][k][i] = errs[k]
                else:
                    out[method][k][i][j] = errs[k]
        pending.clear()

    nominal = {}
    t0 = time.process_time()
    for i, C in enumerate(Cs):
        a, b = _nominal(U.K_bar, y_tr, C)
        nominal[C] = a
        record("svm", i, None, a, b)
    flush()
    times["svm"] += time.process_time() - t0

    for noise, suffix in (("gaussian", "_g"), ("finite", "")):
        beta = U.beta(noise, rule="paper")
        info["neg_eig_mass"][noise] = negative_eigenvalue_mass(beta)
        # RSVM_QP (libsvm)
        t0 = time.process_time()
        f = RSVMQP(U.K_bar, y_tr, beta)
        for i, C in enumerate(Cs):
            for j, eps in enumerate(epss):
                f.set_params(C=C, kappa=max(kappa(eps, noise, allow_negative=True), 0.0))
                sol = f.solve("libsvm")
                record("qp" + suffix, i, j, sol["alpha"], sol["b"])
        flush()
        times["qp" + suffix] += time.process_time() - t0
        # RSVM_SOCP (projected Newton warm-started along the grid, Clarabel fallback)
        t0 = time.process_time()
        f = RSVMSOCP(U.K_bar, y_tr, beta)
        info["beta_hat_min"][noise] = f.beta_hat_min
        prev = None
        for i, C in enumerate(Cs):
            for j, eps in enumerate(epss):
                f.set_params(C=C, kappa=max(kappa(eps, noise, allow_negative=True), 0.0))
                sol = _socp(f, warm_start=prev, svm_start=j == 0)
                if sol is None:  # no route certified: the grid point is left out of this cell's mean (NaN)
                    info["uncertified"] += 1
                    continue
                prev = sol["alpha"]
                info["fallbacks"] += int("fallback" in sol.info)
                info["socp_iterations"].append(sol.info.get("iterations"))
                record("socp" + suffix, i, j, sol["alpha"], sol["b"])
        flush()
        times["socp" + suffix] += time.process_time() - t0
        # RSVM_QN (DFP on (17), warm start along epsilon + nominal start)
        t0 = time.process_time()
        f = RSVMQN(U.K_bar, y_tr, beta, n_random=QN_RANDOM_STARTS, nominal_start=False, seed=seed_from_cell(cell))
        for i, C in enumerate(Cs):
            f._warm = None
            for j, eps in enumerate(epss):
                f.set_params(C=C, kappa=max(kappa(eps, noise, allow_negative=True), 0.0))
                sol = f.solve("dfp", starts=[nominal[C]] if j == 0 else None)
                info["qn_iterations"].append(sol.info["iterations"])
                info["qn_violation"] = max(info["qn_violation"], sol.info["violation"])
                record("qn" + suffix, i, j, sol["alpha"], sol["b"])
        flush()
        times["qn" + suffix] += time.process_time() - t0
    info["socp_iterations"] = float(np.mean(info["socp_iterations"]))
    info["qn_iterations"] = float(np.mean(info["qn_iterations"]))
    return {"errors": out, "times": times, "info": info}


def negative_eigenvalue_mass(beta: np.ndarray) -> float:
    """Share of the spectrum's absolute mass on negative eigenvalues: ``sum |l-| / sum |l|``."""
    ev = np.linalg.eigvalsh(beta)
    total = float(np.abs(ev).sum())
    return float(-ev[ev < 0].sum() / total) if total > 0 else 0.0


def n_datasets(cfg: dict, regime: str) -> int:
    """Datasets of a regime in a configuration (the paper regime may use fewer: ``paper_datasets``)."""
    return (
        min(cfg["n_datasets"], cfg.get("paper_datasets", cfg["n_datasets"])) if regime == "paper" else cfg["n_datasets"]
    )


def table_cells(cfg: dict) -> list[dict]:
    cells = []  # dataset-major, so that an interrupted run covers every law and regime for its first datasets
    for ds in range(cfg["n_datasets"]):
        for regime in [r for r in cfg["regimes"] if ds < n_datasets(cfg, r)]:
            for law in LAWS:
                for fold in range(cfg["n_folds"]):
                    cells.append(
                        {
                            "regime": regime,
                            **REGIMES[regime],
                            "law": law,
                            "dataset": ds,
                            "fold": fold,
                            "n_folds": cfg["n_folds"],
                            "n_per_class": cfg["n_per_class"],
                            "n_samples": cfg["n_samples"],
                            "C_grid": list(cfg["C_grid"]),
                            "eps_grid": list(cfg["eps_grid"]),
                        }
                    )
    return cells


def aggregate(cells: list[dict], results: list[dict], cfg: dict) -> dict:
    """Best grid point of the CV accuracy averaged over datasets and folds, per regime/law/method/metric.

    Keys ``(regime, law, metric, method)``; values ``(accuracy %, best hyper-parameters)``.
    """
    table = {}
    for regime in cfg["regimes"]:
        for law in LAWS:
            idx = [k for k, c in enumerate(cells) if c["law"] == law and c.get("regime", "default") == regime]
            if not idx:
                continue
            for m in METHODS:
                for metric in METRICS:
                    errs = np.array([results[k]["errors"][m][metric] for k in idx], dtype=float)
                    with warnings.catch_warnings():  # a grid point no cell certified stays NaN and is never best
                        warnings.simplefilter("ignore", RuntimeWarning)
                        acc = 100.0 - np.nanmean(errs, axis=0)  # (C,) for svm, (C, eps) otherwise
                    best = np.unravel_index(int(np.nanargmax(acc)), acc.shape)
                    hp = {"C": cfg["C_grid"][best[0]]}
                    if acc.ndim == 2:
                        hp["epsilon"] = cfg["eps_grid"][best[1]]
                    table[(regime, law, metric, m)] = (float(acc[best]), hp)
    return table


def neg_eig_table(cells: list[dict], results: list[dict], cfg: dict) -> dict:
    """Negative-eigenvalue mass of the estimated ``beta``: (mean, min, max) over cells per regime/law/noise model."""
    out = {}
    for regime in cfg["regimes"]:
        for law in LAWS:
            idx = [k for k, c in enumerate(cells) if c["law"] == law and c.get("regime", "default") == regime]
            for noise in ("gaussian", "finite"):
                v = [results[k]["info"]["neg_eig_mass"][noise] for k in idx if "neg_eig_mass" in results[k]["info"]]
                if v:
                    out[(regime, law, noise)] = (float(np.mean(v)), float(np.min(v)), float(np.max(v)))
    return out


#: Known causes, attached only when :func:`verdict` finds a cell not reproduced (text, not measured); the
#: cell's note names the key and the measured numbers that matched it.
REASONS = {
    "a": "the paper's RSVM^(g) RE of 91-94% is not reached: with kappa = -Phi^-1(epsilon) in "
    "the grid's range the Gaussian chance constraint is exactly calibrated (epsilon_effective ~ epsilon, Fig. 3), "
    "so a test point near the boundary is wrong on some of its 100 sampled kernels, which RobustErr counts",
    "b": "the paper ranks RSVM^(g) above RSVM under Gaussian noise; but kappa = -Phi^-1(epsilon) is below "
    "sqrt(2 log(1/epsilon)) at every epsilon and the Gaussian beta (sample variances) is entrywise below the "
    "finite-support one (from the sampled ranges; every entry, measured), so RSVM^(g) is the less cautious of "
    "the two and ours ranks it below (or level with) RSVM",
    "c": "the nominal SVM's RobustErr is set by how many test points the kernel noise can push across the "
    "boundary on at least one of their 100 samples, which the unstated data scale and centres control; the paper "
    "pairs a nominal RE of 5-25% with a NE of 53-59%, ours the pair in the note",
}


def verdict(table: dict, regime: str, law: str, metric: str, method: str) -> tuple[bool, str]:
    """``(reproduced, why)`` of one cell, from the measured table.

    Rule: reproduced iff ``|ours - paper| <= TOL`` (percentage points of accuracy); ``why`` is then empty.
    Otherwise ``why`` gives the measured difference and, when the measured numbers match one, the key of a
    known cause in :data:`REASONS`: (a) an RSVM^(g) RE below the paper's; (b) under Gaussian noise, RE of
    RSVM^(g) <= RSVM (same solver); (c) the nominal SVM's RE.
    """
    ours = table[(regime, law, metric, method)][0]
    paper = PAPER_TABLE1[(law, metric)][METHODS.index(method)]
    if abs(ours - paper) <= TOL:
        return True, ""
    why = f"{ours - paper:+.2f} points from the paper's {paper:.2f}"
    if metric == "RE" and method in ("socp_g", "qn_g") and ours < paper:
        return False, why + "; cause (a)"
    if law == "gaussian" and metric == "RE" and method in ("socp_g", "qn_g", "socp", "qn"):
        base = method.removesuffix("_g")
        g, f = table[(regime, law, metric, base + "_g")][0], table[(regime, law, metric, base)][0]
        if g <= f:
            return False, why + f"; cause (b): {METHOD_TITLES[base + '_g']} {g:.2f} vs {METHOD_TITLES[base]} {f:.2f}"
    if method == "svm" and metric == "RE":
        ne = table[(regime, law, "NE", "svm")][0]
        return False, why + f"; cause (c): ours pairs RE {ours:.2f} with NE {ne:.2f}"
    return False, why


def partial_table(out: Path, quick: bool = False) -> str | None:
    """Table from the cells stored so far (datasets whose cells are complete for every regime, law and fold).

    For an interrupted or still-running run (``quick`` as that run): reads ``out/results.jsonl``, writes
    ``out/partial/table1.md`` / ``table1.csv`` and returns the markdown (None if no dataset is complete).
    """
    cfg = QUICK if quick else FULL
    store = EXPERIMENT.store(out)
    cells = table_cells(cfg)
    done_ds = [ds for ds in range(cfg["n_datasets"]) if all(c in store for c in cells if c["dataset"] == ds)]
    if not done_ds:
        return None
    sub = [c for c in cells if c["dataset"] in done_ds]
    res = [store.get(c) for c in sub]
    part = Path(out) / "partial"
    part.mkdir(exist_ok=True)
    cpu = {m: round(float(sum(r["times"][m] for r in res)), 1) for m in METHODS}
    md = write_table(
        sub,
        res,
        cfg,
        part,
        f"[BBBB10], Table 1 -- PARTIAL: {len(done_ds)} of {cfg['n_datasets']} datasets complete ({len(sub)} cells)",
    )
    md += f"\nCPU seconds per method over these cells: {cpu}\n"
    (part / "table1.md").write_text(md)
    return md


def write_table(cells: list[dict], results: list[dict], cfg: dict, out: Path, title: str) -> str:
    """``table1.md`` / ``table1.csv``: one block per regime, each cell ours (paper) and its verdict."""
    table = aggregate(cells, results, cfg)
    neg = neg_eig_table(cells, results, cfg)
    lines = [
        f"# {title}",
        "",
        "Accuracy (%) = 100 - error; each cell: ours (paper) and R or N. Best grid point per classifier/metric.",
        f"Rule: a cell is reproduced (R) when |ours - paper| <= {TOL:g} percentage points, else not reproduced (N); "
        "for every N cell the notes give the measured difference and, where the measured numbers match one, "
        "the known cause.",
    ]
    rows = []
    for regime in cfg["regimes"]:
        if not any(k[0] == regime for k in table):
            continue
        lines += [
            "",
            f"## {regime}: {REGIME_TITLES[regime]}, {len({c['dataset'] for c in cells if c['regime'] == regime})} "
            "dataset(s)",
            "",
            "| law | metric | " + " | ".join(METHOD_TITLES[m] for m in METHODS) + " |",
            "|---|---|" + "---|" * len(METHODS),
        ]
        notes = []
        n_ok = 0
        for law in LAWS:
            for metric in METRICS:
                paper = PAPER_TABLE1[(law, metric)]
                md_cells = []
                for m, p in zip(METHODS, paper):
                    ours, hp = table[(regime, law, metric, m)]
                    ok, why = verdict(table, regime, law, metric, m)
                    n_ok += ok
                    md_cells.append(f"{ours:.2f} ({p:.2f}) {'R' if ok else 'N'}")
                    if not ok:
                        notes.append(f"* {LAW_TITLES[law]} {metric} {METHOD_TITLES[m]}: {why}.")
                    rows.append(
                        {
                            "regime": regime,
                            "law": law,
                            "metric": metric,
                            "method": METHOD_TITLES[m],
                            "ours": round(ours, 3),
                            "paper": p,
                            "best_C": hp["C"],
                            "best_epsilon": hp.get("epsilon", ""),
                            "verdict": "reproduced" if ok else "not reproduced",
                            "reason": why,
                        }
                    )
                lines.append(f"| {LAW_TITLES[law]} | {metric} | " + " | ".join(md_cells) + " |")
        lines += ["", f"{n_ok} of {len(LAWS) * len(METRICS) * len(METHODS)} cells reproduced."]
        n_unc = sum(r["info"].get("uncertified", 0) for c, r in zip(cells, results) if c["regime"] == regime)
        if n_unc:
            lines += [
                "",
                f"{n_unc} RSVM_SOCP grid-point solves no route certified (large effective C); each is left out of "
                "its cell's mean (the grid point's mean is over the folds where it certified).",
            ]
        masses = [
            f"{LAW_TITLES[law]} {noise} {neg[(regime, law, noise)][0]:.1%} "
            f"[{neg[(regime, law, noise)][1]:.1%}, {neg[(regime, law, noise)][2]:.1%}]"
            for law in LAWS
            for noise in ("gaussian", "finite")
            if (regime, law, noise) in neg
        ]
        if masses:
            lines += [
                "",
                "Negative-eigenvalue mass of the estimated beta (sum |negative eigenvalues| / sum |eigenvalues|, "
                "mean [min, max] over cells; the paper says beta 'turns out to be PSD most of the times'): "
                + "; ".join(masses)
                + ".",
            ]
        if notes:
            keys = sorted({k for n in notes for k in REASONS if f"cause ({k})" in n})
            lines += ["", "Not reproduced:", ""] + notes
            lines += [""] + [f"({k}) {REASONS[k]}." for k in keys]
    md = "\n".join(lines) + "\n"
    (out / "table1.md").write_text(md)
    with open(out / "table1.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return md


# ----------------------------------------------------------------------------------------
# figures
# ----------------------------------------------------------------------------------------
def figure_cell(cell: dict) -> dict:
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _figure_cell(cell)


def _figure_cell(cell: dict) -> dict:
    law, ds, kind = cell["law"], cell["dataset"], cell["kind"]
    iid = kind == "fig2"
    regime = cell.get("regime", "default")
    data, unc = _dataset(law, ds, cell["n_per_class"], cell["n_samples"], iid, regime)
    tr, te = _folds(data.y, cell["n_folds"], dataset_seed(law, ds, cell["n_per_class"]))[0]
    U = unc.subset(tr)
    y_tr, y_te = data.y[tr], data.y[te]
    rng = np.random.default_rng(seed_from_cell(cell))
    C = 10.0
    if kind in ("fig1", "fig2"):
        K_te = data.K_bar[np.ix_(te, tr)]
        l_te = data.l[np.ix_(te, tr)]
        scales = cell["scales"]
        test_rows = [sample_kernels(rng, K_te, l_te, law, cell["n_samples"], noise_scale=x) for x in scales]

        def robust_err(fit, rows):  # NaN where the fit was not certified
            if fit is None:
                return np.nan
            a, b = fit
            return kernel_robust_errors(_scores(a, b, y_tr, rows), y_te)["RE"]

        a_svm, b_svm = _nominal(U.K_bar, y_tr, C)
        paper = {"svm": [robust_err((a_svm, b_svm), rows) for rows in test_rows]}
        fixed = {"svm": list(paper["svm"])}
        betas = {noise: U.beta(noise, rule="paper") for noise in ("gaussian", "finite")}

        def fits(noise, k, warm):  # the figure's RSVMs at training kappa k: {method: (alpha, b)}
            beta, suffix = betas[noise], "_g" if noise == "gaussian" else ""
            if kind == "fig2":
                s = RSVMQP(U.K_bar, y_tr, beta, C=C, kappa=k).solve("libsvm")
                return {"qp" + suffix: (s["alpha"], s["b"])}
            s = _socp(RSVMSOCP(U.K_bar, y_tr, beta, C=C, kappa=k), warm_start=warm)
            q = RSVMQN(U.K_bar, y_tr, beta, C=C, kappa=k, n_random=0).solve("dfp")
            return {"socp" + suffix: None if s is None else (s["alpha"], s["b"]), "qn" + suffix: (q["alpha"], q["b"])}

        for noise in ("gaussian", "finite"):
            # the paper's construction: the training kappa is the x-axis (RSVM = SVM at kappa = 0)
            warm = None
            for x, rows in zip(scales, test_rows):
                for m, fit in fits(noise, float(x), warm).items():
                    paper.setdefault(m, []).append(robust_err(fit, rows))
                    warm = fit[0] if m.startswith("socp") and fit is not None else warm
            # fixed training epsilon FIG_EPS, only the test noise moves
            k = max(kappa(FIG_EPS, noise, allow_negative=True), 0.0)
            for m, fit in fits(noise, k, None).items():
                fixed[m] = [robust_err(fit, rows) for rows in test_rows]
        return {"paper": paper, "fixed": fixed}
    # fig3: epsilon_effective vs epsilon on fresh samples of the training kernel
    K_tr, l_tr = data.K_bar[np.ix_(tr, tr)], data.l[np.ix_(tr, tr)]
    fresh = sample_kernels(rng, K_tr, l_tr, law, cell["fig_samples"])
    out = {}
    for noise, m in (("gaussian", "socp_g"), ("finite", "socp")):
        f = RSVMSOCP(U.K_bar, y_tr, U.beta(noise, rule="paper"), C=C)
        prev = None
        for eps in cell["eps_grid"]:
            f.set_params(kappa=max(kappa(eps, noise, allow_negative=True), 0.0))
            sol = _socp(f, warm_start=prev)
            prev = None if sol is None else sol["alpha"]
            eff = np.nan if sol is None else epsilon_effective(sol["alpha"], y_tr, sol["t"], fresh)
            out.setdefault(m, []).append(eff)
    return out


FIG3_LAWS = ("gaussian", "uniform", "beta", "beta55")


def figure_cells(cfg: dict) -> list[dict]:
    cells = []
    base = {"n_folds": cfg["n_folds"], "n_per_class": cfg["n_per_class"], "n_samples": cfg["n_samples"]}
    for regime in cfg["regimes"]:
        for kind, laws in (("fig1", LAWS), ("fig2", LAWS), ("fig3", FIG3_LAWS)):
            for law in laws:
                for ds in range(cfg["fig_datasets"]):
                    c = dict(base, regime=regime, kind=kind, law=law, dataset=ds)
                    if kind == "fig3":
                        c.update(
                            eps_grid=list(cfg["eps_grid"]) if len(cfg["eps_grid"]) > 3 else [0.05, 0.1, 0.3, 0.5],
                            fig_samples=cfg["fig_samples"],
                        )
                    else:
                        c["scales"] = list(FIG_SCALES)
                    cells.append(c)
    return cells


#: Line styles per method: open markers of different sizes and dash patterns, so that coinciding
#: curves (SOCP(g) and QN(g) in Fig. 1, every RSVM and the SVM at kappa = 0) stay visible.
STYLES = {
    "svm": dict(color="k", linestyle="-", marker="o", markersize=4),
    "socp_g": dict(color="tab:blue", linestyle="-", marker="s", markersize=10, fillstyle="none", linewidth=2.5),
    "qn_g": dict(color="tab:cyan", linestyle="--", marker="x", markersize=7),
    "socp": dict(color="tab:red", linestyle="-", marker="^", markersize=10, fillstyle="none", linewidth=2.5),
    "qn": dict(color="tab:orange", linestyle=":", marker="+", markersize=9),
    "qp_g": dict(color="tab:blue", linestyle="--", marker="D", markersize=8, fillstyle="none"),
    "qp": dict(color="tab:red", linestyle=":", marker="v", markersize=6),
}


def plot_figures(cells, results, out: Path) -> list[str]:
    # pyplot-free figures: no global backend switch (that would stop a notebook from showing its figures)
    from matplotlib.figure import Figure

    files = []
    regimes = [r for r in REGIMES if any(c.get("regime", "default") == r for c in cells)]
    constructions = {  # the paper's construction, and ours with a fixed training epsilon
        "paper": "train kappa = test kappa",
        "fixed": f"train epsilon = {FIG_EPS}",
    }
    for kind, laws, ylabel in (
        ("fig1", LAWS, "RobustErr (%)"),
        ("fig2", LAWS, "RobustErr (%)"),
        ("fig3", FIG3_LAWS, "epsilon_effective"),
    ):
        panels = [(r, None) for r in regimes] if kind == "fig3" else [(r, k) for r in regimes for k in constructions]
        fig = Figure(figsize=(4 * len(laws), 3.4 * len(panels)))
        axes = fig.subplots(len(panels), len(laws), squeeze=False)
        for row, (regime, cons) in zip(axes, panels):
            for ax, law in zip(row, laws):
                idx = [
                    k
                    for k, c in enumerate(cells)
                    if c["kind"] == kind and c["law"] == law and c.get("regime", "default") == regime
                ]
                if not idx:
                    continue
                x = cells[idx[0]]["scales"] if kind != "fig3" else cells[idx[0]]["eps_grid"]
                res = [results[k] if cons is None else results[k][cons] for k in idx]
                for m in sorted(res[0], key=lambda m: -STYLES.get(m, {}).get("markersize", 6)):  # big marks first
                    vals = np.nanmean(np.array([r[m] for r in res], dtype=float), axis=0)
                    ax.plot(x, vals, label=METHOD_TITLES.get(m, m), **STYLES.get(m, {}))
                if kind == "fig3":
                    ax.plot(x, x, "k--", label="ideal")
                    ax.set_xlabel("epsilon")
                    ax.set_title(f"{law} ({regime})", fontsize=9)
                else:
                    ax.set_xlabel("kappa (test noise scale" + (" = training kappa)" if cons == "paper" else ")"))
                    ax.set_title(
                        f"{law}{' i.i.d.' if kind == 'fig2' else ''}, {regime} regime: {constructions[cons]}",
                        fontsize=9,
                    )
                ax.set_ylabel(ylabel)
                ax.legend(fontsize=7)
        fig.suptitle(
            {
                "fig1": "[BBBB10] Fig. 1: RobustErr of RSVM_SOCP, RSVM_QN (and (g)) vs SVM, C = 10",
                "fig2": "[BBBB10] Fig. 2: RobustErr of RSVM_QP (and (g)) vs SVM under i.i.d. noise, C = 10",
                "fig3": "[BBBB10] Fig. 3: epsilon_effective of RSVM_SOCP and RSVM_SOCP^(g), C = 10",
            }[kind]
        )
        fig.tight_layout()
        path = out / f"{kind}.png"
        fig.savefig(path, dpi=90)
        files.append(str(path))
    return files


# ----------------------------------------------------------------------------------------
# the experiment: table cells, then figure cells; the report writes the table and the figures
# ----------------------------------------------------------------------------------------
def cells(quick: bool) -> list[dict]:
    cfg = QUICK if quick else FULL
    return table_cells(cfg) + figure_cells(cfg)


def result_fields(cell: dict):
    """What run_cell returns for ``cell``: a table cell's errors (in percent; null where no route certified
    the grid point), CPU times and solver figures, or a figure cell's curves (NaN where uncertified)."""
    if "kind" not in cell:
        grid = ListOf(ListOf(Maybe(Number(0, 100)), len(cell["eps_grid"])), len(cell["C_grid"]))
        errors = {m: MapOf(grid, keys=METRICS) for m in METHODS if m != "svm"}
        errors["svm"] = MapOf(ListOf(Maybe(Number(0, 100)), len(cell["C_grid"])), keys=METRICS)
        noises = ("gaussian", "finite")
        info = {
            "fallbacks": Number(0, integer=True),
            "uncertified": Number(0, integer=True),
            "socp_iterations": Number(0, nan=True),  # NaN: no grid point certified
            "qn_iterations": Number(0, nan=True),
            "qn_violation": Number(0),
            "beta_hat_min": MapOf(Number(), keys=noises),
            "neg_eig_mass": MapOf(Number(0, 1), keys=noises),
        }
        return Record(
            {
                "errors": Record(errors),
                "times": MapOf(Number(0), keys=METHODS),
                "info": Record(info),
                "warnings": ListOf(Text()),
            }
        )
    if cell["kind"] == "fig3":  # epsilon_effective per method along eps_grid
        return MapOf(ListOf(Number(0, 1, nan=True), len(cell["eps_grid"])), keys=("socp_g", "socp"))
    methods = ("svm", "socp_g", "qn_g", "socp", "qn") if cell["kind"] == "fig1" else ("svm", "qp_g", "qp")
    curves = MapOf(ListOf(Number(0, 100, nan=True), len(cell["scales"])), keys=methods)
    return Record({"paper": curves, "fixed": curves})


def run_cell(cell: dict) -> dict:
    """A figure cell (it has a ``kind``) or a table cell."""
    return figure_cell(cell) if "kind" in cell else table_cell(cell)


def report(run) -> tuple[str, bool]:
    """``table1.md`` / ``table1.csv``, ``fig1.png`` - ``fig3.png`` (when figure cells ran) and ``summary.json``."""
    cfg = QUICK if run.quick else FULL
    table = [(c, r) for c, r in zip(run.cells, run.results) if "kind" not in c]
    figs = [(c, r) for c, r in zip(run.cells, run.results) if "kind" in c]
    tcells, results = [c for c, _ in table], [r for _, r in table]
    title = "[BBBB10], Table 1 reproduction" + (
        f" (--quick: {cfg['n_datasets']} datasets of {2 * cfg['n_per_class']} points, C in {list(cfg['C_grid'])}, "
        f"epsilon in {list(cfg['eps_grid'])})"
        if run.quick
        else ""
    )
    md = write_table(tcells, results, cfg, run.out, title)
    times = {m: float(sum(r["times"][m] for r in results)) for m in METHODS}
    fallbacks = int(sum(r["info"]["fallbacks"] for r in results))
    uncertified = {
        regime: int(sum(r["info"].get("uncertified", 0) for c, r in zip(tcells, results) if c["regime"] == regime))
        for regime in cfg["regimes"]
    }
    n_warn = {  # the paper regime's large effective C makes Newton fall back to Clarabel at a few grid points
        regime: sum(len(r.get("warnings", [])) for c, r in zip(tcells, results) if c["regime"] == regime)
        for regime in cfg["regimes"]
    }
    summary = {
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items()},
        "cpu_seconds_per_method": times,
        "socp_fallbacks_to_clarabel": fallbacks,
        "socp_grid_points_uncertified_left_out": uncertified,
        "cells_with_warnings": n_warn,
        "max_qn_violation": float(max(r["info"]["qn_violation"] for r in results)),
        "mean_socp_newton_iterations": float(np.mean([r["info"]["socp_iterations"] for r in results])),
        "mean_qn_iterations": float(np.mean([r["info"]["qn_iterations"] for r in results])),
        "min_beta_hat_entry_relative": float(min(min(r["info"]["beta_hat_min"].values()) for r in results)),
        "beta_negative_eigenvalue_mass": {
            "/".join(k): dict(zip(("mean", "min", "max"), map(lambda v: round(v, 4), v)))
            for k, v in neg_eig_table(tcells, results, cfg).items()
        },
    }
    if figs:
        fcells, fres = [c for c, _ in figs], [r for _, r in figs]
        summary["figures"] = plot_figures(fcells, fres, run.out)
        fig3 = {}
        for regime, law in ((r, law) for r in cfg["regimes"] for law in FIG3_LAWS):
            idx = [k for k, c in enumerate(fcells) if c["kind"] == "fig3" and c["law"] == law and c["regime"] == regime]
            for m in ("socp_g", "socp"):
                fig3[f"{regime}/{law}/{m}"] = dict(
                    zip(
                        map(str, fcells[idx[0]]["eps_grid"]),
                        np.nanmean(np.array([fres[k][m] for k in idx], dtype=float), axis=0).round(4).tolist(),
                    )
                )
        summary["epsilon_effective"] = fig3
        curves = {}  # Figs. 1-2: mean RobustErr per x (FIG_SCALES), per regime, construction and law
        for c, r in zip(fcells, fres):
            if c["kind"] != "fig3":
                for cons, by_method in r.items():
                    key = f"{c['kind']}/{c['regime']}/{cons}/{c['law']}"
                    for m, v in by_method.items():
                        curves.setdefault(key, {}).setdefault(m, []).append(v)
        summary["figure_curves"] = {
            key: {m: np.nanmean(np.array(v, dtype=float), axis=0).round(2).tolist() for m, v in d.items()}
            for key, d in curves.items()
        }
    summary["wall_seconds_this_run"] = run.elapsed()
    (run.out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    short = {k: v for k, v in summary.items() if k not in ("config", "figure_curves", "beta_negative_eigenvalue_mass")}
    return md + "\n" + json.dumps(short, default=str), True


EXPERIMENT = GridExperiment(
    "bhadra2010-table1",
    "[BBBB10], Sec. 5.1: Table 1 and Figures 1-3 on the synthetic data",
    cells,
    run_cell,
    report,
    version="3",  # 3: RSVM_QP with its rank-one factor (the model is built at kappa = 0; rho was 0 before)
    result_fields=result_fields,
)


def benchmark(quick: bool = False) -> int:
    """Targets of the reproduction's wall time and of RSVM_QP (printed, not asserted).

    1. Table 1 cells, per regime: CPU seconds per method and per cell (``quick``: 1 sampled cell, else 3), one
       dataset's generation and one figure cell of each kind, extrapolated to the full run (300 + 30 table
       cells, 100 figure cells): CPU minutes, and that divided by 2 (the floor of the wall time on 2 cores).
    2. RSVM_SOCP at n = 160 (C = 10): the table's route (projected Newton, cold) vs the CVXPY DPP re-solve.
    3. RSVM_QP at n = 2000 (``quick``: 1000) against ``SVC(kernel="precomputed")`` on the same kernel, side by
       side, best of 3: the route's solve (building ``K_bar + kappa diag(rho)``, libsvm, polish, certificate,
       bias), the formulation built and solved from the raw arrays (validation: a Cholesky proving ``K_bar``
       PSD, and the Lanczos rank-one approximation of ``beta``), and ``KernelRobustSVC(method="qp").fit`` from
       the mean kernel and its variances.  Certified gaps, core count and peak memory (tracemalloc) beside.
    """
    import os

    from sklearn.svm import SVC
    from threadpoolctl import threadpool_limits

    from rsvm_conic.estimators.kernel_robust import KernelRobustSVC
    from rsvm_conic.uncertainty.kernel_matrix import check_mean_kernel, rank_one_approx

    print(f"(CPU seconds, time.process_time, BLAS limited to 1 thread; {os.cpu_count()} cores on this machine)")
    cfg = dict(FULL)
    cells = table_cells(cfg)
    fcells = figure_cells(cfg)
    total_cells = 0.0
    for regime in cfg["regimes"]:  # the paper regime's cells cost more (large effective C): timed apart
        rc = [c for c in cells if c["regime"] == regime]
        sample = [rc[0]] if quick else [rc[0], rc[7], rc[14]]
        per = {m: [] for m in METHODS}
        per_cell = []
        certs = {"fallbacks": 0, "uncertified": 0, "qn_violation": 0.0}
        for c in sample:
            _dataset(c["law"], c["dataset"], c["n_per_class"], c["n_samples"], regime=regime)  # generated once
            t0 = time.process_time()
            r = table_cell(c)
            per_cell.append(time.process_time() - t0)
            for m in METHODS:
                per[m].append(r["times"][m])
            certs["fallbacks"] += r["info"]["fallbacks"]
            certs["uncertified"] += r["info"]["uncertified"]
            certs["qn_violation"] = max(certs["qn_violation"], r["info"]["qn_violation"])
        n_cells = len(rc)
        print(
            f"Table 1, {regime} regime: CPU seconds per cell (mean of {len(sample)} cells; n = 160 training points; "
            f"{len(cfg['C_grid'])} x {len(cfg['eps_grid'])} grid, both noise models)"
        )
        for m in METHODS:
            v = float(np.mean(per[m]))
            print(f"  {METHOD_TITLES[m]:<8} {v:8.3f} s/cell -> {v * n_cells / 60:7.1f} CPU-min for {n_cells} cells")
        cell_s = float(np.mean(per_cell))
        total_cells += cell_s * n_cells
        print(f"  cell     {cell_s:8.3f} s/cell -> {cell_s * n_cells / 60:7.1f} CPU-min (the methods plus folds, rows)")
        print(
            f"  certificates: RSVM_SOCP grid points certified after a fallback to Clarabel {certs['fallbacks']}, "
            f"certified by no route (left out) {certs['uncertified']} "
            f"(of {len(sample) * 2 * len(cfg['C_grid']) * len(cfg['eps_grid'])}); max QN constraint violation "
            f"{certs['qn_violation']:.1e}"
        )
    with threadpool_limits(1):
        _dataset.cache_clear()
        t0 = time.process_time()
        _dataset("beta", cfg["n_datasets"] - 1, cfg["n_per_class"], cfg["n_samples"])
        t_data = time.process_time() - t0
        t_fig = {}
        for kind in ("fig1", "fig2", "fig3"):
            cell = next(x for x in fcells if x["kind"] == kind and x["law"] == "uniform" and x["dataset"] == 0)
            t0 = time.process_time()
            figure_cell(cell)
            t_fig[kind] = time.process_time() - t0
    n_data = 3 * sum(n_datasets(cfg, r) for r in cfg["regimes"]) + 3 * len(cfg["regimes"]) * cfg["fig_datasets"]
    n_fig = {k: sum(x["kind"] == k for x in fcells) for k in t_fig}
    total = total_cells + t_data * n_data + sum(t_fig[k] * n_fig[k] for k in t_fig)
    import resource

    from ._bench import peak_mb

    with threadpool_limits(1):
        peak_cell = peak_mb(lambda: table_cell(cells[0]))
    print(
        f"  datasets {t_data:8.3f} s each x {n_data}; figure cells "
        + ", ".join(f"{k} {t_fig[k]:.3f} s x {n_fig[k]}" for k in t_fig)
        + f"\n  full run (table + figures), extrapolated: {total / 60:.1f} CPU-min; on 2 cores >= "
        f"{total / 120:.1f} min wall: {total / 120 / 8:.2f} x the 8 min target (loky start-up, the datasets each "
        f"worker generates again and a loaded machine add to it)\n  peak memory: one table cell "
        f"{peak_cell:.1f} MB (tracemalloc, its dataset's generation included), this process "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB (max RSS)"
    )
    with threadpool_limits(1):
        data, unc = _dataset("uniform", 0, 100, 100)
        tr = np.arange(160)
        U = unc.subset(tr)
        f = RSVMSOCP(U.K_bar, data.y[tr], U.beta("finite", rule="paper"), C=10.0)
        t_newton, t_cla, gaps = [], [], []
        f.solve("clarabel")  # compile once (DPP)
        for eps in (0.05, 0.2, 0.5) if quick else EPS_GRID:
            f.set_params(kappa=kappa(eps, "finite"))
            t0 = time.process_time()
            a = f.solve("newton")
            t_newton.append(time.process_time() - t0)
            t0 = time.process_time()
            b = f.solve("clarabel")
            t_cla.append(time.process_time() - t0)
            gaps.append(abs(a.objective - b.objective) / max(1.0, abs(b.objective)))
        print(
            f"RSVM_SOCP n=160 (C=10): projected Newton median {np.median(t_newton) * 1e3:.1f} ms, CVXPY+Clarabel "
            f"DPP re-solve median {np.median(t_cla) * 1e3:.1f} ms (ratio "
            f"{np.median(t_cla) / np.median(t_newton):.1f}x); "
            f"max relative objective gap {max(gaps):.1e}"
        )
        _bench_qp(1000 if quick else 2000, SVC, KernelRobustSVC, check_mean_kernel, rank_one_approx)
    return 0


def _bench_qp(n, SVC, KernelRobustSVC, check_mean_kernel, rank_one_approx):
    import tracemalloc

    big = make_bhadra2010(1, "uniform", n_per_class=n // 2, n_samples=2)
    rng = np.random.default_rng(0)
    K, y = big.K_bar, big.y
    beta = (0.25 * K) ** 2 * (1 + 0.1 * rng.random((n, n)))
    beta = 0.5 * (beta + beta.T)
    f = RSVMQP(K, y, beta, C=10.0, kappa=1.0)
    kappas = (1.0, 1.5, 2.0)

    def best(fn, repeats=3):
        ts = []
        for _ in range(repeats):
            t0 = time.process_time()
            out = fn()
            ts.append(time.process_time() - t0)
        return min(ts), out

    def first_solve():  # a new kappa on a formulation built before: K_bar + kappa diag(rho), then the solve
        f.set_params(kappa=kappas[0] + rng.random())
        return f.solve("libsvm")

    t_svc, t_route, t_full, t_est, gaps = [], [], [], [], []
    for k in kappas:  # the two sides alternate (same load on both)
        f.set_params(kappa=k)
        Km = f.modified_kernel().copy()
        t_svc.append(best(lambda: SVC(C=10.0, kernel="precomputed", tol=1e-7).fit(Km, y))[0])
        t, sol = best(first_solve)
        t_route.append(t)
        gaps.append(sol.certificate.gap_rel)
        t, sol = best(lambda: RSVMQP(K, y, beta, C=10.0, kappa=k).solve("libsvm"))
        t_full.append(t)
        gaps.append(sol.certificate.gap_rel)
        t, est = best(lambda: KernelRobustSVC(method="qp", epsilon=0.1, C=10.0).fit(K, y, sigma2=beta))
        t_est.append(t)
        gaps.append(est.solver_stats_["gap_rel"])
    t_svc_K = best(lambda: SVC(C=10.0, kernel="precomputed", tol=1e-7).fit(K, y))[0]
    t_check = best(lambda: check_mean_kernel(K))[0]
    t_rank = best(lambda: rank_one_approx(beta))[0]
    tracemalloc.start()
    first_solve()
    peak_route = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.reset_peak()
    SVC(C=10.0, kernel="precomputed", tol=1e-7).fit(Km, y)
    peak_svc = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    svc = float(np.median(t_svc))
    r_route, r_full, r_est = (float(np.median(t)) / svc for t in (t_route, t_full, t_est))
    print(
        f"RSVM_QP n={n} (C=10, kappa in {list(kappas)}; best of 3, medians over kappa): "
        f"SVC(kernel='precomputed') {svc * 1e3:.1f} ms on the modified kernel ({t_svc_K * 1e3:.1f} ms on K_bar)\n"
        f"  route solve (modified kernel + libsvm + polish + certificate + bias) "
        f"{np.median(t_route) * 1e3:.1f} ms: ratio {r_route:.2f} "
        f"(target <= 1.2: {'met' if r_route <= 1.2 else 'NOT met'})"
        f"\n  RSVMQP(K_bar, y, beta) built and solved {np.median(t_full) * 1e3:.1f} ms: ratio {r_full:.2f}; "
        f"KernelRobustSVC(method='qp').fit(K_bar, y, sigma2) {np.median(t_est) * 1e3:.1f} ms: ratio {r_est:.2f}\n"
        f"  of which O(n^3)/Lanczos preprocessing SVC does not do: proving K_bar PSD (check_mean_kernel) "
        f"{t_check * 1e3:.1f} ms, rank-one approximation of beta {t_rank * 1e3:.1f} ms\n"
        f"  certified relative gaps max {max(gaps):.1e} (tolerance 1e-6); peak memory (tracemalloc) route "
        f"{peak_route:.1f} MB, SVC {peak_svc:.1f} MB"
    )


def _instance(kind: str):
    def build():
        data = make_bhadra2010(7, "uniform", n_per_class=30, n_samples=50)
        unc = KernelUncertainty.from_samples(data.K_samples, data.K_bar)
        tr, te = np.arange(48), np.arange(48, 60)
        U = unc.subset(tr)
        rows = data.K_samples[:, te][:, :, tr].mean(axis=0)
        beta = U.beta("finite", rule="paper")
        k = kappa(0.1, "finite")
        f = (RSVMQP if kind == "qp" else RSVMSOCP)(U.K_bar, data.y[tr], beta, C=10.0, kappa=k)
        return f, rows, data.y[te]

    return build


INSTANCES = {
    "rsvm-qp-small": ProblemInstance(
        "rsvm-qp-small",
        "RSVM_QP ([BBBB10] Thm 4), n=48: libsvm vs Clarabel vs SCS",
        _instance("qp"),
        backends=("libsvm", "clarabel", "scs"),
        rtol=1e-5,
    ),
    "rsvm-socp-small": ProblemInstance(
        "rsvm-socp-small",
        "RSVM_SOCP ([BBBB10] eq. 16), n=48: projected Newton vs cone interior point vs Clarabel vs SCS",
        _instance("socp"),
        backends=("newton", "ipm", "clarabel", "scs"),
        rtol=1e-5,
    ),
}
REPRODUCTIONS = {"bhadra2010-table1": EXPERIMENT}
BENCHMARKS = {"bhadra2010-table1": benchmark}
