"""A warm start for the linear SVMs' interior point: the previous solution's margins pick a smaller problem.

At the optimum of ``min 1/2 ||w||^2 + sum_i C_i max{0, 1 - m_i(w, b)}`` with robust margins
``m_i = y_i (<w, x_i> + b) - gamma_i ||A_g(i)' w||_2``, a sample with ``m_i > 1`` has multiplier 0 (it can be
dropped) and a sample with ``m_i < 1`` has multiplier ``C_i`` (its hinge is linear in ``(w, b)`` there).  The
samples of one class and one group whose hinges are linear add up to one hinge of their weighted mean: with
``S = sum C_i``, ``x = sum C_i x_i / S`` and ``g = sum C_i gamma_i / S``,

    sum_i C_i (1 - y (<w, x_i> + b) + gamma_i ||A' w||) = S (1 - y (<w, x> + b) + g ||A' w||),

the argument of one pseudo-sample's hinge of weight ``S``.  :func:`working_set_ipm` guesses the three sets from
the margins at a previous solution (a neighbouring point of a path), solves the problem of the samples near the
margin plus one pseudo-sample per class and group with the interior point, spreads each pseudo-sample's
multiplier over its samples (``alpha_i = a C_i / S``) and checks the guess on the margins at its solution: samples
that contradict it join the working set and the reduced problem is solved again (from its own solution, at the
smallest complementarity :data:`WARM_MU_FLOOR`); once they add too little hinge to the objective to spoil the
certificate, ``(w, b, alpha)`` goes to the caller's certificate on the whole problem.  Where the working set holds
more than :data:`MAX_SHARE` of the samples (just below the radius at which the fit becomes constant, where most
samples sit near the margin of a small ``w``), or a reduced problem is not solved in :data:`REDUCED_MAX_ITER`
iterations (a poor guess), the whole problem is solved from the same warm start instead: on ``rsvm-conic bench
paths``'s magic data 16 iterations against 24 cold at the path's third radius, where the reduced problem (40-60 %
of the samples) stopped unsolved after 20.  The certificate decides: its gap is that of the whole problem,
whatever the guess.
"""

from __future__ import annotations

import functools
import time
import warnings

import numpy as np
import scipy.sparse as sp

from ..exceptions import SolverError, SolverWarning
from .ipm.robust_svm import solve_robust_ipm

__all__ = ["robust_margins", "warm_mu", "warm_point", "working_set_ipm"]

#: samples whose margin at the previous solution is within this of 1 are solved individually
BAND = 0.25
#: reduced problems solved before giving up (the caller then solves the whole problem)
MAX_ROUNDS = 4
#: the working set's largest share of the samples at which the reduced problem is still worth solving (beyond it,
#: the whole problem from the warm start: a reduced problem's iteration costs about as much on magic's path)
MAX_SHARE = 0.4
#: a reduced problem not solved in this many iterations is given up for the whole problem (a cold fit takes 15-25)
REDUCED_MAX_ITER = 20
#: the warm start's complementarity products ``s_i z_i`` over the median hinge weight (:func:`warm_point`)
WARM_MU = 0.1
#: the smallest of them that :func:`warm_mu` chooses
WARM_MU_FLOOR = 0.003


def robust_margins(X, y, w, b, gamma, factors, diagonal, group_index):
    """``y_i (<w, x_i> + b) - gamma_i ||A_g(i)' w||_2`` for every sample.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        Samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    w : ndarray of shape (n,)
        Weights.
    b : float
        Intercept.
    gamma : ndarray of shape (L,) or None
        Radii (None: the nominal margins).
    factors : ndarray of shape (k, n) or (k, n, n) or None
        Diagonal square roots or the factors ``A_g``.
    diagonal : bool
        Whether ``factors`` are diagonal.
    group_index : ndarray of shape (L,) or None
        Each sample's group.

    Returns
    -------
    ndarray of shape (L,)
    """
    m = y * (X @ w + b)
    if gamma is None:
        return m
    return m - gamma * _robust_norms(w, factors, diagonal)[group_index]


def _robust_rows(w, factors, diagonal):
    """``A_g' w`` for every group, (k, n)."""
    return factors * w if diagonal else np.einsum("kji,j->ki", factors, w)


def _robust_norms(w, factors, diagonal):
    """``||A_g' w||_2`` for every group."""
    return np.linalg.norm(_robust_rows(w, factors, diagonal), axis=1)


def warm_mu(step) -> float:
    """The warm start's complementarity (over the median hinge weight) for the next point of a path.

    The previous step's relative change of the weights, ``||w_k - w_{k-1}|| / ||w_k||``, estimates how far the next
    optimum lies from the start; the start's complementarity is about that size (the shift of a warm-started interior
    point grows with the perturbation, Gondzio and Grothey), clipped to ``[WARM_MU_FLOOR, WARM_MU]``.  On the
    benchmark's magic path (20 radii) it saves 9 % of the warm points' iterations against :data:`WARM_MU` for every
    point (158 against 173; 139 against 160 on its 3000-sample subset, 169 against 179 on a cross-validation fold).

    Parameters
    ----------
    step : float or None
        The relative change of the weights between the last two non-constant points of one C (None: unknown, or the
        last step was in C).

    Returns
    -------
    float
    """
    if step is None or not np.isfinite(step):
        return WARM_MU
    return float(min(WARM_MU, max(WARM_MU_FLOOR, step)))


def warm_point(prob, w, b, mu: float = WARM_MU):
    """An interior start of the robust SVM's interior point at a previous solution ``(w, b)``.

    The primal point is ``(w, b)`` with the slacks its margins need and each cone's ``t_g`` just above
    ``||A_g' w||``; each sample's multiplier pair ``(z_i, C_i - z_i)`` splits ``C_i`` so that both products with the
    slacks of its margin and of its hinge equal ``C_i s xi / (s + xi)``, about ``mu`` times the median ``C_i`` (a
    sample on the margin, ``m_i = 1``, splits ``C_i`` in half; one far inside or outside gets ``z_i`` near 0 or
    ``C_i``); each cone's multiplier is ``z0_g = sum_i gamma_i z_i`` (its ``t`` rows of the dual residual vanish) along
    ``-A_g' w``, inside the cone.  The start lies on the central path's neighbourhood at that ``mu`` (the moderate
    shift of a warm-started interior point, Gondzio and Grothey; Yildirim and Wright) rather than at the previous
    problem's optimum, from which the iterates could not move.

    Parameters
    ----------
    prob : RobustSVMCone
        The problem (:class:`~rsvm_conic.solvers.ipm.robust_svm.RobustSVMCone`).
    w : ndarray of shape (n,)
        The previous weights.
    b : float
        The previous intercept.
    mu : float, default=0.1
        The complementarity products over the median hinge weight.

    Returns
    -------
    tuple
        ``(x, y, z, s)`` with ``s`` and ``z`` interior.
    """
    L, k = prob.L, prob.k
    C = np.broadcast_to(np.asarray(prob.C, dtype=float), (L,))
    mu = mu * float(np.median(C))
    x = np.zeros(prob.nx)
    xw, _, xi, t = prob.split_x(x)
    xw[:] = w
    x[prob.n] = b
    z = np.empty(prob.cones.size)
    zm, zx, Z = prob.split_z(z)
    m = prob.y * (prob.X @ w + b)
    if k:
        U = _robust_rows(w, prob.factors, prob.diagonal)
        norms = np.linalg.norm(U, axis=1)
        m -= prob.gamma * norms[prob.gidx]
    theta = mu / C
    s_margin = np.maximum(m - 1.0, 0.0) + theta
    slack = np.maximum(1.0 - m, 0.0) + theta
    zm[:] = C * slack / (s_margin + slack)
    zx[:] = C - zm
    xi[:] = slack
    if k:
        z0 = prob.segsum(prob.gamma * zm)
        t[:] = norms + mu / z0  # s_g' z_g about 2 mu; the margins' slacks keep their values through xi
        xi += prob.gamma * (mu / z0)[prob.gidx]
        Z[:, 0] = z0
        Z[:, 1:] = -(z0 / t)[:, None] * U
    return x, np.zeros(0), z, prob.h - prob.Gx(x)


def _reduced(X, y, C, gamma, group_index, work, bound):
    """The reduced problem's arrays: the samples ``work`` and one pseudo-sample per (group, class) of ``bound``."""
    key = 2 * group_index[bound] + (y[bound] > 0)
    keys, inv = np.unique(key, return_inverse=True)
    cb = C[bound]
    S = np.bincount(inv, weights=cb)
    sums = sp.csr_matrix((cb, (inv, np.arange(bound.size))), shape=(keys.size, bound.size))
    means = np.asarray(sums @ X[bound]) / S[:, None]
    g = np.bincount(inv, weights=cb * gamma[bound]) / S
    arrays = (
        np.concatenate([X[work], means]),
        np.concatenate([y[work], np.where(keys % 2 == 1, 1.0, -1.0)]),
        np.concatenate([C[work], S]),
        np.concatenate([gamma[work], g]),
        np.concatenate([group_index[work], keys // 2]),
    )
    return arrays, inv, S


def working_set_ipm(
    X,
    y,
    C,
    gamma,
    factors,
    diagonal,
    group_index,
    w0,
    b0,
    certify,
    *,
    gamma_prev=None,
    band: float = BAND,
    max_rounds: int = MAX_ROUNDS,
    max_share: float = MAX_SHARE,
    tol_rel: float = 1e-6,
    mu: float = WARM_MU,
    **ipm_options,
):
    """Solve the linear (robust) SVM from a previous solution ``(w0, b0)`` on reduced problems (module docstring).

    Parameters
    ----------
    X : ndarray of shape (L, n)
        Samples (trusted, in memory).
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    C : float or ndarray of shape (L,)
        The hinge weights ``C_i``.
    gamma : ndarray of shape (L,) or None
        Radii ``gamma_i`` at the current parameters (None: the nominal SVM).
    factors : ndarray of shape (k, n) or (k, n, n) or None
        Diagonal square roots or the factors ``A_g`` (p = 2).
    diagonal : bool
        Whether ``factors`` are diagonal.
    group_index : ndarray of shape (L,) or None
        Each sample's group.
    w0 : ndarray of shape (n,)
        The previous solution's weights.
    b0 : float
        The previous solution's intercept.
    certify : callable
        ``certify(w, b, alpha) -> SolveInfo``: the whole problem's certificate of a point and a dual point.
    gamma_prev : ndarray of shape (L,) or None, default=None
        The radii at which ``(w0, b0)`` was solved: each sample's band widens by twice the change of its margin at
        ``w0`` from those radii to ``gamma``.
    band : float, default=0.25
        Samples with ``|m_i(w0, b0) - 1| <= band`` (at the radii ``gamma``) are solved individually.
    max_rounds : int, default=4
        Solves (reduced or whole) at most.
    max_share : float, default=0.4
        The working set's largest share of the samples (beyond it the reduced problem saves too little and the whole
        problem is solved from the warm start).
    tol_rel : float, default=1e-6
        The certificate's relative tolerance: a reduced solution whose contradicting samples add more than half of it
        to the objective is not certified (the guess is corrected and the reduced problem solved again), and the
        reduced problems are solved to a tenth of it (``tol_gap_rel``, unless ``ipm_options`` set it).
    mu : float, default=0.1
        The warm start's complementarity over the median hinge weight (:func:`warm_point`, :func:`warm_mu`).
    **ipm_options
        Options of :func:`~rsvm_conic.solvers.ipm.robust_svm.solve_robust_ipm`.

    Returns
    -------
    w : ndarray of shape (n,)
    b : float
    info : SolveInfo
        The certificate of the last point (certified: ``info.certified``).
    detail : dict
        ``rounds``, ``working`` (samples solved individually), ``pseudo`` (pseudo-samples), ``iterations`` (the
        interior point's, summed), ``whole`` (whether the last solve was the whole problem's) and ``time``.

    Raises
    ------
    SolverError
        When no solve certifies within ``max_rounds``: the caller solves the whole problem cold.
    """
    t0 = time.perf_counter()
    ipm_options = {"tol_gap_rel": 0.1 * tol_rel, **ipm_options}
    L = X.shape[0]
    Cv = np.broadcast_to(np.asarray(C, dtype=float), (L,))
    nominal = gamma is None
    gam = np.zeros(L) if nominal else gamma
    gidx = np.zeros(L, dtype=np.intp) if nominal else group_index
    facs = np.zeros((1, X.shape[1])) if nominal else factors
    m = robust_margins(X, y, w0, b0, None, factors, diagonal, group_index)
    if not nominal:  # the robust term at w0, once for both radii
        norms = _robust_norms(w0, factors, diagonal)[group_index]
        m = m - gamma * norms
        if gamma_prev is not None:  # the margins move with the radii: wider bands where they move most
            band = band + 2.0 * np.abs(gamma - gamma_prev) * norms
    work = np.abs(m - 1.0) <= band
    iterations, cert, whole = 0, None, False
    w, b, start_mu = w0, b0, mu
    for rounds in range(1, max_rounds + 1):
        whole = whole or bool(np.count_nonzero(work) > max_share * L)
        if whole:  # the reduced problem would save too little: the whole problem, from the same warm start
            work[:] = True
        bound = ~work & (m < 1.0)
        (Xr, yr, Cr, gr, ir), inv, S = _reduced(X, y, Cv, gam, gidx, np.flatnonzero(work), np.flatnonzero(bound))
        if np.all(yr == yr[0]):
            break
        options = ipm_options if whole else {"max_iter": REDUCED_MAX_ITER, **ipm_options}
        try:
            with warnings.catch_warnings():  # the certificate on the whole problem decides
                warnings.simplefilter("ignore", SolverWarning)
                start = functools.partial(warm_point, w=w, b=b, mu=start_mu)
                values, run = solve_robust_ipm(
                    Xr, yr, Cr, gr, facs, diagonal, ir, accept_inaccurate=True, start=start, **options
                )
        except (SolverError, ValueError, np.linalg.LinAlgError):
            break
        iterations += int(run["iterations"])
        if run["status"] != "optimal" and not whole:  # a poor guess: the whole problem from the latest point
            whole = True
            continue
        w, b = np.asarray(values["w"], dtype=float), float(values["b"])
        start_mu = WARM_MU_FLOOR  # a next round starts at this solution, a few samples from its own
        alpha = np.zeros(L)
        nw = np.count_nonzero(work)
        alpha[work] = run["alpha"][:nw]
        alpha[bound] = run["alpha"][nw:][inv] / S[inv] * Cv[bound]
        m = robust_margins(X, y, w, b, gamma, factors, diagonal, group_index)
        wrong = (~work) & ((bound & (m > 1.0)) | (~bound & (m < 1.0)))
        # the whole objective at (w, b) exceeds the reduced one by the contradicting samples' hinge mass: certify
        # when that cannot spoil the certificate, else correct the guess first (the certificate is a pass over
        # every sample and its dual set, the margins one product)
        excess = float(Cv[wrong] @ np.abs(m[wrong] - 1.0))
        if excess <= 0.5 * tol_rel * max(abs(float(run["pcost"])), 1.0) or rounds == max_rounds:
            cert = certify(w, b, alpha)
            detail = {"rounds": rounds, "working": nw, "pseudo": int(S.size), "iterations": iterations, "whole": whole}
            if cert.certified:
                detail["time"] = time.perf_counter() - t0
                return w, b, cert, detail
        if whole or not np.any(wrong):  # the guess holds, the reduced problem was not solved accurately enough
            break
        work |= wrong | (np.abs(m - 1.0) <= BAND)
    gap = "" if cert is None else f" (certified relative gap {cert.gap_rel:.2e})"
    raise SolverError(f"the working-set warm start did not certify{gap}; the whole problem is solved instead.")
