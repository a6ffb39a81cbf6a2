"""The safe SVM's bi-level methods [CJ20, eq. 7] ([CW16], [CW17]): hypergradient descent and the stochastic
bi-level gradient method.

:class:`SmoothedBilevel` holds the smoothed problem's data (softplus hinge, smoothed support function);
:func:`solve_lower` (damped Newton on the lower level), :func:`hypergradient` (implicit function theorem) and
:func:`hypergradient_descent` (projected, Armijo backtracking on the box) are the ``"hypergradient"`` route,
:func:`stochastic_bilevel` (two coupled stochastic-approximation loops, seeded) the ``"stochastic_bilevel"``
route.  Nothing is certified at the upper level (eq. 7 is non-convex in sigma); the formulation certifies the
lower level at the returned sigma.  The smoothed problem and the stochastic method's steps are written out in the
user guide (``docs/guide/safe.md``, "The bi-level methods").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

__all__ = [
    "BilevelResult",
    "PRECISION",
    "HypergradientResult",
    "hypergradient",
    "hypergradient_descent",
    "lower_derivatives",
    "lower_newton",
    "SmoothedBilevel",
    "softplus",
    "sigmoid",
    "solve_lower",
    "stochastic_bilevel",
    "upper_gradient",
]

#: the first outer step moves sigma by this fraction of the box width (the rule that sets beta0)
BETA_FRACTION = 0.1


def softplus(z, tau):
    """``tau log(1 + exp(z / tau))``: the smoothed hinge ``max{0, z}`` (within ``tau log 2``).

    Parameters
    ----------
    z : ndarray
        The argument.
    tau : float
        The smoothing (> 0).

    Returns
    -------
    ndarray
    """
    return tau * np.logaddexp(0.0, z / tau)


def sigmoid(z):
    """``1 / (1 + exp(-z))`` without overflow.

    Parameters
    ----------
    z : ndarray
        The argument.

    Returns
    -------
    ndarray
    """
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def lower_derivatives(X, y, C, theta, sigma, tau, eps, weight=1.0, mixed=False):
    """Gradient, Hessian (and with ``mixed`` the derivative J of the gradient w.r.t. sigma) of the smoothed
    lower level ``g = 1/2 ||w||^2 + C weight sum_i s_tau(z_i)`` on the rows (X, y) given.

    ``weight = L / |B|`` on a minibatch B makes every returned quantity an unbiased estimate of the
    full-data one; ``weight`` may also hold one weight per row (sample weights).  Returns
    ``(grad (n+1,), H (n+1, n+1), J (n+1, n) or None, z (m,))``.

    Parameters
    ----------
    X : ndarray of shape (m, n)
        The rows.
    y : ndarray of shape (m,)
        Labels in {-1, +1}.
    C : float
        The hinge's weight.
    theta : ndarray of shape (n + 1,)
        ``(w, b)``.
    sigma : ndarray of shape (n,)
        The ellipsoid's semi-axes.
    tau, eps : float
        The smoothing of the hinge and of the support function.
    weight : float or ndarray of shape (m,), default 1.0
        The rows' weights.
    mixed : bool, default False
        Also return J.

    Returns
    -------
    grad : ndarray of shape (n + 1,)
    H : ndarray of shape (n + 1, n + 1)
    J : ndarray of shape (n + 1, n) or None
    z : ndarray of shape (m,)
        The smoothed hinges' arguments.
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
    number or one weight per row).

    Parameters
    ----------
    Xv : ndarray of shape (m, n)
        The validation rows.
    yv : ndarray of shape (m,)
        Labels in {-1, +1}.
    theta : ndarray of shape (n + 1,)
        ``(w, b)``.
    tau : float
        The hinge's smoothing.
    weight : float or ndarray of shape (m,), default 1.0
        The rows' weights.

    Returns
    -------
    F : float
    grad : ndarray of shape (n + 1,)
    """
    m = yv * (Xv @ theta[:-1] + theta[-1])
    av = weight * sigmoid((1.0 - m) / tau)
    g = -np.concatenate([(av * yv) @ Xv, [np.sum(av * yv)]])
    return float(np.sum(weight * softplus(1.0 - m, tau))), g


@dataclass(frozen=True, eq=False)
class SmoothedBilevel:
    """The data of the smoothed bi-level problem (both levels as in ``docs/guide/safe.md``, "The bi-level methods").

    Parameters
    ----------
    X, y : ndarray of shape (L, n) and (L,)
        Training rows (lower level), labels in {-1, +1}.
    X_val, y_val : ndarray of shape (L_val, n) and (L_val,)
        Validation rows (upper level), labels in {-1, +1}.
    C : float
        Weight of the lower level's smoothed robust hinge.
    tau : float
        Softplus smoothing of the hinge on both levels.
    eps : float
        Smoothing of ``||diag(sigma) w||`` as ``sqrt(||diag(sigma) w||^2 + eps^2)``.
    weight, weight_val : float or ndarray, default=1.0
        Loss weights of the training and validation rows.
    """

    X: np.ndarray
    y: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    C: float
    tau: float
    eps: float
    weight: float | np.ndarray = 1.0
    weight_val: float | np.ndarray = 1.0

    def lower_objective(self, theta, sigma) -> float:
        """``g(theta; sigma) = 1/2 ||w||^2 + C sum_i weight_i s_tau(z_i)``, ``z_i = 1 - y_i (<w, x_i> + b) +
        sqrt(||sigma * w||^2 + eps^2)``, at ``theta = (w, b)``."""
        w, b = theta[:-1], theta[-1]
        z = 1.0 - self.y * (self.X @ w + b) + np.sqrt(np.sum((sigma * w) ** 2) + self.eps**2)
        return 0.5 * float(w @ w) + self.C * float(np.sum(self.weight * softplus(z, self.tau)))

    def lower_derivatives(self, theta, sigma, mixed=False):
        """:func:`lower_derivatives` on all training rows with their weights."""
        return lower_derivatives(self.X, self.y, self.C, theta, sigma, self.tau, self.eps, self.weight, mixed)

    def upper_objective(self, theta) -> float:
        """The smoothed validation loss at ``theta`` (:func:`upper_gradient`)."""
        return upper_gradient(self.X_val, self.y_val, theta, self.tau, self.weight_val)[0]

    def validation_hinge(self, theta) -> float:
        """The exact (unsmoothed) validation loss ``sum_i weight_val_i max{0, 1 - y_i (<w, x_i> + b)}`` at
        ``theta = (w, b)``.

        Parameters
        ----------
        theta : ndarray of shape (n + 1,)
            ``(w, b)``.

        Returns
        -------
        float
        """
        m = self.y_val * (self.X_val @ theta[:-1] + theta[-1])
        return float(np.sum(self.weight_val * np.maximum(0.0, 1.0 - m)))


#: below this predicted decrease (relative to ``max(1, abs(g))``) a Newton step is judged by the gradient's norm, not by
#: the objective, whose rounding (about 1e-16 abs(g) per term of its sum) hides decreases of this size
PRECISION = 1e-12


def lower_newton(problem: SmoothedBilevel, sigma, theta, tol=1e-10, max_iter=200):
    """Damped (Levenberg-regularised) Newton on the smoothed lower level from ``theta``.

    Steps are accepted by Armijo backtracking on the objective while the predicted decrease ``grad' step`` is
    above ``PRECISION max(1, |g|)``; below it the objective's rounding hides the decrease, and the full Newton
    step is accepted when it lowers the gradient's norm (else the iteration stops: ``theta`` is a minimiser to
    the precision of the arithmetic).

    Parameters
    ----------
    problem : SmoothedBilevel
        The data and smoothing.
    sigma : ndarray of shape (n,)
        The ellipsoid's semi-axes.
    theta : ndarray of shape (n + 1,)
        Start ``(w, b)``.
    tol : float, default=1e-10
        Stop when ``||grad|| <= tol max(1, |g|)``.
    max_iter : int, default=200
        Newton iterations.

    Returns
    -------
    ndarray of shape (n + 1,)
        ``theta`` at the stopping point (also when no descent is possible at machine precision).
    """
    f = problem.lower_objective(theta, sigma)
    mu = 1e-10
    eye = np.eye(theta.shape[0])
    g, H, _, _ = problem.lower_derivatives(theta, sigma)
    for _ in range(max_iter):
        gnorm = np.linalg.norm(g)
        if gnorm <= tol * max(1.0, abs(f)):
            break
        step = np.linalg.solve(H + mu * eye, g)
        if float(g @ step) <= PRECISION * max(1.0, abs(f)):  # the decrease is below the objective's rounding
            cand = theta - step
            gc, Hc, _, _ = problem.lower_derivatives(cand, sigma)
            if not np.linalg.norm(gc) < gnorm:
                break  # a minimiser to the precision of the arithmetic
            theta, f, g, H = cand, problem.lower_objective(cand, sigma), gc, Hc
            continue
        accepted = False
        while mu < 1e12:
            step = np.linalg.solve(H + mu * eye, g)
            t = 1.0
            while t >= 1e-4:
                cand = theta - t * step
                fc = problem.lower_objective(cand, sigma)
                if fc <= f - 1e-4 * t * float(g @ step):
                    accepted = True
                    break
                t *= 0.5
            if accepted:
                break
            mu *= 100.0
        if not accepted:
            break  # no descent possible at machine precision
        theta, f = cand, fc
        mu = max(mu / 100.0, 1e-10)
        g, H, _, _ = problem.lower_derivatives(theta, sigma)
    return theta


def solve_lower(problem: SmoothedBilevel, sigma, theta0=None, tol=1e-10, max_iter=200):
    """The smoothed lower level's minimiser ``theta = (w, b)`` by :func:`lower_newton`.

    A cold start (``theta0=None``) goes from zero through a continuation in tau (1, 0.1, ..., down to the
    problem's tau, each to 1e-6) so that the softplus is never followed from far away at its sharpest.

    Parameters
    ----------
    problem : SmoothedBilevel
        The data and smoothing.
    sigma : ndarray of shape (n,)
        The ellipsoid's semi-axes.
    theta0 : ndarray of shape (n + 1,) or None, default=None
        Warm start; None: a cold start.
    tol : float, default=1e-10
        Final stopping tolerance of :func:`lower_newton`.
    max_iter : int, default=200
        Newton iterations per stage.

    Returns
    -------
    ndarray of shape (n + 1,)
    """
    if theta0 is None:
        theta = np.zeros(problem.X.shape[1] + 1)
        for t in [10.0**-k for k in range(0, 8) if 10.0**-k > problem.tau]:
            theta = lower_newton(replace(problem, tau=t), sigma, theta, 1e-6, max_iter)
    else:
        theta = np.array(theta0, dtype=float)
    return lower_newton(problem, sigma, theta, tol, max_iter)


def hypergradient(problem: SmoothedBilevel, sigma, theta):
    """``(F(sigma), dF/dsigma)`` of the smoothed bi-level problem at the lower solution ``theta`` by the implicit
    function theorem: ``dF/dsigma = -J' H^{-1} grad_theta F`` (``H``, ``J``: :func:`lower_derivatives`).

    Parameters
    ----------
    problem : SmoothedBilevel
        The data and smoothing.
    sigma : ndarray of shape (n,)
        The ellipsoid's semi-axes.
    theta : ndarray of shape (n + 1,)
        The smoothed lower level's solution at ``sigma``.

    Returns
    -------
    F : float
        The smoothed validation loss.
    grad : ndarray of shape (n,)
        Its derivative in sigma.
    """
    _, H, J, _ = problem.lower_derivatives(theta, sigma, mixed=True)
    F, gF = upper_gradient(problem.X_val, problem.y_val, theta, problem.tau, problem.weight_val)
    v = np.linalg.solve(H + 1e-12 * np.eye(H.shape[0]), gF)
    return F, -J.T @ v


@dataclass
class HypergradientResult:
    """What :func:`hypergradient_descent` returns (no certificate: eq. 7 is non-convex in sigma).

    Attributes
    ----------
    sigma : ndarray of shape (n,)
        The last iterate.
    theta : ndarray of shape (n + 1,)
        The smoothed lower level's solution at ``sigma``.
    F : float
        The smoothed upper objective at ``(sigma, theta)``.
    iterations : int
        Outer iterations.
    converged : bool
        Whether the step or the change of ``F`` fell below ``tol``.
    history : list
        ``(k, F(sigma_k), sigma_k)`` per iteration.
    lower_solves : int
        Lower-level solves (:func:`solve_lower`) in all, the backtracking's included.
    """

    sigma: np.ndarray  # the last iterate
    theta: np.ndarray  # the smoothed lower level's solution at sigma
    F: float  # the smoothed upper objective at (sigma, theta)
    iterations: int
    converged: bool
    history: list = field(default_factory=list)  # (k, F(sigma_k), sigma_k)
    lower_solves: int = 0


def hypergradient_descent(
    problem: SmoothedBilevel, lo, hi, *, sigma0=None, theta0=None, max_iter=100, step0=1.0, tol=1e-6
) -> HypergradientResult:
    """Projected hypergradient descent on the box ``[lo, hi]`` with Armijo backtracking.

    Parameters
    ----------
    problem : SmoothedBilevel
        The data and smoothing.
    lo, hi : ndarray of shape (n,)
        The box of sigma.
    sigma0 : ndarray of shape (n,) or None, default=None
        Start (clipped to the box); None: the box's centre.
    theta0 : ndarray of shape (n + 1,) or None, default=None
        Warm start of the first lower-level solve; None: a cold start (:func:`solve_lower`).
    max_iter : int, default=100
        Outer iterations.
    step0 : float, default=1.0
        First step length (doubled after each accepted step, halved while Armijo fails).
    tol : float, default=1e-6
        Stop when sigma moves by at most ``tol max(1, ||sigma||)`` or F changes by at most ``tol max(1, |F|)``.

    Returns
    -------
    HypergradientResult
    """
    sigma = np.clip(0.5 * (lo + hi) if sigma0 is None else np.asarray(sigma0, dtype=float), lo, hi)
    theta = solve_lower(problem, sigma, theta0)
    solves = 1
    F, g = hypergradient(problem, sigma, theta)
    step = step0
    history = [(0, F, sigma.copy())]
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        while True:
            cand = np.clip(sigma - step * g, lo, hi)
            th = solve_lower(problem, cand, theta)
            solves += 1
            Fc = problem.upper_objective(th)
            if Fc <= F - 1e-4 * float(g @ (sigma - cand)) or step < 1e-10:
                break
            step *= 0.5
        moved = np.linalg.norm(cand - sigma)
        sigma, theta, Fprev = cand, th, F
        F, g = hypergradient(problem, sigma, theta)
        history.append((it, F, sigma.copy()))
        step *= 2.0
        if moved <= tol * max(1.0, np.linalg.norm(sigma)) or abs(Fprev - F) <= tol * max(1.0, abs(F)):
            converged = True
            break
    return HypergradientResult(sigma, theta, F, it, converged, history, solves)


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
    """What :func:`stochastic_bilevel` returns (no certificate: see the module docstring).

    Attributes
    ----------
    sigma : ndarray of shape (n,)
        The averaged outer iterate (second half of the run).
    w : ndarray of shape (n,)
        The averaged inner iterate of the last outer iteration.
    b : float
        Its bias.
    iterations : int
        Outer iterations.
    inner_steps : int
        Lower-level steps in all.
    eta0, beta0 : float
        The inner and outer initial steps used.
    time : float
        Wall-clock seconds.
    history : list
        ``(k, F(sigma_k) on all validation rows, sigma_k)`` every ``eval_every`` iterations.
    """

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
    """Stochastic bi-level gradient method on the smoothed safe SVM(``docs/guide/safe.md``, "The bi-level methods").

    Trusted arrays: labels in {-1, +1}, ``lo <= hi`` of shape (n,).  ``inner_steps`` defaults to one
    epoch of the training data (``ceil(L / batch_size)``); ``eta0`` / ``beta0`` default to the rules of
    ``docs/guide/safe.md``; ``history`` records the full smoothed upper objective every ``eval_every``
    outer iterations (one pass over the validation rows; it does not touch the random stream).

    Parameters
    ----------
    X, y : ndarray of shape (L, n), (L,)
        The training rows and labels.
    Xv, yv : ndarray of shape (N, n), (N,)
        The validation rows and labels.
    C : float
        The hinge's weight.
    lo, hi : ndarray of shape (n,)
        The box of sigma.
    sigma0 : ndarray of shape (n,), optional
        The start (default: the box's middle).
    tau, eps : float
        The smoothing of the hinge and of the support function.
    n_outer : int, default 300
        Outer iterations.
    inner_steps : int, optional
        Lower-level steps per outer iteration.
    batch_size : int, default 32
        The lower level's minibatch.
    hyper_batch, val_batch : int
        The training and validation minibatches of a hypergradient.
    eta0, beta0 : float, optional
        The inner and outer initial steps.
    eval_every : int, default 10
        Outer iterations between records of the upper objective.
    warmup : int, default 20
        Lower-level epochs at the starting sigma.
    theta0 : ndarray of shape (n + 1,), optional
        The lower level's start.
    seed : int, default 0
        Seeds every random draw.

    Returns
    -------
    BilevelResult
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
