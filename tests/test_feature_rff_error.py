import numpy as np
import pytest

from rsvm_conic.problems.couellan2020_fig1 import EXPERIMENT as FIG1
from rsvm_conic.problems.rff_error import lecture_bound, rff_sup_error


def test_measured_sup_error_below_lecture_bound_and_decays_like_inverse_sqrt_D():
    med = {}
    for D in (30, 300, 3000):
        errs = [rff_sup_error(D, d=2, seed=s, n_samples=3000, n_local=2) for s in range(3)]
        assert max(errs) <= lecture_bound(D, d=2)
        med[D] = np.median(errs)
    # Hoeffding: error ~ D^{-1/2}; two decades of D should cut it by ~10 (allow 3..40)
    assert 3.0 <= med[30] / med[3000] <= 40.0


def test_lecture_bound_monotone_and_vacuous_for_tiny_D():
    b = [lecture_bound(D) for D in (10, 100, 1000, 10000)]
    assert all(x > y for x, y in zip(b, b[1:]))
    assert b[0] > 2.0  # |error| <= 2 always: the bound says nothing at D = 10


def test_figure1_reproduction_writes_png_and_bound_discs_contain_observations(tmp_path):
    assert FIG1.run(tmp_path, quick=True).ok
    assert (tmp_path / "couellan2020_fig1.png").stat().st_size > 10_000


def _dense_sup(W, sigma, rho, n=1201):
    """The sup of |g| over the ball by brute force on an n x n grid (d = 2)."""
    g = np.linspace(-rho, rho, n)
    Z = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)
    Z = Z[np.linalg.norm(Z, axis=1) <= rho]
    out = 0.0
    for block in np.array_split(Z, 40):  # bounded memory
        err = np.abs(np.mean(np.cos(block @ W.T), axis=1) - np.exp(-np.sum(block * block, axis=1) / (2 * sigma**2)))
        out = max(out, float(err.max()))
    return out, (2 * rho / (n - 1)) / np.sqrt(2)  # the grid's covering radius


def test_lipschitz_and_curvature_constants_against_random_pairs():
    from rsvm_conic.problems.rff_error import rff_curvature, rff_lipschitz

    rng = np.random.default_rng(0)
    for D, sigma in ((5, 1.0), (40, 0.5), (300, 2.0)):
        W = rng.standard_normal((D, 2)) / sigma

        def g(Z):
            return np.mean(np.cos(Z @ W.T), axis=1) - np.exp(-np.sum(Z * Z, axis=1) / (2 * sigma**2))

        A = rng.uniform(-3, 3, (20000, 2))
        B = A + rng.normal(0, 0.05, A.shape)
        slopes = np.abs(g(A) - g(B)) / np.linalg.norm(A - B, axis=1)
        L = rff_lipschitz(W, sigma)
        assert slopes.max() <= L
        # second differences along random directions bound the Hessian's norm from below
        u = rng.normal(size=A.shape)
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        h = 1e-3
        curv = np.abs(g(A + h * u) - 2 * g(A) + g(A - h * u)) / h**2
        assert curv.max() <= rff_curvature(W, sigma) * (1 + 1e-4)


@pytest.mark.parametrize("D, sigma, seed", [(3, 1.0, 0), (10, 1.0, 1), (30, 0.7, 2), (100, 1.5, 3)])
def test_certified_upper_bound_against_dense_brute_force(D, sigma, seed):
    """The branch-and-bound bound is above the sup that a dense grid finds, and close to it; the sampled
    estimate is below it."""
    from rsvm_conic.problems.rff_error import (
        certified_sup,
        rff_error_and_cube_bounds,
        rff_lipschitz,
        rff_sup_certified,
    )

    rng = np.random.default_rng(seed)
    W = rng.standard_normal((D, 2)) / sigma
    rho = 2.0
    dense, cover = _dense_sup(W, sigma, rho)
    L = rff_lipschitz(W, sigma)
    lower, upper, evals = certified_sup(rff_error_and_cube_bounds(W, sigma), rho, 2, tol=0.02)
    assert upper >= dense  # certified: no point of the dense grid beats it
    assert lower <= dense + L * cover  # a value inside the ball: at most the sup, which the grid brackets
    assert upper <= lower + 0.02 * max(lower, 0.05) + 1e-12  # stopped within the tolerance
    assert evals < 50_000
    # the Lipschitz bound alone (no gradient term) certifies the same sup, with more cubes

    def lipschitz_only(Z, s):
        err = np.abs(np.mean(np.cos(Z @ W.T), axis=1) - np.exp(-np.sum(Z * Z, axis=1) / (2 * sigma**2)))
        return err, err + L * s * np.sqrt(2)

    lo2, up2, evals2 = certified_sup(lipschitz_only, rho, 2, tol=0.02)
    assert up2 >= dense and evals2 >= evals
    # rff_sup_certified draws the same frequencies as rff_sup_error (same seed)
    est = rff_sup_error(D, d=2, sigma=sigma, seed=seed, n_samples=3000, n_local=2)
    lo3, up3, _ = rff_sup_certified(D, d=2, sigma=sigma, seed=seed, lower=est)
    assert est <= up3 and lo3 >= est


def test_certified_sup_stops_early_with_a_valid_looser_bound():
    from rsvm_conic.problems.rff_error import certified_sup, rff_error_and_cube_bounds

    from rsvm_conic.problems.rff_error import rff_lipschitz

    W = np.random.default_rng(5).standard_normal((50, 2))
    dense, cover = _dense_sup(W, 1.0, 2.0)
    lo, up, _ = certified_sup(rff_error_and_cube_bounds(W, 1.0), 2.0, 2, tol=1e-6, max_cells=3000)
    assert up >= dense and lo <= dense + rff_lipschitz(W, 1.0) * cover
    assert up > lo * (1 + 1e-6)  # stopped by the cap, before the tolerance


def test_rff_error_report_marks_the_vacuous_bound_and_certifies_below(tmp_path):
    """The report said "below the bound at every D" from sampled points, with a bound above 2 at D = 10."""
    import json

    from rsvm_conic.problems.rff_error import EXPERIMENT, VACUOUS

    run = EXPERIMENT.run(tmp_path, quick=True, progress=False, n_jobs=1)
    assert run.ok
    rows = json.loads((tmp_path / "rff_error.json").read_text())
    by_D = {r["D"]: r for r in rows}
    assert by_D[10]["vacuous"] and by_D[10]["bound_delta_0.05"] >= VACUOUS
    assert not by_D[100]["vacuous"]
    for r in rows:
        assert r["max"] <= r["max_upper"] <= VACUOUS  # the sampled sup is a lower estimate of the certified one
        assert r["max_upper"] <= r["max"] * 1.02 + 1e-3  # and the certificate is tight
        assert r["vacuous"] == (r["bound_delta_0.05"] >= VACUOUS)
    assert "vacuous, >= 2, at D = [10]" in run.summary
    # stdout is a Markdown table whose columns are explained; the rows' JSON is in rff_error.json only
    assert not [line for line in run.summary.splitlines() if line.startswith("{")]
    assert "| D | seeds |" in run.summary and "D = number of random frequencies" in run.summary
    assert f"| 100 | {by_D[100]['seeds']} | {by_D[100]['median']:.4f} / {by_D[100]['max']:.4f} |" in run.summary
