"""Fuzzing the uncertain-kernel and multi-class estimators and builders with hypothesis.

Targets: KernelRobustSVC (kernel samples, mean kernel + sigma2 / a, b, noise-free mean kernel),
WestonWatkinsSVC, HyperbolicSVC, the builders KernelRobustQPProblem / KernelRobustSOCPProblem /
KernelRobustQNProblem, WestonWatkinsKernelDual, WestonWatkinsFeatures, HyperbolicProblem, ConsolidationKernel and
KernelUncertainty.

Each generated input either fits -- and then the result is checked: finite scores and known labels,
plus a target-specific certificate that the model is not silently non-optimal (a second backend
agrees, the objective is no worse than a trivial feasible point, the CCP history never increases,
a kernel matrix is symmetric PSD) -- or raises ValueError with a non-empty message.  Any other
exception, or a failed check, fails the test.

Every input is labelled "bad" when it was deliberately corrupted (NaN/inf, non-PSD or non-symmetric
kernel, wrong shape, one class, invalid parameter such as C <= 0, a > b, negative sigma2, epsilon
outside (0, 1) ...), and counted once per distinct content (hash of arrays + parameters).  After each
fuzz test, every target it exercised must have fitted and raised ValueError at least once; at module
teardown a report prints, per target, distinct inputs, distinct bad inputs and their outcomes (run
with ``-s``, or see "Captured stdout teardown" with ``-rA``).

Numerical checks are exact-arithmetic properties up to a rounding bound scaled to the input (see
tests/_fuzzutil.py); past failures found by fuzzing are pinned with ``@example`` and run first.
"""

import warnings

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rsvm_conic.estimators import HyperbolicSVC, KernelRobustSVC, WestonWatkinsSVC
from rsvm_conic.formulations.hyperbolic import HyperbolicProblem
from rsvm_conic.formulations.kernel_robust import KernelRobustQNProblem, KernelRobustQPProblem, KernelRobustSOCPProblem
from rsvm_conic.formulations.multiclass_ww import WestonWatkinsFeatures, WestonWatkinsKernelDual
from rsvm_conic.solvers.multiclass import msvmpack_objective
from rsvm_conic.solvers.multiclass import ww_objective
from rsvm_conic.kernels.consolidation import ConsolidationKernel
from rsvm_conic.exceptions import SolverError
from rsvm_conic.uncertainty.kernel_matrix import KernelUncertainty

from _fuzzutil import Tally, consolidation_reference, consolidation_tolerance, digest, fuzz_settings, psd_tolerance

fuzz = fuzz_settings
TALLY = Tally("fuzz (kernel / multi-class)")
_fuzz_outcomes_of_this_test, _fuzz_report_at_module_teardown = TALLY.fixtures()
_digest = digest


def _record(target, key, bad, outcome):
    TALLY.record(target, outcome, key, bool(bad))


def _attempt(target, key, bad, fit, check, hard=False):
    """``fit()`` must return a fitted object or raise ValueError; ``check(obj)`` then certifies it.

    ``hard``: an input whose scale puts it beyond what the routes certify (see :data:`HARD_SCALE`);
    there a :class:`SolverError` naming the routes tried is an accepted outcome (never a silent result).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            obj = fit()
        except ValueError as exc:
            assert str(exc).strip(), "a ValueError must carry a message"
            _record(target, key, bad, "ValueError")
            return None
        except SolverError as exc:
            if not hard or bad:
                raise
            assert str(exc).strip()
            _record(target, key, bad, "SolverError (C ||K|| beyond HARD_SCALE)")
            return None
        outcome = check(obj) or "fit"
    _record(target, key, bad, outcome)
    return obj


#: C ||K||_2 above which a kernel-robust problem may be beyond double precision for every route
#: (libsvm's single-precision kernel cache, interior points on near-singular K): known cases at
#: 3e7 (RSVM_SOCP, beta = 0, C = 1e4) and 1.2e8 (noise-free, C = 1e4, rank-deficient K)
HARD_SCALE = 1e6


def _hard(K, C) -> bool:
    K = np.asarray(K, dtype=float)
    if K.ndim == 3:
        K = K.mean(axis=0)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or not np.all(np.isfinite(K)):
        return False
    return C * float(np.linalg.norm(K, 2)) > HARD_SCALE


# ------------------------------------------------------------------------------ value pools
def pick(draw, good, bad, p_bad=0.15):
    """A value from ``good`` or (with probability ~p_bad) from ``bad``; returns ``(value, is_bad)``."""
    n_good = max(1, round((1 - p_bad) / p_bad))  # hypothesis' floats favour 0: draw a category instead
    if bad and draw(st.sampled_from([False] * n_good + [True])):
        return draw(st.sampled_from(bad)), True
    return draw(st.sampled_from(good)), False


@st.composite
def picked(draw, good, bad, p_bad=0.15):
    """:func:`pick` as a strategy (so that ``@example`` can pin ``(value, is_bad)``)."""
    return pick(draw, good, bad, p_bad)


C_GOOD = [1e-6, 1e-2, 1.0, 1.0, 10.0, 1e4]
C_BAD = [0.0, -1.0, np.nan, np.inf]
EPS_GOOD = [1e-6, 0.05, 0.1, 0.3, 0.5]
EPS_BAD = [0.0, 1.0, -0.1, 1.5, np.nan]


# ------------------------------------------------------------------------------ kernels
@st.composite
def kernel_problem(draw):
    """A kernel-uncertainty problem: samples (S, n, n), mean kernel, noise parameters, labels.

    Returns a dict with ``kind`` (the corruption, "ok" if none) and ``bad``.
    """
    n = draw(st.integers(2, 10))
    S = draw(st.integers(2, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    p = draw(st.integers(1, 3))
    X = rng.standard_normal((n, p)) * draw(st.sampled_from([1e-3, 1.0, 1.0, 30.0]))
    y = np.where(rng.random(n) < 0.5, 1, -1)
    y[:2] = [1, -1]
    K = X @ X.T
    noise = draw(st.sampled_from([0.0, 1e-3, 0.1, 1.0]))
    Z = rng.standard_normal((S, n, n)) * noise
    Ks = K[None] + 0.5 * (Z + Z.transpose(0, 2, 1))
    sigma2 = np.full((n, n), noise**2)
    a, b = -np.full((n, n), 2 * noise), np.full((n, n), 2 * noise)
    kind = draw(
        st.sampled_from(
            ["ok"] * 8
            + [
                "nan",
                "inf",
                "nonpsd",
                "nonsym",
                "wrong_shape",
                "one_class",
                "three_class",
                "duplicates",
                "neg_sigma2",
                "a_gt_b",
                "a_pos",
                "sigma2_shape",
                "one_sample",
                "y_len",
            ]
        )
    )
    if kind == "nan":
        Ks[0, 0, 1] = K[0, 1] = np.nan
    elif kind == "inf":
        Ks[-1, -1, -1] = K[-1, -1] = np.inf
    elif kind == "nonpsd":
        K = K - (1.0 + 2 * np.abs(K).max()) * np.eye(n)
        Ks = Ks - (1.0 + 2 * np.abs(Ks).max()) * np.eye(n)[None]  # sample mean indefinite: clipped (fine)
    elif kind == "nonsym":
        K = K + np.triu(np.ones((n, n)), 1)
    elif kind == "wrong_shape":
        K, Ks = K[:, :-1], Ks[:, :, :-1]
    elif kind == "one_class":
        y[:] = 1
    elif kind == "three_class":
        y = np.arange(n) % 3
        kind = kind if n >= 3 else "ok"  # two points hold two classes only
    elif kind == "duplicates":  # every point the same: K constant, still PSD (rank one)
        K = np.full((n, n), 1.0)
        Ks = K[None] + 0.0 * Ks
    elif kind == "neg_sigma2":
        sigma2[0, 0] = -1.0
    elif kind == "a_gt_b":
        a, b = b + 0.5, a
    elif kind == "a_pos":
        a = a + 1.0 + 4 * noise
    elif kind == "sigma2_shape":
        sigma2, a, b = sigma2[:-1, :-1], a[:-1], b[:-1]
    elif kind == "one_sample":
        Ks = Ks[:1]
    elif kind == "y_len":
        y = y[:-1]
    # "duplicates" and "nonpsd" samples are legitimate inputs for the samples path
    bad = kind not in ("ok", "duplicates")
    return dict(n=n, K=K, Ks=Ks, y=y, sigma2=sigma2, a=a, b=b, kind=kind, bad=bad)


def _as_logged(data):
    """``data`` with K and its samples as the log prints them (8 decimals): a PSD rank-one K becomes
    indefinite at -4e-9, which C = 1e4 makes visible; pinned beside the exact arrays."""
    return dict(data, K=np.round(data["K"], 8), Ks=np.round(data["Ks"], 8))


def _kernel_problem_of(n, S, seed, p, scale, noise, kind):
    """The dict :func:`kernel_problem` draws for these draws (the same generator calls in the same order), for
    ``@example``: the logs print the arrays rounded to 8 digits, which moves a rank-one K's zero eigenvalues
    to +-5e-9 -- a different problem at C = 1e4 -- so the pins rebuild the exact arrays from the seed."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) * scale
    y = np.where(rng.random(n) < 0.5, 1, -1)
    y[:2] = [1, -1]
    K = X @ X.T
    Z = rng.standard_normal((S, n, n)) * noise
    Ks = K[None] + 0.5 * (Z + Z.transpose(0, 2, 1))
    sigma2 = np.full((n, n), noise**2)
    a, b = -np.full((n, n), 2 * noise), np.full((n, n), 2 * noise)
    assert kind in ("ok", "a_pos")  # the pinned kinds
    if kind == "a_pos":
        a = a + 1.0 + 4 * noise
    return dict(n=n, K=K, Ks=Ks, y=y, sigma2=sigma2, a=a, b=b, kind=kind, bad=kind != "ok")


class _Draws:
    """A scripted ``st.data()`` for ``@example``: ``draw`` returns the logged draws in order."""

    def __init__(self, *values):
        self.values = list(values)

    def draw(self, strategy, label=None):
        return self.values.pop(0)

    def __repr__(self):
        return f"_Draws{tuple(self.values)!r}"


@fuzz(400)
@given(data=kernel_problem(), st_=st.data())
# rank-one K (C ||K|| = 3.9e4), beta = 0, kappa = 0: projected Newton stalled on the singular face, every
# route failed (newest dependencies); the exact optimum is -4C
@example(
    data=_kernel_problem_of(5, 5, 5, 1, 1.0, 0.0, "a_pos"),
    st_=_Draws("socp", "gaussian", "samples", False, 1e4, False, 0.5),
)
# rank-one K, n = 6, finite noise with a = b = 0 (beta = 0), C = 1e4: the same (hypothesis 6.0, the floor)
@example(
    data=_kernel_problem_of(6, 2, 58777, 1, 1.0, 0.0, "ok"),
    st_=_Draws("socp", "finite", "params", False, 1e4, False, 1e-6),
)
@example(
    data=_as_logged(_kernel_problem_of(5, 5, 5, 1, 1.0, 0.0, "a_pos")),
    st_=_Draws("socp", "gaussian", "samples", False, 1e4, False, 0.5),
)
@example(
    data=_as_logged(_kernel_problem_of(6, 2, 58777, 1, 1.0, 0.0, "ok")),
    st_=_Draws("socp", "finite", "params", False, 1e4, False, 1e-6),
)
def test_fuzz_kernel_robust_svc(data, st_):
    draw = st_.draw
    method = draw(st.sampled_from(["qp", "socp", "qn"]))
    noise = draw(st.sampled_from(["gaussian", "finite"]))
    route = draw(st.sampled_from(["samples", "samples_kbar", "params", "noise_free"]))
    C, bad_c = pick(draw, C_GOOD, C_BAD)
    eps, bad_e = pick(
        draw,
        EPS_GOOD + ([0.7, 0.99] if noise == "finite" else []),
        EPS_BAD + ([0.7, 0.99] if noise == "gaussian" else []),
    )
    est = KernelRobustSVC(method=method, noise=noise, epsilon=eps, C=C, n_random_starts=0)
    K, Ks, y = data["K"], data["Ks"], data["y"]
    if route == "samples":
        args, kw = (Ks, y), {}
    elif route == "samples_kbar":
        args, kw = (Ks, y), {"K_bar": K}
    elif route == "params":
        args, kw = (K, y), ({"sigma2": data["sigma2"]} if noise == "gaussian" else {"a": data["a"], "b": data["b"]})
    else:
        args, kw = (K, y), {}
    # corruptions that only matter on other routes are not bad for this one
    only = {
        "neg_sigma2": ("params",),
        "a_gt_b": ("params",),
        "a_pos": ("params",),
        "sigma2_shape": ("params",),
        "one_sample": ("samples", "samples_kbar"),
        "nonsym": ("samples_kbar", "params", "noise_free"),
        "nonpsd": ("samples_kbar", "params", "noise_free"),
    }
    kind_bad = data["bad"] and route in only.get(data["kind"], (route,))
    if data["kind"] in ("neg_sigma2", "sigma2_shape") and noise == "finite":
        kind_bad = data["kind"] == "sigma2_shape" and route == "params"
    if data["kind"] in ("a_gt_b", "a_pos") and noise == "gaussian":
        kind_bad = False
    bad = kind_bad or bad_c or bad_e
    key = _digest(method, noise, route, C, eps, args, sorted(kw.items()))

    def check(clf):
        assert not bad, f"bad input ({data['kind']}, C={C}, epsilon={eps}) was accepted"
        rows = K if route != "samples" else Ks.mean(axis=0)
        F = clf.decision_function(rows if np.all(np.isfinite(rows)) else clf.uncertainty_.K_bar)
        assert np.all(np.isfinite(F))
        assert set(np.unique(clf.predict(Ks))) <= set(clf.classes_)
        f = clf.formulation_
        assert f.constraint_violation(clf.alpha_) <= 1e-6 * max(1.0, C) * f.n
        if route == "noise_free":
            assert not np.any(f.beta)
        return _certify(f, clf.solution_, method)

    _attempt("KernelRobustSVC", key, bad, lambda: est.fit(*args, **kw), check, hard=_hard(args[0], C))


def _certify(f, sol, method):
    """Certificate checks.  Convex routes (RSVM_QP / RSVM_SOCP): the solution is certified, and a
    second route's objective (a feasible point's) is never below the certified lower bound, and
    agrees with ours when it is certified too.  RSVM_QN (non-convex): no worse than its nominal start."""
    obj = sol.objective
    assert np.isfinite(obj)
    kind = {"KernelRobustQPProblem": "qp", "KernelRobustSOCPProblem": "socp"}.get(type(f).__name__, method)
    if kind in ("qp", "socp"):
        cert = sol.certificate
        assert cert["status"] == "optimal", cert
        scale = max(1.0, abs(cert["primal"]))
        for route in ("clarabel", "scs", "newton"):
            if route == sol.backend or route not in f.backends:
                continue
            try:
                ref = f.solve(route).certificate
            except SolverError:
                continue
            assert ref["primal"] >= cert["dual"] - 1e-7 * scale, (ref, cert)
            if ref["status"] == "optimal":
                assert abs(ref["primal"] - cert["primal"]) <= 2e-6 * scale, (ref, cert)
            return None
        return "fit (second solver declined)"
    # QN: never worse than its nominal start (objective of (15) with the original beta)
    a0 = f._nominal_alpha()
    F0 = 0.5 * f.t_value(a0) - a0.sum()
    assert obj <= F0 + 1e-6 * max(1.0, abs(F0)), (obj, F0)
    return None


@fuzz(400)
@given(data=kernel_problem(), st_=st.data())
def test_fuzz_kernel_builders(data, st_):
    """KernelRobustQPProblem / KernelRobustSOCPProblem / KernelRobustQNProblem called directly: labels in {-1, +1},
    beta, C and kappa."""
    draw = st_.draw
    cls = draw(st.sampled_from([KernelRobustQPProblem, KernelRobustSOCPProblem, KernelRobustQNProblem]))
    C, bad_c = pick(draw, C_GOOD, C_BAD)
    kappa, bad_k = pick(draw, [0.0, 0.5, 1.28, 3.0, 30.0], [-1.0, np.nan, np.inf])
    K, y = data["K"], data["y"].astype(float)
    beta_kind = draw(st.sampled_from(["sigma2"] * 4 + ["zero", "neg", "nan", "shape", "asym"]))
    beta = {"sigma2": data["sigma2"], "zero": np.zeros_like(data["sigma2"])}.get(beta_kind)
    if beta is None:
        beta = data["sigma2"].copy()
        if beta_kind == "neg":
            beta[0, 0] = -1.0
        elif beta_kind == "nan":
            beta[-1, 0] = np.nan
        elif beta_kind == "shape":
            beta = beta[:-1]
        else:  # asymmetric but nonnegative: legal (only nu' beta nu matters, it is symmetrised)
            beta = beta + np.triu(np.ones_like(beta), 1)
    bad_kind = data["kind"] in (
        "nan",
        "inf",
        "nonpsd",
        "nonsym",
        "wrong_shape",
        "one_class",
        "three_class",
        "y_len",
        "sigma2_shape",
    )
    bad = bad_kind or bad_c or bad_k or beta_kind in ("neg", "nan", "shape")
    if data["kind"] == "sigma2_shape" and beta_kind in ("zero", "neg", "nan", "asym", "sigma2"):
        bad = True
    method = {KernelRobustQPProblem: "qp", KernelRobustSOCPProblem: "socp", KernelRobustQNProblem: "qn"}[cls]
    routes = {
        KernelRobustQPProblem: ("libsvm", "clarabel", "scs"),
        KernelRobustSOCPProblem: ("newton", "ipm", "clarabel", "scs"),
        KernelRobustQNProblem: ("dfp",),
    }[cls]
    key = _digest(cls.__name__, K, y, beta, C, kappa)

    def fit():
        f = cls(K, y, beta, C=C, kappa=kappa)
        errors = []
        for route in routes:  # the first certified route, as KernelRobustSVC's chain does
            try:
                sol = f.solve(route)
            except SolverError as exc:
                errors.append(f"{route}: {exc}")
                continue
            if sol.status == "optimal" or cls is KernelRobustQNProblem:  # (15) is non-convex: QN may stay uncertified
                return f, sol
            errors.append(f"{route}: status {sol.status}")
        raise SolverError("; ".join(errors))

    def check(fs):
        f, sol = fs
        assert not bad, f"bad input ({data['kind']}, beta {beta_kind}, C={C}, kappa={kappa}) was accepted"
        assert np.all(np.isfinite(sol["alpha"])) and np.isfinite(sol["b"])
        assert f.constraint_violation(sol["alpha"]) <= 1e-6 * max(1.0, C) * f.n
        assert np.all(np.isfinite(f.decision_function(sol, K)))
        return _certify(f, sol, method)

    _attempt(cls.__name__, key, bad, fit, check, hard=_hard(K, C))


def _eq9_problem():
    """Pinned (cf90aa0): finite supports [a, b] = [-(1 + t), 1 - t], t log-spaced in [1e-10, 1e-4], so
    mu_hat = t; the ratio of eq. 9 cancelled near z = 1e-6 and gamma came out above 1 (by up to 9e-7
    here, 4e-5 at mu = 1e-9) for 15 of these 21 entries."""
    n = 6
    iu = np.triu_indices(n)
    T = np.zeros((n, n))
    T[iu] = np.logspace(-10, -4, iu[0].size)
    T = T + T.T - np.diag(np.diag(T))
    X = np.random.default_rng(0).standard_normal((n, 2))
    K = X @ X.T
    return dict(
        n=n,
        K=K,
        Ks=np.stack([K, K + 0.01 * np.eye(n)]),
        y=np.array([1, -1] * 3),
        sigma2=np.full((n, n), 0.01),
        a=-(1.0 + T),
        b=1.0 - T,
        kind="ok",
        bad=False,
    )


@fuzz(250)
@given(data=kernel_problem(), route=st.sampled_from(["samples", "samples_kbar", "gaussian", "finite", "both", "none"]))
@example(data=_eq9_problem(), route="finite")
def test_fuzz_kernel_uncertainty(data, route):
    K, Ks = data["K"], data["Ks"]
    kind = data["kind"]
    if route == "samples":
        bad = kind in ("nan", "inf", "wrong_shape", "one_sample")
        fit = lambda: KernelUncertainty.from_samples(Ks)  # noqa: E731
    elif route == "samples_kbar":
        bad = kind in ("nan", "inf", "wrong_shape", "one_sample", "nonpsd", "nonsym")
        fit = lambda: KernelUncertainty.from_samples(Ks, K)  # noqa: E731
    else:
        kw = {
            "gaussian": {"sigma2": data["sigma2"]},
            "finite": {"a": data["a"], "b": data["b"]},
            "both": {"sigma2": data["sigma2"], "a": data["a"], "b": data["b"]},
            "none": {},
        }[route]
        bad = (
            route == "none"
            or kind in ("nan", "inf", "wrong_shape", "nonpsd", "nonsym", "sigma2_shape")
            or (kind == "neg_sigma2" and "sigma2" in kw)
            or (kind in ("a_gt_b", "a_pos") and "a" in kw)
        )
        fit = lambda: KernelUncertainty.from_parameters(K, **kw)  # noqa: E731
    key = _digest(route, K, Ks, data["sigma2"], data["a"], data["b"])

    def check(U):
        assert not bad, f"bad input ({kind}, {route}) was accepted"
        Kb = U.K_bar
        assert np.all(np.isfinite(Kb)) and np.allclose(Kb, Kb.T)
        assert np.linalg.eigvalsh(Kb)[0] >= -1e-8 * max(1.0, np.abs(Kb).max()) * U.n
        for noise in ("gaussian", "finite"):
            try:
                beta = U.beta(noise)
            except ValueError:
                continue  # that model was not given
            assert beta.shape == (U.n, U.n) and np.all(np.isfinite(beta)) and np.all(beta >= 0)
        if U.gamma is not None:  # eq. 9's gamma: in [0, 1] (gamma^2 = mu / artanh(mu) <= 1)
            assert np.all((U.gamma >= 0) & (U.gamma <= 1 + 1e-9))

    _attempt("KernelUncertainty", key, bad, fit, check)


# ------------------------------------------------------------------------------ multi-class
@st.composite
def multiclass_data(draw, max_n=24):
    L = draw(st.integers(1, max_n))
    p = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    X = rng.standard_normal((L, p)) * draw(st.sampled_from([1e-4, 1.0, 1.0, 1e3]))
    nC = draw(st.sampled_from([2, 2, 3, 4]))
    y = rng.integers(0, nC, L)
    y[: min(L, nC)] = np.arange(min(L, nC))
    kind = draw(
        st.sampled_from(
            ["ok"] * 6
            + ["nan", "inf", "constant", "duplicates", "one_class", "many_class", "empty", "bad_len", "str_labels"]
        )
    )
    if kind == "nan":
        X[0, 0] = np.nan
    elif kind == "inf":
        X[-1, -1] = -np.inf
    elif kind == "constant":
        X[:, :] = 2.0
    elif kind == "duplicates":
        X = np.repeat(X[:1], L, axis=0)
    elif kind == "one_class":
        y[:] = 0
    elif kind == "many_class":
        y = np.arange(L) % 7
    elif kind == "empty":
        X, y = X[:0], y[:0]
    elif kind == "bad_len":
        y = np.append(y, 0)
    elif kind == "str_labels":
        y = np.array(["cat", "dog", "emu", "gnu"])[y % 4]
    n_classes = np.unique(y).size
    bad = kind in ("nan", "inf", "empty", "bad_len") or n_classes < 2 or L < 2
    return X, y, kind, bad


SIGMA_GOOD = ["thesis", 0.5, 1.0, 10.0]
SIGMA_BAD = [0.0, -1.0, np.nan, "wide"]


def _multiclass_check(est, X, y, bad, what):
    assert not bad, f"bad input ({what}) was accepted"
    S = est.decision_function(X)
    assert np.all(np.isfinite(S))
    labels = set(np.unique(est.predict(X).astype(str)))
    assert labels <= set(np.asarray(est.classes_).astype(str)) | {"*"}


@fuzz(250)
@given(data=multiclass_data(), st_=st.data())
def test_fuzz_weston_watkins_svc(data, st_):
    X, y, kind, bad_data = data
    draw = st_.draw
    C, bad_c = pick(draw, C_GOOD, C_BAD)
    sigma, bad_s = pick(draw, SIGMA_GOOD, SIGMA_BAD)
    kernel, bad_k = pick(draw, ["rbf", "rbf", "linear", "consolidation"], ["poly"], p_bad=0.1)
    nc, bad_nc = pick(draw, [None, None, 8], [0, -2, 2.5], p_bad=0.1)
    solver = draw(st.sampled_from(["auto", "auto", "dual", "primal"]))
    bad_combo = nc is not None and kernel == "linear"
    bad = bad_data or bad_c or bad_s or bad_k or bad_nc or bad_combo
    est = WestonWatkinsSVC(
        C=C, kernel=kernel, sigma=sigma, n_components=nc, solver=solver, m=5, n_subclasses=2, primal_max_iter=50
    )
    key = _digest("WW", X, y, C, sigma, kernel, nc, solver)

    def check(e):
        _multiclass_check(e, X, y, bad, f"{kind}, C={C}, sigma={sigma}, kernel={kernel}, n_components={nc}")
        # never worse than the trivial feasible point W = 0, b = 0 (objective C n (classes - 1) in MSVMpack's
        # convention, margin 1; issue 15 changed it from eq. 1.9's margin 2 with zeta = C: 2 C n (classes - 1))
        codes = np.searchsorted(e.classes_, y)
        if e.rff_ is not None:
            sq, scores = float(np.sum(e.coef_**2)), e._features(X) @ e.coef_ + e.intercept_
        else:
            Kx = e._gram(X, X)
            sq, scores = float(np.sum(e.dual_coef_ * (Kx @ e.dual_coef_))), Kx @ e.dual_coef_ + e.intercept_
        obj = msvmpack_objective(sq, scores, codes, C)
        trivial = C * X.shape[0] * (e.classes_.size - 1)
        assert obj <= trivial * (1 + 1e-6) + 1e-9, (obj, trivial)

    _attempt("WestonWatkinsSVC", key, bad, lambda: est.fit(X, y), check)


@fuzz(130)
@given(data=multiclass_data(max_n=14), st_=st.data())
def test_fuzz_hyperbolic_svc(data, st_):
    X, y, kind, bad_data = data
    draw = st_.draw
    lam, bad_l = pick(draw, [1e-4, 1e-2, 1.0], [0.0, -1.0, np.nan])
    gamma, bad_g = pick(draw, ["auto", "auto", 0.1, 1.0], [0.0, 1.5, -0.1, np.nan, "big"])
    sigma, bad_s = pick(draw, SIGMA_GOOD, SIGMA_BAD)
    nc, bad_nc = pick(draw, [None, None, 6], [0, -1], p_bad=0.1)
    rank, bad_r = pick(draw, [3, 5, None], [0, -2], p_bad=0.1)
    bad = bad_data or bad_l or bad_g or bad_s or bad_nc or (bad_r and nc is None)
    est = HyperbolicSVC(lam=lam, gamma=gamma, sigma=sigma, n_components=nc, max_rank=rank, n_starts=1, max_iter=3)
    key = _digest("HYP", X, y, lam, gamma, sigma, nc, rank)

    def check(e):
        _multiclass_check(
            e, X, y, bad, f"{kind}, lam={lam}, gamma={gamma}, sigma={sigma}, n_components={nc}, max_rank={rank}"
        )
        assert np.isfinite(e.objective_)
        for h in e.histories_:  # CCP never increases the objective
            assert np.all(np.diff(h) <= 1e-9 * (1 + np.abs(np.asarray(h[:-1])))), h

    _attempt("HyperbolicSVC", key, bad, lambda: est.fit(X, y), check)


@st.composite
def feature_codes(draw):
    n = draw(st.integers(1, 14))
    D = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    Phi = rng.standard_normal((n, D)) * draw(st.sampled_from([1e-3, 1.0, 1.0, 100.0]))
    nC = draw(st.sampled_from([2, 3, 4]))
    codes = rng.integers(0, nC, n)
    codes[: min(n, nC)] = np.arange(min(n, nC))
    kind = draw(
        st.sampled_from(
            ["ok"] * 6
            + [
                "nan",
                "inf",
                "neg_code",
                "big_code",
                "float_code",
                "one_class",
                "short_codes",
                "empty_class",
                "duplicates",
                "constant",
            ]
        )
    )
    n_classes = nC
    if kind == "nan":
        Phi[0, 0] = np.nan
    elif kind == "inf":
        Phi[-1, 0] = np.inf
    elif kind == "neg_code":
        codes[0] = -1
    elif kind == "big_code":
        codes[-1] = nC
    elif kind == "float_code":
        codes = codes + 0.5
    elif kind == "one_class":
        codes[:] = 0
        n_classes = None
    elif kind == "short_codes":
        codes = codes[:-1]
    elif kind == "empty_class":
        n_classes = nC + 1  # class nC has no point
    elif kind == "duplicates":
        Phi = np.repeat(Phi[:1], n, axis=0)
    elif kind == "constant":
        Phi[:] = 1.0
    bad = kind in ("nan", "inf", "neg_code", "big_code", "float_code", "one_class", "short_codes")
    # with n_classes given, a class without points is a legal WW problem (its score is only pushed
    # down); the hyperbolic machine rejects it (O_k must lie in the hull of class k)
    return Phi, codes, n_classes, kind, bad


def _ww_trivial(zeta, n, nC):
    return 2.0 * zeta * n * (nC - 1)


# pinned inputs (found by fuzzing, cf90aa0 / f3c0cd5): non-integer class codes (WestonWatkinsFeatures crashed with
# IndexError, WestonWatkinsKernelDual and HyperbolicProblem truncated them or raised TypeError) and a non-symmetric
# Gram matrix (WestonWatkinsKernelDual silently symmetrised it); each must raise ValueError
_PHI4 = np.array([[0.0], [1.0], [2.0], [3.0]])
_FLOAT_CODES = (_PHI4, np.array([0.5, 1.5, 0.5, 1.5]), 2, "float_code", True)
_OK_CODES = (_PHI4, np.array([0, 1, 0, 1]), 2, "ok", False)


@fuzz(250)
@given(
    data=feature_codes(),
    zeta_=picked(C_GOOD, C_BAD),
    which=st.sampled_from(["kernel_dual", "features_qp", "features_lbfgs"]),
    Kkind=st.sampled_from(["gram"] * 5 + ["nonpsd", "nonsym", "nonsquare"]),
)
@example(data=_FLOAT_CODES, zeta_=(1.0, False), which="kernel_dual", Kkind="gram")
@example(data=_FLOAT_CODES, zeta_=(1.0, False), which="features_qp", Kkind="gram")
@example(data=_FLOAT_CODES, zeta_=(1.0, False), which="features_lbfgs", Kkind="gram")
@example(data=_OK_CODES, zeta_=(1.0, False), which="kernel_dual", Kkind="nonsym")
def test_fuzz_ww_builders(data, zeta_, which, Kkind):
    Phi, codes, n_classes, kind, bad_data = data
    zeta, bad_z = zeta_
    if which != "kernel_dual":
        Kkind = "gram"  # the feature builders take no Gram matrix
    if Kkind == "nonsym" and Phi.shape[0] < 2:
        Kkind = "gram"  # a 1 x 1 matrix cannot be made non-symmetric
    bad = bad_data or bad_z or Kkind != "gram"
    key = _digest(which, Phi, codes, n_classes, zeta, Kkind)

    def fit():
        if which == "kernel_dual":
            K = Phi @ Phi.T
            if Kkind == "nonpsd":
                K = K - (1.0 + 2 * np.abs(K).max()) * np.eye(K.shape[0])
            elif Kkind == "nonsym":
                K = K + np.triu(np.ones_like(K), 1)
            elif Kkind == "nonsquare":
                K = K[:, :-1] if K.shape[1] > 1 else np.ones((K.shape[0], 2))
            f = WestonWatkinsKernelDual(K, codes, n_classes, zeta)
            return f, f.solve("clarabel"), K
        f = WestonWatkinsFeatures(Phi, codes, n_classes, zeta)
        if which == "features_qp":
            return f, f.solve("clarabel"), None
        # a cheaper continuation (the default mu_min 1e-6, maxiter 2000 takes up to seconds per fit);
        # the checks below (trivial-point bound, never below the QP optimum) hold for any iterate
        return f, f.solve("lbfgs", mu_min=1e-4, maxiter=300), None

    def check(res):
        f, sol, K = res
        assert not bad, f"bad input ({kind}, K {Kkind}, zeta={zeta}) was accepted"
        nC = f.n_classes
        if which == "kernel_dual":
            beta, b = sol["beta"], sol["b"]
            sq, scores = float(np.sum(beta * (K @ beta))), K @ beta + b
        else:
            sq, scores = float(np.sum(sol["W"] ** 2)), Phi @ sol["W"] + sol["b"]
        assert np.all(np.isfinite(scores))
        obj = ww_objective(sq, scores, f.codes, zeta)
        assert obj <= _ww_trivial(zeta, Phi.shape[0], nC) * (1 + 1e-6) + 1e-9, (obj, which)
        if which == "features_lbfgs":  # no solver may get below the QP optimum; and it should get close
            try:
                opt = WestonWatkinsFeatures(Phi, codes, n_classes, zeta).solve("clarabel").objective
            except SolverError:
                return "fit (second solver declined)"
            assert obj >= opt - 1e-6 * max(1.0, abs(opt)), (obj, opt)
        return None

    _attempt({"kernel_dual": "WestonWatkinsKernelDual"}.get(which, "WestonWatkinsFeatures"), key, bad, fit, check)


@pytest.mark.parametrize("builder", ["WestonWatkinsFeatures", "WestonWatkinsKernelDual"])
def test_ww_builders_reject_non_integer_codes(builder):
    Phi = np.array([[0.0], [1.0], [2.0], [3.0]])
    codes = np.array([0.5, 1.5, 0.5, 1.5])
    with pytest.raises(ValueError):
        if builder == "WestonWatkinsFeatures":
            WestonWatkinsFeatures(Phi, codes, 2, 1.0)
        else:
            WestonWatkinsKernelDual(Phi @ Phi.T, codes, 2, 1.0)


def test_ww_kernel_dual_rejects_nonsym():
    Phi = np.array([[0.0], [1.0], [2.0], [3.0]])
    K = Phi @ Phi.T + np.triu(np.ones((4, 4)), 1)
    with pytest.raises(ValueError, match="symmetric"):
        WestonWatkinsKernelDual(K, np.array([0, 1, 0, 1]), 2, 1.0)


@fuzz(130)
@given(
    data=feature_codes(),
    gamma_=picked([1e-3, 0.1, 1.0], [0.0, -0.5, 1.5, np.nan]),
    lam_=picked([1e-4, 1e-2, 10.0], [0.0, -1.0, np.inf]),
    backend=st.sampled_from(["ccp", "ccp", "anchors"]),
)
@example(data=_FLOAT_CODES, gamma_=(0.1, False), lam_=(1e-2, False), backend="ccp")
@example(data=_FLOAT_CODES, gamma_=(0.1, False), lam_=(1e-2, False), backend="anchors")
def test_fuzz_hyperbolic_builder(data, gamma_, lam_, backend):
    Phi, codes, n_classes, kind, bad_data = data
    (gamma, bad_g), (lam, bad_l) = gamma_, lam_
    empty = not bad_data and np.any(np.bincount(codes, minlength=n_classes) == 0)
    bad = bad_data or bad_g or bad_l or empty
    key = _digest(Phi, codes, n_classes, gamma, lam, backend)

    def fit():
        f = HyperbolicProblem(Phi, codes, n_classes, gamma=gamma, lam=lam)
        opts = dict(n_starts=1, max_iter=3) if backend == "ccp" else dict(n_starts=1, max_iter=3, n_anchors=3)
        return f, f.solve(backend, **opts)

    def check(res):
        f, sol = res
        assert not bad, f"bad input ({kind}, gamma={gamma}, lam={lam}) was accepted"
        assert np.isfinite(f.objective(sol)) and np.all(np.isfinite(f.decision_function(sol, Phi)))
        for h in sol.info.get("histories", []):
            assert np.all(np.diff(h) <= 1e-9 * (1 + np.abs(np.asarray(h[:-1])))), h
        stops = sol.info.get("stops", [])
        # a start whose SOCP step failed at every route is discarded (all failed: SolverError)
        best = sol.info.get("best_start", 0)
        assert not (stops and str(stops[best]).startswith("solver_failed")), stops
        if any(sol.info.get("retries", [])):
            return "fit (a CCP step needed a retry: recorded in info['retries'])"
        return None

    _attempt("HyperbolicProblem", key, bad, fit, check)


# pinned: one point far from the origin, one class (no direction): kappa^11(x, x) must be exactly 1;
# the Gram-form distance gave 0.99999999813735485 (found with a newer hypothesis's draws)
_ISSUE_X = np.array([[2040.91912139, -2555.66503131, 418.09884673]])


def _offset_data(offset, n=12, p=3, seed=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) + offset * rng.standard_normal(p)
    return X, np.arange(n) % 2, "offset", False


@fuzz(200)
@given(
    data=multiclass_data(max_n=16),
    sigma_=picked([0.3, 1.0, 5.0], [0.0, -1.0, np.nan, np.inf]),
    sigma_dir_=picked([None, 1.0, np.inf], [0.0, -2.0, np.nan]),
    m_=picked([None, 0, 3, 11], [-1, 2.5, True], 0.1),
    nsub_=picked([1, 2, 3], [0, -1, 1.5], 0.1),
    tau0_=picked([None, 0.0, 0.5, 1.0], [-0.1, 1.5, np.nan], 0.1),
    offset=st.sampled_from([0.0, 0.0, 0.0, 1e3, 1e6]),
)
@example(
    data=(_ISSUE_X, np.array([0]), "ok", True),
    sigma_=(1.0, False),
    sigma_dir_=(None, False),
    m_=(11, False),
    nsub_=(2, False),
    tau0_=(0.5, False),
    offset=0.0,
)
@example(
    data=_offset_data(1e4),
    sigma_=(1.0, False),
    sigma_dir_=(None, False),
    m_=(11, False),
    nsub_=(3, False),
    tau0_=(None, False),
    offset=0.0,
)
@example(
    data=_offset_data(1e6),
    sigma_=(5.0, False),
    sigma_dir_=(np.inf, False),
    m_=(None, False),
    nsub_=(3, False),
    tau0_=(0.5, False),
    offset=0.0,
)
def test_fuzz_consolidation_kernel(data, sigma_, sigma_dir_, m_, nsub_, tau0_, offset):
    X, y, kind, bad_data = data
    if offset:  # the same data far from the origin: the kernel depends on differences only
        X = X + offset * np.array([1.0, -0.7, 0.4, 0.2])[: X.shape[1]]
    (sigma, bad_s), (sigma_dir, bad_sd), (m, bad_m), (nsub, bad_n), (tau0, bad_t) = sigma_, sigma_dir_, m_, nsub_, tau0_
    # the kernel itself only needs X and labels of the right length; one class or many is fine
    bad = kind in ("nan", "inf", "empty", "bad_len") or bad_s or bad_sd or bad_m or bad_n or bad_t
    key = _digest("CK", X, y, sigma, sigma_dir, m, nsub, tau0, offset)

    def fit():
        k = ConsolidationKernel(sigma=sigma, sigma_dir=sigma_dir, m=m, n_subclasses=nsub, tau0=tau0)
        k.fit(X, y)
        return k, k(X)

    def check(res):
        k, G = res
        assert not bad, (
            f"bad input ({kind}, sigma={sigma}, sigma_dir={sigma_dir}, m={m}, n_subclasses={nsub}, "
            f"tau0={tau0}) was accepted"
        )
        assert G.shape == (X.shape[0], X.shape[0]) and np.all(np.isfinite(G))
        # every entry: the definition on direct differences in long double, up to a rounding bound that
        # scales with dimension, spread / direction length and number of terms, not with ||x||
        tol = consolidation_tolerance(k, X)
        np.testing.assert_allclose(G, consolidation_reference(k, X).astype(float), rtol=0, atol=tol)
        np.testing.assert_allclose(np.diag(G), k.diag_value(), rtol=0, atol=tol)  # kappa^m(x, x) = Z
        np.testing.assert_allclose(G, G.T, rtol=0, atol=2 * tol)
        lam_min = np.linalg.eigvalsh(0.5 * (G + G.T))[0]  # a kernel: PSD (Bochner), up to rounding
        assert lam_min >= -psd_tolerance(G, tol), (lam_min, psd_tolerance(G, tol))

    _attempt("ConsolidationKernel", key, bad, fit, check)


def test_gamma_eq9_exact_near_mu_zero():
    """Regression (found by test_fuzz_kernel_uncertainty): gamma of eq. 9 came out > 1 (up to 4e-5
    relative at mu = 1e-9) from cancellation in the ratio near z = 1e-6; it must match the closed
    form mu / artanh(mu) <= 1 to round-off."""
    from rsvm_conic.uncertainty.kernel_matrix import gamma_closed_form, gamma_finite_support

    mu = np.concatenate([np.linspace(-0.999, 0.999, 201), [0.0, 1e-9, -1e-7, 1e-4, 0.9999999]])
    np.testing.assert_allclose(gamma_finite_support(mu), gamma_closed_form(mu), rtol=1e-12, atol=0)
