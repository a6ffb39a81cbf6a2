"""The contract every problem builder follows.

A builder takes data and hyper-parameters and returns a :class:`Formulation`:

* ``problem`` -- the CVXPY model (``None`` for non-conic models such as RSVM_QN),
* ``parameters`` -- named ``cp.Parameter`` objects (change them and re-solve: CVXPY
  compiles a DPP model once),
* ``variables`` -- named CVXPY variables,
* ``objective(solution)`` -- a pure-numpy evaluation of the same objective, used to
  compare backends on equal terms,
* ``solve(backend)`` -- returns a :class:`Solution` carrying a certificate
  (:class:`~rsvm_conic.certify.contract.SolveInfo`) where the route provides one;
  ``backends`` lists the names this formulation accepts on this instance, read from the
  class's explicit ``BACKENDS`` table where it has one; ``solve("auto")`` tries
  :meth:`Formulation.auto_routes` in order and falls back visibly (a warning naming both routes),
* ``decision_function(solution, data)`` -- scores on new data.

The shared runner (:mod:`rsvm_conic.runner`) relies on nothing else.
"""

from __future__ import annotations

import time

import numpy as np

from .._validation import check_positive
from ..solvers.conic import solve_cvxpy
from ..certify.contract import Solution, first_certified, require_finite


class Formulation:
    """Base class for problem builders' results.

    Subclasses set ``problem``, ``parameters`` and ``variables`` and implement
    ``objective``, ``decision_function`` and ``_extract`` (CVXPY values -> numpy
    dict).  Extra backends are methods named ``_solve_<backend>`` returning a
    :class:`Solution`.
    """

    name = "formulation"
    conic_backends = ("clarabel", "scs")
    #: explicit backend table ``{name: description}`` read by estimators, the runner and the CLI;
    #: None: derived from the ``_solve_<name>`` methods (formulations not yet converted)
    BACKENDS: dict[str, str] | None = None

    problem = None
    parameters: dict
    variables: dict

    # -- parameters -----------------------------------------------------------------
    #: the parameter values the routes read, where the formulation keeps them apart from its CVXPY parameters
    #: (``C`` > 0 and a radius or kappa >= 0; the CVXPY parameters follow when a conic route reads them:
    #: :meth:`_synced`); None: the CVXPY ``parameters`` hold the values
    _values: dict | None = None

    def set_params(self, **values) -> "Formulation":
        """Set named parameters (e.g. ``C=10, radius=0.5``) for the next solve."""
        names = self.parameters if self._values is None else self._values
        for key, value in values.items():
            if key not in names:
                raise ValueError(f"{self.name} has no parameter {key!r}; it has {sorted(names)}.")
            self._set_param(key, value)
        return self

    def _set_param(self, key, value):
        if self._values is None:
            self.parameters[key].value = value
            return
        self._values[key] = check_positive(value, key, strict=(key == "C"))
        self._stale = True

    def _synced(self, parameters: dict) -> dict:
        """``parameters`` (CVXPY) brought up to date with :attr:`_values` (setting a ``cp.Parameter`` validates its
        value, which the non-conic routes along a grid do not need)."""
        if getattr(self, "_stale", True):
            for key, value in self._values.items():
                parameters[key].value = value
            self._stale = False
        return parameters

    def param_value(self, key):
        return self.parameters[key].value if self._values is None else self._values[key]

    # -- backends -------------------------------------------------------------------
    @property
    def backends(self) -> tuple[str, ...]:
        if self.BACKENDS is not None:
            return tuple(b for b in self.BACKENDS if self._available(b))
        internal = {"_solve_auto", "_solve_conic"}  # dispatch helpers of this base class, not backends
        extra = tuple(
            name[len("_solve_") :] for name in dir(type(self)) if name.startswith("_solve_") and name not in internal
        )
        conic = self.conic_backends if self.problem is not None else ()
        return tuple(conic) + tuple(b for b in extra if b not in conic)

    def _available(self, backend: str) -> bool:
        """Whether a backend of ``BACKENDS`` applies to this instance (e.g. ``ipm`` needs p = 2)."""
        return True

    def auto_routes(self) -> tuple[str, ...]:
        """The routes ``solve("auto")`` tries, fastest first (by structure and size)."""
        return ("clarabel", "scs")

    def solve(self, backend: str | tuple[str, ...] = "clarabel", **options) -> Solution:
        """Solve with ``backend``: a route of ``BACKENDS``; ``"auto"``, :meth:`auto_routes` in turn; or a tuple of
        routes, tried in turn by the same fallback chain (:meth:`_solve_auto`).  A route whose values hold NaN or
        inf raises :class:`~rsvm_conic.exceptions.SolverError` (:func:`~rsvm_conic.certify.contract.require_finite`),
        so a chain falls back from it."""
        if backend == "auto" or isinstance(backend, tuple):
            return self._solve_auto(None if backend == "auto" else backend, **options)
        if self.BACKENDS is not None and backend not in self.backends:
            raise ValueError(f"{self.name} cannot be solved with backend {backend!r}; available: {self.backends}.")
        if backend in self.conic_backends and self.problem is not None and not hasattr(self, f"_solve_{backend}"):
            sol = self._solve_conic(backend, **options)
        else:
            method = getattr(self, f"_solve_{backend}", None)
            if method is None:
                raise ValueError(f"{self.name} cannot be solved with backend {backend!r}; available: {self.backends}.")
            sol = method(**options)
        require_finite(self.name, backend, sol.values)
        return sol

    def _solve_auto(self, routes=None, /, **options) -> Solution:
        """Each of ``routes`` (None: :meth:`auto_routes`) in turn until one returns a certified result
        (:func:`~rsvm_conic.certify.contract.first_certified`: every fallback is announced by a
        SolverWarning naming the route that failed, why, and the next route); the routes tried
        before are recorded as ``info["fallback_from"]`` (``"route: why"``; empty when the first route certified), the
        one record of fallbacks (an estimator's ``solver_stats_`` carries it)."""
        routes = self.auto_routes() if routes is None else routes
        if not routes:
            raise ValueError(f"{self.name} has no automatic route; choose one of {self.backends}.")

        def attempt(route):
            sol = self._attempt(route, options.get(route, {}) if _per_route(options) else options)
            return sol, sol.certificate

        sol, failures = first_certified(routes, attempt, what=self._what(), hint=self._auto_hint())
        sol.info["fallback_from"] = [f"{route}: {why}" for route, why in failures]
        return sol

    def _attempt(self, route: str, options: dict) -> Solution:
        """One route of :meth:`auto_routes` (a backend name here; a formulation may use its own labels)."""
        return self.solve(route, **options)

    def _what(self) -> str:
        """The name that prefixes the fallback chain's warnings and errors."""
        return self.name

    def _auto_hint(self) -> str:
        """What to do when no automatic route certifies (appended to the SolverError); "" for none."""
        return ""

    def _solve_conic(self, backend, **options) -> Solution:
        t0 = time.perf_counter()
        stats = solve_cvxpy(self.problem, backend, **options)
        values = self._extract()
        sol = Solution(
            backend=backend,
            status=stats["status"],
            objective=float("nan"),
            time=time.perf_counter() - t0,
            values=values,
            info=stats,
        )
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


class LazyModel:
    """A formulation whose CVXPY model is built on first use: ``_build_model()`` returns ``(problem, parameters,
    variables, constraints)`` (``constraints``: what the routes read dual values from), and every read of
    :attr:`problem`, :attr:`parameters` or :attr:`variables` brings the parameters up to date
    (:meth:`Formulation._synced`)."""

    _problem = _cp_params = _variables = _constraints = None

    def _build_model(self):
        raise NotImplementedError

    def _materialise(self):
        if self._problem is None:
            self._problem, self._cp_params, self._variables, self._constraints = self._build_model()
            self._stale = True
        self._synced(self._cp_params)
        return self._problem

    @property
    def problem(self):
        """The CVXPY model (built on first use; its parameters up to date)."""
        return self._materialise()

    @property
    def parameters(self) -> dict:
        """The CVXPY parameters, up to date."""
        self._materialise()
        return self._cp_params

    @property
    def variables(self) -> dict:
        """The CVXPY variables."""
        self._materialise()
        return self._variables


def _per_route(options: dict) -> bool:
    """``solve("auto", ipm={...}, clarabel={...})`` gives options per route; plain keywords go to every route."""
    return bool(options) and all(isinstance(v, dict) for v in options.values())
