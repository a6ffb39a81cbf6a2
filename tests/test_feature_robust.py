import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from rsvm_conic import evaluation as ev
from rsvm_conic.estimators.feature import RobustFeatureSVC
from rsvm_conic.formulations.feature_robust import FeatureRobustProblem, rotation_operator
from rsvm_conic.formulations.nominal import NominalProblem
from rsvm_conic.kernels.feature_maps import NystroemMap, RandomFourierFeatures
from rsvm_conic.runner.compare import check_instance
from rsvm_conic.solvers.feature_datafits import rotate
from rsvm_conic.uncertainty import feature_bounds as fb
from rsvm_conic.uncertainty.sets import UncertaintySet, dual_norm_values

from _fuzzutil import fit_asserting_warnings


def _data(L=80, seed=0):
    X, y = load_breast_cancer(return_X_y=True)
    idx = np.random.default_rng(seed).permutation(X.shape[0])[:L]
    return StandardScaler().fit_transform(X[idx]), np.where(y[idx] == 1, 1.0, -1.0)


def _rot_matrices(c, s):
    L, F = c.shape
    R = np.zeros((L, 2 * F, 2 * F))
    for j in range(F):
        R[:, 2 * j, 2 * j], R[:, 2 * j, 2 * j + 1] = c[:, j], s[:, j]
        R[:, 2 * j + 1, 2 * j], R[:, 2 * j + 1, 2 * j + 1] = -s[:, j], c[:, j]
    return R


def test_rotation_structure_matches_dense_R():
    rng = np.random.default_rng(0)
    c, s = np.cos(rng.normal(size=(5, 3))), np.sin(rng.normal(size=(5, 3)))
    R = _rot_matrices(c, s)
    z = rng.normal(size=6)
    assert np.allclose(rotate(c, s, z), R @ z)
    assert np.allclose((rotation_operator(c, s) @ z).reshape(5, 6), R @ z)


@pytest.mark.parametrize("qbar", [1.0, np.inf])
def test_robust_term_is_R_zeta_not_R_transpose_zeta(qbar):
    """Worst case of -<zeta, dphi> over {||R dphi||_pbar <= 1}: equals ||R zeta||_qbar (not ||R' zeta||)."""
    rng = np.random.default_rng(1)
    pbar = {1.0: np.inf, np.inf: 1.0}[qbar]
    X = rng.normal(size=(1, 3))
    rff = RandomFourierFeatures(8, 0.5, random_state=0).fit(X)
    R = _rot_matrices(*rff.rotations(X))[0]
    gaps = []
    for trial in range(20):
        zeta = rng.normal(size=8)
        # dphi = R' v with v on the pbar unit sphere; the vertices/extreme points give the max
        if pbar == np.inf:
            V = rng.choice([-1.0, 1.0], size=(20000, 8))
        else:
            V = np.vstack([np.eye(8), -np.eye(8)])
        worst = np.max(V @ (R @ zeta))  # max <zeta, R' v>
        assert worst == pytest.approx(dual_norm_values(R @ zeta, qbar), rel=1e-12)
        gaps.append(worst - dual_norm_values(R.T @ zeta, qbar))
    assert max(gaps) > 1e-2  # the printed ||R' zeta|| under-estimates the worst case


def test_nystroem_robust_term_uses_inverse_sqrt_eigenvalues():
    rng = np.random.default_rng(2)
    lam = np.array([3.0, 1.0, 0.1])
    zeta = rng.normal(size=3)
    V = rng.normal(size=(50000, 3))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    worst = np.max((V / np.sqrt(lam)) @ zeta)  # dphi = Lambda^{-1/2} v, ||Lambda^{1/2} dphi|| = 1
    assert worst == pytest.approx(np.linalg.norm(zeta / np.sqrt(lam)), rel=1e-3)
    assert worst > 1.5 * np.linalg.norm(np.sqrt(lam) * zeta) or np.linalg.norm(np.sqrt(lam) * zeta) > 1.5 * worst


@pytest.mark.parametrize("pbar", [2, np.inf])
def test_radius_zero_equals_nominal_linear_svm_on_features(pbar):
    X, y = _data()
    rff = RandomFourierFeatures(20, 6.0, random_state=0).fit(X)
    Phi = rff.transform(X)
    G = fb.rff_feature_bound(rff, X, UncertaintySet(radius=0.3), pbar)
    form = FeatureRobustProblem(Phi, y, G, pbar=pbar, C=1.0, radius=0.0, rotations=rff.rotations(X))
    sol = form.solve("clarabel")
    svc = SVC(kernel="linear", C=1.0, tol=1e-10).fit(Phi, y)
    ref = NominalProblem(Phi, y, 1.0).objective_wb(svc.coef_.ravel(), svc.intercept_[0])
    assert abs(sol.objective - ref) <= 1e-5 * abs(ref)
    assert abs(form.objective_wb(svc.coef_.ravel(), svc.intercept_[0]) - ref) <= 1e-12 * abs(ref)


@pytest.mark.slow
def test_conic_and_stochastic_backends_agree_shared_instance():
    from rsvm_conic.problems.feature_robust import INSTANCES

    reports, ok = check_instance(INSTANCES["feature-robust-rff"])
    assert ok, [(r.backend, r.gap, r.error) for r in reports]


def test_clarabel_scs_agree_nystroem_and_robust_costs_more():
    X, y = _data(60, 1)
    nys = NystroemMap(12, 6.0, random_state=0).fit(X)
    G = fb.nystroem_feature_bound(nys, X, UncertaintySet(radius=0.2))
    form = FeatureRobustProblem(nys.transform(X), y, G, C=1.0, R=np.sqrt(nys.eigenvalues_))
    tol8 = dict(tol_gap_abs=1e-8, tol_gap_rel=1e-8, tol_feas=1e-8)  # Clarabel stalls at the default 1e-9 here
    a, b = form.solve("clarabel", **tol8), form.solve("scs")
    assert abs(a.objective - b.objective) <= 1e-4 * abs(a.objective)
    form.set_params(radius=0.0)
    assert form.solve("clarabel", **tol8).objective < a.objective


def test_robust_loss_upper_bounds_hinge_under_input_attacks():
    """End to end: the robust loss of each sample bounds the hinge loss at every perturbed input found."""
    X, y = _data(60, 2)
    X = X[:, :8]  # 8 input features keep the local searches cheap
    for pbar, gamma in ((2, 0.4), (np.inf, 0.1)):
        rff = RandomFourierFeatures(12, 4.0, random_state=1).fit(X)
        G = fb.rff_feature_bound(rff, X, UncertaintySet(radius=gamma), pbar)
        form = FeatureRobustProblem(rff.transform(X), y, G, pbar=pbar, C=10.0, rotations=rff.rotations(X))
        sol = form.solve("clarabel")
        zeta, b = sol["w"], sol["b"]
        assert np.linalg.norm(zeta) > 0.1  # not the trivial zeta = 0 solution
        robust = form.datafit().losses(y, zeta, form.X @ zeta + b)
        nominal = np.maximum(0, 1 - y * (form.X @ zeta + b))
        increased = 0
        for i in np.argsort(-robust)[:6]:  # the samples with the largest robust loss (on or inside the margin)
            worst_hinge, _ = ev.adversarial_search(
                lambda D: np.maximum(0, 1 - y[i] * (rff.transform(X[i] + D) @ zeta + b)),
                np.eye(X.shape[1]),
                gamma,
                2,
                n_samples=400,
                n_local=2,
                random_state=i,
            )
            assert worst_hinge <= robust[i] + 1e-7
            increased += worst_hinge > nominal[i] + 1e-6
        assert increased >= 2  # the attack does move the loss: the check is not vacuous


def test_estimator_rff_and_nystroem_and_labels():
    X, y = _data(80, 3)
    labels = np.where(y > 0, "benign", "malignant")
    for fm in ("rff", "nystroem"):
        est = RobustFeatureSVC(fm, 30, 6.0, radius=0.2, C=1.0, random_state=0).fit(X, labels)
        assert set(est.predict(X)) <= set(labels) and est.score(X, labels) > 0.85
        assert est.Gamma_.shape == (80,) and np.all(est.Gamma_ > 0)
    sgd = RobustFeatureSVC(
        "rff",
        30,
        6.0,
        radius=0.2,
        feature_norm=np.inf,
        C=1.0,
        solver="prox",
        random_state=0,
        solver_options={"max_epochs": 300, "tol": 1e-7},
    )
    with pytest.warns(ConvergenceWarning, match="stopped at max_epochs"):  # 300 epochs do not reach tol = 1e-7
        sgd.fit(X, labels)
    conic = RobustFeatureSVC("rff", 30, 6.0, radius=0.2, feature_norm=np.inf, C=1.0, random_state=0).fit(X, labels)
    assert abs(sgd.objective_ - conic.objective_) <= 1e-2 * conic.objective_


def test_estimator_bad_inputs():
    X, y = _data(20, 4)
    for kw in (
        {"feature_map": "poly"},
        {"n_components": 7},
        {"radius": -1.0},
        {"norm": 3},
        {"feature_map": "nystroem", "feature_norm": 1},
        {"solver": "mosek"},
        {"bound": "paper"},
        {"C": 0},
    ):
        with pytest.raises(ValueError):
            RobustFeatureSVC(**kw).fit(X, y)
    with pytest.raises(ValueError):
        RobustFeatureSVC().fit(X, np.zeros(20))
    with pytest.raises(ValueError):
        FeatureRobustProblem(np.zeros((3, 4)), np.array([1.0, -1, 1]), [1.0, 2.0])
    with pytest.raises(ValueError):
        FeatureRobustProblem(
            np.zeros((3, 4)), np.array([1.0, -1, 1]), 1.0, pbar=np.inf, rotations=(np.ones((3, 1)), np.ones((3, 1)))
        )


def test_estimator_uses_input_uncertainty_shape():
    X, y = _data(60, 5)
    n = X.shape[1]
    small = RobustFeatureSVC("rff", 20, 6.0, radius=0.2, random_state=0).fit(X, y, Sigma=np.full(n, 0.25))
    big = RobustFeatureSVC("rff", 20, 6.0, radius=0.2, random_state=0).fit(X, y, Sigma=np.full(n, 1.0))
    assert np.allclose(big.Gamma_, 2 * small.Gamma_)  # Gamma is linear in the input scale (small angles, pbar=2)
    groups = (y > 0).astype(int)
    est = RobustFeatureSVC("nystroem", 20, 6.0, radius=0.2, random_state=0).fit(
        X, y, Sigma=np.stack([np.full(n, 0.1), np.full(n, 1.0)]), sigma_index=groups
    )
    assert est.Gamma_[groups == 1].mean() > est.Gamma_[groups == 0].mean()


def _held_out(name):
    """Data sets the defaults were not tuned on, standardised (two classes: the first label against the rest)."""
    from sklearn.datasets import load_iris, load_wine

    from rsvm_conic.datasets import load_dataset

    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
    elif name == "wine":
        X, y = load_wine(return_X_y=True)
    elif name == "iris":
        X, y = load_iris(return_X_y=True)
    else:
        X, y = load_dataset(name)
    return StandardScaler().fit_transform(X), (y == np.unique(y)[0]).astype(int)


@pytest.mark.parametrize("name", ["bupa", "breast_cancer", "wine", "iris"])
def test_a_constant_classifier_warns_and_says_why(name):
    """With bandwidth 1 and radius 0.1 in the units of X (Sigma = identity), RobustFeatureSVC returns zeta = 0 on
    bupa, breast cancer and wine (the radius maps to a feature-space bound the margins cannot absorb); that fit
    warns, with the reason, as the linear estimators do, and a fit that separates (iris) does not."""
    from rsvm_conic.exceptions import ConstantClassifierWarning

    X, y = _held_out(name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = RobustFeatureSVC(sigma=1.0, radius=0.1, random_state=0).fit(X, y, Sigma=np.ones(X.shape[1]))
    constant = np.ptp(est.decision_function(X)) <= 1e-7 * (1.0 + np.max(np.abs(est.decision_function(X))))
    mine = [w for w in caught if issubclass(w.category, ConstantClassifierWarning)]
    assert len(mine) == int(constant)
    assert constant == (name != "iris")
    if constant:
        assert "smaller radius" in str(mine[0].message) and "radius 0.1" in str(mine[0].message)
        assert len(np.unique(est.predict(X))) == 1


def test_auto_past_3000_rows_is_the_interior_point_certified_like_the_other_routes():
    """Past 3000 rows ``auto`` was the stochastic proximal method, certified to 1e-3 only (or stopped at max_epochs);
    ``rsvm-conic bench auto-routes`` measured the interior point 18-64x faster than Clarabel and faster than ``prox``
    on MAGIC subsets of 3000-8000 rows, certified to 1e-6 like Clarabel.  It is now the default at every size."""
    from rsvm_conic.exceptions import SolverWarning

    X, y = _held_out("magic")
    idx = np.random.default_rng(0).choice(y.size, 3200, replace=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SolverWarning)  # no fallback
        est = RobustFeatureSVC(radius=0.01, random_state=0).fit(X[idx], y[idx])
    st = est.solver_stats_
    assert st["route"] == "ipm" and st["status"] == "optimal" and st["gap_rel"] <= 1e-6 and st["tol"] == 1e-6
    # the same optimum as Clarabel's, within the certified gaps (Clarabel on 600 of the rows, for time)
    sub = idx[:600]
    a = RobustFeatureSVC(radius=0.01, random_state=0).fit(X[sub], y[sub])
    b = RobustFeatureSVC(radius=0.01, random_state=0, solver="clarabel").fit(X[sub], y[sub])
    assert a.solver_stats_["route"] == "ipm"
    assert abs(a.objective_ - b.objective_) <= 2e-6 * abs(b.objective_)


def test_feature_norm_other_than_2_goes_to_clarabel_and_ipm_says_why_not():
    X, y = _data(60)
    est = fit_asserting_warnings(RobustFeatureSVC(feature_norm=np.inf, n_components=20, random_state=0), X, y)
    assert est.solver_stats_["route"] == "clarabel" and est.solver_stats_["status"] == "optimal"
    with pytest.raises(ValueError, match="cannot be solved with backend 'ipm'"):
        RobustFeatureSVC(feature_norm=1, solver="ipm", n_components=20, random_state=0).fit(X, y)


def test_explicit_prox_never_reports_optimal_above_its_tolerance():
    from sklearn.exceptions import ConvergenceWarning

    X, y = _data(200)
    with pytest.warns(ConvergenceWarning, match="stopped at max_epochs"):
        est = RobustFeatureSVC(solver="prox", solver_options={"max_epochs": 2, "tol": 1e-9}, random_state=0).fit(X, y)
    st = est.solver_stats_
    assert st["status"] == "max_iter" and st["gap_rel"] > st["tol"] == 1e-9


def test_auto_falls_back_through_the_one_chain(monkeypatch):
    """``solve("auto")`` runs the package's one fallback chain: a failed interior point is announced by a
    SolverWarning naming it and the next attempt, and recorded in ``info["fallback_from"]``."""
    from rsvm_conic.exceptions import SolverError, SolverWarning

    rng = np.random.default_rng(5)
    Phi = rng.normal(size=(40, 6))
    y = np.where(Phi[:, 0] + 0.3 * rng.normal(size=40) > 0, 1.0, -1.0)
    f = FeatureRobustProblem(Phi, y, rng.uniform(0.05, 0.2, size=40), pbar=2, R=rng.uniform(0.5, 2.0, size=6))
    assert f.auto_routes() == ("ipm", "clarabel", "clarabel at 1e-7", "scs at 1e-6")

    def broken(**options):
        raise SolverError("interior point broke")

    monkeypatch.setattr(f, "_solve_ipm", broken)
    with pytest.warns(SolverWarning, match="route 'ipm' failed .*interior point broke.*falling back to 'clarabel'"):
        sol = f.solve("auto")
    assert sol.backend == "clarabel" and sol.certificate.status == "optimal"
    assert sol.info["fallback_from"] == ["ipm: interior point broke"]
