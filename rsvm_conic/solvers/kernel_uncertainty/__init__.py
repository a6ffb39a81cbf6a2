"""Solvers of the SVM robust to kernel-matrix uncertainty, problem (15) of [BBBB10], on arrays.

:mod:`.dual` holds problem (15) at one ``(C, kappa)`` as array operators (products with ``Q = Y K_bar Y``,
feasibility, the bias of [BBBB10, Sec. 3], the certificate of each route and its polishing); :mod:`.routes`
holds the routes that run a solver and certify its point (libsvm on the modified kernel, projected Newton,
the cone interior point, RSVM_QN's multi-start DFP).  The inner methods are :mod:`rsvm_conic.solvers.rsvm_socp`
(RSVM_SOCP's objective, projected Newton, cone IPM), :mod:`rsvm_conic.solvers.quasi_newton` (RSVM_QN's DFP) and
:mod:`rsvm_conic.solvers.svm_dual` (libsvm, polishing).  Nothing here receives a formulation.
"""

from . import dual, routes
from .dual import *  # noqa: F403
from .routes import *  # noqa: F403

__all__ = dual.__all__ + routes.__all__
