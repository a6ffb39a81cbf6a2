"""The contract every problem builder follows.

A builder takes data and hyper-parameters and returns a :class:`Formulation`:

* ``problem`` -- the CVXPY model (``None`` for non-conic models such as RSVM_QN),
* ``parameters`` -- named ``cp.Parameter`` objects (change them and re-solve: CVXPY
  compiles a DPP model once),
* ``variables`` -- named CVXPY variables,
* ``objective(solution)`` -- a pure-numpy evaluation of the same objective, used to
  compare backends on equal terms,
* ``solve(backend)`` -- returns a :class:`Solution`; ``backends`` lists the names
  this formulation accepts,
* ``decision_function(solution, data)`` -- scores on new data.

The shared runner (:mod:`rsvm_conic.runner`) relies on nothing else.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..solvers.conic import SolverError, SolverWarning, solve_cvxpy


@dataclass
class Solution:
    """What a backend returns: the model's variables plus how it got them."""

    backend: str
    status: str
    objective: float
    time: float
    values: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key):
        return self.values[key]


class Formulation:
    """Base class for problem builders' results.

    Subclasses set ``problem``, ``parameters`` and ``variables`` and implement
    ``objective``, ``decision_function`` and ``_extract`` (CVXPY values -> numpy
    dict).  Extra backends are methods named ``_solve_<backend>`` returning a
    :class:`Solution`.
    """

    name = "formulation"
    conic_backends = ("clarabel", "scs")

    problem = None
    parameters: dict
    variables: dict

    # -- parameters -----------------------------------------------------------------
    def set_params(self, **values) -> "Formulation":
        """Set named parameters (e.g. ``C=10, radius=0.5``) for the next solve."""
        for key, value in values.items():
            if key not in self.parameters:
                raise ValueError(f"{self.name} has no parameter {key!r}; it has {sorted(self.parameters)}.")
            self._set_param(key, value)
        return self

    def _set_param(self, key, value):
        self.parameters[key].value = value

    def param_value(self, key):
        return self.parameters[key].value

    # -- backends -------------------------------------------------------------------
    @property
    def backends(self) -> tuple[str, ...]:
        internal = {"_solve_auto", "_solve_conic"}  # dispatch helpers of this base class, not backends
        extra = tuple(name[len("_solve_"):] for name in dir(type(self))
                      if name.startswith("_solve_") and name not in internal)
        conic = self.conic_backends if self.problem is not None else ()
        return tuple(conic) + tuple(b for b in extra if b not in conic)

    def solve(self, backend: str = "clarabel", **options) -> Solution:
        if backend == "auto":
            return self._solve_auto(**options)
        if backend in self.conic_backends and self.problem is not None and not hasattr(self, f"_solve_{backend}"):
            return self._solve_conic(backend, **options)
        method = getattr(self, f"_solve_{backend}", None)
        if method is None:
            raise ValueError(f"{self.name} cannot be solved with backend {backend!r}; available: {self.backends}.")
        return method(**options)

    def _solve_auto(self, **options) -> Solution:
        """Clarabel, then SCS if Clarabel fails -- with a warning naming solver and status."""
        if self.problem is None:
            raise ValueError(f"{self.name} has no conic model; choose one of {self.backends}.")
        try:
            return self._solve_conic("clarabel", **options)
        except SolverError as exc:
            warnings.warn(f"{self.name}: Clarabel failed ({exc}); falling back to SCS.", SolverWarning,
                          stacklevel=3)
            return self._solve_conic("scs", **options)

    def _solve_conic(self, backend, **options) -> Solution:
        t0 = time.perf_counter()
        stats = solve_cvxpy(self.problem, backend, **options)
        values = self._extract()
        sol = Solution(backend=backend, status=stats["status"], objective=float("nan"),
                       time=time.perf_counter() - t0, values=values, info=stats)
        sol.objective = float(self.objective(sol))
        return sol

    # -- to implement ---------------------------------------------------------------
    def _extract(self) -> dict:
        raise NotImplementedError

    def objective(self, solution: Solution) -> float:
        raise NotImplementedError

    def decision_function(self, solution: Solution, data) -> np.ndarray:
        raise NotImplementedError

    def predict(self, solution: Solution, data) -> np.ndarray:
        return np.where(self.decision_function(solution, data) >= 0, 1.0, -1.0)
