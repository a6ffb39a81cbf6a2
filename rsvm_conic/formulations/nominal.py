"""Nominal soft-margin linear SVM (file 000, eq. 1).

    minimise    1/2 ||w||^2 + C sum_i max{0, 1 - y_i (<w, x_i> + b)}

(eq. 1 writes ``lam/2 ||w||^2 + sum xi`` with lam = 1/C; same minimiser, objective
scaled by C).  Backends: Clarabel, SCS, the stochastic solvers, and ``libsvm``
(scikit-learn's ``SVC(kernel="linear")``, the fastest exact path).
"""

from __future__ import annotations

import time

import cvxpy as cp
import numpy as np
from sklearn.svm import SVC

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

    def _solve_libsvm(self, tol: float = 1e-8, max_iter: int = -1) -> Solution:
        """libsvm through ``sklearn.svm.SVC(kernel="linear")``."""
        t0 = time.perf_counter()
        svc = SVC(kernel="linear", C=self.C, tol=tol, max_iter=max_iter)
        svc.fit(self.X, self.y)  # classes_ = [-1, 1], so the decision function is w.x + b
        sol = Solution(backend="libsvm", status="optimal", objective=float("nan"),
                       time=time.perf_counter() - t0,
                       values={"w": svc.coef_.ravel().copy(), "b": float(svc.intercept_[0])},
                       info={"n_support": int(svc.n_support_.sum())})
        sol.objective = self.objective(sol)
        return sol


def nominal_svm(X, y, C=1.0) -> NominalSVM:
    """Build the nominal linear SVM; ``y`` must be in {-1, +1}."""
    return NominalSVM(X, y, C)
