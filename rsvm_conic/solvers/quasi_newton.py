"""RSVM_QN: the penalty function (17) of [BBBB10] minimised by DFP quasi-Newton.

.. math::

    L(\\alpha) = f(\\alpha) + \\frac P2 \\Big[(y'\\alpha)^2 + \\sum_i (\\alpha_i - C)_+^2
                 + \\sum_i (-\\alpha_i)_+^2\\Big],\\qquad
    f(\\alpha) = \\tfrac12 \\alpha' Q \\alpha + \\tfrac12\\kappa\\sqrt{\\nu'\\beta\\nu} - e'\\alpha,
    \\quad \\nu = \\alpha\\circ\\alpha,\\ Q = Y\\bar K Y.

Gradient: ``Q alpha + kappa * alpha * (beta nu) / sqrt(nu' beta nu) - e`` plus the penalty
gradient (the square-root term is 2-homogeneous; at ``alpha = 0`` its gradient is 0).

The method (Sec. 3): ``alpha <- alpha - eta H grad L`` with the DFP inverse-Hessian update
``H <- H + s s'/(s'g) - H g g' H / (g' H g)`` and a bracketing weak-Wolfe line search,
restarted from several points; the best local minimum of ``L`` is kept.  The paper leaves
``P`` to the user; we use an increasing sequence ``P = P0 * P_factor^k`` (a standard
sequential penalty method, Luenberger & Ye ch. 13) so that the final iterate is feasible up to
``O(1/P)``.  The initial DFP matrix of each penalty level, and the matrix after any change of
the set of violated bounds, is the inverse of the (PD-shifted) Hessian of ``L`` -- without
these restarts plain DFP crawls for thousands of iterations on the Sec. 5.1 data.  ``beta`` may be any
symmetric elementwise-nonnegative matrix (case 3: non-convex in general).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import functools

import numpy as np

from .._threads import blas_threads_by

from .rsvm_socp import RobustKernelObjective

__all__ = ["PenaltyProblem", "dfp_minimize", "rsvm_qn", "QNResult"]


@dataclass
class PenaltyProblem:
    """Data of (17): ``Q = Y K_bar Y``, ``beta``, ``y``, ``C``, ``kappa`` and the penalty ``P``.

    ``f`` is :class:`~rsvm_conic.solvers.rsvm_socp.RobustKernelObjective` with ``M = beta`` (value,
    gradient, Hessian); this class adds the penalty.

    Attributes
    ----------
    Q : ndarray of shape (n, n)
        ``Y K_bar Y``.
    beta : ndarray of shape (n, n)
        The second-moment matrix of the kernel's noise (symmetric, elementwise nonnegative).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    C : float
        The box's bound.
    kappa : float
        The robust term's weight.
    P : float, default 1e4
        The penalty.
    """

    Q: np.ndarray
    beta: np.ndarray
    y: np.ndarray
    C: float
    kappa: float
    P: float = 1e4

    def __post_init__(self):
        self.F = RobustKernelObjective(self.Q, self.beta, self.kappa)
        self._last = None  # (alpha, F.evaluate(alpha)): the line search asks for L, then grad L, at one point
        self._yy = None

    def _parts(self, a):
        last = self._last
        if last is not None and np.array_equal(last[0], a):
            return last[1]
        parts = self.F.evaluate(a)
        self._last = (np.array(a, dtype=float, copy=True), parts)
        return parts

    def f(self, a):
        return self._parts(a)[0]

    def f_grad(self, a):
        return self.F.gradient(a, self._parts(a))

    def penalty(self, a):
        r = float(self.y @ a)
        up = np.maximum(a - self.C, 0.0)
        lo = np.maximum(-a, 0.0)
        return 0.5 * self.P * (r * r + float(up @ up) + float(lo @ lo))

    def L(self, a):
        return self.f(a) + self.penalty(a)

    def grad(self, a):
        r = float(self.y @ a)
        return self.f_grad(a) + self.P * (r * self.y + np.maximum(a - self.C, 0.0) - np.maximum(-a, 0.0))

    def hessian(self, a):
        """Hessian of ``L`` (generalised at the kinks of the penalty: violated bounds count)."""
        parts = self._parts(a)
        H = self.F.hessian(a, parts)
        if self._yy is None:
            self._yy = np.outer(self.y, self.y)
        H += self.P * self._yy
        # bounds that are violated, or active with the gradient of f pushing outwards (the
        # penalty will be active after the first step)
        gf = self.F.gradient(a, parts) + self.P * float(self.y @ a) * self.y
        tol = 1e-12 * max(1.0, float(np.max(self.C)))  # C may hold one bound per sample (the weighted box)
        act = (a > self.C) | (a < 0) | ((a <= tol) & (gf > 0)) | ((a >= self.C - tol) & (gf < 0))
        H[np.diag_indices_from(H)] += self.P * act
        return H

    def violation(self, a):
        return max(
            abs(float(self.y @ a)), float(np.max(np.maximum(a - self.C, 0.0))), float(np.max(np.maximum(-a, 0.0)))
        )


@dataclass
class QNResult:
    """What :func:`rsvm_qn` returns: the best start's local minimum.

    Attributes
    ----------
    alpha : ndarray of shape (n,)
        The best local minimiser.
    L : float
        The penalty function's value there.
    f : float
        The objective (17) there, without the penalty.
    iterations : int
        The best start's DFP iterations over its penalty levels.
    converged : bool
        Whether every level of the best start converged.
    starts : list of dict
        Per start: ``L``, ``f``, ``iterations``, ``converged``, ``violation``.
    """

    alpha: np.ndarray
    L: float
    f: float
    iterations: int
    converged: bool
    starts: list = field(default_factory=list)


def _armijo_wolfe(fun, grad, x, fx, g, d, *, c1=1e-4, c2=0.9, max_eval=40):
    """Bracketing line search for the weak Wolfe conditions (step 1 tried first).

    Returns ``(step, f, grad)`` or ``(None, fx, g)`` if no acceptable step was found.
    """
    slope = float(g @ d)
    lo, hi, t = 0.0, np.inf, 1.0
    best = None
    for _ in range(max_eval):
        xt = x + t * d
        ft = fun(xt)
        if ft > fx + c1 * t * slope or not np.isfinite(ft):
            hi = t
        else:
            gt = grad(xt)
            best = (t, ft, gt)
            if float(gt @ d) < c2 * slope:
                lo = t
            else:
                return t, ft, gt
        t = 0.5 * (lo + hi) if np.isfinite(hi) else 2.0 * t
    if best is not None:  # Armijo holds, curvature not: accept (the update is skipped if s'y <= 0)
        return best
    return None, fx, g


def dfp_minimize(
    fun, grad, x0, *, H0=None, gtol: float = 1e-9, ftol: float = 1e-14, max_iter: int = 2000, reset=None, reset_key=None
):
    """Minimise ``fun`` from ``x0`` by DFP quasi-Newton with a Wolfe line search.

    ``H0``: initial inverse-Hessian approximation (default: scaled identity).  DFP update
    ``H + s s'/(s'q) - H q q' H / (q' H q)`` (``q`` the gradient change), skipped when
    ``s'q <= 0``.  ``reset(x, H, old_key, new_key)`` / ``reset_key(x)`` (optional): when the
    array ``reset_key`` changes between iterates (for (17): the mask of violated bounds, where the
    penalty's curvature jumps by ``P``), the metric is replaced by ``reset(...)``.  Returns
    ``(x, f(x), iterations, converged)``; converged means ``||grad||_inf <= gtol * max(1, |f|)``, or the
    relative decrease of ``f`` fell below ``ftol`` on two consecutive steps, or no Armijo step exists
    along a descent direction.

    Parameters
    ----------
    fun, grad : callable
        The function and its gradient.
    x0 : ndarray
        The start.
    H0 : ndarray, optional
        Initial inverse-Hessian approximation.
    gtol : float, default 1e-9
        Gradient tolerance, relative to ``max(1, |f|)``.
    ftol : float, default 1e-14
        Relative decrease that counts as stalled.
    max_iter : int, default 2000
        Iteration limit.
    reset, reset_key : callable, optional
        The metric's restart and the key whose change triggers it.

    Returns
    -------
    x : ndarray
        The last iterate.
    fx : float
        ``fun(x)``.
    iterations : int
        Iterations taken.
    converged : bool
        Whether a convergence test was met.
    """
    x = np.array(x0, dtype=float)
    n = x.size
    fx = fun(x)
    g = grad(x)
    H = np.array(H0, dtype=float) if H0 is not None else np.eye(n) / max(1.0, float(np.max(np.abs(g))))
    own = True  # H is this function's (updated in place); False after a reset hands it another matrix
    buf = np.empty((n, n))
    converged = False
    small = 0
    it = 0
    last_key = reset_key(x) if reset is not None else None
    for it in range(1, max_iter + 1):
        if float(np.max(np.abs(g))) <= gtol * max(1.0, abs(fx)):
            converged = True
            break
        d = -H @ g
        if float(d @ g) >= 0:  # lost descent: reset the metric
            H = np.eye(n) / max(1.0, float(np.max(np.abs(g))))
            own = True
            d = -H @ g
        step, f_new, g_new = _armijo_wolfe(fun, grad, x, fx, g, d)
        if step is None:
            converged = True  # stationary to working precision
            break
        s = step * d
        q = g_new - g
        sq = float(s @ q)
        if sq > 1e-300:
            Hq = H @ q
            qHq = float(q @ Hq)
            if not own:  # H0 / the reset's matrix is not changed: the first update works on a copy
                H, own = H.copy(), True
            # H + s s'/sq - Hq Hq'/qHq, the same operations in the same order as the expression (bitwise its
            # value), in place through one buffer: the expression's four n x n temporaries per iteration
            # (allocation, page faults) would cost more than the rest of the iteration at the paper's n = 160
            np.multiply.outer(s, s, out=buf)
            buf /= sq
            H += buf
            np.multiply.outer(Hq, Hq, out=buf)
            buf /= qHq
            H -= buf
        decrease = fx - f_new
        x, fx, g = x + s, f_new, g_new
        if reset is not None:
            key = reset_key(x)
            if np.any(key != last_key):
                H = reset(x, H, last_key, key)
                own = False
                last_key = key
        small = small + 1 if decrease <= ftol * max(1.0, abs(fx)) else 0
        if small >= 2:
            converged = True
            break
    return x, fx, it, converged


def _inverse_pd(H):
    """Inverse of ``H`` made positive definite by a diagonal shift if needed.

    Uses numpy's Cholesky and LAPACK's triangular inverse: scipy's ``cho_factor`` can be far slower
    on some 160 x 160 penalty Hessians.
    """
    from scipy.linalg.lapack import dtrtri

    n = H.shape[0]
    diag = np.diag(H)
    scale = max(1e-12, float(np.max(np.abs(diag))))
    shift = 1e-10 * scale
    Hs = H.copy()  # H + shift I: off the diagonal H itself (x + 0.0 = x), on it H_ii + shift (no n x n identity)
    for _ in range(20):
        Hs.flat[:: n + 1] = diag + shift
        try:
            L = np.linalg.cholesky(Hs)
        except np.linalg.LinAlgError:
            shift *= 100.0
            continue
        Li = dtrtri(L, lower=1)[0]
        return Li.T @ Li
    return np.eye(n) / scale


def _penalty_change(prob, x, H, old, new):
    """Metric restart when the set of violated bounds changes: ``H = (Hessian of L at x)^{-1}``.

    (A Sherman-Morrison update of the DFP metric by +-P e_i e_i' keeps stale curvature and needs
    many times the iterations on the Sec. 5.1 data.)"""
    return _inverse_pd(prob.hessian(x))


@blas_threads_by(lambda K_bar, y, *args, **kwargs: float(np.size(y)) ** 3)  # n x n products
def rsvm_qn(
    K_bar,
    y,
    beta,
    C,
    kappa,
    *,
    starts=None,
    n_random: int = 1,
    P0: float | None = None,
    P_levels: int = 2,
    P_factor: float = 1000.0,
    gtol: float = 1e-9,
    ftol: float = 1e-14,
    max_iter: int = 1000,
    init_hessian: bool = True,
    seed: int = 0,
) -> QNResult:
    """Minimise (17) from several starts with an increasing penalty; return the best local minimum.

    ``starts``: list of initial ``alpha`` (e.g. a warm start, the nominal SVM solution);
    ``n_random`` random points in ``[0, C]`` are added.  ``P0`` defaults to
    ``1e3 * (1 + lambda_max(Q))``; the penalty is multiplied by ``P_factor`` for ``P_levels``
    levels.  ``init_hessian``: the DFP matrix of each level starts at the inverse of the
    (shifted to be PD) Hessian of ``L`` at the level's starting point, a standard choice of
    ``H^0`` that removes the ill-conditioning a large ``P`` causes; the metric is restarted the
    same way whenever the set of violated bounds changes (plain DFP crawls for thousands of
    iterations across these curvature jumps on the Sec. 5.1 data).  Otherwise a
    scaled identity and pure DFP.
    The best start is the one with the lowest final ``L``.

    Parameters
    ----------
    K_bar : ndarray of shape (n, n)
        The expected kernel matrix.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    beta : ndarray of shape (n, n)
        The second-moment matrix of the kernel's noise.
    C : float
        The box's bound.
    kappa : float
        The robust term's weight.
    starts : list of ndarray, optional
        Initial ``alpha``.
    n_random : int, default 1
        Random starts added.
    P0 : float, optional
        The first penalty.
    P_levels : int, default 2
        Penalty levels.
    P_factor : float, default 1e3
        The penalty's factor between levels.
    gtol, ftol : float
        :func:`dfp_minimize`'s tolerances.
    max_iter : int, default 1000
        Iterations per level.
    init_hessian : bool, default True
        Start each level's metric at the inverse Hessian (else a scaled identity).
    seed : int, default 0
        Seeds the random starts.

    Returns
    -------
    QNResult
        The best start's result.
    """
    y = np.asarray(y, dtype=float)
    Q = (y[:, None] * np.asarray(K_bar, dtype=float)) * y[None, :]
    beta = 0.5 * (np.asarray(beta, dtype=float) + np.asarray(beta, dtype=float).T)
    n = y.size
    if P0 is None:
        P0 = 1e3 * (1.0 + float(np.linalg.eigvalsh(Q)[-1]))
    rng = np.random.default_rng(seed)
    pts = [np.asarray(s, dtype=float) for s in (starts or [])]
    for _ in range(n_random):
        a = rng.uniform(0, C, n)
        a -= y * (y @ a) / n  # balance the classes
        pts.append(np.clip(a, 0, C))
    if not pts:
        pts.append(np.full(n, 0.5) * C)
    best = None
    records = []
    for a0 in pts:
        a = a0.copy()
        total = 0
        conv = True
        for k in range(P_levels):
            prob = PenaltyProblem(
                Q, beta, y, np.asarray(C, dtype=float) if np.ndim(C) else float(C), float(kappa), P0 * P_factor**k
            )
            H0 = _inverse_pd(prob.hessian(a)) if init_hessian else None
            kw = {}
            if init_hessian:
                kw = {
                    "reset": functools.partial(_penalty_change, prob),
                    "reset_key": lambda x, prob=prob: (x < 0) | (x > prob.C),
                }
            a, Lval, its, c = dfp_minimize(prob.L, prob.grad, a, H0=H0, gtol=gtol, ftol=ftol, max_iter=max_iter, **kw)
            total += its
            conv = conv and c
        rec = {"L": Lval, "f": prob.f(a), "iterations": total, "converged": conv, "violation": prob.violation(a)}
        records.append(rec)
        if best is None or Lval < best[1]:
            best = (a, Lval, prob.f(a), total, conv)
    return QNResult(best[0], best[1], best[2], best[3], best[4], records)
