"""RFF uniform approximation error against D, beside the bound of [RR07] (lecture-notes form).

Measured: for D frequencies (2D features ``(1/sqrt(D)) (cos, sin)(w_i'x)``, w_i ~ N(0, I/sigma^2)),
``sup_{x, x' in B(0, R)} |<psi(x), psi(x')> - k(x, x')| = sup_{||z|| <= 2R} |(1/D) sum_i cos(w_i'z) - k(z)|``
(shift invariance), estimated by dense sampling of the 2R-ball plus L-BFGS-B refinement from the
best samples; several seeds per D.

Bound [RR07]: ``P(sup >= eps) <= 2 N(2R, r) exp(-D eps^2 / 8) + (4 r sigma_p / eps)^2`` with
``sigma_p^2 = E||w||^2 = d / sigma^2`` and the volumetric covering number
``N(2R, r) <= (1 + 4R/r)^d``.  For confidence delta we plot the smallest eps for which
``min_r`` of the right-hand side is <= delta.

Notes on the lecture notes' statement (checked here, not used as printed): Psi is first written with a 1/D factor; it
must be 1/sqrt(D) for <Psi, Psi'> to be the average (1/D) sum cos.  The lemma states the last
term as 4 r sigma_p / eps while the proof ends with its square (Markov on L^2); both are valid
(the unsquared one via E L <= sqrt(E L^2)), the squared one is smaller when it matters (< 1).
The letter D denotes both dim(X) and the number of frequencies; here d = dim(X).

Grid: one cell per (D, seed) (``rff_cell``); ``EXPERIMENT`` (a :class:`rsvm_conic.runner.GridExperiment`,
``rsvm-conic reproduce rff-error``) stores them in ``OUT/results.jsonl`` (resumable; ``--n-jobs``,
``--backend dask --scheduler ADDR`` run them in parallel with identical numbers: the seed is part of
the cell, one BLAS thread per cell) and writes ``rff_error.png`` / ``rff_error.json`` beside it.
"""

from __future__ import annotations

import json

import numpy as np
from scipy import optimize

from rsvm_conic.runner import GridExperiment, Number, Record
from rsvm_conic.uncertainty.sets import sample_pball

DEFAULT_DS = (10, 30, 100, 300, 1000, 3000)


def rff_sup_error(D, d=2, R=1.0, sigma=1.0, seed=0, n_samples=20000, n_local=5):
    """Estimated sup over ||z|| <= 2R of |(1/D) sum cos(w'z) - exp(-||z||^2 / (2 sigma^2))|."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((D, d)) / sigma
    rho = 2.0 * R

    def err(Z):
        Z = np.atleast_2d(Z)
        return np.abs(np.mean(np.cos(Z @ W.T), axis=1) - np.exp(-np.sum(Z * Z, axis=1) / (2 * sigma**2)))

    Z = sample_pball(n_samples, d, 2, rng, rho)
    vals = err(Z)
    best = float(vals.max())
    for k in np.argsort(vals)[::-1][:n_local]:
        res = optimize.minimize(
            lambda z: -err(z)[0], Z[k], method="SLSQP", constraints=[{"type": "ineq", "fun": lambda z: rho**2 - z @ z}]
        )
        z = res.x * min(1.0, rho / max(np.linalg.norm(res.x), 1e-300))
        best = max(best, float(err(z)[0]))
    return best


def lecture_bound(D, d=2, R=1.0, sigma=1.0, delta=0.05):
    """Smallest eps with min_r [2 (1 + 4R/r)^d exp(-D eps^2/8) + (4 r sigma_p / eps)^2] <= delta."""
    sp = np.sqrt(d) / sigma
    rs = np.geomspace(1e-8, 2 * R, 4000)

    def prob(eps):
        return np.min(2 * (1 + 4 * R / rs) ** d * np.exp(-D * eps**2 / 8) + (4 * rs * sp / eps) ** 2)

    lo, hi = 1e-6, 1e3
    if prob(hi) > delta:
        return np.inf
    for _ in range(100):
        mid = np.sqrt(lo * hi)
        lo, hi = (lo, mid) if prob(mid) <= delta else (mid, hi)
    return hi


def rff_cell(cell: dict) -> dict:
    """One (D, seed) cell: the estimated sup error (module-level, picklable for the parallel backends)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        err = rff_sup_error(
            cell["D"], cell["d"], cell["R"], cell["sigma"], seed=cell["seed"], n_samples=cell["n_samples"]
        )
    return {"sup_error": float(err)}


#: What rff_cell returns: |mean of cosines - kernel| is at most 2.
RESULT_FIELDS = Record({"sup_error": Number(0, 2)})


def make_cells(quick: bool, d=2, R=1.0, sigma=1.0) -> list[dict]:
    Ds = DEFAULT_DS[:4] if quick else DEFAULT_DS
    return [
        {"D": int(D), "seed": s, "d": d, "R": float(R), "sigma": float(sigma), "n_samples": 5000 if quick else 20000}
        for D in Ds
        for s in range(3 if quick else 10)
    ]


def report(run) -> tuple[str, bool]:
    """Median / max sup error per D beside the bound (``rff_error.json``, ``rff_error.png``); ok when the
    measured error is below the bound at every D."""
    # pyplot-free figures: no global backend switch (that would stop a notebook from showing its figures)
    from matplotlib.figure import Figure

    cells, results, out = run.cells, run.results, run.out
    d, R, sigma = cells[0]["d"], cells[0]["R"], cells[0]["sigma"]
    rows = []
    for D in dict.fromkeys(c["D"] for c in cells):
        errs = [r["sup_error"] for c, r in zip(cells, results) if c["D"] == D]
        rows.append(
            {
                "D": D,
                "median": float(np.median(errs)),
                "max": float(np.max(errs)),
                "bound_delta_0.05": float(lecture_bound(D, d, R, sigma)),
            }
        )
    fig = Figure(figsize=(5.5, 4))
    ax = fig.subplots()
    Dv = np.array([r["D"] for r in rows])
    ax.loglog(Dv, [r["median"] for r in rows], "o-", label="measured sup error (median over seeds)")
    ax.loglog(Dv, [r["max"] for r in rows], "s--", label="measured sup error (max over seeds)")
    ax.loglog(Dv, [r["bound_delta_0.05"] for r in rows], "k-", label=r"lecture bound, $\delta = 0.05$")
    ax.loglog(Dv, rows[0]["median"] * np.sqrt(Dv[0] / Dv), ":", color="gray", label=r"$\propto D^{-1/2}$")
    ax.set_xlabel("number of frequencies D (2D features)")
    ax.set_ylabel(r"$\sup |\langle\psi(x),\psi(x')\rangle - k(x,x')|$")
    ax.set_title(f"RFF error, Gaussian kernel, d={d}, R={R}, sigma={sigma}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "rff_error.png", dpi=120)
    (out / "rff_error.json").write_text(json.dumps(rows, indent=1))
    ok = all(r["max"] <= r["bound_delta_0.05"] for r in rows)
    lines = [json.dumps(r) for r in rows] + [f"wrote {out / 'rff_error.png'}; measured below bound at every D: {ok}"]
    return "\n".join(lines), ok


EXPERIMENT = GridExperiment(
    "rff-error",
    "RFF uniform approximation error against D, beside the bound of Rahimi & Recht 2007",
    make_cells,
    rff_cell,
    report,
    version="1",
    result_fields=RESULT_FIELDS,
)
REPRODUCTIONS = {"rff-error": EXPERIMENT}
