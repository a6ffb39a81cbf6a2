"""A grid experiment for the linear family: robustness to injected feature noise on real data.

Breast-cancer data (scikit-learn's copy of the UCI WDBC set), standardised; test
points are perturbed by Gaussian noise of covariance ``TEST_NOISE^2 Sigma_class``
(``Sigma_class``: class-wise covariances estimated on the training fold, shrunk, scaled
by ``MODEL_NOISE``; the models are told ``Sigma_class``); each cell fits one
model (nominal, robust p=2, Gaussian chance-constrained) on one fold with one
hyper-parameter value and reports clean and noisy test accuracy.  Cells are seeded from
their specification, so a run is reproducible to the last digit.

``rsvm-conic run linear-noise-grid [--quick] [--n-jobs 2 | --backend dask --scheduler ADDR]``: cells in
``OUT/results.jsonl``, the table in ``summary.md`` / ``summary.csv``.
"""

from __future__ import annotations

import csv
import itertools
import time

import numpy as np

from rsvm_conic.runner import GridExperiment, Number, Record, seed_from_cell

MODEL_NOISE = 0.05  # Sigma given to the models: MODEL_NOISE * (shrunk class covariance)
TEST_NOISE = 4.0  # test perturbations have covariance TEST_NOISE^2 * Sigma


def _data():
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return X, y


def _fold_indices(n, n_folds, fold, seed=0):
    perm = np.random.default_rng(seed).permutation(n)
    test = perm[fold::n_folds]
    return np.setdiff1d(perm, test), test


def run_cell(cell: dict) -> dict:
    """One fit + evaluation; everything random is seeded from the cell; one BLAS thread, so the
    numbers are identical in this process, in loky workers and on Dask."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return _run_cell(cell)


def _run_cell(cell: dict) -> dict:
    from sklearn.preprocessing import StandardScaler

    from rsvm_conic.estimators import ChanceConstrainedSVC, NominalSVC, RobustSVC

    X, y = _data()
    tr, te = _fold_indices(len(y), cell["n_folds"], cell["fold"])
    scaler = StandardScaler().fit(X[tr])
    Xtr, Xte = scaler.transform(X[tr]), scaler.transform(X[te])
    classes = np.unique(y)
    Sigma = np.stack([np.cov(Xtr[y[tr] == c].T) * 0.5 + 0.5 * np.eye(X.shape[1]) for c in classes])
    Sigma *= MODEL_NOISE
    groups = np.searchsorted(classes, y[tr])
    t0 = time.perf_counter()
    if cell["method"] == "nominal":
        est = NominalSVC(C=cell["C"]).fit(Xtr, y[tr])
    elif cell["method"] == "robust":
        est = RobustSVC(C=cell["C"], radius=cell["param"]).fit(Xtr, y[tr], Sigma=Sigma, sigma_index=groups)
    else:
        est = ChanceConstrainedSVC(C=cell["C"], epsilon=cell["param"], distribution="gaussian").fit(
            Xtr, y[tr], Sigma=Sigma, sigma_index=groups
        )
    fit_time = time.perf_counter() - t0
    rng = np.random.default_rng(seed_from_cell(cell))
    gte = np.searchsorted(classes, y[te])
    chol = np.linalg.cholesky(Sigma)
    accs = []
    for _ in range(20):
        z = rng.standard_normal(Xte.shape)
        noise = np.empty_like(z)
        for g in range(len(classes)):  # colour the draws one class at a time (no (L, n, n) array)
            noise[gte == g] = TEST_NOISE * (z[gte == g] @ chol[g].T)
        accs.append(est.score(Xte + noise, y[te]))
    return {
        "clean_acc": float(est.score(Xte, y[te])),
        "noisy_acc": float(np.mean(accs)),
        "objective": float(est.objective_),
        "fit_time": fit_time,
    }


#: What run_cell returns (checked on every stored record before the report reads it).
RESULT_FIELDS = Record(
    {"clean_acc": Number(0, 1), "noisy_acc": Number(0, 1), "objective": Number(0), "fit_time": Number(0)}
)


def cells(quick: bool) -> list[dict]:
    n_folds = 3 if quick else 5
    Cs = [1.0] if quick else [0.1, 1.0, 10.0]
    out = []
    for fold, C in itertools.product(range(n_folds), Cs):
        out.append(dict(method="nominal", param=0.0, C=C, fold=fold, n_folds=n_folds))
        for r in [0.5, 2.0] if quick else [0.25, 0.5, 1.0, 2.0]:
            out.append(dict(method="robust", param=r, C=C, fold=fold, n_folds=n_folds))
        for eps in [0.1] if quick else [0.05, 0.1, 0.3]:
            out.append(dict(method="chance", param=eps, C=C, fold=fold, n_folds=n_folds))
    return out


def report(run) -> tuple[str, bool]:
    """``summary.csv`` / ``summary.md`` in ``run.out``: accuracies per (method, param, C), averaged over folds."""
    records, out = run.records, run.out
    keys = sorted({(r["method"], r["param"], r["C"]) for r in records})
    rows = []
    for method, param, C in keys:
        sel = [r for r in records if (r["method"], r["param"], r["C"]) == (method, param, C)]
        rows.append(
            dict(
                method=method,
                param=param,
                C=C,
                folds=len(sel),
                clean_acc=np.mean([r["clean_acc"] for r in sel]),
                noisy_acc=np.mean([r["noisy_acc"] for r in sel]),
                fit_time=np.mean([r["fit_time"] for r in sel]),
            )
        )
    with open(out / "summary.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = ["| method | param | C | folds | clean acc | noisy acc | fit time [s] |", "|---|---|---|---|---|---|---|"]
    lines += [
        f"| {r['method']} | {r['param']:g} | {r['C']:g} | {r['folds']} | {r['clean_acc']:.4f} | "
        f"{r['noisy_acc']:.4f} | {r['fit_time']:.3f} |"
        for r in rows
    ]
    legend = (
        "param = the robust radius (method robust, p = 2), the violation probability epsilon (method chance, "
        "Gaussian), unused (nominal); clean / noisy acc = test accuracy on the clean test fold / on it perturbed "
        f"by Gaussian noise of covariance {TEST_NOISE:g}^2 Sigma_class; means over the folds"
    )
    text = "\n".join(lines) + "\n\n" + legend
    (out / "summary.md").write_text(text + "\n")
    return text, True


GRIDS = {
    "linear-noise-grid": GridExperiment(
        "linear-noise-grid",
        "nominal vs robust vs chance-constrained SVM under injected noise, breast cancer, k-fold",
        cells,
        run_cell,
        report,
        version="2",
        result_fields=RESULT_FIELDS,
    ),
}
