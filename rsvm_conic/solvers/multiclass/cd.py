"""Dual coordinate descent for the Weston-Watkins machine on explicit features: the compiled epoch and its driver.

The dual of eq. 1.9 [ElD19] with features ``phi_i`` (rows of ``Phi``) maximises
``2 sum alpha_ik - 1/2 sum_k ||w_k||^2`` over the box ``0 <= alpha_ik <= zeta`` (``k != y_i``), with
``w_k = sum_i beta_ik phi_i``, ``beta_ik = [k = y_i] sum_l alpha_il - [k != y_i] alpha_ik``, subject to the
bias constraints ``r_k = sum_i beta_ik = 0``.  The bias constraints are handled by the method of
multipliers: for a multiplier ``nu`` and a penalty ``rho`` the epoch below maximises
``2 sum alpha - 1/2 ||W||^2 - nu' r - rho/2 ||r||^2`` by exact coordinate steps (as the dual coordinate
descent of LIBLINEAR [Hsieh et al., ICML 2008] and the sequential dual method for multi-class machines
[Keerthi et al., KDD 2008]), with the bias ``b = nu + rho r`` in every margin; the caller updates ``nu`` and
judges progress by a certificate.  The partial derivative along ``alpha_ik`` is the margin
``z_ik = 2 - f_{y_i}(x_i) + f_k(x_i)`` and its curvature ``2 (||phi_i||^2 + rho)``, so a step costs one
score vector ``W' phi_i`` per sample (``D C`` multiply-adds) and ``D`` per changed class.

*Shrinking*: a sample whose every multiplier sits at a bound with its margin beyond ``thr`` on the side
that keeps it there is dropped from later epochs (the caller restores all samples when the remaining ones
are solved to its tolerance), as LIBLINEAR does.

The epoch (:func:`ww_cd_epoch`, compiled with numba) takes trusted, C-contiguous float64 arrays and int64 codes;
:func:`ww_dual_cd` drives it (shrinking, multiplier steps, certificate checks, the Newton endgame).
"""

from __future__ import annotations

import time

import numpy as np

from ..._jit import jit
from ..._threads import blas_threads_for
from ...certify.contract import relative_gap
from ..ipm.cone_loops import row_dot
from .alm import ww_primal_alm
from .objective import certified_result, feature_gram, ww_dual_bound, ww_objective


def ww_threads(F, n_classes: int):
    """The BLAS thread context of a Weston-Watkins solve, chosen from its sizes.

    Its largest BLAS calls are the (n x D)(D x C) score products and D x D factorisations
    (:func:`rsvm_conic._threads.blas_threads_for`).

    Parameters
    ----------
    F : ndarray of shape (n, D)
        The feature rows the solver runs on.
    n_classes : int
        The number of classes ``C``.

    Returns
    -------
    context manager
        Limits the BLAS threads while the solve runs.
    """
    n, D = F.shape
    return blas_threads_for(max(float(n) * D * n_classes, float(D) ** 3))


@jit()
def ww_cd_epoch(Phi, codes, alpha, WT, nu, r, rho, zeta, sqn, active, n_active, thr):
    """One epoch of dual coordinate descent over ``active[:n_active]`` (in that order), in place.

    Parameters
    ----------
    Phi : ndarray of shape (n, D)
        Feature rows (C-contiguous float64).
    codes : ndarray of shape (n,)
        Class codes (int64).
    alpha : ndarray of shape (n, C)
        The multipliers, updated in place.
    WT : ndarray of shape (C, D)
        The weights ``W'`` of ``alpha``, updated in place.
    nu : ndarray of shape (C,)
        The bias constraints' multiplier.
    r : ndarray of shape (C,)
        The bias residuals ``sum_i beta_ik``, updated in place.
    rho : float
        The bias penalty.
    zeta : float
        The box's bound.
    sqn : ndarray of shape (n,)
        Squared row norms ``||phi_i||^2``.
    active : ndarray of shape (n,)
        Sample order (int64); the kept samples are moved to its front.
    n_active : int
        How many samples of ``active`` the epoch visits.
    thr : float
        Shrinking threshold: a sample whose multipliers all sit at a bound with margins beyond ``thr`` on
        the side that keeps them there is dropped.

    Returns
    -------
    n_kept : int
        Samples kept at the front of ``active``.
    max_violation : float
        The largest projected-gradient entry seen (the optimality measure of the box problem at fixed ``nu``).
    """
    C, D = WT.shape
    dbeta = np.zeros(C)
    s = np.empty(C)
    maxviol = 0.0
    keep = 0
    for ii in range(n_active):
        i = active[ii]
        y = codes[i]
        phi = Phi[i]
        for c in range(C):  # the scores W' phi_i: C vectorised dot products (no BLAS call, no allocation)
            s[c] = row_dot(WT, c, phi) + nu[c] + rho * r[c]
            dbeta[c] = 0.0
        q = sqn[i] + rho
        safe = True
        changed = False
        for k in range(C):
            if k == y:
                continue
            g = 2.0 - s[y] + s[k]
            a = alpha[i, k]
            if a <= 0.0:
                v = max(g, 0.0)
                if g >= -thr:
                    safe = False
            elif a >= zeta:
                v = max(-g, 0.0)
                if g <= thr:
                    safe = False
            else:
                v = abs(g)
                safe = False
            if v > maxviol:
                maxviol = v
            new = min(max(a + g / (2.0 * q), 0.0), zeta)
            d = new - a
            if d != 0.0:
                changed = True
                alpha[i, k] = new
                dbeta[y] += d
                dbeta[k] -= d
                s[y] += d * q  # the scores move with w_y += d phi_i, w_k -= d phi_i and with b = nu + rho r
                s[k] -= d * q
                r[y] += d
                r[k] -= d
        if changed:
            for c in range(C):
                dc = dbeta[c]
                if dc != 0.0:
                    for j in range(D):
                        WT[c, j] += dc * phi[j]
        if changed or not safe:
            active[keep] = i
            keep += 1
    return keep, maxviol


def ww_dual_cd(
    Phi,
    codes,
    n_classes: int,
    zeta: float,
    *,
    tol: float = 1e-6,
    rho: float = 0.1,
    inner: int = 5,
    handoff: float = 1e-3,
    direct_max: int = 5000,
    max_epochs: int = 20000,
    eps: float = 1e-3,
    seed: int = 0,
):
    """Solve eq. 1.9 exactly on explicit features by dual coordinate descent with a Newton endgame.

    Coordinate descent with shrinking (:func:`ww_cd_epoch`, compiled) on the box of the multipliers; the bias
    constraints by the method of multipliers (``nu += rho r`` every ``inner`` epochs, the penalty ``rho`` times
    the mean ``||phi_i||^2``).  Shrunk samples return at every certificate check, as the multiplier steps move
    the bias that shrinking assumed fixed.

    Coordinate descent finds the optimum's partition of the multipliers (0, free, ``zeta``) at a cost of
    one score vector per active sample and epoch, but its last digits come slowly when many margins sit
    at the kink or ``zeta`` is large; the semismooth Newton steps of :func:`.ww_primal_alm` are the
    reverse.  So once the certified gap is ``<= handoff`` (or has not halved over ten checks) and at most
    ``direct_max`` multipliers are free (the Newton systems are then one Cholesky factorisation),
    :func:`.ww_primal_alm` continues from the point and the multipliers at its zone floor; if it does not
    certify, coordinate descent goes on.  Every iterate is judged only by the certificate: the true objective
    of the best ``(W, b)`` (``b = nu + rho r``) against the best :func:`.ww_dual_bound` of the multipliers,
    checked every 10-50 epochs.  ``rsvm-conic bench ww-exact`` measures it against :func:`.ww_primal_alm`
    alone and against scikit-learn's Crammer-Singer machine.

    Parameters
    ----------
    Phi : ndarray of shape (n, D)
        Feature rows (trusted: finite float64).
    codes : ndarray of shape (n,)
        Class codes in ``0..n_classes-1`` (trusted integers).
    n_classes : int
        The number of classes ``C``.
    zeta : float
        Eq. 1.9's penalty (the box ``0 <= alpha_ik <= zeta``).
    tol : float
        Relative certified gap at which the run stops.
    rho : float
        The bias penalty, relative to the mean squared row norm.
    inner : int
        Epochs between two multiplier steps ``nu += rho r``.
    handoff : float
        Certified gap from which the Newton endgame is tried once; 0 runs coordinate descent alone.
    direct_max : int
        The largest number of free multipliers for the endgame (and the endgame's direct Newton systems).
    max_epochs : int
        Epoch budget.
    eps : float
        First shrinking tolerance (divided by 10 each time the shrunk problem is solved, down to 1e-12).
    seed : int
        Seed of each epoch's sample order; the same input and seed give the same result.

    Returns
    -------
    W : ndarray of shape (D, C)
        Weights of the best certified iterate.
    b : ndarray of shape (C,)
        Biases, centred (``sum(b) = 0``).
    info : dict
        ``status`` (``"optimal"`` when the gap met ``tol``, else ``"max_iter"``), ``iterations`` (epochs),
        ``objective``, ``certificate`` (the :class:`~rsvm_conic.certify.contract.SolveInfo`, route ``"cd"``,
        its ``detail`` holding ``epochs``, ``rho`` and the endgame's detail) and ``multipliers`` (n, C).
    """
    t_start = time.perf_counter()
    Phi = np.ascontiguousarray(Phi, dtype=np.float64)
    n, D = Phi.shape
    C = int(n_classes)
    zeta = float(zeta)
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    alpha, WT, nu, r = np.zeros((n, C)), np.zeros((C, D)), np.zeros(C), np.zeros(C)
    sqn = np.einsum("ij,ij->i", Phi, Phi)
    rho = float(rho) * max(float(sqn.mean()), 1e-300)  # the bias's penalty on the features' scale
    rng = np.random.default_rng(seed)
    floor = 1e-9 * zeta * n

    gram = feature_gram(Phi)

    best = {"f": np.inf, "W": np.zeros((D, C)), "b": np.zeros(C), "d": 0.0}
    active, n_active, thr = np.arange(n, dtype=np.int64), n, np.inf
    gap, epoch, next_check, handed, alm_info, history = np.inf, 0, 10, False, None, []
    while epoch < max_epochs:
        epoch += 1
        rng.shuffle(active[:n_active])
        n_active, viol = ww_cd_epoch(Phi, codes, alpha, WT, nu, r, rho, zeta, sqn, active, n_active, thr)
        thr = viol
        if viol <= eps and n_active < n:  # the shrunk problem is solved: restore every sample, tighten
            active, n_active, thr, eps = np.arange(n, dtype=np.int64), n, np.inf, max(0.1 * eps, 1e-12)
        if epoch % inner == 0:
            nu += rho * r
        if epoch < next_check:
            continue
        next_check = epoch + min(50, max(10, epoch // 4))
        # shrinking assumed a fixed bias, which the multiplier steps move: every sample is back after a check
        active, n_active, thr = np.arange(n, dtype=np.int64), n, np.inf
        W, b = WT.T.copy(), nu + rho * r
        f = ww_objective(float(np.sum(W * W)), Phi @ W + b, codes, zeta)
        if f < best["f"]:
            best.update(f=f, W=W, b=b)
        best["d"] = max(best["d"], ww_dual_bound(alpha, codes, zeta, gram)[0])
        gap = relative_gap(best["f"], best["d"], floor)
        if gap <= tol:
            break
        history.append(gap)
        stalled = len(history) > 10 and gap > 0.5 * history[-11]  # not halved over the last ten checks
        if (
            not handed
            and handoff > 0.0
            and (gap <= handoff or stalled)
            and np.count_nonzero((alpha > 0.0) & (alpha < zeta)) <= direct_max  # free multipliers
        ):
            handed = True
            Wa, ba, alm_info = ww_primal_alm(
                Phi, codes, C, zeta, tol=tol, mu0=1e-2, direct_max=direct_max, W0=W, b0=b, lam0=alpha
            )
            cert_a = alm_info["certificate"]
            if cert_a.primal < best["f"]:
                best.update(f=cert_a.primal, W=Wa, b=ba)
            best["d"] = max(best["d"], cert_a.dual)
            gap = relative_gap(best["f"], best["d"], floor)
            if gap <= tol:
                break
    endgame = None if alm_info is None else alm_info["certificate"].detail
    detail = {"epochs": epoch, "rho": rho, "newton_endgame": endgame}
    return certified_result("cd", best, tol, floor, t_start, epoch, detail, alpha)
