"""The synthetic generator: same draws as the per-sample formula, memory O(L n + k n^2)."""

import tracemalloc

import numpy as np
import pytest

from rsvm_conic.datasets.synthetic import make_uncertain_classification


@pytest.mark.parametrize("n_groups", [1, 2, 3])
def test_noise_is_each_samples_own_group_factor_times_one_draw(n_groups):
    """Reference: the (L, n, n) formula x_l = clean_l + chol[g(l)] z_l it replaces, on small data."""
    L, n, seed = 300, 6, 3
    X, y, Sigma, groups = make_uncertain_classification(L, n, n_groups=n_groups, random_state=seed)
    rng = np.random.default_rng(seed)  # replay the generator's draws in order
    y_ref = np.where(rng.random(L) < 0.5, -1.0, 1.0)
    direction = rng.standard_normal(n)
    direction /= np.linalg.norm(direction)
    clean = rng.standard_normal((L, n)) + 0.5 * y_ref[:, None] * direction
    if n_groups != 2:
        rng.integers(0, n_groups, L)
    for _ in range(n_groups):
        rng.standard_normal((n, n))
    z = rng.standard_normal((L, n))
    ref = clean + np.einsum("lij,lj->li", np.linalg.cholesky(Sigma)[groups], z)
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_allclose(X, ref, rtol=0, atol=1e-12 * (1 + np.abs(ref).max()))


def test_memory_is_linear_in_samples():
    """50000 x 200 used to peak at 15.7 GB (an (L, n, n) array); now a few copies of X."""
    L, n = 20000, 100
    tracemalloc.start()
    try:
        X, *_ = make_uncertain_classification(L, n, random_state=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert X.shape == (L, n)
    assert peak < 5 * L * n * 8, f"peak {peak / 1e6:.0f} MB for a {L * n * 8 / 1e6:.0f} MB data set"
