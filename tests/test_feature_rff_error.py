import numpy as np

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
