"""Solvers: the conic solve wrapper, stochastic methods, structure-exploiting interior point."""

from ..exceptions import WorkersLostError
from .conic import solve_cvxpy
from ..exceptions import SolverError, SolverWarning
from .quasi_newton import dfp_minimize, rsvm_qn
from .ipm.robust_svm import robust_svm_ipm, solve_robust_ipm
from .rsvm_socp import rsvm_socp_grid, solve_rsvm_socp
from .stochastic import stochastic_proximal, stochastic_subgradient

__all__ = [
    "SolverError",
    "SolverWarning",
    "WorkersLostError",
    "dfp_minimize",
    "robust_svm_ipm",
    "rsvm_qn",
    "rsvm_socp_grid",
    "solve_cvxpy",
    "solve_robust_ipm",
    "solve_rsvm_socp",
    "stochastic_proximal",
    "stochastic_subgradient",
]
