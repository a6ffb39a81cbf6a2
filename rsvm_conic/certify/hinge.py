"""Dual certificates for the robust hinge: a feasible dual point built from a primal iterate.

For ``P(w, b) = 1/2 ||w||^2 + C sum_i max{0, 1 - y_i(<w, x_i> + b) + gamma_i ||A_g(i)^T w||_q}`` every
``alpha`` in ``{0 <= alpha <= C, y'alpha = 0}`` and ``z_g`` in the p-ball of radius ``sum_{i in g} alpha_i
gamma_i`` give the lower bound ``D(alpha, z) = sum_i alpha_i - 1/2 ||sum_i alpha_i y_i x_i - sum_g A_g z_g||^2``
(Lagrangian weak duality).  :func:`dual_bound` builds such a point from an iterate in O(L n) per step (margins,
a least-squares fit on the margin set, the projection onto the dual set, refinement rounds), :func:`hinge_min`
is the best bias for a fixed ``w``; the robust term is seen through :class:`FactorOps`.  The derivation, the
construction step by step and its two limits are in the user guide (``docs/guide/robust.md``, "The dual
certificate, from an iterate").
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..uncertainty.sets import dual_norm_subgradient, dual_norm_values
from .projections import project_dual_set, project_pball

__all__ = ["DualCertificate", "FactorOps", "dual_bound", "hinge_min"]

#: margin / kink tolerances tried by :func:`dual_bound` (the best bound over them is kept)
DEFAULT_TAUS = (1e-9, 1e-6, 1e-4, 1e-3, 1e-2, 1e-1)


class DualCertificate(NamedTuple):
    """A feasible dual point and its objective (``primal`` is P(w, b) at the iterate it was built from).

    Attributes
    ----------
    primal : float
        P(w, b).
    dual : float
        D(alpha, Z), a lower bound on min P.
    alpha : ndarray of shape (L,)
        In [0, C] with ``y'alpha = 0``.
    Z : ndarray of shape (k, n) or None
        ``z_g = s_g u_g`` with ``||z_g||_p <= s_g`` (None without a robust term).
    tau : float
        The tolerance of the best least-squares point (NaN if none was built).
    source : str
        The point kept: ``"ls"`` (step 4), ``"hint"`` (``alpha_hint``), ``"warm"`` (the given point), ``"refined"``.
    """

    primal: float  # P(w, b)
    dual: float  # D(alpha, Z) <= min P
    alpha: np.ndarray  # (L,), in [0, C], y'alpha = 0
    Z: np.ndarray | None  # (k, n): z_g = s_g u_g, ||z_g||_p <= s_g (None without a robust term)
    tau: float  # the tolerance of the best least-squares point (nan if none was built)
    source: str  # the point kept: "ls" (step 4), "hint" (alpha_hint), "warm" (the given point), "refined"

    @property
    def gap(self) -> float:
        """``relative_gap(primal, dual)`` (:mod:`.contract`)."""
        from .contract import relative_gap

        return relative_gap(self.primal, self.dual)


class FactorOps:
    """The robust term ``sum_i gamma_i ||A_g(i)^T w||_q`` through its factors A_g (shape (n, n) each).

    Subclasses give ``transpose_apply(w, groups)`` (rows ``A_g^T w``), ``apply(Z, groups)`` (rows
    ``A_g z_g``) and ``columns(groups, j)`` (rows ``A_g e_j``); ``groups`` is an index array, or None for
    all groups in order (no gather of the factors: with per-sample (L, n, n) factors the gather is the
    cost).  :meth:`rows` and :meth:`apply_sum` pick the cheaper of the two.

    Parameters
    ----------
    gamma : array_like of shape (L,)
        The samples' radii.
    group_index : array_like of shape (L,)
        Each sample's group.
    n_groups : int
        The number of groups k.
    p, q : float
        The uncertainty ball's norm and its dual norm.
    """

    def __init__(self, gamma, group_index, n_groups: int, p: float, q: float):
        self.gamma = np.asarray(gamma, dtype=float)
        self.group_index = np.asarray(group_index)
        self.n_groups = int(n_groups)
        self.p, self.q = float(p), float(q)

    @classmethod
    def from_uncertainty(cls, unc) -> "FactorOps | None":
        """Ops for a ResolvedUncertainty (None when there is no robust term)."""
        if unc is None or unc.radius == 0 or not np.any(unc.scale):
            return None
        return _UncertaintyOps(unc)

    def transpose_apply(self, w, groups):  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def entries(self) -> int:
        """Multiply-adds of one ``apply(Z, None)`` (a cost model's unit)."""
        return self.n_groups * self.gamma.shape[0]  # pragma: no cover - overridden

    def rows(self, w, groups):
        """``A_g^T w`` for the listed groups."""
        if 2 * len(groups) >= self.n_groups:
            return self.transpose_apply(w, None)[groups]
        return self.transpose_apply(w, groups)

    def apply_rows(self, Z, groups):
        """``A_g z_g`` for the listed groups (rows of Z in the order of ``groups``)."""
        if 2 * len(groups) >= self.n_groups:
            full = np.zeros((self.n_groups, Z.shape[1]))
            full[groups] = Z
            return self.apply(full, None)[groups]
        return self.apply(Z, groups)

    def apply_sum(self, Z, groups):
        """``sum_g A_g z_g`` over the listed groups."""
        return np.sum(self.apply_rows(Z, groups), axis=0)

    def apply(self, Z, groups):  # pragma: no cover - abstract
        raise NotImplementedError

    def columns(self, groups, j):  # pragma: no cover - abstract
        raise NotImplementedError

    def weighted_transpose(self, weights, groups):
        """``(sum_g w_g A_g)^T`` over the listed groups, a dense (n, n) matrix (here from :meth:`columns`, one call
        per coordinate; subclasses with a cheaper form override it)."""
        groups = np.asarray(groups, dtype=np.intp)
        n = self.columns(groups[:1], np.zeros(1, dtype=np.intp)).shape[1]
        return np.stack([weights @ self.columns(groups, np.full(groups.size, j)) for j in range(n)])


class _UncertaintyOps(FactorOps):
    def __init__(self, unc):
        super().__init__(unc.gamma, unc.group_index, unc.n_groups, unc.p, unc.q)
        self.F = unc.factors
        self.diagonal = unc.diagonal

    @property
    def entries(self) -> int:
        return int(self.F.size)

    def transpose_apply(self, w, groups):
        F = self.F if groups is None else self.F[groups]
        return F * w if self.diagonal else np.einsum("kij,i->kj", F, w)

    def apply(self, Z, groups):
        F = self.F if groups is None else self.F[groups]
        return F * Z if self.diagonal else np.einsum("kij,kj->ki", F, Z)

    def columns(self, groups, j):
        if self.diagonal:
            out = np.zeros((len(groups), self.F.shape[-1]))
            out[np.arange(len(groups)), j] = self.F[groups, j]
            return out
        return self.F[groups, :, j]

    def weighted_transpose(self, weights, groups):
        F = self.F[groups]
        return np.diag(weights @ F) if self.diagonal else np.tensordot(weights, F, axes=1).T


def _natural_direction(V, sup, q, tau, gmax=None):
    """Unit-ball points u (rows) maximising <u, v_g> and the kink structure at tolerance tau.

    Returns ``(U, free, kinks)``: ``free`` flags groups whose ``A_g^T w`` is ~0 (z_g entirely free);
    ``kinks`` is (rows, cols, anchor) arrays: for q = 1 a free coordinate (anchor -1), for q = inf the
    weight moved from the anchor coordinate (the argmax) to ``cols`` (signed)."""
    k, n = V.shape
    smax = float(np.max(sup)) if sup.size else 0.0
    free = sup <= tau * smax if smax > 0 else np.ones(k, dtype=bool)
    if gmax is not None:  # the group's robust term moves no margin by more than tau
        free |= gmax * sup <= tau
    A = np.abs(V)
    if q == 2.0:
        U = dual_norm_subgradient(V, q)
        rows = cols = anchor = np.zeros(0, dtype=np.intp)
    elif q == 1.0:
        amax = np.max(A, axis=1, keepdims=True)
        kink = A <= tau * amax
        U = np.where(kink, 0.0, np.sign(V))
        kink &= ~free[:, None]
        rows, cols = np.nonzero(kink)
        anchor = np.full(rows.shape, -1, dtype=np.intp)
    else:
        U = dual_norm_subgradient(V, q)
        j0 = np.argmax(A, axis=1)
        amax = A[np.arange(k), j0]
        tie = A >= (1.0 - tau) * amax[:, None]
        tie[np.arange(k), j0] = False
        tie &= ~free[:, None]
        rows, cols = np.nonzero(tie)
        anchor = j0[rows]
    U[free] = 0.0
    return U, free, (rows, cols, anchor)


def dual_bound(
    X,
    y,
    C,
    w,
    b,
    ops: FactorOps | None = None,
    *,
    taus=DEFAULT_TAUS,
    refine: int = 5,
    min_gain: float = 0.0,
    max_columns: int | None = None,
    warm=None,
    alpha_hint=None,
    band: float = 0.0,
    band_iters: int = 100,
    max_band: int = 50_000,
) -> DualCertificate:
    """A feasible dual point for the robust hinge SVM built from (w, b), with P(w, b) and D.

    The construction is described step by step in ``docs/guide/robust.md`` ("The dual certificate, from an
    iterate").

    ``ops`` describes the robust term (None: the nominal SVM, whose dual this then is).  ``taus`` are the
    margin/kink tolerances tried (the best point is kept); ``refine`` the rounds of step 5, about two
    passes over the data each, stopped early when one gains less than ``min_gain`` times the gap
    ``P(w, b) - D`` left; ``max_columns`` skips a tau whose least-squares system would have more
    columns (default ``max(4 (n + 1), 2000)``).  ``warm = (alpha, Z)``, a feasible dual point (e.g. a
    previous certificate's), is one more candidate: the feasible set does not depend on (w, b), so a
    solver can keep refining its dual point from one iterate to the next.  ``alpha_hint`` (L,), any
    estimate of alpha (e.g. a stochastic solver's time-averaged ``C * [loss_i > 0]``), is projected
    and, with z_g along the maximiser at w, one more candidate.  ``band > 0`` (nominal SVM only; ignored
    with ``ops``): one more candidate from :func:`_band_point`, the dual restricted to the (at most
    ``max_band``) samples whose margin is within ``band`` of 1, the others at their natural value, maximised
    by ``band_iters`` accelerated projected-gradient steps -- the candidate that certifies a first-order
    iterate (whose margins are rough) at 1e-3 where the least-squares points stall at ~1e-2.

    Cost: one pass for P(w, b), about two per tau, two per refinement round (plus O(k n^2) per pass for
    full factors); memory O(L + k n + n * columns).

    Parameters
    ----------
    X : ndarray of shape (L, n)
        The samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    C : float
        The hinge's weight.
    w : ndarray of shape (n,)
        The iterate's weights.
    b : float
        The iterate's bias.
    ops : FactorOps or None
        The robust term (None: the nominal SVM).
    taus : tuple of float
        Margin/kink tolerances tried.
    refine : int, default 5
        Refinement rounds (step 5).
    min_gain : float, default 0.0
        A round gaining less than this fraction of the gap left ends the refinement.
    max_columns : int or None
        The largest least-squares system tried (default ``max(4 (n + 1), 2000)`` columns).
    warm : tuple (alpha, Z), optional
        A feasible dual point, one more candidate.
    alpha_hint : ndarray of shape (L,), optional
        An estimate of alpha, projected: one more candidate.
    band : float, default 0.0
        Margin band of the band candidate (nominal SVM only; 0: none).
    band_iters : int, default 100
        Accelerated projected-gradient steps of the band candidate.
    max_band : int, default 50000
        The most samples in the band.

    Returns
    -------
    DualCertificate
        The best feasible point found, with P(w, b) and its dual value.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    w = np.asarray(w, dtype=float)
    L, n = X.shape
    C = float(C)
    if max_columns is None:
        max_columns = max(4 * (n + 1), 2000)
    robust = ops is not None
    V = sup = gmax = None
    if robust:
        V = ops.transpose_apply(w, None)
        sup = dual_norm_values(V, ops.q)
        margin = y * (X @ w + b) - ops.gamma * sup[ops.group_index]
        gmax = np.zeros(ops.n_groups)
        np.maximum.at(gmax, ops.group_index, ops.gamma)
    else:
        margin = y * (X @ w + b)
    primal = 0.5 * float(w @ w) + C * float(np.sum(np.maximum(0.0, 1.0 - margin)))
    if not (np.any(y > 0) and np.any(y < 0)):  # y'alpha = 0 forces alpha = 0: D = 0
        return DualCertificate(
            primal, 0.0, np.zeros(L), np.zeros((ops.n_groups, n)) if robust else None, math.nan, "ls"
        )

    cands = []
    for tau in taus:
        pt = _ls_point(X, y, C, w, margin, ops, V, sup, gmax, float(tau), max_columns)
        if pt is not None:
            cands.append((*pt, float(tau), "ls"))
    if not cands:  # every system too large: the hinge subgradient, projected
        alpha = project_dual_set(np.where(margin < 1.0, C, 0.0), y, C)
        cands.append((alpha, _z_natural(ops, V, sup, alpha) if robust else None, math.nan, "ls"))
    if band > 0 and not robust:
        alpha = _band_point(X, y, C, margin, float(band), int(band_iters), int(max_band))
        if alpha is not None:
            cands.append((alpha, None, math.nan, "band"))
    if alpha_hint is not None:
        alpha = project_dual_set(np.clip(np.asarray(alpha_hint, dtype=float), 0.0, C), y, C)
        cands.append((alpha, _z_natural(ops, V, sup, alpha) if robust else None, math.nan, "hint"))
    ls_tau, ls_best = math.nan, None
    best = None
    for alpha, Z, tau, src in cands:
        val, t, r = _scaled_value(X, y, alpha, Z, ops)
        if best is None or val > best[0]:
            best = [val, t, alpha, Z, src, r]
        if src == "ls" and (ls_best is None or val > ls_best):
            ls_best, ls_tau = val, tau
    if warm is not None:
        alpha, Z = np.asarray(warm[0], dtype=float), (None if warm[1] is None else np.asarray(warm[1], dtype=float))
        val, t, r = _scaled_value(X, y, alpha, Z, ops)
        if val > best[0]:
            best = [val, t, alpha, Z, "warm", r]
    value, t, alpha, Z, src, r = best
    if refine > 0:  # from the unscaled point: its structure (which alpha at C) is the better start
        a2, Z2, r2 = _refine(X, y, C, alpha, Z, r, ops, V, refine, primal, min_gain)
        v2, t2 = _scale(a2, r2)
        if v2 > value:
            value, t, alpha, Z, src = v2, t2, a2, Z2, "refined"
    if t < 1.0:
        alpha = t * alpha
        Z = None if Z is None else t * Z
    return DualCertificate(primal, float(value), alpha, Z, ls_tau, src)


def _band_point(X, y, C, margin, band, iters, max_band):
    """Nominal SVM: alpha at its natural value ``C [m_i < 1]`` off the band ``|m_i - 1| < band`` (at most
    ``max_band`` samples, the nearest the margin), on it the maximiser of the dual with the rest fixed,

        max sum_M a_i - 1/2 ||g + Z a||^2,   a in [0, C]^M,   y_M'a = -y'alpha_fixed,

    (``g`` the fixed samples' ``sum alpha_i y_i x_i``, ``Z`` the band's columns ``y_i x_i``) by ``iters``
    FISTA steps (step 1 / ||Z||^2; O(|M| n) each); then projected onto the full dual set (so feasible
    whatever the steps did).  Two passes over the data plus O(iters |M| n).  None if the band is empty."""
    M = np.flatnonzero(np.abs(margin - 1.0) < band)
    if M.size == 0:
        return None
    if M.size > max_band:
        M = M[np.argpartition(np.abs(margin[M] - 1.0), max_band - 1)[:max_band]]
    alpha = np.where(margin < 1.0, C, 0.0)
    start = alpha[M].copy()
    alpha[M] = 0.0
    g = X.T @ (y * alpha)
    c = -float(y @ alpha)
    ym = y[M]
    Zt = ym[:, None] * X[M]  # (|M|, n)
    lip = float(np.linalg.eigvalsh(Zt.T @ Zt)[-1])  # ||Z||^2, from the n x n Gram
    # the steps in single precision (half the memory traffic of the two products a step; they only steer the
    # point, which is projected and evaluated in double precision by the caller)
    Zt, g = Zt.astype(np.float32), g.astype(np.float32)
    if lip > 0.0:
        a = project_dual_set(start, ym, C, c)
        z, tk = a, 1.0
        for _ in range(iters):
            grad = 1.0 - Zt @ (g + z.astype(np.float32) @ Zt)
            a_new = project_dual_set(z + grad / lip, ym, C, c)
            tn = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * tk * tk))
            z = a_new + ((tk - 1.0) / tn) * (a_new - a)
            a, tk = a_new, tn
        alpha[M] = a
    else:
        alpha[M] = start
    return project_dual_set(alpha, y, C)


def _z_natural(ops, V, sup, alpha):
    U, _, _ = _natural_direction(V, sup, ops.q, 0.0)
    s = np.bincount(ops.group_index, weights=alpha * ops.gamma, minlength=ops.n_groups)
    return s[:, None] * U


def _rz(X, y, alpha, Z, ops):
    """``sum_i alpha_i y_i x_i - sum_g A_g z_g``."""
    r = X.T @ (alpha * y)
    if Z is not None:
        act = np.flatnonzero(np.any(Z != 0, axis=1))
        if act.size:
            r = r - ops.apply_sum(Z[act], act)
    return r


def _scale(alpha, r):
    """``(D, t)`` at the best multiple t in [0, 1] of the point: the feasible set is a cone cut by the box,
    so (t alpha, t Z) stays feasible, and ``D(t) = t 1'alpha - t^2/2 ||r||^2``."""
    lin, quad = float(np.sum(alpha)), float(r @ r)
    t = 1.0 if quad <= lin else max(lin, 0.0) / quad
    return t * lin - 0.5 * t * t * quad, t


def _scaled_value(X, y, alpha, Z, ops):
    r = _rz(X, y, alpha, Z, ops)
    return (*_scale(alpha, r), r)


def _ls_point(X, y, C, w, margin, ops, V, sup, gmax, tau, max_columns):
    """Steps 1-4 of :func:`dual_bound`'s construction at tolerance tau: (alpha, Z) or None if the system is too big."""
    L, n = X.shape
    at_c = margin < 1.0 - tau
    on_m = np.abs(margin - 1.0) <= tau
    M = np.flatnonzero(on_m)
    alpha = np.where(at_c, C, 0.0)
    rhs = np.empty(n + 1)
    rhs[:n] = w - X.T @ (y * alpha)
    rhs[n] = -float(y @ alpha)
    if ops is None:
        if M.size > max_columns:
            return None
        cols = np.empty((M.size, n + 1))
        cols[:, :n] = y[M, None] * X[M]
        cols[:, n] = y[M]
        if M.size:
            alpha[M] = _min_norm_solve(cols, rhs)
        return project_dual_set(alpha, y, C), None

    gi, gamma, k = ops.group_index, ops.gamma, ops.n_groups
    U, free, (krow, kcol, kanc) = _natural_direction(V, sup, ops.q, tau, gmax)
    touched = np.zeros(k, dtype=bool)
    touched[gi[at_c | on_m]] = True
    keep = touched[krow]
    krow, kcol, kanc = krow[keep], kcol[keep], kanc[keep]
    fgroups = np.flatnonzero(free & touched)
    nk = krow.size
    if M.size + nk + fgroups.size * n > max_columns:
        return None
    tg = np.flatnonzero(touched & np.any(U != 0, axis=1))
    a = np.zeros((k, n))  # a_g = A_g u_g: c_i = y_i x_i - gamma_i a_g(i)
    if tg.size:
        a[tg] = ops.apply_rows(U[tg], tg)
    rhs[:n] += np.bincount(gi, weights=gamma * alpha, minlength=k) @ a
    cols = np.zeros((M.size + nk + fgroups.size * n, n + 1))
    cols[: M.size, :n] = y[M, None] * X[M] - gamma[M, None] * a[gi[M]]
    cols[: M.size, n] = y[M]
    # kink columns (the system carries -A_g z_g): q = 1, a free coordinate; q = inf, weight moved from
    # the anchor sigma_j0 e_j0 to sigma_j e_j; free groups, every coordinate
    if nk:
        colsA = ops.columns(krow, kcol)
        if ops.q == 1.0:
            cols[M.size : M.size + nk, :n] = -colsA
        else:
            sj, s0 = np.sign(V[krow, kcol]), np.sign(V[krow, kanc])
            cols[M.size : M.size + nk, :n] = -(sj[:, None] * colsA - s0[:, None] * ops.columns(krow, kanc))
    if fgroups.size:
        cols[M.size + nk :, :n] = -ops.columns(np.repeat(fgroups, n), np.tile(np.arange(n), fgroups.size))
    sol = _min_norm_solve(cols, rhs) if cols.shape[0] else np.zeros(0)
    alpha[M] = sol[: M.size]
    alpha = project_dual_set(alpha, y, C)
    s = np.bincount(gi, weights=alpha * gamma, minlength=k)
    Z = s[:, None] * U
    if nk:
        tk = sol[M.size : M.size + nk]
        if ops.q == 1.0:
            np.add.at(Z, (krow, kcol), tk)
        else:
            np.add.at(Z, (krow, kcol), np.sign(V[krow, kcol]) * tk)
            np.subtract.at(Z, (krow, kanc), np.sign(V[krow, kanc]) * tk)
    if fgroups.size:
        Z[fgroups] += sol[M.size + nk :].reshape(fgroups.size, n)
    return alpha, project_pball(Z, s, ops.p)


def _min_norm_solve(cols, rhs):
    """Minimum-norm least-squares solution x of ``cols' x = rhs`` (cols: m x (n+1)).  Few columns: LAPACK
    least squares (exact at an optimum, where m <= n + 1 typically); many: the normal equations in the
    (n+1)-space, ``x = cols (cols' cols)^+ rhs`` (one GEMM; squared conditioning only costs tightness,
    never validity, which the projections guarantee)."""
    m, n1 = cols.shape
    if m <= 3 * n1:
        return np.linalg.lstsq(cols.T, rhs, rcond=None)[0]
    vals, vecs = np.linalg.eigh(cols.T @ cols)
    keep = vals > 1e-12 * max(float(vals[-1]), 0.0)
    if not np.any(keep):
        return np.zeros(m)
    lam = vecs[:, keep] @ ((vecs[:, keep].T @ rhs) / vals[keep])
    return cols @ lam


def _refine(X, y, C, alpha, Z, r, ops, V, rounds, primal=math.inf, min_gain=0.0):
    """Step 5, block ascent on D: per round one projected-gradient step in z (alpha fixed, each z_g in its
    p-ball of radius s_g) and one in alpha (u = z / s fixed: a linear-SVM dual), each with exact line
    search along the feasible segment (D is quadratic), Barzilai-Borwein trial steps.  ``r`` is the
    point's ``sum alpha_i y_i x_i - sum A_g z_g``, kept up to date.  Stops early when a round gains less
    than ``min_gain * (primal - D)``.  Returns (alpha, Z, r)."""
    value = float(np.sum(alpha)) - 0.5 * float(r @ r)

    def small(alpha, r):  # the round's gain, relative to the gap left
        nonlocal value
        new = float(np.sum(alpha)) - 0.5 * float(r @ r)
        stop = new - value < min_gain * (primal - new)
        value = new
        return stop

    if ops is None:

        def Gt(v):
            return X.T @ (v * y)

        def G(u):
            return y * (X @ u)

        ta = None
        for _ in range(rounds):
            alpha, r, ta = _alpha_step(alpha, r, G, Gt, y, C, ta)
            if ta is None or small(alpha, r):
                break
        return alpha, None, r

    gi, gamma, k = ops.group_index, ops.gamma, ops.n_groups
    U0, _, _ = _natural_direction(V, dual_norm_values(V, ops.q), ops.q, 0.0)
    ta = tz = None
    Z = Z.copy()
    for _ in range(rounds):
        # z-step, alpha fixed: dD/dz_g = A_g^T r
        s = np.bincount(gi, weights=alpha * gamma, minlength=k)
        act = np.flatnonzero(s > 0)
        if act.size:
            g = ops.rows(r, act)
            if tz is None:
                e = ops.apply_sum(g, act)
                den = float(e @ e)
                tz = float(np.sum(g * g)) / den if den > 0 else 1.0
            d = project_pball(Z[act] + tz * g, s[act], ops.p) - Z[act]
            e = ops.apply_sum(d, act)
            num, den = float(r @ e), float(e @ e)
            if num > 0 and den > 0:
                step = min(1.0, num / den)
                Z[act] += step * d
                r = r - step * e
                tz = float(np.sum(d * d)) / den
        # alpha-step, u fixed (z_g = s_g u_g)
        U = U0.copy()
        U[act] = Z[act] / s[act, None]
        a = ops.apply(U, None)

        def Gt(v, a=a):  # sum_i v_i c_i,  c_i = y_i x_i - gamma_i A_g u_g
            return X.T @ (v * y) - np.bincount(gi, weights=v * gamma, minlength=k) @ a

        def G(u, a=a):  # (c_i' u)_i
            return y * (X @ u) - gamma * (a @ u)[gi]

        alpha, r, ta2 = _alpha_step(alpha, r, G, Gt, y, C, ta)
        ta = ta2 if ta2 is not None else ta
        Z = np.bincount(gi, weights=alpha * gamma, minlength=k)[:, None] * U
        if small(alpha, r):
            break
    return alpha, Z, r


def _alpha_step(alpha, r, G, Gt, y, C, t):
    """One projected-gradient step on ``1'alpha - 1/2 ||Gt(alpha)||^2`` over {0 <= alpha <= C, y'alpha = 0}
    with exact line search; ``r = Gt(alpha)``.  Returns (alpha, r, next trial step or None if stuck)."""
    grad = 1.0 - G(r)
    if t is None:
        gd = Gt(grad)
        den = float(gd @ gd)
        t = float(grad @ grad) / den if den > 0 else 1.0
    d = project_dual_set(alpha + t * grad, y, C) - alpha
    gd = Gt(d)
    num, den = float(grad @ d), float(gd @ gd)
    if num <= 0:
        return alpha, r, None
    step = 1.0 if den <= 0 else min(1.0, num / den)
    return np.clip(alpha + step * d, 0.0, C), r + step * gd, (float(d @ d) / den if den > 0 else t)


def hinge_min(r, y, weights=None):
    """``min_b sum_i s_i max(0, r_i - y_i b)`` and its minimiser (exact: convex piecewise linear in ``b``);
    ``weights`` ``s_i >= 0`` (None: all 1).

    Breakpoints ``r_i`` (``y_i = +1``, slope ``-s_i`` left of it) and ``-r_i`` (``y_i = -1``, slope ``+s_i``
    right of it); the minimum is at the first breakpoint where the right derivative is >= 0.

    Parameters
    ----------
    r : ndarray of shape (L,)
        The hinges' offsets.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    weights : ndarray of shape (L,), optional
        Nonnegative weights ``s_i`` (None: all 1).

    Returns
    -------
    value : float
        The minimum.
    b : float
        A minimiser.
    """
    pos = y > 0
    if weights is None:
        ps = np.sort(r[pos])
        qs = np.sort(-r[~pos])
        bp = np.concatenate([ps, qs])
        bp.sort()
        D = np.searchsorted(qs, bp, side="right") - (ps.size - np.searchsorted(ps, bp, side="right"))
        b = float(bp[int(np.argmax(D >= 0))])
        return float(np.sum(np.maximum(r - y * b, 0.0))), b
    weights = np.asarray(weights, dtype=float)
    op, oq = np.argsort(r[pos]), np.argsort(-r[~pos])
    ps, qs = r[pos][op], -r[~pos][oq]
    cp = np.concatenate([[0.0], np.cumsum(weights[pos][op])])  # weight of the first j positive breakpoints
    cq = np.concatenate([[0.0], np.cumsum(weights[~pos][oq])])
    bp = np.sort(np.concatenate([ps, qs]))
    D = cq[np.searchsorted(qs, bp, side="right")] - (cp[-1] - cp[np.searchsorted(ps, bp, side="right")])
    b = float(bp[int(np.argmax(D >= 0))])
    return float(weights @ np.maximum(r - y * b, 0.0)), b
