"""The linear robust SVM's certificate on in-memory arrays: the robust term of its dual point (and the cone
multipliers ``z_g`` a conic solver's dual values give, :func:`cone_multipliers`), the hard-margin
rescaling of a solution, the rounding floor of its gap, what an uncertified result says (:func:`uncertified_error`,
:func:`lp_like_hint`) and the tolerances of a route's one tighter retry.

With ``s_g = sum_{i in g} alpha_i gamma_i``, every ``alpha`` in ``{0 <= alpha_i <= C s_i, y'alpha = 0}`` and every
``u_g`` in the unit p-ball give the lower bound ``D(alpha, u) = sum_i alpha_i - 1/2 ||X'(alpha y) - sum_g s_g A_g
u_g||^2 <= P*`` (:mod:`rsvm_conic.formulations._linear`).
"""

from __future__ import annotations

import numpy as np

from ..exceptions import SolverError
from .contract import SolveInfo, certify
from ..uncertainty.sets import dual_norm_subgradient, dual_norm_values
from .dual_u import apply_factors, best_u
from .hinge import hinge_min
from .projections import project_pball

#: tighter solver tolerances for one retry when a route's result misses the certificate's relative tolerance (the
#: solvers' absolute gap tolerance 1e-8..1e-9 is loose for tiny objectives)
TIGHT = {
    "clarabel": dict(tol_gap_abs=1e-13, tol_gap_rel=1e-12, tol_feas=1e-12),
    "scs": dict(eps_abs=1e-11, eps_rel=1e-11),
    "ipm": dict(tol_gap_abs=1e-13, tol_gap_rel=1e-11),
}


def robust_dual_term(a, w, unc, optimise_u: bool = False, v0=None, multipliers=None):
    """``sum_g s_g A_g u_g``, the robust part of the dual point.

    ``u_g`` is the maximiser of ``u'A_g'w`` at ``w`` or, when the solver returned its cone multipliers ``z_g``,
    ``z_g / s_g`` projected onto the unit p-ball, whichever leaves the smaller ``||v0 - term||``; with
    ``optimise_u`` (unless the factors hold more than 2e7 numbers) it is then improved by
    :func:`~rsvm_conic.certify.dual_u.best_u`.

    Parameters
    ----------
    a : ndarray of shape (L,)
        Multipliers in the dual set.
    w : ndarray of shape (n,)
        The primal weights.
    unc : ResolvedUncertainty or None
        The uncertainty at the current radius.
    optimise_u : bool, default=False
        Improve ``u`` by accelerated projected gradient.
    v0 : ndarray of shape (n,) or None, default=None
        ``X'(a y)`` (needed with ``multipliers`` or ``optimise_u``).
    multipliers : ndarray of shape (k, n) or None, default=None
        The solver's cone multipliers ``z_g``.

    Returns
    -------
    ndarray of shape (n,) or None
        The term, None without a robust term.
    """
    if unc is None or unc.radius == 0:
        return None
    U = dual_norm_subgradient(unc.transpose_apply(w), unc.q)
    s = np.bincount(unc.group_index, weights=a * unc.gamma, minlength=unc.n_groups)
    term = s @ apply_factors(unc, U)
    if multipliers is not None and multipliers.shape == U.shape and np.all(np.isfinite(multipliers)):
        # the projection makes z_g / s_g a point of the unit p-ball whatever the solver's accuracy
        Z = np.divide(multipliers, s[:, None], out=np.zeros_like(U), where=s[:, None] > 0)
        Z = project_pball(Z, 1.0, unc.p)
        alt = s @ apply_factors(unc, Z)
        if np.sum((v0 - alt) ** 2) < np.sum((v0 - term) ** 2):
            U, term = Z, alt
    if optimise_u and unc.factors.size <= 2e7:  # O(k n^2) per iteration (k n for diagonal factors)
        U = best_u(v0, s, unc, U)
        term = s @ apply_factors(unc, U)
    return term


def cone_multipliers(duals, q) -> np.ndarray | None:
    """The rows ``z_g`` (shape (k, n)) of the dual point carried by a conic solver's multipliers of the robust cones
    ``t_g >= ||A_g^T w||_q`` (:func:`~rsvm_conic.formulations.robust.robust_cone_constraints`), None if the solver
    returned no dual values.

    Stationarity in ``w`` of the Lagrangian gives ``w = sum_i alpha_i y_i x_i - sum_g A_g z_g`` with ``z_g`` the
    difference of the multipliers of ``+-A_g^T w`` (q in {1, inf}) or minus the vector part of the SOC multiplier;
    stationarity in ``t_g`` (and ``v_g``) bounds ``||z_g||_p`` by ``sigma_g = sum_{i in g} alpha_i gamma_i``.  So
    ``z_g / sigma_g`` is a point of the unit p-ball (up to the solver's tolerance; the certificate projects it).
    Where ``A_g^T w`` has zero (q = 1) or tied (q = inf) entries, or is 0, the maximiser of ``<u, A_g^T w>`` is not
    unique and these multipliers say which one the optimum uses.

    Parameters
    ----------
    duals : list
        The dual values of the cone constraints, in their order: the SOC's ``(scalar part, vector part)`` for q = 2;
        those of ``A_g^T w <= .`` and ``-A_g^T w <= .`` for q in {1, inf} (None where the solver gave none).
    q : {1, 2, inf}
        The dual norm.

    Returns
    -------
    ndarray of shape (k, n) or None
    """
    if q == 2.0:
        dual = duals[0]
        return None if dual is None else -np.asarray(dual[1], dtype=float).T
    plus, minus = duals[0], duals[1]
    if plus is None or minus is None:
        return None
    return (np.asarray(plus, dtype=float) - np.asarray(minus, dtype=float)).T


def certify_point(route: str, primal: float, dual_value, tol: float, **kwargs) -> SolveInfo:
    """The certificate of a linear SVM's point with objective ``primal``: against ``dual_value(False)`` (the robust
    term's ``u`` at the maximiser of ``u'A_g'w`` or the solver's multipliers) and, where that misses ``tol``, once more
    against the larger of it and ``dual_value(True)`` (``u`` optimised: the maximiser may be the wrong one).

    Parameters
    ----------
    route : str
        The route's name.
    primal : float
        ``P(w, b)``.
    dual_value : callable or None
        ``dual_value(optimise_u) -> D``; None: no dual point (uncertified).
    tol : float
        The relative tolerance.
    **kwargs
        Passed to :func:`~rsvm_conic.certify.contract.certify` (``floor``, ``time``, ``iterations``, ``detail``).

    Returns
    -------
    SolveInfo
    """
    dual = -np.inf if dual_value is None else dual_value(False)
    info = certify(route, primal, dual, tol, **kwargs)
    if dual_value is not None and not info.certified:
        info = certify(route, primal, max(dual, dual_value(True)), tol, **kwargs)
    return info


def hard_margin_scale(X, y, w, b, unc) -> float:
    """The factor ``t`` that scales every robust margin ``y_i (<w, x_i> + b) - gamma_i ||A_g' w||_q`` (positively
    homogeneous in ``(w, b)``) to ``>= 1`` beyond its rounding, when all are positive; else 1.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        Samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    w : ndarray of shape (n,)
        The primal weights (nonzero).
    b : float
        The bias.
    unc : ResolvedUncertainty or None
        The uncertainty at the current radius.

    Returns
    -------
    float
    """
    m = y * (X @ w + b)
    if unc is not None and unc.radius != 0:
        norms = dual_norm_values(unc.transpose_apply(w), unc.q)
        m = m - unc.gamma * norms[unc.group_index]
    err = X.shape[1] * np.finfo(float).eps * float(np.max(np.abs(X) @ np.abs(w)) + abs(b))
    rho = float(np.min(m)) - 2.0 * err
    return (1.0 + 1e-12) / rho if rho > 0.0 else 1.0


def rounding_floor(sums, C_max: float, L: int, b: float) -> float:
    """Size of the round-off in a certified gap.

    In the dual value ``sum(a) - 1/2 ||v||^2`` (``v = X'(a y)``, off by at most eps ``|X|'a`` entrywise), and in the
    primal's hinge terms (each margin off by eps ``(|x_i|'|w| + |b|)``, weighted by C).

    Parameters
    ----------
    sums : tuple
        ``(sum(a), v, |X|'a, sum_i |x_i|'|w|)`` (:meth:`~rsvm_conic.solvers.samples.InMemory.rounding_sums`).
    C_max : float
        The largest box bound ``C s_i``.
    L : int
        Number of samples.
    b : float
        The bias.

    Returns
    -------
    float
    """
    s, v, av, m = sums
    eps = np.finfo(float).eps
    return float(eps * (s + 2.0 * np.linalg.norm(v) * np.linalg.norm(av) + C_max * (m + L * abs(b))))


def uncertified_error(info, tol: float, floor: float | None, C: float, X) -> SolverError:
    """The SolverError of a point whose certified gap misses ``tol`` (carrying the certificate as ``.certificate``).

    Where the gap is within 100 times the rounding ``floor`` (:func:`rounding_floor`), the message says so and how
    to get a certifiable problem.

    Parameters
    ----------
    info : SolveInfo
        The certificate (its ``detail["solver_status"]`` is quoted).
    tol : float
        The relative tolerance it missed.
    floor : float or None
        The rounding floor of the gap (None: no dual point).
    C : float
        The hinge weight.
    X : array of shape (L, n)
        The samples (their largest entry is quoted).

    Returns
    -------
    SolverError
    """
    msg = (
        f"{info.route} returned a point with certified relative gap {info.gap_rel:.2e} > {tol:g} "
        f"(solver status {info.detail['solver_status']!r})"
    )
    if floor is not None and info.gap_abs <= 100.0 * floor:
        msg += (
            f"; that gap is at the rounding level of double precision for C = {C:g} with features "
            f"up to {float(np.max(np.abs(X))):.3g} in magnitude (the dual value cancels multipliers "
            "of size C, and C multiplies the margins' rounding): lower C (scaling X by s is scaling C by "
            "s^2; the hard-margin limit is usually reached at a far smaller C)"
        )
    err = SolverError(msg)
    err.certificate = info
    return err


def lp_like_hint(C: float, lp_like: float, scs_max: float) -> str:
    """What to do when no route certifies a linear SVM whose hinge term outweighs ``||w||^2 / 2`` ("" when it does
    not: ``C max_i ||x_i||^2 <= 1e6``).

    Parameters
    ----------
    C : float
        The hinge weight.
    lp_like : float
        ``C max_i ||x_i||^2`` (scaling X by s is scaling C by s^2).
    scs_max : float
        The value above which the automatic chain skips SCS.

    Returns
    -------
    str
    """
    if lp_like <= 1e6:
        return ""
    skips = (
        f", and the automatic chain skips SCS above C max||x_i||^2 = {scs_max:g} (a first-order method: minutes "
        "without a certificate there)"
    )
    return (
        f"At C = {C:g} (C max||x_i||^2 = {lp_like:.2g}) the hinge term outweighs ||w||^2/2 by that factor: unless the "
        "data separate, the problem is close to a linear programme whose interior-point solves lose the accuracy to "
        f"certify before they converge{skips if lp_like > scs_max else ''}. Lower C (scaling X by s is scaling C by "
        "s^2), or choose solver='scs' explicitly."
    )


def tightened(backend: str, tol: float, options: dict, certificate):
    """The solver options of a route's one retry after an uncertified result, or None when the caller set them.

    Parameters
    ----------
    backend : {"clarabel", "scs", "ipm"}
        The route.
    tol : float
        The certificate's relative tolerance.
    options : dict
        The caller's options.
    certificate : SolveInfo or None
        The failed attempt's certificate: its objective scales the gap tolerances (the solvers' gap tests are
        relative to ``max(1, |objective|)``, absolute below 1).

    Returns
    -------
    dict or None
        ``options`` with :data:`TIGHT`'s tolerances.
    """
    tight = dict(TIGHT[backend])
    if any(k in options for k in tight):
        return None
    if backend != "scs" and certificate is not None and np.isfinite(certificate.primal):
        scale = max(abs(certificate.primal), certificate.floor)
        for key in ("tol_gap_abs", "tol_gap_rel"):
            tight[key] = min(tight[key], 1e-2 * tol * scale)
    return {**options, **tight}


def optimal_intercept(scores: np.ndarray, y: np.ndarray, b0: float = 0.0, weights=None) -> float:
    """``argmin_b sum_i s_i max(0, 1 - y_i (scores_i + b))``, exactly.

    A convex piecewise-linear function of ``b``: the minimum is attained at a breakpoint ``b = y_i - scores_i``
    where the slope ``-sum_{active} y_i`` changes sign (:func:`~rsvm_conic.certify.hinge.hinge_min`); ``b0`` is
    kept when it is already optimal.

    Parameters
    ----------
    scores : ndarray of shape (L,)
        ``<w, x_i>``.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    b0 : float, default=0.0
        The solver's intercept.
    weights : ndarray of shape (L,) or None, default=None
        The weights ``s_i`` (None: all 1).

    Returns
    -------
    float
    """
    b_star = hinge_min(1.0 - y * scores, y, weights)[1]  # breakpoints y_i - scores_i; the first with slope >= 0
    s = np.ones_like(y) if weights is None else weights

    def f(b):
        return float(s @ np.maximum(0.0, 1.0 - y * (scores + b)))

    return b0 if f(b0) <= f(b_star) else b_star
