"""Bad input raises ValueError saying what to fix; solver failures are never silent."""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from rsvm_conic.estimators import ChanceConstrainedSVC, NominalSVC, RobustFeatureSVC, RobustSVC
from rsvm_conic.formulations import robust_svm
from rsvm_conic.solvers import conic
from rsvm_conic.exceptions import SolverError, SolverWarning
from rsvm_conic.uncertainty import UncertaintySet

rng = np.random.default_rng(0)
X = rng.standard_normal((40, 3))
y = np.where(X[:, 0] > 0, 1, 0)


@pytest.mark.parametrize(
    "est, X_, y_, kw, match",
    [
        (RobustSVC(), np.where(X > 1.5, np.nan, X), y, {}, "NaN"),
        (RobustSVC(), np.where(X > 1.5, np.inf, X), y, {}, "NaN or infinite"),
        (RobustSVC(), X, np.zeros(40), {}, "single class"),
        (RobustSVC(), X, np.arange(40) % 3, {}, "Only binary classification"),
        (RobustSVC(), X, y[:30], {}, "inconsistent numbers of samples"),
        (RobustSVC(), X[:, 0], y, {}, "Expected 2D array"),
        (RobustSVC(), X, y, {"Sigma": -np.eye(3)}, "positive semidefinite"),
        (RobustSVC(), X, y, {"Sigma": np.eye(4)}, "3x3"),
        (RobustSVC(radius=-0.1), X, y, {}, "radius"),
        (RobustSVC(C=0), X, y, {}, "C must be > 0"),
        (RobustSVC(norm=3), X, y, {}, "norm"),
        (RobustSVC(solver="mosek"), X, y, {}, "solver"),
        (ChanceConstrainedSVC(epsilon=0.0), X, y, {}, "epsilon"),
        (ChanceConstrainedSVC(epsilon=1.0), X, y, {}, "epsilon"),
        (ChanceConstrainedSVC(epsilon=1.5), X, y, {}, "epsilon"),
        (ChanceConstrainedSVC(epsilon=0.7, distribution="gaussian"), X, y, {}, "non-convex"),
        (ChanceConstrainedSVC(distribution="laplace"), X, y, {}, "distribution"),
        (NominalSVC(), X, y, {"Sigma": np.eye(3)}, "ignores uncertainty"),
        # sigma_index says which Sigma each sample uses: without Sigma it would be ignored
        (RobustSVC(), X, y, {"sigma_index": y}, "sigma_index was given without Sigma"),
        (RobustSVC(), X, y, {"sigma_index": "sample"}, "sigma_index was given without Sigma"),
        (ChanceConstrainedSVC(), X, y, {"sigma_index": y}, "sigma_index was given without Sigma"),
        (RobustFeatureSVC(), X, y, {"sigma_index": y}, "sigma_index was given without Sigma"),
        # the estimators' name for the per-sample radii, not the UncertaintySet's
        (RobustSVC(), X, y, {"sample_radius": -np.ones(40)}, "sample_radius must hold 40 nonnegative"),
        (RobustSVC(), X, y, {"sample_radius": np.ones(39)}, "sample_radius must hold 40 nonnegative"),
        (RobustFeatureSVC(), X, y, {"sample_radius": -np.ones(40)}, "sample_radius must hold 40 nonnegative"),
    ],
)
def test_bad_input_raises_value_error(est, X_, y_, kw, match):
    with pytest.raises(ValueError, match=match):
        est.fit(X_, y_, **kw)


def test_predict_checks_features_and_fit():
    est = RobustSVC(radius=0.1).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :2])
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        RobustSVC().predict(X)


def test_labels_round_trip():
    labels = np.where(y == 1, "spam", "ham")
    est = RobustSVC(radius=0.1).fit(X, labels)
    assert set(est.predict(X)) <= {"spam", "ham"}
    assert est.score(X, labels) > 0.8


def test_uncertified_conic_result_raises_and_auto_falls_back_visibly(monkeypatch):
    f = robust_svm(X, np.where(y == 1, 1.0, -1.0), UncertaintySet(radius=0.3), C=1.0)
    monkeypatch.setitem(conic.SOLVER_OPTIONS, "CLARABEL", dict(conic.SOLVER_OPTIONS["CLARABEL"], max_iter=2))
    with pytest.raises(SolverError, match="(?i)clarabel"):
        f.solve("clarabel")
    with pytest.raises(SolverError):
        RobustSVC(radius=0.3, solver="clarabel").fit(X, y)
    est = RobustSVC(radius=0.3).fit(X, y)  # default: the interior point, certified, no fallback needed
    assert est.solver_stats_["route"] == "ipm" and est.solver_stats_["gap_rel"] <= 1e-6
    monkeypatch.setattr(type(f), "auto_routes", lambda self: ("clarabel", "scs"))
    with pytest.warns(SolverWarning, match="route 'clarabel' failed .*falling back to 'scs'"):
        sol = f.solve("auto")
    assert sol.backend == "scs" and sol.status == "optimal" and sol.certificate.gap_rel <= 1e-6
    assert sol.info["fallback_from"][0].startswith("clarabel")


def test_inaccurate_status_with_a_certified_gap_is_accepted_and_recorded(monkeypatch):
    """Clarabel's 'optimal_inaccurate' is accepted when the recomputed duality gap meets the tolerance."""
    from rsvm_conic.formulations import _linear

    real = _linear.solve_cvxpy

    def inaccurate(problem, solver, **kw):
        return {**real(problem, solver, **kw), "status": "optimal_inaccurate"}

    monkeypatch.setattr(_linear, "solve_cvxpy", inaccurate)
    f = robust_svm(X, np.where(y == 1, 1.0, -1.0), UncertaintySet(radius=0.3), C=1.0)
    sol = f.solve("clarabel")
    assert sol.status == "optimal" and sol.certificate.detail["solver_status"] == "optimal_inaccurate"
    assert sol.certificate.gap_rel <= 1e-6


class _InaccurateProblem:
    """Stands in for a cp.Problem whose solver ends with 'optimal_inaccurate'."""

    status = None
    solver_stats = None

    def solve(self, **kwargs):
        self.status = "optimal_inaccurate"


def test_accepting_inaccurate_is_explicit_and_warns():
    with pytest.raises(SolverError, match="optimal_inaccurate"):
        conic.solve_cvxpy(_InaccurateProblem(), "scs")
    with pytest.warns(SolverWarning, match="not certified"):
        conic.solve_cvxpy(_InaccurateProblem(), "scs", accept_inaccurate=True)


def test_stochastic_max_epochs_warns():
    with pytest.warns(ConvergenceWarning, match="max_epochs"):
        RobustSVC(radius=0.1, solver="sgd", solver_options={"max_epochs": 2, "tol": 0}).fit(X, y)


def test_stochastic_solver_rejects_bad_options():
    with pytest.raises(ValueError, match="positive"):
        RobustSVC(solver="prox", solver_options={"batch_size": 0}).fit(X, y)
