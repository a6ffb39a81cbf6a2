"""The solver contract for the linear family: every route's certificate is checked against an
independent exact solve, defaults are certified or say why, degenerate fits are explained."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.preprocessing import StandardScaler

from rsvm_conic.estimators import ChanceConstrainedSVC, NominalSVC, RobustSVC
from rsvm_conic.exceptions import ConstantClassifierWarning
from rsvm_conic.formulations import robust_svm
from rsvm_conic.certify.projections import project_dual_set
from rsvm_conic.exceptions import SolverError
from rsvm_conic.uncertainty import UncertaintySet


def _standardised(loader):
    X, y = loader(return_X_y=True)
    if loader is load_wine:
        y = (y == 0).astype(int)  # class 0 against the rest
    return StandardScaler().fit_transform(X), y


DATA = {"breast_cancer": _standardised(load_breast_cancer), "wine": _standardised(load_wine)}


def _exact(X, y_pm, C, norm, radius):
    """An independent reference: a fresh CVXPY model solved by Clarabel at tight tolerances."""
    import cvxpy as cp

    w, b = cp.Variable(X.shape[1]), cp.Variable()
    dual = {1: np.inf, 2: 2, np.inf: 1}[norm]
    loss = cp.pos(1 - cp.multiply(y_pm, X @ w + b) + radius * cp.norm(w, dual))
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * cp.sum(loss)))
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return prob.value


@pytest.mark.parametrize("data", sorted(DATA))
@pytest.mark.parametrize("C", [0.1, 10.0])
@pytest.mark.parametrize("norm,radius", [(2, 0.0), (2, 0.3), (1, 0.1), (np.inf, 0.1)])
@pytest.mark.parametrize("solver", ["auto", "ipm", "clarabel", "scs"])
def test_certified_routes_bracket_the_exact_optimum(data, C, norm, radius, solver):
    X, y = DATA[data]
    y_pm = np.where(y == 1, 1.0, -1.0)
    if solver == "ipm" and norm != 2:
        pytest.skip("the interior point handles p = 2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est = RobustSVC(C=C, radius=radius, norm=norm, solver=solver).fit(X, y, Sigma=np.ones(X.shape[1]))
        except SolverError:
            return  # not certified: raising is allowed, returning an uncertified model is not
    s = est.solver_stats_
    assert s["status"] == "optimal" and s["gap_rel"] <= 1e-6
    ref = _exact(X, y_pm, C, norm, radius)
    slack = 1e-8 * max(1.0, abs(ref))  # the reference's own tolerance
    assert s["dual"] <= ref + slack and ref <= s["primal"] + slack  # D <= P* <= P
    assert est.objective_ - ref <= s["gap_abs"] + slack


def test_dual_value_is_a_lower_bound_at_arbitrary_points():
    """Weak duality by brute force: any alpha, any (w, b) give D <= P* (grouped, full factors, p = 2, 1, inf)."""
    rng = np.random.default_rng(0)
    L, n = 80, 5
    y = np.where(rng.random(L) < 0.5, 1.0, -1.0)
    X = rng.normal(size=(L, n)) + 0.5 * y[:, None]
    B = rng.normal(size=(2, n, n)) / np.sqrt(n)
    for p in (1, 2, np.inf):
        unc = UncertaintySet(Sigma=B @ np.swapaxes(B, 1, 2), groups=(y > 0).astype(int), p=p, radius=0.4)
        f = robust_svm(X, y, unc, C=2.0)
        opt = f.solve("clarabel").objective
        for _ in range(20):
            w = rng.normal(size=n)
            alpha = rng.uniform(0, 2.0, L)
            for optimise in (False, True):
                assert f.dual_value(alpha, w, optimise_u=optimise) <= opt * (1 + 1e-9)


def test_projection_onto_the_dual_set_is_exact_for_huge_C():
    rng = np.random.default_rng(1)
    y = np.where(rng.random(500) < 0.5, 1.0, -1.0)
    v = rng.uniform(0, 5e4, 500)
    a = project_dual_set(v, y, 1e12)
    assert abs(y @ a) <= 1e-12 * np.abs(a).sum() and np.all(a >= 0)


@pytest.mark.parametrize("data", sorted(DATA))
def test_defaults_are_certified_or_say_why(data):
    X, y = DATA[data]
    for est in (
        NominalSVC(),
        NominalSVC(C=100),
        NominalSVC(C=1e12),
        RobustSVC(),
        ChanceConstrainedSVC(),
        ChanceConstrainedSVC(distribution="gaussian", epsilon=0.2),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(X, y)
        assert est.solver_stats_["status"] == "optimal" and est.solver_stats_["gap_rel"] <= 1e-6, est
        constant = np.all(est.predict(X) == est.predict(X)[0])
        said = [w for w in caught if issubclass(w.category, ConstantClassifierWarning)]
        assert constant == bool(said), (est, [str(w.message) for w in caught])


def test_constant_classifier_warning_gives_the_threshold():
    X, y = DATA["breast_cancer"]
    eye = np.ones(X.shape[1])  # Sigma = identity: the radius in the units of X
    with pytest.warns(ConstantClassifierWarning, match=r"radius < ([0-9.]+)") as rec:
        RobustSVC(radius=5.0).fit(X, y, Sigma=eye)
    r_star = float(
        next(w for w in rec if w.category is ConstantClassifierWarning)
        .message.args[0]
        .split("radius < ")[1]
        .split(" ")[0]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstantClassifierWarning)
        below = RobustSVC(radius=0.98 * r_star).fit(X, y, Sigma=eye)  # informative just below the threshold
    assert np.any(below.coef_ != 0)
    with pytest.warns(ConstantClassifierWarning):
        RobustSVC(radius=1.02 * r_star).fit(X, y, Sigma=eye)
    with pytest.warns(ConstantClassifierWarning, match=r"epsilon > "):
        ChanceConstrainedSVC(epsilon=0.01).fit(X, y, Sigma=eye)


def test_no_cvxpy_model_is_built_for_the_interior_point():
    X, y = DATA["wine"]
    f = robust_svm(
        X, np.where(y == 1, 1.0, -1.0), UncertaintySet(Sigma=np.ones(X.shape[1]), groups="sample", radius=0.2), C=1.0
    )
    sol = f.solve("auto")
    assert sol.backend == "ipm" and f._problem is None
    assert f.solve("clarabel").objective == pytest.approx(sol.objective, rel=1e-6) and f._problem is not None


def test_first_certified_is_the_one_fallback_chain():
    """Routes in order; a warning naming both routes at every fallback; the first certified result (or one
    without a certificate) is returned with the failures before it; none certified: SolverError naming all."""
    from rsvm_conic.exceptions import SolverWarning
    from rsvm_conic.certify.contract import certify, first_certified

    loose = certify("b", 1.0, 0.5, 1e-6, failed_status="max_iter")
    outcomes = {"a": SolverError("injected"), "b": loose, "c": certify("c", 1.0, 1.0, 1e-6), "d": None}

    def attempt(route):
        if isinstance(outcomes[route], Exception):
            raise outcomes[route]
        return route.upper(), outcomes[route]

    with pytest.warns(SolverWarning) as rec:
        result, failures = first_certified(["a", "b", "c", "d"], attempt, what="thing")
    assert result == "C" and [r for r, _ in failures] == ["a", "b"] and failures[0][1] == "injected"
    msgs = [str(w.message) for w in rec]
    assert msgs[0] == "thing: route 'a' failed (injected); falling back to 'b'."
    assert msgs[1].startswith("thing: route 'b' failed (certified relative gap 5.00e-01 > 1e-06, status 'max_iter')")
    assert first_certified(["d"], attempt, what="thing") == ("D", [])  # no certificate: accepted as it is
    assert first_certified(["c"], lambda r: (1, outcomes[r].as_dict()), what="thing") == (1, [])  # as_dict() too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SolverWarning)
        with pytest.raises(
            SolverError,
            match=r"thing: no route returned a certified solution \(a: injected; b: "
            r"certified relative gap .*\)\. try harder",
        ):
            first_certified(["a", "b"], attempt, what="thing", hint="try harder")


@pytest.mark.parametrize("seed", range(3))
def test_an_inaccurate_conic_solve_speaks_only_through_the_projects_status(seed):
    """CVXPY's generic "Solution may be inaccurate" warning never reaches the user: solve_cvxpy reports an
    ``optimal_inaccurate`` status itself (SolverError, its own SolverWarning, or nothing with quiet_inaccurate)."""
    import cvxpy as cp

    from rsvm_conic.solvers.conic import solve_cvxpy
    from rsvm_conic.exceptions import SolverWarning

    rng = np.random.default_rng(seed)
    A, b = rng.standard_normal((30, 10)), rng.standard_normal(30)
    x = cp.Variable(10)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(A @ x - b) + cp.norm(x, 1)))
    for kwargs, expected in [
        (dict(accept_inaccurate=True, quiet_inaccurate=True), []),
        (dict(accept_inaccurate=True), [SolverWarning]),
        (dict(), []),
    ]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if kwargs:
                info = solve_cvxpy(prob, "scs", max_iters=5, **kwargs)  # 5 iterations: inaccurate by design
                assert info["status"] == "optimal_inaccurate"
            else:
                with pytest.raises(SolverError, match="optimal_inaccurate"):
                    solve_cvxpy(prob, "scs", max_iters=5)
        assert [w.category for w in caught] == expected, [str(w.message) for w in caught]
