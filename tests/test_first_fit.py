"""The first fit in a fresh process: small data run numpy twins of the compiled kernels (nothing compiled).

* every compiled loop's numpy twin (``rsvm_conic.solvers.ipm.cone_loops_numpy``) against the compiled kernel on random
  inputs of several shapes and magnitudes: the same outputs and returns, to a tolerance scaled to the inputs;
* the numpy symmetry scan and low-rank residual of ``_validation`` against the compiled ones;
* a small robust fit solved on the numpy path agrees with the compiled path (certified, same optimum);
* a fresh process with an empty numba cache fits the README's example without importing numba.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import textwrap
import zlib

import numpy as np
import pytest

from rsvm_conic import _validation as V
from rsvm_conic.solvers.ipm import cone_loops as rk
from rsvm_conic.solvers.ipm import cone_loops_numpy as rk_numpy

KERNELS = [name for name in rk.__all__ if name != "numpy_path_for"]


def _interior(rng, m, d, s):
    """m second-order-cone rows of dimension d strictly inside the cone, entries of magnitude ``s``."""
    U = rng.standard_normal((m, d)) * s
    U[:, 0] = np.linalg.norm(U[:, 1:], axis=1) + s * rng.uniform(0.1, 2.0, m)
    return U


def _nt_point(rng, m, d):
    """NT scaling points: ``w0 = sqrt(1 + ||w1||^2)`` (determinant 1)."""
    W = rng.standard_normal((m, d))
    W[:, 0] = np.sqrt(1.0 + np.sum(W[:, 1:] ** 2, axis=1))
    return W


def _args(name, rng, L, n, k, s):  # noqa: C901  (one branch per kernel)
    """Valid random arguments of kernel ``name``: L rows of n features in k groups, magnitude ``s``."""
    g = rng.standard_normal
    pos = lambda *shape: rng.uniform(0.1, 2.0, shape) * s  # noqa: E731
    X, y = g((L, n)) * s, rng.choice([-1.0, 1.0], L)
    gidx = rng.integers(0, k, L).astype(np.intp)
    m, d = L, n + 1
    i0 = L // 3
    if name in ("fill_centred_rows", "fill_centred_rows_in"):
        base = [X, y, pos(L), pos(L), gidx, g((k, n + 1)) * s, i0, np.empty((L - i0, n + 1))]
        if name == "fill_centred_rows":
            return base
        return base + [pos(L), pos(L), pos(L), g(L), g(L), g(L), np.zeros(L), g(k), g(n + 1)]
    if name == "group_row_sums":
        return [X, g(L), gidx, k]
    if name == "row_dot":
        return [X, L // 2, g(n)]
    if name == "matvec_pair":
        return [X, g(n), g(L)]
    if name == "matvec_pair_groups":
        return [X, g(n), g(L), g(L), gidx, k]
    if name == "orthant_nt_scaling":
        return [pos(m), pos(m), np.empty(m), np.empty(m) if L % 2 else None]
    if name == "margin_weights":
        return [pos(2 * L + 3), g(L), y]
    if name == "margin_rows_gx":
        return [g(L), y, 0.3 * s, g(L), pos(L), g(k) if L % 2 else np.empty(0), gidx, np.empty(L), np.empty(L)]
    if name == "orthant_max_step":
        return [pos(m), g(m) * s]
    if name in ("soc_jdet",):
        return [g((m, d)) * s]
    if name in ("soc_apply", "soc_apply_sq"):
        return [_nt_point(rng, m, d), pos(m), g((m, d)) * s, bool(L % 2), np.empty((m, d))]
    if name == "soc_add_apply_sq":
        return [_nt_point(rng, m, d), pos(m), g((m, d)) * s, g((m, d)) * s]
    if name == "soc_inv_ninf":
        return [_nt_point(rng, m, d), pos(m), g((m, d)) * s]
    if name == "soc_kkt_rz":
        return [_nt_point(rng, m, d), pos(m), g((m, d)) * s, g((m, d)) * s, g((m, d)) * s]
    if name == "ninf":
        return [g(m) * s]
    if name == "soc_step":
        return [_interior(rng, m, d, s), g((m, d)) * s, 0.1, np.empty((m, d))]
    if name == "soc_step_scaled":
        return [_nt_point(rng, m, d), pos(m), _interior(rng, m, d, s), g((m, d)) * s, 0.1, np.empty((m, d))]
    if name in ("orthant_step", "orthant_step_scaled"):
        head = [pos(m)] if name == "orthant_step_scaled" else []
        return head + [pos(m), g(m) * s, 0.2, np.empty(m)]
    if name == "soc_jprod":
        return [g((m, d)) * s, g((m, d)) * s, np.empty((m, d))]
    if name == "soc_jdiv":
        return [_interior(rng, m, d, s), g((m, d)) * s, np.empty((m, d))]
    if name == "soc_min_step":
        return [_interior(rng, m, d, s), g((m, d)) * s]
    if name == "soc_newton_rhs":
        return [
            _interior(rng, m, d, s),
            g((m, d)) * s,
            g((m, d)) * s,
            0.1 * s * s,
            bool(L % 2),
            _nt_point(rng, m, d),
            pos(m),
            g((m, d)) * s,
            np.empty((m, d)),
            np.empty((m, d)),
        ]
    if name == "orthant_newton_rhs":
        return [pos(m), g(m) * s, g(m) * s, 0.1 * s * s, bool(L % 2), pos(m), g(m) * s, np.empty(m), np.empty(m)]
    if name == "soc_scaled_dirs":
        return [_nt_point(rng, m, d), pos(m), _interior(rng, m, d, s), g((m, d)) * s, g((m, d)) * s, np.empty((m, d))]
    if name == "orthant_scaled_dirs":
        return [pos(m), pos(m), g(m) * s, g(m) * s, np.empty(m)]
    if name == "residual_norms":
        return [g(m) * s, pos(m), g(m) * s, pos(m)]
    if name in ("soc_nt_scaling", "soc_nt_scaling_lam"):
        out = [_interior(rng, m, d, s), _interior(rng, m, d, s), np.empty((m, d)), np.empty(m)]
        return out + ([np.empty((m, d)) if L % 2 else None] if name == "soc_nt_scaling_lam" else [])
    rows = [pos(L), pos(L), pos(L), g(L), g(L), g(L)]  # rho, dm, dx, bzm, bxi, bzx
    if name == "robust_solve_rows_in":
        return [X, y, pos(L), gidx] + rows + [np.empty(L), g(k)]
    if name == "robust_solve_rows_out":
        return [X, y, pos(L), gidx] + rows + [g(L), g(n), 0.2, g(k), np.empty(L), np.empty(L), np.empty(L)]
    if name == "soc_rhs_terms":
        return [_nt_point(rng, m, d), pos(m), pos(m), g((m, d)) * s, np.empty(m), np.empty((m, d - 1))]
    if name == "cone_gx_rows":
        return [g((m, n)) * s, g(n), g(m), np.empty((m, n + 1))]
    if name == "cone_gx_gtz_rows":
        return [g((m, n)) * s, g(n), g(m), g((m, n + 1)) * s, np.empty((m, n + 1))]
    cones = [_nt_point(rng, m, d), pos(m), pos(m), g((m, n)) * s, g((m, n)) * s, g(m), g(m), g(m)]
    if name == "cone_gram_rows":  # wbar, F, M, scale, last, qc, ib2, sw1, sw2, i0, B1, B2, dg
        wbar, _, _, F, M, scale, last, qc = cones
        tail = [pos(m), pos(m), pos(m), i0, np.empty((m - i0, n)), np.empty((m - i0, n + 1)), g(n)]
        return [wbar, F, M, scale, last, qc] + tail
    if name == "cone_rhs_rows":  # wbar, den, ib2, d00, F, M, scale, last, qc, BZ, psi0, ag, hg, r0, acc
        wbar, den, ib2, F, M, scale, last, qc = cones
        return [wbar, den, ib2, g(m), F, M, scale, last, qc, g((m, d)) * s, g(m), g(m), pos(m), np.empty(m), g(n + 1)]
    if name == "cone_back_rows":  # wbar, beta, d00, F, M, scale, last, qc, BZ, psi0, r0, ag, hg, du, dt, Z
        wbar, beta, _, F, M, scale, last, qc = cones
        rest = [g((m, d)) * s, g(m), g(m), g(m), pos(m), g(n + 1), np.empty(m), np.empty((m, d))]
        return [wbar, beta, g(m), F, M, scale, last, qc] + rest
    raise AssertionError(f"no argument builder for {name}")


def _close(a, b, what):
    if isinstance(b, np.ndarray) or isinstance(a, np.ndarray):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        assert a.shape == b.shape, what
        scale = max(1.0, float(np.nanmax(np.abs(b)))) if b.size and not np.all(np.isnan(b)) else 1.0
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11 * scale, equal_nan=True, err_msg=what)
    elif isinstance(b, (bool, np.bool_)):
        assert bool(a) == bool(b), what
    elif isinstance(b, tuple):
        assert isinstance(a, tuple) and len(a) == len(b), what
        for i, (u, v) in enumerate(zip(a, b, strict=True)):
            _close(u, v, f"{what}[{i}]")
    elif b is None:
        assert a is None, what
    else:
        fb, fa = float(b), float(a)
        if np.isinf(fb) or np.isnan(fb):
            assert fa == fb or (np.isnan(fa) and np.isnan(fb)), what
        else:
            assert abs(fa - fb) <= 1e-9 * abs(fb) + 1e-11 * max(1.0, abs(fb)), (what, fa, fb)


def test_every_compiled_loop_has_a_numpy_twin():
    from rsvm_conic._jit import Compiled

    for name in KERNELS:
        fn = getattr(rk, name)
        assert not isinstance(fn, Compiled) or fn.numpy is getattr(rk_numpy, name), name


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize(("L", "n", "k", "s"), [(1, 1, 1, 1.0), (7, 3, 2, 1.0), (40, 6, 3, 1e3), (33, 5, 33, 1e-3)])
def test_numpy_twin_matches_the_compiled_kernel(name, L, n, k, s):
    rng = np.random.default_rng(zlib.crc32(f"{name} {L} {n} {k}".encode()))
    args = _args(name, rng, L, n, k, s)
    a1, a2 = copy.deepcopy(args), copy.deepcopy(args)
    out_np = getattr(rk_numpy, name)(*a1)
    out_c = getattr(rk, name)(*a2)  # outside numpy_paths: the compiled kernel
    _close(out_np, out_c, f"{name}: return")
    for i, (u, v) in enumerate(zip(a1, a2, strict=True)):
        if isinstance(v, np.ndarray):
            _close(u, v, f"{name}: argument {i}")


def test_numpy_twins_propagate_nan_as_the_compiled_kernels():
    v = np.array([1.0, np.nan, -3.0])
    assert np.isnan(rk_numpy.ninf(v)) and np.isnan(rk.ninf(v))
    assert rk_numpy.ninf(np.empty(0)) == rk.ninf(np.empty(0)) == 0.0
    x, d = np.array([1.0, 2.0]), np.array([np.nan, -1.0])
    assert rk_numpy.orthant_max_step(x, d) == rk.orthant_max_step(x, d) == 2.0


def test_numpy_paths_choose_by_size():
    from rsvm_conic._jit import _NUMPY_PATHS

    with rk.numpy_path_for(rk.NUMPY_BELOW - 1):
        assert _NUMPY_PATHS.get()
        with rk.numpy_path_for(rk.NUMPY_BELOW):
            assert not _NUMPY_PATHS.get()
        assert _NUMPY_PATHS.get()
    assert not _NUMPY_PATHS.get()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n", [1, 5, 130])
def test_numpy_symmetry_scan_matches_the_compiled_scan(seed, n):
    rng = np.random.default_rng(seed)
    S = rng.standard_normal((n, n)) * 10.0 ** rng.integers(-3, 4)
    if seed % 2:
        S = S + S.T
    got = V._symmetry_scan_numpy(S)
    want = V._symmetry_scan(S, V._SCAN_TILE)
    assert got[3] == want[3]
    scale = max(1.0, float(np.abs(S).max()))
    np.testing.assert_allclose(got[:3], want[:3], rtol=0, atol=1e-14 * scale)
    S[0, -1] = np.inf
    assert not V._symmetry_scan_numpy(S)[3] and not V._symmetry_scan(S, V._SCAN_TILE)[3]


@pytest.mark.parametrize("seed", range(4))
def test_numpy_low_rank_residual_matches_the_compiled_one(seed):
    rng = np.random.default_rng(seed)
    n, r = 60, 1 + seed
    R = rng.standard_normal((r, n)) * 10.0**seed
    S = R.T @ R + 1e-6 * np.eye(n)
    got, want = V._low_rank_residual_numpy(S, R), V._low_rank_residual(S, R)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * float(np.abs(S).max()) ** 2)


def test_small_robust_fit_on_the_numpy_path_agrees_with_the_compiled_path(monkeypatch):
    from rsvm_conic.datasets.synthetic import make_uncertain_classification
    from rsvm_conic.estimators import RobustSVC

    X, y, Sigma, groups = make_uncertain_classification(300, 8, random_state=0)
    assert X.size < rk.NUMPY_BELOW
    a = RobustSVC(radius=0.5).fit(X, y, Sigma=Sigma, sigma_index=groups)
    monkeypatch.setattr(rk, "NUMPY_BELOW", 0)
    b = RobustSVC(radius=0.5).fit(X, y, Sigma=Sigma, sigma_index=groups)
    for est in (a, b):
        assert est.solver_stats_["route"] == "ipm" and est.solver_stats_["status"] == "optimal"
    tol = 1e-7 * max(1.0, abs(b.objective_))
    assert abs(a.objective_ - b.objective_) <= tol
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-4 * max(1.0, np.abs(b.coef_).max()))


_FRESH = textwrap.dedent(
    """
    import sys, warnings
    from rsvm_conic.datasets.synthetic import make_uncertain_classification
    from rsvm_conic.estimators import {est}
    {data}
    clf = {make}.fit(X, y{kw})
    stats = clf.solver_stats_
    print(stats["route"], stats["status"], "numba" in sys.modules)
    """
)

_README = "X, y, Sigma, groups = make_uncertain_classification(2000, 20, random_state=0)"


@pytest.mark.parametrize(
    ("est", "make", "kw"),
    [
        ("RobustSVC", "RobustSVC(C=1.0, radius=1.0)", ", Sigma=Sigma, sigma_index=groups"),
        ("NominalSVC", "NominalSVC()", ""),
        ("ChanceConstrainedSVC", "ChanceConstrainedSVC()", ", Sigma=Sigma, sigma_index=groups"),
        ("WassersteinSVC", "WassersteinSVC()", ""),
    ],
)
def test_first_fit_in_a_fresh_process_compiles_nothing(tmp_path, est, make, kw):
    """The README's example in a fresh process with an empty numba cache: certified, and numba never imported
    (so nothing was compiled)."""
    code = _FRESH.format(est=est, data=_README, make=make, kw=kw)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    route, status, numba_loaded = out.stdout.split()
    assert (route, status) == ("ipm", "optimal")
    assert numba_loaded == "False"
    assert not any(tmp_path.iterdir())  # nothing written to the numba cache


def test_kernel_validation_of_small_samples_compiles_nothing(tmp_path):
    code = textwrap.dedent(
        """
        import sys
        from rsvm_conic.datasets.bhadra2010 import make_bhadra2010
        from rsvm_conic.estimators import KernelRobustSVC
        data = make_bhadra2010(3, "gaussian", n_per_class=30, n_samples=10, symmetric=True)
        clf = KernelRobustSVC().fit(data.K_samples, data.y)
        print(clf.solver_stats_["status"], "numba" in sys.modules)
        """
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["optimal", "False"]


def test_small_weston_watkins_fit_in_a_fresh_process_compiles_nothing(tmp_path):
    """The user guide's example (90 points, 3 classes): the numpy alm route, certified, numba never imported."""
    code = textwrap.dedent(
        """
        import sys
        from sklearn.datasets import make_blobs
        from rsvm_conic.estimators import WestonWatkinsSVC
        X, y = make_blobs(90, centers=3, cluster_std=1.6, random_state=2)
        clf = WestonWatkinsSVC(C=10.0, kernel="rbf", sigma=1.5).fit(X, y)
        print(clf.solver_, clf.solver_stats_["status"], "numba" in sys.modules)
        """
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["alm", "optimal", "False"]


def _table(rows, n_rows, n_cols):
    """A Markdown table: header, separator, ``n_rows`` rows of ``n_cols`` cells, each ending in pass / miss."""
    assert len(rows) == 2 + n_rows
    cells = [r.strip("|").split("|") for r in rows]
    assert all(len(c) == n_cols for c in cells)
    assert set(rows[1].replace("|", "")) == {"-"}
    return cells[2:]


def test_bench_first_hour_rows_have_their_structure():
    """The three tables' rows from given measurements (no subprocess, no timing)."""
    from rsvm_conic.problems import bench_first_hour as b
    from rsvm_conic.problems import registry

    assert registry("BENCHMARKS")["first-hour"] is b.run
    rows, ok = b.startup_rows({"import sklearn.svm": 1.0, "import rsvm_conic": 1.1, "rsvm-conic list": 0.6})
    body = _table(rows, 3, 5)
    assert [c[-1].strip() for c in body] == ["", "pass", "miss"] and not ok
    assert body[1][3].strip() == "1.10x"
    rows, ok = b.first_fit_rows({"A": {"first": 1.5, "second": 0.2}, "B": {"first": 0.3, "second": 0.2}})
    body = _table(rows, 2, 6)
    assert [c[3].strip() for c in body] == ["1.300 s", "0.100 s"] and [c[-1].strip() for c in body] == ["miss", "pass"]
    rows, ok = b.threads_rows({"A": {"default": 1.2, "one": 1.0, "all": 3.0}})
    (row,) = _table(rows, 1, 7)
    assert row[4].strip() == "1.20x" and row[-1].strip() == "pass" and ok


@pytest.mark.slow
def test_bench_first_hour_tables_have_their_structure():
    """``rsvm-conic bench first-hour``'s three tables on the smallest inputs (structure only, never times)."""
    from rsvm_conic.problems import bench_first_hour as b

    rows, _ = b.startup_table(1, labels=("python -c pass", "import rsvm_conic"))
    body = _table(rows, 2, 5)
    assert body[0][0].strip() == "`python -c pass`" and body[1][-1].strip() in ("pass", "miss")
    rows, _ = b.first_fit_table(["PkSVC"])
    (row,) = _table(rows, 1, 6)
    first, second, extra = (float(c.strip().removesuffix(" s")) for c in row[1:4])
    assert first > 0 and second > 0 and extra == pytest.approx(first - second, abs=2e-3)
    assert row[-1].strip() in ("pass", "miss")
    rows, _ = b.threads_table(["PkSVC"], repeat=1)
    (row,) = _table(rows, 1, 7)
    assert row[4].strip().endswith("x") and row[-1].strip() in ("pass", "miss")


def test_bench_first_hour_stops_its_busy_processes():
    from rsvm_conic.problems import bench_first_hour as b

    procs = b.start_burners(2)
    try:
        assert all(p.poll() is None for p in procs)
    finally:
        b.stop_burners(procs)
    assert all(p.poll() is not None for p in procs)


def test_small_kernel_ipm_on_the_numpy_path_agrees_with_the_compiled_path(monkeypatch):
    from rsvm_conic.datasets.bhadra2010 import make_bhadra2010
    from rsvm_conic.estimators import KernelRobustSVC

    data = make_bhadra2010(3, "gaussian", n_per_class=25, n_samples=10, symmetric=True)
    a = KernelRobustSVC(solver="ipm").fit(data.K_samples, data.y)
    monkeypatch.setattr(rk, "NUMPY_BELOW", 0)
    b = KernelRobustSVC(solver="ipm").fit(data.K_samples, data.y)
    for est in (a, b):
        assert est.solver_stats_["status"] == "optimal" and "ipm" in est.solver_stats_["route"]
    assert a.solver_stats_["primal"] == pytest.approx(b.solver_stats_["primal"], rel=1e-6)


def test_small_kernel_ipm_in_a_fresh_process_compiles_nothing(tmp_path):
    code = textwrap.dedent(
        """
        import sys
        from rsvm_conic.datasets.bhadra2010 import make_bhadra2010
        from rsvm_conic.estimators import KernelRobustSVC
        data = make_bhadra2010(3, "gaussian", n_per_class=25, n_samples=10, symmetric=True)
        clf = KernelRobustSVC(solver="ipm").fit(data.K_samples, data.y)
        print(clf.solver_stats_["status"], "numba" in sys.modules)
        """
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["optimal", "False"]
