"""The robust SVM's threshold radius for a constant classifier (``w = 0``), from the data, without solving the SVM.

:class:`ZeroThreshold` brackets the multiplier ``t*`` of the radii from which ``(0, b*)`` is optimal: every
direction ``d`` gives a certified lower bound ``rho(d)`` (the root of a concave piecewise-linear function, one
pass over the data), maximised by one small conic program (Clarabel, no CVXPY model) when every admissible dual
point gives the same group weights, by a generalised Dinkelbach iteration otherwise, with a working set and
triangle-inequality relaxations that keep the programs small.  The optimality condition, the minimax argument
and both algorithms are in the user guide (``docs/guide/robust.md``, "Constant classifiers");
``rsvm-conic bench constant-threshold`` measures the cost against the solve.
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np

from ..uncertainty.sets import dual_norm_subgradient, dual_norm_values

__all__ = [
    "ZeroThreshold",
    "constant_dual_point",
    "constant_threshold",
    "min_norm_capped",
    "wasserstein_zero_threshold",
    "zero_threshold",
]

#: most norm cones of one program (each held as a dense n x n block while the program is built)
MAX_UNITS = 64


class ZeroThreshold(NamedTuple):
    """Certified bounds on the multiplier ``t*`` of ``gamma`` at and above which ``w = 0`` is optimal.

    Attributes
    ----------
    lower : float
        ``w != 0`` for every multiplier ``t < lower`` (certified by ``direction``, exactly evaluated).
    upper : float
        ``w = 0`` for every ``t >= upper``, to the small programs' accuracy (inf: not bracketed).
    direction : ndarray of shape (n,)
        A direction ``d`` with ``rho(d) = lower``, ``||d||_inf = 1`` (zeros if ``lower = 0``).
    programs : int
        Small conic programs solved.
    time : float
        Wall-clock seconds.
    dual : tuple or None
        ``(a, z)`` from :func:`constant_threshold`: the constant classifier's dual point at the threshold (the
        majority's multipliers ``a`` in [0, 1] over the hinge weight, the minority's 1) and ``z`` with
        ``X'(a y) = A z``; None from :func:`zero_threshold`.
    """

    lower: float  # w != 0 for every multiplier t < lower (certified by ``direction``, exactly evaluated)
    upper: float  # w = 0 for every t >= upper, to the small programs' accuracy (inf: not bracketed)
    direction: np.ndarray  # d with rho(d) = lower, ||d||_inf = 1 (zeros if lower = 0)
    programs: int  # small conic programs solved
    time: float
    dual: tuple | None = None  # (a, z) of constant_threshold: the constant classifier's dual point at the threshold

    @property
    def bracketed(self) -> bool:
        """Whether ``upper`` is finite."""
        return math.isfinite(self.upper)


class _Data:
    """The samples' terms ``a_i = y_i <x_i, d>``, ``b_i = gamma_i ||A_g(i)^T d||_q`` and the set ``cA``."""

    def __init__(self, X, y, ops):
        self.X, self.y, self.ops = X, y, ops
        pos = y > 0
        n_pos, n_neg = int(np.count_nonzero(pos)), int(np.count_nonzero(~pos))
        self.K = min(n_pos, n_neg)
        if n_pos == n_neg:
            self.minority, self.majority = np.arange(y.size), np.zeros(0, dtype=np.intp)
        else:
            maj = pos if n_pos > n_neg else ~pos
            self.minority, self.majority = np.flatnonzero(~maj), np.flatnonzero(maj)
        self.gamma, self.q = ops.gamma, ops.q
        self.group_index = ops.group_index
        ma = self.majority
        # sum_i y_i x_i over the minority and over the majority, in one pass
        masks = np.zeros((y.size, 2))
        masks[self.minority, 0] = y[self.minority]
        masks[ma, 1] = y[ma]
        self.v_min, self.v_maj = (X.T @ masks).T
        #: every alpha in cA gives the same sigma: the majority shares one group and one radius
        self.constant = ma.size == 0 or (
            np.all(self.group_index[ma] == self.group_index[ma[0]]) and np.ptp(self.gamma[ma]) == 0.0
        )
        self._cache = (None, None, None)

    def terms(self, d):
        if self._cache[0] is not None and np.array_equal(self._cache[0], d):
            return self._cache[1], self._cache[2]
        a = self.y * (self.X @ d)
        b = self.gamma * dual_norm_values(self.ops.transpose_apply(d, None), self.q)[self.group_index]
        self._cache = (d.copy(), a, b)
        return a, b

    def G(self, a, b, t):
        """``(G_t(d), -dG/dt)`` for the terms of one direction."""
        mi, ma = self.minority, self.majority
        val, slope = float(np.sum(a[mi]) - t * np.sum(b[mi])), float(np.sum(b[mi]))
        if ma.size == 0:
            return val, slope
        c = a[ma] - t * b[ma]
        low = ma[np.argpartition(c, self.K - 1)[: self.K]]
        return val + float(np.sum(a[low]) - t * np.sum(b[low])), slope + float(np.sum(b[low]))

    def rho(self, d):
        """``(rho(d), B)``: the root of ``G_t(d)`` in t (0 if ``G_0(d) <= 0``; inf if G does not fall) and the rate
        ``B`` of its fall there."""
        a, b = self.terms(d)
        g, slope = self.G(a, b, 0.0)
        if g <= 0.0:
            return 0.0, slope
        if slope <= 0.0:
            return math.inf, 0.0
        t = g / slope  # the tangent at 0 lies above the concave G: G <= 0 here, and Newton moves left from it
        for _ in range(100):
            g, s = self.G(a, b, t)
            if g >= 0.0 or s <= 0.0 or not t + g / s < t:
                break
            t += g / s
        return t, self.G(a, b, t)[1]

    def fixed_sum(self, S, fixed1):
        """``sum_i y_i x_i`` over the minority and ``fixed1`` (the majority less ``S`` and the samples fixed at 0)."""
        if fixed1.size <= self.majority.size // 2:
            return self.v_min + self.X[fixed1].T @ self.y[fixed1]
        free = np.ones(self.y.size, dtype=bool)
        free[self.majority] = False
        free[fixed1] = True
        drop = self.majority[~free[self.majority]]  # S and the samples fixed at 0
        return self.v_min + self.v_maj - self.X[drop].T @ self.y[drop]

    def working_set(self, d, t, S, band, max_working):
        """``(S, fixed1)``: the majority samples within ``band`` ranks of the smallest-K boundary of ``c_i(d, t)``
        joined to the previous ``S`` (at most ``max_working``, the newest kept), and the samples outside ``S``
        ranked below the boundary (alpha fixed at 1; those above are fixed at 0)."""
        ma, K = self.majority, self.K
        if ma.size == 0:
            return S, np.zeros(0, dtype=np.intp)
        a, b = self.terms(d)
        c = a[ma] - t * b[ma]
        lo, hi = max(K - band, 0), min(K + band, ma.size)
        kth = sorted(k for k in {lo, K - 1, K, hi - 1} if 0 <= k < ma.size)
        order = np.argpartition(c, kth)
        new = ma[order[lo:hi]]
        old = np.setdiff1d(S, new, assume_unique=True)
        S = np.concatenate([new, old[: max(max_working - new.size, 0)]])
        free = np.zeros(self.y.size, dtype=bool)
        free[S] = True
        below = ma[order[:K]]
        return np.sort(S), below[~free[below]]


def _factor_rows(ops, groups, n):
    """``A_g^T`` of the listed groups as dense (len(groups), n, n) (row j of ``A_g^T`` is ``(A_g e_j)^T``)."""
    groups = np.asarray(groups, dtype=np.intp)
    cols = ops.columns(np.repeat(groups, n), np.tile(np.arange(n), groups.size))
    return cols.reshape(groups.size, n, n)


def _units(data, S, fixed1, n, ratio, max_entries, d_lin):
    """The program's norm terms: ``((M, beta), unit_of_S, lin_S)``.

    ``M`` (units, n, n) and ``beta`` (units,): cones ``tau_u >= ||M_u d||_q`` weighted ``beta_u`` (in the
    objective, times t; in the ratio program, in the normalisation ``sum_u beta_u tau_u <= 1``).  ``unit_of_S[j]``
    is the cone of working-set sample ``S[j]`` (-1: its norm linearised, the row ``lin_S[j]`` used instead)."""
    ops, gi, gamma = data.ops, data.group_index, data.gamma
    k = ops.n_groups
    fixed = np.concatenate([data.minority, fixed1])
    w = np.bincount(gi[fixed], weights=gamma[fixed], minlength=k)
    if ratio and S.size:  # the working set's K_S samples at alpha = 1, all in one group with one radius
        w[gi[S[0]]] += (data.K - fixed1.size) * gamma[S[0]]
    per_unit = max(ops.entries // max(k, 1), 1)
    budget = max(min(max_entries // per_unit, MAX_UNITS), 1)
    sg = np.unique(gi[S]) if S.size and not ratio else np.zeros(0, dtype=np.intp)
    need = np.union1d(np.flatnonzero(w > 0), sg)
    if need.size <= budget:
        own, rest = need, np.zeros(0, dtype=np.intp)
    else:  # the working set's groups first, then the heaviest
        others = np.setdiff1d(need, sg)
        others = others[np.argsort(-w[others], kind="stable")]
        own = np.concatenate([sg, others])[:budget]
        rest = np.setdiff1d(need, own)
    index = np.full(k, -1)
    index[own] = np.arange(own.size)
    M, beta = _factor_rows(ops, own, n) if own.size else np.zeros((0, n, n)), w[own]
    rest = rest[w[rest] > 0]
    if rest.size:  # triangle inequality: sum_g w_g ||A_g^T d|| >= ||(sum_g w_g A_g)^T d||
        M = np.concatenate([M, ops.weighted_transpose(w[rest] / w[rest].sum(), rest)[None]])
        beta = np.append(beta, w[rest].sum())
    unit_of_S = index[gi[S]] if S.size else np.zeros(0, dtype=np.intp)
    lin_S = None
    miss = np.flatnonzero(unit_of_S < 0) if not ratio else np.zeros(0, dtype=np.intp)
    if miss.size:  # linearised: ||A^T d|| >= <u, A^T d>, u the maximiser at d_lin
        U = dual_norm_subgradient(ops.transpose_apply(d_lin, gi[S[miss]]), data.q)
        lin_S = np.zeros((S.size, n))
        lin_S[miss] = gamma[S[miss], None] * ops.apply(U, gi[S[miss]])
    return (M, beta), unit_of_S, lin_S


def _program(data, t, S, fixed1, units, unit_of_S, lin_S, ratio):
    """The small conic program of the threshold (``docs/guide/robust.md``, "The threshold radius, derived"), in
    Clarabel's form ``min c'x, A x + s = b, s in cones``.

    ``ratio``: ``max N^S(d)`` subject to ``sum_u beta_u tau_u <= 1`` (the constant-sigma case; the working set's
    rows carry no norm); otherwise ``max G^S_t(d)`` over ``||d||_inf <= 1``.  Variables ``x = [d (n), lam, mu (|S|),
    tau (units), e (units * n, q = 1 only)]``.  The objective is divided by its largest coefficient ``s``; in the
    ratio program the normalisation's coefficients too (its ``d`` is ``s`` times the ratio's), so that the optimal
    value, ``t*``, is the program's own (Clarabel's tolerances are absolute below 1).  Returns ``(value, bound, d)``
    -- the primal value, the dual bound on the optimum (to the solver's residuals) and the optimal ``d`` -- or
    None when Clarabel does not solve it.
    """
    import clarabel
    import scipy.sparse as sp

    X, y, gamma, q = data.X, data.y, data.gamma, data.q
    n = X.shape[1]
    M, beta = units
    nS, nU = S.size, beta.size
    i_lam, i_mu, i_tau = n, n + 1, n + 1 + nS
    i_e = i_tau + nU
    nx = i_e + (nU * n if q == 1.0 else 0)
    c = np.zeros(nx)
    c[:n] = -data.fixed_sum(S, fixed1)
    if nS:
        c[i_lam] = -float(data.K - fixed1.size)
        c[i_mu : i_mu + nS] = 1.0
    if not ratio:
        c[i_tau : i_tau + nU] = t * beta

    scale = max(float(np.max(np.abs(c))), 1e-300)
    rows, cols, vals, rhs = [], [], [], []
    r = 0

    def add(rr, cc, vv):
        rows.append(np.asarray(rr, dtype=np.intp))
        cols.append(np.asarray(cc, dtype=np.intp))
        vals.append(np.broadcast_to(np.asarray(vv, dtype=float), np.shape(rr)))

    if ratio:  # sum_u beta_u tau_u <= 1, for d / scale
        add(np.zeros(nU), i_tau + np.arange(nU), beta / scale)
        rhs.append(np.ones(1))
        r = 1
    else:  # d <= 1, -d <= 1
        add(np.arange(n), np.arange(n), 1.0)
        add(n + np.arange(n), np.arange(n), -1.0)
        rhs.append(np.ones(2 * n))
        r = 2 * n
    if nS:
        add(r + np.arange(nS), i_mu + np.arange(nS), -1.0)  # -mu <= 0
        rhs.append(np.zeros(nS))
        r += nS
        # lam - y_i <x_i, d> - mu_i [+ t gamma_i tau_u(i), or + t <lin_i, d>] <= 0
        XS = -(y[S, None] * X[S])
        if lin_S is not None and not ratio:
            XS += t * lin_S
        add(np.repeat(r + np.arange(nS), n), np.tile(np.arange(n), nS), XS.ravel())
        add(r + np.arange(nS), np.full(nS, i_lam), 1.0)
        add(r + np.arange(nS), i_mu + np.arange(nS), -1.0)
        has = np.flatnonzero(unit_of_S >= 0)
        if not ratio and has.size:
            add(r + has, i_tau + unit_of_S[has], t * gamma[S[has]])
        rhs.append(np.zeros(nS))
        r += nS
    uu, ii, jj = np.nonzero(M)  # the cones' rows, all units at once
    mv = M[uu, ii, jj]
    tau = i_tau + np.arange(nU)
    if q == np.inf:  # M_u d - tau_u <= 0, -M_u d - tau_u <= 0: 2n rows a unit
        base = r + 2 * n * uu + ii
        add(base, jj, mv)
        add(base + n, jj, -mv)
        add(r + np.arange(2 * n * nU), np.repeat(tau, 2 * n), -1.0)
        r += 2 * n * nU
    elif q == 1.0:  # M_u d - e_u <= 0, -M_u d - e_u <= 0, sum e_u - tau_u <= 0: 2n + 1 rows a unit
        base = r + (2 * n + 1) * uu + ii
        add(base, jj, mv)
        add(base + n, jj, -mv)
        rows_u = r + (2 * n + 1) * np.arange(nU)
        e_all = i_e + np.arange(n * nU)
        add(np.repeat(rows_u, n) + np.tile(np.arange(n), nU), e_all, -1.0)
        add(np.repeat(rows_u, n) + n + np.tile(np.arange(n), nU), e_all, -1.0)
        add(np.repeat(rows_u + 2 * n, n), e_all, 1.0)
        add(rows_u + 2 * n, tau, -1.0)
        r += (2 * n + 1) * nU
    rhs.append(np.zeros(r - sum(v.size for v in rhs)))
    cones = [clarabel.NonnegativeConeT(r)]
    if q == 2.0:  # s = (tau_u, M_u d) in the second-order cone: rows -tau_u, -M_u d
        add(r + (n + 1) * np.arange(nU), tau, -1.0)
        add(r + (n + 1) * uu + 1 + ii, jj, -mv)
        rhs.append(np.zeros((n + 1) * nU))
        cones += [clarabel.SecondOrderConeT(n + 1)] * nU
        r += (n + 1) * nU
    A = sp.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(r, nx))
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    sol = clarabel.DefaultSolver(sp.csc_matrix((nx, nx)), c / scale, A, np.concatenate(rhs), cones, settings).solve()
    if str(sol.status) not in ("Solved", "AlmostSolved"):
        return None
    unit = 1.0 if ratio else scale
    return -float(sol.obj_val) * unit, -float(sol.obj_val_dual) * unit, np.asarray(sol.x)[:n]


def zero_threshold(
    X,
    y,
    ops,
    *,
    rtol: float = 1e-5,
    max_programs: int = 30,
    band: int = 64,
    max_working: int = 2000,
    max_cone_entries: int = 200_000,
    time_limit: float = math.inf,
) -> ZeroThreshold:
    """Bounds on the multiplier ``t*`` of the radii ``gamma_i`` at and above which ``w = 0`` is optimal.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        Samples (trusted: finite floats).
    y : ndarray of shape (L,)
        Labels in {-1, +1}, both present.
    ops : FactorOps
        The robust term at the current radius (:class:`~rsvm_conic.certify.hinge.FactorOps`: factors, groups,
        ``gamma_i``, ``q``).
    rtol : float, default=1e-5
        Relative width of the bracket at which the iteration stops.
    max_programs : int, default=30
        Most small conic programs solved.
    band : int, default=64
        Majority samples kept free on each side of the smallest-K boundary (the working set's width).
    max_working : int, default=2000
        Most samples in the working set.
    max_cone_entries : int, default=200000
        Most factor entries given their own norm cones (past it: the averaged factor, see ``docs/guide/robust.md``).
    time_limit : float, default=inf
        Seconds after which the iteration stops with the bounds it has.

    Returns
    -------
    ZeroThreshold
        ``lower`` (w != 0 for every multiplier below it), ``upper`` (w = 0 from it on; inf if not bracketed),
        the direction certifying ``lower``, the number of conic programs solved and the time taken.

    Notes
    -----
    The threshold of the radius parameter is ``t*`` times its current value (the ``gamma_i`` are linear in it).
    See ``docs/guide/robust.md``, "The threshold radius, derived", for the mathematics and the algorithm.
    """
    t0 = time.perf_counter()
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    L, n = X.shape
    data = _Data(X, y, ops)
    # the first direction: sum_i alpha_i y_i x_i with the majority's weight spread evenly
    d = data.v_min + (data.K / data.majority.size if data.majority.size else 1.0) * data.v_maj
    lower, best_d, best_B = 0.0, np.zeros(n), 0.0
    if np.any(d):
        best_d = d / np.max(np.abs(d))
        lower, best_B = data.rho(best_d)
    if math.isinf(lower):
        return ZeroThreshold(lower, lower, best_d, 0, time.perf_counter() - t0)
    upper, programs, t = math.inf, 0, lower
    d_rank = best_d if np.any(best_d) else np.ones(n)
    S = np.zeros(0, dtype=np.intp)
    floor = None
    while programs < max_programs and time.perf_counter() - t0 < time_limit:
        S_old, lower_old = S, lower
        S, fixed1 = data.working_set(d_rank, 0.0 if data.constant else t, S, band, max_working)
        units, unit_of_S, lin_S = _units(data, S, fixed1, n, data.constant, max_cone_entries, d_rank)
        res = _program(data, t, S, fixed1, units, unit_of_S, lin_S, data.constant)
        programs += 1
        if res is None:
            break
        value, bound, d = res
        size = float(np.max(np.abs(d)))
        if size > 0:
            d = d / size
            rho, B = data.rho(d)
            if rho > lower:
                lower, best_d, best_B = rho, d, B
        if data.constant:  # bound >= the restricted program's t* >= t*, met by rho(d) at the optimum
            if lower >= bound * (1.0 - rtol) - 1e-9:
                upper = max(bound, 0.0)
                break
        else:  # Dinkelbach: bound >= max G_t over the box, 0 at t*, falling at the rate B
            if floor is None:  # G's terms are at most sum_i |<x_i, d>| <= sum |X| on the box
                floor = 1e-9 * float(np.sum(np.abs(X)))
            if bound <= rtol * t * best_B + floor:
                upper = t + max(bound, 0.0) / best_B if best_B > 0 else (t if bound <= floor else math.inf)
                break
            if lower > t * (1.0 + 1e-12):
                t, d_rank = lower, best_d
                continue
        if size == 0 or (np.array_equal(S, S_old) and lower <= lower_old):  # nothing new to try
            break
        d_rank = d
    return ZeroThreshold(lower, max(upper, lower), best_d, programs, time.perf_counter() - t0)


def constant_dual_point(X, y, C, gamma, factor, diagonal):
    """A dual point certifying the constant classifier ``w = 0`` of the unweighted robust SVM (p = 2, one factor).

    At ``w = 0`` the minority's multipliers are ``C`` and the majority's sum to as much; the dual value is then
    ``sum(alpha) - 1/2 dist(v, s A B_2)^2`` with ``v = X'(alpha y)``, ``s = sum_i alpha_i gamma_i`` and ``B_2`` the
    unit ball, equal to the primal ``2 C K`` (K the minority's size) where the distance is 0, that is at and above
    the threshold radius (:func:`zero_threshold`).  One second-order cone program (Clarabel) over the majority's
    multipliers and ``u`` minimises the distance; the caller's certificate evaluates the point.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        Samples (trusted).
    y : ndarray of shape (L,)
        Labels in {-1, +1}, both present.
    C : float
        The hinge weight of every sample.
    gamma : float
        Every sample's radius.
    factor : ndarray of shape (n,) or (n, n)
        The factor ``A`` of the robust term ``gamma ||A'w||_2`` (its diagonal when ``diagonal``).
    diagonal : bool
        Whether ``factor`` is diagonal.

    Returns
    -------
    alpha : ndarray of shape (L,) or None
        The multipliers (None when Clarabel does not solve the program).
    multipliers : ndarray of shape (1, n) or None
        The robust cone's multiplier ``s u``.
    """
    import clarabel
    import scipy.sparse as sp

    L, n = X.shape
    pos = y > 0
    n_pos = int(np.count_nonzero(pos))
    minority = ~pos if n_pos >= L - n_pos else pos
    K = int(np.count_nonzero(minority))
    maj = np.flatnonzero(~minority)
    M = maj.size
    s = 2.0 * K * C * gamma
    A = np.diag(factor) if diagonal else np.asarray(factor)
    v_min = C * (X[minority].T @ y[minority])
    # x = [a (M), u (n), tau, r (n)]: r = v_min + C X_maj'(y a) - s A u, (tau, r) and (1, u) in SOC
    i_u, i_tau, i_r = M, M + n, M + n + 1
    nx = i_r + n
    Xm = C * (X[maj] * y[maj, None]).T  # (n, M)
    eq = sp.hstack([sp.csc_matrix(Xm), sp.csc_matrix(-s * A), sp.csc_matrix((n, 1)), -sp.identity(n)])
    total = sp.csc_matrix(np.concatenate([np.ones(M), np.zeros(nx - M)])[None, :])
    box = sp.vstack([sp.identity(M), -sp.identity(M)])
    box = sp.hstack([box, sp.csc_matrix((2 * M, nx - M))])
    soc_r = sp.csc_matrix((-np.ones(n + 1), (np.arange(n + 1), np.r_[i_tau, i_r + np.arange(n)])), shape=(n + 1, nx))
    soc_u = sp.csc_matrix((-np.ones(n), (1 + np.arange(n), i_u + np.arange(n))), shape=(n + 1, nx))
    Acon = sp.vstack([-eq, total, box, soc_r, soc_u]).tocsc()
    rhs = np.concatenate([v_min, [K], np.ones(M), np.zeros(M), np.zeros(n + 1), np.r_[1.0, np.zeros(n)]])
    c = np.zeros(nx)
    c[i_tau] = 1.0
    cones = [
        clarabel.ZeroConeT(n + 1),
        clarabel.NonnegativeConeT(2 * M),
        clarabel.SecondOrderConeT(n + 1),
        clarabel.SecondOrderConeT(n + 1),
    ]
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    sol = clarabel.DefaultSolver(sp.csc_matrix((nx, nx)), c, Acon, rhs, cones, settings).solve()
    if str(sol.status) not in ("Solved", "AlmostSolved"):
        return None, None
    x = np.asarray(sol.x)
    alpha = np.where(minority, C, 0.0)
    alpha[maj] = C * np.clip(x[:M], 0.0, 1.0)
    return alpha, s * x[i_u : i_u + n][None, :]


#: Wolfe's iteration stops when ``||x||^2 - x'q`` (``q`` the vertex minimising ``x'q``) is below this times ``||x||^2``
WOLFE_RTOL = 1e-10


def _capped_simplex_vertex(g, K):
    """The 0/1 vector with ones at the ``K`` smallest entries of ``g``: the vertex of ``{0 <= a <= 1, sum a = K}``
    minimising ``g'a``."""
    mask = np.zeros(g.size, dtype=bool)
    mask[np.argpartition(g, K - 1)[:K] if K < g.size else slice(None)] = True
    return mask


def _wolfe(vertex, n: int, rtol: float, max_iter: int | None):
    """Wolfe's minimum-norm-point algorithm over the polytope whose vertex minimising ``g'q`` is ``vertex(g) ->
    (q, a)`` (``q`` in R^n, ``a`` the weights that give it): ``(x, a, gap)`` with ``x`` the point reached, ``a`` its
    weights (the corral's combination) and ``gap = ||x||^2 - min_q x'q`` (``x'q_min / ||x||`` is a lower bound on the
    minimum norm when positive)."""
    max_iter = 50 * (n + 1) if max_iter is None else max_iter
    x, a0 = vertex(None)
    points, weights, lam = [x], [a0], np.ones(1)
    gap = math.inf
    for _ in range(max_iter):
        xx = float(x @ x)
        q, aq = vertex(x)
        gap = xx - float(x @ q)
        if gap <= rtol * xx or any(np.array_equal(aq, w) for w in weights):
            break
        weights.append(aq)
        points.append(q)
        lam = np.append(lam, 0.0)
        while True:  # the minor cycle: the affine minimiser of the corral, or the step towards it that drops a vertex
            P = np.array(points)
            nu = np.linalg.lstsq((P[1:] - P[0]).T, -P[0], rcond=None)[0]
            mu = np.concatenate([[1.0 - nu.sum()], nu])
            if np.all(mu > 1e-12):
                lam = mu
                break
            down = (mu <= 1e-12) & (lam > mu)
            theta = min(1.0, float(np.min(lam[down] / (lam[down] - mu[down])))) if np.any(down) else 1.0
            lam = theta * mu + (1.0 - theta) * lam
            keep = lam > 1e-12
            if np.all(keep):
                keep[np.argmin(lam)] = False
            weights = [w for w, k in zip(weights, keep) if k]
            points = [p for p, k in zip(points, keep) if k]
            lam = lam[keep] / lam[keep].sum()
            if len(points) == 1:
                break
        x = lam @ np.array(points)
    return x, lam @ np.array(weights, dtype=float), gap


def min_norm_capped(c, B, K, *, rtol: float = WOLFE_RTOL, max_iter: int | None = None):
    """``a`` minimising ``||c + B a||_2`` over ``{0 <= a <= 1, sum a = K}`` by Wolfe's minimum-norm-point algorithm.

    The set ``{c + B a}`` is a polytope of dimension at most ``n`` whose vertices are ``c`` plus the sums of ``K``
    columns of ``B``; its vertex minimising a linear function is one partial sort.  Wolfe's algorithm (Wolfe, Math.
    Programming 11, 1976) keeps at most ``n + 1`` vertices (a corral) and the point of their affine hull nearest to the
    origin, so each step costs one product ``x'B`` and one small least-squares problem; it ends at the exact minimum
    norm point of the polytope in finitely many steps.

    Parameters
    ----------
    c : ndarray of shape (n,)
        The offset.
    B : ndarray of shape (n, M)
        The columns.
    K : int
        The sum of ``a`` (``1 <= K <= M``).
    rtol : float, default=1e-10
        Stop when ``||x||^2 - min_q x'q <= rtol ||x||^2`` (``x`` the current point, ``q`` over the polytope): then
        ``x'q / ||x||`` and ``||x||`` bracket the minimum norm to a relative ``rtol``.
    max_iter : int or None, default=None
        Most vertices added (None: ``50 (n + 1)``).

    Returns
    -------
    ndarray of shape (M,)
        ``a`` (a convex combination of the corral's vertices).
    """

    def vertex(g):
        mask = _capped_simplex_vertex(c @ B if g is None else g @ B, K)
        return c + B @ mask, mask

    return _wolfe(vertex, B.shape[0], rtol, max_iter)[1]


def constant_threshold(X, y, ops, factor, diagonal, *, rtol: float = 1e-5) -> ZeroThreshold | None:
    """The threshold multiplier ``t*`` by one minimum-norm problem, for the unweighted robust SVM with p = 2, one
    factor ``A`` and every sample of one radius ``gamma`` (the default noise covariance's case).

    There ``w = 0`` is optimal at ``t`` exactly when some dual point of the constant classifier (the minority's
    multipliers 1, the majority's in [0, 1] summing to the minority's size K) has ``v = X'(alpha y) = A z`` with
    ``||z||_2 <= 2 K t gamma``: ``t* = min ||z||_2 / (2 K gamma)`` over the majority's multipliers, the minimum norm
    point of a polytope in ``n`` dimensions (:func:`min_norm_capped`; when its bracket is wider than ``rtol``, the
    same problem as one second-order cone program, Clarabel).  Its optimal ``z`` gives the direction ``d = A^-T z``
    whose exactly evaluated ``rho(d)`` (:class:`_Data`) is the certified lower end.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        Samples (trusted).
    y : ndarray of shape (L,)
        Labels in {-1, +1}, both present.
    ops : FactorOps
        The robust term at the current radius (every ``gamma_i`` equal and positive, one group, q = 2).
    factor : ndarray of shape (n,) or (n, n)
        The factor ``A`` (its diagonal when ``diagonal``), invertible.
    diagonal : bool
        Whether ``factor`` is diagonal.
    rtol : float, default=1e-5
        The bracket's largest relative width; wider (the program solved inaccurately): None.

    Returns
    -------
    ZeroThreshold or None
        None when neither method brackets the threshold to ``rtol``.
    """
    t0 = time.perf_counter()
    L, n = X.shape
    pos = y > 0
    minority = ~pos if int(np.count_nonzero(pos)) >= L - int(np.count_nonzero(pos)) else pos
    K = int(np.count_nonzero(minority))
    maj = np.flatnonzero(~minority)
    A = np.diag(factor) if diagonal else np.asarray(factor)
    v_min = X[minority].T @ y[minority]
    Ym = (X[maj] * y[maj, None]).T  # (n, M)
    data = _Data(X, y, ops)
    a_maj = min_norm_capped(np.linalg.solve(A, v_min), np.linalg.solve(A, Ym), K)
    zt = _bracket(data, X, y, A, minority, maj, K, float(ops.gamma[0]), a_maj, rtol, t0)
    if zt is None:
        a_maj = _capped_norm_program(v_min, Ym, A, K)
        zt = None if a_maj is None else _bracket(data, X, y, A, minority, maj, K, float(ops.gamma[0]), a_maj, rtol, t0)
    return zt


def _capped_norm_program(v_min, Ym, A, K):
    """The majority's multipliers minimising ``||z||_2`` with ``v_min + Ym a = A z``, ``0 <= a <= 1``, ``sum a = K``,
    by one second-order cone program (Clarabel); None when it is not solved."""
    import clarabel
    import scipy.sparse as sp

    n, M = Ym.shape
    # x = [a (M), z (n), tau]: v_min + Ym a - A z = 0, sum a = K, 0 <= a <= 1, (tau, z) in SOC
    eq = sp.hstack([sp.csc_matrix(Ym), sp.csc_matrix(-A), sp.csc_matrix((n, 1))])
    total = sp.csc_matrix((np.ones(M), (np.zeros(M, dtype=np.intp), np.arange(M))), shape=(1, M + n + 1))
    box = sp.hstack([sp.vstack([sp.identity(M), -sp.identity(M)]), sp.csc_matrix((2 * M, n + 1))])
    soc = sp.csc_matrix((-np.ones(n + 1), (np.arange(n + 1), np.r_[M + n, M + np.arange(n)])), shape=(n + 1, M + n + 1))
    Acon = sp.vstack([-eq, total, box, soc]).tocsc()
    rhs = np.concatenate([v_min, [K], np.ones(M), np.zeros(M), np.zeros(n + 1)])
    c = np.zeros(M + n + 1)
    c[-1] = 1.0
    cones = [clarabel.ZeroConeT(n + 1), clarabel.NonnegativeConeT(2 * M), clarabel.SecondOrderConeT(n + 1)]
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    sol = clarabel.DefaultSolver(sp.csc_matrix((M + n + 1, M + n + 1)), c, Acon, rhs, cones, settings).solve()
    if str(sol.status) != "Solved":
        return None
    return np.clip(np.asarray(sol.x)[:M], 0.0, 1.0)


def _bracket(data, X, y, A, minority, maj, K, gamma, am, rtol, t0):
    """The :class:`ZeroThreshold` of the majority's multipliers ``am`` (made to sum to ``K`` exactly): ``upper`` from
    the dual point ``(a, z)`` they give, ``lower`` from the exactly evaluated ``rho(d)``, ``d = A^-T z``; None when
    the two are further apart than ``rtol``."""
    a = np.where(minority, 1.0, 0.0)
    am = np.clip(am, 0.0, 1.0)
    short = K - float(np.sum(am))  # spread over the room left, so that the majority's multipliers sum to K
    room = 1.0 - am if short > 0 else am
    a[maj] = np.clip(am + short * room / max(float(np.sum(room)), 1e-300), 0.0, 1.0)
    z = np.linalg.solve(A, X.T @ (a * y))  # exactly X'(a y) = A z, so that (a, z) certifies from upper on
    upper = float(np.linalg.norm(z)) / (2.0 * K * gamma)
    d = np.linalg.solve(A.T, z)
    if not np.any(d):
        return None
    lower, _ = data.rho(d / np.max(np.abs(d)))
    if not lower >= upper * (1.0 - rtol):
        return None
    return ZeroThreshold(min(lower, upper), upper, d / np.max(np.abs(d)), 1, time.perf_counter() - t0, (a, z))


def wasserstein_zero_threshold(X, y, pi, p: float) -> float:
    """The radius ``R*`` from which ``w = 0`` is optimal for the Wasserstein DRO hinge-loss SVM with certain labels.

    ``w = 0`` with the best bias has objective ``U0 = 2 min(pi(+), pi(-))`` (the two classes' shares); the dual
    reaches ``U0`` exactly when each class's ``alpha`` sums to ``U0 / 2``, so ``R* = min ||sum_i y_i alpha_i x_i||_p``
    over ``0 <= alpha <= pi`` with those class sums.  For p = 2 that is the minimum norm point of a polytope in ``n``
    dimensions whose vertex minimising a linear function fills each class's weights in one sorted order (Wolfe's
    algorithm, as :func:`min_norm_capped`; the value returned is the norm reached, ``w = 0`` from there on, within a
    relative 1e-8 of ``R*``); for p in {1, inf}, or when Wolfe's algorithm does not bracket it to 1e-8, one small
    conic program (Clarabel through CVXPY).

    Parameters
    ----------
    X : ndarray of shape (L, n)
        Samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    pi : ndarray of shape (L,)
        The empirical distribution's weights.
    p : float
        The transport cost's exponent on the features.

    Returns
    -------
    float
    """
    pos = y > 0
    half = min(float(pi[pos].sum()), float(pi[~pos].sum()))
    if p == 2.0:
        Yx = X * y[:, None]
        classes = [np.flatnonzero(pos), np.flatnonzero(~pos)]

        def vertex(g):  # each class's weights filled up to half in the order of y_i x_i'g
            score = Yx @ (np.ones(X.shape[1]) if g is None else g)
            alpha = np.zeros(y.size)
            for idx in classes:
                order = idx[np.argsort(score[idx], kind="stable")]
                before = np.cumsum(pi[order]) - pi[order]
                alpha[order] = np.clip(half - before, 0.0, pi[order])
            return Yx.T @ alpha, alpha

        x, _, gap = _wolfe(vertex, X.shape[1], WOLFE_RTOL, None)
        xx = float(x @ x)
        if gap <= 1e-8 * xx or xx <= (1e3 * np.finfo(float).eps * float(np.abs(Yx).sum(0) @ np.ones(X.shape[1]))) ** 2:
            return math.sqrt(xx)
    import cvxpy as cp

    alpha = cp.Variable(X.shape[0], nonneg=True)
    cons = [alpha <= pi, cp.sum(alpha[np.flatnonzero(pos)]) == half, cp.sum(alpha[np.flatnonzero(~pos)]) == half]
    problem = cp.Problem(cp.Minimize(cp.norm(X.T @ cp.multiply(y, alpha), p)), cons)
    problem.solve(solver="CLARABEL")
    return float(problem.value)
