"""RFF uniform approximation error against D, beside the bound of [RR07] (lecture-notes form).

Measured: for D frequencies (2D features ``(1/sqrt(D)) (cos, sin)(w_i'x)``, w_i ~ N(0, I/sigma^2)),
``sup_{x, x' in B(0, R)} |<psi(x), psi(x')> - k(x, x')| = sup_{||z|| <= 2R} |(1/D) sum_i cos(w_i'z) - k(z)|``
(shift invariance), several seeds per D, bounded from both sides:

* below, by dense sampling of the 2R-ball plus SLSQP refinement from the best samples (:func:`rff_sup_error`):
  a value the error reaches, so a lower estimate of the sup;
* above, certified (:func:`rff_sup_certified`): branch and bound on a grid of cubes covering the ball
  (:func:`certified_sup`), where a cube of radius ``r`` around ``c`` holds ``|g| <= |g(c)| + L r`` (``L``, a
  Lipschitz constant of ``g``, :func:`rff_lipschitz`) and ``|g| <= |g(c)| + ||grad g(c)|| r + M r^2 / 2``
  (``M``, a bound on the Hessian, :func:`rff_curvature`), until the largest cube bound is within 2% of the
  sampled value.  So "below the bound" is shown for the sup itself, not for the points sampled.

Bound [RR07]: ``P(sup >= eps) <= 2 N(2R, r) exp(-D eps^2 / 8) + (4 r sigma_p / eps)^2`` with
``sigma_p^2 = E||w||^2 = d / sigma^2`` and the volumetric covering number
``N(2R, r) <= (1 + 4R/r)^d``.  For confidence delta we plot the smallest eps for which
``min_r`` of the right-hand side is <= delta.  No error exceeds 2 (an average of cosines minus a kernel value
in (0, 1]), so where this eps is 2 or more the bound says nothing: the report marks it ``vacuous`` (at d = 2,
R = sigma = 1: D = 10, where it is 3.1).

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


def rff_lipschitz(W: np.ndarray, sigma: float) -> float:
    """A Lipschitz constant of ``g(z) = (1/D) sum_i cos(w_i'z) - exp(-||z||^2 / (2 sigma^2))`` on all of R^d.

    ``grad g = -(1/D) sum_i sin(w_i'z) w_i + (z / sigma^2) exp(-||z||^2 / (2 sigma^2))``.  The first term's norm is at
    most ``(1/D) sum_i ||w_i||`` and at most ``||W||_2 ||sin(W z)|| / D <= ||W||_2 / sqrt(D)``; the second's is
    ``r exp(-r^2 / (2 sigma^2)) / sigma^2 <= 1 / (sigma sqrt(e))`` (its maximum, at ``r = sigma``).

    Parameters
    ----------
    W : ndarray of shape (D, d)
        The frequencies ``w_i`` as rows.
    sigma : float
        The Gaussian kernel's width.

    Returns
    -------
    float
        ``min((1/D) sum_i ||w_i||, ||W||_2 / sqrt(D)) + 1 / (sigma sqrt(e))``.
    """
    D = W.shape[0]
    first = min(float(np.linalg.norm(W, axis=1).mean()), float(np.linalg.norm(W, 2)) / np.sqrt(D))
    return first + 1.0 / (sigma * np.sqrt(np.e))


def rff_curvature(W: np.ndarray, sigma: float) -> float:
    """A bound on the Hessian's spectral norm of ``g`` (see :func:`rff_lipschitz`) on all of R^d.

    ``hess g = -(1/D) W' diag(cos(W z)) W + (k(z) / sigma^2) (I - z z' / sigma^2)`` with ``k(z) <= 1``: the first
    term's norm is at most ``||W||_2^2 / D``, the second's at most ``1 / sigma^2`` (its eigenvalues are
    ``k / sigma^2`` and ``k (1 - r^2 / sigma^2) / sigma^2``, and ``r^2 k(z) / sigma^2 <= 2 / e``).
    """
    return float(np.linalg.norm(W, 2)) ** 2 / W.shape[0] + 1.0 / sigma**2


def rff_error_and_cube_bounds(W: np.ndarray, sigma: float):
    """``fn(Z, s) -> (|g(Z)|, upper bounds of |g| on the cubes of half-side s centred at Z)`` for
    :func:`certified_sup`.  On a cube of radius ``r = s sqrt(d)`` around ``c`` the bound is the smaller of
    ``|g(c)| + L r`` (Lipschitz, :func:`rff_lipschitz`) and ``|g(c)| + ||grad g(c)|| r + M r^2 / 2`` (Taylor with
    :func:`rff_curvature`; it holds for ``g`` and ``-g`` alike, hence for ``|g|``)."""
    D, d = W.shape
    L, M = rff_lipschitz(W, sigma), rff_curvature(W, sigma)

    def fn(Z, s):
        P = Z @ W.T
        k = np.exp(-np.sum(Z * Z, axis=1) / (2 * sigma**2))
        g = np.mean(np.cos(P), axis=1) - k
        grad = -(np.sin(P) @ W) / D + Z * (k / sigma**2)[:, None]
        r = s * np.sqrt(d)
        taylor = np.abs(g) + np.linalg.norm(grad, axis=1) * r + 0.5 * M * r * r
        return np.abs(g), np.minimum(np.abs(g) + L * r, taylor)

    return fn


def certified_sup(
    fn,
    rho: float,
    d: int,
    *,
    lower: float = 0.0,
    tol: float = 0.02,
    n0: int = 32,
    max_cells: int = 400_000,
    max_levels: int = 40,
) -> tuple[float, float, int]:
    """Bounds ``(lower, upper)`` on ``sup_{||z|| <= rho} f(z)``, by branch and bound on a grid of cubes.

    ``fn(Z, s)`` returns ``f`` at the centres ``Z`` and an upper bound of ``f`` on each cube of half-side ``s``
    around them (e.g. ``f(c) + L s sqrt(d)`` for an ``L``-Lipschitz ``f``).  The cubes covering the ball start on an
    ``n0^d`` grid of ``[-rho, rho]^d``; a cube is dropped once its bound is at most ``lower + tol max(lower, 0.05)``
    (its bound is kept as a floor of ``upper``), the others are split in ``2^d``; ``lower`` rises with every centre
    inside the ball.  Stops when no cube is left, or before a level would exceed ``max_cells`` cubes or
    ``max_levels`` splits, where ``upper`` is the largest bound of the cubes left: still an upper bound, only a
    looser one.

    Parameters
    ----------
    fn : callable
        ``fn(Z, s) -> (values, bounds)`` for centres ``Z`` of shape ``(m, d)`` and half-side ``s`` (vectorised).
    rho : float
        Radius of the ball, centred at the origin.
    d : int
        Dimension.
    lower : float, default=0.0
        A known value of ``f`` inside the ball (e.g. a sampled estimate), the starting lower bound.
    tol : float, default=0.02
        Relative gap at which a cube is dropped.
    n0 : int, default=32
        Cubes per dimension of the initial grid.
    max_cells : int, default=400000
        Most cubes evaluated at one level.
    max_levels : int, default=40
        Most splits.

    Returns
    -------
    lower, upper : float
        ``lower <= sup f <= upper`` over the ball.
    evaluations : int
        Centres at which ``fn`` was evaluated.
    """
    g = (np.arange(n0) + 0.5) / n0 * 2.0 * rho - rho
    centres = np.stack(np.meshgrid(*([g] * d), indexing="ij"), axis=-1).reshape(-1, d)
    half = rho / n0
    reach = np.sqrt(d)
    centres = centres[np.linalg.norm(centres, axis=1) - half * reach <= rho]  # cubes that meet the ball
    floor, evals = -np.inf, 0
    offsets = np.stack(np.meshgrid(*([np.array([-0.5, 0.5])] * d), indexing="ij"), axis=-1).reshape(-1, d)
    for level in range(max_levels + 1):
        vals, bounds = fn(centres, half)
        evals += centres.shape[0]
        inside = np.linalg.norm(centres, axis=1) <= rho
        if inside.any():
            lower = max(lower, float(vals[inside].max()))
        drop = bounds <= lower + tol * max(lower, 0.05)
        if drop.any():
            floor = max(floor, float(bounds[drop].max()))
        centres, bounds = centres[~drop], bounds[~drop]
        if centres.shape[0] == 0:
            return lower, max(floor, lower), evals
        if centres.shape[0] * 2**d > max_cells or level == max_levels:
            return lower, max(floor, float(bounds.max())), evals
        half /= 2.0
        centres = (centres[:, None, :] + offsets[None] * 2.0 * half).reshape(-1, d)
        centres = centres[np.linalg.norm(centres, axis=1) - half * reach <= rho]
    raise AssertionError("unreachable")


def rff_sup_certified(D, d=2, R=1.0, sigma=1.0, seed=0, lower=0.0, tol=0.02):
    """``(lower, upper, evaluations)``: a certified upper bound of the sup error of :func:`rff_sup_error` (same
    seed, same frequencies), by :func:`certified_sup` with :func:`rff_error_and_cube_bounds`; ``upper`` is at most
    :data:`VACUOUS`, the largest error possible."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((D, d)) / sigma
    lo, up, n = certified_sup(rff_error_and_cube_bounds(W, sigma), 2.0 * R, d, lower=lower, tol=tol)
    return lo, min(up, VACUOUS), n


#: No error of the approximation exceeds 2 (``|(1/D) sum cos - k| <= 1 + 1``): a bound at or above it says nothing.
VACUOUS = 2.0


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
    """One (D, seed) cell: the sampled sup error (a lower estimate) and the certified upper bound of the same
    sup (module-level, picklable for the parallel backends)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        err = rff_sup_error(
            cell["D"], cell["d"], cell["R"], cell["sigma"], seed=cell["seed"], n_samples=cell["n_samples"]
        )
        lower, upper, evals = rff_sup_certified(
            cell["D"], cell["d"], cell["R"], cell["sigma"], seed=cell["seed"], lower=err
        )
    return {"sup_error": float(err), "sup_lower": float(lower), "sup_upper": float(upper), "evaluations": int(evals)}


#: What rff_cell returns: |mean of cosines - kernel| is at most 2 (the certified upper bound is capped at VACUOUS).
RESULT_FIELDS = Record(
    {
        "sup_error": Number(0, 2),
        "sup_lower": Number(0, 2),
        "sup_upper": Number(0),
        "evaluations": Number(0, integer=True),
    }
)


def make_cells(quick: bool, d=2, R=1.0, sigma=1.0) -> list[dict]:
    Ds = DEFAULT_DS[:4] if quick else DEFAULT_DS
    return [
        {"D": int(D), "seed": s, "d": d, "R": float(R), "sigma": float(sigma), "n_samples": 5000 if quick else 20000}
        for D in Ds
        for s in range(3 if quick else 10)
    ]


def report(run) -> tuple[str, bool]:
    """Per D: the sup error's sampled (lower) estimate and certified upper bound (median and max over seeds) beside
    the bound, which is vacuous where it reaches 2 (``rff_error.json``, ``rff_error.png``); ok when the certified
    upper bound lies below the bound at every D (trivially where the bound is vacuous)."""
    # pyplot-free figures: no global backend switch (that would stop a notebook from showing its figures)
    from matplotlib.figure import Figure

    cells, results, out = run.cells, run.results, run.out
    d, R, sigma = cells[0]["d"], cells[0]["R"], cells[0]["sigma"]
    rows = []
    for D in dict.fromkeys(c["D"] for c in cells):
        res = [r for c, r in zip(cells, results) if c["D"] == D]
        low, up = [r["sup_lower"] for r in res], [r["sup_upper"] for r in res]
        bound = float(lecture_bound(D, d, R, sigma))
        rows.append(
            {
                "D": D,
                "seeds": len(res),
                "median": float(np.median(low)),
                "max": float(np.max(low)),
                "median_upper": float(np.median(up)),
                "max_upper": float(np.max(up)),
                "bound_delta_0.05": bound,
                "vacuous": bool(bound >= VACUOUS),
            }
        )
    fig = Figure(figsize=(5.5, 4))
    ax = fig.subplots()
    Dv = np.array([r["D"] for r in rows])
    ax.loglog(Dv, [r["median"] for r in rows], "o-", label="sup error, sampled lower estimate (median over seeds)")
    ax.loglog(Dv, [r["max_upper"] for r in rows], "s--", label="sup error, certified upper bound (max over seeds)")
    ax.loglog(Dv, [r["bound_delta_0.05"] for r in rows], "k-", label=r"lecture bound, $\delta = 0.05$")
    ax.axhline(VACUOUS, color="gray", linewidth=0.8, linestyle="-.", label="2: no error is larger (vacuous above)")
    ax.loglog(Dv, rows[0]["median"] * np.sqrt(Dv[0] / Dv), ":", color="gray", label=r"$\propto D^{-1/2}$")
    ax.set_xlabel("number of frequencies D (2D features)")
    ax.set_ylabel(r"$\sup |\langle\psi(x),\psi(x')\rangle - k(x,x')|$")
    ax.set_title(f"RFF error, Gaussian kernel, d={d}, R={R}, sigma={sigma}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "rff_error.png", dpi=120)
    (out / "rff_error.json").write_text(json.dumps(rows, indent=1))
    ok = all(r["max_upper"] <= r["bound_delta_0.05"] for r in rows)
    informative = [r["D"] for r in rows if not r["vacuous"]]
    vacuous = [r["D"] for r in rows if r["vacuous"]]
    lines = [
        markdown_table(rows),
        f"wrote {out / 'rff_error.png'}; certified upper bound of the sup error below the bound at every D: {ok} "
        f"(informative at D = {informative}; vacuous, >= {VACUOUS:g}, at D = {vacuous})",
    ]
    return "\n".join(lines), ok


def markdown_table(rows: list[dict]) -> str:
    """The report's rows (``rff_error.json``) as a Markdown table, with what its columns mean."""
    lines = [
        "D = number of random frequencies (2D features); sup error = the largest |<psi(x), psi(x')> - k(x, x')| "
        "for x, x' in the ball B(0, R), per seed: sampled = a value the error reaches at sampled pairs (a lower "
        "estimate), certified = an upper bound from the branch and bound; bound = [RR07]'s bound at delta = 0.05, "
        f"vacuous where it reaches {VACUOUS:g} (no error is larger).",
        "",
        "| D | seeds | sup error, sampled (median / max) | sup error, certified upper bound (median / max) "
        "| bound (delta = 0.05) |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['D']} | {r['seeds']} | {r['median']:.4f} / {r['max']:.4f} | {r['median_upper']:.4f} / "
        f"{r['max_upper']:.4f} | {r['bound_delta_0.05']:.3f}" + (" (vacuous)" if r["vacuous"] else "") + " |"
        for r in rows
    ]
    return "\n".join(lines) + "\n"


EXPERIMENT = GridExperiment(
    "rff-error",
    "RFF uniform approximation error against D, beside the bound of Rahimi & Recht 2007",
    make_cells,
    rff_cell,
    report,
    version="2",  # 2: the certified upper bound of the sup beside the sampled estimate
    result_fields=RESULT_FIELDS,
)
REPRODUCTIONS = {"rff-error": EXPERIMENT}
