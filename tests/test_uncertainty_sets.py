"""Uncertainty sets: parsing, validation, and the closed-form worst case against numeric search."""

import numpy as np
import pytest
from scipy.optimize import minimize

from rsvm_conic.uncertainty import UncertaintySet, psd_sqrt

RNG = np.random.default_rng(0)


def random_psd(n, rng, rank=None):
    B = rng.standard_normal((n, rank or n))
    return B @ B.T / n


def test_psd_sqrt_is_a_square_root():
    S = random_psd(6, RNG, rank=3)  # singular on purpose
    A = psd_sqrt(S)
    np.testing.assert_allclose(A @ A.T, S, atol=1e-10)
    np.testing.assert_allclose(A, A.T, atol=1e-12)


@pytest.mark.parametrize(
    "Sigma, groups, k",
    [
        (None, None, 1),
        (np.ones(4), None, 1),
        (np.eye(4), None, 1),
        (np.ones((2, 4)), np.array([0, 1] * 5), 2),
        (np.stack([np.eye(4)] * 3), np.array([0, 1, 2] * 3 + [0]), 3),
        (np.stack([np.eye(4)] * 10), None, 10),
        (np.ones((10, 4)), "sample", 10),
    ],
)
def test_shapes_resolve(Sigma, groups, k):
    r = UncertaintySet(Sigma=Sigma, groups=groups).resolve(10, 4)
    assert r.n_groups == k
    assert r.group_index.shape == (10,)
    assert r.group_index.max() == k - 1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(Sigma=-np.eye(3)), "positive semidefinite"),
        (dict(Sigma=np.array([[1.0, 2.0, 0], [0, 1, 0], [0, 0, 1]])), "symmetric"),
        (dict(Sigma=np.eye(4)), "3x3"),
        (dict(Sigma=np.array([1.0, -1.0, 1.0])), "negative"),
        (dict(Sigma=np.full((3, 3), np.nan)), "NaN"),
        (dict(radius=-1.0), "radius"),
        (dict(p=3), "norm"),
        (dict(Sigma=np.stack([np.eye(3)] * 4)), "groups="),
        (dict(Sigma=np.stack([np.eye(3)] * 2), groups=np.arange(5) % 3), "distinct"),
        (dict(Sigma=np.eye(3), groups=np.arange(4)), "one label per sample"),
        (dict(groups=np.arange(5) % 2), "groups was given without Sigma"),
        (dict(groups="sample"), "groups was given without Sigma"),
        (dict(sample_scale=-np.ones(5)), "sample_scale must hold 5 nonnegative"),
    ],
)
def test_bad_sets_raise_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        UncertaintySet(**kwargs).resolve(5, 3)


def _numeric_worst(w, y, A, gamma, p, rng, n_samples=4000):
    """min over ||u||_p <= gamma of y <w, A u>: boundary sampling then local refinement (SLSQP)."""
    n = A.shape[1]
    obj = lambda u: y * float(w @ (A @ u))
    # sampling on the boundary of the p-ball
    if p == 2:
        U = rng.standard_normal((n_samples, n))
    elif p == np.inf:
        U = rng.choice([-1.0, 1.0], size=(n_samples, n))
    else:
        U = np.zeros((n_samples, n))
        U[np.arange(n_samples), rng.integers(0, n, n_samples)] = rng.choice([-1.0, 1.0], n_samples)
        U += 0.05 * rng.standard_normal((n_samples, n))
    pn = np.linalg.norm(U, ord=p, axis=1, keepdims=True)
    U = gamma * U / pn
    vals = y * (U @ (A.T @ w))
    u0 = U[np.argmin(vals)]
    cons = {"type": "ineq", "fun": lambda u: gamma - np.linalg.norm(u, ord=p)}
    res = minimize(obj, u0, constraints=[cons], method="SLSQP", options={"ftol": 1e-12, "maxiter": 500})
    u = res.x * min(1.0, gamma / np.linalg.norm(res.x, ord=p))  # project back into the ball
    return min(vals.min(), obj(u))


@pytest.mark.parametrize("p", [1, 2, np.inf])
@pytest.mark.parametrize("kind", ["full", "diag", "identity"])
def test_worst_case_closed_form_matches_numeric_search(p, kind):
    rng = np.random.default_rng(1)
    n, L = 4, 6
    if kind == "full":
        Sigma = np.stack([random_psd(n, rng) + 0.1 * np.eye(n) for _ in range(L)])
    elif kind == "diag":
        Sigma = rng.uniform(0.1, 2.0, (L, n))
    else:
        Sigma = None
    groups = "sample" if kind == "diag" else None
    r = UncertaintySet(Sigma=Sigma, groups=groups, p=p, radius=0.7, sample_scale=rng.uniform(0.5, 1.5, L)).resolve(L, n)
    w = rng.standard_normal(n)
    y = rng.choice([-1.0, 1.0], L)
    dx = r.worst_case(w, y)
    closed = -r.robust_penalty(w)
    for i in range(L):
        A = r.factors[r.group_index[i]]
        A = np.diag(A) if r.diagonal else A
        # the closed-form perturbation is admissible and attains -gamma ||A^T w||_q
        u = np.linalg.solve(A, dx[i])
        assert np.linalg.norm(u, ord=p) <= r.gamma[i] * (1 + 1e-9)
        assert y[i] * w @ dx[i] == pytest.approx(closed[i], rel=1e-9)
        # and no perturbation found numerically does better
        numeric = _numeric_worst(w, y[i], A, r.gamma[i], p, rng)
        assert numeric >= closed[i] - 1e-8 * max(1, abs(closed[i]))
        assert numeric <= closed[i] + 1e-4 * max(1, abs(closed[i]))  # the search gets there too


def test_sample_ball_stays_inside_and_reaches_boundary():
    rng = np.random.default_rng(2)
    S = random_psd(3, rng) + 0.2 * np.eye(3)
    for p in (1, 2, np.inf):
        r = UncertaintySet(Sigma=S, p=p, radius=0.5).resolve(4, 3)
        D = r.sample_ball(0, 500, rng)
        U = np.linalg.solve(r.factors[0], D.T).T
        nrm = np.linalg.norm(U, ord=p, axis=1)
        np.testing.assert_allclose(nrm, 0.5, rtol=1e-9)
