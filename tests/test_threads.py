"""Every solver chooses its BLAS threads from its sizes (``rsvm_conic._threads``): one thread for small matrices, the
caller's setting for large ones, never more than an enclosing ``threadpoolctl.threadpool_limits`` allows."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from rsvm_conic import _threads


def _blas_threads() -> tuple[int, ...]:
    """Each loaded BLAS library's thread count (some builds are single-threaded whatever the limit)."""
    return tuple(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas")


@pytest.fixture
def two_threads():
    """An explicit outer setting of two BLAS threads (on any machine), restored afterwards; yields the resulting
    thread counts (the caller's setting)."""
    import scipy.linalg  # noqa: F401  (scipy's own BLAS, which the fits load: counted in the caller's setting)

    if not _blas_threads():
        pytest.skip("no BLAS library reported by threadpoolctl")
    with threadpool_limits(limits=2, user_api="blas"):
        outer = _blas_threads()
        if max(outer) < 2:
            pytest.skip("no multi-threaded BLAS library")
        yield outer


def _one(threads) -> bool:
    return set(threads) == {1}


def test_small_work_runs_on_one_thread_and_restores(two_threads):
    with _threads.blas_threads_for(_threads.SMALL_FLOPS / 2):
        assert _one(_blas_threads())
    assert _blas_threads() == two_threads


def test_large_work_keeps_the_callers_setting(two_threads):
    with _threads.blas_threads_for(_threads.SMALL_FLOPS):
        assert _blas_threads() == two_threads


def test_an_outer_limit_is_never_raised():
    with threadpool_limits(limits=1, user_api="blas"):
        for flops in (0.0, _threads.SMALL_FLOPS, 1e15):
            with _threads.blas_threads_for(flops):
                assert _one(_blas_threads())


def test_decorator_passes_arguments_and_result(two_threads):
    seen = []

    @_threads.blas_threads_by(lambda n, *, scale: float(n) ** 3)
    def solver(n, *, scale):
        seen.append(_blas_threads())
        return n * scale

    assert solver(10, scale=2.0) == 20.0
    assert solver(10**4, scale=1.0) == 10**4
    assert _one(seen[0]) and seen[1] == two_threads


def _record(monkeypatch, module, name, seen):
    inner = getattr(module, name)

    def recording(*args, **kwargs):
        seen.append(_blas_threads())
        return inner(*args, **kwargs)

    monkeypatch.setattr(module, name, recording)


def test_small_robust_fit_solves_on_one_thread(two_threads, monkeypatch):
    from rsvm_conic.datasets.synthetic import make_uncertain_classification
    from rsvm_conic.estimators import RobustSVC
    from rsvm_conic.solvers.ipm import robust_svm

    seen = []
    _record(monkeypatch, robust_svm, "cone_ipm", seen)
    X, y, Sigma, groups = make_uncertain_classification(200, 5, random_state=0)
    clf = RobustSVC(radius=0.5).fit(X, y, Sigma=Sigma, sigma_index=groups)  # w != 0 needs radius < 0.75 here
    assert clf.solver_stats_["status"] == "optimal"
    assert len(seen) == 1 and _one(seen[0])
    assert _blas_threads() == two_threads

    seen.clear()  # the same fit counted as large keeps the caller's two threads
    monkeypatch.setattr(_threads, "SMALL_FLOPS", 0.0)
    RobustSVC(radius=0.5).fit(X, y, Sigma=Sigma, sigma_index=groups)
    assert seen == [two_threads]


def test_small_kernel_qn_fit_solves_on_one_thread(two_threads, monkeypatch):
    from rsvm_conic.datasets.bhadra2010 import make_bhadra2010
    from rsvm_conic.estimators import KernelRobustSVC
    from rsvm_conic.solvers import quasi_newton

    seen = []
    _record(monkeypatch, quasi_newton, "dfp_minimize", seen)
    from rsvm_conic.exceptions import SolverWarning

    data = make_bhadra2010(3, "gaussian", n_per_class=20, n_samples=10, symmetric=True)
    with warnings.catch_warnings():  # on these data qn falls back to socp with a SolverWarning: not what is tested here
        warnings.simplefilter("ignore", SolverWarning)
        clf = KernelRobustSVC(method="qn").fit(data.K_samples, data.y)
    assert np.all(np.isfinite(clf.alpha_))
    assert seen and all(_one(s) for s in seen)


def test_small_kernel_socp_fit_solves_on_one_thread(two_threads, monkeypatch):
    from rsvm_conic.datasets.bhadra2010 import make_bhadra2010
    from rsvm_conic.estimators import KernelRobustSVC
    from rsvm_conic.solvers import rsvm_socp

    seen = []
    _record(monkeypatch, rsvm_socp, "_newton_direction", seen)
    data = make_bhadra2010(3, "gaussian", n_per_class=20, n_samples=10, symmetric=True)
    clf = KernelRobustSVC().fit(data.K_samples, data.y)
    assert clf.solver_stats_["status"] == "optimal"
    assert seen and all(_one(s) for s in seen)


def test_kernel_matrix_eigendecompositions_run_on_one_thread(two_threads, monkeypatch):
    """The eigendecompositions of a kernel fit (``psd_eigh``: the mean kernel's PSD projection, the noise factor; the
    noise matrix's principal pair) run on one BLAS thread at a small size; a large one keeps the caller's setting."""
    from rsvm_conic._validation import psd_eigh
    from rsvm_conic.datasets.bhadra2010 import make_bhadra2010
    from rsvm_conic.estimators import KernelRobustSVC
    from rsvm_conic.exceptions import SolverWarning
    from rsvm_conic.uncertainty.kernel_matrix import rank_one_approx

    seen = []
    _record(monkeypatch, np.linalg, "eigh", seen)
    data = make_bhadra2010(3, "gaussian", n_per_class=20, n_samples=10, symmetric=True)
    with warnings.catch_warnings():  # on these data qn falls back to socp with a SolverWarning: not what is tested here
        warnings.simplefilter("ignore", SolverWarning)
        KernelRobustSVC(method="qn").fit(data.K_samples, data.y)
    assert seen and all(_one(s) for s in seen)
    seen.clear()
    rank_one_approx(np.abs(data.K_samples[0]))
    assert len(seen) == 1 and _one(seen[0])
    seen.clear()
    n = int(np.ceil(_threads.SMALL_FLOPS ** (1 / 3)))  # the smallest n with n^3 >= SMALL_FLOPS
    psd_eigh(np.eye(n), on_negative="keep")
    assert seen == [two_threads]


def test_a_blas_library_loaded_after_the_first_limit_is_limited_too():
    """A fresh process: the first small solve runs before scipy's own BLAS is loaded (only numpy's); a later small
    solve limits both libraries (the controller sees the libraries loaded since)."""
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json, sys, numpy\n"
        "from threadpoolctl import threadpool_info\n"
        "from rsvm_conic import _threads\n"
        "with _threads.blas_threads_for(1.0):\n"
        "    pass\n"
        "assert 'scipy.linalg' not in sys.modules\n"
        "import scipy.linalg\n"
        "with _threads.blas_threads_for(1.0):\n"
        "    inner = [lib['num_threads'] for lib in threadpool_info() if lib['user_api'] == 'blas']\n"
        "print(json.dumps(inner))\n"
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    inner = json.loads(out.stdout.strip().splitlines()[-1])
    if len(inner) < 2:
        pytest.skip("numpy and scipy share one BLAS library here")
    assert set(inner) == {1}
