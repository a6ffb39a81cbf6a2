"""Polishing and certifying a solver's point of the SVM dual (:mod:`.svm_dual`'s problem).

* :func:`polish_svm_dual`: libsvm caches kernel values in single precision, so its KKT conditions
  hold to ~1e-7 relative only; one exact Newton step on its active set (else projected Newton,
  :func:`~.rsvm_socp.solve_rsvm_socp` with ``kappa = 0``) polishes its ``alpha`` in double precision;
* :func:`certified_svm_dual`: polish and certify given only kernel columns (the support's).

The bounds are :mod:`rsvm_conic.certify.kernel`'s; the projection onto the dual set is
:func:`rsvm_conic.certify.projections.project_dual_set`.
"""

from __future__ import annotations

import numpy as np

from .._threads import blas_threads_by
from ..certify.contract import certify, relative_gap
from ..certify.kernel import lagrangian_lower_bound, margin_rounding, scaled_svm_primal
from ..certify.projections import project_dual_set
from ..exceptions import SolverError
from .rsvm_socp import solve_rsvm_socp
from .svm_dual import submatrix

__all__ = ["certified_svm_dual", "polish_svm_dual"]


def _solve_or_lstsq(A, rhs):
    """``A x = rhs`` by LU when ``A`` is well conditioned enough for a small residual, else least squares
    (an SVD, about 10x the cost); None if both fail."""
    try:
        x = np.linalg.solve(A, rhs)
        if np.all(np.isfinite(x)) and np.linalg.norm(A @ x - rhs) <= 1e-10 * (
            np.linalg.norm(rhs) + np.linalg.norm(A, 1) * np.linalg.norm(x)
        ):
            return x
    except np.linalg.LinAlgError:
        pass
    try:
        return np.linalg.lstsq(A, rhs, rcond=None)[0]
    except np.linalg.LinAlgError:
        return None


def _active_set_newton(K, y, C, alpha, tol, check_input):
    """The exact Newton step of :func:`polish_svm_dual` on the active set of ``alpha`` (in the box already):
    the certified point, or None when the step leaves the box or does not certify.  ``C``: one bound, or one per
    sample (the weighted box ``0 <= alpha_i <= C_i``)."""
    Cv = np.broadcast_to(C, alpha.shape)
    # zero and bound thresholds on the multipliers' own scale: at a large C with the optimum's multipliers far
    # below C, a threshold of 1e-9 C (0.1 at C = 1e8) would call most support vectors zero
    zero = 1e-9 * min(float(np.min(C)), float(np.max(alpha)) if alpha.size else float(np.min(C)))
    free = np.flatnonzero((alpha > zero) & (alpha < Cv - 1e-9 * Cv))
    up = np.flatnonzero(alpha >= Cv - 1e-9 * Cv)
    if not free.size:
        return None
    yF = y[free]
    A = np.empty((free.size + 1, free.size + 1))
    A[:-1, :-1] = (yF[:, None] * submatrix(K, free, free)) * yF[None, :]
    A[:-1, -1] = yF
    A[-1, :-1] = yF
    A[-1, -1] = 0.0
    rhs = np.empty(free.size + 1)
    rhs[:-1] = 1.0 - (yF * (submatrix(K, free, up) @ (y[up] * Cv[up])) if up.size else 0.0)
    rhs[-1] = -float(y[up] @ C[up]) if np.ndim(C) else -C * float(np.sum(y[up]))
    sol = _solve_or_lstsq(A, rhs)  # K may be singular (non-unique alpha)
    if sol is None or not (np.all(sol[:-1] >= 0.0) and np.all(sol[:-1] <= Cv[free])):
        return None
    a = np.zeros_like(alpha)
    a[up] = Cv[up]
    a[free] = sol[:-1]
    nz = np.flatnonzero(a)
    v = y[nz] * a[nz]  # K symmetric (trusted): its rows of the support are contiguous, its columns are not
    g = y * ((v @ K[nz]) if not check_input else (K[:, nz] @ v)) - 1.0
    F = 0.5 * float(a @ (g - 1.0))
    Kabs = (a[nz] @ np.abs(K[nz])) if not check_input else (np.abs(K[:, nz]) @ a[nz])
    return a if relative_gap(F, lagrangian_lower_bound(F, g, a, y, C, margin_rounding(Kabs, nz.size))) <= tol else None


@blas_threads_by(lambda K, y, *args, **kwargs: float(np.size(y)) ** 3)  # the free set's system
def polish_svm_dual(K, y, C, alpha, tol, check_input=True):
    """Polish an SVM dual solution (kernel ``K``) in double precision; ``(alpha, steps)`` or None.

    First one exact Newton step on libsvm's active set: with ``F`` the free and ``U`` the at-C
    coordinates, solve ``[Q_FF y_F; y_F' 0] [a_F; mu] = [e - Q_FU a_U; -y_U'a_U]`` (``O(n m + m^3)``,
    ``m = |F|``); kept if it stays in the box and certifies (:func:`lagrangian_lower_bound`).  Else
    projected Newton (:func:`~rsvm_conic.solvers.rsvm_socp.solve_rsvm_socp` with ``kappa = 0``)
    warm-started from ``alpha``.  ``check_input=False``: ``K`` (symmetric) and ``y`` come validated.  ``C`` may
    hold one bound per sample (the weighted box): :func:`_polish_weighted`.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The Gram matrix.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    C : float or ndarray of shape (n,)
        The box's bound.
    alpha : ndarray of shape (n,)
        The solution to polish.
    tol : float
        The relative gap to reach.
    check_input : bool, default True
        Check ``K`` and ``y`` (False: trusted).

    Returns
    -------
    tuple (alpha, steps) or None
        The polished dual and the Newton steps taken; None when no polish certified.
    """
    if np.ndim(C):
        return _polish_weighted(K, y, np.asarray(C, dtype=float), alpha, tol, check_input)
    alpha = project_dual_set(np.asarray(alpha, dtype=float), y, C)
    a = _active_set_newton(K, y, C, alpha, tol, check_input)
    if a is not None:
        return a, 1
    try:
        res = solve_rsvm_socp(
            K,
            np.zeros((1, y.size)),
            y,
            C,
            0.0,
            warm_start=alpha,
            factor=True,
            tol=0.01 * tol,
            max_iter=20,
            fallback=False,
            check_input=check_input,
        )
    except (SolverError, np.linalg.LinAlgError):
        return None
    return res.alpha, res.iterations


def _polish_weighted(K, y, C, alpha, tol, check_input):
    """:func:`polish_svm_dual` for the weighted box ``0 <= alpha_i <= C_i``: the exact Newton step on the active
    set (:func:`_active_set_newton`), else the dual QP by Clarabel (through CVXPY, on a factor of ``K``);
    ``(alpha, steps)`` or None."""
    alpha = project_dual_set(np.asarray(alpha, dtype=float), y, C)
    a = _active_set_newton(K, y, C, alpha, tol, check_input)
    if a is not None:
        return a, 1
    import cvxpy as cp

    from .conic import solve_cvxpy

    vals, vecs = np.linalg.eigh(0.5 * (K + K.T))
    R = vecs * np.sqrt(np.clip(vals, 0.0, None))  # K = R R'
    a = cp.Variable(y.size)
    prob = cp.Problem(
        cp.Minimize(0.5 * cp.sum_squares(R.T @ cp.multiply(y, a)) - cp.sum(a)), [a >= 0, a <= C, y @ a == 0]
    )
    try:
        solve_cvxpy(prob, "clarabel", accept_inaccurate=True, quiet_inaccurate=True)
    except SolverError:
        return None
    if a.value is None:
        return None
    return project_dual_set(np.asarray(a.value, dtype=float), y, C), 1


@blas_threads_by(lambda columns, y, *args, **kwargs: float(np.size(y)) ** 3)
def certified_svm_dual(columns, y, C, alpha, tol, *, route="libsvm", full_kernel=None):
    """Polish and certify an SVM dual solution given only kernel columns: ``(alpha, scale, b, SolveInfo)``.

    ``columns(idx)`` returns ``K[:, idx]`` in double precision; ``alpha`` is a solver's dual (e.g.
    :func:`libsvm_alpha`).  The returned model is ``f(x) = scale * sum_i alpha_i y_i k(x_i, x) + b``: ``alpha``
    with the exact best bias, or, where that is better, its hard-margin rescaling (:func:`scaled_svm_primal`:
    at a large C whose optimum separates the data it removes the C-weighted rounding of the support vectors'
    margins).  The certificate is the duality gap of that model: ``primal`` is the SVM objective
    ``1/2 ||w||^2 + C sum_i max(0, 1 - y_i f(x_i))`` of the returned model as evaluated (its scores computed from
    the returned coefficients), ``dual`` the dual objective ``e'alpha - 1/2 alpha'Y K Y alpha`` of the feasible
    ``alpha``, a lower bound on the optimum.  Only the columns of the support are formed (``O(n m)``).  If the gap
    misses ``tol``, :func:`polish_svm_dual` (an exact Newton step on the active set, then projected Newton) runs on
    the problem restricted to the support (``m x m``; exact when no other point should enter it), then, given
    ``full_kernel()`` (the whole Gram matrix), on all of it; the best certificate is returned (``status`` says
    whether it met ``tol``).  ``C`` may hold one bound ``C_i = C s_i`` per sample (sample weights ``s_i``: the
    hinge terms weighted, the dual box ``0 <= alpha_i <= C_i``).

    Parameters
    ----------
    columns : callable
        ``columns(idx)`` returns ``K[:, idx]``.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    C : float or ndarray of shape (n,)
        The box's bound.
    alpha : ndarray of shape (n,)
        A solver's dual.
    tol : float
        The relative gap that counts as optimal.
    route : str, default "libsvm"
        The route named in the certificate.
    full_kernel : callable, optional
        Returns the whole Gram matrix, for a polish on all samples.

    Returns
    -------
    alpha : ndarray of shape (n,)
        The dual.
    scale : float
        The model's scale.
    b : float
        The model's bias.
    info : SolveInfo
        The certificate of the returned model.
    """

    y = np.asarray(y, dtype=float)
    alpha = np.clip(np.asarray(alpha, dtype=float), 0.0, C)
    if abs(float(y @ alpha)) > 1e-12 * max(float(alpha.sum()), 1e-300):  # a solver's point is feasible to
        alpha = project_dual_set(alpha, y, C)  # round-off; projecting it would spread the support
    sv = np.flatnonzero(alpha)
    Kc = columns(sv) if sv.size else np.zeros((y.size, 0))
    floor = 1e-9 * (float(np.sum(C)) if np.ndim(C) else C * y.size)  # the trivial objective's scale

    def evaluate(a, Kc, nz):
        """(primal of the returned model, dual value of a, scale, bias)."""
        v = y[nz] * a[nz]
        m = y * (Kc @ v)
        quad = float(a[nz] @ m[nz]) if nz.size else 0.0  # v'K v = sum_i a_i m_i over the support
        err = margin_rounding(np.abs(Kc) @ a[nz], nz.size) if nz.size else 0.0
        _, t, b = scaled_svm_primal(m, y, C, quad, err)
        scores = Kc @ (t * v) + b  # the returned model's scores, as its decision function computes them
        hinge = np.maximum(1.0 - y * scores, 0.0)
        P = 0.5 * t * t * quad + (float(C @ hinge) if np.ndim(C) else C * float(np.sum(hinge)))
        return P, float(a.sum()) - 0.5 * quad, t, b

    def gap(P, D):  # against the objective itself: polish until the gap is small on its own scale
        return relative_gap(P, D)

    best = (alpha, *evaluate(alpha, Kc, sv), 0)  # (alpha, P, D, scale, b, steps)
    if gap(*best[1:3]) > tol and sv.size > 1:  # the problem restricted to the support: m x m, O(m^3)
        Ks = Kc[sv]
        Csv = C[sv] if np.ndim(C) else C
        polished = polish_svm_dual(0.5 * (Ks + Ks.T), y[sv], Csv, best[0][sv], tol, check_input=False)
        if polished is not None:
            a = np.zeros_like(alpha)
            a[sv] = polished[0]
            nz = np.flatnonzero(a)
            cand = (a, *evaluate(a, Kc[:, np.searchsorted(sv, nz)], nz), 1 + polished[1])
            if gap(*cand[1:3]) < gap(*best[1:3]):
                best = cand
    if gap(*best[1:3]) > tol and full_kernel is not None:
        K = full_kernel()
        K = 0.5 * (K + K.T)
        polished = polish_svm_dual(K, y, C, best[0], tol, check_input=False)
        if polished is not None:
            a = polished[0]
            nz = np.flatnonzero(a)
            cand = (a, *evaluate(a, K[:, nz], nz), 1 + polished[1])
            if gap(*cand[1:3]) < gap(*best[1:3]):
                best = cand
    a, P, D, t, b, steps = best
    info = certify(route, P, D, tol, floor=floor, iterations=steps, detail={"polish_steps": steps, "scale": t})
    return a, t, b, info
