"""Worst case of a function over an input uncertainty set, by sampling plus local ascent.

:func:`adversarial_search` maximises ``f(dx)`` over ``{A u : ||u||_p <= gamma}``; :func:`rff_worst_case` and
:func:`nystroem_worst_case` use it to measure the largest feature-space perturbation of one point, the
quantity the bounds of :mod:`rsvm_conic.uncertainty.feature_bounds` (Prop. 4.1, 4.2) must dominate.
Each result is a lower bound on the true maximum (a search may miss the worst case).
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

from .._validation import check_norm, check_positive
from ..certify.projections import project_pball
from ..uncertainty.feature_bounds import nystroem_rotated_perturbation, rff_rotated_perturbation
from ..uncertainty.sets import dual_norm_values, sample_pball


def adversarial_search(f, A, gamma, p=2, n_samples=4000, n_local=6, random_state=0):
    """Maximise ``f(dx)`` over ``{A u : ||u||_p <= gamma}`` by sampling plus local ascent.

    Half of the samples lie on the boundary of the ball (and its vertices for p = 1, inf), half inside
    (:func:`~rsvm_conic.uncertainty.sets.sample_pball`); the best ``n_local`` start SLSQP runs (u parametrised
    directly; the norm constraint as an inequality: smooth for p = 2, split into positive/negative parts for p = 1,
    bounds for p = inf).

    Parameters
    ----------
    f : callable
        Maps a batch of perturbations (m, n) to values (m,).
    A : array-like of shape (n, k)
        Shape matrix of the set.
    gamma : float
        Radius (>= 0).
    p : {1, 2, inf}, default 2
        Norm of the ball of ``u``.
    n_samples : int, default 4000
        Points sampled.
    n_local : int, default 6
        Local ascents, started from the best samples.
    random_state : int or Generator, default 0
        Seed of the samples.

    Returns
    -------
    best_value : float
        The largest value found: a lower bound on the true maximum.
    best_dx : ndarray of shape (n,)
        The perturbation attaining it.
    """
    A = np.atleast_2d(np.asarray(A, dtype=float))
    p = check_norm(p)
    gamma = check_positive(gamma, "gamma", strict=False)
    n = A.shape[1]
    rng = np.random.default_rng(random_state)
    half = max(1, n_samples // 2)
    U = np.vstack([sample_pball(half, n, p, rng, gamma, True), sample_pball(half, n, p, rng, gamma, False)])
    vals = np.asarray(f(U @ A.T), dtype=float)
    order = np.argsort(vals)[::-1][:n_local]
    best_val, best_u = float(vals[order[0]]), U[order[0]].copy()
    if gamma == 0:
        return best_val, best_u @ A.T

    def neg(u):
        return -float(f((u @ A.T)[None])[0])

    for k in order:
        u0 = U[k]
        if p == 2.0:
            res = optimize.minimize(
                neg,
                u0,
                method="SLSQP",
                constraints=[{"type": "ineq", "fun": lambda u: gamma**2 - u @ u, "jac": lambda u: -2 * u}],
                options={"maxiter": 200, "ftol": 1e-12},
            )
            u = project_pball(res.x[None], gamma, p)[0]
        elif p == np.inf:
            res = optimize.minimize(neg, u0, method="L-BFGS-B", bounds=[(-gamma, gamma)] * n, options={"maxiter": 200})
            u = project_pball(res.x[None], gamma, p)[0]
        else:
            z0 = np.concatenate([np.maximum(u0, 0), np.maximum(-u0, 0)])
            res = optimize.minimize(
                lambda z: neg(z[:n] - z[n:]),
                z0,
                method="SLSQP",
                bounds=[(0, None)] * (2 * n),
                constraints=[{"type": "ineq", "fun": lambda z: gamma - z.sum(), "jac": lambda z: -np.ones(2 * n)}],
                options={"maxiter": 200, "ftol": 1e-12},
            )
            u = res.x[:n] - res.x[n:]
            nrm = np.abs(u).sum()
            if nrm > gamma:
                u *= gamma / nrm
        val = -neg(u)
        if val > best_val:
            best_val, best_u = val, u
    return best_val, best_u @ A.T


def rff_worst_case(rff, x, A, gamma, p=2, pbar=2, **kwargs) -> float:
    """Largest ``||R dphi||_pbar`` found by :func:`adversarial_search` for one point.

    Parameters
    ----------
    rff : RandomFourierFeatures
        A fitted random Fourier feature map.
    x : array-like of shape (n,)
        The point perturbed.
    A, gamma, p
        The input set ``{A u : ||u||_p <= gamma}`` (see :func:`adversarial_search`).
    pbar : {1, 2, inf}, default 2
        Norm measured in feature space.
    **kwargs
        Passed to :func:`adversarial_search`.

    Returns
    -------
    float
        The largest feature-space perturbation found (a lower bound on the true maximum).
    """
    q = check_norm(pbar)  # dual_norm_values computes ||.||_q for q in {1, 2, inf}
    return adversarial_search(
        lambda dX: dual_norm_values(rff_rotated_perturbation(rff, x, dX), q), A, gamma, p, **kwargs
    )[0]


def nystroem_worst_case(nys, x, A, gamma, p=2, **kwargs) -> float:
    """Largest ``||Lambda^{1/2} dphi||_2`` found by :func:`adversarial_search` for one point.

    Parameters
    ----------
    nys : NystroemMap
        A fitted Nystroem feature map.
    x : array-like of shape (n,)
        The point perturbed.
    A, gamma, p
        The input set ``{A u : ||u||_p <= gamma}`` (see :func:`adversarial_search`).
    **kwargs
        Passed to :func:`adversarial_search`.

    Returns
    -------
    float
        The largest feature-space perturbation found (a lower bound on the true maximum).
    """
    return adversarial_search(
        lambda dX: np.linalg.norm(nystroem_rotated_perturbation(nys, x, dX), axis=1), A, gamma, p, **kwargs
    )[0]
