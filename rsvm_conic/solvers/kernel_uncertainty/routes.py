"""The routes of problem (15) of [BBBB10] that run a solver and certify its point, on arrays.

Each returns the feasible ``alpha`` (plus the cone's ``nu`` where the point has one), its certificate (a
:class:`~rsvm_conic.certify.contract.SolveInfo`) and the solver's information; the caller decides what an
uncertified result becomes (an error or a fallback) and computes the bias.
"""

from __future__ import annotations

import numpy as np

from ...certify.kernel import frank_wolfe_gap
from ...exceptions import SolverError
from ...uncertainty.kernel_matrix import psd_part
from ..quasi_newton import rsvm_qn
from ..rsvm_socp import RobustKernelObjective, rsvm_socp_ipm, solve_rsvm_socp
from ..svm_dual import libsvm_dual
from ..svm_polish import polish_svm_dual
from .dual import QNDual, QPDual, SOCPDual, constraint_violation, nominal_alpha, relaxation_matrix

__all__ = ["Relaxation", "dfp_route", "ipm_route", "libsvm_route", "newton_route", "qn_route"]


def libsvm_route(dual: QPDual, route: str, tol=1e-7, cache_size=200, shrinking=True):
    """libsvm (the solve of ``SVC(kernel="precomputed")``, :func:`~rsvm_conic.solvers.svm_dual.libsvm_dual`) on the
    modified kernel, certified by the SVM duality gap.

    libsvm caches kernel values in single precision, so its KKT conditions hold to ~1e-7 relative only (the gap
    grows with C: 5e-4 at C = 1000 on the Sec. 5.1 data, whatever its ``tol``); an uncertified run is polished in
    double precision by projected Newton steps on the same QP, warm-started from libsvm's alpha (usually one step:
    :func:`~rsvm_conic.solvers.svm_polish.polish_svm_dual`).

    Parameters
    ----------
    dual : QPDual
        The problem.
    route : str
        The certificate's route name.
    tol, cache_size, shrinking
        libsvm's options.

    Returns
    -------
    alpha : ndarray of shape (n,)
        The feasible point kept.
    cert : SolveInfo
        Its certificate.
    info : dict
        ``n_iter`` and ``intercept_libsvm``.
    """
    Kmod, y, box = dual.modified_kernel(), dual.y, dual.box
    alpha, clf = libsvm_dual(Kmod, y, box, tol=tol, cache_size=cache_size, shrinking=shrinking)
    a = dual.feasible(alpha)
    n_iter = int(np.sum(getattr(clf, "n_iter_", [0])))
    cert = dual.certificate(a, route, iterations=n_iter)
    if cert.status != "optimal":
        polished = polish_svm_dual(Kmod, y, box, a, dual.cert_tol, check_input=False)
        if polished is not None:
            a_p = dual.feasible(polished[0])
            by = {"libsvm_gap_rel": cert.gap_rel, "newton_steps": polished[1]}
            cert_p = dual.certificate(a_p, route, iterations=n_iter, polished=by)
            if cert_p.gap_rel < cert.gap_rel:
                a, cert = a_p, cert_p
    return a, cert, {"n_iter": n_iter, "intercept_libsvm": float(clf.intercept_[0])}


def newton_route(dual: SOCPDual, route: str, tol, max_iter=60, warm_start=None, svm_start=False):
    """Projected Newton on ``F`` (:func:`~rsvm_conic.solvers.rsvm_socp.solve_rsvm_socp`, the exact cone IPM of
    (16') as its own fallback), certified by :meth:`SOCPDual.certificate` (and, after the cone IPM, by the IPM's
    dual value).

    Parameters
    ----------
    dual : SOCPDual
        The problem.
    route : str
        The certificate's route name.
    tol : float
        Newton's own relative tolerance.
    max_iter : int, default=60
        Newton iterations.
    warm_start : ndarray of shape (n,) or None, default=None
        A start (e.g. the previous grid point's ``alpha``).
    svm_start : bool, default=False
        Use only the warm start's multipliers (a libsvm start; better after a change of C).

    Returns
    -------
    alpha : ndarray of shape (n,)
        The feasible point.
    nu : ndarray of shape (n,) or None
        The cone IPM's ``nu`` where it ran, else None.
    cert : SolveInfo
        The certificate.
    info : dict
        The solver's information (``route``, ``iterations``, ``solver_certificate``, ...).

    Raises
    ------
    SolverError, numpy.linalg.LinAlgError
        Where both Newton and the cone IPM fail.
    """
    res = solve_rsvm_socp(
        None, None, dual.y, dual.box, dual.kappa, warm_start, tol=tol, max_iter=max_iter, svm_start=svm_start,
        objective=dual.objective,
    )  # fmt: skip
    a = dual.feasible(res.alpha)
    nu = res.nu if res.route == "cone-ipm" else None
    info = {k: v for k, v in res.info.items() if k != "trace"}
    info.update({"route": res.route, "iterations": res.iterations, "solver_certificate": res.solve_info.as_dict()})
    detail = {"iterations": res.iterations, "inner_route": res.route}
    cert = dual.certificate(a, route, nu=nu, **detail)
    if res.route == "cone-ipm":
        cert = dual.with_ipm_dual(cert, route, res.info["ipm"], detail)
    return a, nu, cert, info


def ipm_route(dual: SOCPDual, Q, B, route: str, max_iter=100, gap_tol=None, **ipm_options):
    """The exact cone IPM on (16') (:func:`~rsvm_conic.solvers.rsvm_socp.rsvm_socp_ipm`), certified by
    :meth:`SOCPDual.certificate` with the IPM's ``nu``; where a converged IPM's point misses the tolerance, after
    projected Newton polishing, else by the IPM's dual value.

    Parameters
    ----------
    dual : SOCPDual
        The problem.
    Q : ndarray of shape (n, n)
        ``Y K_bar Y``.
    B : ndarray of shape (r, n)
        ``B'B = beta_hat``.
    route : str
        The certificate's route name.
    max_iter : int, default=100
        Interior-point iterations.
    gap_tol : float or None, default=None
        Overrides the certificate's tolerance.
    **ipm_options
        Go to :func:`~rsvm_conic.solvers.ipm.engine.cone_ipm`.

    Returns
    -------
    alpha : ndarray of shape (n,)
        The feasible point.
    nu : ndarray of shape (n,) or None
        The IPM's ``nu``; None where polishing replaced the IPM's point.
    cert : SolveInfo
        The certificate.
    info : dict
        The IPM's information plus ``fw_gap`` (the Frank-Wolfe gap at ``alpha``).

    Raises
    ------
    numpy.linalg.LinAlgError
        Where a KKT matrix is not positive definite.
    """
    a, nu, info = rsvm_socp_ipm(Q, B, dual.y, dual.box, dual.kappa, max_iter=max_iter, **ipm_options)
    detail = {"iterations": info["iterations"], "ipm_status": info["status"]}
    a = dual.feasible(a)
    cert = dual.certificate(a, route, nu=nu, **detail)
    if info["status"] == "optimal":  # a converged IPM's point, accurate to its tolerance: polish it
        a_p, cert = dual.polished(a, cert, route, **detail)
        nu = nu if a_p is a else None
        a = a_p
        cert = dual.with_ipm_dual(cert, route, info, detail)
    if gap_tol is not None:
        cert.tol = float(gap_tol)
        cert.status = "optimal" if cert.certified else "uncertified"
    info["fw_gap"] = frank_wolfe_gap(dual.objective.gradient(a), a, dual.y, dual.box)
    return a, nu, cert, info


def dfp_route(K_bar, y, beta, box, kappa, P0, starts=None, warm=None, nominal_start=True, **options):
    """RSVM_QN's penalty function (17) minimised by DFP from several starts
    (:func:`~rsvm_conic.solvers.quasi_newton.rsvm_qn`): ``starts``, then ``warm`` clipped to the box, then the
    nominal SVM solution on ``K_bar`` (libsvm), then the random ones.

    Parameters
    ----------
    K_bar, y, beta : ndarray
        Mean kernel, labels in {-1, +1}, the noise's second-moment matrix (symmetric, elementwise >= 0).
    box : float or ndarray of shape (n,)
        Upper bounds of ``alpha``.
    kappa : float
        Chance-constraint factor.
    P0 : float
        First penalty weight.
    starts : list of ndarray or None, default=None
        Starting points.
    warm : ndarray of shape (n,) or None, default=None
        A warm start (e.g. the previous solve's alpha).
    nominal_start : bool, default=True
        Start from the nominal SVM solution too.
    **options
        ``n_random``, ``P_levels``, ``P_factor``, ``gtol``, ``max_iter``, ``seed`` of
        :func:`~rsvm_conic.solvers.quasi_newton.rsvm_qn`.

    Returns
    -------
    alpha : ndarray of shape (n,)
        The best local minimum (feasible up to ``O(1/P)``).
    info : dict
        ``iterations``, ``penalty_value``, ``violation`` (:func:`constraint_violation`), ``starts``, ``converged``.
    """
    pts = list(starts or [])
    if warm is not None:
        pts.append(np.clip(warm, 0, box))
    if nominal_start:
        pts.append(nominal_alpha(K_bar, y, box, 0.0))
    res = rsvm_qn(K_bar, y, beta, box, kappa, starts=pts, P0=P0, **options)
    info = {
        "iterations": res.iterations,
        "penalty_value": res.L,
        "violation": constraint_violation(res.alpha, y, box),
        "starts": res.starts,
        "converged": res.converged,
    }
    return res.alpha, info


def qn_route(dual: QNDual, K_bar, beta, kappa, P0, name: str, starts=None, warm=None, nominal_start=True, **options):
    """RSVM_QN solved and certified: with ``kappa * beta = 0`` libsvm's exact solution of the nominal SVM dual (the
    penalty function (17) would only approximate it); otherwise :func:`dfp_route`'s point or, where its objective
    is lower, the relaxation's optimum (feasible for (15) too; with a PSD ``beta`` the exact optimum, which the
    penalty method only approximates, O(1/P)).

    Parameters
    ----------
    dual : QNDual
        The problem (its ``relaxation`` is None exactly when ``kappa * beta = 0``).
    K_bar, beta : ndarray of shape (n, n)
        Mean kernel and the noise's second-moment matrix.
    kappa : float
        Chance-constraint factor.
    P0 : callable
        ``P0() -> float``: the first penalty weight (called only when DFP runs).
    name : str
        The model's name: the certificate's route is ``name/dfp`` or ``name/libsvm``.
    starts, warm, nominal_start, **options
        Those of :func:`dfp_route`.

    Returns
    -------
    alpha : ndarray of shape (n,)
        The feasible point kept.
    alpha_raw : ndarray of shape (n,)
        DFP's point before it was made feasible (libsvm's point when reduced).
    cert : SolveInfo
        The certificate of ``alpha``.
    info : dict
        :func:`dfp_route`'s information (``reduced_to`` when reduced to the nominal SVM).
    """
    if dual.relaxation is None:
        a = nominal_alpha(K_bar, dual.y, dual.box, dual.cert_tol, True)
        reduced_to = "nominal SVM (kappa * beta = 0), solved by libsvm"
        info = {"iterations": 0, "violation": constraint_violation(a, dual.y, dual.box), "starts": 0, "converged": True}
        cert = dual.certificate(dual.feasible(a), f"{name}/libsvm", reduced_to=reduced_to)
        return dual.feasible(a), a, cert, info | {"reduced_to": reduced_to}
    raw, info = dfp_route(K_bar, dual.y, beta, dual.box, kappa, P0(), starts, warm, nominal_start, **options)
    a, extra = dual.feasible(raw), {}
    F = dual.objective.value(a)
    a_relax = dual.relaxation()[2]
    if a_relax is not None:
        a_relax = dual.feasible(a_relax)
        if dual.objective.value(a_relax) < F:
            a, extra = a_relax, {"primal_from": "relaxation", "qn_objective": F}
    detail = {"iterations": info["iterations"], "converged": info["converged"], "penalty_violation": info["violation"]}
    return a, raw, dual.certificate(a, f"{name}/dfp", **detail, **extra), info


class Relaxation:
    """RSVM_QN's lower bound: problem (16') with the convex relaxation ``M`` of ``beta``
    (:func:`~rsvm_conic.solvers.kernel_uncertainty.dual.relaxation_matrix`).

    For ``M`` PSD with ``M <= beta`` entrywise, ``nu'M nu <= nu'beta nu`` for ``nu >= 0``, so ``OPT(16'; M) <=
    OPT(15; M) <= OPT(15; beta)``: the certified dual value of (16') with ``M`` bounds (15) from below, exactly when
    ``beta`` is PSD.  ``M`` and its PSD factor depend on ``beta`` only: their eigenvalue problems are solved once.

    Parameters
    ----------
    Q : ndarray of shape (n, n)
        ``Y K_bar Y``.
    beta : ndarray of shape (n, n)
        Symmetric, elementwise nonnegative.
    """

    def __init__(self, Q, beta):
        self.M, theta = relaxation_matrix(beta)
        beta_hat, B = psd_part(self.M)
        self.objective = RobustKernelObjective(Q, beta_hat, 0.0, B)
        #: how the bound was obtained (the certificate's ``dual_from``)
        self.description = f"(16') with theta beta + (1 - theta) diag(beta), theta = {theta:.4g}"
        self._last = (None, None)  # the last (kappa, box_total) and its bound

    def bound(self, products, box, box_total: float, cert_tol: float, kappa: float, conic):
        """The best dual value of (16') with ``M`` by projected Newton (:func:`newton_route`) or, where that does not
        certify, by ``conic()``; kept for the next call at the same ``kappa`` and ``box_total`` (the box of one
        problem is ``C`` times fixed weights, so ``box_total`` says which ``C``).

        Parameters
        ----------
        products : KernelProducts
            Products with ``Q``.
        box : float or ndarray of shape (n,)
            Upper bounds of ``alpha``.
        box_total : float
            ``sum_i box_i``.
        cert_tol : float
            Relative gap a certificate must meet.
        kappa : float
            Chance-constraint factor.
        conic : callable
            ``conic() -> (alpha, certificate)``: the relaxation by a conic solver; may raise :class:`SolverError`.

        Returns
        -------
        lower : float
            The largest certified dual value found (``-inf`` if none).
        description : str
            How it was obtained.
        alpha : ndarray of shape (n,) or None
            The relaxation's point (feasible for (15) too).
        """
        if self._last[0] == (kappa, box_total):
            return self._last[1]
        dual = SOCPDual(products, box, box_total, cert_tol, self.objective.at_kappa(kappa))
        best = (-np.inf, self.description + ": no certified solve", None)
        for backend in ("newton", "clarabel"):
            try:
                if backend == "newton":
                    a, _, cert, _ = newton_route(dual, "rsvm-socp/newton", 0.01 * cert_tol)
                else:
                    a, cert = conic()
            except (SolverError, np.linalg.LinAlgError):
                continue
            if not np.all(np.isfinite(a)):
                continue
            if cert.dual > best[0]:
                best = (cert.dual, self.description + f" solved by {backend}", a)
            if cert.status == "optimal":
                break
        self._last = ((kappa, box_total), best)
        return best
