"""warm_start on the linear estimators, certified radius / C paths and their default grid."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

from rsvm_conic.estimators import ChanceConstrainedSVC, NominalSVC, RobustSVC, WassersteinSVC
from rsvm_conic.estimators.path import default_radii, radius_path
from rsvm_conic.exceptions import ConstantClassifierWarning

EPS = float(np.finfo(float).eps)


def _data(seed=0, L=300, n=4, shift=1.0):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(L) < 0.45, 1, 0)
    X = rng.standard_normal((L, n)) * rng.uniform(0.5, 2.0, n) + shift * (2 * y - 1)[:, None] * rng.standard_normal(n)
    return rng, X, y


def _within_gaps(a_obj, a_gap, b_obj, b_gap):
    """Two certified solves of one problem: objectives within the sum of their absolute gaps."""
    return abs(a_obj - b_obj) <= a_gap + b_gap + 64 * EPS * abs(a_obj)


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantClassifierWarning)
        return fn()


@pytest.mark.parametrize(
    "case",
    [
        dict(seed=0),
        dict(seed=1, shift=2.0, C=10.0),
        dict(seed=2, groups=True),
        dict(seed=3, weights=True),
        dict(seed=4, per_sample=True, C=0.3),
        dict(seed=5, diagonal=True),
    ],
)
def test_warm_started_path_equals_cold_fits_within_certified_gaps(case):
    """A family of problems (shared / grouped / per-sample Sigma, weights, C): every point of the warm path is
    certified and equals the cold fit at its radius within the two certified gaps (objective and, by the strong
    convexity of 1/2||w||^2, w within sqrt(2 gap) of the optimum each)."""
    rng, X, y = _data(case["seed"], shift=case.get("shift", 1.0))
    L, n = X.shape
    fit = {}
    if case.get("groups"):
        fit = dict(
            Sigma=np.stack([np.diag(rng.uniform(0.05, 0.5, n)) for _ in range(3)]), sigma_index=rng.integers(0, 3, L)
        )
    elif case.get("per_sample"):
        fit = dict(Sigma=rng.uniform(0.05, 0.4, (L, n)), sigma_index="sample")
    elif case.get("diagonal"):
        fit = dict(Sigma=rng.uniform(0.05, 0.4, n))
    if case.get("weights"):
        fit["sample_weight"] = rng.integers(0, 3, L).astype(float)
    radii = np.geomspace(3.0, 0.01, 8)
    est = RobustSVC(C=case.get("C", 1.0))
    path = _quiet(lambda: radius_path(est, X, y, radii=radii, **fit))
    assert np.all(path.gaps <= 1e-6)
    assert not hasattr(est, "coef_")  # the estimator passed is cloned, not fitted
    for j, r in enumerate(path.radii):
        cold = _quiet(lambda: RobustSVC(C=case.get("C", 1.0), radius=r).fit(X, y, **fit))
        ga, gb = path.gaps_abs[0, j], cold.solver_stats_["gap_abs"]
        assert _within_gaps(path.objectives[0, j], ga, cold.objective_, gb)
        assert np.linalg.norm(path.coefs[0, j] - cold.coef_.ravel()) <= np.sqrt(2 * ga) + np.sqrt(2 * gb) + 1e-9


def test_the_warm_start_runs_and_certifies_on_the_whole_problem():
    """The later points of a path start from their neighbour (a reduced problem), and what they report is the
    certificate of the whole problem: recomputed here from the formulation of a cold fit."""
    _, X, y = _data(7, L=600)
    path = _quiet(lambda: radius_path(RobustSVC(), X, y, radii=np.geomspace(1.0, 0.05, 6)))
    warm = [s for s in path.stats[0] if s.get("warm_start") == "working set"]
    assert len(warm) >= 3 and all(s["status"] == "optimal" and s["warm_working"] < X.shape[0] for s in warm)
    cold = RobustSVC(radius=path.radii[-1]).fit(X, y)
    assert _within_gaps(path.objectives[0, -1], path.gaps_abs[0, -1], cold.objective_, cold.solver_stats_["gap_abs"])


@pytest.mark.parametrize("make, param, values", [(NominalSVC, "C", [0.01, 0.1, 1.0, 10.0])])
def test_C_path_of_the_nominal_svm_equals_cold_fits(make, param, values):
    _, X, y = _data(8)
    path = radius_path(make(), X, y, Cs=values)
    assert path.radii is None and path.coefs.shape == (4, 1, X.shape[1])
    for i, C in enumerate(path.Cs):
        cold = make(C=C).fit(X, y)
        assert _within_gaps(path.objectives[i, 0], path.gaps_abs[i, 0], cold.objective_, cold.solver_stats_["gap_abs"])


def test_chance_constrained_warm_start_over_epsilon_equals_cold_fits():
    _, X, y = _data(9)
    est = ChanceConstrainedSVC(warm_start=True)
    for eps in (0.5, 0.3, 0.2, 0.1):
        est.set_params(epsilon=eps).fit(X, y)
        cold = ChanceConstrainedSVC(epsilon=eps).fit(X, y)
        assert est.solver_stats_["status"] == "optimal"
        assert _within_gaps(
            est.objective_, est.solver_stats_["gap_abs"], cold.objective_, cold.solver_stats_["gap_abs"]
        )


def test_a_grid_over_C_and_radius_is_walked_in_snake_order_and_certified():
    _, X, y = _data(10)
    path = _quiet(lambda: radius_path(RobustSVC(), X, y, radii=[0.5, 0.1, 1.0], Cs=[10.0, 0.1]))
    assert list(path.Cs) == [0.1, 10.0] and list(path.radii) == [1.0, 0.5, 0.1]
    assert path.coefs.shape == (2, 3, X.shape[1]) and np.all(path.gaps <= 1e-6)
    for i, j in np.ndindex(2, 3):
        cold = RobustSVC(C=path.Cs[i], radius=path.radii[j]).fit(X, y)
        assert _within_gaps(path.objectives[i, j], path.gaps_abs[i, j], cold.objective_, cold.solver_stats_["gap_abs"])


def test_other_data_is_never_taken_for_the_previous_fits():
    """The same array modified in place, other labels, another Sigma: each refits from scratch and equals the
    cold fit on the new data."""
    rng, X, y = _data(11)
    est = RobustSVC(radius=0.3, warm_start=True).fit(X, y)
    est.set_params(radius=0.2).fit(X, y)
    assert est.solver_stats_.get("warm_start") == "working set"
    X[:5] += 3.0  # in place
    S = np.diag(rng.uniform(0.1, 0.5, X.shape[1]))
    for args, kw in [((X, y), {}), ((X, 1 - y), {}), ((X, y), {"Sigma": S})]:
        est.set_params(radius=0.15).fit(*args, **kw)
        cold = RobustSVC(radius=0.15).fit(*args, **kw)
        assert "warm_start" not in est.solver_stats_
        assert _within_gaps(
            est.objective_, est.solver_stats_["gap_abs"], cold.objective_, cold.solver_stats_["gap_abs"]
        )
        assert np.array_equal(est.classes_, cold.classes_)
    est.set_params(norm=1).fit(X, y, Sigma=S)  # another norm: another problem
    assert "warm_start" not in est.solver_stats_ and est.solver_stats_["backend"] == "clarabel"


def test_without_warm_start_nothing_is_kept_and_pickles_hold_no_data():
    _, X, y = _data(12)
    assert getattr(RobustSVC().fit(X, y), "_warm", None) is None
    est = RobustSVC(warm_start=True).fit(X, y)
    assert est._warm is not None
    clone = pickle.loads(pickle.dumps(est))
    assert not hasattr(clone, "_warm") and np.array_equal(clone.predict(X), est.predict(X))


def test_default_grid_starts_where_w_becomes_zero_brute_force():
    """The default grid's largest radius gives w = 0 and the next one w != 0, by cold fits: ||w - w*|| <=
    sqrt(2 gap_abs) (1/2||w||^2 is 1-strongly convex), so ||w|| below it at the first radius means w* = 0 is within
    the certificate, and above it at the second that w* != 0."""
    for seed in (13, 14, 15):
        _, X, y = _data(seed, L=200)
        radii = default_radii(RobustSVC(), X, y, n_radii=20)
        assert radii.shape == (20,) and np.all(np.diff(radii) < 0)
        assert np.isclose(radii[-1] / radii[0], 1e-3)
        first, second = (_quiet(lambda r=r: RobustSVC(radius=r).fit(X, y)) for r in radii[:2])
        assert np.linalg.norm(first.coef_) <= np.sqrt(2 * first.solver_stats_["gap_abs"])
        assert np.linalg.norm(second.coef_) > np.sqrt(2 * second.solver_stats_["gap_abs"])
        slightly_below = _quiet(lambda: RobustSVC(radius=0.99 * radii[0]).fit(X, y))
        assert np.linalg.norm(slightly_below.coef_) > np.sqrt(2 * slightly_below.solver_stats_["gap_abs"])


def test_default_grid_path_runs_from_the_constant_fit():
    _, X, y = _data(16)
    path = _quiet(lambda: radius_path(RobustSVC(), X, y, n_radii=6))
    assert path.radii.shape == (6,) and np.all(path.gaps <= 1e-6)
    assert np.linalg.norm(path.coefs[0, 0]) <= np.sqrt(2 * path.gaps_abs[0, 0])


def test_path_input_errors_say_what_to_do():
    _, X, y = _data(17)
    with pytest.raises(ValueError, match="NominalSVC has no radius parameter: pass Cs only"):
        radius_path(NominalSVC(), X, y, radii=[1.0])
    with pytest.raises(ValueError, match="unweighted in-memory samples only.*pass the radii"):
        default_radii(RobustSVC(), X, y, sample_weight=np.ones(X.shape[0]))
    with pytest.raises(ValueError, match="ratio must be in \\(0, 1\\)"):
        default_radii(RobustSVC(), X, y, ratio=2.0)
    with pytest.raises(ValueError, match="radius must be"):
        radius_path(RobustSVC(), X, y, radii=[1.0, -1.0])
    Xc = np.vstack([X, X])
    yc = np.r_[np.zeros(X.shape[0]), np.ones(X.shape[0])]  # identical classes: constant at every radius
    with pytest.raises(ValueError, match="constant \\(w = 0\\) at every radius"):
        default_radii(RobustSVC(), Xc, yc)


def test_a_refit_at_the_same_parameters_returns_the_certified_fit_again():
    """warm_start=True and nothing changed (the same data and parameters): the previous certified solution, as
    scikit-learn's idempotence check expects; a change of the route solves again."""
    _, X, y = _data(18)
    est = RobustSVC(radius=0.2, warm_start=True).fit(X, y)
    coef, stats = est.coef_.copy(), dict(est.solver_stats_)
    est.fit(X, y)
    assert np.array_equal(est.coef_, coef) and est.solver_stats_ == stats
    est.set_params(solver="clarabel").fit(X, y)
    assert est.solver_stats_["backend"] == "clarabel"
    cold = RobustSVC(radius=0.2).fit(X, y)
    assert _within_gaps(est.objective_, est.solver_stats_["gap_abs"], cold.objective_, cold.solver_stats_["gap_abs"])


@pytest.mark.parametrize(
    "case",
    [
        dict(seed=0),
        dict(seed=1, shift=0.3, C=10.0),
        dict(seed=2, diagonal=True, C=0.1),
        dict(seed=3, balanced=True),
        dict(seed=4, L=800, n=8),
    ],
)
def test_the_constant_point_at_the_threshold_is_certified_without_an_interior_point(case):
    """At and above the radius R* from which w = 0 (the default grid's first point) the fit is the constant
    classifier certified by a dual point of the threshold (route ``threshold``, no interior point): its objective
    equals a cold fit's within the two certified gaps, and the path's first point is that fit."""
    rng, X, y = _data(case["seed"], L=case.get("L", 300), n=case.get("n", 4), shift=case.get("shift", 1.0))
    if case.get("balanced"):
        y = np.arange(y.size) % 2
    fit = dict(Sigma=rng.uniform(0.05, 0.4, X.shape[1])) if case.get("diagonal") else {}
    C = case.get("C", 1.0)
    path = _quiet(lambda: radius_path(RobustSVC(C=C), X, y, n_radii=4, **fit))
    first = path.stats[0][0]
    assert first["route"] == "threshold" and first["status"] == "optimal" and first["iterations"] == 0
    assert not np.any(path.coefs[0, 0])
    for r in (path.radii[0], 1.5 * path.radii[0]):
        warm = RobustSVC(C=C, warm_start=True)
        warm.radius_threshold(X, y, **fit)
        _quiet(lambda: warm.set_params(radius=r).fit(X, y, **fit))
        cold = _quiet(lambda: RobustSVC(C=C, radius=r).fit(X, y, **fit))
        assert warm.solver_stats_["route"] == "threshold"
        assert warm.solver_stats_["gap_rel"] <= 1e-6
        assert _within_gaps(
            warm.objective_, warm.solver_stats_["gap_abs"], cold.objective_, cold.solver_stats_["gap_abs"]
        )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_path_over_given_radii_certifies_its_constant_points_without_an_interior_point(seed):
    """Radii given (as each fold of the cross-validated estimators gives them): the points at and above the data's
    threshold are constant, certified by the threshold's dual point (route ``threshold``: the first by the one-pass
    lower bound, the next ones because their neighbour is constant), and equal the cold fits within the gaps; the
    first non-constant point is a certified interior-point fit."""
    rng, X, y = _data(seed, L=400, shift=0.8)
    top = RobustSVC().radius_threshold(X, y).upper
    radii = top * np.array([4.0, 2.0, 1.0, 0.5, 0.1])
    path = _quiet(lambda: radius_path(RobustSVC(C=0.5), X, y, radii=radii))
    routes = [s["route"] for s in path.stats[0]]
    assert routes[:3] == ["threshold"] * 3 and routes[3] == "ipm"
    assert np.all(path.gaps <= 1e-6) and not np.any(path.coefs[0, :3]) and np.any(path.coefs[0, 3])
    for j, r in enumerate(radii):
        cold = _quiet(lambda: RobustSVC(C=0.5, radius=r).fit(X, y))
        assert _within_gaps(path.objectives[0, j], path.gaps_abs[0, j], cold.objective_, cold.solver_stats_["gap_abs"])


@pytest.mark.parametrize(
    "case", [dict(seed=0), dict(seed=1, shift=0.3), dict(seed=2, diagonal=True), dict(seed=3, L=900, n=7)]
)
def test_the_one_program_threshold_equals_the_general_algorithm(case):
    """p = 2, one noise factor, one radius (the default grid's case): the threshold from one conic program brackets
    the same radius as the general algorithm (Dinkelbach / ratio programs with every sample in reach), to 1e-5."""
    from rsvm_conic.estimators.linear import _one_program_threshold

    rng, X, y = _data(case["seed"], L=case.get("L", 300), n=case.get("n", 4), shift=case.get("shift", 1.0))
    fit = dict(Sigma=rng.uniform(0.05, 0.4, X.shape[1])) if case.get("diagonal") else {}
    est = RobustSVC(warm_start=True)
    zt = est.radius_threshold(X, y, **fit)
    formulation = est._warm.formulation
    formulation.set_params(radius=1.0)
    assert zt.programs == 1 and _one_program_threshold(formulation) is not None
    ref = formulation.zero_threshold(max_programs=100, band=512, max_working=X.shape[0], rtol=1e-7)
    assert ref.bracketed
    assert zt.lower <= ref.upper * (1 + 1e-5) and ref.lower <= zt.upper * (1 + 1e-5)
    assert abs(zt.upper - ref.upper) <= 1e-5 * ref.upper
    # the program's dual point certifies the constant classifier at every radius from the threshold on
    a, z = zt.dual
    for r, C in ((zt.upper, 1.0), (3 * zt.upper, 0.2)):
        formulation.set_params(radius=r, C=C)
        w0, b0 = np.zeros(X.shape[1]), 1.0 if np.mean(y) > 0.5 else -1.0
        cert = formulation.certificate("threshold", w0, b0, C * a, multipliers=C * z[None, :])
        assert cert.certified and cert.primal == pytest.approx(2 * C * min(np.sum(y), np.sum(1 - y)), rel=1e-12)


def test_constant_points_are_certified_for_every_C_of_a_path():
    """The radius from which w = 0 does not depend on C: once a point of a path is certified constant, every point
    at a radius at least as large is, in every row of C (the snake order reaches them from non-constant points too),
    and each equals its cold fit within the gaps."""
    rng, X, y = _data(5, L=400, shift=0.8)
    top = RobustSVC().radius_threshold(X, y).upper
    radii = top * np.array([3.0, 1.5, 1.0, 0.4, 0.1])
    Cs = [0.1, 1.0, 10.0]
    path = _quiet(lambda: radius_path(RobustSVC(), X, y, radii=radii, Cs=Cs))
    for i, C in enumerate(Cs):
        assert [s["route"] for s in path.stats[i][:3]] == ["threshold"] * 3
        assert np.all(path.gaps[i] <= 1e-6) and not np.any(path.coefs[i, :3])
        for j in (0, 3):
            cold = _quiet(lambda: RobustSVC(C=C, radius=radii[j]).fit(X, y))
            assert _within_gaps(
                path.objectives[i, j], path.gaps_abs[i, j], cold.objective_, cold.solver_stats_["gap_abs"]
            )


def test_a_path_through_constant_points_does_not_warn():
    """The default grid starts at R*, where the fit is constant by construction: the path records it (zero
    coefficients) without a ConstantClassifierWarning per point (the gallery's test once showed one in the summary)."""
    _, X, y = _data(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstantClassifierWarning)
        path = radius_path(RobustSVC(), X, y, n_radii=4)
    assert np.all(path.coefs[0, 0] == 0.0) or np.linalg.norm(path.coefs[0, 0]) <= np.sqrt(2 * path.gaps_abs[0, 0])


@pytest.mark.parametrize("seed, Cs", [(0, None), (1, [0.1, 1.0, 10.0]), (2, [0.5])])
def test_a_path_over_given_radii_solves_one_threshold_program(seed, Cs, monkeypatch):
    """Radii given (each fold of the cross-validated estimators): the data's threshold is computed once, by one conic
    program, at the first point that may be constant; its dual point certifies every constant point of the path
    (in every row of C) and its bracket rules out the others, with no conic program per point and no threshold
    search for the (silenced) constant reason.  Every point equals its cold fit within the certified gaps."""
    import rsvm_conic.solvers.zero_threshold as zt_module
    from rsvm_conic.formulations._linear import LinearProblem

    calls = []

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            if name != "zero_threshold" or kwargs.get("max_programs") != 0:  # the one-pass lower bound is no program
                calls.append(name)
            return fn(*args, **kwargs)

        return wrapper

    for name in ("constant_threshold", "constant_dual_point"):
        monkeypatch.setattr(zt_module, name, counted(name, getattr(zt_module, name)))
    monkeypatch.setattr(LinearProblem, "zero_threshold", counted("zero_threshold", LinearProblem.zero_threshold))
    _, X, y = _data(seed, L=400, shift=0.8)
    top = RobustSVC().radius_threshold(X, y).upper
    calls.clear()
    radii = top * np.array([4.0, 2.0, 1.0, 0.5, 0.1])
    path = _quiet(lambda: radius_path(RobustSVC(C=0.5), X, y, radii=radii, Cs=Cs))
    assert calls == ["constant_threshold"]
    for i in range(path.coefs.shape[0]):
        assert [s["route"] for s in path.stats[i]][:3] == ["threshold"] * 3 and np.any(path.coefs[i, 3])
        for j, r in enumerate(radii):
            cold = _quiet(lambda: RobustSVC(C=path.Cs[i], radius=r).fit(X, y))
            assert _within_gaps(
                path.objectives[i, j], path.gaps_abs[i, j], cold.objective_, cold.solver_stats_["gap_abs"]
            )


@pytest.mark.parametrize("seed, far", [(0, 30.0), (1, 20.0), (2, 50.0)])
def test_a_guess_contradicted_by_the_margins_is_corrected_before_the_certificate(seed, far):
    """A working-set warm start from a distant point (its margins a poor guess): the reduced problem is solved
    again while samples outside the working set contradict the guess, and only the last round's point goes to the
    certificate on the whole problem (a pass over every sample and its dual set); that point is certified and equals
    the cold fit within the gaps."""
    from rsvm_conic.solvers.working_set import working_set_ipm

    _, X, y = _data(seed, L=600, shift=0.8)
    est = RobustSVC(radius=0.02, warm_start=True).fit(X, y)
    w0, b0 = est.coef_.ravel().copy(), float(est.intercept_[0])
    radius = far * 0.02
    est.set_params(radius=radius).fit(X, y)  # the formulation at the new radius
    formulation = est._warm.formulation
    unc = formulation.current_uncertainty()
    certified = []

    def certify(w, b, a):
        cert = formulation.certificate("ipm", w, b, a, tol=1e-6)
        certified.append(cert.certified)
        return cert

    w, b, cert, detail = working_set_ipm(
        formulation.X, formulation.y, formulation.C_box, unc.gamma, unc.factors, unc.diagonal, unc.group_index,
        w0, b0, certify, band=0.01,
    )  # fmt: skip
    assert detail["rounds"] >= 2 and certified == [True]
    cold = RobustSVC(radius=radius).fit(X, y)
    assert _within_gaps(cert.primal, cert.gap_abs, cold.objective_, cold.solver_stats_["gap_abs"])


def _family(name, rng):
    if name == "magic":  # the benchmark's data: a standardised subsample of the vendored magic set
        from sklearn.preprocessing import StandardScaler

        from rsvm_conic.datasets.keel import load_dataset

        X, y = load_dataset("magic")
        idx = rng.permutation(y.size)[:3000]
        return StandardScaler().fit_transform(X[idx]), y[idx]
    L, n = 3000, 20  # the benchmark's synthetic family: two Gaussian classes
    y = rng.integers(0, 2, L)
    return rng.standard_normal((L, n)) + (2 * y - 1)[:, None] * rng.standard_normal(n) * 2.4 / np.sqrt(n), y


@pytest.mark.parametrize(
    "name, seed, step", [("magic", 0, 0.7), ("magic", 1, 0.5), ("gauss", 2, 0.7), ("gauss", 3, 0.8)]
)
def test_the_interior_point_warm_started_at_the_previous_solution_needs_fewer_iterations(name, seed, step):
    """The next radius of a path solved by the interior point from :func:`warm_point` at the previous solution: an
    interior start (slacks and multipliers positive, each cone's pair inside its cone), the same certified optimum as
    from the cold start (objectives within the two gaps) in at least a fifth fewer iterations (the cold start,
    scaled to the radius, takes 15 to 17 here)."""
    from functools import partial

    from rsvm_conic.solvers.ipm.robust_svm import RobustSVMCone, solve_robust_ipm
    from rsvm_conic.solvers.working_set import warm_point

    X, y = _family(name, np.random.default_rng(seed))
    radius = 0.3 * RobustSVC().radius_threshold(X, y).upper
    prev = RobustSVC(radius=radius, warm_start=True).fit(X, y)
    w0, b0 = prev.coef_.ravel(), float(prev.intercept_[0])
    prev.set_params(radius=step * radius)
    formulation = prev._prepare(X, y, None, None, None, None)[0]
    unc = formulation.current_uncertainty()
    args = (formulation.X, formulation.y, formulation.C_box, unc.gamma, unc.factors, unc.diagonal, unc.group_index)
    prob = RobustSVMCone(*args)
    x, _, z, s = warm_point(prob, w0, b0)
    zm, zx, Z = prob.split_z(z)
    sm, sx, S = prob.split_z(s)
    assert np.all(zm > 0) and np.all(zx > 0) and np.all(sm > 0) and np.all(sx > 0)
    assert np.all(Z[:, 0] > np.linalg.norm(Z[:, 1:], axis=1)) and np.all(S[:, 0] > np.linalg.norm(S[:, 1:], axis=1))
    assert np.allclose(zm + zx, formulation.C_box)
    runs = {}
    for key, start in (("cold", None), ("warm", partial(warm_point, w=w0, b=b0))):
        values, info = solve_robust_ipm(*args, start=start)
        cert = formulation.certificate("ipm", values["w"], values["b"], info["alpha"], tol=1e-6)
        assert info["status"] == "optimal" and cert.certified
        runs[key] = (info["iterations"], cert)
    (it_cold, cold), (it_warm, warm) = runs["cold"], runs["warm"]
    assert _within_gaps(warm.primal, warm.gap_abs, cold.primal, cold.gap_abs)
    assert it_warm <= 0.8 * it_cold, (it_warm, it_cold)


@pytest.mark.parametrize("name, seed", [("magic", 0), ("magic", 1), ("gauss", 2)])
def test_reduced_problems_are_solved_to_a_tenth_of_the_certificate_tolerance(name, seed):
    """The reduced problems stop at a tenth of the certificate's relative tolerance (the certificate on the whole
    problem decides): fewer interior-point iterations over a path than at the interior point's own 1e-8, every
    point still certified to the tolerance and equal to the other run's within the two gaps."""
    X, y = _family(name, np.random.default_rng(seed))
    radii = RobustSVC().radius_threshold(X, y).upper * np.geomspace(0.5, 0.005, 6)
    runs = {}
    for key, options in (("tenth", None), ("own", {"tol_gap_rel": 1e-8})):
        path = _quiet(lambda: radius_path(RobustSVC(solver_options=options), X, y, radii=radii))
        warm = [s["warm_start"] == "working set" for s in path.stats[0][1:]]
        assert all(warm) and np.all(path.gaps <= 1e-6)
        runs[key] = (sum(s["iterations"] for s in path.stats[0][1:]), path)
    (it_tenth, tenth), (it_own, own) = runs["tenth"], runs["own"]
    assert it_tenth < it_own, (it_tenth, it_own)
    for j in range(radii.size):
        assert _within_gaps(tenth.objectives[0, j], tenth.gaps_abs[0, j], own.objectives[0, j], own.gaps_abs[0, j])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_row_of_C_entered_at_a_constant_point_starts_from_the_last_non_constant_fit(seed):
    """A grid over C and radii (each fold of ``RobustSVCCV``): the snake enters every other row of C at its
    constant (largest) radius; the row's first non-constant point then starts from the last non-constant fit (the
    neighbour in C), a working set, not a cold fit.  Every point equals its cold fit within the certified gaps."""
    _, X, y = _data(seed, L=500, shift=0.8)
    top = RobustSVC().radius_threshold(X, y).upper
    radii = top * np.array([3.0, 0.5, 0.2, 0.05])
    Cs = [0.1, 1.0, 10.0]
    path = _quiet(lambda: radius_path(RobustSVC(), X, y, radii=radii, Cs=Cs))
    assert [s["route"] for s in path.stats[2]][:1] == ["threshold"]  # the third row starts at its constant point
    assert path.stats[2][1].get("warm_start") == "working set"
    for i, j in np.ndindex(len(Cs), radii.size):
        cold = _quiet(lambda: RobustSVC(C=Cs[i], radius=radii[j]).fit(X, y))
        assert _within_gaps(path.objectives[i, j], path.gaps_abs[i, j], cold.objective_, cold.solver_stats_["gap_abs"])


@pytest.mark.parametrize("name, seed", [("magic", 3), ("gauss", 4)])
def test_a_default_path_on_the_benchmark_families_equals_cold_fits(name, seed):
    """The benchmark's instances (a magic subsample, two Gaussian classes): every point of the default path (the
    constant one, the cold one after it, the warm-started ones) is certified and equals the cold fit at its radius
    within the two certified gaps, its weights within the strong-convexity radius of each."""
    X, y = _family(name, np.random.default_rng(seed))
    path = _quiet(lambda: radius_path(RobustSVC(), X, y, n_radii=8))
    assert np.all(path.gaps <= 1e-6)
    assert sum(s.get("warm_start") == "working set" for s in path.stats[0]) >= 4
    for j, r in enumerate(path.radii):
        cold = _quiet(lambda: RobustSVC(radius=r).fit(X, y))
        ga, gb = path.gaps_abs[0, j], cold.solver_stats_["gap_abs"]
        assert _within_gaps(path.objectives[0, j], ga, cold.objective_, gb)
        assert np.linalg.norm(path.coefs[0, j] - cold.coef_.ravel()) <= np.sqrt(2 * ga) + np.sqrt(2 * gb) + 1e-9


@pytest.mark.parametrize("seed", range(12))
def test_the_minimum_norm_point_of_the_capped_simplex_is_optimal(seed):
    """:func:`min_norm_capped` on a family of small problems (the sum K from 1 to all columns, columns in general or
    clustered position, the origin inside the polytope or outside): ``a`` is feasible, no vertex of the polytope is
    closer to the origin along ``x = c + B a`` than ``x`` itself (Wolfe's optimality condition, ``x'q >= ||x||^2`` up
    to its tolerance; or ``x`` is the origin up to rounding) and ``||x||`` is no more than the conic program's value
    (to that program's accuracy)."""
    from rsvm_conic.solvers.zero_threshold import _capped_norm_program, min_norm_capped

    rng = np.random.default_rng(seed)
    n, M = int(rng.integers(2, 8)), int(rng.integers(5, 400))
    K = int(rng.choice([1, M, int(rng.integers(1, M + 1))]))
    B = rng.standard_normal((n, M)) * rng.uniform(0.1, 10.0, n)[:, None] + rng.standard_normal((n, 1)) * seed
    c = -K * B.mean(1) + rng.standard_normal(n) * rng.uniform(0.0, 30.0) * np.sqrt(K)
    a = min_norm_capped(c, B, K)
    assert np.all(a >= -1e-12) and np.all(a <= 1 + 1e-12) and abs(a.sum() - K) <= 1e-9 * K
    x = c + B @ a
    g = x @ B
    best = g[np.argsort(g)[:K]].sum() + x @ c  # min over the polytope of x'q
    scale = np.abs(c).sum() + np.abs(B).sum()  # bounds the norm of every vertex
    assert np.linalg.norm(x) <= 1e3 * EPS * scale or x @ x - best <= 1e-8 * (x @ x)  # the origin reached, or optimal
    ref = _capped_norm_program(c, B, np.eye(n), K)
    assert np.linalg.norm(x) <= np.linalg.norm(c + B @ ref) * (1 + 1e-6) + 1e3 * EPS * scale  # Clarabel's accuracy


@pytest.mark.parametrize("name, seed", [("magic", 0), ("magic", 1), ("gauss", 2), ("gauss", 3)])
def test_the_default_grid_threshold_is_bracketed_to_rounding(name, seed):
    """On the benchmark's families the threshold radius's certified bracket (``w != 0`` below ``lower``, the dual
    point certifying ``w = 0`` from ``upper``) is as narrow as rounding allows, so the default grid's first radius is
    the threshold itself."""
    X, y = _family(name, np.random.default_rng(seed))
    zt = RobustSVC().radius_threshold(X, y)
    assert zt.programs == 1 and zt.dual is not None
    assert zt.upper - zt.lower <= 1e-9 * zt.upper


@pytest.mark.parametrize("name, seed, weighted", [("magic", 0, False), ("magic", 1, True), ("gauss", 2, False)])
def test_the_wasserstein_threshold_is_the_minimum_norm_to_its_accuracy(name, seed, weighted):
    """``R* = min ||sum_i y_i alpha_i x_i||_2`` over ``0 <= alpha <= pi`` with each class summing to the smaller class's
    share (the Wasserstein SVM's default grid starts there): equal, to a relative 1e-7, to an independent conic model
    of the same problem with the weights scaled to 1 per sample (so that the solver's absolute feasibility tolerance is
    small against them)."""
    import cvxpy as cp

    from rsvm_conic.solvers.zero_threshold import wasserstein_zero_threshold

    rng = np.random.default_rng(seed)
    X, y = _family(name, rng)
    y = np.where(y == np.unique(y)[1], 1.0, -1.0)
    weight = rng.uniform(0.2, 2.0, y.size) if weighted else np.ones(y.size)
    pi = weight / weight.sum()
    R = wasserstein_zero_threshold(X, y, pi, 2.0)
    pos = y > 0
    half = min(weight[pos].sum(), weight[~pos].sum())
    alpha = cp.Variable(y.size, nonneg=True)
    cons = [alpha <= weight, cp.sum(alpha[np.flatnonzero(pos)]) == half, cp.sum(alpha[np.flatnonzero(~pos)]) == half]
    ref = cp.Problem(cp.Minimize(cp.norm(X.T @ cp.multiply(y, alpha), 2)), cons)
    ref.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    assert abs(R - ref.value / weight.sum()) <= 1e-7 * R
    if not weighted:
        assert WassersteinSVC().radius_threshold(X, y).upper == pytest.approx(R, rel=1e-12)


def test_a_path_hashes_its_data_once_and_a_fit_after_it_hashes_again(monkeypatch):
    """Every fit of a path gets the same, unmodified objects: their key (a hash of every byte) is computed once per path
    (its default grid's threshold included); a fit after the path (the data possibly modified in place) hashes them
    again and sees the change."""
    import hashlib

    from rsvm_conic.estimators import linear

    calls, blake2b = [], hashlib.blake2b

    def counted(*args, **kwargs):
        calls.append(1)
        return blake2b(*args, **kwargs)

    monkeypatch.setattr(linear.hashlib, "blake2b", counted)
    _, X, y = _data(6, L=300)
    radii = RobustSVC().radius_threshold(X, y).upper * np.array([0.5, 0.2, 0.1, 0.05])
    calls.clear()
    path = _quiet(lambda: radius_path(RobustSVC(), X, y, radii=radii))
    assert len(calls) == 1 and linear.PATH_DATA.get() is None
    calls.clear()
    default = _quiet(lambda: radius_path(RobustSVC(C=2.0), X, y, n_radii=4))  # its grid's threshold included
    assert len(calls) == 1 and linear.PATH_DATA.get() is None and np.all(default.gaps <= 1e-6)
    est = RobustSVC(radius=radii[-1], warm_start=True).fit(X, y)
    X[:, 0] *= 2.0  # in place: a warm fit must not take it for the previous data
    calls.clear()
    est.fit(X, y)
    assert len(calls) == 1 and est.solver_stats_.get("warm_start") is None
    cold = RobustSVC(radius=radii[-1]).fit(X, y)
    assert _within_gaps(est.objective_, est.solver_stats_["gap_abs"], cold.objective_, cold.solver_stats_["gap_abs"])
    assert np.all(path.gaps <= 1e-6)


@pytest.mark.parametrize("name, seed, share", [("magic", 0, 0.92), ("magic", 1, 0.92), ("gauss", 2, 1.0)])
def test_the_warm_start_complementarity_follows_the_last_step(name, seed, share, monkeypatch):
    """The warm start's complementarity is the last step's relative change of the weights (clipped to [0.003, 0.1],
    :func:`~rsvm_conic.solvers.working_set.warm_mu`): on the benchmark's families the default path's warm points need
    fewer interior-point iterations in total than with 0.1 at every point (magic: at least 8 % fewer), every point
    certified."""
    from rsvm_conic.estimators import linear
    from rsvm_conic.solvers.working_set import WARM_MU

    X, y = _family(name, np.random.default_rng(seed))

    def warm_iterations():
        path = _quiet(lambda: radius_path(RobustSVC(), X, y, n_radii=20))
        assert np.all(path.gaps <= 1e-6)
        return sum(s["iterations"] for s in path.stats[0] if s.get("warm_start") == "working set")

    adaptive = warm_iterations()
    monkeypatch.setattr(linear, "warm_mu", lambda step: WARM_MU, raising=False)
    assert adaptive <= share * warm_iterations()


@pytest.mark.parametrize("name, seed", [("magic", 0), ("magic", 1), ("magic", 2)])
def test_a_working_set_too_large_to_pay_is_solved_whole_from_the_warm_start(name, seed):
    """Just below the constant radius most samples sit near the margin of a small ``w``: where the working set holds
    more than :data:`~rsvm_conic.solvers.working_set.MAX_SHARE` of the samples, the whole problem is solved from the
    warm start at the previous point (not cold): every point after the first non-constant one is warm-started, the
    whole-problem ones in fewer iterations than the cold fit at their radius, every point certified and equal to
    that cold fit within the two gaps."""
    X, y = _family(name, np.random.default_rng(seed))
    path = _quiet(lambda: radius_path(RobustSVC(), X, y, n_radii=20))  # the benchmark's grid
    stats = path.stats[0]
    assert [s["route"] for s in stats[:2]] == ["threshold", "ipm"] and stats[1].get("warm_start") is None
    assert all(s.get("warm_start") == "working set" for s in stats[2:])
    whole = [j for j, s in enumerate(stats) if s.get("warm_whole")]
    assert whole and whole[0] == 2
    for j, r in enumerate(path.radii):
        cold = _quiet(lambda: RobustSVC(radius=r).fit(X, y))
        assert stats[j]["status"] == "optimal" and path.gaps[0, j] <= 1e-6
        assert _within_gaps(path.objectives[0, j], path.gaps_abs[0, j], cold.objective_, cold.solver_stats_["gap_abs"])
        if j in whole:
            assert stats[j]["iterations"] < cold.solver_stats_["iterations"], (j, stats[j], cold.solver_stats_)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_step_in_C_does_not_set_the_next_radius_steps_complementarity(seed, monkeypatch):
    """The warm start's complementarity follows the last step along the radius (:func:`warm_mu`); a step in C (a
    cross-validation's next row of the path, entered from its neighbour in C) says nothing about the next radius
    step: the fit after it starts at :data:`~rsvm_conic.solvers.working_set.WARM_MU`, and is certified."""
    from rsvm_conic.estimators import linear
    from rsvm_conic.solvers.working_set import WARM_MU

    X, y = _family("magic", np.random.default_rng(seed))
    top = RobustSVC().radius_threshold(X, y).upper
    seen = []
    real = linear.working_set_ipm
    monkeypatch.setattr(linear, "working_set_ipm", lambda *a, **k: seen.append(k["mu"]) or real(*a, **k))
    est = RobustSVC(C=1.0, radius=0.3 * top, warm_start=True).fit(X, y)
    est.set_params(radius=0.2 * top).fit(X, y)  # a radius step: its change sets the next start
    est.set_params(C=10.0).fit(X, y)  # a step in C, started from the radius step's estimate
    seen.clear()
    est.set_params(radius=0.1 * top).fit(X, y)
    assert seen == [WARM_MU] and est.solver_stats_["status"] == "optimal"
    cold = RobustSVC(C=10.0, radius=0.1 * top).fit(X, y)
    assert _within_gaps(est.objective_, est.solver_stats_["gap_abs"], cold.objective_, cold.solver_stats_["gap_abs"])


@pytest.mark.parametrize("name, seed", [("magic", 5), ("magic", 6), ("gauss", 7)])
def test_a_later_row_of_C_starts_each_point_from_the_better_of_its_two_neighbours(name, seed, monkeypatch):
    """Each point of a later row of C may start from its neighbour along the radius (the previous fit) or from the
    previous C's point at its radius; the one of lower objective at the point's parameters is taken.  On the
    benchmark's families the rows after the first then need fewer interior-point iterations than from the radius
    neighbour alone (the start without the other C's point: ``_fit_from`` removed), and every point equals its cold
    fit within the certified gaps."""
    from rsvm_conic.estimators import linear

    X, y = _family(name, np.random.default_rng(seed))
    top = RobustSVC().radius_threshold(X, y).upper
    radii, Cs = top * 0.5 ** np.arange(1, 9), [0.1, 1.0, 10.0]

    def later_rows():
        path = _quiet(lambda: radius_path(RobustSVC(), X, y, radii=radii, Cs=Cs))
        assert np.all(path.gaps <= 1e-6)
        return path, sum(s["iterations"] for row in path.stats[1:] for s in row)

    path, both = later_rows()
    monkeypatch.delattr(linear._LinearSVCBase, "_fit_from", raising=False)
    _, radius_only = later_rows()
    assert both < radius_only
    for i, j in [(1, 0), (1, radii.size - 1), (2, 0), (2, radii.size // 2)]:
        cold = RobustSVC(C=Cs[i], radius=radii[j]).fit(X, y)
        assert _within_gaps(path.objectives[i, j], path.gaps_abs[i, j], cold.objective_, cold.solver_stats_["gap_abs"])
