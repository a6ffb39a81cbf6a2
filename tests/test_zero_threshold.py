"""The constant classifier's threshold (rsvm_conic.solvers.zero_threshold) and its warning.

``w = 0`` is optimal iff 0 is in the subdifferential of the primal at ``(0, b*)``; the radius at which that starts
is computed from the data (small conic programs), never by solving the SVM again.  Checked against brute force:
exact solves just below the threshold give ``w != 0``, just above it ``w = 0``.
"""

import re
import warnings
import zlib
from types import SimpleNamespace

import numpy as np
import pytest

from rsvm_conic.estimators import ChanceConstrainedSVC, NominalSVC, RobustSVC
from rsvm_conic.estimators.linear import constant_reason, warn_constant_classifier
from rsvm_conic.exceptions import ConstantClassifierWarning
from rsvm_conic.formulations import chance_constrained_svm, robust_svm
from rsvm_conic.formulations._linear import LinearProblem
from rsvm_conic.formulations.robust import RobustProblem
from rsvm_conic.exceptions import SolverError
from rsvm_conic.solvers.zero_threshold import zero_threshold
from rsvm_conic.uncertainty import UncertaintySet

TIGHT = dict(tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)


def _scores(f, X, radius):
    """max |X w| / (1 + max |X|) of the exact optimum at this radius (Clarabel, tight)."""
    f.set_params(**{f.gamma_param: radius})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = f.solve("clarabel", **TIGHT)["w"]
    return float(np.max(np.abs(X @ w))) / (1.0 + float(np.max(np.abs(X))))


def _labels(rng, L, balance):
    if balance == "balanced":
        return rng.permutation(np.r_[np.ones(L // 2), -np.ones(L - L // 2)])
    frac = 0.62 if balance == "positives" else 0.35
    y = np.where(rng.random(L) < frac, 1.0, -1.0)
    y[:2] = (1.0, -1.0)
    return y


def _instance(kind, p, balance, seed=0, L=60, n=3):
    rng = np.random.default_rng(seed)
    y = _labels(rng, L, balance)
    direction = rng.standard_normal(n)
    X = rng.standard_normal((L, n)) + 1.5 * y[:, None] * direction / np.linalg.norm(direction)
    if kind == "shared":
        B = rng.standard_normal((n, n))
        unc = UncertaintySet(Sigma=B @ B.T / n + 0.2 * np.eye(n), p=p)
    elif kind == "class":  # one covariance per class: sigma is the same for every admissible alpha
        B = rng.standard_normal((2, n, n))
        unc = UncertaintySet(Sigma=B @ np.swapaxes(B, 1, 2) / n + 0.1 * np.eye(n), groups=(y > 0).astype(int), p=p)
    elif kind == "group":  # groups across the classes and per-sample radii: the Dinkelbach iteration
        B = rng.standard_normal((3, n, n))
        unc = UncertaintySet(
            Sigma=B @ np.swapaxes(B, 1, 2) / n + 0.1 * np.eye(n),
            groups=rng.permutation(np.arange(L) % 3),
            p=p,
            sample_scale=rng.uniform(0.5, 1.5, L),
        )
    else:
        unc = UncertaintySet(Sigma=rng.uniform(0.1, 1.0, (L, n)), groups="sample", p=p)
    return X, y, unc


@pytest.mark.parametrize("kind", ["shared", "class", "group", "sample"])
@pytest.mark.parametrize("p", [1, 2, np.inf])
@pytest.mark.parametrize("balance", ["balanced", "positives", "negatives"])
def test_threshold_against_brute_force(kind, p, balance):
    X, y, unc = _instance(kind, p, balance, seed=zlib.crc32(repr((kind, p, balance)).encode()))
    f = robust_svm(X, y, unc, C=1.0, radius=10.0)
    zt = f.zero_threshold()
    assert zt.bracketed and zt.lower <= zt.upper <= zt.lower * (1 + 1e-4)
    if zt.upper == 0.0:  # no direction beats a constant even without uncertainty
        assert _scores(f, X, 1e-9) <= 1e-7
    else:
        assert _scores(f, X, 0.999 * zt.lower) > 1e-5  # w != 0 just below
    assert _scores(f, X, 1.001 * zt.upper) <= 1e-7  # w = 0 just above
    # C plays no part in the threshold
    f.set_params(C=100.0, radius=10.0)
    assert f.zero_threshold().upper == pytest.approx(zt.upper, rel=1e-5)


@pytest.mark.parametrize("p", [1, 2, np.inf])
def test_many_groups_relaxations_keep_the_bounds_valid(p):
    """Past the cone budget the fixed samples' norms are averaged (triangle inequality) and the working set's
    linearised: ``lower`` stays a certified lower bound and ``upper``, when bracketed, an upper bound."""
    X, y, unc = _instance("sample", p, "positives", seed=5)
    f = robust_svm(X, y, unc, C=1.0, radius=10.0)
    exact = f.zero_threshold()
    relaxed = f.zero_threshold(max_cone_entries=4)
    assert relaxed.lower <= exact.upper * (1 + 1e-6) and relaxed.lower > 0.5 * exact.lower
    assert _scores(f, X, 0.999 * relaxed.lower) > 1e-5
    if relaxed.bracketed:
        assert relaxed.upper >= exact.lower * (1 - 1e-6)


def _equal_means(L=40, n=3, seed=0):
    """Balanced classes with exactly the same mean: no direction beats a constant score at any C."""
    rng = np.random.default_rng(seed)
    P = rng.standard_normal((L // 2, n))
    N = rng.standard_normal((L // 2, n)) * 2.0
    N += P.mean(axis=0) - N.mean(axis=0)
    return np.r_[P, N], np.r_[np.ones(L // 2), -np.ones(L // 2)]


def test_constant_nominal_svm_is_independent_of_C():
    X, y = _equal_means()
    for C in (1e-2, 1.0, 1e4):
        with pytest.warns(ConstantClassifierWarning, match="at any C") as rec:
            est = NominalSVC(C=C).fit(X, y)
        assert np.max(np.abs(X @ est.coef_.ravel())) <= 1e-6
        assert "increase C" not in str(rec[0].message)
    f = robust_svm(X, y, UncertaintySet(p=2), C=1.0, radius=1.0)
    assert f.zero_threshold().upper <= 1e-9
    with pytest.warns(ConstantClassifierWarning, match="at any C"):
        RobustSVC(radius=1.0).fit(X, y)


def _sonar_like(seed=0):
    """208 x 60 (the shape of the sonar set, not vendored): smooth correlated spectra in [0, 1], 111 / 97."""
    rng = np.random.default_rng(seed)
    L, n = 208, 60
    y = np.r_[np.ones(111), -np.ones(97)]
    t = np.linspace(0, 1, n)
    Z = rng.standard_normal((L, n))
    for j in range(1, n):
        Z[:, j] = 0.9 * Z[:, j - 1] + np.sqrt(1 - 0.81) * Z[:, j]
    shift = 0.05 * np.sin(6 * t + rng.uniform(0, 6))
    X = np.clip(0.3 * np.exp(-(((t - 0.4) / 0.25) ** 2)) + 0.5 * y[:, None] * shift + 0.12 * Z, 0, 1)
    g = (y > 0).astype(int)
    return X, y, np.stack([0.1 * np.cov(X[g == c].T) for c in (0, 1)]), g


def test_p_inf_constant_fit_returns_without_solving_again(monkeypatch):
    """RobustSVC(norm=inf) with one 0.1 x class covariance per class on 208 x 60 data certifies w = 0; the
    warning's threshold used to bisect by solves at other radii, and a failing one escaped as SolverError.  Any
    solve after the fit's own now fails here: the fit still returns, warns, and the threshold is exact."""
    X, y, Sigma, g = _sonar_like()
    radii = []
    solve = RobustProblem.solve

    def solve_at_the_fitted_radius(self, *args, **kwargs):
        radii.append(self.param_value("radius"))
        if radii[-1] != 3.0:
            raise SolverError("injected: a solve at another radius fails")
        return solve(self, *args, **kwargs)

    monkeypatch.setattr(RobustProblem, "solve", solve_at_the_fitted_radius)
    with pytest.warns(ConstantClassifierWarning, match=r"radius < ([0-9.e+-]+) ") as rec:
        est = RobustSVC(norm=np.inf, radius=3.0).fit(X, y, Sigma=Sigma, sigma_index=g)
    assert set(radii) == {3.0} and est.solver_stats_["status"] == "optimal"
    assert np.max(np.abs(X @ est.coef_.ravel())) <= 1e-6
    monkeypatch.setattr(RobustProblem, "solve", solve)
    msg = str(next(w for w in rec if w.category is ConstantClassifierWarning).message)
    r_star = float(re.search(r"radius < ([0-9.e+-]+) ", msg).group(1))
    f = robust_svm(X, y, UncertaintySet(Sigma=Sigma, groups=g, p=np.inf), C=1.0)
    assert _scores(f, X, 0.998 * r_star) > 1e-5 and _scores(f, X, 1.002 * r_star) <= 1e-7


def test_estimator_threshold_against_brute_force():
    """Two class ellipsoids, labels drawn at random (so the classes are not balanced and the larger class's weights
    are free at w = 0): the radius the warning names is exact to its 4 digits, where a bisection by solves was off
    by 1% (an interior point's w = 0 is 0 only to its tolerance)."""
    rng = np.random.default_rng(0)
    L, n = 3000, 8
    y = np.where(rng.random(L) < 0.5, -1.0, 1.0)
    direction = rng.standard_normal(n)
    X = rng.standard_normal((L, n)) + y[:, None] * direction / np.linalg.norm(direction)
    B = rng.standard_normal((2, n, n)) / np.sqrt(n)
    Sigma = 0.09 * (B @ np.swapaxes(B, 1, 2) + 0.1 * np.eye(n))
    g = (y > 0).astype(int)
    with pytest.warns(ConstantClassifierWarning, match=r"radius < ([0-9.e+-]+) ") as rec:
        RobustSVC(radius=8.0).fit(X, y, Sigma=Sigma, sigma_index=g)
    msg = str(next(w for w in rec if w.category is ConstantClassifierWarning).message)
    r_star = float(re.search(r"radius < ([0-9.e+-]+) ", msg).group(1))
    f = robust_svm(X, y, UncertaintySet(Sigma=Sigma, groups=g), C=1.0)
    assert _scores(f, X, 0.999 * r_star) > 1e-6 and _scores(f, X, 1.001 * r_star) <= 1e-7


def test_chance_threshold_against_brute_force():
    X, y, unc = _instance("class", 2, "positives", seed=3, L=80)
    with pytest.warns(ConstantClassifierWarning, match=r"kappa < ([0-9.e+-]+),") as rec:
        ChanceConstrainedSVC(epsilon=0.001).fit(X, y, Sigma=unc.Sigma, sigma_index=unc.groups)
    msg = str(next(w for w in rec if w.category is ConstantClassifierWarning).message)
    k_star = float(re.search(r"kappa < ([0-9.e+-]+),", msg).group(1))
    f = chance_constrained_svm(X, y, unc.Sigma, unc.groups, C=1.0)
    assert _scores(f, X, 0.999 * k_star) > 1e-5 and _scores(f, X, 1.001 * k_star) <= 1e-7


def test_the_reason_never_raises(monkeypatch):
    X, y, unc = _instance("class", 2, "positives", seed=1)

    def broken(self, **options):
        raise RuntimeError("injected")

    monkeypatch.setattr(LinearProblem, "zero_threshold", broken)
    with pytest.warns(ConstantClassifierWarning, match="could not be computed"):
        est = RobustSVC(radius=20.0).fit(X, y, Sigma=unc.Sigma, sigma_index=unc.groups)
    assert est.solver_stats_["status"] == "optimal"


def test_unbracketed_threshold_is_reported_as_a_certified_bound(monkeypatch):
    X, y, unc = _instance("class", 2, "positives", seed=1)
    f = robust_svm(X, y, unc, C=1.0, radius=20.0)
    zt = f.zero_threshold()
    monkeypatch.setattr(LinearProblem, "zero_threshold", lambda self, **o: zt._replace(upper=np.inf))
    msg = constant_reason(f)
    assert f"w != 0 for radius < {zt.lower:.4g} (certified)" in msg and "between that and 20" in msg


def test_entry_point_for_other_estimators():
    """warn_constant_classifier works for any estimator fitted on a LinearProblem."""
    X, y, unc = _instance("shared", 1, "negatives", seed=2)
    f = robust_svm(X, y, unc, C=1.0, radius=20.0)
    sol = f.solve("clarabel")
    est = SimpleNamespace(coef_=sol["w"][None], intercept_=np.array([sol["b"]]), classes_=np.array([0, 1]))
    with pytest.warns(ConstantClassifierWarning, match=r"prediction is 0\). .* radius < "):
        assert warn_constant_classifier(est, f, X)
    est.coef_ = np.ones((1, X.shape[1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstantClassifierWarning)
        assert not warn_constant_classifier(est, f, X)


def test_threshold_work_is_bounded():
    """The class-ellipsoid case is one program (plus one to refresh the working set), whatever the imbalance."""
    for frac in (0.5, 0.7, 0.9):
        rng = np.random.default_rng(4)
        L, n = 4000, 6
        y = np.where(rng.random(L) < frac, 1.0, -1.0)
        X = rng.standard_normal((L, n)) + y[:, None]
        S = np.stack([np.eye(n), 2 * np.eye(n)])
        f = robust_svm(X, y, UncertaintySet(Sigma=S, groups=(y > 0).astype(int)), C=1.0, radius=50.0)
        zt = f.zero_threshold()
        assert zt.bracketed and zt.programs <= 3
        ops = f.datafit().factor_ops()
        assert zero_threshold(X, y, ops).upper * 50.0 == pytest.approx(zt.upper, rel=1e-12)
