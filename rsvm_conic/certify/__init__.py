"""The certificate: primal objective minus the objective of a feasible dual point, in one place.

* :mod:`.contract` -- :class:`SolveInfo` (route, status, certified gap), :class:`Solution`, :func:`certify`,
  :func:`first_certified` (the one fallback chain), :func:`solver_stats` (a solve's record as estimators store it);
* :mod:`.projections` -- :func:`project_dual_set` (the one projection onto ``{0 <= a <= C, y'a = 0}``, in memory
  and, through :func:`dual_set_multiplier`, on data held in blocks), the simplex and the p-balls;
* :mod:`.hinge` -- dual bounds of the robust hinge (:func:`~.hinge.dual_bound`, :func:`~.hinge.hinge_min`);
* :mod:`.dual_u` -- the robust term's part of a dual point (the best ``u_g`` in the unit p-balls);
* :mod:`.kernel` -- bounds of the kernel SVM dual (Frank-Wolfe gap, Lagrangian bound);
* :mod:`.wasserstein` -- the Wasserstein DRO SVM's objective, dual point, dual bound and worst-case distribution.

This room imports only :mod:`rsvm_conic._validation`, :mod:`rsvm_conic.uncertainty` and
:mod:`rsvm_conic.exceptions`; the solvers, formulations and estimators import it.
"""

from .contract import (
    STATUSES,
    Solution,
    SolveInfo,
    certify,
    first_certified,
    relative_gap,
    require_finite,
    solver_stats,
)
from .projections import dual_set_multiplier, project_dual_set, project_pball, project_simplex

__all__ = [
    "STATUSES",
    "Solution",
    "SolveInfo",
    "certify",
    "dual_set_multiplier",
    "first_certified",
    "project_dual_set",
    "project_pball",
    "project_simplex",
    "relative_gap",
    "require_finite",
    "solver_stats",
]
