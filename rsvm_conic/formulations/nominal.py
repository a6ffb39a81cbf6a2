"""Nominal soft-margin linear SVM [CJ20, eq. 1].

    minimise    1/2 ||w||^2 + C sum_i max{0, 1 - y_i (<w, x_i> + b)}

(eq. 1 writes ``lam/2 ||w||^2 + sum xi`` with lam = 1/C; same minimiser, objective
scaled by C).  Backends: Clarabel, SCS, the stochastic solvers, and ``libsvm``
(scikit-learn's ``SVC(kernel="linear")``), and the structure-exploiting interior point
``ipm`` (the default route unless the data have more features than samples).
"""

from __future__ import annotations

import time

from ..solvers.svm_dual import libsvm_linear
from ._linear import EXACT_TOL, LinearProblem
from .base import Solution


class NominalProblem(LinearProblem):
    """Nominal soft-margin linear SVM (eq. 1); see the module docstring.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        Inputs.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    C : float, default=1.0
        Weight of the hinge loss against ``1/2 ||w||^2``.
    check_input : bool, default=True
        Validate ``X`` and ``y`` (False: internal callers passing trusted float arrays).
    sample_weight : ndarray of shape (L,) or None, default=None
        Positive weights ``s_i`` of the hinge terms (``C_i = C s_i``); None: all 1.  Trusted (the estimators
        validate them and drop the samples of weight 0).
    """

    name = "nominal"
    gamma_param = None
    BACKENDS = {
        "libsvm": "libsvm (scikit-learn SVC, linear kernel); certificate: duality gap",
        **LinearProblem.BACKENDS,
    }

    def __init__(self, X, y, C=1.0, *, check_input: bool = True, sample_weight=None):
        super().__init__(X, y, C, check_input=check_input, sample_weight=sample_weight)

    def _build_model(self):
        import cvxpy as cp

        L, n = self.X.shape
        w, b = cp.Variable(n, name="w"), cp.Variable(name="b")
        xi = cp.Variable(L, name="xi", nonneg=True)
        C_par = cp.Parameter(nonneg=True, name="C")
        margin = cp.multiply(self.y, self.X @ w + b) + xi >= 1
        problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + self.hinge_total(C_par, xi)), [margin])
        return problem, {"C": C_par}, {"w": w, "b": b, "xi": xi}, margin

    def auto_routes(self) -> tuple[str, ...]:
        """libsvm when the data have more features than samples (its cost grows with L, the interior point's
        with n^3), else the interior point, which is faster on most data sets with more samples than features and
        certifies more often (``rsvm-conic bench auto-routes``; figures in docs/performance.md).  Each route falls
        back to the next exact one."""
        L, n = self.X.shape
        if self.samples.in_memory and n > L:
            return ("libsvm", "ipm", "clarabel")
        return super().auto_routes()

    def _solve_libsvm(self, tol: float = 1e-8, max_iter: int | None = None, gap_tol: float = EXACT_TOL) -> Solution:
        """libsvm (:func:`~rsvm_conic.solvers.svm_dual.libsvm_linear`: ``sklearn.svm.SVC(kernel="linear")``, the
        intercept re-optimised exactly for its ``w``), certified by the duality gap of its multipliers: a relative gap
        above ``gap_tol`` raises SolverError (``solver="auto"`` then moves on to the interior point, with a warning).
        libsvm's iterations are capped (default ``max(10^5, 20 L)``) so that a badly conditioned problem (large C,
        overlapping classes) cannot run for minutes before the certified route takes over."""
        t0 = time.perf_counter()
        w, b, alpha, info = libsvm_linear(self.X, self.y, self.C, self.sample_weight, tol, max_iter)
        sol = Solution("libsvm", "optimal", float("nan"), time.perf_counter() - t0, {"w": w, "b": b}, info)
        return self._certified(sol, alpha, gap_tol)


def nominal_svm(X, y, C=1.0) -> NominalProblem:
    """Build the nominal linear SVM (eq. 1); the parameters are those of :class:`NominalProblem`.

    Parameters
    ----------
    X, y, C
        See :class:`NominalProblem`.

    Returns
    -------
    NominalProblem
    """
    return NominalProblem(X, y, C)
