"""Inputs too large for float64 get one ValueError saying so and to rescale; no estimator returns a model with
NaN or inf coefficients or decision values (a route whose values are not finite raises SolverError); what a
conic solver's C library prints is captured, never written to the user's standard output."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import threading
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rsvm_conic.formulations as formulations_pkg
from rsvm_conic import (
    ChanceConstrainedSVC,
    HyperbolicSVC,
    KernelRobustSVC,
    NominalSVC,
    PkSVC,
    RobustFeatureSVC,
    RobustSVC,
    SafeSVC,
    WassersteinSVC,
    WestonWatkinsSVC,
)
from rsvm_conic._validation import OVERFLOW_LIMIT, check_no_overflow
from rsvm_conic.formulations.base import Formulation
from rsvm_conic.formulations.robust import RobustProblem
from rsvm_conic.solvers.conic import captured_stdout
from rsvm_conic.exceptions import SolverError, SolverWarning
from rsvm_conic.uncertainty import UncertaintySet

from _fuzzutil import fuzz_settings

#: the one message (check_no_overflow) for data and for covariances
OVERFLOW = re.compile(r"has entries up to \S+ whose (squares|sums) overflow float64 .*; rescale ")


# ------------------------------------------------------------------------------------------- the helper
@fuzz_settings(60)
@given(
    shape=st.tuples(st.integers(1, 30), st.integers(1, 6)),
    seed=st.integers(0, 2**16),
    factor=st.sampled_from([0.5, 0.99, 1.01, 2.0, 1e10]),
    layout=st.sampled_from(["C", "F", "strided"]),
)
def test_rejects_exactly_when_the_sum_of_squares_exceeds_the_limit(shape, seed, factor, layout):
    """Data: rejected iff ||A||_F^2 > OVERFLOW_LIMIT (factors 1 +- 1% are far beyond the sum's rounding)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal(shape) + 0.1
    A *= np.sqrt(factor * OVERFLOW_LIMIT / np.sum((A / np.abs(A).max()) ** 2)) / np.abs(A).max()
    if layout == "F":
        A = np.asfortranarray(A)
    elif layout == "strided":
        A = np.repeat(A, 2, axis=1)[:, ::2]
    if factor < 1:
        check_no_overflow(A, "X")
        return
    with pytest.raises(ValueError, match=OVERFLOW) as info:
        check_no_overflow(A, "X")
    msg = str(info.value)
    assert "rescale X (e.g. sklearn.preprocessing.StandardScaler)" in msg
    top = float(re.search(r"entries up to (\S+) ", msg).group(1))
    assert top == pytest.approx(np.abs(A).max(), rel=1e-2)
    total = float(re.search(r"is about (1e[+-]\d+)", msg).group(1))
    assert abs(np.log10(total) - np.log10(factor * OVERFLOW_LIMIT)) <= 0.5


def test_overflowing_squares_and_covariances():
    X = np.ones((4, 2))
    X[1, 1] = 1e300  # its square is inf
    with pytest.raises(ValueError, match=r"X has entries up to 1e\+300 whose squares overflow .* about 1e\+600"):
        check_no_overflow(X, "X")
    check_no_overflow(np.full((3, 3), 4e291), "Sigma", products=True)  # max |Sigma| times 9 entries: 3.6e292
    with pytest.raises(ValueError, match=r"Sigma has entries up to 5e\+291 whose sums .* about 1e\+293"):
        check_no_overflow(np.full((3, 3), 5e291), "Sigma", products=True)  # 4.5e292
    with pytest.raises(ValueError, match=r"Sigma has entries up to 1e\+300 whose sums overflow float64.*rescale Sigma"):
        check_no_overflow(np.eye(3) * 1e300, "Sigma", products=True)
    check_no_overflow(np.zeros((0, 3)), "X")


# ------------------------------------------------------------------------------- every estimator, at scale
def _data(L, n, seed, n_classes=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((L, n))
    X /= np.abs(X).max()  # the largest entry is 1: the scale is the one drawn
    y = np.arange(L) % n_classes
    return X, y


ESTIMATORS = {
    "RobustSVC": (lambda: RobustSVC(radius=0.1), 2, "Sigma"),
    "ChanceConstrainedSVC": (lambda: ChanceConstrainedSVC(), 2, "Sigma"),
    "NominalSVC": (lambda: NominalSVC(), 2, None),
    "SafeSVC": (lambda: SafeSVC(max_iter=5, random_state=0), 2, None),
    "RobustFeatureSVC": (lambda: RobustFeatureSVC(n_components=20, random_state=0), 2, "Sigma"),
    "PkSVC": (lambda: PkSVC(), 2, "Sigma"),
    "WestonWatkinsSVC": (lambda: WestonWatkinsSVC(), 3, None),
    "HyperbolicSVC": (lambda: HyperbolicSVC(n_starts=1, random_state=0), 3, None),
    "KernelRobustSVC": (lambda: KernelRobustSVC(), 2, "kernel"),
    "WassersteinSVC": (lambda: WassersteinSVC(), 2, None),
}


def _fit(name, X, y, scale, sigma_scale=None):
    make, _, extra = ESTIMATORS[name]
    est = make()
    if extra == "kernel":
        K = X @ X.T + 1e-3 * np.eye(X.shape[0])
        return est, est.fit(K * scale, y), K * scale
    kw = {}
    if extra == "Sigma" and sigma_scale is not None:
        kw["Sigma"] = sigma_scale * np.eye(X.shape[1])
    return est, est.fit(X * scale, y, **kw), X * scale


@fuzz_settings(80)
@given(
    name=st.sampled_from(sorted(ESTIMATORS)),
    L=st.integers(6, 16),
    n=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    exponent=st.integers(150, 300),
    with_sigma=st.booleans(),
)
def test_every_estimator_at_scales_1e150_to_1e300_raises_the_one_message(name, L, n, seed, exponent, with_sigma):
    """``fit(X * s, y)`` (with a covariance ``s^2 Sigma`` where the estimator takes one; a kernel ``s K`` for the
    kernel machine) for s in 1e150..1e300: the one ValueError, not NaN scores, a solver's allocation error,
    "Sigma contains NaN" or "0 feature(s)"."""
    X, y = _data(L, n, seed, ESTIMATORS[name][1])
    scale = 10.0**exponent
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=OVERFLOW):
            _fit(name, X, y, scale, sigma_scale=min(scale * scale, 1e300) if with_sigma else None)


@pytest.fixture(scope="module")
def fitted():
    """Each estimator fitted on unit-scale data (both classes, or three for the multi-class machines)."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (_, n_classes, _) in ESTIMATORS.items():
            X, y = _data(24, 3, 0, n_classes)
            est, _, Xs = _fit(name, X, y, 1.0)
            attrs = ("coef_", "dual_coef_", "intercept_", "alpha_", "centres_", "radii_")
            coef = [getattr(est, a) for a in attrs if hasattr(est, a)]
            assert coef and all(np.all(np.isfinite(c)) for c in coef), name
            assert np.all(np.isfinite(est.decision_function(Xs))), name
            out[name] = est
    return out


@pytest.mark.parametrize("exponent", [150, 200, 300])
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_predicting_on_data_at_1e150_to_1e300_raises_the_one_message(fitted, name, exponent):
    est = fitted[name]
    X, _ = _data(10, 3, 1)
    if ESTIMATORS[name][2] == "kernel":
        X = np.abs(X @ _data(24, 3, 0)[0].T)  # kernel rows against the 24 training points
    with pytest.raises(ValueError, match=OVERFLOW):
        est.decision_function(X * 10.0**exponent)


@pytest.mark.parametrize("name", ["RobustSVC", "ChanceConstrainedSVC", "RobustFeatureSVC", "PkSVC"])
def test_a_covariance_whose_entries_overflow_gets_the_one_message(name):
    X, y = _data(12, 3, 0)
    with pytest.raises(ValueError, match=r"Sigma has entries up to 1e\+300 whose sums overflow float64"):
        _fit(name, X, y, 1.0, sigma_scale=1e300)


def test_dask_input_gets_the_same_message():
    da = pytest.importorskip("dask.array")
    X, y = _data(40, 3, 0)
    with pytest.raises(ValueError, match=OVERFLOW) as info:
        RobustSVC(radius=0.1).fit(da.from_array(X * 1e200, chunks=(10, 3)), y)
    with pytest.raises(ValueError) as ref:
        RobustSVC(radius=0.1).fit(X * 1e200, y)
    assert str(info.value) == str(ref.value)
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="X contains 1 NaN or infinite value"):
        RobustSVC().fit(da.from_array(X, chunks=(10, 3)), y)


# ------------------------------------------------------------------ non-finite values never make a model
def _poison(sol):
    """The route's solution with its first numeric array entry set to NaN (certificate untouched); a failed
    route's solution without values is returned as it is."""
    for key, value in sol.values.items():
        if isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.size:
            bad = value.astype(float, copy=True)
            bad.flat[0] = np.nan
            sol.values[key] = bad
            return sol
    return sol


def _formulation_classes():
    """Every Formulation subclass of rsvm_conic.formulations (each module imported)."""
    for info in pkgutil.iter_modules(formulations_pkg.__path__):
        importlib.import_module(f"{formulations_pkg.__name__}.{info.name}")
    out, todo = set(), [Formulation]
    while todo:
        cls = todo.pop()
        out.add(cls)
        todo.extend(c for c in cls.__subclasses__() if c not in out)
    return out


@pytest.fixture
def every_route_returns_nan(monkeypatch):
    """Every route (``_solve_<route>`` and the CVXPY one) of every formulation returns NaN in its values."""
    for cls in _formulation_classes():
        for attr, fn in list(vars(cls).items()):
            if attr.startswith("_solve_") and attr != "_solve_auto" and callable(fn):

                def poisoned(self, *args, __fn=fn, **kw):
                    return _poison(__fn(self, *args, **kw))

                monkeypatch.setattr(cls, attr, poisoned)


@pytest.mark.parametrize("name", sorted(set(ESTIMATORS) - {"PkSVC"}))  # PkSVC: libsvm, checked by its gap
def test_a_route_with_non_finite_values_is_never_returned_as_a_model(every_route_returns_nan, name):
    X, y = _data(16, 2, 0, ESTIMATORS[name][1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(SolverError, match="non-finite values"):
            _fit(name, X, y, 1.0)


def test_auto_falls_back_from_a_route_with_non_finite_values(monkeypatch):
    X, y = _data(30, 3, 0)
    original = RobustProblem._solve_ipm
    monkeypatch.setattr(RobustProblem, "_solve_ipm", lambda self, **kw: _poison(original(self, **kw)))
    with pytest.raises(SolverError, match=r"route 'ipm' returned non-finite values \(w\)"):
        RobustSVC(radius=0.1, solver="ipm").fit(X, y)
    with pytest.warns(SolverWarning, match="route 'ipm' failed .*non-finite values.*falling back to 'clarabel'"):
        est = RobustSVC(radius=0.1).fit(X, y)
    assert est.solver_stats_["route"] == "clarabel" and np.all(np.isfinite(est.coef_))


# ---------------------------------------------------------------------------- what C solvers print
def test_scs_output_is_captured_and_quoted_in_the_solver_error(capfd):
    """SCS prints its set-up errors even with verbose=False; the solve raises SolverError quoting them."""
    X, y = _data(30, 3, 0)
    f = RobustProblem(X * 1e300, np.where(y == 1, 1.0, -1.0), UncertaintySet(radius=0.1), C=1.0, check_input=False)
    with pytest.raises(SolverError, match=r"SCS raised an error: .*\(solver output: .*\S"):
        f.solve("scs")
    out, _ = capfd.readouterr()
    assert out == ""


def test_captured_stdout_restores_fd1_and_collects_what_c_code_writes(capfd):
    import ctypes

    libc = ctypes.CDLL(None)
    printed: list[str] = []
    with captured_stdout(printed):
        os.write(1, b"from fd 1\n")
        libc.printf(b"from printf\n")  # buffered by the C library: flushed before fd 1 is restored
    os.write(1, b"after\n")
    assert "".join(printed) == "from fd 1\nfrom printf\n"
    assert capfd.readouterr().out == "after\n"


def test_captured_stdout_from_threads_restores_fd1_once_all_leave(capfd):
    """Overlapping blocks in two threads: fd 1 is redirected while any is open and restored when the last ends."""
    inside, release = threading.Event(), threading.Event()
    printed_a: list[str] = []

    def a():
        with captured_stdout(printed_a):
            os.write(1, b"a\n")
            inside.set()
            release.wait(30)

    t = threading.Thread(target=a)
    t.start()
    inside.wait(30)
    printed_b: list[str] = []
    with captured_stdout(printed_b):
        os.write(1, b"b\n")
    os.write(1, b"still captured\n")  # thread a's block is open
    release.set()
    t.join(30)
    os.write(1, b"restored\n")
    assert "b\n" in printed_b[0] and "a\n" in printed_a[0] and "still captured\n" in printed_a[0]
    assert capfd.readouterr().out == "restored\n"
