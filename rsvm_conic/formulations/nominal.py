"""Nominal soft-margin linear SVM (file 000, eq. 1).

    minimise    1/2 ||w||^2 + C sum_i max{0, 1 - y_i (<w, x_i> + b)}

(eq. 1 writes ``lam/2 ||w||^2 + sum xi`` with lam = 1/C; same minimiser, objective
scaled by C).  Backends: Clarabel, SCS, the stochastic solvers, and ``libsvm``
(scikit-learn's ``SVC(kernel="linear")``, the fastest exact path).
"""

from __future__ import annotations

import time
import warnings

import cvxpy as cp
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from ..solvers.conic import SolverWarning
from ._linear import LinearSVMFormulation
from .base import Solution


class NominalSVM(LinearSVMFormulation):
    name = "nominal"
    gamma_param = None

    def __init__(self, X, y, C=1.0):
        super().__init__(X, y, C)
        L, n = self.X.shape
        w, b = cp.Variable(n, name="w"), cp.Variable(name="b")
        C_par = cp.Parameter(nonneg=True, name="C", value=self.C0)
        hinge = cp.pos(1 - cp.multiply(self.y, self.X @ w + b))
        self.problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C_par * cp.sum(hinge)))
        self.parameters = {"C": C_par}
        self.variables = {"w": w, "b": b}

    def _solve_libsvm(self, tol: float = 1e-8, max_iter: int | None = None, gap_tol: float = 1e-6) -> Solution:
        """libsvm through ``sklearn.svm.SVC(kernel="linear")``, verified by its duality gap.

        libsvm's own stopping rule bounds a KKT violation, not the objective error, so the
        result is certified here: the intercept is re-optimised exactly for libsvm's w
        (a 1-D convex problem), and the relative duality gap ``(P - D) / max(1, |P|)``
        with ``D = sum(alpha) - 1/2 ||w||^2`` must be <= ``gap_tol``; otherwise the
        problem is re-solved with Clarabel and a warning says so.  libsvm's iterations are
        capped (default ``max(10^6, 100 L)``) so that a badly conditioned problem (huge C,
        overlapping classes) cannot hang: the gap check then hands it to Clarabel.
        """
        t0 = time.perf_counter()
        if max_iter is None:
            max_iter = max(1_000_000, 100 * self.X.shape[0])
        svc = SVC(kernel="linear", C=self.C, tol=tol, max_iter=max_iter)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # judged by the duality gap below
            svc.fit(self.X, self.y)  # classes_ = [-1, 1], so the decision function is w.x + b
        alpha = np.abs(svc.dual_coef_.ravel())
        w = svc.coef_.ravel().copy()
        b = optimal_intercept(self.X @ w, self.y, float(svc.intercept_[0]))
        sol = Solution(backend="libsvm", status="optimal", objective=float("nan"), time=float("nan"),
                       values={"w": w, "b": b}, info={"n_support": int(svc.n_support_.sum())})
        sol.objective = self.objective(sol)
        dual = float(np.sum(alpha) - 0.5 * w @ w)
        gap = (sol.objective - dual) / max(1.0, abs(sol.objective))
        sol.info["duality_gap"] = gap
        if gap > gap_tol:
            warnings.warn(f"libsvm stopped with relative duality gap {gap:.2e} > {gap_tol:g}; re-solving with "
                          "Clarabel.", SolverWarning, stacklevel=3)
            sol = self._solve_conic("clarabel")
            sol.info["fallback_from"] = "libsvm"
        sol.time = time.perf_counter() - t0
        return sol


def optimal_intercept(scores: np.ndarray, y: np.ndarray, b0: float = 0.0) -> float:
    """argmin_b sum_i max(0, 1 - y_i (scores_i + b)), exactly (a convex piecewise-linear function of b).

    The minimum is attained at a breakpoint ``b = y_i - scores_i`` where the slope
    ``-sum_{active} y_i`` changes sign; ``b0`` is kept when it is already optimal.
    """
    brk = np.sort(y - scores)
    # slope just right of each breakpoint: samples with y = +1 active iff b < y_i - s_i, y = -1 iff b > bp
    pos = np.sort((y - scores)[y > 0])
    neg = np.sort((y - scores)[y < 0])
    n_pos_active = pos.size - np.searchsorted(pos, brk, side="right")  # +1 samples still active right of bp
    n_neg_active = np.searchsorted(neg, brk, side="right")  # -1 samples active right of bp
    slope_right = n_neg_active - n_pos_active
    k = int(np.argmax(slope_right >= 0))  # first breakpoint where the slope becomes >= 0: a minimiser
    b_star = float(brk[k])

    def f(b):
        return float(np.sum(np.maximum(0.0, 1.0 - y * (scores + b))))

    return b0 if f(b0) <= f(b_star) else b_star


def nominal_svm(X, y, C=1.0) -> NominalSVM:
    """Build the nominal linear SVM; ``y`` must be in {-1, +1}."""
    return NominalSVM(X, y, C)
