"""Dual certificates of the robust hinge SVM (rsvm_conic.certify.hinge) and the stochastic solvers'
certified stopping rule: the bound is feasible (hence valid) at any (w, b), tight at the optimum, and a
stochastic run reports "optimal" only within its tolerance of the exact optimum."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from rsvm_conic.formulations.robust import robust_svm
from rsvm_conic.certify.projections import project_dual_set
from _reference import bisection_projection
from rsvm_conic.exceptions import SolverError
from rsvm_conic.certify.contract import relative_gap
from rsvm_conic.solvers.datafits import RobustHinge
from rsvm_conic.solvers.penalties import L2Squared
from rsvm_conic.solvers.stochastic import calibrate_eta0, stochastic_proximal, stochastic_subgradient
from rsvm_conic.uncertainty import UncertaintySet

SOLVERS = {"sgd": stochastic_subgradient, "prox": stochastic_proximal}


def _instance(kind, p, diag, radius=0.3, L=60, n=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((L, n))
    y = np.where(X[:, 0] + 0.7 * rng.standard_normal(L) > 0, 1.0, -1.0)
    k = {"grouped": 3, "sample": L, "shared": 1}[kind]
    if diag:
        Sigma = rng.uniform(0.2, 2.0, (k, n))
    else:
        S = rng.standard_normal((k, n, n))
        Sigma = S @ np.swapaxes(S, 1, 2) / n + 0.1 * np.eye(n)
    groups = {"grouped": np.arange(L) % 3, "sample": "sample", "shared": None}[kind]
    if kind == "shared":
        Sigma = Sigma[0]
    return X, y, UncertaintySet(Sigma=Sigma, groups=groups, p=p, radius=radius)


def _exact(X, y, unc, C):
    """Clarabel at tight tolerances (loosened only if it stalls): (P*, w*, b*)."""
    form = robust_svm(X, y, unc, C)
    for tol in (1e-10, 1e-9, 1e-8):
        try:
            sol = form.solve("clarabel", tol_gap_abs=tol, tol_gap_rel=tol, tol_feas=tol)
            return sol.objective, sol["w"], sol["b"]
        except SolverError:
            continue
    sol = form.solve("clarabel")
    return sol.objective, sol["w"], sol["b"]


def _check_feasible(cert, X, y, C, ops):
    """The returned point is dual feasible and its objective is the reported bound (so weak duality applies)."""
    a = cert.alpha
    assert np.all(a >= 0) and np.all(a <= C)
    assert abs(float(y @ a)) <= 1e-10 * C * a.size
    r = X.T @ (a * y)
    if ops is not None:
        s = np.bincount(ops.group_index, weights=a * ops.gamma, minlength=ops.n_groups)
        norms = np.linalg.norm(cert.Z, ord=ops.p, axis=1)
        assert np.all(norms <= s * (1 + 1e-12) + 1e-14)
        r = r - np.sum(ops.apply(cert.Z, np.arange(ops.n_groups)), axis=0)
    assert cert.dual == pytest.approx(float(np.sum(a)) - 0.5 * float(r @ r), rel=1e-9, abs=1e-9)


CASES = [(kind, p, diag) for kind in ("grouped", "sample", "shared") for p in (1, 2, np.inf) for diag in (True, False)]


@pytest.mark.parametrize("kind,p,diag", CASES)
def test_bound_is_feasible_at_arbitrary_points_and_below_the_optimum(kind, p, diag):
    X, y, unc = _instance(kind, p, diag)
    C = 2.0
    Pstar, w_opt, b_opt = _exact(X, y, unc, C)
    fit = RobustHinge(unc.resolve(*X.shape))
    ops = fit.factor_ops()
    rng = np.random.default_rng(1)
    for trial in range(12):
        scale = [0.0, 1e-3, 0.1, 1.0, 10.0][trial % 5]
        w = w_opt + scale * rng.standard_normal(w_opt.shape) if trial % 2 else scale * rng.standard_normal(w_opt.shape)
        b = b_opt + rng.normal()
        cert = fit.dual_bound(X, y, w, b, C)
        _check_feasible(cert, X, y, C, ops)
        assert cert.dual <= Pstar + 1e-7 * abs(Pstar)  # weak duality, against the exact optimum
        assert cert.primal == pytest.approx(0.5 * w @ w + C * fit.value(y, w, X @ w + b), rel=1e-12)
        assert cert.primal >= Pstar - 1e-7 * abs(Pstar)


def test_radius_zero_is_the_svm_dual():
    X, y, _ = _instance("shared", 2, True)
    Pstar, w, b = _exact(X, y, UncertaintySet(radius=0.0), 1.0)
    fit = RobustHinge(UncertaintySet(radius=0.0).resolve(*X.shape))
    assert fit.factor_ops() is None
    cert = fit.dual_bound(X, y, w, b, 1.0)
    assert cert.Z is None and relative_gap(cert.primal, cert.dual) <= 1e-6
    _check_feasible(cert, X, y, 1.0, None)
    for seed in range(5):
        w2 = np.random.default_rng(seed).standard_normal(w.shape)
        assert fit.dual_bound(X, y, w2, 0.0, 1.0).dual <= Pstar + 1e-7 * Pstar


@pytest.mark.parametrize(
    "kind,p,diag,C",
    [
        ("grouped", 2, False, 1.0),
        ("grouped", 1, False, 10.0),
        ("grouped", np.inf, False, 1.0),
        ("grouped", np.inf, True, 10.0),
        ("grouped", 1, True, 1.0),
        ("sample", 2, False, 10.0),
        ("sample", 1, True, 1.0),
        ("shared", 2, False, 1.0),
        ("shared", 0, True, 1.0),
    ],
)
def test_bound_is_tight_at_the_optimum(kind, p, diag, C):
    """From (w*, b*) alone the certified relative gap is <= 1e-6 (p = 0 here: the nominal SVM)."""
    radius = 0.0 if p == 0 else 0.3
    X, y, unc = _instance(kind, p or 2, diag, radius=radius)
    Pstar, w, b = _exact(X, y, unc, C)
    assert np.linalg.norm(w) > 1e-3  # not the degenerate w* = 0 (see the module docstring of certificates)
    fit = RobustHinge(unc.resolve(*X.shape))
    cert = fit.dual_bound(X, y, w, b, C)
    assert relative_gap(cert.primal, cert.dual) <= 1e-6
    assert cert.dual <= Pstar + 1e-7 * Pstar


def test_rotated_feature_loss_certificate_valid_and_tight():
    from rsvm_conic.formulations.feature_robust import FeatureRobustProblem
    from rsvm_conic.kernels.feature_maps import RandomFourierFeatures
    from rsvm_conic.uncertainty import feature_bounds as fb

    X, y = load_breast_cancer(return_X_y=True)
    idx = np.random.default_rng(0).permutation(X.shape[0])[:80]
    X, y = StandardScaler().fit_transform(X[idx])[:, :8], np.where(y[idx] == 1, 1.0, -1.0)
    rff = RandomFourierFeatures(12, 4.0, random_state=1).fit(X)
    for pbar, gamma in ((2, 0.4), (np.inf, 0.1)):
        G = fb.rff_feature_bound(rff, X, UncertaintySet(radius=gamma), pbar)
        form = FeatureRobustProblem(rff.transform(X), y, G, pbar=pbar, C=10.0, rotations=rff.rotations(X))
        sol = form.solve("clarabel", tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9)
        fit = form.datafit()
        ops = fit.factor_ops()
        cert = fit.dual_bound(form.X, form.y, sol["w"], sol["b"], 10.0)
        assert relative_gap(cert.primal, cert.dual) <= 1e-6
        rng = np.random.default_rng(2)
        for scale in (1e-2, 1.0, 10.0):
            w = sol["w"] + scale * rng.standard_normal(sol["w"].shape)
            c = fit.dual_bound(form.X, form.y, w, rng.normal(), 10.0)
            _check_feasible(c, form.X, form.y, 10.0, ops)
            assert c.dual <= sol.objective + 1e-7 * sol.objective


def test_dual_set_projection_matches_bisection():
    rng = np.random.default_rng(0)
    for trial in range(500):
        L = int(rng.integers(2, 40))
        C = float(rng.uniform(0.1, 10))
        y = rng.choice([-1.0, 1.0], L)
        y[:2] = (1.0, -1.0)
        v = rng.normal(0, C, L) * rng.choice([0.1, 1.0, 10.0])
        if trial % 3 == 0:
            v = np.round(v / C * 2) * C / 2  # ties between breakpoints
        a = project_dual_set(v, y, C)
        np.testing.assert_allclose(a, bisection_projection(v, y, C), atol=1e-12 * C)
        assert abs(y @ a) <= 1e-12 * C * L


# ------------------------------------------------------------------------------------ stochastic solvers
@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), np.where(y == 1, 1.0, -1.0)


@pytest.mark.parametrize(
    "p,radius,C", [(np.inf, 1.0, 1.0), (1, 0.1, 0.1), (1, 1.0, 1.0), (2, 1.0, 0.1), (2, 1.0, 10.0)]
)
def test_stochastic_optimal_only_within_tol_of_the_exact_optimum(cancer, p, radius, C):
    """Standardised breast cancer (the issue's setting; p = inf radius 1 has w* = 0 and stalls far away)."""
    X, y = cancer
    unc = UncertaintySet(p=p, radius=radius)
    Pstar = _exact(X, y, unc, C)[0]
    fit = RobustHinge(unc.resolve(*X.shape))
    lam = 1.0 / (C * X.shape[0])
    for name, solve in SOLVERS.items():
        res = solve(X, y, fit, L2Squared(lam), seed=0)
        assert res.info.route == name and res.info.iterations == res.epochs
        assert res.dual <= Pstar + 1e-7 * Pstar  # the certificate never overstates
        assert res.primal == pytest.approx(0.5 * res.w @ res.w + C * fit.value(y, res.w, X @ res.w + res.b), rel=1e-12)
        assert res.gap >= relative_gap(res.primal, Pstar) - 1e-9
        if res.status == "optimal":
            assert res.gap <= 1e-3 and relative_gap(res.primal, Pstar) <= 1e-3
        else:
            assert res.status == "max_iter" and res.epochs == 200 and res.gap > 1e-3


def test_stochastic_reaches_certified_optimum(cancer):
    X, y = cancer
    unc = UncertaintySet(p=2, radius=1.0)
    Pstar = _exact(X, y, unc, 0.1)[0]
    fit = RobustHinge(unc.resolve(*X.shape))
    for name, solve in SOLVERS.items():
        res = solve(X, y, fit, L2Squared(1.0 / (0.1 * X.shape[0])), seed=0)
        assert res.status == "optimal" and res.converged and res.epochs < 200, (name, res.gap)
        assert relative_gap(res.primal, Pstar) <= res.gap <= 1e-3
        assert res.info.detail["stop"] == "gap" and res.info.detail["certificates"] >= 1


def test_stochastic_cannot_claim_optimal_without_reaching_tol(cancer):
    X, y = cancer
    fit = RobustHinge(UncertaintySet(p=1, radius=0.1).resolve(*X.shape))
    lam = 1.0 / (10.0 * X.shape[0])
    res = stochastic_subgradient(X, y, fit, L2Squared(lam), max_epochs=5)
    assert res.status == "max_iter" and not res.converged and res.gap > 1e-3
    assert res.info.detail["certificates"] >= 1  # the last epoch is always certified
    res = stochastic_proximal(X, y, fit, L2Squared(lam), max_epochs=60, patience=2, certify_every=1)
    assert res.status in ("uncertified", "optimal", "max_iter")
    if res.status == "uncertified":
        assert res.epochs < 60 and res.info.detail["stop"] == "stalled"

    class NoCertificate(RobustHinge):  # a data fit without a dual bound is never certified
        dual_bound = None

    bare = NoCertificate(fit.unc)
    res = stochastic_proximal(X, y, bare, L2Squared(lam), max_epochs=3)
    assert res.status == "max_iter" and res.dual == -np.inf and res.gap == np.inf


def test_stochastic_runs_are_reproducible(cancer):
    X, y = cancer
    fit = RobustHinge(UncertaintySet(p=np.inf, radius=0.1).resolve(*X.shape))
    a = stochastic_proximal(X, y, fit, L2Squared(1e-3), seed=5, max_epochs=30)
    b = stochastic_proximal(X, y, fit, L2Squared(1e-3), seed=5, max_epochs=30)
    np.testing.assert_array_equal(a.w, b.w)
    assert a.gap == b.gap and [h[:4] for h in a.gap_history] == [h[:4] for h in b.gap_history]


def test_one_calibrator_for_both_losses(cancer):
    """eta0="auto" calibrates on datafit.restrict: the rotated loss needs no separate calibrator."""
    from rsvm_conic.solvers import feature_datafits as fd

    X, y = cancer
    X = X[:200, :6]
    y = y[:200]
    rng = np.random.default_rng(0)
    ang = rng.uniform(0, 2 * np.pi, (200, 3))
    fit = fd.RotatedRobustHinge(np.cos(ang), np.sin(ang), 0.3 * np.ones(200), 1.0)
    assert isinstance(fit.restrict(np.arange(10)), fd.RotatedRobustHinge)
    lam = 1e-2
    res = stochastic_proximal(X, y, fit, L2Squared(lam), seed=3, max_epochs=2)
    assert res.eta0 == calibrate_eta0(X, y, fit, L2Squared(lam), True, 64, np.random.default_rng(3))
    # RobustHinge.restrict keeps each sample's group and gamma
    unc = UncertaintySet(
        Sigma=np.ones((3, 6)), groups=np.arange(200) % 3, radius=0.5, sample_scale=np.linspace(0.5, 1.5, 200)
    ).resolve(200, 6)
    sub = RobustHinge(unc).restrict(np.arange(50, 60))
    np.testing.assert_array_equal(sub.unc.group_index, np.arange(50, 60) % 3)
    np.testing.assert_allclose(sub.unc.gamma, unc.gamma[50:60])


@pytest.mark.parametrize("seed", range(12))
def test_dual_set_projection_is_exact_at_any_scale(seed):
    """The one projection onto {0 <= a <= C, y'a = level} meets y'a = level to the rounding of the sum y'a itself at
    any C (the sorted breakpoints alone lost y'a = 0.16 at C = 1e12: their cumulative sum adds C-sized steps), and
    is the bisection's point; with per-coordinate bounds C_i and a level as well."""
    rng = np.random.default_rng(seed)
    L = int(rng.integers(2, 800))
    y = np.where(rng.random(L) < rng.uniform(0.2, 0.8), 1.0, -1.0)
    y[:2] = (1.0, -1.0)
    C = 10.0 ** rng.uniform(-3, 14)
    if seed % 3 == 1:
        C = C * rng.uniform(0.5, 2.0, L)
    v = rng.uniform(0, 1, L) * np.max(C) * 10.0 ** rng.uniform(-10, 0)
    level = 0.0 if seed % 2 == 0 else float(rng.uniform(-0.3, 0.3)) * float(np.sum(v))
    a = project_dual_set(v, y, C, level)
    ref = bisection_projection(v, y, C, level)
    assert np.all(a >= 0.0) and np.all(a <= C)
    assert abs(float(y @ a) - level) <= 1e-12 * (float(np.sum(a)) + abs(level))
    np.testing.assert_allclose(a, ref, atol=1e-11 * (float(np.max(np.abs(v))) + abs(level)))
