"""Fuzzing every other public estimator with hypothesis: each input fits (and then predicts finite
scores and known labels) or raises ValueError with a message -- never a solver crash or a hang.
After each test the estimator must have fitted and raised ValueError at least once; the report of
outcomes prints at module teardown (``-s``, or "Captured stdout teardown" with ``-rA``)."""

import warnings

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from rsvm_conic.estimators import PkSVC, RobustFeatureSVC, SafeSVC

from _fuzzutil import Tally, digest, fuzz_settings

FUZZ = fuzz_settings(120)
TALLY = Tally("fuzz (estimators)")  # estimator -> {hash of (X, y, parameters, fit arguments): outcome}
_fuzz_outcomes_of_this_test, _fuzz_report_at_module_teardown = TALLY.fixtures()


def _key(est, X, y, fit_kw):
    return digest(X, np.asarray(y), repr(est.get_params()), *(fit_kw.get(k) for k in sorted(fit_kw)))


@st.composite
def inputs(draw, max_classes=2):
    L = draw(st.integers(1, 24))
    n = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    X = rng.standard_normal((L, n)) * draw(st.sampled_from([1e-4, 1.0, 1.0, 1e3]))
    y = rng.integers(0, max_classes, L)
    y[: min(L, max_classes)] = np.arange(min(L, max_classes))
    kind = draw(
        st.sampled_from(
            ["ok"] * 10 + ["nan", "inf", "constant", "duplicates", "one_class", "many_class", "empty", "bad_len"]
        )
    )
    if kind == "nan":
        X[0, 0] = np.nan
    elif kind == "inf":
        X[-1, -1] = np.inf
    elif kind == "constant":
        X[:, :] = 2.0
    elif kind == "duplicates":
        X = np.repeat(X[:1], L, axis=0)
    elif kind == "one_class":
        y[:] = 0
    elif kind == "many_class":
        y = np.arange(L) % (max_classes + 2)
    elif kind == "empty":
        X, y = X[:0], y[:0]
    elif kind == "bad_len":
        y = np.append(y, 0)
    return X, y


def _run(name, est, X, y, **fit_kw):
    key = _key(est, X, y, fit_kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est.fit(X, y, **fit_kw)
        except ValueError as exc:
            assert str(exc)
            TALLY.record(name, "ValueError", key)
            return
        scores = est.decision_function(X)
        assert np.all(np.isfinite(scores))
        assert set(np.unique(est.predict(X))) <= set(est.classes_)
    TALLY.record(name, "fit", key)


# valid values twice as likely as invalid ones, so that fits (and their checks) are well covered too
positive = st.sampled_from([1e-3, 1.0, 1.0, 1.0, 100.0, 1e3, 0.0, -1.0, np.nan])


@FUZZ
@given(
    data=inputs(),
    C=positive,
    radius=positive,
    fmap=st.sampled_from(["rff", "nystroem", "fourier"]),
    D=st.sampled_from([2, 8, 8, 3, 0]),
    fnorm=st.sampled_from([1, 2, np.inf, 2]),
)
def test_fuzz_robust_feature_svc(data, C, radius, fmap, D, fnorm):
    X, y = data
    est = RobustFeatureSVC(feature_map=fmap, n_components=D, C=C, radius=radius, feature_norm=fnorm, random_state=0)
    _run("RobustFeatureSVC", est, X, y)


@FUZZ
@given(data=inputs(), C=positive, smin=st.sampled_from([0.0, 0.05, -1.0]), smax=st.sampled_from([0.5, 1.0, 0.01]))
def test_fuzz_safe_svc(data, C, smin, smax):
    X, y = data
    _run("SafeSVC", SafeSVC(C=C, sigma_min=smin, sigma_max=smax, max_iter=5, random_state=0), X, y)


@FUZZ
@given(
    data=inputs(),
    C=positive,
    sigma=positive,
    sig_kind=st.sampled_from(["none", "diag", "none", "diag", "bad", "nonpsd"]),
)
# found by hypothesis 6.0 (floors leg): two support vectors in 2-D, whose (2, 2) diagonal covariances
# were read as ambiguous when scoring against the support vectors only
@example(
    data=(
        np.array(
            [[-5.78696565e-05, -1.24149778e-04], [-3.58178211e-05, -3.53245766e-05], [1.97587010e-05, 7.10178160e-05]]
        ),
        np.array([0, 1, 0]),
    ),
    C=1.0,
    sigma=0.001,
    sig_kind="diag",
)
def test_fuzz_pksvc(data, C, sigma, sig_kind):
    X, y = data
    L, n = X.shape
    Sigma = {"none": None, "diag": np.full((L, n), 0.1), "bad": np.ones((L + 1, n)), "nonpsd": -np.ones((L, n, n))}[
        sig_kind
    ]
    _run("PkSVC", PkSVC(C=C, sigma=sigma), X, y, Sigma=Sigma)
