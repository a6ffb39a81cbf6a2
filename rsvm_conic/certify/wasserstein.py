"""The Wasserstein DRO hinge-loss SVM's certificate [SKE19]: its objective at ``(w, b)``, a feasible dual point from a
route's multipliers, the dual bound, and the worst-case distribution built from that point.

The primal, the dual and the worst-case distribution are derived in the user guide (``docs/guide/wasserstein.md``)
and in :mod:`rsvm_conic.formulations.wasserstein`; every function here takes the problem's arrays as a
:class:`Ball`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Ball", "best_lam", "dual_point", "dual_value", "objective", "worst_distribution"]


class Ball(NamedTuple):
    """The data of a Wasserstein ball around a weighted empirical distribution.

    Attributes
    ----------
    X : ndarray of shape (L, n)
        Samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    pi : ndarray of shape (L,)
        The empirical distribution's weights (summing to 1).
    radius : float
        The ball's radius.
    kappa : float
        The label-flip cost (inf: labels are certain).
    p : float
        The transport cost's exponent on the features.
    q : float
        Its dual exponent.
    """

    X: np.ndarray
    y: np.ndarray
    pi: np.ndarray
    radius: float
    kappa: float
    p: float
    q: float


def best_lam(w, margins, pi, radius: float, kappa: float, q: float) -> float:
    """The ``lam`` minimising the objective for a fixed ``(w, b)``: ``lam >= ||w||_q`` and, for finite ``kappa``,
    the convex piecewise-linear ``lam radius + sum_i pi_i max{h_i, 1 + m_i - lam kappa}`` (``m_i`` the margins
    ``y_i (<w, x_i> + b)``, ``h_i = max{0, 1 - m_i}``) at its first breakpoint where the slope ``radius - kappa
    sum_{lam_i > lam} pi_i`` is >= 0 (one sort).

    Parameters
    ----------
    w : ndarray of shape (n,)
        The weights.
    margins : ndarray of shape (L,)
        ``y_i (<w, x_i> + b)``.
    pi : ndarray of shape (L,)
        The empirical distribution's weights.
    radius, kappa : float
        The ball's radius and the label-flip cost.
    q : float
        The dual exponent.

    Returns
    -------
    float
    """
    nw = float(np.linalg.norm(w, ord=q))
    if np.isinf(kappa):
        return nw
    h = np.maximum(0.0, 1.0 - margins)
    brk = (1.0 + margins - h) / kappa  # above lam_i the flipped label's term is below the hinge
    order = np.argsort(brk)
    tail = np.cumsum(pi[order][::-1])[::-1]  # tail[j] = sum_{k >= j} pi_(k)
    above = np.append(tail[1:], 0.0)  # sum_{k > j}
    ok = kappa * above <= radius
    j = int(np.argmax(ok))  # the last entry is always ok
    lam = float(brk[order][j])
    if kappa * tail[0] <= radius:  # slope >= 0 below every breakpoint
        lam = -np.inf
    return max(nw, lam)


def objective(ball: Ball, w, b) -> float:
    """The objective at ``(w, b)`` with the best ``lam`` (:func:`best_lam`): the worst-case expected hinge loss of the
    classifier ``(w, b)`` over the ball.

    Parameters
    ----------
    ball : Ball
        The problem's data.
    w : ndarray of shape (n,)
        Weights.
    b : float
        Bias.

    Returns
    -------
    float
    """
    w = np.asarray(w, dtype=float)
    m = ball.y * (ball.X @ w + b)
    lam = best_lam(w, m, ball.pi, ball.radius, ball.kappa, ball.q)
    s = np.maximum(0.0, 1.0 - m)
    if np.isfinite(ball.kappa):
        s = np.maximum(s, 1.0 + m - lam * ball.kappa)
    return lam * ball.radius + float(ball.pi @ s)


def dual_point(ball: Ball, alpha, beta=None):
    """``(alpha, beta, t)``: the multipliers made feasible for the dual (clipped to the box ``alpha + beta <= pi``,
    the equality ``sum_i y_i (alpha_i - beta_i) = 0`` restored by shrinking the entries on the side that exceeds it)
    and the factor ``t = min(1, radius / g) <= 1`` that makes them meet the norm constraint (``g`` its left side; the
    dual point is ``t (alpha, beta)``).

    Parameters
    ----------
    ball : Ball
        The problem's data.
    alpha : ndarray of shape (L,)
        Multipliers of ``s_i >= 1 - y_i (<w, x_i> + b)``.
    beta : ndarray of shape (L,) or None
        Multipliers of the flipped-label constraints (None: ``kappa = inf``).

    Returns
    -------
    alpha, beta : ndarray of shape (L,)
    t : float
    """
    pi, y = ball.pi, ball.y
    a = np.clip(np.nan_to_num(np.asarray(alpha, dtype=float)), 0.0, None)
    c = np.zeros_like(a) if beta is None or np.isinf(ball.kappa) else np.asarray(beta, dtype=float)
    c = np.clip(np.nan_to_num(c), 0.0, None)
    total = a + c
    over = total > pi
    shrink = np.where(over, pi / np.where(over, total, 1.0), 1.0)
    a, c = a * shrink, c * shrink
    d = float(y @ (a - c))
    if d != 0.0:  # shrink the entries on the side that exceeds: those of y = sign(d) in a, y = -sign(d) in c
        sgn = np.sign(d)
        big_a, big_c = y == sgn, y == -sgn
        T = float(a[big_a].sum() + c[big_c].sum())
        f = (T - abs(d)) / T if T > 0 else 0.0
        a = np.where(big_a, a * f, a)
        c = np.where(big_c, c * f, c)
    g = float(np.linalg.norm(ball.X.T @ (y * (a - c)), ord=ball.p))
    if np.isfinite(ball.kappa):
        g += ball.kappa * float(c.sum())
    t = 1.0 if g <= ball.radius else ball.radius / g
    return a, c, t


def dual_value(ball: Ball, alpha, beta=None, primal: float | None = None) -> float:
    """A lower bound on the optimum from the multipliers: ``t sum_i (alpha_i + beta_i)`` at the feasible point of
    :func:`dual_point` or, when ``primal`` (an upper bound on the optimum) is given and larger, the Lagrangian bound
    on the domain ``lam <= primal / radius`` (which holds every optimum, as ``s >= 0``):
    ``sum_i (alpha_i + beta_i) - (primal / radius) max{0, g - radius}``.

    Parameters
    ----------
    ball : Ball
        The problem's data.
    alpha, beta : ndarray of shape (L,) or None
        The multipliers of the hinge and flipped-label constraints.
    primal : float or None, default=None
        An upper bound on the optimum.

    Returns
    -------
    float
    """
    a, c, t = dual_point(ball, alpha, beta)
    total = float(a.sum() + c.sum())
    value = t * total
    if primal is not None and t < 1.0:
        g = ball.radius / t
        value = max(value, total - primal / ball.radius * (g - ball.radius))
    return value


def worst_distribution(ball: Ball, w, alpha, beta=None):
    """A distribution within the ball whose expected hinge loss at ``(w, b)`` is the optimal value, from an optimal
    ``w`` and its multipliers (complementary slackness): sample ``i`` keeps mass ``pi_i - beta_i`` at
    ``(x_i, y_i)``, mass ``beta_i`` moves to ``(x_i, -y_i)`` (cost ``kappa beta_i``), and the rest of the budget,
    ``r = radius - kappa sum beta``, moves the mass ``alpha_j`` of the sample with the largest ``alpha_j`` by
    ``r / alpha_j`` along ``-y_j v`` (``||v||_p = 1``, ``<v, w> = ||w||_q``).

    Parameters
    ----------
    ball : Ball
        The problem's data.
    w : ndarray of shape (n,)
        Weights.
    alpha, beta : ndarray of shape (L,) or None
        The route's multipliers (made dual feasible first, :func:`dual_point`).

    Returns
    -------
    points : ndarray of shape (m, n)
    labels : ndarray of shape (m,)
        In {-1, +1}.
    weights : ndarray of shape (m,)
        Probabilities (summing to 1); support points of weight 0 are left out.
    """
    a, c, t = dual_point(ball, alpha, beta)
    a, c = a * t, c * t
    X, y = ball.X, ball.y
    w = np.asarray(w, dtype=float)
    stay = np.clip(ball.pi - c, 0.0, None)
    points, labels, weights = [X], [y], [stay]
    if np.any(c > 0):
        points, labels, weights = points + [X[c > 0]], labels + [-y[c > 0]], weights + [c[c > 0]]
    budget = ball.radius - (ball.kappa * float(c.sum()) if np.isfinite(ball.kappa) else 0.0)
    nw = float(np.linalg.norm(w, ord=ball.q))
    if budget > 0 and nw > 0 and np.any(a > 0):
        j = int(np.argmax(a))
        mass = float(min(a[j], stay[j]))
        stay[j] -= mass
        points.append((X[j] - y[j] * (budget / mass) * _norming_vector(w, ball.p))[None, :])
        labels.append(y[j : j + 1])
        weights.append(np.array([mass]))
    P, Y, W = np.vstack(points), np.concatenate(labels), np.concatenate(weights)
    keep = W > 0
    return P[keep], Y[keep], W[keep]


def _norming_vector(w, p: float) -> np.ndarray:
    """A ``v`` with ``||v||_p = 1`` and ``<v, w> = ||w||_q`` (q the dual exponent of p)."""
    if p == 2.0:
        return w / np.linalg.norm(w)
    if np.isinf(p):
        return np.sign(w)
    v = np.zeros_like(w)
    j = int(np.argmax(np.abs(w)))
    v[j] = np.sign(w[j])
    return v
