"""One convex step of the hyperbolic machine's CCP [ElD19, chapter 3], solved by a first-order method with a
certified gap.

The step (the CCP majoriser, scaled by ``gamma``; the constants of the tangent dropped) is::

    minimise  P(mu, R) = gamma lam ||R||^2 + sum_i s_i G_i(n_i, R) - q . mu - e . R
    over      mu_k in the simplex of class k's anchors (O_k = sum_{a in k} mu_a A_a),  R >= 0,

with ``n_ij = ||O_j - phi_i||`` and ``G_i = max_l piece_il`` over the ``C`` pieces
``piece_il = (N_i - n_il) / 2 + [l != y_i] (gamma + (R_l - R_{y_i}) / 2)``, ``N_i = sum_j n_ij``: the piece
``l = y_i`` is the ``b_i`` branch of the CCP's ``G_i = max(gamma + a_i, b_i)``, the others its ``a_i`` branch
with the maximising class ``l``.  The CVXPY form of the same step is the formulation's SOCP.

Method: accelerated projected gradient (FISTA with backtracking and adaptive restart) on the smoothed step, each
``max`` replaced by ``tau log sum exp(. / tau)`` (at most ``tau log C`` above it), ``tau`` lowered as the gap
closes; the steps in ``mu`` use the metric ``sum_a dmu_a^2 / w_a`` (:class:`MajoriserStep`'s ``anchor_weights``),
whose projection onto the product of simplices is :func:`simplex_project`.  The iterations run compiled (numba,
:func:`_fista_iterations`) in chunks of ``CHUNK``; between chunks the certificate is evaluated and the smoothing
lowered.  The bound is valid for any dual point, but the one built from the iterates converges slowly: on 300
digits the recorded gaps stay of the order of each step's decrease (``rsvm-conic bench hyperbolic``).

Certificate (weak duality).  For any ``pi_i`` in the simplex and any ``U_ij`` with
``||U_ij|| <= s_i (1 - pi_ij) / 2``, ``s_i G_i >= s_i sum_l pi_il piece_il >= s_i gamma (1 - pi_iy) + U_ij .
(O_j - phi_i) summed over j + s_i rho_i . R``, which is affine in ``(mu, R)``; its minimum over the simplices
and ``R >= 0`` is in closed form, so every such ``(pi, U)`` gives a lower bound ``D`` on the step's optimum.  The
solver takes ``pi`` from the smoothed maximum's weights and ``U_ij`` along ``O_j - phi_i``, and keeps the best of
the bound at the current point and at the running average of these dual points (a convex combination of feasible
points is feasible).  The gap ``P - D`` is certified; the step stops when it is at most ``eta`` times the largest
decrease still possible from the start (``P(start) - D``), i.e. the step has made at least ``1 - eta`` of the
decrease any step could make, or when that largest decrease is below ``abs_tol`` (the start is a fixed point of
the CCP to that accuracy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._jit import jit
from .._threads import blas_threads_for
from .ccp import ccp_runs, screened_runs

#: gradient steps between two evaluations of the certificate
CHUNK = 10
#: :func:`ipm_ccp`'s inexact steps: the absolute gap target is ``STEP_ETA`` times the previous step's majoriser drop
#: (the first step of a start: times ``f``, which bounds it), at least ``STEP_FLOOR tol (1 + |f|)``; a step whose
#: certified gap exceeds ``ACCEPT`` times the largest decrease still possible (``P(start) - D``) is solved again to
#: ``STEP_ETA`` times the drop it made
STEP_ETA = 0.1
STEP_FLOOR = 0.1
ACCEPT = 0.5
#: :func:`ipm_ccp`'s starts: every start to ``SCREEN tol`` first (:func:`~rsvm_conic.solvers.ccp.screened_runs`)
SCREEN = 10.0

__all__ = [
    "MajoriserStep",
    "StepResult",
    "dual_summary",
    "first_order_ccp",
    "ipm_ccp",
    "simplex_extrapolation",
    "simplex_project",
    "solve_majoriser",
]


def simplex_project(v, groups, n_groups: int, weights=None) -> np.ndarray:
    """Projection onto the product of simplices ``{x >= 0, sum_{a in group k} x_a = 1}`` in the metric
    ``sum_a (x_a - v_a)^2 / w_a``: ``x_a = max(v_a - w_a theta_k, 0)`` with ``theta_k`` fixing each group's sum.

    Parameters
    ----------
    v : ndarray of shape (m,)
        The point.
    groups : ndarray of shape (m,)
        The group ``0..n_groups-1`` of each coordinate, non-decreasing (every group non-empty).
    n_groups : int
        The number of groups.
    weights : ndarray of shape (m,) or None, default=None
        The metric's positive weights ``w`` (ones when None: the Euclidean projection).

    Returns
    -------
    ndarray of shape (m,)
        The projection (sort-based, vectorised over the groups).
    """
    w = np.ones(v.size) if weights is None else weights
    order = np.lexsort((-v / w, groups))
    vs, ws, gs = v[order], w[order], groups[order]
    start = np.searchsorted(gs, np.arange(n_groups))
    cv, cw = np.cumsum(vs), np.cumsum(ws)
    cum_v = cv - np.concatenate([[0.0], cv])[start][gs]
    cum_w = cw - np.concatenate([[0.0], cw])[start][gs]
    # the breakpoints theta = v_a / w_a in decreasing order: the coordinates kept are those before the first
    # breakpoint below (cum_v - 1) / cum_w
    keep = vs - ws * (cum_v - 1.0) / cum_w > 0
    pos = np.arange(v.size)
    last = np.full(n_groups, -1, dtype=np.int64)
    np.maximum.at(last, gs, np.where(keep, pos, -1))
    theta = (cum_v[last] - 1.0) / cum_w[last]
    return np.maximum(v - w * theta[groups], 0.0)


def simplex_extrapolation(centres, weights):
    """The boosted step's points for the hyperbolic machine's points ``(mus, R, O)`` (simplex weights per class,
    radii, centres): ``z(s)`` the projection of ``y + s (y - x)`` onto the feasible set (each class's weights onto
    its simplex in the metric ``sum_a dmu_a^2 / w_a``, :func:`simplex_project`; the radii onto ``R >= 0``), the
    path of a projected line search.  With the sample weights as ``w``, a point of integer weight ``s`` takes the
    steps of its ``s`` copies (their weights summed).

    Parameters
    ----------
    centres : callable
        ``centres(mus) -> O``.
    weights : list of ndarray
        Per class, the positive weights ``w`` of its hull's points (sample weights, or the anchors' masses).

    Returns
    -------
    callable
        ``extrapolate(x, y, s) -> (z(s), ||z(s) - y||^2)`` (:func:`~rsvm_conic.solvers.ccp.boosted_step`), the
        squared change of the centres and radii.
    """
    sizes = [w.size for w in weights]
    groups = np.repeat(np.arange(len(sizes)), sizes)
    bounds = np.cumsum([0] + sizes)
    metric = np.concatenate(weights)

    def extrapolate(point, candidate, s):
        (mus0, R0, _), (mus1, R1, O1) = point, candidate
        y = np.concatenate(mus1)
        mu = simplex_project(y + s * (y - np.concatenate(mus0)), groups, len(sizes), metric)
        mus = [mu[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        R = np.maximum(R1 + s * (R1 - R0), 0.0)
        O = centres(mus)
        return (mus, R, O), float(np.sum((O - O1) ** 2) + np.sum((R - R1) ** 2))

    return extrapolate


@dataclass
class StepResult:
    """The result of one step.

    Parameters
    ----------
    mu : ndarray of shape (m,)
        The simplex weights of the anchors at the point returned.
    R : ndarray of shape (C,)
        The radii there.
    primal : float
        ``P`` there (not smoothed).
    dual : float
        The certified lower bound ``D`` on the step's optimum.
    start_value : float
        ``P`` at the start.
    iterations : int
        Gradient steps taken.
    stop : str
        ``gap``, ``stationary`` or ``max_iter`` (module docstring).
    """

    mu: np.ndarray
    R: np.ndarray
    primal: float
    dual: float
    start_value: float
    iterations: int
    stop: str


class MajoriserStep:
    """The data of the CCP step (module docstring), built once per fit; :meth:`set_tangent` sets each step's
    linear terms.

    Parameters
    ----------
    Phi : ndarray of shape (n, D)
        Feature vectors (trusted).
    codes : ndarray of shape (n,)
        Class codes ``0..C-1``.
    anchors : ndarray of shape (m, D)
        The points whose hulls hold the centres (the class points, or k-means centroids).
    anchor_class : ndarray of shape (m,)
        The class of each anchor, non-decreasing (the anchors sorted by class; every class non-empty).
    weights : ndarray of shape (n,)
        The sample weights ``s_i`` (positive).
    gamma, lam : float
        The machine's margin parameter and the weight of ``||R||^2``.
    anchor_weights : ndarray of shape (m,) or None, default=None
        The metric of the gradient steps in ``mu`` (``sum_a dmu_a^2 / w_a``; ones when None).  With the class points
        as anchors, their sample weights: then a point of integer weight ``s`` and ``s`` copies of it take the same
        steps (the copies' weights summed), so the CCP of integer weights is that of the repeated rows.
    """

    def __init__(self, Phi, codes, anchors, anchor_class, weights, gamma: float, lam: float, anchor_weights=None):
        self.Phi, self.codes, self.A, self.agrp, self.s = Phi, codes, anchors, anchor_class, weights
        self.metric = np.ones(anchors.shape[0]) if anchor_weights is None else anchor_weights
        self.gamma, self.lam = float(gamma), float(lam)
        self.C = int(anchor_class.max()) + 1
        self.pn = np.einsum("ij,ij->i", Phi, Phi)
        self.q = np.zeros(anchors.shape[0])
        self.e = np.zeros(self.C)
        order = np.argsort(anchor_class, kind="stable")
        if np.any(order != np.arange(order.size)):
            raise ValueError("anchors must be sorted by class (anchor_class non-decreasing).")
        self._starts = np.searchsorted(anchor_class, np.arange(self.C))
        self._arange = np.arange(anchors.shape[0])

    def set_tangent(self, Q, e) -> None:
        """The step's linear terms: ``Q`` (C, D), the tangent's gradient in the centres, and ``e`` (C,) in ``R``."""
        self.q = (self.A @ Q.T)[self._arange, self.agrp]
        self.e = np.asarray(e, dtype=np.float64)

    def centres(self, mu) -> np.ndarray:
        """``O_k = sum_{a in k} mu_a A_a``, shape (C, D)."""
        return np.add.reduceat(mu[:, None] * self.A, self._starts, axis=0)

    def _linear(self, mu, R):
        return self.gamma * self.lam * (R @ R) - self.q @ mu - self.e @ R

    def value(self, mu, R, tau: float = 0.0):
        """``P(mu, R)``, and its smoothed form for ``tau > 0`` (``(P, P_tau)``; ``P`` alone for ``tau = 0``)."""
        out = _step_sums(self.Phi, self.pn, self.centres(mu), R, self.codes, self.s, self.gamma, tau, False)
        lin = self._linear(mu, R)
        return float(lin + out[0]) if tau <= 0 else (float(lin + out[0]), float(lin + out[1]))

    def bound(self, dual) -> float:
        """The lower bound ``D`` on the step's optimum from a dual point's summaries ``(const, sum_i U_i, r)``."""
        const, Ug, rR = dual
        g = (self.A @ Ug.T)[self._arange, self.agrp] - self.q
        mins = np.minimum.reduceat(g, self._starts)
        b = rR - self.e
        return float(const + mins.sum() - np.sum(np.minimum(b, 0.0) ** 2) / (4.0 * self.gamma * self.lam))


@jit(error_model="numpy", fastmath={"reassoc", "nsz", "contract"})
def _step_sums(Phi, pn, O, R, codes, s, gamma, tau, grad):
    """One pass over the samples: ``sum_i s_i max_l piece_il`` and its smoothed form ``tau log sum exp`` (the
    maximum for ``tau = 0``) and, with ``grad``, the dual point of the smoothed maximum's weights ``pi_i`` and
    ``U_ij = s_i (1 - pi_ij) / 2 (O_j - phi_i) / n_ij``: ``sum_i U_ij`` (C, D) (the gradient in ``O``), ``r``
    (C,) (the gradient of ``sum_i s_i G_i`` in ``R``) and ``sum_i s_i gamma (1 - pi_iy) - U_ij . phi_i``."""
    n, D = Phi.shape
    C = O.shape[0]
    PO = Phi @ O.T
    Ug = np.zeros((C, D))
    wsum = np.zeros(C)
    rR = np.zeros(C)
    d = np.empty(C)
    pc = np.empty(C)
    z = np.empty(C)
    P = 0.0
    Ptau = 0.0
    const = 0.0
    for i in range(n):
        y = codes[i]
        N = 0.0
        for j in range(C):
            # the difference itself, not ||phi||^2 - 2 phi.O + ||O||^2: where a centre meets a sample (a vertex of
            # its simplex) the expansion's rounding, under the square root, would be of the order of 1e-8
            acc = 0.0
            for k in range(D):
                t = Phi[i, k] - O[j, k]
                acc += t * t
            d[j] = np.sqrt(acc)
            N += d[j]
        top = -np.inf
        for j in range(C):
            pc[j] = 0.5 * (N - d[j])
            if j != y:
                pc[j] += gamma + 0.5 * (R[j] - R[y])
            top = max(top, pc[j])
        P += s[i] * top
        if tau <= 0.0:
            Ptau += s[i] * top
            continue
        tot = 0.0
        for j in range(C):
            z[j] = np.exp((pc[j] - top) / tau)
            tot += z[j]
        Ptau += s[i] * (top + tau * np.log(tot))
        if not grad:
            continue
        for j in range(C):
            pi = z[j] / tot
            if j == y:
                const += s[i] * gamma * (1.0 - pi)
                rR[y] -= 0.5 * s[i] * (1.0 - pi)
            else:
                rR[j] += 0.5 * s[i] * pi
            if d[j] > 0.0:
                w = 0.5 * s[i] * (1.0 - pi) / d[j]
                wsum[j] += w
                const -= w * (PO[i, j] - pn[i])
                for k in range(D):
                    Ug[j, k] -= w * Phi[i, k]
    for j in range(C):
        for k in range(D):
            Ug[j, k] += wsum[j] * O[j, k]
    return P, Ptau, Ug, rR, const


@jit(error_model="numpy")
def _centres(mu, A, bounds):
    C, D = bounds.size - 1, A.shape[1]
    O = np.zeros((C, D))
    for k in range(C):
        for a in range(bounds[k], bounds[k + 1]):
            for d in range(D):
                O[k, d] += mu[a] * A[a, d]
    return O


@jit(error_model="numpy")
def _project(v, bounds, w, out):
    """:func:`simplex_project` group by group (the anchors sorted by class, group k in ``bounds[k]:bounds[k+1]``)."""
    for k in range(bounds.size - 1):
        lo, hi = bounds[k], bounds[k + 1]
        ratio = v[lo:hi] / w[lo:hi]
        order = np.argsort(-ratio)
        cv, cw, theta = 0.0, 0.0, 0.0
        for r in range(hi - lo):
            a = lo + order[r]
            cv += v[a]
            cw += w[a]
            if v[a] - w[a] * (cv - 1.0) / cw > 0:
                theta = (cv - 1.0) / cw
        for a in range(lo, hi):
            out[a] = max(v[a] - w[a] * theta, 0.0)


@jit(error_model="numpy")
def _fista_iterations(
    Phi,
    pn,
    A,
    bounds,
    metric,
    codes,
    s,
    gamma,
    lam,
    q,
    e,
    tau,
    n_iter,
    x_mu,
    x_R,
    y_mu,
    y_R,
    best_mu,
    best_R,
    scal,
    dual_Ug,
    dual_rR,
    avg_Ug,
    avg_rR,
    dual_scal,
):
    """``n_iter`` iterations of FISTA (backtracking, adaptive restart) on the smoothed step, in place on the iterates
    ``x``, ``y`` and the best point; ``scal = [t, L, best P, iteration count]``, the last dual point
    (``dual_Ug``, ``dual_rR``, ``dual_scal[0]``) and its running average (weights proportional to the iteration;
    ``avg_Ug``, ``avg_rR``, ``dual_scal[1]``, total weight ``dual_scal[2]``)."""
    m, C = A.shape[0], bounds.size - 1
    t, L, best_P, count = scal[0], scal[1], scal[2], scal[3]
    agrp = np.empty(m, dtype=np.int64)
    for k in range(C):
        agrp[bounds[k] : bounds[k + 1]] = k
    n_mu = np.empty(m)
    v = np.empty(m)
    for _ in range(n_iter):
        count += 1.0
        O = _centres(y_mu, A, bounds)
        P, Ptau, Ug, rR, const = _step_sums(Phi, pn, O, y_R, codes, s, gamma, tau, True)
        lin = gamma * lam * (y_R @ y_R) - q @ y_mu - e @ y_R
        fy = lin + Ptau
        gmu = np.empty(m)
        for a in range(m):
            gmu[a] = A[a] @ Ug[agrp[a]] - q[a]
        gR = 2.0 * gamma * lam * y_R + rR - e
        dual_Ug[:] = Ug
        dual_rR[:] = rR
        dual_scal[0] = const
        dual_scal[2] += count
        f = count / dual_scal[2]
        avg_Ug += f * (Ug - avg_Ug)
        avg_rR += f * (rR - avg_rR)
        dual_scal[1] += f * (const - dual_scal[1])
        while True:
            for a in range(m):
                v[a] = y_mu[a] - metric[a] * gmu[a] / L
            _project(v, bounds, metric, n_mu)
            n_R = np.maximum(y_R - gR / L, 0.0)
            dm = n_mu - y_mu
            dr = n_R - y_R
            On = _centres(n_mu, A, bounds)
            Pn, Pn_tau, _, _, _ = _step_sums(Phi, pn, On, n_R, codes, s, gamma, tau, False)
            lin_n = gamma * lam * (n_R @ n_R) - q @ n_mu - e @ n_R
            model = fy + gmu @ dm + gR @ dr + 0.5 * L * ((dm / metric) @ dm + dr @ dr) + 1e-12 * abs(fy)
            if lin_n + Pn_tau <= model or L > 1e30:
                break
            L *= 2.0
        if lin_n + Pn < best_P:
            best_P = lin_n + Pn
            best_mu[:] = n_mu
            best_R[:] = n_R
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        mom = (t - 1.0) / t_new
        if (dm / metric) @ (n_mu - x_mu) + dr @ (n_R - x_R) < 0:  # adaptive restart
            t_new, mom = 1.0, 0.0
        y_mu[:] = n_mu + mom * (n_mu - x_mu)
        y_R[:] = n_R + mom * (n_R - x_R)
        x_mu[:] = n_mu
        x_R[:] = n_R
        t = t_new
        L *= 0.95
    scal[0], scal[1], scal[2], scal[3] = t, L, best_P, count


def solve_majoriser(
    step: MajoriserStep,
    mu,
    R,
    *,
    eta: float = 0.05,
    abs_tol: float = 0.0,
    max_iter: int = 2000,
    state: dict | None = None,
) -> StepResult:
    """Minimise the step from ``(mu, R)`` to a certified gap (module docstring).

    Parameters
    ----------
    step : MajoriserStep
        The step's data, its tangent set.
    mu : ndarray of shape (m,)
        Start: simplex weights of the anchors.
    R : ndarray of shape (C,)
        Start: radii (non-negative).
    eta : float, default=0.05
        Stop when the certified gap is at most ``eta`` times the largest decrease still possible from the start.
    abs_tol : float, default=0.0
        Stop (``stationary``) when that largest decrease is at most ``abs_tol``.
    max_iter : int, default=2000
        Gradient steps at most.
    state : dict or None
        Carried between calls (warm start): the step size, the smoothing and the last dual point; updated in place.

    Returns
    -------
    StepResult
        The best point found (least ``P``), ``P`` there, the best bound ``D``, and the stopping reason.
    """
    state = {} if state is None else state
    spread = np.log(step.C) * float(step.s.sum())
    tau = state.get("tau", 1e-2)
    P0 = step.value(mu, R)
    best_D = -np.inf
    if "dual" in state:  # the dual points do not depend on the tangent: the last one bounds this step too
        best_D = step.bound(state["dual"])
    x_mu, x_R = mu.astype(np.float64, copy=True), R.astype(np.float64, copy=True)
    y_mu, y_R, best_mu, best_R = x_mu.copy(), x_R.copy(), x_mu.copy(), x_R.copy()
    scal = np.array([1.0, state.get("L", 1.0), P0, 0.0])
    C, D = step.C, step.Phi.shape[1]
    dual_Ug, dual_rR, avg_Ug, avg_rR = np.zeros((C, D)), np.zeros(C), np.zeros((C, D)), np.zeros(C)
    dual_scal = np.zeros(3)
    bounds = np.append(step._starts, step.A.shape[0]).astype(np.int64)
    stop, it = "max_iter", 0
    while it < max_iter:
        chunk = min(CHUNK, max_iter - it)
        _fista_iterations(
            step.Phi,
            step.pn,
            step.A,
            bounds,
            step.metric,
            step.codes,
            step.s,
            step.gamma,
            step.lam,
            step.q,
            step.e,
            tau,
            chunk,
            x_mu,
            x_R,
            y_mu,
            y_R,
            best_mu,
            best_R,
            scal,
            dual_Ug,
            dual_rR,
            avg_Ug,
            avg_rR,
            dual_scal,
        )
        it += chunk
        for cand in ((dual_scal[0], dual_Ug, dual_rR), (dual_scal[1], avg_Ug, avg_rR)):
            bound = step.bound(cand)
            if bound > best_D:
                best_D, state["dual"] = bound, (float(cand[0]), cand[1].copy(), cand[2].copy())
        room, gap = P0 - best_D, scal[2] - best_D
        if room <= abs_tol:
            stop = "stationary"
            break
        if gap <= eta * room:
            stop = "gap"
            break
        if tau * spread > 0.25 * gap:  # the smoothing error below a quarter of the gap
            tau = max(0.5 * tau, 1e-12)
    state["L"], state["tau"] = scal[1], tau
    best, best_P = (best_mu, best_R), scal[2]
    return StepResult(best[0], best[1], float(best_P), float(best_D), float(P0), it, stop)


def _recorded_runs(starts, objective, step_fn, records, *, tol, max_iter, screen_tol=None, **ccp_options) -> list[dict]:
    """:func:`~rsvm_conic.solvers.ccp.ccp_runs` from each start in turn (screened by
    :func:`~rsvm_conic.solvers.ccp.screened_runs` when ``screen_tol`` is given), ``step_fn`` appending
    ``(gap, iterations)`` to ``records`` per step: each run with its final ``mus``, ``R``, ``O`` and its steps'
    ``step_gaps`` and ``step_iterations``."""

    def run_one(start, run_tol, run_max_iter, resumed=False):
        if not resumed:  # a resumed run's steps see the records of its first stage
            records.clear()
        first = len(records)
        (run,) = ccp_runs([start], objective, step_fn, tol=run_tol, max_iter=run_max_iter, **ccp_options)
        run["step_gaps"] = [r[0] for r in records[first:]]
        run["step_iterations"] = [r[1] for r in records[first:]]
        return run

    if screen_tol is None:
        runs = [run_one(start, tol, max_iter) for start in starts]
    else:
        runs = screened_runs(starts, run_one, tol=tol, screen_tol=screen_tol, max_iter=max_iter)
    for run in runs:
        run["mus"], run["R"], run["O"] = run.pop("point")
    return runs


def first_order_ccp(
    Phi,
    codes,
    members,
    sample_weight,
    gamma,
    lam,
    starts,
    objective,
    tangent,
    *,
    max_iter,
    tol,
    eta,
    step_iter,
    boost=0.0,
) -> list[dict]:
    """The CCP (:func:`~rsvm_conic.solvers.ccp.ccp_runs`) from each start, each step by :func:`solve_majoriser`
    from the current point, warm-started from the previous step (step size, smoothing, dual point) across starts.

    Parameters
    ----------
    Phi : ndarray of shape (n, D)
        Feature vectors (the class points are the anchors).
    codes : ndarray of shape (n,)
        Class codes.
    members : list of ndarray
        The indices of each class's points.
    sample_weight : ndarray of shape (n,) or None
        The weights ``s_i`` (ones when None).
    gamma, lam : float
        The machine's margin parameter and the weight of ``||R||^2``.
    starts : list of tuple
        Points ``(mus, R, O)``: simplex weights per class, radii, centres.
    objective : callable
        ``objective(point) -> f``.
    tangent : callable
        ``tangent(O, R) -> (Q, e)``: the tangent of the concave part at the point, its gradient in the centres
        (C, D) and in ``R`` (C,).
    max_iter : int
        CCP steps per start at most.
    tol : float
        A step certifying that no point lowers the majoriser by more than ``tol (1 + |f|)`` ends the run
        (``stationary``); a small decrease after an inexact step does not.
    eta : float
        :func:`solve_majoriser`'s relative gap.
    step_iter : int
        Gradient steps per CCP step at most.
    boost : float, default=0.0
        The boosted line search's first step after each CCP step (:func:`~rsvm_conic.solvers.ccp.ccp_runs`; 0: none),
        along :func:`simplex_extrapolation`.

    Returns
    -------
    list of dict
        :func:`~rsvm_conic.solvers.ccp.ccp_runs`' runs, each with its final ``mus``, ``R``, ``O`` and, per step,
        ``step_gaps`` (the certified gap in units of the objective) and ``step_iterations``.
    """
    order = np.concatenate(members)
    weights = np.ones(Phi.shape[0]) if sample_weight is None else sample_weight
    # the gradient steps' metric in mu: each point's share of its class's weight (the copies of a repeated row
    # share its weight, so integer weights take the repeated rows' steps)
    metric = weights[order] / np.bincount(codes, weights=weights)[codes[order]]
    step = MajoriserStep(Phi, codes, Phi[order], codes[order], weights, gamma, lam, metric)
    bounds = np.cumsum([0] + [idx.size for idx in members])
    state: dict = {}
    records: list = []
    extrapolate = simplex_extrapolation(
        lambda mus: np.stack([m @ Phi[idx] for m, idx in zip(mus, members)]), [weights[idx] for idx in members]
    )

    def step_fn(point):
        mus, R, O = point
        fval = objective(point)
        step.set_tangent(*tangent(O, R))
        res = solve_majoriser(
            step,
            np.concatenate(mus),
            R,
            eta=eta,
            abs_tol=gamma * tol * (1.0 + abs(fval)),
            max_iter=step_iter,
            state=state,
        )
        gap = (res.primal - res.dual) / gamma
        records.append((gap, res.iterations, res.start_value - res.primal))
        if res.stop == "stationary":
            return None, None, 0.0, False, []
        mus_new = [res.mu[a:b] / res.mu[a:b].sum() for a, b in zip(bounds[:-1], bounds[1:])]
        O_new = np.stack([mu @ Phi[idx] for mu, idx in zip(mus_new, members)])
        return (mus_new, res.R, O_new), fval - (res.start_value - res.primal) / gamma, gap, False, []

    return _recorded_runs(
        starts, objective, step_fn, records, max_iter=max_iter, tol=0.0, extrapolate=extrapolate, boost=boost
    )


def dual_summary(Phi, codes, weights, gamma: float, pi, U) -> tuple:
    """The summaries ``(const, sum_i U_i, r)`` that :meth:`MajoriserStep.bound` takes, of a dual point ``(pi, U)``
    (the pieces' weights, rows on the simplex, and ``U_ij`` with ``||U_ij|| <= s_i (1 - pi_ij) / 2``; module
    docstring), the samples in the order of ``Phi`` (any order, the same for every argument).

    Parameters
    ----------
    Phi : ndarray of shape (n, D)
        Feature vectors.
    codes : ndarray of shape (n,)
        Their class codes.
    weights : ndarray of shape (n,)
        Their sample weights.
    gamma : float
        The margin parameter.
    pi : ndarray of shape (n, C)
        The pieces' weights.
    U : ndarray of shape (n, C, D)
        The cones' dual vectors.

    Returns
    -------
    tuple
        ``(const, Ug, rR)``.
    """
    n, C = pi.shape
    rows = np.arange(n)
    s = weights
    one_minus_y = 1.0 - pi[rows, codes]
    const = float(np.sum(s * gamma * one_minus_y) - np.einsum("ijd,id->", U, Phi))
    contrib = 0.5 * s[:, None] * pi
    contrib[rows, codes] = -0.5 * s * one_minus_y
    return const, U.sum(axis=0), contrib.sum(axis=0)


def ipm_ccp(
    Phi,
    codes,
    members,
    sample_weight,
    gamma,
    lam,
    starts,
    objective,
    tangent,
    *,
    max_iter,
    tol,
    boost=0.0,
    anchors=None,
    anchor_weights=None,
    eta=STEP_ETA,
    screen=SCREEN,
    warm=False,
) -> list[dict]:
    """The CCP (:func:`~rsvm_conic.solvers.ccp.ccp_runs`) from each start, each step solved by the structured
    interior point :func:`~rsvm_conic.solvers.ipm.hyperbolic.solve_step_ipm` to the accuracy the CCP needs (``eta``);
    the class coordinates are computed once and shared by every step and start.  Each step's gap is certified by weak
    duality: the interior point's dual point, scaled into the dual's feasible set, bounds the step's optimum through
    :meth:`MajoriserStep.bound`; the gap enters the stopping test (:func:`~rsvm_conic.solvers.ccp.ccp_runs`).

    Parameters
    ----------
    Phi, codes, members, sample_weight, gamma, lam, starts, objective, tangent
        As for :func:`first_order_ccp`.
    max_iter : int
        CCP steps per start at most.
    tol : float
        :func:`~rsvm_conic.solvers.ccp.ccp_runs`' tolerance: a step lowering ``f`` by at most ``tol (1 + |f|)``
        ends the run (``converged``).
    boost : float, default=0.0
        As for :func:`first_order_ccp`.
    anchors : list of ndarray or None, default=None
        Per class, the points whose hull holds the centre (the ``anchors`` route's k-means centroids; the starts'
        simplex weights are over them); None: the class points ``Phi[members[k]]``.
    anchor_weights : list of ndarray or None, default=None
        With ``anchors``, their masses (cluster sizes), the metric of the boosted step's projection; None: ones.
    eta : float, default=STEP_ETA
        Each step stops at an absolute gap (objective units) of ``eta`` times the previous step's majoriser drop (the
        first step of a start: times ``f``), at least ``STEP_FLOOR tol (1 + |f|)``; a step whose certified gap
        exceeds ``ACCEPT`` times its largest decrease still possible is solved again to ``eta`` times the drop it made.
        0: every step to the interior point's tight default (:func:`~rsvm_conic.solvers.ipm.hyperbolic.solve_step_ipm`).
    screen : float or None, default=SCREEN
        Every start to ``screen tol`` first, then on to ``tol`` only those that can still win
        (:func:`~rsvm_conic.solvers.ccp.screened_runs`); None (or at most 1): every start to ``tol``.
    warm : bool, default=False
        Start each step's interior point from the previous step's primal-dual point of the same start (the
        constraints do not depend on the tangent), moved into the interior; a warm solve that does not end
        ``optimal`` is repeated from the engine's own start (its iterations counted in ``step_iterations``).  Off by
        default: measured by ``rsvm-conic bench hyperbolic`` (row ``ipm-warm``), it takes fewer iterations per step
        but changes the CCP's path, and on 300 digits the start it makes win fits fewer training points than the
        nearest class mean.

    Returns
    -------
    list of dict
        :func:`~rsvm_conic.solvers.ccp.ccp_runs`' runs, each with its final ``mus``, ``R``, ``O`` and, per step,
        ``step_gaps`` (the certified gap in units of the objective) and ``step_iterations`` (interior-point
        iterations).
    """
    from .ipm.hyperbolic import HyperbolicGeometry, solve_step_ipm

    weights = np.ones(Phi.shape[0]) if sample_weight is None else sample_weight
    A = [Phi[idx] for idx in members] if anchors is None else anchors
    Pa, ca = np.vstack(A), np.repeat(np.arange(len(A)), [a.shape[0] for a in A])
    step = MajoriserStep(Phi, codes, Pa, ca, weights, gamma, lam)
    geo = HyperbolicGeometry(Phi, codes, weights, gamma, lam, anchors=Pa, anchor_class=ca)
    bounds = np.cumsum([0] + [a.shape[0] for a in A])
    records: list = []
    last: list = []  # the primal-dual point of the last step solved (warm starts)

    def solve(start_value, target):
        """The step to the absolute gap ``target`` (objective units; None: exact), warm-started from the last step
        solved when ``warm``: the new weights and radii, the certified gap and room ``P(start) - D`` in objective
        units, and the interior point's result."""
        options = {} if target is None else {"gap_abs": gamma * target}
        res = None
        if last:
            try:
                mu, R_new, (pi, U), res = solve_step_ipm(geo, step.q, step.e, start=last[0], **options)
            except np.linalg.LinAlgError:
                res = None
        if res is None or res.status != "optimal":  # cold, from the engine's own start
            cold = solve_step_ipm(geo, step.q, step.e, **options)
            warm_its = 0 if res is None else res.iterations
            mu, R_new, (pi, U), res = cold
            res.iterations += warm_its
        if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(R_new)) and np.all(np.isfinite(U))):
            raise np.linalg.LinAlgError(f"non-finite iterate (status {res.status})")
        if warm:
            last[:] = [(res.x, res.y, res.z, res.s)]
        # the clipped weights summed to 1 within the interior point's accuracy: on the simplices exactly, the primal
        # value is that of a feasible point (off them it can fall below the bound by |q| times the error)
        mus_new = [mu[a:b] / mu[a:b].sum() for a, b in zip(bounds[:-1], bounds[1:])]
        primal = step.value(np.concatenate(mus_new), R_new)
        dual = step.bound(dual_summary(Phi, codes, weights, gamma, pi, U))
        return mus_new, R_new, primal, (primal - dual) / gamma, (start_value - dual) / gamma, res

    def step_fn(point):
        mus, R, O = point
        fval = objective(point)
        step.set_tangent(*tangent(O, R))
        start_value = step.value(np.concatenate(mus), R)
        floor = STEP_FLOOR * tol * (1.0 + abs(fval))
        if not records:  # a new start: no warm start from another start's steps
            last.clear()
        # f >= 0 bounds the decrease of the first step of a start; later ones, the previous step's
        target = None if eta <= 0 else max(eta * min(records[-1][2] if records else fval, fval), floor)
        iterations = 0
        while True:
            try:
                mus_new, R_new, primal, gap, room, res = solve(start_value, target)
            except np.linalg.LinAlgError as exc:
                return None, None, 0.0, False, [f"ipm: the KKT factorisation failed ({exc})"]
            iterations += res.iterations
            if target is None or target <= floor or gap <= ACCEPT * room:
                break
            # the target was loose against this step's decrease (at least halved: the solves stop on one path)
            target = max(min(eta * (room - gap), 0.5 * target), floor)
        records.append((gap, iterations, room - gap))
        O_new = np.stack([m @ a for m, a in zip(mus_new, A)])
        return (mus_new, R_new, O_new), fval - (start_value - primal) / gamma, gap, res.status != "optimal", []

    if anchors is None:
        hull_weights = [weights[idx] for idx in members]
    else:
        hull_weights = [np.ones(a.shape[0]) for a in A] if anchor_weights is None else anchor_weights
    extrapolate = simplex_extrapolation(lambda mus: np.stack([m @ a for m, a in zip(mus, A)]), hull_weights)
    with blas_threads_for(Phi.shape[0] * (int(geo.r.sum()) + geo.C) ** 2):  # the factorisation's Schur complement
        return _recorded_runs(
            starts,
            objective,
            step_fn,
            records,
            max_iter=max_iter,
            tol=tol,
            extrapolate=extrapolate,
            boost=boost,
            screen_tol=None if screen is None or screen <= 1 or len(starts) < 2 else screen * tol,
        )
