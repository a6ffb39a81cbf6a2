"""Stochastic subgradient / proximal solvers against the exact conic optimum."""

import numpy as np
import pytest

from rsvm_conic import problems
from rsvm_conic.runner import compare_backends
from rsvm_conic.solvers.datafits import RobustHinge
from rsvm_conic.uncertainty import UncertaintySet


@pytest.mark.parametrize(
    "name,shape", [("robust-small", (400, 5)), pytest.param("robust-large", (20000, 50), marks=pytest.mark.slow)]
)
def test_both_stochastic_solvers_reach_1e3(name, shape):
    """The grouped-ellipsoid instance (two full-factor groups) at L = 400 in the default run, L = 20000 (~40 s) slow."""
    formulation, Xte, yte = problems.get("INSTANCES", name).build()
    assert formulation.X.shape == shape and formulation.uncertainty.n_groups == 2
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
        fit = RobustHinge(unc)
        w, b = rng.standard_normal(n), 0.1
        idx = np.arange(L)
        gw, gb, _ = fit.subgradient(X, y, w, X @ w + b, idx)
        h = 1e-7
        fd = (
            np.array(
                [
                    (fit.value(y, w + h * e, X @ (w + h * e) + b) - fit.value(y, w - h * e, X @ (w - h * e) + b))
                    / (2 * h)
                    for e in np.eye(n)
                ]
            )
            / L
        )
        np.testing.assert_allclose(gw, fd, rtol=1e-5, atol=1e-6)
        fb = (fit.value(y, w, X @ w + (b + h)) - fit.value(y, w, X @ w + (b - h))) / (2 * h) / L
        assert gb == pytest.approx(fb, rel=1e-5)


def test_runs_are_seeded():
    formulation, _, _ = problems.get("INSTANCES", "robust-small").build()
    a = formulation.solve("prox", seed=3, max_epochs=20)
    b = formulation.solve("prox", seed=3, max_epochs=20)
    np.testing.assert_array_equal(a["w"], b["w"])


def test_solvers_check_the_datafit_and_penalty_they_are_given():
    """skglm's separation: the data fit holds no data and each solver names the methods it misses."""
    from rsvm_conic.solvers.penalties import L2Squared
    from rsvm_conic.solvers.stochastic import stochastic_proximal, stochastic_subgradient

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    unc = UncertaintySet(radius=0.1).resolve(*X.shape)

    class NoSubgradient(RobustHinge):
        subgradient = None

    with pytest.raises(TypeError, match=r"NoSubgradient\.subgradient\(\)"):
        stochastic_proximal(X, y, NoSubgradient(unc), L2Squared(0.1))

    class NoProx(L2Squared):
        prox = None

    with pytest.raises(TypeError, match=r"NoProx\.prox\(\)"):
        stochastic_proximal(X, y, RobustHinge(unc), NoProx(0.1))
    stochastic_subgradient(X, y, RobustHinge(unc), NoProx(0.1), max_epochs=1)  # the subgradient route needs no prox

    class NoRestrict(RobustHinge):
        restrict = None

    with pytest.raises(TypeError, match=r"NoRestrict\.restrict\(\)"):  # eta0="auto" calibrates on a restriction
        stochastic_subgradient(X, y, NoRestrict(unc), L2Squared(0.1))
    stochastic_subgradient(X, y, NoRestrict(unc), L2Squared(0.1), eta0=1.0, max_epochs=1)
    with pytest.raises(ValueError, match="resolved for 40 samples"):  # parameters and data must match
        stochastic_subgradient(X[:30], y[:30], RobustHinge(unc), L2Squared(0.1))
