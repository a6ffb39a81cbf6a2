"""Stochastic bi-level gradient method for the safe SVM [CJ20, eq. 7] ([CW16], [CW17]).

The bi-level problem (both levels smoothed as in :mod:`rsvm_conic.formulations.safe`: softplus
``s_tau(z) = tau log(1 + exp(z / tau))`` for the hinge, ``r(w) = sqrt(||sigma * w||^2 + eps^2)`` for the
ellipsoid's support function)::

    min_{lo <= sigma <= hi}  F(sigma) = (1/N) sum_v s_tau(1 - y_v (<w*, x_v> + b*))
    theta* = (w*, b*) = argmin g(theta; sigma) = 1/2 ||w||^2 + C sum_i s_tau(1 - y_i (<w, x_i> + b) + r(w)).

[CJ20] solve eq. (7) "with a stochastic bi-level gradient algorithm" ([CW17], analysed in [CW16]:
differentiable objectives, a convex lower level, finite sums on both levels, diminishing steps).  The
method implemented here follows that description, two coupled stochastic-approximation loops:

* **lower level** (fast time scale): ``inner_steps`` minibatch stochastic gradient steps on g at the
  current sigma, warm-started from the previous outer iteration, in the averaged scale
  ``g / (C L) = lam/2 ||w||^2 + mean_i s_tau(z_i)``, ``lam = 1/(C L)``, proximal on the regulariser
  (``w <- (w - eta G) / (1 + eta lam)``, the split of [CJ20, eq. 5]) with steps
  ``eta_t = eta0 / (1 + eta0 lam t)``, after ``warmup`` epochs at the starting sigma; the outer loop
  uses the polynomial-decay average of the inner iterates ([SZ13], weight ``4 / (t + 3)``, as in
  :mod:`.stochastic`), which weights the recent ones;
* **upper level** (slow time scale): a stochastic hypergradient from one validation minibatch V and one
  training minibatch B (unbiased estimates of grad_theta F, of the lower Hessian H and of the mixed
  derivative J = d grad_theta g / d sigma; implicit function theorem)::

      d_k = -J_B' (H_B + mu I)^{-1} grad_theta F_V,      sigma_{k+1} = clip(sigma_k - beta_k d_k, lo, hi),

  ``beta_k = beta0 / (1 + k / 10)^0.75`` (diminishing, sum beta = inf, sum beta^2 < inf); ``mu = 1e-8``
  keeps a minibatch Hessian without curvature in b invertible.  The returned sigma is the average of
  the iterates of the second half of the run (Polyak-Ruppert; the box is convex, so it stays feasible).

``eta0`` and ``beta0`` are set by rules, not tuned per data set: ``eta0`` in 10^-3..10^3, the one with the
lowest smoothed lower objective after one epoch from the start (Bottou's heuristic, as
:func:`.stochastic.calibrate_eta0`); ``beta0`` so that the first outer step moves sigma by a tenth of the
box width (``BETA_FRACTION (hi - lo) / max|d_0|``).  Measured on the instance ``safe-svm-bilevel``
(L = 100, n = 2): 300 outer iterations land within 0.4 % of the hypergradient route's upper objective.
Every random draw comes from one ``numpy.random.Generator`` seeded by ``seed``: a run is reproducible
bit for bit.
The steps are vectorised over each minibatch (no Python loop over samples).

What is certified: nothing at the upper level (eq. 7 is non-convex in sigma; a stochastic method gives
no stationarity certificate either).  The formulation certifies the *lower level* at the returned sigma
(exact robust hinge, non-smoothed, by the dual bound of :mod:`.certificates`); see
:meth:`rsvm_conic.formulations.safe.SafeSVM.solve`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["BilevelResult", "lower_derivatives", "softplus", "sigmoid", "stochastic_bilevel", "upper_gradient"]

#: the first outer step moves sigma by this fraction of the box width (the rule that sets beta0)
BETA_FRACTION = 0.1


def softplus(z, tau):
    """``tau log(1 + exp(z / tau))``: the smoothed hinge ``max{0, z}`` (within ``tau log 2``)."""
    return tau * np.logaddexp(0.0, z / tau)


def sigmoid(z):
    """``1 / (1 + exp(-z))`` without overflow."""
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def lower_derivatives(X, y, C, theta, sigma, tau, eps, weight=1.0, mixed=False):
    """Gradient, Hessian (and with ``mixed`` the derivative J of the gradient w.r.t. sigma) of the smoothed
    lower level ``g = 1/2 ||w||^2 + C weight sum_i s_tau(z_i)`` on the rows (X, y) given.

    ``weight = L / |B|`` on a minibatch B makes every returned quantity an unbiased estimate of the
    full-data one; ``weight`` may also hold one weight per row (sample weights).  Returns
    ``(grad (n+1,), H (n+1, n+1), J (n+1, n) or None, z (m,))``.
    """
    w, b = theta[:-1], theta[-1]
    n = w.shape[0]
    r = np.sqrt(np.sum((sigma * w) ** 2) + eps**2)
    z = 1.0 - y * (X @ w + b) + r
    sg = sigmoid(z / tau)
    a = sg * weight  # the rows' weights folded into the softplus derivatives
    c = sg * (1.0 - sg) / tau * weight
    Cw = C
    gr = sigma**2 * w / r  # d r / d w
    Gz = np.hstack([-y[:, None] * X + gr, -y[:, None]])  # d z_i / d theta  (m, n+1)
    grad = np.concatenate([w, [0.0]]) + Cw * (a @ Gz)
    H = Cw * (Gz.T * c) @ Gz
    H[:n, :n] += np.eye(n) + Cw * a.sum() * (np.diag(sigma**2) / r - np.outer(gr, gr) / r)
    J = None
    if mixed:
        gs = sigma * w**2 / r  # d r / d sigma
        M = np.zeros((n + 1, n))
        M[:n] = np.diag(2.0 * sigma * w) / r - np.outer(gr, gs) / r
        J = Cw * (np.outer((c[:, None] * Gz).sum(axis=0), gs) + a.sum() * M)
    return grad, H, J, z


def upper_gradient(Xv, yv, theta, tau, weight=1.0):
    """``(F, grad_theta F)`` of ``F = weight sum_v s_tau(1 - y_v (<w, x_v> + b))`` on the rows given (``weight``: a
    number or one weight per row)."""
    m = yv * (Xv @ theta[:-1] + theta[-1])
    av = weight * sigmoid((1.0 - m) / tau)
    g = -np.concatenate([(av * yv) @ Xv, [np.sum(av * yv)]])
    return float(np.sum(weight * softplus(1.0 - m, tau))), g


def _inner_gradient(X, y, theta, sigma, tau, eps):
    """Mean over the rows of ``d s_tau(z_i) / d theta`` (the data part of the averaged lower gradient)."""
    w, b = theta[:-1], theta[-1]
    r = np.sqrt(np.sum((sigma * w) ** 2) + eps**2)
    z = 1.0 - y * (X @ w + b) + r
    a = sigmoid(z / tau)
    m = y.shape[0]
    ay = a * y
    gw = -(ay @ X) / m + (a.sum() / m) * (sigma**2 * w / r)
    return gw, -float(ay.sum()) / m


def _lower_value(X, y, theta, sigma, tau, eps, lam):
    """The averaged smoothed lower objective ``g / (C L)``."""
    w, b = theta[:-1], theta[-1]
    z = 1.0 - y * (X @ w + b) + np.sqrt(np.sum((sigma * w) ** 2) + eps**2)
    return 0.5 * lam * float(w @ w) + float(np.mean(softplus(z, tau)))


def _inner_steps(low, theta, theta_bar, sigma, eta0, t, steps, rng):
    """``steps`` proximal stochastic gradient steps on the averaged smoothed lower level at sigma; the
    average ``theta_bar`` is the polynomial-decay one of [SZ13] (weight ``4 / (t + 3)``, as in
    :mod:`.stochastic`).  Returns ``(theta, theta_bar, t)``."""
    X, y, tau, eps, lam, bs = low
    L = X.shape[0]
    theta = theta.copy()
    theta_bar = theta_bar.copy()
    for _ in range(steps):
        idx = rng.integers(0, L, bs)
        gw, gb = _inner_gradient(X[idx], y[idx], theta, sigma, tau, eps)
        eta = eta0 / (1.0 + eta0 * lam * t)
        theta[:-1] = (theta[:-1] - eta * gw) / (1.0 + eta * lam)
        theta[-1] -= eta * gb
        t += 1
        theta_bar += (4.0 / (t + 3.0)) * (theta - theta_bar)
    return theta, theta_bar, t


@dataclass
class BilevelResult:
    """What :func:`stochastic_bilevel` returns (no certificate: see the module docstring)."""

    sigma: np.ndarray  # the averaged outer iterate (second half of the run)
    w: np.ndarray  # the averaged inner iterate of the last outer iteration
    b: float
    iterations: int  # outer iterations
    inner_steps: int  # lower-level steps in all
    eta0: float
    beta0: float
    time: float
    history: list = field(default_factory=list)  # (k, F(sigma_k) on all validation rows at theta_bar, sigma_k)


def stochastic_bilevel(
    X,
    y,
    Xv,
    yv,
    C,
    lo,
    hi,
    *,
    sigma0=None,
    tau=0.05,
    eps=1e-3,
    n_outer=300,
    inner_steps=None,
    batch_size=32,
    hyper_batch=128,
    val_batch=64,
    eta0=None,
    beta0=None,
    eval_every=10,
    warmup=20,
    theta0=None,
    seed=0,
) -> BilevelResult:
    """Stochastic bi-level gradient method on the smoothed safe SVM; see the module docstring.

    Trusted arrays: labels in {-1, +1}, ``lo <= hi`` of shape (n,).  ``inner_steps`` defaults to one
    epoch of the training data (``ceil(L / batch_size)``); ``eta0`` / ``beta0`` default to the rules of
    the module docstring; ``history`` records the full smoothed upper objective every ``eval_every``
    outer iterations (one pass over the validation rows; it does not touch the random stream).
    """
    t_start = time.perf_counter()
    X, y, Xv, yv = (np.asarray(a, dtype=float) for a in (X, y, Xv, yv))
    L, n = X.shape
    N = Xv.shape[0]
    rng = np.random.default_rng(seed)
    lam = 1.0 / (C * L)
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    sigma = np.clip(0.5 * (lo + hi) if sigma0 is None else np.asarray(sigma0, dtype=float), lo, hi)
    theta = np.zeros(n + 1) if theta0 is None else np.array(theta0, dtype=float)
    bs, hb, vb = min(int(batch_size), L), min(int(hyper_batch), L), min(int(val_batch), N)
    K_in = int(np.ceil(L / bs)) if inner_steps is None else int(inner_steps)
    low = (X, y, tau, eps, lam, bs)
    if eta0 is None:  # Bottou's heuristic: the step with the lowest smoothed objective after one epoch
        best = np.inf
        for e0 in 10.0 ** np.arange(-3, 4):
            th, _, _ = _inner_steps(low, theta.copy(), theta.copy(), sigma, e0, 0, K_in, rng)
            val = _lower_value(X, y, th, sigma, tau, eps, lam)
            if np.isfinite(val) and val < best:
                best, eta0 = val, float(e0)
    width = float(np.max(hi - lo))
    # warm-up of the lower level at sigma0, then the two loops
    theta, theta_bar, t = _inner_steps(low, theta, theta.copy(), sigma, eta0, 0, int(warmup) * K_in, rng)
    tail = []
    history = []
    k = 0
    for k in range(int(n_outer)):
        # lower level: K_in proximal stochastic gradient steps at sigma (polynomial-decay average theta_bar)
        theta, theta_bar, t = _inner_steps(low, theta, theta_bar, sigma, eta0, t, K_in, rng)
        # upper level: stochastic hypergradient (implicit function theorem on minibatch estimates)
        ib = rng.integers(0, L, hb)
        iv = rng.integers(0, N, vb)
        _, H, J, _ = lower_derivatives(X[ib], y[ib], C, theta_bar, sigma, tau, eps, weight=L / hb, mixed=True)
        _, gF = upper_gradient(Xv[iv], yv[iv], theta_bar, tau, weight=1.0 / vb)
        v = np.linalg.solve(H + 1e-8 * np.eye(n + 1), gF)
        d = -J.T @ v
        if beta0 is None:
            dmax = float(np.max(np.abs(d)))
            beta0 = BETA_FRACTION * width / dmax if dmax > 0 and width > 0 else 0.0
        beta = beta0 / (1.0 + k / 10.0) ** 0.75
        sigma = np.clip(sigma - beta * d, lo, hi)
        if k >= int(n_outer) // 2:
            tail.append(sigma.copy())
        if eval_every and k % int(eval_every) == 0:
            F, _ = upper_gradient(Xv, yv, theta_bar, tau, weight=1.0 / N)
            history.append((k, F, sigma.copy()))
    sigma_avg = np.mean(tail, axis=0) if tail else sigma
    return BilevelResult(
        sigma=np.clip(sigma_avg, lo, hi),
        w=theta_bar[:-1].copy(),
        b=float(theta_bar[-1]),
        iterations=k + 1,
        inner_steps=t,
        eta0=float(eta0),
        beta0=float(beta0 or 0.0),
        time=time.perf_counter() - t_start,
        history=history,
    )
