"""Adversarial (worst-case) error of a classifier over p-norm balls, by projected gradient attacks.

For each test point, minimise the signed margin ``y f(x + dx)`` over ``||dx||_p <= gamma``
(p in {1, 2, inf}) with projected (steepest-descent) steps from the centre and from random
points of the ball, vectorised over the points; a point counts as an adversarial error when
*any* iterate is misclassified.  This is a lower bound on the true worst-case error (an attack
may miss a worst case), so it is reported as such; use it identically for every model compared.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_norm, check_positive, dual_norm
from ..kernels.rbf import squared_distances
from ..certify.projections import project_pball
from ..uncertainty.sets import dual_norm_subgradient, sample_pball


def worst_margins(decision, gradient, X, y, gamma, p=2, steps=40, restarts=3, random_state=0):
    """Smallest margin ``y f(x + dx)`` found per point over the ball ``||dx||_p <= gamma``.

    Projected steepest-descent steps from the centre and from ``restarts`` random points of the ball, vectorised
    over the points; every iterate counts.

    Parameters
    ----------
    decision, gradient : callable
        ``decision(X)`` maps points (m, n) to decision values (m,); ``gradient(X)`` to their gradients (m, n).
    X : array-like of shape (m, n)
        The points attacked.
    y : array-like of shape (m,)
        Their labels in {-1, +1}.
    gamma : float
        Radius of the ball (>= 0; 0 returns the unperturbed margins).
    p : {1, 2, inf}, default 2
        Norm of the ball.
    steps : int, default 40
        Steps per start.
    restarts : int, default 3
        Random starts besides the centre.
    random_state : int or Generator, default 0
        Seed of the random starts.

    Returns
    -------
    ndarray of shape (m,)
        The smallest margin found per point: an upper bound on the true worst-case margin.
    """
    p = check_norm(p)
    q = dual_norm(p)
    gamma = check_positive(gamma, "gamma", strict=False)
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    best = y * decision(X)
    if gamma == 0:
        return best
    rng = np.random.default_rng(random_state)
    m, n = X.shape
    for r in range(restarts + 1):
        D = np.zeros((m, n)) if r == 0 else sample_pball(m, n, p, rng, gamma)
        for k in range(steps):
            eta = 2.5 * gamma / steps if r else gamma * (0.5 if k < steps // 2 else 0.1)
            G = y[:, None] * gradient(X + D)  # gradient of the margin
            D = project_pball(D - eta * dual_norm_subgradient(G, q), gamma, p)  # steepest step in the p-norm
            best = np.minimum(best, y * decision(X + D))
    return best


def adversarial_error(decision, gradient, X, y, gamma, p=2, **kwargs) -> float:
    """Fraction of points misclassified by some perturbation found in the ball.

    A lower bound on the true worst-case error (an attack may miss a worst case).

    Parameters
    ----------
    decision, gradient : callable
        ``decision(X)`` maps points (m, n) to decision values (m,); ``gradient(X)`` to their gradients (m, n).
    X : array-like of shape (m, n)
        The points attacked.
    y : array-like of shape (m,)
        Their labels in {-1, +1}.
    gamma : float
        Radius of the ball (>= 0; 0 returns the unperturbed margins).
    p : {1, 2, inf}, default 2
        Norm of the ball.
    **kwargs
        ``steps``, ``restarts``, ``random_state`` of :func:`worst_margins`.

    Returns
    -------
    float
        The fraction of points with a negative margin found, in [0, 1].
    """
    return float(np.mean(worst_margins(decision, gradient, X, y, gamma, p, **kwargs) < 0))


def rbf_svc_functions(svc):
    """The decision function and its gradient of a fitted binary RBF ``SVC``, for the attacks.

    Parameters
    ----------
    svc : sklearn.svm.SVC
        Fitted with ``kernel="rbf"``, two classes and a numeric ``gamma``.

    Returns
    -------
    decision, gradient : callable
        ``decision(X)`` of shape (m,) and ``gradient(X)`` of shape (m, n).
    """
    Z = svc.support_vectors_
    a = svc.dual_coef_.ravel()
    b = float(svc.intercept_[0])
    g = float(svc._gamma)

    def kern(X):
        return np.exp(-g * squared_distances(X, Z))

    def decision(X):
        return kern(X) @ a + b

    def gradient(X):
        W = kern(X) * a
        return -2 * g * (W.sum(1)[:, None] * X - W @ Z)

    # sklearn's binary decision_function is positive for classes_[1]
    return decision, gradient
