"""Stochastic subgradient / proximal solvers against the exact conic optimum."""

import numpy as np
import pytest

import problems
from rsvm_conic.runner import compare_backends
from rsvm_conic.solvers.datafits import RobustHinge
from rsvm_conic.uncertainty import UncertaintySet


def test_both_stochastic_solvers_reach_1e3_on_20000_samples():
    formulation, Xte, yte = problems.get("INSTANCES", "robust-large").build()
    assert formulation.X.shape == (20000, 50) and formulation.uncertainty.n_groups == 2
    opts = {"sgd": {"seed": 0}, "prox": {"seed": 0}}  # stop at a certified relative gap of 1e-3
    reports, sols = compare_backends(formulation, Xte, yte, ("clarabel", "sgd", "prox"), opts, reference="clarabel")
    ref = sols["clarabel"].objective
    for r in reports:
        assert r.error is None
        assert abs(r.objective - ref) / ref < 1e-3, r
        assert r.agreement > 0.99


def test_subgradient_matches_finite_differences_where_smooth():
    rng = np.random.default_rng(0)
    L, n = 30, 4
    X = rng.standard_normal((L, n))
    y = rng.choice([-1.0, 1.0], L)
    S = rng.standard_normal((2, n, n))
    Sigma = S @ np.swapaxes(S, 1, 2) + 0.1 * np.eye(n)
    for p in (2, 1, np.inf):
        unc = UncertaintySet(Sigma=Sigma, groups=np.arange(L) % 2, p=p, radius=0.3).resolve(L, n)
        fit = RobustHinge(X, y, unc)
        w, b = rng.standard_normal(n), 0.1
        idx = np.arange(L)
        gw, gb = fit.subgradient(w, b, idx)
        h = 1e-7
        fd = np.array([(fit.value(w + h * e, b) - fit.value(w - h * e, b)) / (2 * h) for e in np.eye(n)]) / L
        np.testing.assert_allclose(gw, fd, rtol=1e-5, atol=1e-6)
        assert gb == pytest.approx((fit.value(w, b + h) - fit.value(w, b - h)) / (2 * h) / L, rel=1e-5)


def test_runs_are_seeded():
    formulation, _, _ = problems.get("INSTANCES", "robust-small").build()
    a = formulation.solve("prox", seed=3, max_epochs=20)
    b = formulation.solve("prox", seed=3, max_epochs=20)
    np.testing.assert_array_equal(a["w"], b["w"])
