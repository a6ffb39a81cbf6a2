"""The interior point on Dask row blocks (rsvm_conic.solvers.ipm.row_block_ipm) against the in-memory one.

Same model, same iterations: every kind of uncertainty (shared, grouped with per-sample scales, per-sample
diagonal and full factors, nominal, chance-constrained) must give the in-memory objective to 1e-8
(relative) with a certified gap, on uneven row chunks.  Runs on Dask's local threads (fast); the
distributed cluster and on-disk stores are tests/test_dask_cluster.py and tests/test_dask_store.py.
"""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from rsvm_conic.estimators import ChanceConstrainedSVC, NominalSVC, RobustSVC  # noqa: E402
from rsvm_conic.formulations.chance import ChanceConstrainedProblem  # noqa: E402
from rsvm_conic.formulations.nominal import NominalProblem  # noqa: E402
from rsvm_conic.formulations.robust import RobustProblem  # noqa: E402
from rsvm_conic.certify.projections import project_dual_set  # noqa: E402
from rsvm_conic.exceptions import SolverError, SolverWarning  # noqa: E402
from rsvm_conic.solvers.ipm.kkt import centred_gram  # noqa: E402
from rsvm_conic.solvers.ipm.robust_svm import robust_svm_ipm  # noqa: E402
from rsvm_conic.solvers.ipm.row_blocks import combine, project_dual_set_rows  # noqa: E402
from rsvm_conic.uncertainty.sets import UncertaintySet  # noqa: E402

CHUNKS = (90, 130, 41, 200, 139)  # uneven row chunks, L = 600


def _rows(a):
    return da.from_array(a, chunks=(CHUNKS,) + a.shape[1:])


def _data(seed, L=600, n=6, shift=0.8):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(L) < 0.5, 1.0, -1.0)
    X = rng.normal(size=(L, n)) + shift * y[:, None] / np.sqrt(n)
    return rng, X, y


def _uncertainty(kind, rng, y, n, lazy):
    L = y.shape[0]
    wrap = _rows if lazy else (lambda a: a)
    if kind == "shared":
        return dict(Sigma=np.diag(rng.uniform(0.1, 1.0, n)), radius=0.5)
    if kind == "shared_full":
        B = rng.normal(size=(n, n)) / np.sqrt(n)
        return dict(Sigma=B @ B.T, radius=0.7)
    if kind in ("class", "class_zero"):
        scale = rng.uniform(0.5, 1.5, L)
        if kind == "class_zero":
            scale[::7] = 0.0  # samples without uncertainty inside the groups
        labels = np.where(y > 0, 7, 3)
        return dict(
            Sigma=np.stack([np.diag(rng.uniform(0.1, 1.0, n)), 0.3 * np.eye(n)]),
            groups=wrap(labels),
            sample_scale=wrap(scale),
            radius=0.5,
        )
    if kind == "sample":
        return dict(Sigma=wrap(rng.uniform(0.01, 0.6, (L, n))), groups="sample", radius=0.8)
    if kind == "sample_full":
        return dict(factor=wrap(rng.normal(size=(L, n, n)) * 0.3), radius=0.6)
    raise AssertionError(kind)


KINDS = ["shared", "shared_full", "class", "class_zero", "sample", "sample_full"]


def _same_iterates(mem, dsk, rel=1e-9):
    """The two routes ran the same iterations: the same status and count, and at every iteration the same pcost,
    dcost and gap ``s'z`` to ``rel`` of that iteration's objective scale ``max(1, |pcost|)`` (both routes run the
    one main loop, :func:`~rsvm_conic.solvers.ipm.engine.interior_point`, and differ in summation order only; the
    gap itself ends near the costs' rounding, so it is compared on their scale).  Measured on this file's cases:
    within 1e-13 (L = 600) and 2e-11 (3000 x 20)."""
    assert (dsk["status"], dsk["iterations"]) == (mem["status"], mem["iterations"])
    lm, ld = mem["log"], dsk["log"]
    assert len(ld) == len(lm) == mem["iterations"] + 1
    scale = np.maximum(1.0, np.abs([e["pcost"] for e in lm]))
    for key in ("pcost", "dcost", "gap"):
        diff = np.abs(np.array([e[key] for e in ld]) - [e[key] for e in lm])
        assert np.all(diff <= rel * scale), (key, diff / scale)


@pytest.mark.parametrize("kind", KINDS)
def test_dask_route_equals_memory(kind):
    """Grouped and per-sample ellipsoids: the same iterations and objective (1e-8), certified, on Dask."""
    rng, X, y = _data(10 + KINDS.index(kind))
    n = X.shape[1]
    state = rng.bit_generator.state
    mem = RobustProblem(X, y, UncertaintySet(**_uncertainty(kind, rng, y, n, lazy=False)), C=1.0).solve("ipm")
    rng.bit_generator.state = state
    f = RobustProblem(_rows(X), _rows(y), UncertaintySet(**_uncertainty(kind, rng, y, n, lazy=True)), C=1.0)
    assert not f.samples.in_memory and f.backends == ("ipm", "sgd", "prox") and f.auto_routes() == ("ipm",)
    sol = f.solve("auto")
    assert sol.backend == "ipm" and sol.status == "optimal" and sol.certificate.gap_rel <= 1e-6
    assert sol.objective == pytest.approx(mem.objective, rel=1e-8)
    assert sol.info["iterations"] == mem.info["iterations"]
    _same_iterates(mem.info, sol.info)
    np.testing.assert_allclose(sol["w"], mem["w"], rtol=1e-6, atol=1e-8)
    assert sol.info["passes"] >= 3 * sol.info["iterations"]
    # nothing of size L reached the client: each pass returned O(n^2 + k n) numbers
    assert sol.info["max_fetched_bytes"] < 8 * 4 * (n + 1) ** 2
    alpha = sol.info["alpha"]
    assert isinstance(alpha, da.Array) and alpha.chunks == (CHUNKS,)
    np.testing.assert_allclose(alpha.compute(), mem.info["alpha"], rtol=1e-5, atol=1e-7 * f.C)


def _two_groups(L, n, seed):
    """Issue 36's family: X standard normal, ``y = sign(X w0 + 0.3 noise)``, one ellipsoid per class (``0.05 I``,
    ``0.1 I``), radius 0.5; ``(X, y, groups, Sigma)``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((L, n))
    w0 = rng.standard_normal(n)
    y = np.sign(X @ w0 + 0.3 * rng.standard_normal(L))
    return X, y, (y > 0).astype(int), np.stack([0.05 * np.eye(n), 0.1 * np.eye(n)])


def _every_chunking_gives_the_memory_iterates(L, seed, chunkings):
    """The in-memory interior point and the Dask one on each row chunking: all certified, the same iterations, and
    the same iterates to rounding.  The routes sum in different orders, and the last iterations amplify rounding
    (measured: w within 1e-11 to 1e-9 relative, each iteration's primal value within 2e-12 to 1e-11); asserted:
    w and b within 1e-7 of the largest entry of w, the primal values within 1e-9, the objective within 1e-12."""
    X, y, g, Sigma = _two_groups(L, 20, seed)
    mem = RobustProblem(X, y, UncertaintySet(Sigma=Sigma, groups=g, radius=0.5), C=1.0).solve("ipm")
    assert mem.status == "optimal"
    pcost = np.array([e["pcost"] for e in mem.info["log"]])
    scale = np.abs(mem.values["w"]).max()
    for chunks in chunkings:
        rows = lambda a: da.from_array(a, chunks=(chunks,) + a.shape[1:])  # noqa: E731
        f = RobustProblem(rows(X), rows(y), UncertaintySet(Sigma=Sigma, groups=rows(g), radius=0.5), C=1.0)
        sol = f.solve("ipm")
        assert sol.status == "optimal" and sol.certificate.gap_rel <= 1e-7, chunks
        assert sol.info["iterations"] == mem.info["iterations"], chunks
        _same_iterates(mem.info, sol.info)
        np.testing.assert_allclose([e["pcost"] for e in sol.info["log"]], pcost, rtol=1e-9, err_msg=str(chunks))
        np.testing.assert_allclose(sol.values["w"], mem.values["w"], rtol=0, atol=1e-7 * scale, err_msg=str(chunks))
        assert sol.values["b"] == pytest.approx(mem.values["b"], rel=0, abs=1e-7 * max(scale, 1.0))
        assert sol.objective == pytest.approx(mem.objective, rel=1e-12)


def test_every_chunking_gives_the_memory_iterates():
    """Pinned past failure (issue 36, item 2, a smaller instance of its family): in memory optimal in 20 iterations,
    while one chunk of 3000 rows ended with a ValueError from the Cholesky solve (a NaN right-hand side) and chunks
    of 750 rows as a numerical error after 26 iterations; 375-row chunks and uneven ones were optimal.  The last
    iterations' corrector solves had lost most of their digits and one refinement step did not restore them, in
    both routes: which summation order ended below the tolerance was chance."""
    _every_chunking_gives_the_memory_iterates(3000, 19, [(3000,), (750,) * 4, (428, 1000, 1572)])


@pytest.mark.long
def test_every_chunking_gives_the_memory_iterates_issue_instance():
    """Issue 36's instance (40000 x 20): in memory optimal in 21 iterations, while chunks of 5000 rows and one chunk
    of 40000 ended as numerical errors after 44 / 31 iterations (pres 3e-3, dres 0.14)."""
    _every_chunking_gives_the_memory_iterates(
        40000, 2, [(40000,), (5000,) * 8, (10000,) * 4, (7000, 13000, 9000, 11000)]
    )


def test_both_routes_run_the_one_loop_with_either_centring_rule(monkeypatch):
    """The main loop's options reach both routes: with Mehrotra's centring rule (the predictor's gap from three sums
    that each block returns in the predictor's pass, the grouped cones' added on the client) the in-memory and
    row-block routes still run the same iterations, grouped and per-sample, and the rule changes them."""
    from functools import partial

    from rsvm_conic.solvers.ipm import engine, robust_svm, row_block_ipm

    rng, X, y = _data(15)
    gam = rng.uniform(0.2, 1.0, 600)
    F, g = np.sqrt(rng.uniform(0.1, 1.0, (2, 6))), (y > 0).astype(int)
    Fs = np.sqrt(rng.uniform(0.01, 0.5, (600, 6)))
    for factors, dask_factors, groups in [(F, F, g), (Fs, _rows(Fs), np.arange(600))]:
        logs = {}
        for rule in ("cvxopt", "mehrotra"):
            monkeypatch.setattr(robust_svm, "cone_ipm", partial(engine.cone_ipm, sigma_rule=rule))
            monkeypatch.setattr(row_block_ipm, "interior_point", partial(engine.interior_point, sigma_rule=rule))
            _, mem = robust_svm_ipm(X, y, 1.0, gam, factors, True, groups)
            _, dsk = robust_svm_ipm(_rows(X), _rows(y), 1.0, _rows(gam), dask_factors, True, _rows(groups))
            assert mem["status"] == "optimal"
            _same_iterates(mem, dsk)
            logs[rule] = [e["pcost"] for e in mem["log"]]
        assert logs["cvxopt"][1:3] != logs["mehrotra"][1:3]


def test_passes_per_iteration():
    """The row-block route reads X once for the start point's sums, then per iteration once for the predictor's step,
    once for the corrector's (and once per refinement correction) and once for the step with the sums at the new
    iterate: nothing more (no step needed a back-off here)."""
    rng, X, y = _data(16)
    F, g = np.sqrt(rng.uniform(0.1, 1.0, (2, 6))), (y > 0).astype(int)
    _, info = robust_svm_ipm(_rows(X), _rows(y), 1.0, _rows(np.full(600, 0.5)), F, True, _rows(g))
    corrections = sum(len(e["refine"]) - 1 for e in info["log"] if "refine" in e)
    assert info["passes"] == 1 + 3 * info["iterations"] + corrections


@pytest.mark.parametrize("where", ["predictor", "corrector", "refinement"])
def test_a_nan_in_a_client_solve_ends_the_run_as_numerical_error(where, monkeypatch):
    """A NaN reaching one of the client's Schur solves (the predictor's, the corrector's, a refinement
    correction's) ends the Dask interior point with status "numerical_error", as in memory: a SolverError that
    says so, not the ValueError of scipy's finiteness check (pinned: 3000 x 20 two-group data on one chunk raised
    "array must not contain infs or NaNs" out of the fit)."""
    from rsvm_conic.solvers.ipm import row_block_ipm

    rng, X, y = _data(13)
    F, g = np.sqrt(rng.uniform(0.1, 1.0, (2, 6))), (y > 0).astype(int)
    gam = np.full(600, 0.5)
    solve = row_block_ipm._System.solve
    seen = {"pred": 0, "since": 0, "done": False}

    def poisoned(self, P, prefix, bglob, bz_c):
        if prefix == "p_":
            seen["pred"], seen["since"] = seen["pred"] + 1, 0
            hit = where == "predictor" and seen["pred"] == 3
        else:
            seen["since"] += 1
            hit = (where == "corrector" and seen["pred"] == 3 and seen["since"] == 1) or (
                where == "refinement" and seen["since"] == 2
            )
        if hit and not seen["done"]:
            seen["done"] = True
            P = {**P, prefix + "phi": np.full_like(P[prefix + "phi"], np.nan)}
        return solve(self, P, prefix, bglob, bz_c)

    monkeypatch.setattr(row_block_ipm._System, "solve", poisoned)
    with pytest.raises(SolverError, match="numerical_error"):
        robust_svm_ipm(_rows(X), _rows(y), 1.0, _rows(gam), F, True, _rows(g))
    assert seen["done"]


@pytest.mark.parametrize("pass_name", ["_predictor_pass", "_corrector_pass"])
def test_an_error_reading_the_data_in_a_pass_is_not_a_numerical_error(pass_name, monkeypatch):
    """Only a failed factorisation or solve ends the run as a numerical error: a ValueError raised while a pass reads
    the data (a store's altered chunk, :class:`~rsvm_conic.exceptions.DatasetError`) reaches the caller as it is,
    from every pass of the iteration."""
    from rsvm_conic.exceptions import DatasetError
    from rsvm_conic.solvers.ipm import row_block_ipm

    def damaged(blk, st, plan):
        raise DatasetError("chunk 2 of X is altered")

    monkeypatch.setattr(row_block_ipm, pass_name, damaged)
    rng, X, y = _data(17)
    with pytest.raises(DatasetError, match="altered"):
        robust_svm_ipm(
            _rows(X), _rows(y), 1.0, _rows(np.full(600, 0.5)), np.ones((1, 6)), True, _rows(np.zeros(600, int))
        )


def test_numerical_error_on_standard_data_names_a_dask_route(monkeypatch):
    """On Dask data a numerical error's advice names a route that runs there (``prox``), not Clarabel, and does
    not tell a user with standard-normal columns to standardise them (pinned: issue 36's message did)."""
    from rsvm_conic.solvers.ipm import row_block_ipm

    rng, X, y = _data(14)
    init, calls = row_block_ipm._System.__init__, []

    def failing(self, *args):
        calls.append(1)
        if len(calls) == 3:
            raise np.linalg.LinAlgError("forced")
        init(self, *args)

    monkeypatch.setattr(row_block_ipm._System, "__init__", failing)
    with pytest.raises(SolverError, match="numerical_error") as err:
        robust_svm_ipm(
            _rows(X), _rows(y), 1.0, _rows(np.full(600, 0.5)), np.ones((1, 6)), True, _rows(np.zeros(600, int))
        )
    msg = str(err.value)
    assert "will not help" in msg and "solver='prox'" in msg
    assert "standardise" not in msg and "clarabel" not in msg


def test_nominal_and_chance_equal_memory():
    rng, X, y = _data(3)
    Xd, yd = _rows(X), _rows(y)
    mem, dsk = NominalProblem(X, y, C=2.0).solve("ipm"), NominalProblem(Xd, yd, C=2.0).solve("auto")
    assert dsk.objective == pytest.approx(mem.objective, rel=1e-8) and dsk.certificate.status == "optimal"
    S = np.stack([np.diag(rng.uniform(0.1, 1.0, 6)), 0.2 * np.eye(6)])
    g = (y > 0).astype(int)
    mem = ChanceConstrainedProblem(X, y, S, g, C=1.0, epsilon=0.3, distribution="gaussian").solve("ipm")
    dsk = ChanceConstrainedProblem(Xd, yd, S, _rows(g), C=1.0, epsilon=0.3, distribution="gaussian").solve("ipm")
    assert dsk.objective == pytest.approx(mem.objective, rel=1e-8) and dsk.certificate.status == "optimal"


def test_estimators_fit_dask_inputs():
    """Estimators take Dask X, y (any two labels), sigma_index and sample_radius: same fit as in memory."""
    rng, X, y = _data(5, L=600, n=5)
    labels = np.where(y > 0, "pos", "neg")
    Sigma = np.stack([np.diag(rng.uniform(0.1, 1.0, 5)), 0.3 * np.eye(5)])
    groups, radius = (y > 0).astype(int), rng.uniform(0.5, 1.5, 600)
    for est, kw, kwd in [
        (
            RobustSVC(C=1.0, radius=0.5),
            dict(Sigma=Sigma, sigma_index=groups, sample_radius=radius),
            dict(Sigma=Sigma, sigma_index=_rows(groups), sample_radius=_rows(radius)),
        ),
        (
            ChanceConstrainedSVC(C=1.0, epsilon=0.4, distribution="gaussian"),
            dict(Sigma=Sigma, sigma_index=groups),
            dict(Sigma=Sigma, sigma_index=groups),
        ),
        (NominalSVC(C=3.0), {}, {}),
    ]:
        ref = est.fit(X, labels, **kw)
        obj, coef = ref.objective_, ref.coef_.copy()
        fit = est.fit(_rows(X), _rows(labels), **kwd)
        assert fit.objective_ == pytest.approx(obj, rel=1e-8)
        np.testing.assert_allclose(fit.coef_, coef, rtol=1e-6, atol=1e-9)
        assert list(fit.classes_) == ["neg", "pos"] and fit.n_features_in_ == 5
        assert fit.solver_stats_["route"] == "ipm" and fit.solver_stats_["status"] == "optimal"
        scores = fit.decision_function(_rows(X))
        assert isinstance(scores, da.Array)
        np.testing.assert_allclose(scores.compute(), fit.decision_function(X))


def test_public_solver_takes_dask_arrays():
    rng, X, y = _data(6)
    gam = rng.uniform(0.2, 1.0, 600)
    F, g = np.sqrt(rng.uniform(0.1, 1.0, (2, 6))), (y > 0).astype(int)
    v, info = robust_svm_ipm(X, y, 1.0, gam, F, True, g)
    vd, infod = robust_svm_ipm(_rows(X), _rows(y), 1.0, _rows(gam), F, True, _rows(g))
    assert infod["status"] == "optimal" and infod["pcost"] == pytest.approx(info["pcost"], rel=1e-8)
    np.testing.assert_allclose(vd["t"], v["t"], rtol=1e-6)
    np.testing.assert_allclose(vd["xi"].compute(), v["xi"], rtol=1e-5, atol=1e-7)
    Xbad = X.copy()
    Xbad[17, 2] = np.nan
    with pytest.raises(ValueError, match="finite 2-D"):
        robust_svm_ipm(_rows(Xbad), _rows(y), 1.0, _rows(gam), F, True, _rows(g))
    with pytest.raises(ValueError, match="nonnegative"):
        robust_svm_ipm(_rows(X), _rows(y), 1.0, _rows(-gam), F, True, _rows(g))
    with pytest.raises(ValueError, match="labels in"):
        robust_svm_ipm(_rows(X), _rows(np.abs(y)), 1.0, _rows(gam), F, True, _rows(g))
    with pytest.raises(SolverError, match="max_iter"):
        robust_svm_ipm(_rows(X), _rows(y), 1.0, _rows(gam), F, True, _rows(g), max_iter=2)
    with pytest.warns(SolverWarning, match="max_iter"):
        _, info = robust_svm_ipm(
            _rows(X), _rows(y), 1.0, _rows(gam), F, True, _rows(g), max_iter=2, accept_inaccurate=True
        )
    assert info["status"] == "max_iter"


def test_validation_is_lazy_and_clear():
    rng, X, y = _data(7, L=600, n=4)
    Xbad = X.copy()
    Xbad[[3, 400], 1] = np.inf
    with pytest.raises(ValueError, match="contains 2 NaN or infinite"):
        RobustSVC().fit(_rows(Xbad), _rows(y))
    with pytest.raises(ValueError, match="more than 2 classes"):
        RobustSVC().fit(_rows(X), _rows(np.arange(600) % 3))
    with pytest.raises(ValueError, match="single class"):
        RobustSVC().fit(_rows(X), _rows(np.ones(600)))
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        RobustSVC().fit(_rows(X)[_rows(y) > 0], _rows(y)[_rows(y) > 0])
    with pytest.raises(ValueError, match="one entry per row"):
        RobustSVC().fit(_rows(X), y[:10])
    with pytest.raises(ValueError, match="p = 2"):
        RobustSVC(norm=1).fit(_rows(X), _rows(y))
    with pytest.raises(ValueError, match="cannot be solved with backend 'clarabel'"):
        RobustSVC(solver="clarabel").fit(_rows(X), _rows(y))
    with pytest.raises(ValueError, match="gamma_i > 0"):
        RobustSVC().fit(
            _rows(X),
            _rows(y),
            Sigma=_rows(np.ones((600, 4))),
            sigma_index="sample",
            sample_radius=np.r_[0.0, np.ones(599)],
        )
    with pytest.raises(ValueError, match="sample_radius must hold 600 nonnegative"):
        RobustSVC().fit(_rows(X), _rows(y), sample_radius=_rows(-np.ones(600)))
    with pytest.raises(ValueError, match="sample_radius must hold 600 nonnegative"):
        RobustSVC().fit(_rows(X), _rows(y), sample_radius=-np.ones(600))
    with pytest.raises(ValueError, match="sigma_index was given without Sigma"):
        RobustSVC().fit(_rows(X), _rows(y), sigma_index=_rows(np.arange(600) % 2))
    with pytest.raises(ValueError, match="sigma_index was given without Sigma"):
        RobustSVC().fit(_rows(X), _rows(y), sigma_index="sample")
    with pytest.raises(ValueError, match="no CVXPY model"):
        RobustProblem(_rows(X), _rows(y)).problem
    # several column chunks and integer data are fine (rechunked and cast lazily)
    Xi = np.round(3 * X).astype(int)
    ref = NominalSVC(C=1.0).fit(Xi.astype(float), y).objective_
    fit = NominalSVC(C=1.0).fit(da.from_array(Xi, chunks=(150, 2)), _rows(y))
    assert fit.objective_ == pytest.approx(ref, rel=1e-8)


def test_centred_gram_combines_exactly_across_blocks():
    """The Chan combination of blocks' centred Gram matrices is the centred Gram matrix of all rows."""
    rng = np.random.default_rng(8)
    L, n, k = 500, 4, 3
    X, y = rng.normal(size=(L, n)), np.where(rng.random(L) < 0.5, 1.0, -1.0)
    rho, gam, gi = rng.uniform(0.1, 2.0, L), rng.uniform(0.0, 1.0, L), rng.integers(0, k, L)
    gam[:40] = 0.0

    def part(sl):
        ag = np.bincount(gi[sl], weights=rho[sl] * gam[sl] ** 2, minlength=k)
        sa = np.zeros((k, n + 1))
        np.add.at(sa[:, :n], gi[sl], (rho * gam * y)[sl, None] * X[sl])
        sa[:, n] = np.bincount(gi[sl], weights=(rho * gam * y)[sl], minlength=k)
        m = np.divide(sa, ag[:, None], out=np.zeros_like(sa), where=ag[:, None] > 0)
        return {"centred": (ag, sa, centred_gram(X[sl], y[sl], rho[sl], gam[sl], gi[sl], m))}

    whole = part(slice(None))["centred"]
    cuts = [0, 30, 31, 200, 360, 500]
    out = combine(*[part(slice(a, b)) for a, b in zip(cuts[:-1], cuts[1:])])["centred"]
    np.testing.assert_allclose(out[0], whole[0], rtol=1e-12)
    np.testing.assert_allclose(out[2], whole[2], rtol=1e-10, atol=1e-10)


def test_projection_on_row_blocks_is_the_projection():
    rng = np.random.default_rng(9)
    for C in (0.5, 10.0):
        y = np.where(rng.random(600) < 0.3, 1.0, -1.0)
        v = rng.normal(size=600) * C + 0.3 * C
        a, passes = project_dual_set_rows(_rows(np.zeros((600, 1))), _rows(v), _rows(y), C)
        a = a.compute()
        np.testing.assert_allclose(a, project_dual_set(v, y, C), atol=1e-12 * C)
        assert abs(y @ a) <= 1e-9 * C and a.min() >= 0 and a.max() <= C and passes <= 10


def test_certificate_pieces_equal_memory():
    """objective_wb and dual_value (the certificate) on row blocks equal the in-memory ones at any point."""
    rng, X, y = _data(11)
    for kind in ("class", "sample"):
        state = rng.bit_generator.state
        fm = RobustProblem(X, y, UncertaintySet(**_uncertainty(kind, rng, y, 6, lazy=False)), C=0.7)
        rng.bit_generator.state = state
        fd = RobustProblem(_rows(X), _rows(y), UncertaintySet(**_uncertainty(kind, rng, y, 6, lazy=True)), C=0.7)
        w, b, alpha = rng.normal(size=6), 0.3, rng.uniform(0, 0.7, 600)
        assert fd.objective_wb(w, b) == pytest.approx(fm.objective_wb(w, b), rel=1e-12)
        assert fd.dual_value(_rows(alpha), w) == pytest.approx(fm.dual_value(alpha, w), rel=1e-9)


def test_check_instance_dask_route_agrees_with_memory():
    """``rsvm-conic check robust-outofcore-sample``: both routes optimal and within 1e-8."""
    import problems
    from rsvm_conic.runner import check_instance

    reports, ok = check_instance(problems.get("INSTANCES", "robust-outofcore-sample"))
    assert ok, reports
    assert [r.backend for r in reports] == ["ipm", "ipm_dask"] and all(r.status == "optimal" for r in reports)
    assert reports[1].agreement == 1.0


def test_sample_layouts_give_the_same_sums():
    """The two layouts of :mod:`rsvm_conic.solvers.samples` give the same sums a formulation asks for (the largest
    squared norm, the rounding floor's sums, the routes, the dual value with and without an improved ``u``), to
    rounding scaled by the data's magnitude; the labels check names what to fix in both."""
    from rsvm_conic.solvers.samples import InMemory, RowBlocks, samples_of

    rng, X, y = _data(11)
    X = 30.0 * X  # magnitudes away from 1: the tolerances below scale with them
    mem, rows = samples_of(X, y), samples_of(_rows(X), _rows(y))
    assert isinstance(mem, InMemory) and isinstance(rows, RowBlocks)
    assert mem.routes is None and rows.routes == ("ipm", "sgd", "prox")
    assert rows.max_sq_norm() == pytest.approx(mem.max_sq_norm(), rel=1e-13)
    alpha, w = rng.uniform(-0.5, 1.5, 600), rng.normal(size=6)
    for got, want in zip(rows.rounding_sums(_rows(alpha), w), mem.rounding_sums(alpha, w)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.max(np.abs(want)))
    with pytest.raises(ValueError, match="one -1/\\+1 label per row"):
        samples_of(X, y + 1.0, labels_message="y must hold one -1/+1 label per row")
    with pytest.raises(ValueError, match="one -1/\\+1 label per row"):
        samples_of(_rows(X), _rows(y + 1.0), labels_message="y must hold one -1/+1 label per row")
    unc_set = UncertaintySet(Sigma=np.stack([np.eye(6), 0.2 * np.eye(6)]), groups=(y > 0).astype(int), radius=0.4)
    fm = RobustProblem(X, y, unc_set, C=0.3)
    unc_rows = rows.resolve(UncertaintySet(Sigma=unc_set.Sigma, groups=_rows((y > 0).astype(int)), radius=0.4))
    calls = []

    def improve(v, s, unc, U):
        calls.append(U.shape)
        return U

    for improve_u in (None, improve):
        got = rows.dual_value(_rows(alpha), w, 0.3, unc_rows, improve_u)
        want = fm.dual_value(alpha, w)
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12 * 0.3 * np.max(np.abs(X)) ** 2 * 600)
    assert calls == [(2, 6)]
