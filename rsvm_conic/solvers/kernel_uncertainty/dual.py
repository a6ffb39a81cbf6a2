"""Problem (15) of [BBBB10] at one ``(C, kappa)`` on arrays: products, feasibility, bias, certificates, polishing.

``Q = Y K_bar Y``; the feasible set is ``S = {0 <= alpha <= box, y'alpha = 0}`` with ``box = C`` or ``C s_i``
(sample weights).  :class:`KernelProducts` gives ``Q a`` from ``K_bar`` (rows of the support only for a sparse
``a``); :class:`KernelDual` is the part every route shares (the feasible point, the certificate record, polishing
a point whose gap misses the tolerance), :class:`QPDual` the SVM dual on the modified kernel ``K_bar + kappa
diag(rho)`` (RSVM_QP, [BBBB10, Thm 4]) and :class:`SOCPDual` problem (16') with ``beta_hat`` (RSVM_SOCP, [BBBB10,
Thm 6]), :class:`QNDual` problem (15) with the original ``beta`` (RSVM_QN, certified through a convex
relaxation).  :func:`paper_bias` is the bias of [BBBB10, Sec. 3].
"""

from __future__ import annotations

import numpy as np

from ...certify.contract import SolveInfo, certify
from ...certify.kernel import frank_wolfe_gap, lagrangian_lower_bound
from ...certify.projections import project_dual_set
from ...exceptions import SolverError
from ..rsvm_socp import RobustKernelObjective, ipm_certificate, solve_rsvm_socp
from ..svm_dual import libsvm_dual
from ..svm_polish import polish_svm_dual

__all__ = [
    "KernelDual",
    "KernelProducts",
    "ModifiedKernel",
    "QNDual",
    "QPDual",
    "SOCPDual",
    "constraint_violation",
    "nominal_alpha",
    "paper_bias",
    "relaxation_matrix",
]


class KernelProducts:
    """Products with ``Q = Y K_bar Y`` (``Q`` itself is not formed) and the rounding bound of the margins.

    Parameters
    ----------
    K_bar : ndarray of shape (n, n)
        Mean kernel matrix (symmetric PSD, trusted).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    """

    def __init__(self, K_bar, y):
        self.K_bar, self.y = K_bar, y
        self.n = K_bar.shape[0]
        self._memo = []
        self._kmax = None

    def Qa(self, a) -> np.ndarray:
        """``Q @ a`` through the rows of the support only when ``a`` is sparse (``K_bar`` is symmetric:
        contiguous rows read ``m n`` entries, a column gather touches every row).  The last two products are
        kept: ``t`` and the certificate of one point both need it."""
        for key, value in self._memo:
            if key.shape == a.shape and np.array_equal(key, a):
                return value
        nz = np.flatnonzero(a)
        if nz.size >= 0.5 * self.n:
            Qa = self.y * (self.K_bar @ (self.y * a))
        else:
            Qa = self.y * ((self.y[nz] * a[nz]) @ self.K_bar[nz])
        self._memo = [(np.array(a, dtype=float, copy=True), Qa)] + self._memo[:1]  # the last two points
        return Qa

    def margin_err(self, a, g) -> float:
        """A bound on the rounding of the margins ``g + 1`` (sums over the support of terms at most
        ``max |K_bar| a_j``, plus the diagonal terms in ``g``) for
        :func:`~rsvm_conic.certify.kernel.lagrangian_lower_bound`."""
        if self._kmax is None:
            self._kmax = float(np.max(np.abs(np.diag(self.K_bar))))  # |K_ij| <= max_i K_ii (PSD)
        nz = np.count_nonzero(a)
        return max(nz, 1) * float(np.finfo(float).eps) * (self._kmax * float(a.sum()) + float(np.max(np.abs(g + 1))))


def paper_bias(alpha, y, K_bar, C, sv_tol=1e-6, mode="paper", weights=None):
    """Bias of [BBBB10, Sec. 3] (``mode="paper"``: all SVs) or over free SVs (``mode="free"``).

    Parameters
    ----------
    alpha : ndarray of shape (n,)
        A feasible dual point.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    K_bar : ndarray of shape (n, n)
        Mean kernel matrix.
    C : float
        Box constraint.
    sv_tol : float, default=1e-6
        A support vector is ``alpha_i > sv_tol C``.
    mode : {"paper", "free"}, default="paper"
        Average over all SVs, or over the free ones (with none free: the midpoint of the KKT interval).
    weights : ndarray of shape (n,) or None, default=None
        Sample weights ``s`` (the box ``0 <= alpha_i <= C s_i``): the average is weighted by them, as a point of
        weight 2 counts as its two copies do in the fit on the repeated kernel.

    Returns
    -------
    float
    """
    sv = alpha > sv_tol * C
    if not sv.any():
        return 0.0
    at = sv
    if mode == "free":
        free = sv & (alpha < (1 - sv_tol) * (C if weights is None else C * weights))
        if free.any():
            at = free
        else:  # every SV at its bound: b is any point of the KKT interval; libsvm takes its midpoint
            return _kkt_midpoint_bias(alpha, y, K_bar, C, sv_tol)
    f = K_bar[np.ix_(at, sv)] @ (alpha[sv] * y[sv])  # sum over all SVs i, evaluated at the points j in `at`
    return float(np.average(y[at] - f, weights=None if weights is None else weights[at]))


def _kkt_midpoint_bias(alpha, y, K_bar, C, sv_tol):
    """Midpoint of the interval of ``b`` allowed by the KKT conditions when no SV is free.

    With ``r_i = y_i - g_i``, ``g = K_bar (y * alpha)``: ``b >= r_i`` for ``(y_i = +1, alpha_i = 0)``
    and ``(y_i = -1, alpha_i = C)``; ``b <= r_i`` for ``(y_i = +1, alpha_i = C)`` and
    ``(y_i = -1, alpha_i = 0)`` (libsvm's rule; a missing side takes the other bound).
    """
    sv = alpha > sv_tol * C
    r = y - K_bar[:, sv] @ (alpha[sv] * y[sv])
    at_c = sv
    low = ((y > 0) & ~at_c) | ((y < 0) & at_c)
    lo = float(np.max(r[low])) if low.any() else None
    hi = float(np.min(r[~low])) if (~low).any() else None
    if lo is None or hi is None:
        return lo if hi is None else hi
    return 0.5 * (lo + hi)


def constraint_violation(alpha, y, box) -> float:
    """``max(|y'alpha|, max(alpha - box, 0), max(-alpha, 0))``: how far ``alpha`` is from ``S``.

    Parameters
    ----------
    alpha, y : ndarray of shape (n,)
        A point and the labels in {-1, +1}.
    box : float or ndarray of shape (n,)
        Upper bounds of ``alpha``.

    Returns
    -------
    float
    """
    a = np.asarray(alpha, dtype=float)
    return max(abs(float(y @ a)), float(np.max(np.maximum(a - box, 0))), float(np.max(np.maximum(-a, 0))))


def nominal_alpha(K_bar, y, box, tol, polish=False) -> np.ndarray:
    """The nominal SVM dual solution on ``K_bar`` by libsvm.

    Parameters
    ----------
    K_bar : ndarray of shape (n, n)
        Mean kernel matrix (PSD).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    box : float or ndarray of shape (n,)
        Upper bounds of ``alpha``.
    tol : float
        Relative gap the polish aims at.
    polish : bool, default=False
        Newton-polish libsvm's point in double precision (libsvm's kernel cache is single precision).

    Returns
    -------
    ndarray of shape (n,)
    """
    a, _ = libsvm_dual(K_bar, y, box)
    if polish:
        p = polish_svm_dual(K_bar, y, box, project_dual_set(a, y, box), tol, check_input=False)
        if p is not None:
            a = p[0]
    return a


def relaxation_matrix(beta):
    """``(M, theta)``: the convex relaxation of RSVM_QN's ``beta`` whose (16') bounds (15) from below.

    ``M(theta) = theta beta + (1 - theta) diag(beta)`` is elementwise nonnegative and ``<= beta``; the largest
    ``theta`` in ``[0, 1]`` with ``M`` PSD is ``1 / |lambda_min(D^-1/2 (beta - D) D^-1/2)|`` (``D = diag(beta)``;
    rows with ``beta_ii = 0`` keep only their zero diagonal); ``theta = 1`` when ``beta`` is PSD.

    Parameters
    ----------
    beta : ndarray of shape (n, n)
        Symmetric, elementwise nonnegative.

    Returns
    -------
    M : ndarray of shape (n, n)
    theta : float
    """
    d = np.diag(beta).copy()
    pos = d > 0
    M = np.zeros_like(beta)
    theta = 0.0
    if pos.any():
        idx = np.flatnonzero(pos)
        sq = 1.0 / np.sqrt(d[idx])
        N = sq[:, None] * beta[np.ix_(idx, idx)] * sq[None, :]
        N[np.diag_indices_from(N)] = 0.0
        lam_min = float(np.linalg.eigvalsh(N)[0])
        theta = 1.0 if lam_min >= -1.0 else (1.0 - 1e-9) / -lam_min
        M[np.ix_(idx, idx)] = theta * beta[np.ix_(idx, idx)]
        M[idx, idx] = d[idx]
    return M, theta


class ModifiedKernel:
    """RSVM_QP's kernel ``K_bar + kappa diag(rho)`` ([BBBB10, Thm 4]): one copy of ``K_bar`` whose diagonal a new
    ``kappa`` rewrites.

    Parameters
    ----------
    K_bar : ndarray of shape (n, n)
        Mean kernel matrix (trusted).
    """

    def __init__(self, K_bar):
        self.K_bar, self._K, self._kappa = K_bar, None, None

    def at(self, kappa: float, kappa_rho) -> np.ndarray:
        """The kernel at ``kappa``.

        Parameters
        ----------
        kappa : float
            Chance-constraint factor (the cache key).
        kappa_rho : ndarray of shape (n,) or None
            ``kappa rho`` (None at ``kappa = 0``).

        Returns
        -------
        ndarray of shape (n, n)
            The cached matrix (not a copy).
        """
        if self._K is None:
            self._K = self.K_bar.copy()
        if self._kappa != kappa:
            idx = np.diag_indices(self.K_bar.shape[0])
            self._K[idx] = self.K_bar[idx] if kappa_rho is None else self.K_bar[idx] + kappa_rho
            self._kappa = kappa
        return self._K


class KernelDual:
    """Problem (15) at one ``(C, kappa)``: what every route shares.

    Parameters
    ----------
    products : KernelProducts
        Products with ``Q`` (their memo is shared across solves).
    box : float or ndarray of shape (n,)
        Upper bounds of ``alpha``.
    box_total : float
        ``sum_i box_i``: the scale of ``y'alpha``'s rounding.
    cert_tol : float
        Relative gap a certificate must meet.
    """

    def __init__(self, products: KernelProducts, box, box_total: float, cert_tol: float):
        self.products, self.y = products, products.y
        self.box, self.box_total, self.cert_tol = box, box_total, cert_tol

    def feasible(self, alpha) -> np.ndarray:
        """``alpha`` clipped to the box and, if ``y'alpha`` is off by more than round-off, projected onto ``S``."""
        a = np.clip(np.asarray(alpha, dtype=float), 0.0, self.box)
        if abs(float(self.y @ a)) > 1e-12 * self.box_total:  # e.g. an interior-point solution: make it feasible
            a = project_dual_set(a, self.y, self.box)
        return a

    def certify(self, route, primal, dual, detail) -> SolveInfo:
        """The certificate record: ``detail`` without None entries and ``nu``, its ``iterations`` as the record's."""
        detail = {k: v for k, v in detail.items() if v is not None and k != "nu"}
        iterations = detail.pop("iterations", None)
        return certify(route, primal, dual, self.cert_tol, iterations=iterations, detail=detail)

    def lagrangian_bound(self, F, g, a) -> float:
        """:func:`~rsvm_conic.certify.kernel.lagrangian_lower_bound` of a convex QP with value ``F`` and gradient
        ``g`` at the feasible ``a``."""
        return lagrangian_lower_bound(F, g, a, self.y, self.box, self.products.margin_err(a, g))

    def certificate(self, alpha, route: str, **detail) -> SolveInfo:  # pragma: no cover - overridden
        raise NotImplementedError

    def polish(self, alpha):
        """A point polished from ``alpha`` by Newton steps, or None (no polishing for this problem)."""
        return None

    def polished(self, alpha, cert, route, **detail):
        """``(alpha, cert)``, or, if ``cert`` misses ``cert_tol`` and :meth:`polish` from ``alpha`` certifies a
        smaller gap, the polished feasible point and its certificate."""
        if cert.status == "optimal":
            return alpha, cert
        p = self.polish(alpha)
        if p is None:
            return alpha, cert
        a_p = self.feasible(p)
        by = {"solver_gap_rel": cert.gap_rel, "by": "projected Newton"}
        cert_p = self.certificate(a_p, route, polished=by, **detail)
        return (a_p, cert_p) if cert_p.gap_rel < cert.gap_rel else (alpha, cert)


class QPDual(KernelDual):
    """RSVM_QP ([BBBB10, Thm 4]): the SVM dual with kernel ``K_bar + kappa diag(rho)``.

    Parameters
    ----------
    products, box, box_total, cert_tol
        As for :class:`KernelDual`.
    kappa_rho : ndarray of shape (n,) or None
        ``kappa rho`` (None at ``kappa = 0``).
    modified_kernel : callable
        Returns ``K_bar + kappa diag(rho)`` (called only to polish).
    """

    def __init__(self, products, box, box_total, cert_tol, kappa_rho, modified_kernel):
        super().__init__(products, box, box_total, cert_tol)
        self.kappa_rho, self.modified_kernel = kappa_rho, modified_kernel

    def certificate(self, alpha, route: str, **detail) -> SolveInfo:
        """SVM duality gap on the modified kernel ``K_bar + kappa diag(rho)``.

        ``F(alpha) = 1/2 a'Q~a - e'a`` (``Q~ = Y (K_bar + kappa diag(rho)) Y``) at the feasible ``alpha`` is an
        upper bound on the optimum; :func:`~rsvm_conic.certify.kernel.lagrangian_lower_bound` (SVM primal
        ``1/2 a'Q~a + C sum xi`` with the best bias, and the Frank-Wolfe bound) a lower bound.  Valid because
        ``K_bar`` is PSD.
        """
        a = np.asarray(alpha, dtype=float)
        kr = self.kappa_rho
        g = self.products.Qa(a) - 1.0 if kr is None else self.products.Qa(a) + kr * a - 1.0
        F = 0.5 * float(a @ (g - 1.0))
        return self.certify(route, F, self.lagrangian_bound(F, g, a), detail)

    def polish(self, alpha):
        """Active-set Newton steps on the QP (:func:`~rsvm_conic.solvers.svm_polish.polish_svm_dual`)."""
        box = self.box
        p = polish_svm_dual(
            self.modified_kernel(), self.y, box, np.clip(alpha, 0.0, box), self.cert_tol, check_input=False
        )
        return None if p is None else p[0]


class SOCPDual(KernelDual):
    """RSVM_SOCP ([BBBB10, Thm 6], eq. 16') with ``beta_hat``.

    Parameters
    ----------
    products, box, box_total, cert_tol
        As for :class:`KernelDual`.
    objective : RobustKernelObjective
        ``F(alpha)`` at this ``kappa`` (:class:`~rsvm_conic.solvers.rsvm_socp.RobustKernelObjective`).
    """

    def __init__(self, products, box, box_total, cert_tol, objective: RobustKernelObjective):
        super().__init__(products, box, box_total, cert_tol)
        self.objective = objective
        self.kappa = objective.kappa

    def certificate(self, alpha, route: str, nu=None, **detail) -> SolveInfo:
        """Lagrangian bound for (16') at a feasible ``alpha`` (and optionally the solver's ``nu``).

        Primal: ``F(alpha) = Phi(alpha, alpha**2)``, the objective of (16') (and of (15) with ``beta_hat``) at a
        feasible point.  Dual: for ``lam = kappa/2 beta_hat nu / ||B nu||`` (``nu = alpha**2`` or the solver's
        ``nu >= alpha**2``), if ``lam >= 0`` the Lagrangian of ``alpha_i^2 <= nu_i`` gives ``OPT(16') >= min_{a in
        S} 1/2 a'(Q + 2 diag(lam))a - e'a`` (the minimum over ``nu`` of ``kappa/2 ||B nu|| - lam'nu`` is 0), a
        convex QP bounded by :func:`~rsvm_conic.certify.kernel.lagrangian_lower_bound` at ``alpha``.  Where
        ``lam`` has clearly negative entries (``beta_hat`` with negative entries) that candidate gives no bound.
        """
        a = np.asarray(alpha, dtype=float)
        F, Qa, _, _ = self.objective.evaluate(a)
        lower = -np.inf
        cands = [a * a] if nu is None else [a * a, np.maximum(np.asarray(nu, dtype=float), a * a)]
        lam_mins = []
        for nu_c in cands:
            lam = self.objective.multipliers(nu_c)
            lam_min = float(lam.min())
            lam_mins.append(lam_min)
            if lam_min < -1e-12 * max(float(np.abs(lam).max()), 1e-300):
                continue
            lam = np.maximum(lam, 0.0)
            q = 0.5 * float(a @ Qa) + float(lam @ (a * a)) - float(a.sum())
            g = Qa + 2.0 * lam * a - 1.0
            lower = max(lower, self.lagrangian_bound(q, g, a))
        detail["lambda_min"] = min(lam_mins)
        return self.certify(route, F, lower, detail)

    def with_ipm_dual(self, cert, route, ipm_info, detail) -> SolveInfo:
        """``cert``, or where it misses ``cert_tol`` and the cone IPM converged, the bound from the IPM's dual value
        (a bound on OPT(16'), its dual point feasible to 1e-8), if larger."""
        if cert.status == "optimal" or ipm_info["status"] != "optimal":
            return cert
        d = ipm_certificate(route, ipm_info, self.cert_tol).dual
        if d <= cert.dual:
            return cert
        return self.certify(route, cert.primal, d, dict(detail, dual_from="cone IPM"))

    def polish(self, alpha):
        """At most 30 projected Newton steps on ``F`` without the cone-IPM fallback
        (:func:`~rsvm_conic.solvers.rsvm_socp.solve_rsvm_socp`); None where they fail."""
        box = self.box
        a0 = project_dual_set(np.clip(np.asarray(alpha, dtype=float), 0.0, box), self.y, box)
        try:
            res = solve_rsvm_socp(
                None, None, self.y, box, self.kappa, a0, tol=0.01 * self.cert_tol, max_iter=30, fallback=False,
                objective=self.objective,
            )  # fmt: skip
        except (SolverError, np.linalg.LinAlgError):
            return None
        return res.alpha


class QNDual(KernelDual):
    """RSVM_QN ([BBBB10, eq. 17]): problem (15) with the original ``beta``, certified by a convex problem below it.

    (15) is non-convex in general, so the bound comes from a convex problem below it: for ``M`` PSD with ``M <=
    beta`` entrywise, ``nu'M nu <= nu'beta nu`` for ``nu >= 0``, so ``OPT(16'; M) <= OPT(15; M) <= OPT(15; beta)``;
    (16') with ``M`` is solved as an RSVM_SOCP and its certified dual value is the bound (``relaxation``, see
    :class:`~rsvm_conic.solvers.kernel_uncertainty.routes.Relaxation`).  With ``kappa * beta = 0`` the problem is the
    nominal SVM dual: SVM duality gap.

    Parameters
    ----------
    products, box, box_total, cert_tol
        As for :class:`KernelDual`.
    objective : RobustKernelObjective
        ``F(alpha)`` with the original ``beta`` at this ``kappa``.
    relaxation : callable or None
        ``relaxation() -> (lower, description, alpha)``: the relaxation's bound; None when ``kappa * beta = 0``.
    """

    def __init__(self, products, box, box_total, cert_tol, objective: RobustKernelObjective, relaxation=None):
        super().__init__(products, box, box_total, cert_tol)
        self.objective, self.relaxation = objective, relaxation

    def certificate(self, alpha, route: str, **detail) -> SolveInfo:
        """Primal: ``F(alpha)`` of (15) with the original ``beta`` at the feasible ``alpha``; dual: the relaxation's
        bound (the Lagrangian bound of the nominal SVM dual when ``relaxation`` is None).
        ``detail["stationarity_gap"]``: the Frank-Wolfe gap of ``F`` at ``alpha`` (a first-order, local measure only).

        Parameters
        ----------
        alpha : ndarray of shape (n,)
            A feasible point.
        route : str
            The certificate's route name.
        **detail
            Recorded in the certificate.

        Returns
        -------
        SolveInfo
        """
        a = np.asarray(alpha, dtype=float)
        F, g = self.objective.value_and_gradient(a)
        detail["stationarity_gap"] = frank_wolfe_gap(g, a, self.y, self.box)
        if self.relaxation is None:
            lower = self.lagrangian_bound(F, g, a)
        else:
            lower, detail["dual_from"], _ = self.relaxation()
        return self.certify(route, F, lower, detail)
