"""Monte Carlo check of the kernel chance constraint [BBBB10, eq. 3] on fresh draws from the sampled law.

``KernelRobustSVC`` fitted from ``S`` kernel samples promises ``P(alpha'Y K Y alpha > t) <= epsilon`` for the
fitted ``(alpha, t)`` (``alpha_``, ``t_``) and a fresh kernel matrix ``K`` of the law the samples came from.
This grid measures that probability:

* data: three real data sets -- scikit-learn's breast_cancer (569 x 30) and wine (178 x 13, class 1 against
  the rest), KEEL bupa (345 x 6, vendored) -- standardised; per seed ``N_POINTS = 150`` points drawn at
  random; the mean kernel ``K_bar = exp(-||x - x'||^2 / d)`` (RBF, ``d`` features);
* the law: symmetric Gaussian noise (one draw per pair ``{i, j}``, as every sampled kernel matrix is
  symmetric), ``K = K_bar + Z``, ``Z_ij ~ N(0, (0.05 |K_bar_ij|)^2)`` (noise scale 0.05);
* per cell ``(data set, S, seed)``: ``S`` samples of that law; four fits at ``epsilon = 0.1``, ``C = 1``
  (``KernelRobustSVC`` otherwise at its defaults, RSVM_SOCP, Gaussian model):

  - ``bound``: the default, ``moment_error="bound"`` (:func:`~rsvm_conic.uncertainty.chance.kappa_estimated`);
  - ``ignore``: ``moment_error="ignore"``, the paper's ``kappa`` on the estimated moments;
  - ``mean_known``: the paper's ``kappa``, the true mean kernel given (``fit(samples, y, K_bar=...)``), only
    ``beta`` estimated;
  - ``true``: the paper's ``kappa`` on the true moments (``fit(K_bar, y, sigma2=...)``, ``beta="symmetric"``);

  the last two show that the estimated mean, not the model or the estimated variances, is what fails under
  ``ignore``;

* the violation: the fraction of ``N_FRESH = 4000`` fresh draws of the law with ``alpha'Y K Y alpha > t``
  (drawn on the support vectors' block: ``alpha_i = 0`` elsewhere, so the event is the same), beside the
  exact probability ``Phi_bar((t - alpha'Y K_bar Y alpha) / sd)`` the Gaussian law allows.

Passes when every ``bound`` fit's Monte Carlo violation is at most ``epsilon + 3 SE``,
``SE = sqrt(epsilon (1 - epsilon) / N_FRESH)`` (0.114 at epsilon = 0.1).  ``--quick``: two seeds, 1000 fresh draws.

``rsvm-conic run kernel-chance-mc [--quick] [--n-jobs 2]``: cells in ``OUT/results.jsonl``, the table in
``kernel_chance_mc.md`` and ``kernel_chance_mc.json`` beside it.
"""

from __future__ import annotations

import json

import numpy as np

from rsvm_conic.runner import GridExperiment, seed_from_cell
from rsvm_conic.runner.fields import MapOf, Number, Record, Text

DATASETS = ("breast_cancer", "wine", "bupa")
S_GRID = (20, 50, 100, 500)
EPSILON = 0.1
C = 1.0
NOISE_SCALE = 0.05
N_POINTS = 150
N_FRESH = 4000
SEEDS = 10
MODES = ("bound", "ignore", "mean_known", "true")


def kernel_problem(dataset: str, n_points: int, seed: int):
    """``(K_bar, y)``: ``n_points`` standardised points of ``dataset`` drawn with ``seed``, RBF kernel."""
    from sklearn.preprocessing import StandardScaler

    if dataset == "breast_cancer":
        from sklearn.datasets import load_breast_cancer

        X, y = load_breast_cancer(return_X_y=True)
    elif dataset == "wine":
        from sklearn.datasets import load_wine

        X, y = load_wine(return_X_y=True)
        y = (y == 0).astype(int)
    elif dataset == "bupa":
        from rsvm_conic.datasets import load_dataset

        X, y = load_dataset("bupa")
        y = (y == np.unique(y)[0]).astype(int)
    else:
        raise ValueError(f"dataset must be one of {DATASETS}; got {dataset!r}.")
    X = StandardScaler().fit_transform(np.asarray(X, dtype=float))
    idx = np.random.default_rng(seed).choice(len(y), min(n_points, len(y)), replace=False)
    X, y = X[idx], np.where(np.asarray(y)[idx] == 1, 1.0, -1.0)
    sq = np.sum(X * X, axis=1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * X @ X.T, 0.0)
    K = np.exp(-d2 / X.shape[1])
    return 0.5 * (K + K.T), y


def noise_sd(K_bar, scale: float = NOISE_SCALE):
    """Entrywise standard deviation of the law's noise: ``scale |K_bar|``."""
    return scale * np.abs(K_bar)


def draw_kernels(rng, K_bar, n, scale: float = NOISE_SCALE):
    """``n`` symmetric draws ``K_bar + Z`` of the law (shape ``(n,) + K_bar.shape``)."""
    from rsvm_conic.datasets.bhadra2010 import sample_kernels

    return sample_kernels(rng, K_bar, np.abs(K_bar), "gaussian", n, noise_scale=scale, symmetric=True)


def violation(alpha, y, t, K_bar, rng, n_fresh: int = N_FRESH, scale: float = NOISE_SCALE, chunk: int = 500):
    """``(mc, exact)``: the fraction of ``n_fresh`` fresh draws with ``alpha'Y K Y alpha > t`` and the exact
    probability of that event under the symmetric Gaussian law."""
    from scipy.stats import norm

    from rsvm_conic.metrics import quadratic_form_samples

    sv = np.flatnonzero(alpha > 0)
    Kb, a, ys = K_bar[np.ix_(sv, sv)], alpha[sv], y[sv]
    hits = 0
    for start in range(0, n_fresh, chunk):
        q = quadratic_form_samples(a, ys, draw_kernels(rng, Kb, min(chunk, n_fresh - start), scale))
        hits += int(np.sum(q > t))
    v = a * ys
    nu = v * v
    s2 = noise_sd(Kb, scale) ** 2  # Var v'Zv = sum_i s_ii nu_i^2 + 4 sum_{i<j} s_ij nu_i nu_j (symmetric Z)
    sd = np.sqrt(2.0 * nu @ s2 @ nu - np.sum(np.diag(s2) * nu * nu))
    exact = float(norm.sf((t - v @ Kb @ v) / sd)) if sd > 0 else float(t < v @ Kb @ v)
    return hits / n_fresh, exact


def fit_mode(mode: str, K_samples, K_bar, y, epsilon: float = EPSILON, C: float = C, scale: float = NOISE_SCALE):
    """The fitted ``KernelRobustSVC`` of one mode (``"bound"``, ``"ignore"``, ``"mean_known"`` or ``"true"``)."""
    from rsvm_conic.estimators import KernelRobustSVC

    if mode == "mean_known":
        return KernelRobustSVC(epsilon=epsilon, C=C, moment_error="ignore").fit(K_samples, y, K_bar=K_bar)
    if mode == "true":
        return KernelRobustSVC(epsilon=epsilon, C=C, beta="symmetric").fit(K_bar, y, sigma2=noise_sd(K_bar, scale) ** 2)
    return KernelRobustSVC(epsilon=epsilon, C=C, moment_error=mode).fit(K_samples, y)


def run_cell(cell: dict) -> dict:
    """One ``(data set, S, seed)`` cell: the three fits and their violations (one BLAS thread, seeded)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        K_bar, y = kernel_problem(cell["dataset"], cell["n_points"], cell["seed"])
        rng = np.random.default_rng(seed_from_cell(cell))
        Ks = draw_kernels(rng, K_bar, cell["S"], cell["noise_scale"])
        out = {}
        for mode in MODES:
            est = fit_mode(mode, Ks, K_bar, y, cell["epsilon"], cell["C"], cell["noise_scale"])
            mc, exact = violation(est.alpha_, y, est.t_, K_bar, rng, cell["n_fresh"], cell["noise_scale"])
            out[mode] = {"mc": mc, "exact": exact, "kappa": float(est.kappa_), "status": est.solver_info_["status"]}
        return out


def make_cells(quick: bool) -> list[dict]:
    return [
        {
            "dataset": ds,
            "S": S,
            "seed": seed,
            "epsilon": EPSILON,
            "C": C,
            "noise_scale": NOISE_SCALE,
            "n_points": N_POINTS,
            "n_fresh": 1000 if quick else N_FRESH,
        }
        for ds in DATASETS
        for S in S_GRID
        for seed in range(2 if quick else SEEDS)
    ]


def summarise(cells, results) -> list[dict]:
    """One row per ``(data set, S)``: mean and max over seeds of each mode's violation, and the bound."""
    rows = []
    for ds, S in dict.fromkeys((c["dataset"], c["S"]) for c in cells):
        got = [(c, r) for c, r in zip(cells, results) if (c["dataset"], c["S"]) == (ds, S)]
        eps, n_fresh = got[0][0]["epsilon"], got[0][0]["n_fresh"]
        row = {"dataset": ds, "S": S, "fits": len(got), "limit": eps + 3.0 * np.sqrt(eps * (1 - eps) / n_fresh)}
        for mode in MODES:
            mc = np.array([r[mode]["mc"] for _, r in got])
            exact = np.array([r[mode]["exact"] for _, r in got])
            row[mode] = {
                "mean": float(mc.mean()),
                "max": float(mc.max()),
                "exact_max": float(exact.max()),
                "over_limit": int(np.sum(mc > row["limit"])),
                "kappa": float(np.mean([r[mode]["kappa"] for _, r in got])),
            }
        rows.append(row)
    return rows


def format_table(rows) -> str:
    head = (
        "| data set | S | fits | default: kappa | mean / max (exact max) | ignore: kappa | mean / max (exact max) "
        "| fits > limit | paper, mean known | paper, true moments | limit epsilon + 3 SE |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|---|"]

    def mm(m):
        return f"{m['mean']:.3f} / {m['max']:.3f} ({m['exact_max']:.3f})"

    for r in rows:
        b, i, m, t = r["bound"], r["ignore"], r["mean_known"], r["true"]
        lines.append(
            f"| {r['dataset']} | {r['S']} | {r['fits']} | {b['kappa']:.3f} | {mm(b)} | {i['kappa']:.3f} | {mm(i)} "
            f"| {i['over_limit']} | {mm(m)} | {mm(t)} | {r['limit']:.3f} |"
        )
    return "\n".join(lines)


def report(run) -> tuple[str, bool]:
    """``kernel_chance_mc.md`` / ``.json``; ok when every default fit stays within epsilon + 3 SE."""
    rows = summarise(run.cells, run.results)
    ok = all(r["bound"]["over_limit"] == 0 for r in rows)
    table = format_table(rows)
    c0 = run.cells[0]
    text = (
        f"KernelRobustSVC(epsilon={c0['epsilon']}, C={c0['C']:g}) fitted from S symmetric kernel samples "
        f"(noise scale {c0['noise_scale']}), violation of its chance constraint on {c0['n_fresh']} fresh draws "
        f"per fit (mean / max over the fits)\n\n{table}\n\n"
        "S = number of kernel samples the moments are estimated from; default = moment_error='bound' (kappa "
        "corrected for the estimated moments), ignore = the paper's kappa on the estimated moments, paper, mean "
        "known = the paper's kappa with the true mean kernel given, paper, true moments = the paper's kappa on the "
        "true moments; exact max = the largest exact violation probability the Gaussian law allows; SE = "
        "sqrt(epsilon (1 - epsilon) / fresh draws), the Monte Carlo standard error\n\n"
        f"every default fit within epsilon + 3 SE: {ok}"
    )
    (run.out / "kernel_chance_mc.md").write_text(text + "\n")
    (run.out / "kernel_chance_mc.json").write_text(json.dumps(rows, indent=1))
    return text, ok


#: What run_cell returns: per mode, the Monte Carlo and exact violation probabilities, kappa and the status.
RESULT_FIELDS = MapOf(
    Record({"mc": Number(0, 1), "exact": Number(0, 1), "kappa": Number(0), "status": Text()}), keys=MODES
)


EXPERIMENT = GridExperiment(
    "kernel-chance-mc",
    "KernelRobustSVC's chance constraint on fresh kernel draws, moments estimated from S samples",
    make_cells,
    run_cell,
    report,
    version="2",
    result_fields=RESULT_FIELDS,
)
GRIDS = {"kernel-chance-mc": EXPERIMENT}
