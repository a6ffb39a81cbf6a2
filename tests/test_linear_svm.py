"""Nominal / robust linear SVM: reductions, backend agreement, true worst case, DPP re-solves."""

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from rsvm_conic.datasets.synthetic import make_uncertain_classification
from rsvm_conic.estimators import ChanceConstrainedSVC, NominalSVC, RobustSVC
from rsvm_conic.formulations import nominal_svm, robust_svm
from rsvm_conic.uncertainty import UncertaintySet

from _fuzzutil import fit_asserting_warnings


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def primal_objective(w, b, X, y_pm, C):
    return 0.5 * w @ w + C * np.sum(np.maximum(0, 1 - y_pm * (X @ w + b)))


@pytest.mark.parametrize("C", [0.1, 1.0])
@pytest.mark.parametrize(
    "make",
    [
        lambda C: RobustSVC(C=C, radius=0.0),
        lambda C: RobustSVC(C=C, radius=0.0, norm=np.inf, solver="scs"),
        lambda C: ChanceConstrainedSVC(C=C, epsilon=0.5, distribution="gaussian"),  # kappa = 0
    ],
)
def test_radius_zero_reproduces_sklearn_svc(cancer, make, C):
    X, y = cancer
    y_pm = np.where(y == 1, 1.0, -1.0)
    svc = SVC(kernel="linear", C=C, tol=1e-10).fit(X, y)
    ref = primal_objective(svc.coef_.ravel(), svc.intercept_[0], X, y_pm, C)
    est = make(C).fit(X, y, Sigma=np.ones(X.shape[1]))
    assert abs(est.objective_ - ref) / ref < 1e-5
    assert primal_objective(est.coef_.ravel(), est.intercept_[0], X, y_pm, C) == pytest.approx(est.objective_, rel=1e-9)
    np.testing.assert_array_equal(est.predict(X), svc.predict(X))


def test_nominal_backends_agree(cancer):
    X, y = cancer
    y_pm = np.where(y == 1, 1.0, -1.0)
    f = nominal_svm(X, y_pm, C=1.0)
    objs = {be: f.solve(be).objective for be in ("libsvm", "clarabel", "scs")}
    ref = objs["clarabel"]
    assert all(abs(v - ref) / ref < 1e-5 for v in objs.values()), objs
    assert NominalSVC(C=1.0).fit(X, y).objective_ == pytest.approx(ref, rel=1e-5)


@pytest.fixture(scope="module")
def uncertain_data():
    return make_uncertain_classification(300, 6, separation=2.0, noise_scale=0.4, random_state=3)


@pytest.mark.parametrize("p", [1, 2, np.inf])
@pytest.mark.parametrize("grouping", ["shared", "grouped", "per-sample"])
def test_clarabel_and_scs_agree_on_robust_socp(uncertain_data, p, grouping):
    X, y, Sigma, groups = uncertain_data
    if grouping == "shared":
        unc = UncertaintySet(Sigma=Sigma[0], p=p, radius=0.8)
    elif grouping == "grouped":
        unc = UncertaintySet(Sigma=Sigma, groups=groups, p=p, radius=0.8)
    else:
        unc = UncertaintySet(Sigma=Sigma[groups] * np.linspace(0.5, 1.5, len(y))[:, None, None], p=p, radius=0.8)
    f = robust_svm(X, y, unc, C=1.0)
    a, b = f.solve("clarabel"), f.solve("scs")
    assert a.status == b.status == "optimal"
    assert abs(a.objective - b.objective) / abs(a.objective) < 1e-5
    # the numpy objective is the CVXPY objective at the solution
    f.solve("clarabel")
    assert f.problem.value == pytest.approx(a.objective, rel=1e-6)


@pytest.mark.parametrize("p", [1, 2, np.inf])
def test_robust_loss_is_the_worst_case_hinge(uncertain_data, p):
    """For the fitted (w, b), each sample's robust loss equals max of the nominal hinge over U_i."""
    X, y, Sigma, groups = uncertain_data
    unc = UncertaintySet(Sigma=Sigma, groups=groups, p=p, radius=0.6)
    f = robust_svm(X, y, unc, C=1.0)
    sol = f.solve("clarabel")
    w, b = sol["w"], sol["b"]
    r = f.current_uncertainty()
    robust = f.datafit().losses(y, w, X @ w + b)
    # closed form: the worst-case perturbation attains the robust loss
    dx = r.worst_case(w, y)
    hinge_at_worst = np.maximum(0, 1 - y * ((X + dx) @ w + b))
    np.testing.assert_allclose(hinge_at_worst, robust, rtol=1e-9, atol=1e-12)
    # independent numeric search over U_i (boundary samples + SLSQP) on a subset of samples
    rng = np.random.default_rng(0)
    for i in rng.choice(len(y), 8, replace=False):
        A = r.factors[r.group_index[i]]
        gamma = r.gamma[i]
        D = r.sample_ball(i, 3000, rng)
        best = np.max(np.maximum(0, 1 - y[i] * ((X[i] + D) @ w + b)))
        u_best = np.linalg.solve(A, D[np.argmax(1 - y[i] * ((X[i] + D) @ w + b))])
        margin = lambda u: y[i] * (w @ (A @ u))
        if p == np.inf:  # a box: local search with bounds
            res = minimize(margin, u_best, method="L-BFGS-B", bounds=[(-gamma, gamma)] * len(w))
        else:
            res = minimize(
                margin,
                u_best,
                method="SLSQP",
                options={"ftol": 1e-12, "maxiter": 300},
                constraints=[{"type": "ineq", "fun": lambda u: gamma - np.linalg.norm(u, ord=p)}],
            )
        u = res.x * min(1.0, gamma / np.linalg.norm(res.x, ord=p))
        best = max(best, max(0.0, 1 - y[i] * ((X[i] + A @ u) @ w + b)))
        assert best <= robust[i] + 1e-9  # nothing beats the closed form ...
        assert best >= robust[i] - 1e-4 * max(1.0, robust[i])  # ... and the search reaches it


def test_parameters_resolve_without_rebuilding(uncertain_data):
    X, y, Sigma, groups = uncertain_data
    f = robust_svm(X, y, UncertaintySet(Sigma=Sigma, groups=groups, radius=0.2), C=1.0)
    assert f.problem.is_dpp()
    f.set_params(radius=0.9, C=0.3)
    warm = f.solve("clarabel")
    fresh = robust_svm(X, y, UncertaintySet(Sigma=Sigma, groups=groups, radius=0.9), C=0.3).solve("clarabel")
    assert warm.objective == pytest.approx(fresh.objective, rel=1e-7)
    with pytest.raises(ValueError, match="radius"):
        f.set_params(radius=-1)
    with pytest.raises(ValueError, match="no parameter"):
        f.set_params(lam=3)


def test_one_cone_per_group(uncertain_data):
    X, y, Sigma, groups = uncertain_data
    f = robust_svm(X, y, UncertaintySet(Sigma=Sigma, groups=groups), C=1.0)
    data = f.problem.get_problem_data("CLARABEL")[0]
    assert data["dims"].soc == [7, 7]  # two groups -> two cones of dimension n + 1 (n = 6)


def test_robust_is_more_conservative_than_nominal(uncertain_data):
    X, y, Sigma, groups = uncertain_data
    objs = [RobustSVC(radius=r).fit(X, y, Sigma=Sigma, sigma_index=groups).objective_ for r in (0.0, 0.3, 0.6, 1.0)]
    assert np.all(np.diff(objs) > 0)


@pytest.mark.parametrize("rows, C", [(200, 1.0), (400, 0.1), (800, 1.0)])
def test_nominal_auto_starts_with_the_interior_point_and_certifies_without_a_fallback(rows, C):
    """``rsvm-conic bench auto-routes``: on 200-800 standardised rows libsvm was slower than the interior point and
    missed the 1e-6 certificate on banana (then ``auto`` warned and fell back); ``auto`` now starts with ``ipm``."""
    import warnings

    from rsvm_conic.datasets import load_dataset
    from rsvm_conic.exceptions import SolverWarning

    X, y = load_dataset("banana")
    idx = np.random.default_rng(0).choice(y.size, rows, replace=False)
    X = StandardScaler().fit_transform(X[idx])
    with warnings.catch_warnings():
        warnings.simplefilter("error", SolverWarning)  # no fallback
        est = fit_asserting_warnings(NominalSVC(C=C), X, y[idx], fallback=False)  # banana: often constant
    assert est.solver_stats_["route"] == "ipm" and est.solver_stats_["gap_rel"] <= 1e-6
    # more features than samples: libsvm first (its cost grows with L, the interior point's with n^3)
    wide = np.random.default_rng(1).standard_normal((20, 40))
    assert nominal_svm(wide, np.where(np.arange(20) % 2, 1.0, -1.0), C=C).auto_routes()[0] == "libsvm"


def _segment():
    """KEEL segment, class 1 against the rest, standardised (2310 x 19; max ||x_i||^2 = 940): not linearly
    separable, so the objective grows like C times a positive hinge sum."""
    from rsvm_conic.datasets import load_dataset

    X, y = load_dataset("segment")
    return StandardScaler().fit_transform(X), np.where(y == 1, 1.0, -1.0)


def test_large_C_on_non_separable_data_fails_fast_with_the_diagnosis():
    """NominalSVC(C=1e10) on segment tried the interior point, Clarabel and then SCS, whose two runs took minutes
    (218 s for the first, relative gap 1.0) before SolverError.  Past C max||x||^2 = 1e12 the automatic chain skips
    SCS, and the error says why the interior points fail (a near-linear programme) and what to do."""
    from rsvm_conic.exceptions import SolverError, SolverWarning

    X, y = _segment()
    assert nominal_svm(X, y, C=1e10).auto_routes() == ("ipm", "clarabel")
    assert nominal_svm(X, y, C=1e6).auto_routes() == ("ipm", "clarabel", "scs")
    with pytest.raises(SolverError, match=r"close to a linear programme.*skips SCS.*Lower C") as err:
        with pytest.warns(SolverWarning, match="route 'ipm' failed .*falling back to 'clarabel'"):
            NominalSVC(C=1e10).fit(X, y)
    assert "ipm:" in str(err.value) and "clarabel:" in str(err.value) and "scs:" not in str(err.value)
    # not rounding: the dual value and the margins are exact to far below that gap (the diagnosis claimed
    # "the rounding level of double precision" from a bound that ignored the cancellation within X'(alpha y))
    assert "rounding level" not in str(err.value)


def test_an_interior_point_stopped_on_numerical_error_is_kept_when_its_certificate_holds():
    """At C = 1e7 on segment the interior point stops with 'numerical_error' at a point whose certified gap is
    about 2e-7: the certificate decides (the status is recorded), rather than a fallback to Clarabel with a
    warning."""
    import warnings

    from rsvm_conic.exceptions import SolverWarning

    X, y = _segment()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SolverWarning)
        est = NominalSVC(C=1e7).fit(X, y)
    st = est.solver_stats_
    assert st["route"] == "ipm" and st["status"] == "optimal" and st["gap_rel"] <= 1e-6
    assert st["solver_status"] == "numerical_error"
    ref = nominal_svm(X, y, C=1e7).solve("clarabel")  # an independent exact route
    assert abs(est.objective_ - ref.objective) <= 2e-6 * ref.objective
