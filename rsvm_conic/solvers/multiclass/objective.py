"""The Weston-Watkins objective [ElD19, eq. 1.9] and the dual bound every WW solver stops on.

Primal, classes ``k = 0..C-1``, scores ``f_k(x) = <w_k, phi(x)> + b_k``::

    min_{W, b}  1/2 sum_k ||w_k||^2 + zeta sum_i sum_{k != y_i} max(0, 2 - f_{y_i}(x_i) + f_k(x_i)).

Kernel dual, with multipliers ``0 <= alpha_ik <= zeta`` (``alpha_{i, y_i} = 0``), ``A_i = sum_k alpha_ik`` and
``beta_ik = [k = y_i] A_i - alpha_ik`` (so ``w_k = sum_i beta_ik phi(x_i)``)::

    max_alpha  2 sum_ik alpha_ik - 1/2 sum_k beta_k^T K beta_k   s.t.  sum_i beta_ik = 0  (k = 0..C-1).

:func:`ww_objective` is the primal every route is scored on (:func:`msvmpack_objective` on MSVMpack's scale,
margin 1 and penalty ``C``: eq. 1.9's at ``zeta = 2 C`` (:func:`msvmpack_zeta`) divided by 4); :func:`ww_dual_bound`
turns any multipliers into a feasible dual point and its value, a certified lower bound; :func:`ww_scaled_model`
rescales a solution to hard margins where that lowers the objective.
"""

from __future__ import annotations

import time

import numpy as np

from ...certify.contract import certify


def ww_losses(scores: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Eq. 1.9's hinge terms of every (sample, class) pair.

    Parameters
    ----------
    scores : ndarray of shape (n, C)
        The scores ``f_k(x_i)``.
    codes : ndarray of shape (n,)
        Class codes in ``0..C-1``.

    Returns
    -------
    ndarray of shape (n, C)
        ``max(0, 2 - f_{y_i}(x_i) + f_k(x_i))``, with zeros at ``k = y_i``.
    """
    n = scores.shape[0]
    fy = scores[np.arange(n), codes][:, None]
    z = np.maximum(0.0, 2.0 - fy + scores)
    z[np.arange(n), codes] = 0.0
    return z


def ww_objective(sq_norm: float, scores: np.ndarray, codes: np.ndarray, zeta) -> float:
    """Evaluate eq. 1.9's primal objective from ``sum_k ||w_k||^2`` and the training scores.

    Parameters
    ----------
    sq_norm : float
        ``sum_k ||w_k||^2``.
    scores : ndarray of shape (n, C)
        The training scores ``f_k(x_i)`` (biases included).
    codes : ndarray of shape (n,)
        Class codes in ``0..C-1``.
    zeta : float or ndarray of shape (n,)
        The penalty, or one penalty ``zeta_i = zeta s_i`` per sample (sample weights ``s_i``).

    Returns
    -------
    float
        ``1/2 sq_norm + sum_i zeta_i sum_{k != y_i} max(0, 2 - f_{y_i}(x_i) + f_k(x_i))``.
    """
    losses = ww_losses(scores, codes)
    if np.ndim(zeta):
        return 0.5 * float(sq_norm) + float(np.asarray(zeta) @ losses.sum(axis=1))
    return 0.5 * float(sq_norm) + float(zeta) * float(losses.sum())


def msvmpack_zeta(C: float) -> float:
    """Eq. 1.9's ``zeta`` (margin 2) equivalent to MSVMpack's ``C`` (margin 1).

    Parameters
    ----------
    C : float
        MSVMpack's penalty.

    Returns
    -------
    float
        ``zeta = 2 C``.
    """
    return 2.0 * float(C)


def msvmpack_objective(sq_norm: float, scores: np.ndarray, codes: np.ndarray, C: float) -> float:
    """MSVMpack's WW objective ``1/2 ||W||^2 + C sum_{i, k != y_i} max(0, 1 - f_{y_i} + f_k)``.

    Parameters
    ----------
    sq_norm : float
        ``||W||^2``.
    scores : ndarray of shape (n, C)
        The scores ``f_k(x_i)``.
    codes : ndarray of shape (n,)
        Class codes.
    C : float
        MSVMpack's penalty.

    Returns
    -------
    float
        Eq. 1.9's objective of ``(2 W, 2 b)`` at ``zeta = 2 C``, divided by 4.
    """
    return 0.25 * ww_objective(4.0 * sq_norm, 2.0 * np.asarray(scores), codes, msvmpack_zeta(C))


def ww_dual_bound(alpha: np.ndarray, codes: np.ndarray, zeta: float, gram) -> tuple[float, np.ndarray]:
    """Bound eq. 1.9's optimum from below with a feasible dual point built from any multipliers.

    ``alpha`` is clipped to the box ``0 <= alpha_ik <= zeta [k != y_i]`` and then made to satisfy the
    bias constraints ``sum_i beta_ik = 0``.  These say that the class-to-class flows
    ``F_mk = sum_{i: y_i = m} alpha_ik`` form a circulation (what leaves class m equals what enters
    it).  Two circulations ``0 <= G <= F`` are tried: the largest one (a linear programme on
    ``C (C - 1)`` edges, kept when balanced to 1e-9 of the total flow) and ``min(F, F^T)`` (exactly
    balanced, the largest for two classes); each sample's ``alpha_ik`` is scaled by ``G_mk / F_mk``,
    which keeps the box.  The dual objective ``D(t alpha) = 2 t sum(alpha) - t^2/2 q``
    (``q = sum_k beta_k^T K beta_k``, from ``gram(beta)``) is maximised over ``t`` in ``[0, 1]``.
    Any such point is dual feasible, so ``D`` is a certified lower bound (weak duality); it is
    tight at the optimum's multipliers; ``alpha = 0`` gives 0.

    Parameters
    ----------
    alpha : ndarray of shape (n, C)
        Any multipliers (NaN read as 0, clipped to the box).
    codes : ndarray of shape (n,)
        Class codes in ``0..C-1``.
    zeta : float or ndarray of shape (n,)
        The box's bound, or one bound ``zeta_i`` per sample (the weighted box ``alpha_ik <= zeta_i``).
    gram : callable
        ``gram(beta) -> sum_k beta_k^T K beta_k`` for a (n, C) array (e.g. :func:`feature_gram`).

    Returns
    -------
    D : float
        The dual value of the feasible point, a lower bound on eq. 1.9's optimum.
    alpha_feasible : ndarray of shape (n, C)
        That feasible point.
    """
    n, C = alpha.shape
    Y = np.zeros((n, C))
    Y[np.arange(n), codes] = 1.0
    top = np.asarray(zeta, dtype=float)[:, None] if np.ndim(zeta) else zeta
    a = np.clip(np.nan_to_num(alpha, nan=0.0), 0.0, top) * (1.0 - Y)
    F = np.zeros((C, C))
    np.add.at(F, codes, a)  # F[m, k] = sum over samples of class m of alpha_ik
    best = (0.0, np.zeros_like(a))
    for G in _circulations(F):
        ratio = np.divide(G, F, out=np.zeros_like(F), where=F > 0)
        ag = a * ratio[codes]
        beta = Y * ag.sum(axis=1, keepdims=True) - ag
        s, q = 2.0 * float(ag.sum()), float(gram(beta))
        t = 1.0 if q <= s else s / q  # argmax of t s - t^2 q / 2 over [0, 1]
        value = t * s - 0.5 * t * t * q
        if value > best[0]:
            best = (value, t * ag)
    return best


def _circulations(F: np.ndarray):
    """Circulations ``0 <= G <= F`` (``G_mm = 0``): ``F`` itself if balanced, else the largest (LP) and
    ``min(F, F^T)``."""
    total = float(F.sum())
    if total <= 0.0:
        return
    if np.max(np.abs(F.sum(axis=1) - F.sum(axis=0))) <= 1e-14 * total:
        yield F
        return
    from scipy.optimize import linprog

    C = F.shape[0]
    off = ~np.eye(C, dtype=bool)
    edges = np.argwhere(off)
    A = np.zeros((C, edges.shape[0]))
    A[edges[:, 0], np.arange(edges.shape[0])] += 1.0  # leaves m
    A[edges[:, 1], np.arange(edges.shape[0])] -= 1.0  # enters k
    cap = F[off] / F.max()  # unit scale: the LP's tolerances are absolute
    res = linprog(
        -np.ones(cap.size),
        A_eq=A,
        b_eq=np.zeros(C),
        bounds=np.stack([np.zeros_like(cap), cap], 1),
        method="highs",
        options={"primal_feasibility_tolerance": 1e-10},
    )
    if res.status == 0:
        G = np.zeros_like(F)
        G[off] = np.clip(res.x, 0.0, cap) * F.max()
        if np.max(np.abs(G.sum(axis=1) - G.sum(axis=0))) <= 1e-9 * total:
            yield G
    yield np.minimum(F, F.T)


def ww_scaled_model(scores, sq_norm, codes, zeta, margin_err=0.0):
    """Pick the better of a model ``(W, b)`` and its rescaling ``t (W, b)`` to hard margins.

    The rescaling puts every margin ``t (f_{y_i} - f_k) >= 2`` beyond the margins' rounding ``margin_err``
    (when all of them are positive).  At a large ``zeta`` whose optimum separates the classes this removes the
    zeta-weighted rounding of the margins of the support vectors.

    Parameters
    ----------
    scores : ndarray of shape (n, C)
        The training scores ``Phi W + b``.
    sq_norm : float
        ``||W||^2``.
    codes : ndarray of shape (n,)
        Class codes in ``0..C-1``.
    zeta : float or ndarray of shape (n,)
        The penalty, or one penalty per sample.
    margin_err : float
        A bound on the rounding of each score difference.

    Returns
    -------
    t : float
        The scale, 1 when the model itself is the better.
    objective : float
        Eq. 1.9's objective of ``t (W, b)``.
    """
    n = scores.shape[0]
    rows = np.arange(n)
    d = scores[rows, codes][:, None] - scores  # f_{y_i} - f_k
    d[rows, codes] = np.inf
    best = (1.0, ww_objective(sq_norm, scores, codes, zeta))
    dmin = float(np.min(d)) - 2.0 * margin_err
    if dmin > 0.0:
        t = 2.0 * (1.0 + 1e-12) / dmin
        slack = np.maximum(2.0 - t * d, 0.0)
        P = 0.5 * t * t * sq_norm + (float(zeta @ slack.sum(axis=1)) if np.ndim(zeta) else zeta * float(slack.sum()))
        if P < best[1]:
            best = (t, P)
    return best


def feature_gram(Phi):
    """``B -> sum_k beta_k' Phi Phi' beta_k`` (the quadratic term of :func:`ww_dual_bound`) on features.

    Parameters
    ----------
    Phi : ndarray of shape (n, D)
        Feature rows.

    Returns
    -------
    callable
        ``gram(B)`` for multipliers ``B`` of shape (n, n_classes).
    """

    def gram(B):
        V = Phi.T @ B
        return float(np.sum(V * V))

    return gram


def certified_result(route, best, tol, floor, t_start, iterations, detail, multipliers):
    """The exact feature solvers' return value from their best iterate ``best`` (keys ``f``, ``d``, ``W``,
    ``b``): ``(W, b - mean(b), info)`` with the certificate of ``f`` against ``d``.

    Parameters
    ----------
    route : str
        The route's name.
    best : dict
        The best iterate: primal ``f``, dual bound ``d``, ``W``, ``b``.
    tol : float
        The relative gap that counts as optimal.
    floor : float
        Lower limit of the gap's denominator.
    t_start : float
        ``time.perf_counter()`` at the start of the solve.
    iterations : int
        Iterations taken.
    detail : dict
        Route-specific extras for the certificate.
    multipliers : ndarray
        The multipliers of the dual bound.

    Returns
    -------
    W : ndarray of shape (D, n_classes)
        The weights.
    b : ndarray of shape (n_classes,)
        The biases, centred.
    info : dict
        ``status``, ``iterations``, ``objective``, ``certificate`` (a SolveInfo), ``multipliers``.
    """
    cert = certify(
        route,
        best["f"],
        best["d"],
        tol,
        failed_status="max_iter",
        iterations=iterations,
        time=time.perf_counter() - t_start,
        floor=floor,
        detail=detail,
    )
    info = {
        "status": cert.status,
        "iterations": iterations,
        "objective": best["f"],
        "certificate": cert,
        "multipliers": multipliers,
    }
    return best["W"], best["b"] - best["b"].mean(), info
