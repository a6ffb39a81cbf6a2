"""Stochastic subgradient / proximal solvers against the exact conic optimum."""

import numpy as np
import pytest

from rsvm_conic import problems
from rsvm_conic.runner import compare_backends
from rsvm_conic.solvers.datafits import RobustHinge
from rsvm_conic.uncertainty import UncertaintySet


@pytest.mark.parametrize(
    "name,shape", [("robust-small", (400, 5)), pytest.param("robust-large", (20000, 50), marks=pytest.mark.long)]
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


def _blocks_instance(L=3000, n=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((L, n))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(L) > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("shuffle", ["once", "epoch"])
def test_block_runs_are_reproducible_for_a_fixed_seed(shuffle):
    """Shuffled once into contiguous blocks (or each epoch into the same buffer): a fixed seed gives the same
    iterates, certificates and stopping epoch bit for bit; another seed another run."""
    from rsvm_conic.solvers.penalties import L2Squared
    from rsvm_conic.solvers.stochastic import stochastic_proximal, stochastic_subgradient

    X, y = _blocks_instance()
    unc = UncertaintySet(Sigma=np.full((2, X.shape[1]), 0.1), groups=(y > 0).astype(int), radius=0.5)
    fit = RobustHinge(unc.resolve(*X.shape))
    for solve in (stochastic_subgradient, stochastic_proximal):
        runs = [
            solve(X, y, fit, L2Squared(1e-3), seed=s, batch_size=256, shuffle=shuffle, max_epochs=8, tol=1e-9)
            for s in (7, 7, 8)
        ]
        np.testing.assert_array_equal(runs[0].w, runs[1].w)
        assert runs[0].b == runs[1].b and runs[0].epochs == runs[1].epochs
        assert [h[:4] for h in runs[0].gap_history] == [h[:4] for h in runs[1].gap_history]
        assert not np.array_equal(runs[0].w, runs[2].w)


def test_nominal_band_certificate_is_valid_and_certifies_against_clarabel():
    """The band candidate of the nominal dual bound never overstates (dual <= P* of Clarabel) and a stochastic run
    in contiguous blocks reports 'optimal' only within its tolerance of the exact optimum."""
    from rsvm_conic.formulations import nominal_svm
    from rsvm_conic.certify.hinge import dual_bound
    from rsvm_conic.certify.contract import relative_gap
    from rsvm_conic.solvers.penalties import L2Squared
    from rsvm_conic.solvers.stochastic import stochastic_proximal, stochastic_subgradient

    X, y = _blocks_instance(L=2000, n=5, seed=1)
    C = 0.05
    ref = nominal_svm(X, y, C=C).solve("clarabel", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    Pstar, wstar, bstar = ref.objective, ref["w"], ref["b"]
    rng = np.random.default_rng(0)
    for scale in (0.0, 1e-3, 1e-2, 1e-1):
        w = wstar + scale * rng.standard_normal(wstar.shape)
        cert = dual_bound(X, y, C, w, bstar, None, band=0.1, taus=(), refine=0)
        assert np.all(cert.alpha >= 0) and np.all(cert.alpha <= C) and abs(y @ cert.alpha) <= 1e-10 * C * y.size
        assert cert.dual <= Pstar * (1 + 1e-9)
        if scale == 0.0:
            assert relative_gap(Pstar, cert.dual) < 1e-6
    lam = 1.0 / (C * X.shape[0])
    for solve in (stochastic_subgradient, stochastic_proximal):
        res = solve(X, y, RobustHinge(None), L2Squared(lam), seed=0, shuffle="once", batch_size=128)
        assert res.dual <= Pstar * (1 + 1e-9)
        if res.status == "optimal":
            assert res.gap <= 1e-3 and relative_gap(res.primal, Pstar) <= 1e-3


@pytest.mark.parametrize("grouping", ["two", "sample", "seventy"])
@pytest.mark.parametrize("diag", [True, False])
def test_batch_subgradient_matches_the_per_term_definition(grouping, diag):
    """The fused minibatch path (factors applied to w once per batch group; no sort for a group per sample) gives
    the loss mask and subgradient of the definition: hinge part plus ``_robust_subgradient`` on the active set."""
    rng = np.random.default_rng(1)
    L, n = 100, 4
    X = rng.standard_normal((L, n))
    y = rng.choice([-1.0, 1.0], L)
    groups = {"two": np.arange(L) % 2, "sample": "sample", "seventy": np.arange(L) % 70}[grouping]
    k = {"two": 2, "sample": L, "seventy": 70}[grouping]
    if diag:
        Sigma = rng.uniform(0.2, 2.0, (k, n))
    else:
        S = rng.standard_normal((k, n, n))
        Sigma = S @ np.swapaxes(S, 1, 2) / n + 0.1 * np.eye(n)
    for p in (2, 1, np.inf):
        unc = UncertaintySet(
            Sigma=Sigma, groups=groups, p=p, radius=0.3, sample_scale=rng.uniform(0.5, 1.5, L)
        ).resolve(L, n)
        fit = RobustHinge(unc).initialize(X, y)
        w, b = rng.standard_normal(n), 0.1
        idx = rng.permutation(L)[:40]
        Xb, yb = X[idx], y[idx]
        gw, gb, active = fit.subgradient(Xb, yb, w, Xb @ w + b, idx)
        ref_active = fit.losses(yb, w, Xb @ w + b, idx) > 0
        np.testing.assert_array_equal(active, ref_active)
        ref = -(yb[ref_active] @ Xb[ref_active]) + fit._robust_subgradient(w, idx[ref_active])
        np.testing.assert_allclose(gw, ref / idx.size, rtol=1e-12, atol=1e-14)
        assert gb == pytest.approx(-np.sum(yb[ref_active]) / idx.size, abs=1e-15)


@pytest.mark.parametrize("grouping", ["two", "sample", "seventy", "sample-signed"])
@pytest.mark.parametrize("diag", [True, False])
def test_blocks_in_shuffled_order_give_the_gathered_subgradient(grouping, diag):
    """``RobustHinge.blocks(perm)`` (the per-sample parameters gathered once into the shuffled order; per-sample
    diagonal factors kept as ``a * a`` or ``|a|``) gives, for a slice ``s:e`` of that order, the loss mask and
    subgradient of :meth:`RobustHinge.subgradient` on the samples ``perm[s:e]``; also at w = 0 and with zero
    entries of w (zero norms: subgradient 0) and for diagonal factors of either sign."""
    from rsvm_conic.solvers.stochastic import _in_order
    from rsvm_conic.uncertainty.sets import ResolvedUncertainty

    rng = np.random.default_rng(2)
    L, n = 150, 5
    X = rng.standard_normal((L, n))
    y = rng.choice([-1.0, 1.0], L)
    k = {"two": 2, "sample": L, "seventy": 70, "sample-signed": L}[grouping]
    gi = {"two": np.arange(L) % 2, "seventy": np.arange(L) % 70}.get(grouping, rng.permutation(L))
    F = rng.uniform(0.2, 1.5, (k, n)) if diag else rng.standard_normal((k, n, n)) / np.sqrt(n)
    if grouping == "sample-signed":
        F = F * rng.choice([-1.0, 1.0], F.shape)
    perm = rng.permutation(L)
    for p, q in ((2.0, 2.0), (1.0, np.inf), (np.inf, 1.0)):
        unc = ResolvedUncertainty(F, diag, gi, p, q, 0.3, rng.uniform(0.5, 1.5, L))
        fit = RobustHinge(unc).initialize(X, y)
        steps = _in_order(fit, perm)
        Xp, yp = X[perm], y[perm]
        for w in (rng.standard_normal(n), np.zeros(n), np.where(np.arange(n) % 2 == 0, 0.0, 1.0)):
            for s, e in ((0, 40), (40, 97), (97, L)):
                Xb, b = Xp[s:e], 0.1
                gw, gb, active = steps.subgradient(Xb, yp[s:e], w, Xb @ w + b, slice(s, e))
                ref_gw, ref_gb, ref_active = fit.subgradient(Xb, yp[s:e], w, Xb @ w + b, perm[s:e])
                np.testing.assert_array_equal(active, ref_active)
                np.testing.assert_allclose(gw, ref_gw, rtol=1e-12, atol=1e-14)
                assert gb == ref_gb


def test_activity_in_shuffled_order_matches_the_sample_order():
    """The dual estimate summed over slices of the shuffled order (reordered each epoch) is the one summed over
    the samples themselves, bit for bit."""
    from rsvm_conic.solvers.stochastic import _Activity

    rng = np.random.default_rng(3)
    L = 50
    a, ref = _Activity(L), _Activity(L)
    for _ in range(3):
        perm = rng.permutation(L)
        a.reorder(perm)
        for s in range(0, L, 16):
            active = rng.random(min(16, L - s)) > 0.5
            a.add(slice(s, s + 16), active)
            ref.add(perm[s : s + 16], active)
    np.testing.assert_array_equal(a.fraction(), ref.fraction())


@pytest.mark.parametrize("p,tol", [(2, 1e-3), (np.inf, 5e-3)])  # p = inf: the dual bound certifies more slowly
def test_per_sample_diagonal_runs_certify_against_clarabel(p, tol):
    """Per-sample diagonal sets, p = 2 and inf (the steps read ``a * a`` or ``|a|``, gathered once): both routes
    in contiguous blocks stop 'optimal' within their tolerance of Clarabel's optimum; a fixed seed repeats bit for
    bit."""
    from rsvm_conic.formulations import robust_svm
    from rsvm_conic.certify.contract import relative_gap
    from rsvm_conic.solvers.penalties import L2Squared
    from rsvm_conic.solvers.stochastic import stochastic_proximal, stochastic_subgradient

    rng = np.random.default_rng(4)
    X, y = _blocks_instance(L=400, n=4, seed=4)
    S = UncertaintySet(Sigma=rng.uniform(0.01, 0.2, X.shape), groups="sample", p=p, radius=0.5)
    C = 0.5
    ref = robust_svm(X, y, S, C=C).solve("clarabel", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    fit = RobustHinge(S.resolve(*X.shape))
    lam = 1.0 / (C * X.shape[0])
    for solve in (stochastic_subgradient, stochastic_proximal):
        runs = [solve(X, y, fit, L2Squared(lam), seed=0, shuffle="once", batch_size=32, tol=tol) for _ in range(2)]
        res = runs[0]
        assert res.status == "optimal" and res.gap <= tol, res.info
        assert res.dual <= ref.objective * (1 + 1e-9)
        assert relative_gap(res.primal, ref.objective) <= tol
        np.testing.assert_array_equal(res.w, runs[1].w)
        assert res.b == runs[1].b and res.epochs == runs[1].epochs
