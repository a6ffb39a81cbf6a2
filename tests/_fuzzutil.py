"""Shared by the fuzz tests (and the kernel tests that reuse the references below).

* :func:`digest` -- a stable hash of an input (arrays, parameters), to count distinct inputs;
* :func:`fuzz_settings` -- one hypothesis profile for every fuzz test: seeded from the test's name by
  default (the CI run is reproducible), or random with ``RSVM_FUZZ_RANDOM=1`` (then ``--hypothesis-seed=N``
  picks the draws); the default run draws a quarter of each test's examples, ``RSVM_FUZZ_SCALE=1`` all of them
  (CI's slow run: ``RSVM_FUZZ_SCALE=1 python -m pytest -m "slow or fuzz"``), ``RSVM_FUZZ_SCALE=k`` any multiple;
  every fuzz test carries the ``fuzz`` marker;
* :class:`Tally` -- outcome counts: after every fuzz test, each target it exercised must have both
  fitted at least once and raised ValueError at least once (a per-test check, no test depends on
  another or on their order); the per-module report is printed at module teardown;
* rounding-error bounds and extended-precision references for the kernel checks.  Every numerical
  assertion in the fuzz tests is a property that holds in exact arithmetic, checked up to a bound
  on the rounding error that scales with the input (its magnitude, dimension, size), so a
  different hypothesis release drawing other examples cannot turn a correct result into a failure.
"""

import hashlib
import os
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, seed, settings

EPS = float(np.finfo(np.float64).eps)
RANDOM = os.environ.get("RSVM_FUZZ_RANDOM", "0") not in ("", "0")
SCALE = float(os.environ.get("RSVM_FUZZ_SCALE", "0.25"))


def fuzz_settings(max_examples: int):
    """A decorator (above ``@given``): the profile, the seed of the draws and the ``fuzz`` marker.

    ``max_examples`` is the full count (``RSVM_FUZZ_SCALE=1``); the default run draws ``SCALE`` times as many.

    No shrinking phase: a failing example is reported as generated (shrinking solves is slow).
    Pinned past failures run first (``@example``, phase explicit).  No example database: a
    failure is reported with its inputs (and, when random, a ``@reproduce_failure`` blob).

    The draws are seeded from the test's module and name (``hypothesis.seed``), not from its source
    text as ``derandomize`` would: reformatting or editing a test body does not change which inputs it
    draws (it did once, and a floors run met two new inputs).  They still change with the hypothesis
    release, which is why every assertion is a property that holds for any input.
    """
    profile = settings(
        max_examples=max(1, round(max_examples * SCALE)),
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=False,
        database=None,
        print_blob=RANDOM,
        phases=[Phase.explicit, Phase.generate],
    )

    def apply(test):
        test = profile(test)
        test = test if RANDOM else seed(f"{test.__module__}.{test.__qualname__}")(test)
        return pytest.mark.fuzz(test)

    return apply


_FALLBACK = re.compile(r"route '[^']+' failed .*; falling back to '[^']+'", re.S)


def fit_asserting_warnings(est, X, y, *, fallback=True, **kwargs):
    """``est.fit(X, y, **kwargs)``, asserting the project's warnings a (fuzzed) input may cause: a
    ``ConstantClassifierWarning`` in its documented form naming one of the classes, a ``SolverWarning``
    (with ``fallback``; without, the caller's filters decide) only for a fallback naming both routes.  Other
    warnings are passed on."""
    from rsvm_conic.exceptions import ConstantClassifierWarning
    from rsvm_conic.exceptions import SolverWarning

    asserted = (ConstantClassifierWarning, SolverWarning) if fallback else (ConstantClassifierWarning,)
    with warnings.catch_warnings(record=True) as caught:
        for category in asserted:
            warnings.simplefilter("always", category)
        try:
            est.fit(X, y, **kwargs)
        finally:
            for w in caught:
                if not issubclass(w.category, asserted):
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    for w in caught:
        if issubclass(w.category, ConstantClassifierWarning):
            named = [c for c in est.classes_ if f"every prediction is {c})" in str(w.message)]
            assert str(w.message).startswith(f"{type(est).__name__}: the fitted classifier is constant") and named
        elif issubclass(w.category, asserted[-1]) and fallback:
            assert _FALLBACK.search(str(w.message)), str(w.message)
    return est


def digest(*objs) -> str:
    """SHA-1 over arrays (dtype, shape, bytes), nested lists/tuples and ``repr`` of anything else."""
    h = hashlib.sha1()
    for o in objs:
        if isinstance(o, np.ndarray):
            h.update(str((o.dtype, o.shape)).encode())
            h.update(np.ascontiguousarray(o).tobytes())
        elif isinstance(o, (list, tuple)):
            h.update(b"(" + digest(*o).encode() + b")")
        else:
            h.update(repr(o).encode())
        h.update(b"|")
    return h.hexdigest()


# ------------------------------------------------------------------------------ outcome tally
class Tally:
    """Outcomes of one fuzz module: ``(target, outcome) -> examples`` and distinct inputs per target.

    ``outcome`` is ``"ValueError"`` or starts with ``"fit"``; ``bad`` (optional) says whether the
    input was deliberately invalid.  ``fixtures()`` gives the two autouse fixtures of the module.
    """

    def __init__(self, title: str):
        self.title = title
        self.outcomes: dict = {}
        self.seen: dict = {}  # target -> {input hash: (bad, outcome)}
        self.notes: dict = {}  # free counters, e.g. "second solver declined"

    def record(self, target, outcome, key, bad=None):
        self.outcomes[(target, outcome)] = self.outcomes.get((target, outcome), 0) + 1
        self.seen.setdefault(target, {})[key] = (bad, outcome)

    def note(self, what):
        self.notes[what] = self.notes.get(what, 0) + 1

    def report(self) -> str:
        lines = [f"{self.title} outcomes per example: {self.outcomes}"]
        if self.notes:
            lines.append(f"  notes: {self.notes}")
        n_distinct = n_rejected = n_bad = 0
        labelled = False
        for target in sorted(self.seen):
            seen = list(self.seen[target].values())
            outs = [o for _, o in seen]
            line = f"  {target}: {len(seen)} distinct inputs -> { ({o: outs.count(o) for o in sorted(set(outs))}) }"
            bad = [o for b, o in seen if b]
            if any(b is not None for b, _ in seen):
                line += f"; {len(bad)} distinct bad inputs -> { ({o: bad.count(o) for o in sorted(set(bad))}) }"
                n_bad += len(bad)
                labelled = True
            n_distinct += len(seen)
            n_rejected += outs.count("ValueError")
            lines.append(line)
        lines.append(
            f"  total: {n_distinct} distinct inputs, {n_rejected} rejected with ValueError"
            + (f", {n_bad} distinct bad inputs" if labelled else "")
        )
        return "\n".join(lines)

    def check_since(self, before: dict, test: str):
        """Every target exercised since ``before`` both fitted and raised ValueError at least once."""
        new = {k: v - before.get(k, 0) for k, v in self.outcomes.items() if v > before.get(k, 0)}
        targets = sorted({t for t, _ in new})
        assert targets, f"{test} recorded no outcome: the fuzz ran no example"
        for t in targets:
            outs = {o for (tt, o) in new if tt == t}
            assert any(o.startswith("fit") for o in outs) and "ValueError" in outs, (
                f"{test}: target {t} got only {sorted(outs)}: the fuzz no longer covers both fits and rejections"
            )

    def fixtures(self):
        """``(per_test, per_module)`` autouse fixtures: assign both to module-level names."""

        @pytest.fixture(autouse=True)
        def _fuzz_outcomes_of_this_test(request):
            before = dict(self.outcomes)
            yield
            rep = getattr(request.node, "rep_call", None)  # set by tests/conftest.py
            if getattr(request.function, "is_hypothesis_test", False) and (rep is None or rep.passed):
                self.check_since(before, request.node.name)

        @pytest.fixture(autouse=True, scope="module")
        def _fuzz_report_at_module_teardown():
            yield
            if self.seen:  # printed with -s, or under "Captured stdout teardown" with -rA
                print("\n" + self.report())

        return _fuzz_outcomes_of_this_test, _fuzz_report_at_module_teardown


# ------------------------------------------------------------------------------ rounding bounds
def psd_tolerance(G, entry_err: float = 0.0) -> float:
    """Lower bound allowed for ``lambda_min(G)`` of a matrix that is PSD in exact arithmetic.

    ``G = G* + E`` with ``G*`` PSD and ``|E_ij| <= entry_err`` gives ``lambda_min(G) >= -n entry_err``;
    a backward-stable ``eigvalsh`` adds ``~ n eps ||G||_2 <= n eps ||G||_F`` (constant 8).
    """
    G = np.asarray(G, dtype=np.float64)
    n = G.shape[0]
    return n * entry_err + 8.0 * n * EPS * float(np.linalg.norm(G))


def spread(*arrays) -> float:
    """Diameter bound ``||ptp over rows||`` of the rows of all arrays (at least any ``||x - y||``)."""
    Z = np.vstack([np.asarray(a, dtype=np.float64) for a in arrays])
    return float(np.linalg.norm(np.ptp(Z, axis=0))) if Z.size else 0.0


def sqdist_reference(X, Y=None):
    """Squared distances from direct differences in extended precision (``np.longdouble``)."""
    X = np.asarray(X, dtype=np.longdouble)
    Y = X if Y is None else np.asarray(Y, dtype=np.longdouble)
    D = X[:, None, :] - Y[None, :, :]
    return np.sum(D * D, axis=-1)


def sqdist_rtol(p: int) -> float:
    """Relative accuracy promised by ``squared_distances`` (its docstring): ``1e4 (2p + 4) eps``."""
    return 1e4 * (2 * p + 4) * EPS


def consolidation_reference(k, X, Y=None):
    """kappa / kappa^m of a fitted ConsolidationKernel, straight from the definition (module
    docstring of rsvm_conic.kernels.consolidation) on direct differences ``x - y`` in long double."""
    from rsvm_conic.kernels.consolidation import fourier_coefficients

    ld = np.longdouble
    X = np.asarray(X, dtype=ld)
    Y = X if Y is None else np.asarray(Y, dtype=ld)
    D = X[:, None, :] - Y[None, :, :]
    sq = np.sum(D * D, axis=-1)
    g0 = np.exp(-sq / (2 * ld(k.sigma) ** 2))
    g1 = np.ones_like(sq) if np.isinf(k.sigma_dir) else np.exp(-sq / (2 * ld(k.sigma_dir) ** 2))
    tau = k.tau_.astype(ld)
    out = tau[0] * g0
    if tau.size == 1:
        return out
    d = k.d_.astype(ld)
    T = D @ k.u_.T.astype(ld)  # (n, m, M): <u_i, x - y>
    if k.m is None:
        s = np.mod(T, d) / d
        h = (1 - 2 * s) ** 2
    else:
        a = fourier_coefficients(k.m).astype(ld)
        theta = 2 * np.arccos(ld(-1)) * T / d
        h = a[0] + sum(a[j] * np.cos(j * theta) for j in range(1, k.m + 1))
    return out + g1 * np.sum(tau[1:] * h, axis=-1)


def consolidation_tolerance(k, X, Y=None) -> float:
    """Bound on ``|k(X, Y) - kappa(X, Y)|`` entrywise (kernel values lie in [0, 1]), with ``p`` the
    dimension, ``R`` the spread of the rows (:func:`spread`), ``M`` directions of lengths ``d_i``:

    * Gaussian factors ``exp(-q)``: ``sq`` has relative error ``rho = 1e4 (2p + 4) eps``
      (:func:`sqdist_rtol`), so ``|d exp(-q)| <= q e^-q rho + eps <= rho``;
    * periodic factors: ``<u_i, x - c> / d_i`` (``c`` a point of the data's bounding box) is
      rounded by ``(p + 4) eps R / d_i``; ``h_d`` is ``4/d``-Lipschitz and each cosine term
      ``a_j cos(2 pi j t / d)`` is ``2 pi j a_j / d``-Lipschitz, so with ``m_ = max(m, 1)`` both
      move by at most ``16 pi m_ (p + 4) eps R / min d_i`` (weights ``tau_i a_j`` sum to <= 1);
    * the sums of ``M (m_ + 1)`` products of terms in [0, 1]: ``4 (M (m_ + 1) + 4) eps``.

    A kernel evaluated on ``x`` itself instead of ``x - c`` would lose ``eps ||x||^2 / sigma^2``
    and ``eps ||x|| / d``: growing with the offset of the data, which this bound does not allow.
    """
    X = np.asarray(X, dtype=np.float64)
    p = X.shape[1]
    tol = sqdist_rtol(p) + 4 * EPS
    M = k.tau_.size - 1
    if M == 0:
        return tol
    R = spread(X) if Y is None else spread(X, Y)
    mm = 1 if k.m is None else max(k.m, 1)
    return tol + 16 * np.pi * mm * (p + 4) * EPS * R / float(np.min(k.d_)) + 4 * (M * (mm + 1) + 4) * EPS
