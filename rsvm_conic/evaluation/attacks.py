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
    """Smallest ``y f(x + dx)`` found per point over the ball (decision/gradient: callables on (m, n))."""
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
    """Fraction of points misclassified by some perturbation found in the ball (see module docstring)."""
    return float(np.mean(worst_margins(decision, gradient, X, y, gamma, p, **kwargs) < 0))


def rbf_svc_functions(svc):
    """(decision, gradient) callables of a fitted ``sklearn.svm.SVC(kernel="rbf")`` (binary, numeric gamma)."""
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
