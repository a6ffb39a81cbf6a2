"""The certified end of every Weston-Watkins route [ElD19, eq. 1.9]: the certificate of a kernel-dual point, the
Gram matrix's PSD factor, the recomputed certificate of a model as it is evaluated, and the kernel-dual QP's
rescaled retries."""

from __future__ import annotations

import time

import numpy as np

from ..._validation import psd_factor
from ...certify.contract import certify
from ...certify.kernel import margin_rounding
from ...exceptions import SolverError
from .binary import ww_binary_libsvm
from .objective import ww_dual_bound, ww_objective, ww_scaled_model


def _floor(zeta, n: int) -> float:
    """The certificates' absolute floor: ``1e-9 zeta n`` (``1e-9 sum(zeta)`` for one ``zeta_i`` per sample)."""
    return 1e-9 * (float(np.sum(zeta)) if np.ndim(zeta) else zeta * n)


def ww_certificate(route: str, beta, b, codes, zeta, apply_K, *, tol: float = 1e-6, **kwargs):
    """The certificate of a kernel-dual solution ``(beta, b)``.

    The primal objective of ``W = Phi^T beta`` against the dual bound of its multipliers ``alpha_ik = -beta_ik``
    (``k != y_i``), see :func:`~rsvm_conic.solvers.multiclass.ww_dual_bound`.

    Parameters
    ----------
    route : str
        The route named in the certificate.
    beta : ndarray of shape (n, C)
        Kernel-expansion coefficients.
    b : ndarray of shape (C,)
        Biases.
    codes : ndarray of shape (n,)
        Class codes in ``0..C-1``.
    zeta : float or ndarray of shape (n,)
        The penalty (one per sample with sample weights).
    apply_K : callable
        ``apply_K(B)`` returns ``K B`` (the Gram matrix times an (n, C) array).
    tol : float, default=1e-6
        Relative gap the certificate must meet.
    **kwargs
        Passed to :func:`~rsvm_conic.certify.contract.certify`; ``floor`` defaults to ``1e-9 zeta n``
        (``1e-9 sum(zeta)`` for one ``zeta_i`` per sample).

    Returns
    -------
    SolveInfo
    """
    KB = apply_K(beta)
    primal = ww_objective(float(np.sum(beta * KB)), KB + b, codes, zeta)
    dual, _ = ww_dual_bound(-beta, codes, zeta, lambda B: float(np.sum(B * apply_K(B))))
    kwargs.setdefault("floor", _floor(zeta, beta.shape[0]))
    return certify(route, primal, dual, tol, **kwargs)


def gram_factor(K: np.ndarray, rtol: float = 1e-10):
    """``K = L L^T`` through ``eigh``, dropping eigenvalues below ``rtol * max``.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        A Gram matrix (symmetrised here).
    rtol : float, default=1e-10
        Eigenvalues below ``rtol`` times the largest are dropped.

    Returns
    -------
    L : ndarray of shape (n, r)
    U : ndarray of shape (n, r)
    lam : ndarray of shape (r,)
        ``L = U sqrt(lam)``.  Negative eigenvalues below ``-1e-8 max(1, lambda_max)`` raise a ValueError (one
        :func:`rsvm_conic._validation.psd_factor` call).
    """
    K = 0.5 * (K + K.T)
    return psd_factor(
        K, "the kernel matrix", neg_tol=1e-8, neg_atol=1e-8, drop_tol=rtol, return_eig=True, hint="use a PSD kernel"
    )


def gram_rows(K: np.ndarray, rtol: float = 1e-10):
    """Rows ``F`` with ``F F' = K`` and the map from a feature solver's ``W`` to the kernel expansion ``coef``.

    A pivoted Cholesky factorisation (LAPACK ``dpstrf``, about ``n^2 r / 3`` operations for rank ``r``, 5-10x
    less than ``eigh``), kept when it proves ``K`` PSD to the tolerance of :func:`gram_factor`: every pivot is
    positive and the Schur complement of the ``r`` pivots it stopped at has Frobenius norm at most ``rtol`` times
    the largest diagonal entry (a lower bound on the largest eigenvalue), so ``F F'`` differs from ``K`` by at most
    what :func:`gram_factor` drops.  Otherwise (indefinite or nearly so) the rows of :func:`gram_factor`, which
    also raises its ValueError for an indefinite ``K``.  ``coef`` is supported on the pivot rows: ``K coef = F W``
    up to the dropped part.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        A Gram matrix (symmetrised here).
    rtol : float, default=1e-10
        The dropped part's tolerance relative to the largest diagonal entry.

    Returns
    -------
    F : ndarray of shape (n, r)
        The rows.
    back : callable
        ``back(W)`` for ``W`` of shape (r, C) returns ``coef`` of shape (n, C) with ``K coef = F W``.
    """
    from scipy.linalg import lapack, solve_triangular

    K = 0.5 * (K + K.T)
    n = K.shape[0]
    top = float(np.max(np.diag(K), initial=0.0))
    if n and top > 0.0 and np.all(np.isfinite(K)):
        c, piv, r, info = lapack.dpstrf(K, lower=1)
        piv = piv - 1
        L = np.tril(c)[:, :r]
        rest = piv[r:]
        F = np.empty((n, r))
        F[piv] = L
        schur = K[np.ix_(rest, rest)] - F[rest] @ F[rest].T if r < n else np.zeros((0, 0))
        if info >= 0 and r > 0 and np.linalg.norm(schur) <= rtol * top:
            L11, head = L[:r], piv[:r]

            def back(W):
                coef = np.zeros((n, W.shape[1]))
                coef[head] = solve_triangular(L11, W, lower=True, trans="T")
                return coef

            return F, back
    _, U, lam = gram_factor(K, rtol)
    return U * np.sqrt(lam), lambda W: U @ (W / np.sqrt(lam)[:, None])


def ww_evaluated(route: str, data, K, coef, b, codes, zeta, cert):
    """The certificate of ``(coef, b)`` as an estimator evaluates it (scores ``data @ coef + b``), for ``(coef, b)``
    or, where better, its hard-margin rescaling (:func:`~rsvm_conic.solvers.multiclass.ww_scaled_model`), against
    the route's dual bound.

    Parameters
    ----------
    route : str
        The route named in the certificate.
    data : ndarray of shape (n, n) or (n, D)
        The Gram matrix ``K`` or the features ``Phi``.
    K : ndarray of shape (n, n) or None
        The Gram matrix (None: ``data`` are features, ``||W||^2 = sum(coef**2)``).
    coef : ndarray of shape (n, C) or (D, C)
        The route's coefficients (finite).
    b : ndarray of shape (C,)
        Biases.
    codes : ndarray of shape (n,)
        Class codes in ``0..C-1``.
    zeta : float or ndarray of shape (n,)
        The penalty.
    cert : SolveInfo
        The route's own certificate (its dual bound, tolerance, iterations and time are kept).

    Returns
    -------
    coef, b : ndarray
        The point certified (rescaled by ``t``, recorded as ``detail["scale"]``).
    SolveInfo
        Its certificate; where neither it nor the route's certifies, the route's status (e.g. ``"max_iter"``).
    """
    scores = data @ coef + b
    sq = float(np.sum(coef * (K @ coef))) if K is not None else float(np.sum(coef**2))
    err = margin_rounding(np.abs(data) @ np.abs(coef), data.shape[1])
    t, _ = ww_scaled_model(scores, sq, codes, zeta, err)
    if t != 1.0:
        coef, b = t * coef, t * b
        scores = data @ coef + b
        sq = float(np.sum(coef * (K @ coef))) if K is not None else float(np.sum(coef**2))
    primal = ww_objective(sq, scores, codes, zeta)
    detail = dict(cert.detail, scale=t, solver_primal=cert.primal)
    new = certify(route, primal, cert.dual, cert.tol, iterations=cert.iterations, time=cert.time,
                  floor=_floor(zeta, data.shape[0]), detail=detail)  # fmt: skip
    if new.status != "optimal" and cert.status != "optimal":
        new.status = cert.status
    return coef, b, new


def ww_binary_certified(K, codes, zeta, apply_K):
    """The two-class machine by libsvm (:func:`~rsvm_conic.solvers.multiclass.binary.ww_binary_libsvm`) with the
    certificate of its multipliers (:func:`ww_certificate`, relative gap 1e-6; its time includes the solve).

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The Gram matrix.
    codes : ndarray of shape (n,)
        Class codes in {0, 1}.
    zeta : float or ndarray of shape (n,)
        The penalty.
    apply_K : callable
        ``apply_K(B)`` returns ``K B``.

    Returns
    -------
    beta : ndarray of shape (n, 2)
    b : ndarray of shape (2,)
    certificate : SolveInfo
    """
    t0 = time.perf_counter()
    beta, b = ww_binary_libsvm(K, codes, zeta)
    cert = ww_certificate("libsvm", beta, b, codes, zeta, apply_K, tol=1e-6)
    cert.time = time.perf_counter() - t0
    return beta, b, cert


def ww_dual_retries(solve_qp, scale: float, codes, zeta, apply_K, t0: float):
    """The kernel-dual QP, retried on badly scaled instances; the best certificate is kept.

    Huge kernel entries or a tiny ``zeta`` are retried on the normalised problem ``K / s``, ``zeta s`` (same
    minimiser: ``beta = beta' / s``, same ``b``), then with tolerances scaled to its objective.

    Parameters
    ----------
    solve_qp : callable
        ``solve_qp(s, options) -> (beta', b, status)``: the QP on ``K / s``, ``zeta s`` with solver ``options``;
        raises :class:`~rsvm_conic.exceptions.SolverError` when the solver fails.
    scale : float
        ``s``, the largest kernel entry in magnitude.
    codes : ndarray of shape (n,)
        Class codes in ``0..C-1``.
    zeta : float or ndarray of shape (n,)
        The penalty.
    apply_K : callable
        ``apply_K(B)`` returns ``K B``.
    t0 : float
        ``time.perf_counter()`` at the route's start (the certificate's time runs from it).

    Returns
    -------
    beta : ndarray of shape (n, C) or None
        The best attempt's coefficients (None when every attempt failed).
    b : ndarray of shape (C,) or None
        Its biases.
    certificate : SolveInfo
        Its certificate (certified at 1e-6 where one is; the solver's status as ``detail["solver_status"]``), or
        status ``"failed"`` (:func:`ww_failed`).
    """
    best = None
    for s_, tight in ((1.0, False), (scale, False), (scale, True)):
        opts = {}
        if tight and best is not None:
            opts = dict(tol_gap_abs=1e-12 * max(abs(best[3].primal) * s_, 1e-300), tol_gap_rel=1e-12, tol_feas=1e-12)
        try:
            beta, b, status = solve_qp(s_, opts)
        except SolverError:
            continue
        c = ww_certificate("dual", beta / s_, b, codes, zeta, apply_K, tol=1e-6)
        if best is None or c.gap_rel < best[3].gap_rel:
            best = (beta / s_, b, status, c)
        if c.certified:
            break
    if best is None:
        return None, None, ww_failed("dual", t0)
    beta, b, status, cert = best
    cert.detail["solver_status"] = status
    cert.time = time.perf_counter() - t0
    return beta, b, cert


def ww_failed(route: str, t0: float):
    """The certificate of a route that returned no point: status ``"failed"``.

    Parameters
    ----------
    route : str
        The route named in the certificate.
    t0 : float
        ``time.perf_counter()`` at the route's start.

    Returns
    -------
    SolveInfo
    """
    return certify(route, np.inf, -np.inf, 1e-6, failed_status="failed", time=time.perf_counter() - t0)
