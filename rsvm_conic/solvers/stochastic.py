"""Stochastic solvers for the large-scale robust SVM (file 000, eq. 5-6).

Both minimise the averaged objective

    F(w, b) = lam/2 ||w||^2 + (1/L) sum_i l_i(w, b),      lam = 1 / (C L),

which is ``P(w, b) / (C L)`` for the conic models' ``P = 1/2 ||w||^2 + C sum_i l_i``.

* :func:`stochastic_subgradient` -- minibatch stochastic subgradient on F
  (Pegasos-style decreasing steps ``eta_t = eta_0 / (1 + eta_0 lam t)``,
  polynomial-decay averaging of the iterates, which weights recent iterates
  like a suffix average without restarts).
* :func:`stochastic_proximal` -- the split of eq. (5): a stochastic forward step on
  the robust hinge g, then the backward (proximal) step on h = lam/2 ||w||^2,
  ``w <- (w - eta g_B) / (1 + eta lam)``; same steps and averaging.

Pure numpy, vectorised over the minibatch, seeded.  ``eta_0="auto"`` picks the
initial step by a short trial on a subsample (as Bottou's SGD does).  Every
``eval_every`` epochs the *full* objective of the averaged iterate is evaluated;
the run stops when ``patience`` evaluations in a row fail to improve the best
value by more than ``tol`` (relative), or after ``max_epochs``.  The best evaluated iterate is returned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from tqdm.auto import tqdm

from .datafits import RobustHinge
from .penalties import L2Squared


@dataclass
class StochasticResult:
    w: np.ndarray
    b: float
    objective: float  # F(w, b), the averaged objective
    epochs: int
    converged: bool
    eta0: float
    time: float
    history: list = field(default_factory=list)  # (epoch, F, seconds since start) triples


def _objective(datafit: RobustHinge, penalty: L2Squared, w, b) -> float:
    return penalty.value(w) + datafit.value(w, b) / datafit.n_samples


def _pass(datafit, penalty, prox, w, b, eta0, t, order, batch_size, avg=None):
    """One epoch over ``order``; returns (w, b, t, avg)."""
    lam = penalty.lam
    for start in range(0, order.shape[0], batch_size):
        idx = order[start:start + batch_size]
        eta = eta0 / (1.0 + eta0 * lam * t)
        gw, gb = datafit.subgradient(w, b, idx)
        if prox:
            w = penalty.prox(w - eta * gw, eta)
        else:
            w = w - eta * (gw + penalty.gradient(w))
        b = b - eta * gb
        t += 1
        if avg is not None:  # polynomial-decay averaging (Shamir & Zhang 2013), eta = 3
            avg[2] += 1
            r = 4.0 / (avg[2] + 3.0)
            avg[0] += r * (w - avg[0])
            avg[1] += r * (b - avg[1])
    return w, b, t, avg


def _calibrate(datafit, penalty, prox, batch_size, rng, n_sub=2000):
    """Pick eta_0 from a grid by one pass on a subsample (Bottou's heuristic)."""
    L = datafit.n_samples
    sub = rng.choice(L, size=min(n_sub, L), replace=False)
    sub_fit = RobustHinge(datafit.X[sub], datafit.y[sub], _restrict(datafit.unc, sub))
    best, best_eta = np.inf, 1.0
    n = datafit.X.shape[1]
    for eta0 in 10.0 ** np.arange(-3, 4):
        w, b, _, _ = _pass(sub_fit, penalty, prox, np.zeros(n), 0.0, eta0, 0, rng.permutation(sub.shape[0]),
                           batch_size)
        val = _objective(sub_fit, penalty, w, b)
        if np.isfinite(val) and val < best:
            best, best_eta = val, eta0
    return best_eta


def _restrict(unc, idx):
    if unc is None:
        return None
    from ..uncertainty.sets import ResolvedUncertainty

    return ResolvedUncertainty(unc.factors, unc.diagonal, unc.group_index[idx], unc.p, unc.q, unc.radius,
                               unc.scale[idx])


def _solve(datafit: RobustHinge, lam: float, prox: bool, *, batch_size=64, max_epochs=200, tol=1e-6,
           eval_every=1, patience=10, eta0="auto", average_from=1, seed=0, w0=None, b0=0.0, progress=False,
           time_limit=None) -> StochasticResult:
    if batch_size < 1 or max_epochs < 1 or eval_every < 1:
        raise ValueError("batch_size, max_epochs and eval_every must be positive integers.")
    rng = np.random.default_rng(seed)
    penalty = L2Squared(lam)
    L, n = datafit.X.shape
    t0 = time.perf_counter()
    if eta0 == "auto":
        eta0 = _calibrate(datafit, penalty, prox, batch_size, rng)
    w = np.zeros(n) if w0 is None else np.array(w0, dtype=float)
    b = float(b0)
    t = 0
    avg = None
    history = []
    best = (np.inf, w.copy(), b)
    stale = 0
    converged = False
    bar = tqdm(total=max_epochs, desc="prox" if prox else "sgd", disable=not progress, leave=False)
    epoch = 0
    for epoch in range(1, max_epochs + 1):
        if avg is None and epoch > average_from:
            avg = [w.copy(), b, 0]
        w, b, t, avg = _pass(datafit, penalty, prox, w, b, eta0, t, rng.permutation(L), batch_size, avg)
        bar.update(1)
        if epoch % eval_every == 0 or epoch == max_epochs:
            wc, bc = (avg[0], avg[1]) if avg is not None else (w, b)
            val = _objective(datafit, penalty, wc, bc)
            history.append((epoch, val, time.perf_counter() - t0))
            improved = best[0] - val > tol * max(1.0, abs(val))
            if val < best[0]:
                best = (val, wc.copy(), float(bc))
            stale = 0 if improved else stale + 1
            if stale >= patience:
                converged = True
                break
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                break
    bar.close()
    return StochasticResult(w=best[1], b=best[2], objective=best[0], epochs=epoch, converged=converged,
                            eta0=float(eta0), time=time.perf_counter() - t0, history=history)


def stochastic_subgradient(datafit: RobustHinge, lam: float, **kwargs) -> StochasticResult:
    """Minibatch stochastic subgradient method with iterate averaging; see module docstring."""
    return _solve(datafit, lam, prox=False, **kwargs)


def stochastic_proximal(datafit: RobustHinge, lam: float, **kwargs) -> StochasticResult:
    """Stochastic proximal gradient (forward on the robust hinge, prox on the L2 term)."""
    return _solve(datafit, lam, prox=True, **kwargs)
