"""``sample_weight`` and ``class_weight`` on every estimator.

An integer weight is the same as repeating the sample (0: dropping it); weights multiply each sample's loss term
(``C_i = C s_i``) on every route that takes them, and the certificate's dual point lies in the weighted box
``0 <= alpha_i <= C s_i``.  Every comparison is bounded by the certified gaps of the fits compared (scaled to the
objective), never by a fixed number.  ``HyperbolicSVC`` (a CCP, a local method without a certificate) is compared
from the same start to rounding and to the CCP's stopping tolerance.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.utils.class_weight import compute_sample_weight

from _fuzzutil import fuzz_settings
from rsvm_conic.estimators import ChanceConstrainedSVC, NominalSVC, RobustFeatureSVC, RobustSVC
from rsvm_conic.formulations.nominal import NominalProblem
from rsvm_conic.formulations.robust import RobustProblem
from rsvm_conic.uncertainty import UncertaintySet

EPS = float(np.finfo(float).eps)
#: a constant classifier (w = 0) would make every comparison below trivial: the data and parameters avoid it
pytestmark = pytest.mark.filterwarnings("error::rsvm_conic.exceptions.ConstantClassifierWarning")


def _data(seed, L=30, n=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((L, n))
    y = np.where(X[:, 0] + 0.7 * rng.standard_normal(L) > 0, 1, 0)
    X[:, 0] += 1.5 * (2 * y - 1)
    return rng, X, y


def _same_optimum(a, b):
    """Two certified fits of the same problem: objectives within the sum of their certified gaps, and
    ``||w_a - w_b|| <= sqrt(2 gap_a) + sqrt(2 gap_b)`` (the objective is 1-strongly convex in w)."""
    sa, sb = a.solver_stats_, b.solver_stats_
    assert sa["status"] == sb["status"] == "optimal"
    slack = sa["gap_abs"] + sb["gap_abs"] + 64 * EPS * max(1.0, abs(a.objective_))
    assert abs(a.objective_ - b.objective_) <= slack
    dw = float(np.linalg.norm(a.coef_ - b.coef_))
    assert dw <= math.sqrt(2 * max(sa["gap_abs"], 0.0)) + math.sqrt(2 * max(sb["gap_abs"], 0.0)) + 1e-12


ESTIMATORS = {
    "nominal": lambda: NominalSVC(C=1.0),
    "robust": lambda: RobustSVC(C=1.0, radius=0.3),
    "robust-inf": lambda: RobustSVC(C=1.0, radius=0.1, norm=np.inf),
    "chance": lambda: ChanceConstrainedSVC(C=1.0, epsilon=0.5),
    "feature": lambda: RobustFeatureSVC(n_components=10, sigma=2.0, radius=0.05, random_state=0),
}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@fuzz_settings(6)
@given(seed=st.integers(0, 2**31 - 1))
def test_integer_weights_equal_repeated_rows(name, seed):
    """Property: random integer weights (zeros included) give the optimum of the data with each row repeated."""
    rng, X, y = _data(seed % 1000)
    s = rng.integers(0, 4, X.shape[0])
    s[np.flatnonzero(y == 0)[0]] = s[np.flatnonzero(y == 1)[0]] = 1  # both classes keep a sample
    weighted = ESTIMATORS[name]().fit(X, y, sample_weight=s)
    repeated = ESTIMATORS[name]().fit(np.repeat(X, s, axis=0), np.repeat(y, s))
    _same_optimum(weighted, repeated)
    assert np.array_equal(weighted.predict(X), repeated.predict(X))


@pytest.mark.parametrize("route", ["ipm", "clarabel", "scs", "libsvm"])
def test_every_weighted_route_solves_the_weighted_problem(route):
    """Each route that takes weights (the interior point's per-sample C, the CVXPY builders, libsvm's weighted box)
    reaches the optimum of the repeated rows, and its certificate's dual bound is the weighted one."""
    rng, X, y = _data(3, L=40)
    ypm = np.where(y > 0, 1.0, -1.0)
    s = rng.integers(1, 5, X.shape[0]).astype(float)
    if route == "libsvm":
        make = lambda X_, y_, w=None: NominalProblem(X_, y_, C=2.0, sample_weight=w)  # noqa: E731
    else:
        make = lambda X_, y_, w=None: RobustProblem(X_, y_, UncertaintySet(radius=0.2), C=2.0, sample_weight=w)  # noqa: E731
    a = make(X, ypm, s).solve(route)
    b = make(np.repeat(X, s.astype(int), axis=0), np.repeat(ypm, s.astype(int))).solve(route)
    ca, cb = a.certificate, b.certificate
    assert ca.status == cb.status == "optimal"
    assert abs(a.objective - b.objective) <= ca.gap_abs + cb.gap_abs + 64 * EPS * abs(a.objective)
    assert np.linalg.norm(a["w"] - b["w"]) <= math.sqrt(2 * ca.gap_abs) + math.sqrt(2 * cb.gap_abs) + 1e-12


@fuzz_settings(20)
@given(seed=st.integers(0, 2**31 - 1))
def test_weighted_dual_bound_never_exceeds_the_optimum(seed):
    """Property: the dual value of any multipliers (projected onto the weighted box) is below the certified
    optimum.  With the unweighted box [0, C] a weight below 1 would let it exceed the optimum."""
    rng, X, y = _data(seed % 1000)
    ypm = np.where(y > 0, 1.0, -1.0)
    s = rng.uniform(0.05, 0.5, X.shape[0])
    f = RobustProblem(X, ypm, UncertaintySet(radius=0.2), C=5.0, sample_weight=s)
    opt = f.solve("ipm")
    lower = opt.objective - opt.certificate.gap_abs  # a certified lower bound would be the dual; P* >= it
    alpha = rng.uniform(0.0, 5.0, X.shape[0])
    assert f.dual_value(alpha, opt["w"]) <= opt.objective + 64 * EPS * abs(opt.objective)
    assert opt.certificate.dual <= opt.objective and lower <= opt.objective


def test_stochastic_routes_refuse_weights_and_auto_picks_a_route_that_takes_them():
    _, X, y = _data(1)
    s = np.full(X.shape[0], 2.0)
    for solver in ("sgd", "prox"):
        with pytest.raises(ValueError, match=f"solver '{solver}' does not take sample weights"):
            RobustSVC(solver=solver).fit(X, y, sample_weight=s)
    est = RobustSVC(radius=0.2).fit(X, y, sample_weight=s)
    assert est.solver_stats_["backend"] in ("ipm", "clarabel", "scs")


@pytest.mark.parametrize(
    "weights, match",
    [
        (-np.ones(30), "sample_weight must hold 30 nonnegative numbers .* got 30 negative"),
        (np.ones(29), r"sample_weight must hold 30 nonnegative numbers .* got shape \(29,\)"),
        (np.ones((30, 1)), "sample_weight must have 1 dimension"),
        (np.r_[np.nan, np.ones(29)], "sample_weight contains 1 NaN"),
        (np.zeros(30), "sample_weight is zero for every sample"),
        (np.array(["a"] * 30), "sample_weight must be numeric"),
    ],
)
@pytest.mark.parametrize("make", [NominalSVC, RobustSVC, ChanceConstrainedSVC, RobustFeatureSVC])
def test_bad_sample_weight_says_what_to_fix(make, weights, match):
    _, X, y = _data(2)
    with pytest.raises(ValueError, match=match):
        make().fit(X, y, sample_weight=weights)


def test_weights_that_leave_one_class_say_so():
    _, X, y = _data(2)
    with pytest.raises(ValueError, match="both classes with positive sample_weight"):
        RobustSVC().fit(X, y, sample_weight=(y == 1).astype(float))


@pytest.mark.parametrize(
    "make",
    [
        NominalSVC,
        lambda **kw: RobustSVC(radius=0.2, **kw),
        lambda **kw: ChanceConstrainedSVC(epsilon=0.5, **kw),
        lambda **kw: RobustFeatureSVC(n_components=10, sigma=2.0, random_state=0, **kw),
    ],
)
def test_class_weight_multiplies_sample_weight_as_in_sklearn(make):
    """class_weight ("balanced" or a dict, computed from the unweighted labels) times sample_weight is the same
    fit as that product given as sample_weight."""
    rng, X, y = _data(4, L=36)
    y = np.where(np.arange(36) < 9, "a", "b")  # imbalanced
    X = rng.standard_normal((36, 3))
    X[y == "a", 0] += 3.0
    s = rng.uniform(0.5, 2.0, 36)
    for cw in ("balanced", {"a": 3.0, "b": 0.5}):
        a = make(class_weight=cw).fit(X, y, sample_weight=s)
        b = make().fit(X, y, sample_weight=s * compute_sample_weight(cw, y))
        _same_optimum(a, b)
    assert compute_sample_weight("balanced", y)[0] == pytest.approx(36 / (2 * 9))


def test_zero_weights_drop_the_per_sample_uncertainty_with_the_sample():
    """A sample of weight 0 leaves with its own Sigma, sample_radius and sigma_index entry."""
    rng, X, y = _data(5, L=30)
    s = rng.integers(0, 3, 30)
    s[:2] = 1
    s[np.flatnonzero(y == 0)[0]] = s[np.flatnonzero(y == 1)[0]] = 1
    keep = s > 0
    per_sample = rng.uniform(0.05, 0.5, (30, 3, 1)) * np.eye(3)
    radius = rng.uniform(0.5, 1.5, 30)
    a = RobustSVC(radius=0.4).fit(X, y, Sigma=per_sample, sample_radius=radius, sample_weight=s)
    b = RobustSVC(radius=0.4).fit(
        X[keep], y[keep], Sigma=per_sample[keep], sample_radius=radius[keep], sample_weight=s[keep]
    )
    _same_optimum(a, b)
    groups = np.where(np.arange(30) < 15, 0, 2)  # positions along Sigma's first axis (1 is unused)
    S3 = np.stack([0.1 * np.eye(3), np.eye(3), 0.3 * np.eye(3)])
    a = RobustSVC(radius=0.4).fit(X, y, Sigma=S3, sigma_index=groups, sample_weight=s)
    b = RobustSVC(radius=0.4).fit(X[keep], y[keep], Sigma=S3, sigma_index=groups[keep], sample_weight=s[keep])
    _same_optimum(a, b)


def test_dask_samples_refuse_weights():
    da = pytest.importorskip("dask.array")
    _, X, y = _data(6, L=40)
    with pytest.raises(ValueError, match="not supported for samples given as a Dask array"):
        RobustSVC().fit(da.from_array(X, chunks=20), da.from_array(y, chunks=20), sample_weight=np.ones(40))


@pytest.mark.parametrize("method, sigma", [("exact", None), ("exact", "diag"), ("random_features", "diag")])
@fuzz_settings(4)
@given(seed=st.integers(0, 2**31 - 1), C=st.sampled_from([1.0, 100.0]))
def test_pksvc_integer_weights_equal_repeated_points(method, sigma, seed, C):
    """PkSVC's libsvm routes (RBF, precomputed expected kernel, random features) with libsvm's weighted box and the
    weighted certificate: the optimum of the repeated points, within the certified gaps."""
    from rsvm_conic.estimators import PkSVC

    rng = np.random.default_rng(seed % 1000)
    L = 30
    y = np.arange(L) % 2
    X = rng.standard_normal((L, 2)) + (2 * y - 1)[:, None] * [1.0, 0.0]
    S = rng.uniform(0.01, 0.3, (L, 2)) if sigma else None
    s = rng.integers(0, 4, L)
    s[:2] = 1
    kw = dict(C=C, method=method, random_state=0)
    a = PkSVC(**kw).fit(X, y, Sigma=S, sample_weight=s)
    b = PkSVC(**kw).fit(np.repeat(X, s, axis=0), np.repeat(y, s), Sigma=None if S is None else np.repeat(S, s, axis=0))
    sa, sb = a.solver_stats_, b.solver_stats_
    assert sa["status"] == sb["status"] == "optimal"
    assert abs(sa["primal"] - sb["primal"]) <= sa["gap_abs"] + sb["gap_abs"] + 64 * EPS * sa["primal"]


@fuzz_settings(30)
@given(seed=st.integers(0, 2**31 - 1))
def test_weighted_box_linear_minimum_and_projection_match_brute_force(seed):
    """The Frank-Wolfe bound's linear minimum over the weighted box (against scipy's LP solver) and the projection
    onto it (against the bisection of the linear SVMs)."""
    from scipy.optimize import linprog

    from _reference import bisection_projection

    from rsvm_conic.certify.projections import project_dual_set
    from rsvm_conic.certify.kernel import min_linear_box_hyperplane

    rng = np.random.default_rng(seed % 100000)
    n = int(rng.integers(2, 12))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    g, C, v = rng.standard_normal(n), rng.uniform(0.1, 3.0, n), 3 * rng.standard_normal(n)
    lp = linprog(g, A_eq=y[None], b_eq=[0.0], bounds=list(zip(np.zeros(n), C)))
    assert min_linear_box_hyperplane(g, y, C) == pytest.approx(lp.fun, abs=1e-9 * (1 + abs(lp.fun)))
    p = project_dual_set(v, y, C)
    assert np.allclose(p, bisection_projection(v, y, C), atol=1e-12 * (1 + np.abs(v).max()))
    assert np.all(p >= 0) and np.all(p <= C) and abs(y @ p) <= 1e-12 * (1 + C.sum())


def test_weighted_polish_certifies_a_perturbed_dual():
    """certified_svm_dual with one bound C_i per sample: a libsvm-accuracy dual, perturbed, is polished (the
    Newton step or the conic QP on the weighted box) to the repeated rows' certified optimum."""
    from rsvm_conic.kernels.rbf import gaussian_kernel
    from rsvm_conic.solvers.svm_polish import certified_svm_dual

    rng = np.random.default_rng(7)
    L = 40
    y = np.where(np.arange(L) % 2 == 0, 1.0, -1.0)
    X = rng.standard_normal((L, 2)) + 0.5 * y[:, None]
    s = rng.integers(1, 4, L).astype(float)
    K = gaussian_kernel(X, X, 1.0)
    C = 10.0 * s
    alpha = np.clip(rng.uniform(0, 1, L) * C, 0, C)  # a poor start: the polish has to do the work
    a, _, _, info = certified_svm_dual(lambda idx: K[:, idx], y, C, alpha, 1e-8, full_kernel=lambda: K)
    assert info.status == "optimal" and np.all(a <= C + 1e-12) and np.all(a >= 0)
    reps = s.astype(int)
    Kr = gaussian_kernel(np.repeat(X, reps, 0), np.repeat(X, reps, 0), 1.0)
    yr = np.repeat(y, reps)
    ar0 = np.repeat(a / s, reps)  # the weighted optimum spread over the copies: feasible for the repeated box
    _, _, _, rep = certified_svm_dual(lambda idx: Kr[:, idx], yr, 10.0, ar0, 1e-8, full_kernel=lambda: Kr)
    assert rep.status == "optimal"
    assert abs(info.primal - rep.primal) <= info.gap_abs + rep.gap_abs + 64 * EPS * info.primal


def _kernel_data(seed, n=24):
    rng = np.random.default_rng(seed % 100000)
    X = rng.standard_normal((n, 3))
    y = np.where(np.arange(n) % 2 == 0, 1, 0)
    X[:, 0] += 0.8 * (2 * y - 1)
    K = np.exp(-0.5 * np.sum((X[:, None] - X[None]) ** 2, axis=-1))
    s = rng.integers(0, 4, n)
    s[:2] = [1, 2]  # both classes keep a positive weight
    return rng, K, y, s


def _kernel_same_optimum(a, b):
    """Two certified fits of the same dual problem: objectives within the sum of their certified gaps."""
    sa, sb = a.solver_info_, b.solver_info_
    assert sa["status"] == sb["status"] == "optimal"
    assert abs(sa["primal"] - sb["primal"]) <= sa["gap_abs"] + sb["gap_abs"] + 64 * EPS * max(1.0, abs(sa["primal"]))


def _kernel_routes():
    from rsvm_conic.estimators.kernel_robust import _SOLVERS

    return [(m, r) for m in ("qp", "socp", "qn") for r in _SOLVERS[m]]


@pytest.mark.parametrize("method, solver", _kernel_routes())
@fuzz_settings(3)
@given(seed=st.integers(0, 2**31 - 1), C=st.sampled_from([1.0, 100.0]))
def test_kernel_robust_integer_weights_equal_the_repeated_gram_matrix(method, solver, seed, C):
    """Property, every method and route of KernelRobustSVC: integer weights (zeros included) on a noise-free kernel
    give the optimum of the fit on the repeated Gram matrix (rows and columns repeated), within the certified gaps;
    the weighted multipliers lie in the weighted box and are the copies' summed multipliers (to the gaps)."""
    from rsvm_conic.estimators import KernelRobustSVC

    _, K, y, s = _kernel_data(seed)
    idx = np.repeat(np.arange(y.size), s)
    kw = dict(method=method, solver=solver, C=C, bias="free")
    a = KernelRobustSVC(**kw).fit(K, y, sample_weight=s)
    b = KernelRobustSVC(**kw).fit(K[np.ix_(idx, idx)], y[idx])
    assert a.solver_info_["route"].endswith(solver if method != "qn" else "libsvm")  # kappa beta = 0: the SVM dual
    _kernel_same_optimum(a, b)
    assert np.all(a.alpha_ >= 0) and np.all(a.alpha_ <= C * s * (1 + 4 * EPS)) and np.all(a.alpha_[s == 0] == 0)
    # the dual objective is lam-strongly convex (lam = the smallest eigenvalue of K) and the copies' summed
    # multipliers reach the repeated fit's objective: both are within sqrt(2 gap / lam) of the unique optimum
    lam = float(np.linalg.eigvalsh(K)[0])
    summed = np.bincount(idx, weights=b.alpha_, minlength=y.size)
    radius = sum(math.sqrt(2 * max(f.solver_info_["gap_abs"], 0.0) / lam) for f in (a, b))
    assert np.linalg.norm(summed - a.alpha_) <= radius + 1e-9 * C


@pytest.mark.parametrize("method", ["qp", "socp", "qn"])
def test_kernel_robust_weighted_routes_agree_with_noise(method):
    """With kernel noise (sigma2; a PSD beta for "qn", whose route certifies only then) every route of a method
    reaches the same certified optimum of the weighted problem; its dual box is the weighted one, so a weight below 1
    caps alpha_i below C."""
    from rsvm_conic.estimators import KernelRobustSVC
    from rsvm_conic.estimators.kernel_robust import _SOLVERS

    rng, K, y, s = _kernel_data(3)
    s = s * 0.75  # fractional weights
    v = 0.1 * rng.uniform(size=y.size)
    sigma2 = np.outer(v, v)
    fits = [
        KernelRobustSVC(method=method, solver=r, C=10.0, epsilon=0.1).fit(K, y, sample_weight=s, sigma2=sigma2)
        for r in _SOLVERS[method]
    ]
    for f in fits:
        assert f.solver_info_["route"].split("/")[0] == f"rsvm-{method}"
        _kernel_same_optimum(f, fits[0])
        assert np.all(f.alpha_ <= 10.0 * s * (1 + 4 * EPS))
    unweighted = KernelRobustSVC(method=method, C=10.0).fit(K, y, sigma2=sigma2)
    assert unweighted.solver_info_["primal"] < fits[0].solver_info_["primal"] - fits[0].solver_info_["gap_abs"]


def test_kernel_robust_zero_weight_drops_the_point_and_class_weight_multiplies():
    """A point of weight 0 is the same as removing its row and column (from the kernel samples too); class_weight
    ("balanced" or a dict) times sample_weight is the fit with that product as sample_weight."""
    from rsvm_conic.estimators import KernelRobustSVC

    rng, K, y, s = _kernel_data(5)
    samples = K[None] + 0.02 * rng.standard_normal((6,) + K.shape)
    samples = 0.5 * (samples + samples.transpose(0, 2, 1))
    keep = s > 0
    a = KernelRobustSVC(C=2.0).fit(samples, y, sample_weight=s)
    b = KernelRobustSVC(C=2.0).fit(samples[:, keep][:, :, keep], y[keep], sample_weight=s[keep])
    _kernel_same_optimum(a, b)
    assert a.alpha_.shape == (y.size,) and np.all(a.alpha_[~keep] == 0)
    for cw in ("balanced", {0: 2.0, 1: 0.5}):
        c = KernelRobustSVC(C=2.0, class_weight=cw).fit(K, y, sample_weight=s)
        d = KernelRobustSVC(C=2.0).fit(K, y, sample_weight=s * compute_sample_weight(cw, y))
        _kernel_same_optimum(c, d)


@pytest.mark.parametrize(
    "weights, match",
    [
        (-np.ones(24), "sample_weight must hold 24 nonnegative numbers .* got 24 negative"),
        (np.ones(23), r"sample_weight must hold 24 nonnegative numbers .* got shape \(23,\)"),
        (np.zeros(24), "sample_weight is zero for every sample"),
        ((np.arange(24) % 2 == 0).astype(float), "both classes with positive sample_weight"),
    ],
)
def test_kernel_robust_bad_sample_weight_says_what_to_fix(weights, match):
    from rsvm_conic.estimators import KernelRobustSVC

    _, K, y, _ = _kernel_data(0)
    with pytest.raises(ValueError, match=match):
        KernelRobustSVC().fit(K, y, sample_weight=weights)


def test_paper_bias_weighted_mean_is_the_repeated_points_mean():
    """The paper's bias (mean of y_j - f(x_j) over the support vectors) with sample weights is the mean over the
    copies of the repeated problem when the multipliers are spread evenly over them."""
    from rsvm_conic.solvers.kernel_uncertainty import paper_bias

    rng, K, y, s = _kernel_data(11)
    s = s + 1
    ypm = 2.0 * y - 1
    alpha = rng.uniform(0, 1, y.size) * s
    idx = np.repeat(np.arange(y.size), s)
    rep = paper_bias((alpha / s)[idx], ypm[idx], K[np.ix_(idx, idx)], 1.0)
    assert paper_bias(alpha, ypm, K, 1.0, weights=s) == pytest.approx(rep, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("n_classes, n_components", [(2, None), (3, None), (3, 20)])
@fuzz_settings(3)
@given(seed=st.integers(0, 2**31 - 1), C=st.sampled_from([1.0, 100.0]))
def test_weston_watkins_integer_weights_equal_repeated_rows(n_classes, n_components, seed, C):
    """Property, WestonWatkinsSVC (exact kernel: libsvm for two classes, the dual QP for three; random features: the
    dual QP): integer weights (zeros included) give the certified optimum of the repeated rows, within the gaps."""
    from rsvm_conic.estimators import WestonWatkinsSVC

    rng = np.random.default_rng(seed % 100000)
    L = 30
    y = np.arange(L) % n_classes
    X = rng.standard_normal((L, 2)) + y[:, None] * [1.0, 0.5]
    s = rng.integers(0, 4, L)
    s[:n_classes] = 1
    kw = dict(C=C, sigma=1.0, n_components=n_components)
    a = WestonWatkinsSVC(**kw).fit(X, y, sample_weight=s)
    b = WestonWatkinsSVC(**kw, solver="dual").fit(np.repeat(X, s, axis=0), np.repeat(y, s))
    assert a.solver_ == ("libsvm" if n_classes == 2 and n_components is None else "dual")
    sa, sb = a.solver_info_, b.solver_info_
    assert sa["status"] == sb["status"] == "optimal"
    assert abs(sa["primal"] - sb["primal"]) <= sa["gap_abs"] + sb["gap_abs"] + 64 * EPS * sa["primal"]


def test_weston_watkins_weights_validation_routes_and_class_weight():
    """Routes that take no weights are refused by name; a class left without positive weight says which;
    class_weight multiplies sample_weight; the certificate's dual point lies in the weighted box."""
    from rsvm_conic.estimators import WestonWatkinsSVC
    from rsvm_conic.formulations.multiclass_ww import WestonWatkinsProblem
    from rsvm_conic.solvers.multiclass import ww_dual_bound

    rng = np.random.default_rng(0)
    y = np.arange(30) % 3
    X = rng.standard_normal((30, 2)) + y[:, None]
    s = rng.uniform(0.2, 2.0, 30)
    for solver in ("cd", "alm", "primal"):
        with pytest.raises(ValueError, match=f"solver='{solver}' does not take sample weights.*libsvm, dual"):
            WestonWatkinsSVC(solver=solver).fit(X, y, sample_weight=s)
    with pytest.raises(ValueError, match="no sample of class 2 has positive weight"):
        WestonWatkinsSVC().fit(X, y, sample_weight=(y < 2).astype(float))
    with pytest.raises(ValueError, match="sample_weight must hold 30 nonnegative numbers"):
        WestonWatkinsSVC().fit(X, y, sample_weight=-s)
    for cw in ("balanced", {0: 2.0, 1: 0.5, 2: 1.0}):
        c = WestonWatkinsSVC(class_weight=cw).fit(X, y, sample_weight=s)
        d = WestonWatkinsSVC().fit(X, y, sample_weight=s * compute_sample_weight(cw, y))
        assert abs(c.solver_info_["primal"] - d.solver_info_["primal"]) <= (
            c.solver_info_["gap_abs"] + d.solver_info_["gap_abs"] + 64 * EPS * c.solver_info_["primal"]
        )
    # ww_dual_bound clips any multipliers into the weighted box: a bound from the unweighted box would exceed the
    # weighted optimum when weights are below 1
    m = WestonWatkinsProblem(y, 3, 2.0, K=np.exp(-0.5 * np.sum((X[:, None] - X[None]) ** 2, -1)), sample_weight=s)
    opt = m.solve("dual").certificate
    _, feasible = ww_dual_bound(rng.uniform(0, 10, (30, 3)), y, m.zeta, lambda B: float(np.sum(B * (m.K @ B))))
    assert np.all(feasible <= m.zeta[:, None] * (1 + 4 * EPS))
    assert ww_dual_bound(rng.uniform(0, 10, (30, 3)), y, m.zeta, lambda B: float(np.sum(B * (m.K @ B))))[0] <= (
        opt.primal * (1 + 1e-12)
    )


def _safe_data(seed, L=40):
    rng = np.random.default_rng(seed % 100000)
    X = rng.standard_normal((L, 3))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(L) > 0, 1, 0)
    y[:2] = [0, 1]
    s = rng.integers(0, 4, L)
    s[:4] = 1
    return rng, X, y, s


@fuzz_settings(4)
@given(seed=st.integers(0, 2**31 - 1), C=st.sampled_from([1.0, 100.0]))
def test_safe_svc_integer_weights_equal_repeated_rows_at_a_given_sigma(seed, C):
    """Property, SafeSVC at a fixed sigma (sigma_min = sigma_max): integer weights (zeros included) give the certified
    optimum of the robust SVM on the repeated rows, within the certified gaps."""
    from rsvm_conic.estimators import SafeSVC

    _, X, y, s = _safe_data(seed)
    kw = dict(C=C, sigma_min=0.3, sigma_max=0.3, random_state=0, max_iter=2)
    a = SafeSVC(**kw).fit(X, y, sample_weight=s)
    b = SafeSVC(**kw).fit(np.repeat(X, s, axis=0), np.repeat(y, s))
    sa, sb = a.solver_stats_, b.solver_stats_
    assert sa["status"] == sb["status"] == "optimal"
    assert abs(sa["primal"] - sb["primal"]) <= sa["gap_abs"] + sb["gap_abs"] + 64 * EPS * sa["primal"]
    dw = float(np.linalg.norm(a.coef_ - b.coef_))
    assert dw <= math.sqrt(2 * max(sa["gap_abs"], 0.0)) + math.sqrt(2 * max(sb["gap_abs"], 0.0)) + 1e-12


def test_safe_svm_weighted_hypergradient_is_the_repeated_rows_one():
    """The bi-level problem with integer weights on the training and validation rows has the smoothed upper objective
    and hypergradient of the repeated rows (the weighted lower-level derivatives and upper gradient)."""
    from rsvm_conic.formulations.safe import SafeProblem

    rng, X, y, s = _safe_data(2)
    ypm = 2.0 * y - 1
    Xa, ya, sa_ = X[:25], ypm[:25], s[:25] + 1
    Xv, yv, sv = X[25:], ypm[25:], s[25:] + 1
    sigma = rng.uniform(0.1, 0.8, 3)
    weighted = SafeProblem(Xa, ya, Xv, yv, C=2.0, sample_weight=sa_, sample_weight_val=sv)
    repeated = SafeProblem(np.repeat(Xa, sa_, 0), np.repeat(ya, sa_), np.repeat(Xv, sv, 0), np.repeat(yv, sv), C=2.0)
    Fw, gw = weighted.hypergradient(sigma)
    Fr, gr = repeated.hypergradient(sigma)
    assert Fw == pytest.approx(Fr, rel=1e-8)
    assert np.allclose(gw, gr, rtol=1e-6, atol=1e-8 * (1 + np.abs(gr).max()))


def test_safe_svc_weights_need_the_hypergradient_route_and_class_weight_multiplies():
    from rsvm_conic.estimators import SafeSVC

    _, X, y, s = _safe_data(3)
    with pytest.raises(ValueError, match="solver='stochastic_bilevel' does not take sample weights.*'hypergradient'"):
        SafeSVC(solver="stochastic_bilevel").fit(X, y, sample_weight=s)
    with pytest.raises(ValueError, match="both classes with positive sample_weight"):
        SafeSVC().fit(X, y, sample_weight=(y == 1).astype(float))
    kw = dict(sigma_min=0.2, sigma_max=0.2, random_state=0, max_iter=2)
    c = SafeSVC(class_weight="balanced", **kw).fit(X, y, sample_weight=s)
    d = SafeSVC(**kw).fit(X, y, sample_weight=s * compute_sample_weight("balanced", y))
    assert abs(c.objective_ - d.objective_) <= c.solver_stats_["gap_abs"] + d.solver_stats_["gap_abs"]


def _hyperbolic_data(seed, L=24, C=3):
    rng = np.random.default_rng(seed % 100000)
    y = np.arange(L) % C
    X = rng.standard_normal((L, 2)) + y[:, None] * [1.0, 0.5]
    s = rng.integers(0, 4, L)
    s[:C] = 1  # every class keeps a sample
    return rng, X, y, s


@fuzz_settings(8)
@given(seed=st.integers(0, 2**31 - 1))
def test_hyperbolic_weighted_objective_majoriser_gamma_and_anchors_are_the_repeated_rows(seed):
    """Property, HyperbolicProblem with positive integer weights: the objective, the CCP majoriser, gamma='auto' and
    the anchors (all points kept: the weights are the cluster sizes) are those of the repeated rows, to rounding."""
    from rsvm_conic.formulations.hyperbolic import HyperbolicProblem
    from rsvm_conic.solvers.ccp import kmeans_anchors

    rng, X, y, s = _hyperbolic_data(seed)
    s = s + 1
    Phi = np.hstack([X, rng.standard_normal((y.size, 2))])
    w = HyperbolicProblem(Phi, y, 3, gamma="auto", lam=0.05, sample_weight=s)
    r = HyperbolicProblem(np.repeat(Phi, s, axis=0), np.repeat(y, s), 3, gamma="auto", lam=0.05)
    assert w.gamma == pytest.approx(r.gamma, rel=64 * EPS)
    for _ in range(3):
        O, O_t = rng.standard_normal((2, 3, Phi.shape[1]))
        R, R_t = rng.uniform(0, 1, (2, 3))
        fw, fr = w.f(O, R), r.f(O, R)
        assert fw == pytest.approx(fr, rel=1e-12) and fw != pytest.approx(
            HyperbolicProblem(Phi, y, 3, w.gamma, 0.05).f(O, R)
        )
        mw, mr = w.majorizer(O, R, O_t, R_t), r.majorizer(O, R, O_t, R_t)
        assert mw == pytest.approx(mr, rel=1e-10, abs=1e-10 * s.sum())
    anchors, sizes = kmeans_anchors(Phi, w.codes, 3, 100, np.random.default_rng(0), w.sample_weight)
    for k, (A, m) in enumerate(zip(anchors, sizes)):
        assert np.array_equal(A, Phi[y == k]) and np.array_equal(m, s[y == k])


@fuzz_settings(3)
@given(seed=st.integers(0, 2**31 - 1))
@pytest.mark.parametrize("kw", [dict(max_rank=None), dict(max_rank=4), dict(n_components=10)], ids=str)
def test_hyperbolic_svc_integer_weights_equal_repeated_rows(kw, seed):
    """Property, HyperbolicSVC from start 0 (the weighted class means): integer weights (zeros included) give the CCP of
    the repeated rows: the same gamma and starting objective (to rounding), the same first step (to the SOCP solver's
    1e-7 accuracy) and the same final objective to the CCP's stopping tolerance (a step lowering f by less than
    1e-6 (1 + |f|) ends it; the two runs may stop one step apart).  The step-by-step comparison runs the plain CCP
    (``boost=0``): the boosted line search multiplies the SOCP solver's differences between the two problems' minimisers
    (measured with Clarabel's 1e-7 steps: 2.7e-4 after the first boosted step, final objectives 1.6e-4 apart).  The
    boosted CCP is compared with the interior point's steps (solved to 1e-10, ``step_accuracy="exact"``: the final
    objectives 1e-8 apart), and the boosted step's weights by tests/test_multiclass_hyperbolic.py."""
    from rsvm_conic.estimators import HyperbolicSVC

    _, X, y, s = _hyperbolic_data(seed)
    boosted = dict(sigma=1.0, n_starts=1, tol=1e-6, solver="ipm", step_accuracy="exact", **kw)
    a = HyperbolicSVC(**boosted).fit(X, y, sample_weight=s)
    b = HyperbolicSVC(**boosted).fit(np.repeat(X, s, axis=0), np.repeat(y, s))
    assert abs(a.objective_ - b.objective_) <= 1e-5 * (1.0 + abs(b.objective_))
    est = dict(sigma=1.0, n_starts=1, tol=1e-6, max_iter=30, boost=0.0, step_accuracy="exact", **kw)
    a = HyperbolicSVC(**est).fit(X, y, sample_weight=s)
    b = HyperbolicSVC(**est).fit(np.repeat(X, s, axis=0), np.repeat(y, s))
    scale = 1.0 + abs(b.objective_)
    assert a.gamma_ == pytest.approx(b.gamma_, rel=1e-12)
    assert a.histories_[0][0] == pytest.approx(b.histories_[0][0], rel=1e-12)
    if len(b.histories_[0]) > 1 and len(a.histories_[0]) > 1:
        assert abs(a.histories_[0][1] - b.histories_[0][1]) <= 1e-5 * (1.0 + abs(b.histories_[0][0]))
    assert abs(a.objective_ - b.objective_) <= 1e-5 * scale


def test_hyperbolic_svc_zero_weight_drops_the_sample_and_class_weight_multiplies():
    """Weight 0 is the sample removed (the same fit to rounding); class_weight multiplies sample_weight as
    scikit-learn's compute_sample_weight; the anchors route and a class without positive weight."""
    from rsvm_conic.estimators import HyperbolicSVC

    _, X, y, s = _hyperbolic_data(5)
    keep = s > 0
    kw = dict(sigma=1.0, n_starts=1, max_iter=10)
    a = HyperbolicSVC(**kw).fit(X, y, sample_weight=keep.astype(float))
    b = HyperbolicSVC(**kw).fit(X[keep], y[keep])
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-9)
    assert np.allclose(a.class_scores(X), b.class_scores(X), rtol=1e-6, atol=1e-6)
    for cw in ("balanced", {0: 2.0, 1: 0.5, 2: 1.0}):
        c = HyperbolicSVC(class_weight=cw, **kw).fit(X, y, sample_weight=s)
        d = HyperbolicSVC(**kw).fit(X, y, sample_weight=s * compute_sample_weight(cw, y))
        assert c.objective_ == pytest.approx(d.objective_, rel=1e-12)
    anchors = HyperbolicSVC(solver="anchors", n_anchors=3, **kw).fit(X, y, sample_weight=s)
    assert anchors.solver_ == "anchors" and np.isfinite(anchors.objective_)
    with pytest.raises(ValueError, match="no sample of class 2 has positive weight"):
        HyperbolicSVC().fit(X, y, sample_weight=(y < 2).astype(float))
    with pytest.raises(ValueError, match="sample_weight must hold 24 nonnegative numbers"):
        HyperbolicSVC().fit(X, y, sample_weight=-np.ones(24))


def test_hyperbolic_svc_class_weight_passes_sklearns_class_weight_check():
    """scikit-learn's check_class_weight_classifiers (class 0 weighted 1000, the others 1e-4, on noisy blobs: more than
    87% of the test points go to class 0): the default route (ipm, boosted) passes it with the contract test's
    settings (one start, max_rank=5), and ``solver="ccp"`` at the default starts with max_rank=10 (whose steps stall at
    fixed_point there; with max_rank >= 10 a converged CCP fits the class-1 points too and fails it, whichever solver
    runs the steps: ``rsvm-conic bench hyperbolic-class-weight`` and
    tests/test_multiclass_hyperbolic.py::test_on_the_class_weight_check_ipm_ends_no_worse_and_ccp_stalls_at_clarabel_accuracy)."""
    from sklearn.utils.estimator_checks import check_class_weight_classifiers

    from rsvm_conic.estimators import HyperbolicSVC

    check_class_weight_classifiers("HyperbolicSVC", HyperbolicSVC(n_starts=1, max_rank=5))
    check_class_weight_classifiers("HyperbolicSVC", HyperbolicSVC(solver="ccp", max_rank=10))
