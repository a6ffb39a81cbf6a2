"""What the linear SVM builders (nominal, robust, chance-constrained) share.

All three minimise, over (w, b),

    P(w, b) = 1/2 ||w||^2 + C sum_i max{0, 1 - y_i (<w, x_i> + b) + gamma_i ||A_{g(i)}^T w||_q}

(file 000 eq. 4/5 with lam = 1/C: ``lam/2 ||w||^2 + sum xi = P / C``); they differ
in where gamma_i comes from (0, a radius, or a chance-constraint factor kappa).
So they share the numpy objective, the decision function and the stochastic
backends.
"""

from __future__ import annotations

import time

import numpy as np

from .._validation import check_binary_labels, check_positive, check_X
from ..solvers.datafits import RobustHinge
from ..solvers.stochastic import stochastic_proximal, stochastic_subgradient
from ..uncertainty.sets import ResolvedUncertainty
from .base import Formulation, Solution


def validate_xy(X, y):
    """Return X (float), y in {-1, +1} and the original classes."""
    X = check_X(X)
    y_pm, classes = check_binary_labels(y, X.shape[0])
    return X, y_pm, classes


class LinearSVMFormulation(Formulation):
    """Base for linear SVM formulations whose loss is the robust hinge."""

    #: the name of the parameter that scales gamma_i (``radius`` or ``kappa``); None: nominal
    gamma_param: str | None = None

    def __init__(self, X, y, C: float):
        X = check_X(X)
        y = np.asarray(y, dtype=float)
        if y.shape != (X.shape[0],) or not np.all(np.isin(y, (-1.0, 1.0))):
            raise ValueError("y must be a vector of -1/+1 labels with one entry per row of X "
                             "(use validate_xy to convert arbitrary binary labels).")
        self.X, self.y = X, y
        self.C0 = check_positive(C, "C")
        self.uncertainty: ResolvedUncertainty | None = None

    def _set_param(self, key, value):
        if key == "C":
            value = check_positive(value, "C")
        elif key in ("radius", "kappa"):
            value = check_positive(value, key, strict=False)
        super()._set_param(key, value)

    # ------------------------------------------------------------------ evaluation
    @property
    def C(self) -> float:
        return float(self.parameters["C"].value)

    def current_uncertainty(self) -> ResolvedUncertainty | None:
        """The resolved uncertainty with gamma scaled by the current parameter value."""
        if self.uncertainty is None or self.gamma_param is None:
            return None
        u = self.uncertainty
        return ResolvedUncertainty(u.factors, u.diagonal, u.group_index, u.p, u.q,
                                   float(self.parameters[self.gamma_param].value), u.scale)

    def datafit(self) -> RobustHinge:
        return RobustHinge(self.X, self.y, self.current_uncertainty())

    def objective_wb(self, w, b) -> float:
        """P(w, b) = 1/2 ||w||^2 + C * sum of robust hinge losses (pure numpy)."""
        w = np.asarray(w, dtype=float)
        return 0.5 * float(w @ w) + self.C * self.datafit().value(w, b)

    def objective(self, solution: Solution) -> float:
        return self.objective_wb(solution["w"], solution["b"])

    def decision_function(self, solution: Solution, X) -> np.ndarray:
        return check_X(X, n_features=self.X.shape[1]) @ solution["w"] + solution["b"]

    def _extract(self) -> dict:
        return {"w": np.asarray(self.variables["w"].value, dtype=float).ravel(),
                "b": float(self.variables["b"].value)}

    # ------------------------------------------------------------------ stochastic backends
    def _stochastic(self, method, name, **options) -> Solution:
        L = self.X.shape[0]
        lam = 1.0 / (self.C * L)
        fit = self.datafit()
        t0 = time.perf_counter()
        res = method(fit, lam, **self._stochastic_options(fit, lam, method, options))
        sol = Solution(backend=name, status="converged" if res.converged else "max_epochs",
                       objective=float("nan"), time=time.perf_counter() - t0, values={"w": res.w, "b": res.b},
                       info={"epochs": res.epochs, "eta0": res.eta0, "history": res.history})
        sol.objective = self.objective(sol)
        return sol

    def _stochastic_options(self, fit, lam, method, options: dict) -> dict:
        """Hook: a subclass may adjust the solver options for its data fit (e.g. the initial step)."""
        return options

    def _solve_sgd(self, **options) -> Solution:
        """Minibatch stochastic subgradient (see :mod:`rsvm_conic.solvers.stochastic`)."""
        return self._stochastic(stochastic_subgradient, "sgd", **options)

    def _solve_prox(self, **options) -> Solution:
        """Stochastic proximal gradient (see :mod:`rsvm_conic.solvers.stochastic`)."""
        return self._stochastic(stochastic_proximal, "prox", **options)
