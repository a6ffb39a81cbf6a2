"""Eq. 1.9 [ElD19] on explicit features by L-BFGS on its Huber-smoothed primal, and the L-BFGS routine itself.

The hinge is replaced by its Huber smoothing ``l_mu(z) = 0 (z <= 0), z^2/(2 mu) (0 < z < mu),
z - mu/2 (z >= mu)`` which lies within ``mu/2`` of ``max(0, z)``; ``F_mu`` is smooth with
gradient ``W + Phi^T dS``, ``1^T dS``.  :func:`ww_primal_lbfgs` minimises ``F_mu`` with :func:`lbfgs` for a
decreasing sequence ``mu = 1, 1e-1, ..., mu_min`` (continuation, each stage warm-started), and returns the
iterate with the smallest *true* (non-smooth) objective.  Since ``F <= F_mu + zeta N mu / 2`` only
over the ``N`` terms inside the smoothing zone, the final excess is at most ``zeta N_zone mu_min/2``;
with the default ``mu_min = 1e-6`` it meets the 1e-4 relative agreement with the exact QP on the runner
instance.  Each iteration costs two passes ``Phi W`` / ``Phi^T dS`` (O(n D C)).
"""

from __future__ import annotations

import time

import numpy as np

from ...certify.contract import certify, relative_gap
from .objective import feature_gram, ww_dual_bound, ww_objective


def ww_primal_lbfgs(
    Phi,
    codes,
    n_classes: int,
    zeta: float,
    *,
    mu_min: float = 1e-6,
    mu_factor: float = 0.1,
    maxiter: int = 2000,
    gtol: float = 1e-10,
    W0=None,
    b0=None,
    tol: float = 1e-6,
    check_every: int = 50,
):
    """Solve eq. 1.9 on explicit features by L-BFGS on the smoothed primal, certified (see the module docstring).

    Every ``check_every`` L-BFGS iterations the multipliers ``alpha_ik = zeta clip(z_ik / mu, 0, 1)`` (the
    smoothed hinge's derivatives) give a dual bound through :func:`.ww_dual_bound`; the best bound so far and
    the best true objective form the certificate.  The run stops as soon as their relative gap is ``<= tol``;
    a stage ends (``mu`` is multiplied by ``mu_factor``) once L-BFGS converged or the gap shrank by less than
    1% since the last check (the smoothing, not the iterate, then limits it).

    Parameters
    ----------
    Phi, codes, n_classes, zeta
        The problem, as for :func:`.ww_dual_cd`: feature rows (n, D), class codes in ``0..n_classes-1`` (both
        trusted), the number of classes and eq. 1.9's penalty.
    mu_min, mu_factor : float
        The smallest smoothing and the factor between stages (the first stage has ``mu = 1``).
    maxiter : int
        L-BFGS iterations per stage.
    gtol : float
        L-BFGS's gradient tolerance (sup norm).
    W0 : ndarray of shape (D, C), optional
        Warm start of the weights.
    b0 : ndarray of shape (C,), optional
        Warm start of the biases.
    tol : float
        Relative certified gap at which the run stops.
    check_every : int
        L-BFGS iterations between two certificate checks.

    Returns
    -------
    W : ndarray of shape (D, C)
        Weights of the iterate with the smallest true objective.
    b : ndarray of shape (C,)
        Biases, centred (``sum(b) = 0``).
    info : dict
        ``status`` (``"optimal"`` exactly when the gap met ``tol``, else ``"max_iter"``: the smallest ``mu``
        was reached first), ``iterations``, ``objective``, ``mu``, ``mu_min`` and ``certificate`` (the
        :class:`~rsvm_conic.certify.contract.SolveInfo`, route ``"lbfgs"``).
    """
    t_start = time.perf_counter()
    Phi = np.asarray(Phi, dtype=np.float64)
    n, D = Phi.shape
    C = int(n_classes)
    Y = np.zeros((n, C))
    Y[np.arange(n), codes] = 1.0
    mask = 1.0 - Y
    zeta = float(zeta)

    def unpack(x):
        return x[: D * C].reshape(D, C), x[D * C :]

    def fg(x, mu):
        W, b = unpack(x)
        S = Phi @ W + b
        fy = np.sum(S * Y, axis=1, keepdims=True)
        z = (2.0 - fy + S) * mask
        quad = (z > 0) & (z < mu)
        lin = z >= mu
        loss = np.sum(np.where(quad, z * z / (2 * mu), 0.0)) + np.sum(np.where(lin, z - mu / 2, 0.0))
        g = zeta * np.clip(z / mu, 0.0, 1.0) * mask
        dS = g - Y * g.sum(axis=1, keepdims=True)
        f = 0.5 * np.sum(W * W) + zeta * loss
        grad = np.concatenate([(W + Phi.T @ dS).ravel(), dS.sum(axis=0)])
        return f, grad

    def true_obj(x):
        W, b = unpack(x)
        return ww_objective(float(np.sum(W * W)), Phi @ W + b, codes, zeta)

    x = np.zeros(D * C + C)
    if W0 is not None:
        x[: D * C] = np.asarray(W0, dtype=np.float64).ravel()
    if b0 is not None:
        x[D * C :] = np.asarray(b0, dtype=np.float64)

    gram = feature_gram(Phi)

    floor = 1e-9 * zeta * n  # a trivial objective's scale (all scores 0 cost 2 zeta n (C - 1))
    mu, nit, stages = 1.0, 0, 0
    # best true objective and iterate so far, best dual bound (alpha = 0 is dual feasible with value 0)
    state = {"d": 0.0, "f": true_obj(x), "x": x.copy(), "last": np.inf, "done": False}

    def certify_at(x, mu):
        """Update the best objective and dual bound at x; True when the stage should end."""
        W, b = unpack(x)
        S = Phi @ W + b  # one pass gives both the true objective and the multipliers
        f = ww_objective(float(np.sum(W * W)), S, codes, zeta)
        if f < state["f"]:
            state["f"], state["x"] = f, x.copy()
        z = (2.0 - np.sum(S * Y, axis=1, keepdims=True) + S) * mask
        state["d"] = max(state["d"], ww_dual_bound(zeta * np.clip(z / mu, 0.0, 1.0), codes, zeta, gram)[0])
        gap = relative_gap(state["f"], state["d"], floor)
        if gap <= tol:
            state["done"] = True
            return True
        stalled = gap > 0.99 * state["last"]  # the smoothing, not the iterate, limits the bound now
        state["last"] = gap
        return stalled

    while True:
        # one smoothing stage, certified every `check_every` L-BFGS iterations (about 1% of the work): it stops
        # as soon as the gap meets tol, and hands over to the next mu once the gap shrinks by < 1% per check
        stages += 1
        state["last"] = np.inf
        x, used, _ = lbfgs(
            lambda z: fg(z, mu),
            x,
            maxiter=maxiter,
            gtol=gtol,
            callback=lambda z: certify_at(z, mu),
            callback_every=check_every,
        )
        nit += used
        if not state["done"]:
            certify_at(x, mu)
        if state["done"]:
            break
        if mu <= mu_min * (1 + 1e-12):
            break
        mu = max(mu * mu_factor, mu_min)
    best_x, best_f, best_d = state["x"], state["f"], state["d"]
    W, b = unpack(best_x)
    cert = certify(
        "lbfgs",
        best_f,
        best_d,
        tol,
        failed_status="max_iter",
        iterations=nit,
        time=time.perf_counter() - t_start,
        floor=floor,
        detail={"mu": mu, "stages": stages},
    )
    return (
        W,
        b - b.mean(),
        {
            "status": cert.status,
            "iterations": nit,
            "objective": best_f,
            "mu": mu,
            "mu_min": mu_min,
            "certificate": cert,
        },
    )


def lbfgs(
    fg,
    x0,
    *,
    maxiter: int = 1000,
    gtol: float = 1e-10,
    ftol: float = 1e-15,
    memory: int = 20,
    callback=None,
    callback_every: int = 50,
):
    """Minimise a smooth function without constraints by L-BFGS (two-loop recursion, Armijo backtracking).

    Written here rather than calling SciPy's L-BFGS-B, whose bound handling (``setulb``) dominates the time on
    these 10^4-10^5-variable problems that need no bounds.  Pairs with ``s^T y <= 0`` are skipped, so the
    inverse-Hessian model stays positive definite; a direction that is not a descent direction restarts from
    steepest descent.  The curvature pairs are kept across ``callback`` calls.

    Parameters
    ----------
    fg : callable
        ``fg(x) -> (f, grad)``.
    x0 : ndarray of shape (m,)
        Starting point.
    maxiter : int
        Iteration budget.
    gtol : float
        Converged when ``||grad||_inf <= gtol``.
    ftol : float
        Converged when an iteration decreases ``f`` by at most ``ftol max(|f|, 1)``.
    memory : int
        Curvature pairs kept.
    callback : callable, optional
        ``callback(x) -> bool``, called every ``callback_every`` iterations; True stops the run (reported as
        converged).
    callback_every : int
        Iterations between two ``callback`` calls.

    Returns
    -------
    x : ndarray of shape (m,)
        The last iterate.
    iterations : int
        Iterations taken.
    converged : bool
        False only when ``maxiter`` ran out.
    """
    x = np.array(x0, dtype=np.float64)
    f, g = fg(x)
    S: list = []
    Yl: list = []
    rho: list = []
    for it in range(maxiter):
        if np.max(np.abs(g)) <= gtol:
            return x, it, True
        q = g.copy()
        a = []
        for s_, y_, r_ in zip(reversed(S), reversed(Yl), reversed(rho)):
            ai = r_ * float(s_ @ q)
            q -= ai * y_
            a.append(ai)
        if S:
            q *= float(S[-1] @ Yl[-1]) / float(Yl[-1] @ Yl[-1])
            for (s_, y_, r_), ai in zip(zip(S, Yl, rho), reversed(a)):
                q += (ai - r_ * float(y_ @ q)) * s_
            step = 1.0
        else:
            step = min(1.0, 1.0 / max(float(np.linalg.norm(g)), 1e-300))
        d = -q
        slope = float(g @ d)
        if slope >= 0.0:  # not a descent direction: restart from steepest descent
            S.clear(), Yl.clear(), rho.clear()
            d = -g
            slope = -float(g @ g)
            step = min(1.0, 1.0 / max(float(np.linalg.norm(g)), 1e-300))
        for _ in range(60):
            x_new = x + step * d
            f_new, g_new = fg(x_new)
            if f_new <= f + 1e-4 * step * slope:
                break
            step *= 0.5
        else:
            return x, it, True  # no decrease possible at machine precision
        s_vec, y_vec = x_new - x, g_new - g
        sy = float(s_vec @ y_vec)
        if sy > 1e-12 * float(y_vec @ y_vec):
            S.append(s_vec), Yl.append(y_vec), rho.append(1.0 / sy)
            if len(S) > memory:
                S.pop(0), Yl.pop(0), rho.pop(0)
        decrease = f - f_new
        x, f, g = x_new, f_new, g_new
        if decrease <= ftol * max(abs(f), 1.0):
            return x, it + 1, True
        if callback is not None and (it + 1) % callback_every == 0 and callback(x):
            return x, it + 1, True
    return x, maxiter, False
