"""Wasserstein distributionally robust hinge-loss SVM [SKE19], an LP or SOCP.

The classifier ``(w, b)`` minimises the worst-case expected hinge loss ``l(x, y) = max{0, 1 - y (<w, x> + b)}`` over
every distribution ``Q`` within type-1 Wasserstein distance ``radius`` of the empirical distribution
``P_N = sum_i pi_i delta_(x_i, y_i)``, for the transport cost ``d((x, y), (x', y')) = ||x - x'||_p + kappa 1[y != y']``
(``kappa = inf``: labels are never flipped).  ``pi_i = 1/N`` without weights and ``pi_i = s_i / sum_j s_j`` with
``sample_weight`` ``s``: weights change the empirical distribution and nothing else, so an integer weight is the
same as repeating the row.

**Derivation.**  Strong duality for Wasserstein balls over the support ``R^n x {-1, +1}`` (no bound on the
features; [SKE19]) gives, for a fixed ``(w, b)``,

    sup_{W(Q, P_N) <= radius} E_Q[l] = inf_{lam >= 0} lam radius + sum_i pi_i sup_{x', y'} [l(x', y') - lam d(., .)].

The inner supremum over ``x'`` of ``max{0, 1 - y <w, x'> - y b} - lam ||x_i - x'||_p`` is ``+inf`` when
``||w||_q > lam`` (q the dual exponent of p: the hinge grows at rate ``||w||_q`` along the best direction) and
otherwise its value at ``x' = x_i``; the bias is a parameter of the classifier, not a feature, so it is not
transported.  The flipped label ``y' = -y_i`` adds ``max{0, 1 + y_i (<w, x_i> + b)} - lam kappa``.  Hence::

    minimise    lam radius + sum_i pi_i s_i
    subject to  s_i >= 1 - y_i (<w, x_i> + b),   s_i >= 0,
                s_i >= 1 + y_i (<w, x_i> + b) - lam kappa      (dropped for kappa = inf),
                ||w||_q <= lam.

**Dual and certificate.**  With multipliers ``alpha_i, beta_i >= 0`` of the first and third constraint, the
Lagrangian dual is::

    maximise  sum_i (alpha_i + beta_i)
    s.t.      alpha_i + beta_i <= pi_i,   sum_i y_i (alpha_i - beta_i) = 0,
              || sum_i y_i (alpha_i - beta_i) x_i ||_p + kappa sum_i beta_i <= radius

(stationarity in ``s``, ``b``, ``w`` and ``lam``).  A route's multipliers are made feasible (clipped to the box;
the equality restored by shrinking the entries that exceed it; then scaled by ``t = min(1, radius / g)``, ``g`` the
left side of the norm constraint) and ``P(w, b) - D`` is the certified gap, ``P(w, b)`` the objective at the best
``lam`` for ``(w, b)`` (:meth:`WassersteinProblem.objective_wb`).

**Worst-case distribution.**  At an optimum, complementary slackness gives a distribution in the ball whose expected
hinge loss is the optimal value (:meth:`WassersteinProblem.worst_distribution`): sample ``i`` keeps mass
``pi_i - beta_i`` at ``(x_i, y_i)``, mass ``beta_i`` moves to ``(x_i, -y_i)`` (cost ``kappa beta_i``), and the rest of
the budget, ``r = radius - kappa sum beta``, moves the mass ``alpha_j`` of the sample with the largest ``alpha_j``
by ``r / alpha_j`` along ``-y_j v`` (``v``: ``||v||_p = 1``, ``<v, w> = ||w||_q``), where its hinge grows at rate
``||w||_q = lam``.
"""

from __future__ import annotations

import time

import numpy as np

from .._validation import check_binary_labels, check_norm, check_positive, check_sample_weight, check_X, dual_norm
from ..certify import wasserstein
from ..certify.contract import SolveInfo, certify
from ..certify.wasserstein import Ball
from ..exceptions import SolverError
from ..solvers.conic import solve_cvxpy
from ..solvers.zero_threshold import wasserstein_zero_threshold
from .base import Formulation, LazyModel, Solution

#: certified relative gap the routes must meet
EXACT_TOL = 1e-6

#: the tolerances of a route's second run when its first point does not certify (and the caller set none): small
#: radii against the data's scale or optima far below a constant classifier's objective need the extra digits
TIGHT = {
    "ipm": {"tol_gap_rel": 1e-12, "tol_feas": 1e-12},
    "clarabel": dict.fromkeys(("tol_gap_abs", "tol_gap_rel", "tol_feas"), 1e-12),
}


class WassersteinProblem(LazyModel, Formulation):
    """Wasserstein distributionally robust hinge-loss SVM; see the module docstring.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        Samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    radius : float, default=0.01
        Radius of the Wasserstein ball (> 0), in the units of ``||x - x'||_p``.
    norm : {1, 2, inf}, default=2
        The exponent p of the transport cost on the features.
    kappa : float, default=inf
        Cost of flipping a label (> 0; inf: labels are certain).
    check_input : bool, default=True
        Validate ``X`` and ``y`` (False: trusted arrays from the estimators).
    sample_weight : ndarray of shape (L,) or None, default=None
        Nonnegative weights ``s_i`` (not all 0): the empirical distribution is ``pi_i = s_i / sum_j s_j`` (None:
        ``1/L``).
    """

    name = "wasserstein"
    BACKENDS = {
        "ipm": "structure-exploiting interior point (one (n+2) or (2n+2) system per iteration); certificate: "
        "duality gap",
        "clarabel": "CVXPY + Clarabel interior point; certificate: recomputed duality gap",
        "scs": "CVXPY + SCS (first-order conic); certificate: recomputed duality gap",
    }

    def __init__(self, X, y, radius=0.01, norm=2, kappa=np.inf, *, check_input: bool = True, sample_weight=None):
        if check_input:
            X = check_X(X)
            y, _ = check_binary_labels(y, X.shape[0])
            kappa = check_positive(kappa, "kappa", allow_inf=True)
            norm = check_norm(norm)
            if sample_weight is not None:
                sample_weight = check_sample_weight(sample_weight, X.shape[0])
        self.X, self.y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
        self.p = float(norm)
        self.q = dual_norm(self.p)
        self.kappa = float(kappa)
        L = self.X.shape[0]
        self.sample_weight = None if sample_weight is None else np.asarray(sample_weight, dtype=float)
        self.pi = np.full(L, 1.0 / L) if self.sample_weight is None else self.sample_weight / self.sample_weight.sum()
        self._values = {"radius": check_positive(radius, "radius")}
        self._trivial = None
        #: the last structured run's point, reused by the next solve when ``warm`` is set (same data, new radius)
        self.last_ipm = None

    # ------------------------------------------------------------------ parameters
    def _set_param(self, key, value):
        self._values[key] = check_positive(value, key)
        self._stale = True

    @property
    def radius(self) -> float:
        return float(self._values["radius"])

    # ------------------------------------------------------------------ lazy CVXPY model
    def _build_model(self):
        """The LP / SOCP of the module docstring (``radius`` a DPP parameter)."""
        import cvxpy as cp

        L, n = self.X.shape
        w, b = cp.Variable(n, name="w"), cp.Variable(name="b")
        lam = cp.Variable(name="lam", nonneg=True)
        s = cp.Variable(L, name="s", nonneg=True)
        r_par = cp.Parameter(nonneg=True, name="radius")
        margin = cp.multiply(self.y, self.X @ w + b)
        cons = {"hinge": s >= 1 - margin}
        if np.isfinite(self.kappa):
            cons["flip"] = s >= 1 + margin - self.kappa * lam
        cons["norm"] = cp.norm(w, self.q) <= lam
        scale = 1.0 / self.trivial_objective()  # the routes' tolerances are absolute below objective 1
        problem = cp.Problem(cp.Minimize(r_par * (scale * lam) + (scale * self.pi) @ s), list(cons.values()))
        return problem, {"radius": r_par}, {"w": w, "b": b, "lam": lam, "s": s}, cons

    # ------------------------------------------------------------------ evaluation
    def ball(self) -> Ball:
        """The problem's arrays and parameters, as the certificate's functions take them."""
        return Ball(self.X, self.y, self.pi, self.radius, self.kappa, self.p, self.q)

    def objective_wb(self, w, b) -> float:
        """The objective at ``(w, b)`` with the best ``lam``: the worst-case expected hinge loss of the classifier
        ``(w, b)`` over the ball (:func:`rsvm_conic.certify.wasserstein.objective`)."""
        return wasserstein.objective(self.ball(), w, b)

    def trivial_objective(self) -> float:
        """``min(P(0, -1), P(0, 1), 1)``: an upper bound on the optimum from constant classifiers (``P(0, 0) = 1``),
        the scale of the objective: the routes solve the problem divided by it (their tolerances are absolute below
        objective 1) and the relative gap's floor is ``1e-9`` times it."""
        if self._trivial is None:
            zero = np.zeros(self.X.shape[1])
            self._trivial = min(1.0, self.objective_wb(zero, -1.0), self.objective_wb(zero, 1.0))
        return self._trivial

    def objective(self, solution: Solution) -> float:
        return self.objective_wb(solution["w"], solution["b"])

    def decision_function(self, solution: Solution, X) -> np.ndarray:
        return check_X(X, n_features=self.X.shape[1]) @ solution["w"] + solution["b"]

    def _extract(self) -> dict:
        v = self._variables
        return {
            "w": np.asarray(v["w"].value, dtype=float).ravel(),
            "b": float(v["b"].value),
            "lam": float(v["lam"].value),
        }

    # ------------------------------------------------------------------ certificate
    def certificate(self, route: str, w, b, alpha, beta=None, *, tol: float = EXACT_TOL, **kwargs) -> SolveInfo:
        """SolveInfo of ``(w, b)`` with the dual value of the multipliers ``(alpha, beta)`` (None: uncertified).

        Parameters
        ----------
        route : str
            The route that produced the point.
        w : ndarray of shape (n,)
            Weights.
        b : float
            Bias.
        alpha, beta : ndarray of shape (L,) or None
            The multipliers of the hinge and flipped-label constraints.
        tol : float, default 1e-6
            Relative gap that counts as optimal.
        **kwargs
            Further :class:`~rsvm_conic.certify.contract.SolveInfo` fields.

        Returns
        -------
        SolveInfo
        """
        primal = self.objective_wb(w, b)
        dual = -np.inf if alpha is None else wasserstein.dual_value(self.ball(), alpha, beta, primal)
        kwargs.setdefault("floor", 1e-9 * self.trivial_objective())
        return certify(route, primal, dual, tol, **kwargs)

    def _certified(self, sol: Solution, alpha, beta, tol: float) -> Solution:
        sol.objective = self.objective(sol)
        sol.info["alpha"], sol.info["beta"] = alpha, beta
        iterations = sol.info.get("iterations")
        cert = self.certificate(
            sol.backend, sol["w"], sol["b"], alpha, beta, tol=tol, time=sol.time, iterations=iterations
        )
        sol.certificate = cert
        if not cert.certified:
            err = SolverError(
                f"{self.name}: route {sol.backend!r} stopped with certified relative gap {cert.gap_rel:.2e} > {tol:g}"
                f" (solver status {sol.status!r})."
            )
            err.certificate = cert
            raise err
        sol.status = "optimal"
        return sol

    # ------------------------------------------------------------------ worst case
    def worst_distribution(self, w, b, alpha, beta=None):
        """A distribution within the ball whose expected hinge loss at an optimal ``(w, b)`` is the optimal value
        (module docstring, "Worst-case distribution"; :func:`rsvm_conic.certify.wasserstein.worst_distribution`).

        Parameters
        ----------
        w : ndarray of shape (n,)
            Weights.
        b : float
            Bias (the distribution does not depend on it).
        alpha, beta : ndarray of shape (L,) or None
            The route's multipliers.

        Returns
        -------
        points : ndarray of shape (m, n)
        labels : ndarray of shape (m,)
            In {-1, +1}.
        weights : ndarray of shape (m,)
            Probabilities (summing to 1); support points of weight 0 are left out.
        """
        return wasserstein.worst_distribution(self.ball(), w, alpha, beta)

    def zero_threshold(self) -> float | None:
        """For ``kappa = inf``: the radius ``R*`` from which ``w = 0`` is optimal (``w != 0`` below it), None for finite
        ``kappa`` (:func:`rsvm_conic.solvers.zero_threshold.wasserstein_zero_threshold`, solved only when asked: the
        estimator's constant-classifier warning).

        Returns
        -------
        float or None
        """
        return None if np.isfinite(self.kappa) else wasserstein_zero_threshold(self.X, self.y, self.pi, self.p)

    # ------------------------------------------------------------------ routes
    def auto_routes(self) -> tuple[str, ...]:
        """The structured interior point, then Clarabel and SCS."""
        return ("ipm", "clarabel", "scs")

    def _retrying(self, route: str, once, tol: float, options: dict) -> Solution:
        """``once(tol, options)``; when its point does not certify and the caller set no tolerances, once more at
        :data:`TIGHT` (the routes' first run stops at tolerances that certify most problems in fewer iterations).
        The interior point's second run also divides the objective by the first point's (an upper bound on the
        optimum, and closer to it than a constant classifier's), since its stopping test is absolute below 1."""
        try:
            return once(tol, options)
        except SolverError as exc:
            tight = TIGHT.get(route)
            if tight is None or any(key in options for key in tight):
                raise
            tight = dict(tight)
            primal = getattr(getattr(exc, "certificate", None), "primal", np.nan)
            if route == "ipm" and 0.0 < primal < self.trivial_objective():
                tight["scale"] = primal
            return once(tol, {**options, **tight})

    def _solve_conic(self, backend, *, tol: float = EXACT_TOL, **options) -> Solution:
        """Clarabel / SCS through CVXPY, certified from the constraints' dual values (:meth:`_retrying`)."""
        return self._retrying(backend, lambda tol, o: self._solve_conic_once(backend, tol, **o), tol, options)

    def _solve_conic_once(self, backend, tol: float, **options) -> Solution:
        t0 = time.perf_counter()
        self._materialise()
        stats = solve_cvxpy(self._problem, backend, accept_inaccurate=True, quiet_inaccurate=True, **options)
        sol = Solution(backend, stats["status"], float("nan"), time.perf_counter() - t0, self._extract(), stats)
        scale = self.trivial_objective()  # the model's objective is divided by it, and so are its multipliers
        alpha = scale * np.asarray(self._constraints["hinge"].dual_value, dtype=float).ravel()
        flip = self._constraints.get("flip")
        beta = None if flip is None else scale * np.asarray(flip.dual_value, dtype=float).ravel()
        return self._certified(sol, alpha, beta, tol)

    def _solve_clarabel(self, **options) -> Solution:
        return self._solve_conic("clarabel", **options)

    def _solve_scs(self, **options) -> Solution:
        return self._solve_conic("scs", **options)

    def _solve_ipm(self, *, tol: float = EXACT_TOL, warm: bool = False, **options) -> Solution:
        """The structured interior point (:mod:`rsvm_conic.solvers.ipm.wasserstein`); ``warm``: start from the last
        run's point (same data, another radius).  A point that does not certify is solved again, cold, at
        :data:`TIGHT` (:meth:`_retrying`)."""
        start = self.last_ipm if warm else None
        first = dict(options)  # the retry gets a new dict, and starts cold
        return self._retrying(
            "ipm", lambda tol, o: self._solve_ipm_once(tol, start if o is first else None, **o), tol, first
        )

    def _solve_ipm_once(self, tol: float, start, scale: float | None = None, **options) -> Solution:
        from ..solvers.ipm.wasserstein import solve_wasserstein_ipm

        t0 = time.perf_counter()
        values, info = solve_wasserstein_ipm(
            self.X,
            self.y,
            self.pi,
            self.radius,
            self.kappa,
            self.q,
            scale=self.trivial_objective() if scale is None else scale,
            start=start,
            **options,
        )
        self.last_ipm = info.pop("point", None)
        sol = Solution("ipm", info["status"], float("nan"), time.perf_counter() - t0, values, info)
        return self._certified(sol, info["alpha"], info.get("beta"), tol)
