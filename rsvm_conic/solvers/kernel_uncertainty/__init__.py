"""Solvers of the SVM robust to kernel-matrix uncertainty, problem (15) of [BBBB10], on arrays.

:mod:`.dual` holds problem (15) at one ``(C, kappa)`` as array operators (products with ``Q = Y K_bar Y``,
feasibility, the bias of [BBBB10, Sec. 3], the certificate of each route and its polishing); :mod:`.routes`
holds the routes that run a solver and certify its point (libsvm on the modified kernel, projected Newton,
the cone interior point, RSVM_QN's multi-start DFP).  The inner methods are :mod:`rsvm_conic.solvers.rsvm_socp`
(RSVM_SOCP's objective, projected Newton, cone IPM), :mod:`rsvm_conic.solvers.quasi_newton` (RSVM_QN's DFP) and
:mod:`rsvm_conic.solvers.svm_dual` (libsvm, polishing).  Nothing here receives a formulation.
"""

from .dual import (
    KernelDual,
    KernelProducts,
    QPDual,
    SOCPDual,
    constraint_violation,
    nominal_alpha,
    paper_bias,
    relaxation_matrix,
)
from .routes import dfp_route, ipm_route, libsvm_route, newton_route

__all__ = [
    "KernelDual",
    "KernelProducts",
    "QPDual",
    "SOCPDual",
    "constraint_violation",
    "dfp_route",
    "ipm_route",
    "libsvm_route",
    "newton_route",
    "nominal_alpha",
    "paper_bias",
    "relaxation_matrix",
]
