"""[BBBB10], Sec. 5.1: Table 1 and Figures 1-3 on the synthetic data.

``rsvm-conic reproduce bhadra2010-table1 [--quick] [--out DIR] [--n-jobs 2]`` (``EXPERIMENT``, a
:class:`rsvm_conic.runner.GridExperiment`): the table and figure cells in ``OUT/results.jsonl`` (resumable),
``table1.md`` / ``table1.csv``, ``fig1.png`` - ``fig3.png`` and ``table1.json`` beside it (:func:`summarise`:
the run's provenance and every number the tables and figures print); :func:`partial_table` tabulates an
interrupted run.  ``bhadra2010-readings`` (:mod:`.bhadra2010_readings`) runs the same protocol under the readings
Sec. 5.1 leaves open.

Protocol (Sec. 5.1.1): three noise laws, 20 data sets of 2 x 100 points, 100 noisy kernels each, 5-fold CV over
the paper's ``C x epsilon`` grid, seven classifiers (RSVM_QP, _SOCP, _QN with Gaussian (g) and finite-support noise
models, and the nominal SVM).  Two readings of the data scale (``REGIMES``), one table block each: ``"default"``,
the generator's points, where our nominal SVM keeps a NomErr accuracy of 91-98%, against the paper's 53-59%; and
``"paper"``, points x ``sqrt(1000)`` with centres (1, 1) on ``PAPER_DATASETS = 10`` data sets, whose RobustErr
cells spread by 9-35 points (sd over the stored full run's 10 data sets) and stay inconclusive.  Verdicts:
:func:`judge` (the rule of :func:`._reproduction.cell_verdict`, window ``TOL`` = 5 points), with the measurements
that bear on a not-reproduced cell (:func:`causes`); :func:`paper_claims` and :func:`figure_claims` judge the
claims of the text and of the figures.

The protocol, the verdict rule, the two readings and the implementation choices (the kernels, the solvers and
their warm starts, the bias, the figures' test noise) are in the documentation's reproductions page, section
"[BBBB10] Table 1 and Figures 1-3".
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
from rsvm_conic.formulations.kernel_robust import KernelRobustQNProblem, KernelRobustQPProblem, KernelRobustSOCPProblem
from rsvm_conic.solvers.kernel_uncertainty import paper_bias
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
from rsvm_conic.exceptions import SolverError
from rsvm_conic.solvers.svm_dual import libsvm_dual
from rsvm_conic.uncertainty.chance import kappa
from rsvm_conic.uncertainty.kernel_matrix import KernelUncertainty

from ._reproduction import (
    SHORT,
    VERDICTS,
    CellVerdict,
    cell_verdict,
    claim_verdict,
    datasets_needed,
    fmt_pm,
    provenance,
)

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
#: The abbreviations of every table this module and :mod:`.bhadra2010_readings` print ([BBBB10], eqs. 18-20).
ABBREVIATIONS = (
    "Abbreviations: ME = MajErr, the share of test points whose majority vote over their noisy kernels is wrong "
    "([BBBB10, eq. 18]); RE = RobustErr, the share of test points with at least one noisy kernel misclassified "
    "(eq. 19); NE = NomErr, the share of noisy kernels misclassified, each counted as a point (eq. 20); the tables "
    "print accuracies, 100 - error. QP, SOCP, QN = RSVM_QP, RSVM_SOCP, RSVM_QN; (g) = the formulation for Gaussian "
    "noise (Thm 1), without it for finite-support noise (Thms 2-3); SVM = the nominal SVM on the mean kernel; "
    "R = reproduced, N = not reproduced, I = inconclusive."
)
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
#: Neighbours of the paper regime, run by ``bhadra2010-readings`` (:mod:`.bhadra2010_readings`): the same centres
#: at 10x less and 10x more effective C, and the same scale at the default centres.
REGIME_VARIANTS = {
    "paper-s100": {"data_scale": 10.0, "center": [1.0, 1.0]},
    "paper-s10000": {"data_scale": 100.0, "center": [1.0, 1.0]},
    "paper-c22": {"data_scale": PAPER_SCALE, "center": [2.0, 2.0]},
}
REGIME_TITLES.update(
    {
        "paper-s100": "points x 10 (the C grid x 100), centres (1, 1)",
        "paper-s10000": "points x 100 (the C grid x 10^4), centres (1, 1)",
        "paper-c22": "points x sqrt(1000) (the C grid x 1000), centres (2, 2)",
    }
)
ALL_REGIMES = {**REGIMES, **REGIME_VARIANTS}
#: Readings of the noise that Sec. 5.1 leaves open (keys added to a cell; absent = the reading of the main run).
#: Run by ``bhadra2010-readings``; the main run uses none of them.
READINGS = {
    "symmetric": {"noise": "symmetric"},
    "symmetric-beta": {"noise": "symmetric", "beta_rule": "symmetric"},
    "random-l": {"multiplier": "random"},
    "qn-multistart": {"qn_starts": 3},
    "test-noise": {"test_noise": "kappa_l"},
}
READING_TITLES = {
    "base": "the main run's reading",
    "symmetric": "symmetric noise Z_ij = Z_ji, the paper's beta",
    "symmetric-beta": "symmetric noise Z_ij = Z_ji, beta for symmetric noise (off-diagonal doubled)",
    "random-l": "random multiplier l_ij = l_ji = 0.25 abs(K_ij) u_ij, u_ij ~ U(0, 1)",
    "qn-multistart": "RSVM_QN with 3 random starts at every grid point",
    "test-noise": "Figs. 1-2 test noise bounded by kappa l_ij",
}
#: The verdict window: percentage points of accuracy (see :func:`._reproduction.cell_verdict`).
TOL = 5.0

#: The paper regime's data sets in the full run: its cells cost about 3x the default reading's, up to 10x (large
#: effective C: RSVM_QN's DFP and RSVM_SOCP's fallbacks), and 10 keep the full run near 10 minutes on 2 idle
#: cores; see the module docstring for the half-widths this gives.
PAPER_DATASETS = 10
FULL = dict(
    n_datasets=20,
    n_folds=5,
    n_per_class=100,
    n_samples=100,
    C_grid=C_GRID,
    eps_grid=EPS_GRID,
    fig_samples=500,
    regimes=tuple(REGIMES),
    paper_datasets=PAPER_DATASETS,
)
QUICK = dict(
    n_datasets=2,
    n_folds=5,
    n_per_class=30,
    n_samples=40,
    C_grid=(1.0, 10.0),
    eps_grid=(0.1, 0.5),
    fig_samples=200,
    regimes=tuple(REGIMES),
    paper_datasets=2,
)


# ----------------------------------------------------------------------------------------
# data (cached per process: the folds of one dataset share it)
# ----------------------------------------------------------------------------------------
def dataset_seed(law: str, dataset: int, n_per_class: int) -> int:
    return seed_from_cell({"law": law, "dataset": dataset, "n_per_class": n_per_class, "what": "bhadra2010"})


def _dataset(cell: dict, iid: bool = False):
    """The data set of a cell: its law, index, sizes, scale and centre, and its reading of the noise."""
    return _dataset_cached(
        cell["law"],
        cell["dataset"],
        cell["n_per_class"],
        cell["n_samples"],
        iid,
        float(cell.get("data_scale", 1.0)),
        tuple(cell.get("center", REGIMES["default"]["center"])),
        cell.get("noise", "independent") == "symmetric",
        cell.get("multiplier", "fixed"),
    )


@functools.lru_cache(maxsize=2)
def _dataset_cached(law, dataset, n_per_class, n_samples, iid, data_scale, center, symmetric, multiplier):
    """One data set; every scale, centre and reading shares the seeds (paired: the same draws of the points)."""
    data = make_bhadra2010(
        dataset_seed(law, dataset, n_per_class) + int(iid),
        law,
        n_per_class=n_per_class,
        n_samples=n_samples,
        iid=iid,
        symmetric=symmetric,
        center=center,
        data_scale=data_scale,
        multiplier=multiplier,
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
        return f.solve(("newton", "clarabel"), newton=options)
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
    data, unc = _dataset(cell)
    beta_rule = cell.get("beta_rule", "paper")
    qn_starts = int(cell.get("qn_starts", QN_RANDOM_STARTS))
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
    betas = {noise: U.beta(noise, rule=beta_rule) for noise in ("gaussian", "finite")}
    # cause (b)'s measurement: the share of entries where the Gaussian beta is at most the finite-support one
    info["beta_g_le_f"] = float(np.mean(betas["gaussian"] <= betas["finite"]))

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
        beta = betas[noise]
        info["neg_eig_mass"][noise] = negative_eigenvalue_mass(beta)
        # RSVM_QP (libsvm)
        t0 = time.process_time()
        f = KernelRobustQPProblem(U.K_bar, y_tr, beta)
        for i, C in enumerate(Cs):
            for j, eps in enumerate(epss):
                f.set_params(C=C, kappa=max(kappa(eps, noise, allow_negative=True), 0.0))
                sol = f.solve("libsvm")
                record("qp" + suffix, i, j, sol["alpha"], sol["b"])
        flush()
        times["qp" + suffix] += time.process_time() - t0
        # RSVM_SOCP (projected Newton warm-started along the grid, Clarabel fallback)
        t0 = time.process_time()
        f = KernelRobustSOCPProblem(U.K_bar, y_tr, beta)
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
                info["fallbacks"] += int(bool(sol.info.get("fallback_from")))
                info["socp_iterations"].append(sol.info.get("iterations"))
                record("socp" + suffix, i, j, sol["alpha"], sol["b"])
        flush()
        times["socp" + suffix] += time.process_time() - t0
        # RSVM_QN (DFP on (17), warm start along epsilon + nominal start)
        t0 = time.process_time()
        f = KernelRobustQNProblem(
            U.K_bar, y_tr, beta, n_random=qn_starts, nominal_start=False, seed=seed_from_cell(cell)
        )
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
    """Datasets of a regime in a configuration (the paper regime and its neighbours may use fewer:
    ``paper_datasets``)."""
    if regime == "paper" or regime in REGIME_VARIANTS:
        return min(cfg["n_datasets"], cfg.get("paper_datasets", cfg["n_datasets"]))
    return cfg["n_datasets"]


def table_cells(cfg: dict, reading: dict | None = None) -> list[dict]:
    """The table's cells of a configuration; ``reading`` (optional) adds its keys to every cell."""
    cells = []  # dataset-major, so that an interrupted run covers every law and regime for its first datasets
    regimes = cfg["regimes"]
    for ds in range(cfg["n_datasets"]):
        for regime in [r for r in regimes if ds < n_datasets(cfg, r)]:
            for law in LAWS:
                for fold in range(cfg["n_folds"]):
                    cells.append(
                        {
                            "regime": regime,
                            **ALL_REGIMES[regime],
                            "law": law,
                            "dataset": ds,
                            "fold": fold,
                            "n_folds": cfg["n_folds"],
                            "n_per_class": cfg["n_per_class"],
                            "n_samples": cfg["n_samples"],
                            "C_grid": list(cfg["C_grid"]),
                            "eps_grid": list(cfg["eps_grid"]),
                            **(reading or {}),
                        }
                    )
    return cells


def block_of(cell: dict) -> str:
    """The table block of a cell: its regime, prefixed by its reading when it has one (``"reading: regime"``)."""
    return f"{cell['reading']}: {cell['regime']}" if "reading" in cell else cell["regime"]


def _per_dataset_mean(errs: np.ndarray, ds_index: np.ndarray, n_ds: int) -> np.ndarray:
    """``(n_ds,) + grid`` accuracy: 100 minus the mean error over each data set's folds (NaN where none certified)."""
    out = np.full((n_ds,) + errs.shape[1:], np.nan)
    with warnings.catch_warnings():  # a grid point no fold of a data set certified stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        for d in range(n_ds):  # a loop over data sets (at most 20), each a vectorised mean over its folds
            out[d] = 100.0 - np.nanmean(errs[ds_index == d], axis=0)
    return out


def _r(values, digits: int = 4) -> list:
    return [None if not np.isfinite(v) else round(float(v), digits) for v in np.asarray(values, dtype=float).ravel()]


def aggregate(cells: list[dict], results: list[dict]) -> dict:
    """The table's numbers per block, compact and JSON-able (what the report renders and the docs store).

    Per block (:func:`block_of`) and cell ``"law/metric/method"``: ``values``, the accuracy on each data set
    (mean over its folds) at the grid point with the best accuracy averaged over the data sets, that point's
    ``C`` and ``epsilon``, and for RobustErr cells ``me_at_point``, the MajErr accuracy on each data set at the
    same point.  Per block also: the data sets, scale and centre, the RSVM_SOCP grid points no route certified,
    the negative-eigenvalue mass of ``beta`` (mean, min, max over cells per law and noise model) and the
    smallest share of entries with ``beta_gaussian <= beta_finite`` over the cells of each law.
    """
    blocks = {}
    for b in dict.fromkeys(block_of(c) for c in cells):
        idx_b = [k for k, c in enumerate(cells) if block_of(c) == b]
        c0 = cells[idx_b[0]]
        datasets = sorted({cells[k]["dataset"] for k in idx_b})
        blk = {
            "regime": c0["regime"],
            "reading": c0.get("reading", "base"),
            "data_scale": float(c0.get("data_scale", 1.0)),
            "center": list(c0.get("center", REGIMES["default"]["center"])),
            "datasets": datasets,
            "n_folds": c0["n_folds"],
            "C_grid": list(c0["C_grid"]),
            "eps_grid": list(c0["eps_grid"]),
            "uncertified": int(sum(results[k]["info"].get("uncertified", 0) for k in idx_b)),
            "neg_eig": {},
            "beta_g_le_f_min": {},
            "cells": {},
        }
        for law in LAWS:
            idx = [k for k in idx_b if cells[k]["law"] == law]
            if not idx:
                continue
            ds_index = np.array([datasets.index(cells[k]["dataset"]) for k in idx])
            for noise in ("gaussian", "finite"):
                v = [results[k]["info"]["neg_eig_mass"][noise] for k in idx]
                blk["neg_eig"][f"{law}/{noise}"] = _r([np.mean(v), np.min(v), np.max(v)])
            shares = [results[k]["info"]["beta_g_le_f"] for k in idx if "beta_g_le_f" in results[k]["info"]]
            if shares:
                blk["beta_g_le_f_min"][law] = round(float(min(shares)), 6)
            for m in METHODS:
                acc = {
                    k: _per_dataset_mean(
                        np.array([results[i]["errors"][m][k] for i in idx], dtype=float), ds_index, len(datasets)
                    )
                    for k in METRICS
                }
                for metric in METRICS:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", RuntimeWarning)
                        mean = np.nanmean(acc[metric], axis=0)  # (C,) for the SVM, (C, eps) otherwise
                    if not np.isfinite(mean).any():
                        continue
                    best = np.unravel_index(int(np.nanargmax(mean)), mean.shape)
                    point = (slice(None),) + best
                    entry = {
                        "values": _r(acc[metric][point]),
                        "C": blk["C_grid"][best[0]],
                        "epsilon": blk["eps_grid"][best[1]] if mean.ndim == 2 else None,
                    }
                    if metric == "RE":
                        entry["me_at_point"] = _r(acc["ME"][point])
                    blk["cells"][f"{law}/{metric}/{m}"] = entry
        blocks[b] = blk
    return {"blocks": blocks}


def _values(blk: dict, law: str, metric: str, method: str) -> np.ndarray | None:
    e = blk["cells"].get(f"{law}/{metric}/{method}")
    return None if e is None else np.array([np.nan if v is None else v for v in e["values"]], dtype=float)


def judge(blk: dict, law: str, metric: str, method: str) -> CellVerdict:
    """The verdict of one cell of a block of :func:`aggregate` (:func:`._reproduction.cell_verdict` with
    ``TOL``; the nominal SVM's values on the same data sets give the tie flag)."""
    nominal = None if method == "svm" else _values(blk, law, metric, "svm")
    paper = PAPER_TABLE1[(law, metric)][METHODS.index(method)]
    return cell_verdict(_values(blk, law, metric, method), paper, TOL, nominal)


#: Known causes.  Each is attached to a cell only when measurements of the same run support it
#: (:func:`causes`), and the cell's note prints them.
REASONS = {
    "a": "the paper's RSVM^(g) RE of 91-94% is not reached: with kappa = -Phi^-1(epsilon) in the grid's range the "
    "Gaussian chance constraint is calibrated (epsilon_effective near epsilon, Fig. 3), so a test point near the "
    "boundary is wrong on some of its 100 sampled kernels, which RobustErr counts; attached when, at the cell's "
    "grid point, the test points right by majority vote but wrong on some sampled kernel account for the whole "
    "shortfall and Fig. 3 of the same run measures epsilon_effective within 50% of epsilon",
    "b": "the paper ranks RSVM^(g) above RSVM under Gaussian noise; but kappa = -Phi^-1(epsilon) is below "
    "sqrt(2 log(1/epsilon)) at every epsilon, so where the Gaussian beta is at most the finite-support one entrywise "
    "RSVM^(g) is the less cautious of the two; attached when the run's RSVM^(g) RE is at most its RSVM's (paired "
    "over data sets) and beta_gaussian <= beta_finite held on every entry of every training block of that law",
    "c": "the nominal SVM's RobustErr is set by how many test points the kernel noise can push across the boundary "
    "on at least one of their 100 samples, which the unstated data scale and centres control; attached when the "
    "other reading of the scale in the same run moves the nominal RE by more than the window plus both "
    "half-widths",
}


def causes(agg: dict, block: str, law: str, metric: str, method: str, v: CellVerdict) -> tuple[list[str], list[str]]:
    """``(measured, keys)`` for a cell that is not reproduced: the measurements of the same run printed in its
    note, and the keys of :data:`REASONS` those measurements support (see each reason's last clause)."""
    blk = agg["blocks"][block]
    e = blk["cells"][f"{law}/{metric}/{method}"]
    measured, keys = [], []
    if v.verdict != "not reproduced":
        return measured, keys
    below = v.mean < v.paper
    if metric == "RE" and below:
        re, me = _values(blk, law, "RE", method), np.array([np.nan if x is None else x for x in e["me_at_point"]])
        both = np.isfinite(re) & np.isfinite(me)
        unstable = float(np.mean(me[both] - re[both]))
        eps = e["epsilon"]
        at = f"C = {e['C']:g}" + (f", epsilon = {eps:g}" if eps is not None else "")
        measured.append(
            f"at its grid point ({at}) {unstable:.1f}% of the test points are right by majority vote but wrong on "
            "at least one sampled kernel"
        )
        if method in ("socp_g", "qn_g"):
            eff = agg.get("fig3", {}).get(block, {}).get(law, {}).get("socp_g", {}).get(f"{eps:g}")
            if eff is not None:
                measured.append(f"Fig. 3 of this run: epsilon_effective {eff:.3f} at epsilon {eps:g}")
            if eff is not None and unstable >= v.paper - v.mean and abs(eff - eps) <= 0.5 * eps:
                keys.append("a")
        if method in ("socp_g", "qn_g") and law == "gaussian":
            base = method.removesuffix("_g")
            f_vals = _values(blk, law, "RE", base)
            ok = np.isfinite(re) & np.isfinite(f_vals)
            d = float(np.mean(re[ok] - f_vals[ok]))
            share = blk["beta_g_le_f_min"].get(law)
            k_g, k_f = (max(kappa(eps, noise, allow_negative=True), 0.0) for noise in ("gaussian", "finite"))
            measured.append(
                f"{METHOD_TITLES[method]} - {METHOD_TITLES[base]} = {d:+.2f} points (paired); kappa at epsilon "
                f"{eps:g}: {k_g:.3f} (Gaussian) vs {k_f:.3f} (finite support)"
                + ("" if share is None else f"; beta_gaussian <= beta_finite on >= {100 * share:.2f}% of the entries")
            )
            if d <= 0 and share is not None and share >= 1.0:
                keys.append("b")
    if method == "svm" and metric == "RE":
        for other, ob in agg["blocks"].items():
            if other == block or (ob["data_scale"], ob["center"]) == (blk["data_scale"], blk["center"]):
                continue
            if f"{law}/RE/svm" not in ob["cells"]:
                continue
            ov = judge(ob, law, "RE", "svm")
            moved = abs(ov.mean - v.mean)
            measured.append(f"the {other} block of this run: {fmt_pm(ov.mean, ov.sd, ov.n)}")
            if moved > TOL + v.half_width + ov.half_width:
                keys.append("c")
                break
    return measured, keys


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
    md, rows = render_table(
        aggregate(sub, res),
        f"[BBBB10], Table 1 -- PARTIAL: {len(done_ds)} of {cfg['n_datasets']} datasets complete ({len(sub)} cells)",
    )
    md += f"\nCPU seconds per method over these cells: {cpu}\n"
    _write_table(part, md, rows)
    return md


def _write_table(out: Path, md: str, rows: list[dict]) -> None:
    (out / "table1.md").write_text(md)
    with open(out / "table1.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _cell_text(v: CellVerdict) -> str:
    tie = " tie" if v.tie else ""
    return f"{fmt_pm(v.mean, v.sd, v.n)}; {v.paper:.2f}: {SHORT[v.verdict]}{tie}"


def verdict_counts(agg: dict, block: str) -> dict:
    """Verdict counts of a block: ``reproduced``, ``not reproduced``, ``inconclusive``, ``tie`` (reproduced cells
    that tie the nominal SVM) and ``cells``."""
    blk = agg["blocks"][block]
    out = dict.fromkeys((*VERDICTS, "tie"), 0)
    out["cells"] = 0
    for law in LAWS:
        for metric in METRICS:
            for m in METHODS:
                if f"{law}/{metric}/{m}" not in blk["cells"]:
                    continue
                v = judge(blk, law, metric, m)
                out[v.verdict] += 1
                out["tie"] += int(v.verdict == "reproduced" and bool(v.tie))
                out["cells"] += 1
    return out


def render_table(agg: dict, title: str, titles: dict | None = None) -> tuple[str, list[dict]]:
    """Markdown and CSV rows of :func:`aggregate`'s blocks: every cell mean ± sd (n data sets), the paper's number
    and the verdict; under each block the counts, the notes of the cells not reproduced (difference, the
    measurements of the same run, and a cause where they support one) and the reproduced cells that tie the SVM."""
    titles = titles or {}
    lines = [
        f"# {title}",
        "",
        "Accuracy (%) = 100 - error. Each cell: ours as mean ± sd over data sets (number of data sets), each data "
        "set's value the mean over its folds at the grid point with the best mean accuracy; then the paper's number "
        "and the verdict.",
        f"Rule: **I** (inconclusive) when the half-width of the 95% confidence interval of our mean over data sets "
        f"exceeds {TOL:g} points (the mean is not known to within the window); otherwise **R** (reproduced) when "
        f"|ours - paper| <= {TOL:g} points, else **N** (not reproduced). **tie**: the column's mean is within "
        f"{TOL:g} points of the nominal SVM's on the same data sets (paired), so the cell shows no effect of the "
        "robust method.",
        ABBREVIATIONS,
    ]
    rows = []
    for block, blk in agg["blocks"].items():
        c = verdict_counts(agg, block)
        lines += [
            "",
            f"## {block}: {titles.get(block, block_title(blk))}, {len(blk['datasets'])} data set(s)",
            "",
            "| law | metric | " + " | ".join(METHOD_TITLES[m] for m in METHODS) + " |",
            "|---|---|" + "---|" * len(METHODS),
        ]
        notes, ties, hws = [], [], []
        for law in LAWS:
            for metric in METRICS:
                md_cells = []
                for m in METHODS:
                    e = blk["cells"].get(f"{law}/{metric}/{m}")
                    if e is None:
                        md_cells.append("-")
                        continue
                    v = judge(blk, law, metric, m)
                    hws.append(v.half_width)
                    md_cells.append(_cell_text(v))
                    measured, keys = causes(agg, block, law, metric, m, v)
                    name = f"{LAW_TITLES[law]} {metric} {METHOD_TITLES[m]}"
                    if v.verdict == "not reproduced":
                        notes.append("* " + _note(name, v, measured, keys))
                    if v.verdict == "reproduced" and v.tie:
                        ties.append(f"{name} ({v.nominal_diff:+.2f})")
                    rows.append(
                        {
                            "block": block,
                            "law": law,
                            "metric": metric,
                            "method": METHOD_TITLES[m],
                            "ours_mean": round(v.mean, 3),
                            "ours_sd": None if not np.isfinite(v.sd) else round(v.sd, 3),
                            "n_datasets": v.n,
                            "half_width_95": None if not np.isfinite(v.half_width) else round(v.half_width, 3),
                            "paper": v.paper,
                            "best_C": e["C"],
                            "best_epsilon": "" if e["epsilon"] is None else e["epsilon"],
                            "verdict": v.verdict,
                            "ties_nominal": "" if v.tie is None else v.tie,
                            "minus_nominal": "" if v.nominal_diff is None else round(v.nominal_diff, 3),
                            "causes": " ".join(keys),
                            "measured": "; ".join(measured),
                        }
                    )
                lines.append(f"| {LAW_TITLES[law]} | {metric} | " + " | ".join(md_cells) + " |")
        hw = np.array(hws, dtype=float)
        lines += [
            "",
            f"**{c['reproduced']} reproduced** (of which {c['tie']} tie the nominal SVM), **{c['not reproduced']} not "
            f"reproduced**, **{c['inconclusive']} inconclusive**, of {c['cells']} cells. Half-width of the 95% "
            f"interval of the mean: median {np.median(hw):.2f} points, largest {np.max(hw):.2f}."
            + spread_note(agg, block),
        ]
        if blk["uncertified"]:
            lines += [
                "",
                f"{blk['uncertified']} RSVM_SOCP grid-point solves no route certified (large effective C); each is "
                "left out of its data set's mean at that grid point.",
            ]
        if blk["neg_eig"]:
            masses = [
                f"{LAW_TITLES[k.split('/')[0]]} {k.split('/')[1]} {v[0]:.1%} [{v[1]:.1%}, {v[2]:.1%}]"
                for k, v in blk["neg_eig"].items()
            ]
            lines += [
                "",
                "Negative-eigenvalue mass of the estimated beta (sum |negative eigenvalues| / sum |eigenvalues|, "
                "mean [min, max] over cells; the paper says beta 'turns out to be PSD most of the times'): "
                + "; ".join(masses)
                + ".",
            ]
        if ties:
            lines += [
                "",
                "Reproduced but tied with the nominal SVM (column minus SVM, paired): " + ", ".join(ties) + ".",
            ]
        if notes:
            keys = sorted({k for n in notes for k in REASONS if f"cause ({k})" in n})
            lines += ["", "Not reproduced (with the measurements of this run):", ""] + notes
            lines += [""] + [f"({k}) {REASONS[k]}." for k in keys]
    return "\n".join(lines) + "\n", rows


def spread_note(agg: dict, block: str) -> str:
    """What the inconclusive cells of a block would need: their spread over data sets and the data sets for a
    95% half-width within ``TOL`` (:func:`._reproduction.datasets_needed`)."""
    blk = agg["blocks"][block]
    sds = [
        judge(blk, law, k, m).sd
        for law in LAWS
        for k in METRICS
        for m in METHODS
        if f"{law}/{k}/{m}" in blk["cells"] and judge(blk, law, k, m).verdict == "inconclusive"
    ]
    sds = [x for x in sds if np.isfinite(x)]
    if not sds:
        return ""
    need = sorted(datasets_needed(x, TOL) for x in sds)
    return (
        f" The {len(sds)} inconclusive cells spread by sd {np.median(sds):.1f} points over data sets (median; "
        f"largest {max(sds):.1f}): their half-width reaches {TOL:g} points with {need[len(need) // 2]} data sets "
        f"(median; largest {need[-1]})."
    )


def _note(name: str, v: CellVerdict, measured: list[str], keys: list[str]) -> str:
    return (
        f"{name}: {v.mean - v.paper:+.2f} points from the paper's {v.paper:.2f}"
        + "".join(f"; {x}" for x in measured)
        + "".join(f"; cause ({k})" for k in keys)
        + "."
    )


def not_reproduced_notes(agg: dict, block: str) -> list[str]:
    """The notes of a block's cells that are not reproduced, as under its table (difference, measurements of the
    same run, causes they support)."""
    blk, out = agg["blocks"][block], []
    for law in LAWS:
        for metric in METRICS:
            for m in METHODS:
                if f"{law}/{metric}/{m}" in blk["cells"]:
                    v = judge(blk, law, metric, m)
                    if v.verdict == "not reproduced":
                        measured, keys = causes(agg, block, law, metric, m, v)
                        out.append(_note(f"{LAW_TITLES[law]} {metric} {METHOD_TITLES[m]}", v, measured, keys))
    return out


def paper_claims(agg: dict) -> list[dict]:
    """The claims Sec. 5.1's text makes about Table 1 and Figs. 1-2, judged per block of a run.

    Each entry: ``block``, ``claim``, ``ours`` (the measured numbers), ``verdict`` (``reproduced``,
    ``not reproduced`` or ``inconclusive``) and ``how`` (the rule).  The claims: (1) RSVM_SOCP or RSVM_SOCP^(g) is
    best on every law and metric (no other column shown better, paired); (2) the SVM performs very badly on
    RobustErr (every RSVM's RE above the SVM's by more than the window, paired); (3) RSVM^(g) ranks above RSVM on
    RobustErr under Gaussian noise (SOCP, QN; paired over data sets, :func:`._reproduction.claim_verdict`);
    (4) the RSVM^(g) RobustErr cells of 91-94% (SOCP(g), QN(g), every law); (5) the nominal SVM's RE of 5-25% with
    a NE of 53-59% (every law); (6) beta "turns out to be PSD most of the times"; (7) Figs. 1-2: the SVM's
    RobustErr grows faster than each RSVM's (every panel).
    """
    out = []

    def add(block, claim, ours, verdict, how):
        out.append(dict(block=block, claim=claim, ours=ours, verdict=verdict, how=how))

    def fold(verdicts):  # a claim over several cells: not reproduced if any cell is, else inconclusive if any is
        return (
            "not reproduced"
            if "not reproduced" in verdicts
            else "inconclusive"
            if "inconclusive" in verdicts
            else "reproduced"
        )

    for block, blk in agg["blocks"].items():
        if not all(f"{law}/{k}/{m}" in blk["cells"] for law in LAWS for k in METRICS for m in METHODS):
            continue
        val = lambda law, k, m: judge(blk, law, k, m)  # noqa: E731
        best, rows, tied = [], [], 0
        for law in LAWS:
            for k in METRICS:
                socp = max(("socp", "socp_g"), key=lambda m: val(law, k, m).mean)
                tied += bool(val(law, k, socp).tie)
                ahead = []  # columns shown better than the better SOCP column (paired 95% interval above 0)
                for m in METHODS:
                    if m not in ("socp", "socp_g"):
                        d = _values(blk, law, k, m) - _values(blk, law, k, socp)
                        verdict, mean, h, _ = claim_verdict(d, TOL)
                        if verdict == "reproduced":
                            ahead.append(f"{METHOD_TITLES[m]} {mean:+.2f} ± {h:.2f}")
                best.append(not ahead)
                if ahead:
                    rows.append(f"{law} {k}: ahead of {METHOD_TITLES[socp]}: " + ", ".join(ahead))
        add(
            block,
            "RSVM_SOCP or RSVM_SOCP^(g) performs best in terms of all the error measures",
            (
                f"best on {sum(best)} of {len(best)} rows (" + "; ".join(rows) + ")"
                if rows
                else f"no column shown better on any of the {len(best)} rows"
            )
            + f"; the better SOCP column ties the nominal SVM on {tied} of {len(best)} rows",
            "reproduced" if all(best) else "not reproduced",
            "on every row no other column is shown better than the better SOCP column (paired difference's 95% "
            "interval above 0)",
        )
        verdicts, parts = [], []
        for law in LAWS:
            svm = _values(blk, law, "RE", "svm")
            for m in METHODS[:-1]:
                d = _values(blk, law, "RE", m) - svm
                verdict, mean, h, n = claim_verdict(d - TOL, TOL)
                verdicts.append(verdict)
                if verdict != "reproduced":
                    parts.append(f"{law} {METHOD_TITLES[m]} {mean + TOL:+.1f} ± {h:.1f}")
        add(
            block,
            "in terms of RobustErr the SVM performs very badly (every RSVM's RE above the SVM's)",
            "RSVM RE minus SVM RE, paired: "
            + ("; ".join(parts) if parts else f"all {len(verdicts)} above by > {TOL:g}"),
            fold(verdicts),
            f"each RSVM column's RE above the SVM's by more than {TOL:g} points (95% interval of the paired "
            "difference)",
        )
        verdicts, parts = [], []
        for m in ("socp", "qn"):
            d = _values(blk, "gaussian", "RE", m + "_g") - _values(blk, "gaussian", "RE", m)
            verdict, mean, h, n = claim_verdict(d, TOL)
            verdicts.append(verdict)
            parts.append(f"{METHOD_TITLES[m + '_g']} - {METHOD_TITLES[m]} = {mean:+.2f} ± {h:.2f} ({n})")
        add(
            block,
            "RSVM^(g) performs better than RSVM when the uncertainty is Gaussian (RobustErr)",
            "; ".join(parts),
            fold(verdicts),
            "the paired difference's 95% interval above 0",
        )
        cells = [(law, m) for law in LAWS for m in ("socp_g", "qn_g")]
        vs = [val(law, "RE", m) for law, m in cells]
        add(
            block,
            "RSVM^(g) RobustErr accuracy of 91-94% (SOCP(g), QN(g), every law)",
            "; ".join(f"{law} {METHOD_TITLES[m]} {_cell_text(v)}" for (law, m), v in zip(cells, vs)),
            fold([v.verdict for v in vs]),
            "the cells' verdicts",
        )
        vs = [(law, k, val(law, k, "svm")) for law in LAWS for k in ("RE", "NE")]
        add(
            block,
            "the nominal SVM's RobustErr accuracy of 5-25% with a NomErr accuracy of 53-59%",
            "; ".join(f"{law} {k} {_cell_text(v)}" for law, k, v in vs),
            fold([v.verdict for _, _, v in vs]),
            "the cells' verdicts",
        )
        if blk["neg_eig"]:
            low = min(v[1] for v in blk["neg_eig"].values())
            add(
                block,
                "the estimated beta turns out to be PSD most of the times",
                f"negative-eigenvalue mass above 0 in every cell (smallest {low:.2%}; per law and noise model: "
                + ", ".join(f"{k} {v[0]:.1%}" for k, v in blk["neg_eig"].items())
                + ")"
                if low > 0
                else f"PSD in some cells (smallest negative-eigenvalue mass {low:.2%})",
                "not reproduced" if low > 0 else "reproduced",
                "beta PSD (no negative eigenvalue) in at least half of the cells",
            )
    for block in agg.get("figures", {}):
        rows = [r for r in figure_claims(agg) if r["block"] == block and r["construction"] == "paper"]
        if rows:
            missed = [r for r in rows if r["verdict"] != "reproduced"]
            add(
                block,
                "Figs. 1-2: the SVM's RobustErr increases more rapidly than the RSVMs' (the paper's construction)",
                f"{len(rows) - len(missed)} of {len(rows)} panels x methods shown; not shown: "
                + "; ".join(
                    f"{r['fig']} {r['law']} {METHOD_TITLES[r['method']]} {r['svm_minus_method']:+.1f} "
                    f"({SHORT[r['verdict']]})"
                    for r in missed
                )
                if missed
                else f"all {len(rows)} panels x methods",
                fold([r["verdict"] for r in rows]),
                "per panel and method, the SVM's RE minus the method's averaged over the test noise scales, 95% "
                "interval above 0",
            )
    return out


def block_title(blk: dict) -> str:
    """A block's reading of the data scale and centre (and of the noise, for the alternative readings)."""
    regime = REGIME_TITLES.get(blk["regime"], blk["regime"])
    reading = blk.get("reading", "base")
    return regime if reading == "base" else f"{READING_TITLES.get(reading, reading)}; {regime}"


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
    data, unc = _dataset(cell, iid)
    tr, te = _folds(data.y, cell["n_folds"], dataset_seed(law, ds, cell["n_per_class"]))[0]
    U = unc.subset(tr)
    y_tr, y_te = data.y[tr], data.y[te]
    rng = np.random.default_rng(seed_from_cell(cell))
    C = 10.0
    if kind in ("fig1", "fig2"):
        K_te = data.K_bar[np.ix_(te, tr)]
        l_te = data.l[np.ix_(te, tr)]
        scales = cell["scales"]
        widen = TEST_NOISE_FACTOR[law] if cell.get("test_noise", "ours") == "kappa_l" else 1.0
        test_rows = [sample_kernels(rng, K_te, l_te, law, cell["n_samples"], noise_scale=widen * x) for x in scales]

        def robust_err(fit, rows):  # NaN where the fit was not certified
            if fit is None:
                return np.nan
            a, b = fit
            return kernel_robust_errors(_scores(a, b, y_tr, rows), y_te)["RE"]

        a_svm, b_svm = _nominal(U.K_bar, y_tr, C)
        paper = {"svm": [robust_err((a_svm, b_svm), rows) for rows in test_rows]}
        fixed = {"svm": list(paper["svm"])}
        betas = {noise: U.beta(noise, rule=cell.get("beta_rule", "paper")) for noise in ("gaussian", "finite")}

        def fits(noise, k, warm):  # the figure's RSVMs at training kappa k: {method: (alpha, b)}
            beta, suffix = betas[noise], "_g" if noise == "gaussian" else ""
            if kind == "fig2":
                s = KernelRobustQPProblem(U.K_bar, y_tr, beta, C=C, kappa=k).solve("libsvm")
                return {"qp" + suffix: (s["alpha"], s["b"])}
            s = _socp(KernelRobustSOCPProblem(U.K_bar, y_tr, beta, C=C, kappa=k), warm_start=warm)
            q = KernelRobustQNProblem(U.K_bar, y_tr, beta, C=C, kappa=k, n_random=0).solve("dfp")
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
    fresh = sample_kernels(rng, K_tr, l_tr, law, cell["fig_samples"], symmetric=cell.get("noise") == "symmetric")
    out = {}
    for noise, m in (("gaussian", "socp_g"), ("finite", "socp")):
        f = KernelRobustSOCPProblem(U.K_bar, y_tr, U.beta(noise, rule=cell.get("beta_rule", "paper")), C=C)
        prev = None
        for eps in cell["eps_grid"]:
            f.set_params(kappa=max(kappa(eps, noise, allow_negative=True), 0.0))
            sol = _socp(f, warm_start=prev)
            prev = None if sol is None else sol["alpha"]
            eff = np.nan if sol is None else epsilon_effective(sol["alpha"], y_tr, sol["t"], fresh)
            out.setdefault(m, []).append(eff)
    return out


#: Panel order of Figs. 1-3, as in the paper ("starting from left"): Gaussian, uniform, beta(0.5, 0.5) (and Fig. 3's
#: beta(5, 5)).  The table keeps the paper's Table 1 order (:data:`LAWS`).
FIG_LAWS = ("gaussian", "uniform", "beta")
FIG3_LAWS = ("gaussian", "uniform", "beta", "beta55")
#: The paper's figures' claims (Sec. 5.1.2): the SVM's RobustErr grows faster with the test noise than that of
#: these methods (Fig. 1: RSVM_SOCP, RSVM_QN; Fig. 2, i.i.d. noise: RSVM_QP).
FIG_CLAIM_METHODS = {"fig1": ("socp_g", "qn_g", "socp", "qn"), "fig2": ("qp_g", "qp")}
#: Test noise of Figs. 1-2 at test scale kappa: ours is ``kappa l Z`` with the base draw ``Z`` (half-width 0.5 for
#: the finite-support laws: ``|Z'| <= 0.5 kappa l``); the paper's reading ``|Z'| <= kappa l`` widens it by this
#: factor (Gaussian: ``N(0, kappa sigma)`` with ``sigma = l``, the same as ours).
TEST_NOISE_FACTOR = {"gaussian": 1.0, "uniform": 2.0, "beta": 2.0, "beta55": 2.0}
CONSTRUCTIONS = {  # the paper's construction, and ours with a fixed training epsilon
    "paper": "train kappa = test kappa",
    "fixed": f"train epsilon = {FIG_EPS}",
}


def figure_cells(cfg: dict, reading: dict | None = None, kinds=("fig1", "fig2", "fig3")) -> list[dict]:
    """Figure cells: fold 0 of every data set of the table's block (the paper averages "20 classifiers")."""
    cells = []
    base = {"n_folds": cfg["n_folds"], "n_per_class": cfg["n_per_class"], "n_samples": cfg["n_samples"]}
    for regime in cfg["regimes"]:
        for kind, laws in (("fig1", FIG_LAWS), ("fig2", FIG_LAWS), ("fig3", FIG3_LAWS)):
            if kind not in kinds:
                continue
            for law in laws:
                for ds in range(n_datasets(cfg, regime)):
                    c = dict(base, regime=regime, **ALL_REGIMES[regime], kind=kind, law=law, dataset=ds)
                    if kind == "fig3":
                        c.update(
                            eps_grid=list(cfg["eps_grid"]) if len(cfg["eps_grid"]) > 3 else [0.05, 0.1, 0.3, 0.5],
                            fig_samples=cfg["fig_samples"],
                        )
                    else:
                        c["scales"] = list(FIG_SCALES)
                    cells.append({**c, **(reading or {})})
    return cells


def figure_aggregate(cells: list[dict], results: list[dict]) -> dict:
    """The figures' numbers per block (compact, JSON-able; what :func:`plot_figures` draws and the docs store).

    ``fig3[block][law][method][epsilon]``: epsilon_effective, mean over the data sets.
    ``figures[block][kind][construction][law]``: ``x`` (the test noise scales), ``mean`` (RobustErr per method
    and x, mean over the data sets) and ``over_x`` (per method, each data set's RobustErr averaged over the x:
    the area under its curve over the range, divided by the number of points).
    """
    fig3, figs = {}, {}
    for c, r in zip(cells, results):
        b = block_of(c)
        if c["kind"] == "fig3":  # keyed in a fixed order (a result read back from the store has sorted keys)
            for m, vals in ((m, r[m]) for m in METHODS if m in r):
                d = fig3.setdefault(b, {}).setdefault(c["law"], {}).setdefault(m, {})
                for e, v in zip(c["eps_grid"], vals):
                    d.setdefault(f"{e:g}", []).append(v)
            continue
        for cons, by_method in ((k, r[k]) for k in CONSTRUCTIONS if k in r):
            d = figs.setdefault(b, {}).setdefault(c["kind"], {}).setdefault(cons, {}).setdefault(c["law"], {})
            d["x"] = list(c["scales"])
            for m in (m for m in METHODS if m in by_method):
                d.setdefault("curves", {}).setdefault(m, []).append(by_method[m])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for by_law in fig3.values():
            for by_m in by_law.values():
                for m, d in by_m.items():
                    by_m[m] = {e: round(float(np.nanmean(np.array(v, dtype=float))), 4) for e, v in d.items()}
        for by_kind in figs.values():
            for by_cons in by_kind.values():
                for by_law in by_cons.values():
                    for d in by_law.values():
                        curves = d.pop("curves")
                        d["mean"] = {m: _r(np.nanmean(np.array(v, dtype=float), axis=0), 2) for m, v in curves.items()}
                        d["over_x"] = {
                            m: _r(np.nanmean(np.array(v, dtype=float), axis=1), 2) for m, v in curves.items()
                        }
    return {"fig3": fig3, "figures": figs}


def figure_claims(agg: dict) -> list[dict]:
    """The figures' claims per block, construction, law and method: the SVM's RobustErr minus the method's,
    averaged over the test noise scales (a curve that grows faster lies above over the range; the largest scale
    alone saturates at 100% error for every method under Gaussian noise), paired over data sets, judged by
    :func:`._reproduction.claim_verdict` with ``TOL``."""
    rows = []
    for block, by_kind in agg.get("figures", {}).items():
        for kind, methods in FIG_CLAIM_METHODS.items():
            for cons, by_law in by_kind.get(kind, {}).items():
                for law in FIG_LAWS:
                    d = by_law.get(law)
                    if d is None:
                        continue
                    svm = np.array([np.nan if v is None else v for v in d["over_x"]["svm"]], dtype=float)
                    for m in methods:
                        other = np.array([np.nan if v is None else v for v in d["over_x"][m]], dtype=float)
                        verdict, mean, h, n = claim_verdict(svm - other, TOL)
                        rows.append(
                            dict(
                                block=block,
                                fig=kind,
                                construction=cons,
                                law=law,
                                method=m,
                                x=d["x"],
                                svm_minus_method=round(mean, 2),
                                half_width_95=round(h, 2) if np.isfinite(h) else None,
                                n=n,
                                verdict=verdict,
                            )
                        )
    return rows


def render_figure_claims(agg: dict) -> str:
    """The figures' claims as a table: rows (figure, law, method), a column per block and construction."""
    rows = figure_claims(agg)
    if not rows:
        return ""
    cols = list(dict.fromkeys((r["block"], r["construction"]) for r in rows))
    keys = list(dict.fromkeys((r["fig"], r["law"], r["method"]) for r in rows))
    by = {(r["block"], r["construction"], r["fig"], r["law"], r["method"]): r for r in rows}
    x = ", ".join(f"{v:g}" for v in rows[0]["x"])
    lines = [
        f"**Figs. 1-2: the SVM's RobustErr minus the method's, averaged over the test noise scales {x}** (points, "
        "mean ± 95% half-width over data sets, paired; the paper: the SVM's error grows faster). R when the interval "
        f"lies above 0; otherwise I when its half-width exceeds {TOL:g} points, else N.",
        "",
        "| figure | law | method | " + " | ".join(f"{b}, {CONSTRUCTIONS[c]}" for b, c in cols) + " |",
        "|---|---|---|" + "---|" * len(cols),
    ]
    for fig, law, m in keys:
        cells = []
        for b, c in cols:
            r = by.get((b, c, fig, law, m))
            if r is None:
                cells.append("-")
                continue
            h = "inf" if r["half_width_95"] is None else f"{r['half_width_95']:.2f}"
            cells.append(f"{r['svm_minus_method']:+.2f} ± {h} ({r['n']}): {SHORT[r['verdict']]}")
        lines.append(f"| {fig} | {law} | {METHOD_TITLES[m]} | " + " | ".join(cells) + " |")
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    lines += ["", ", ".join(f"{n} {v}" for v, n in counts.items()) + f" of {len(rows)}."]
    return "\n".join(lines) + "\n"


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


def plot_figures(agg: dict, out: Path, n_datasets_of: dict | None = None) -> list[str]:
    """``fig1.png`` - ``fig3.png`` from :func:`figure_aggregate`'s means, panels in the paper's order
    (:data:`FIG_LAWS`, :data:`FIG3_LAWS`); a row per block (and construction for Figs. 1-2)."""
    # pyplot-free figures: no global backend switch (that would stop a notebook from showing its figures)
    from matplotlib.figure import Figure

    n_datasets_of = n_datasets_of or {}
    files = []
    for kind, laws, ylabel in (
        ("fig1", FIG_LAWS, "RobustErr (%)"),
        ("fig2", FIG_LAWS, "RobustErr (%)"),
        ("fig3", FIG3_LAWS, "epsilon_effective"),
    ):
        if kind == "fig3":
            panels = [(b, None) for b in agg.get("fig3", {})]
        else:
            panels = [(b, c) for b, by_kind in agg.get("figures", {}).items() for c in by_kind.get(kind, {})]
        if not panels:
            continue
        fig = Figure(figsize=(4 * len(laws), 3.4 * len(panels)))
        axes = fig.subplots(len(panels), len(laws), squeeze=False)
        for row, (block, cons) in zip(axes, panels):
            n = n_datasets_of.get(block)
            avg = f"mean of {n} data sets" if n else "mean over data sets"
            for ax, law in zip(row, laws):
                if kind == "fig3":
                    d = agg["fig3"][block].get(law)
                    if d is None:
                        continue
                    for m in ("socp_g", "socp"):
                        xs = [float(e) for e in d[m]]
                        ax.plot(xs, list(d[m].values()), label=METHOD_TITLES[m], **STYLES[m])
                    ax.plot(xs, xs, "k--", label="ideal")
                    ax.set_xlabel("epsilon")
                    ax.set_title(f"{law} ({block}; {avg})", fontsize=9)
                else:
                    d = agg["figures"][block][kind][cons].get(law)
                    if d is None:
                        continue
                    for m in sorted(d["mean"], key=lambda m: -STYLES.get(m, {}).get("markersize", 6)):  # big first
                        vals = [np.nan if v is None else v for v in d["mean"][m]]
                        ax.plot(d["x"], vals, label=METHOD_TITLES.get(m, m), **STYLES.get(m, {}))
                    ax.set_xlabel("kappa (test noise scale" + (" = training kappa)" if cons == "paper" else ")"))
                    ax.set_title(
                        f"{law}{' i.i.d.' if kind == 'fig2' else ''}, {block}: {CONSTRUCTIONS[cons]} ({avg})",
                        fontsize=8,
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
        path = Path(out) / f"{kind}.png"
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
            "beta_g_le_f": Number(0, 1),
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


def summarise(run) -> dict:
    """The stored form of a run: provenance, configuration and :func:`aggregate` + :func:`figure_aggregate`."""
    table = [(c, r) for c, r in zip(run.cells, run.results) if "kind" not in c]
    figs = [(c, r) for c, r in zip(run.cells, run.results) if "kind" in c]
    agg = aggregate([c for c, _ in table], [r for _, r in table])
    if figs:
        agg.update(figure_aggregate([c for c, _ in figs], [r for _, r in figs]))
    results = [r for _, r in table]
    agg["provenance"] = provenance(run.name, run.quick, run.out, run.n_jobs, run.elapsed())
    agg["solver_counts"] = {
        "cpu_seconds_per_method": {m: round(float(sum(r["times"][m] for r in results)), 1) for m in METHODS},
        "socp_fallbacks_to_clarabel": int(sum(r["info"]["fallbacks"] for r in results)),
        "max_qn_violation": float(max(r["info"]["qn_violation"] for r in results)),
        "mean_socp_newton_iterations": round(float(np.mean([r["info"]["socp_iterations"] for r in results])), 2),
        "mean_qn_iterations": round(float(np.mean([r["info"]["qn_iterations"] for r in results])), 2),
        "min_beta_hat_entry_relative": float(min(min(r["info"]["beta_hat_min"].values()) for r in results)),
        "cells_with_warnings": {
            b: sum(len(r.get("warnings", [])) > 0 for c, r in table if block_of(c) == b) for b in agg["blocks"]
        },
    }
    return agg


def render(agg: dict, title: str) -> tuple[str, list[dict]]:
    """The report's markdown (the table blocks, then the figures' claims) and the table's CSV rows."""
    md, rows = render_table(agg, title)
    claims = render_figure_claims(agg)
    if claims:
        md += "\n" + claims
    return md, rows


def report(run) -> tuple[str, bool]:
    """``table1.md`` / ``table1.csv``, ``fig1.png`` - ``fig3.png`` (when figure cells ran) and ``table1.json``
    (:func:`summarise`: what the documentation stores and renders)."""
    cfg = QUICK if run.quick else FULL
    title = "[BBBB10], Table 1 reproduction" + (
        f" (--quick: {cfg['n_datasets']} datasets of {2 * cfg['n_per_class']} points, C in {list(cfg['C_grid'])}, "
        f"epsilon in {list(cfg['eps_grid'])})"
        if run.quick
        else ""
    )
    agg = summarise(run)
    agg["title"] = title
    md, rows = render(agg, title)
    _write_table(run.out, md, rows)
    if "figures" in agg:
        agg["figure_files"] = plot_figures(agg, run.out, {b: len(v["datasets"]) for b, v in agg["blocks"].items()})
    (run.out / "table1.json").write_text(json.dumps(agg, indent=1, default=str))
    return md + "\n" + solver_markdown(agg), True


def solver_markdown(agg: dict) -> str:
    """The solvers' figures over a run's table cells (:func:`summarise`'s ``solver_counts``), in Markdown."""
    s = agg["solver_counts"]
    cpu = ", ".join(f"{METHOD_TITLES[m]} {v:g}" for m, v in s["cpu_seconds_per_method"].items())
    warned = ", ".join(f"{b} {n}" for b, n in s["cells_with_warnings"].items())
    return (
        "\n".join(
            [
                "## Solvers over the table cells",
                "",
                f"* CPU seconds per method: {cpu}",
                "* RSVM_SOCP grid points that fell back from projected Newton to Clarabel: "
                f"{s['socp_fallbacks_to_clarabel']}",
                f"* largest constraint violation of RSVM_QN's penalty solution: {s['max_qn_violation']:.3g}",
                f"* mean projected-Newton iterations of RSVM_SOCP: {s['mean_socp_newton_iterations']:g}; mean "
                f"quasi-Newton iterations of RSVM_QN: {s['mean_qn_iterations']:g}",
                "* smallest entry of the PSD part of the estimated beta, relative to its largest magnitude: "
                f"{s['min_beta_hat_entry_relative']:.3g}",
                f"* cells with solver warnings, per block: {warned}",
            ]
        )
        + "\n"
    )


EXPERIMENT = GridExperiment(
    "bhadra2010-table1",
    "[BBBB10], Sec. 5.1: Table 1 and Figures 1-3 on the synthetic data",
    cells,
    run_cell,
    report,
    version="5",  # 5: the solvers certify more large-C grid points (SVM-duality bound); 4: per-data-set verdicts
    result_fields=result_fields,
)


def benchmark(quick: bool = False) -> int:
    """Targets of the reproduction's wall time and of RSVM_QP (printed, not asserted).

    1. Table 1 cells, per regime: CPU seconds per method and per cell (``quick``: 1 sampled cell, else 3), one
       dataset's generation and one figure cell of each kind, extrapolated to the full run (300 + 150 table
       cells, 300 + 150 figure cells): CPU minutes, and that divided by 2 (the floor of the wall time on 2 cores).
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
            _dataset(c)  # generated once
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
        _dataset_cached.cache_clear()
        t0 = time.process_time()
        _dataset(next(c for c in cells if c["law"] == "beta" and c["dataset"] == cfg["n_datasets"] - 1))
        t_data = time.process_time() - t0
        t_fig = {}
        for kind in ("fig1", "fig2", "fig3"):
            cell = next(x for x in fcells if x["kind"] == kind and x["law"] == "uniform" and x["dataset"] == 0)
            t0 = time.process_time()
            figure_cell(cell)
            t_fig[kind] = time.process_time() - t0
    # the table's data sets (shared with Figs. 1 and 3), Fig. 2's i.i.d. ones and Fig. 3's beta(5, 5) ones
    n_data = 7 * sum(n_datasets(cfg, r) for r in cfg["regimes"])
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
        f"{total / 120:.1f} min wall: {total / 120 / 10:.2f} x the 10 min target (loky start-up, the datasets each "
        f"worker generates again and a loaded machine add to it)\n  peak memory: one table cell "
        f"{peak_cell:.1f} MB (tracemalloc, its dataset's generation included), this process "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB (max RSS)"
    )
    with threadpool_limits(1):
        data, unc = _dataset(cells[0])
        tr = np.arange(160)
        U = unc.subset(tr)
        f = KernelRobustSOCPProblem(U.K_bar, data.y[tr], U.beta("finite", rule="paper"), C=10.0)
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
    f = KernelRobustQPProblem(K, y, beta, C=10.0, kappa=1.0)
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
        t, sol = best(lambda: KernelRobustQPProblem(K, y, beta, C=10.0, kappa=k).solve("libsvm"))
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
        f"\n  KernelRobustQPProblem(K_bar, y, beta) built and solved {np.median(t_full) * 1e3:.1f} ms: "
        f"ratio {r_full:.2f}; "
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
        f = (KernelRobustQPProblem if kind == "qp" else KernelRobustSOCPProblem)(
            U.K_bar, data.y[tr], beta, C=10.0, kappa=k
        )
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
