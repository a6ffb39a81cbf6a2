"""What the linear SVM builders (nominal, robust, chance-constrained) share.

All three minimise, over (w, b),

    P(w, b) = 1/2 ||w||^2 + C sum_i s_i max{0, 1 - y_i (<w, x_i> + b) + gamma_i ||A_{g(i)}^T w||_q}

with per-sample weights ``s_i > 0`` (``sample_weight``; 1 by default: ``C_i = C s_i`` is each sample's weight).
([CJ20, eq. 4/5] with lam = 1/C: ``lam/2 ||w||^2 + sum xi = P / C``); they differ
in where gamma_i comes from (0, a radius, or a chance-constraint factor kappa).
So they share the numpy objective, the decision function, the dual certificate,
the automatic route choice and the stochastic backends.

**Certificate.**  For every ``alpha`` in the box ``0 <= alpha_i <= C s_i`` with ``y'alpha = 0`` and every ``u_g`` in the
unit p-ball, with ``s_g = sum_{i in g} alpha_i gamma_i``,

    D(alpha, u) = sum_i alpha_i - 1/2 || sum_i alpha_i y_i x_i - sum_g s_g A_g u_g ||^2  <=  P*

(weak duality: each weighted hinge is ``max_{alpha_i in [0, C s_i]}`` of ``alpha_i`` times its argument, each
dual norm ``max_{||u||_p <= 1} u'A'w``; minimising the Lagrangian over ``b`` forces ``y'alpha = 0``
and over ``w`` gives the quadratic).  Every exact route returns multipliers ``alpha`` (libsvm's
dual coefficients, the interior point's margin multipliers, CVXPY's constraint duals); they are
projected onto ``{0 <= alpha_i <= C s_i, y'alpha = 0}``.  ``u_g`` is the maximiser of ``u'A_g'w`` at the
returned ``w`` or, from the routes that return their norm cones' multipliers ``z_g`` (Clarabel and
SCS through the constraints of :func:`~.robust.robust_cone_constraints`, the interior point),
``z_g / s_g`` projected onto the unit p-ball -- whichever gives the larger ``D``.  The maximiser is
not unique where ``A_g'w = 0`` or, for p in {1, inf}, where ``A_g'w`` has tied largest (p = 1) or
zero (p = inf) entries, and the optima of such models sit on these kinks: there the multipliers
carry the optimum's ``u`` (``tests/test_cone_multipliers.py``).  Either way the point is feasible,
so ``P(w, b) - D`` is a certified bound on the distance to the optimum.

The relative gap is ``(P - D) / max(P, |D|, 1e-9 C sum_i s_i)``: ``C sum_i s_i = P(0, 0)`` is the objective of
the trivial classifier, and the floor keeps the ratio meaningful when ``P*`` is ~0 against it (one class, or a
large C whose optimum separates the data: there the certificate is an absolute accuracy of ``1e-15 C sum_i s_i``).

**Models are built lazily.**  The CVXPY model (``problem``, ``parameters``, ``variables``) is
built the first time one of them is used, i.e. only when a conic route runs or the user asks for
it; ``set_params`` works on plain values before that.
"""

from __future__ import annotations

import time

import numpy as np

from .._validation import check_positive, check_X
from ..certify.dual_u import best_u
from ..certify.linear import (
    certify_point,
    hard_margin_scale,
    lp_like_hint,
    rounding_floor,
    tightened,
    uncertified_error,
)
from ..certify.projections import project_dual_set
from ..exceptions import SolverError
from ..solvers.conic import solve_cvxpy
from ..solvers.datafits import RobustHinge
from ..solvers.samples import samples_of
from ..uncertainty.sets import ResolvedUncertainty
from .base import Formulation, LazyModel, Solution

#: certified relative gap that the exact routes (libsvm, interior point, Clarabel, SCS) must meet
EXACT_TOL = 1e-6

#: the ``ipm`` route's early stop (unless the caller sets the interior point's tolerances): the run ends
#: at its first iterate whose relative gap is within a tenth of the certificate's ``tol`` and whose residuals are within
#: 1e-9 when the decision values there are resolved (:func:`decisions_resolved`), so that the certificate built from
#: that iterate meets ``tol`` with room to spare (certified gaps about 1e-8 at the default 1e-6) without the iteration
#: that takes the run's own gap from 1e-7 to 1e-8 (13 -> 12 iterations on the default ``RobustSVC()`` fit of
#: ``rsvm-conic bench defaults``, 14 -> 13 on ``ChanceConstrainedSVC()``); other runs stop at the engine's 1e-8
IPM_GAP_SHARE, IPM_FEAS = 0.1, 1e-9

#: the decision values ``X w`` are resolved when their largest magnitude exceeds this many times the constant-
#: classifier test's round-off level ``1e-7 (1 + max |X|)`` (``estimators.linear``): a fit whose optimum is ``w = 0``
#: (a radius just above the threshold) is then never stopped early at a ``w`` that test would not call constant
IPM_RESOLVED = 1e4

#: the ``ipm`` route holds a run whose decision values are neither resolved nor at the constant-classifier test's
#: round-off level (:func:`decisions_decided`) until this relative gap: near a fit whose optimum is ``w = 0`` the
#: interior point's ``w`` shrinks with its gap (about a hundredfold per iteration there), and the engine's own 1e-8
#: leaves it up to twice that round-off level (a radius 1.01 times the threshold, ``tests/test_robust_ipm.py``)
IPM_HOLD_GAP = 1e-10


def decisions_resolved(samples, w) -> bool:
    """Whether the decision values ``X w`` are far from the constant-classifier test's round-off level
    (:data:`IPM_RESOLVED` times ``1e-7 (1 + max |X|)``): where they are, stopping the interior point early cannot
    turn a constant classifier into a non-constant one.

    Parameters
    ----------
    samples : InMemory or RowBlocks
        Where the samples live (:mod:`rsvm_conic.solvers.samples`; on row blocks, one pass).
    w : ndarray of shape (n,)
        The weights.

    Returns
    -------
    bool
    """
    score, size = samples.score_sizes(w)
    return score > IPM_RESOLVED * 1e-7 * (1.0 + size)


def decisions_decided(samples, w) -> bool:
    """Whether the decision values ``X w`` are resolved (:func:`decisions_resolved`) or at the constant-classifier
    test's round-off level ``1e-7 (1 + max |X|)``: either way a tighter gap does not change whether the fit is
    reported constant.

    Parameters
    ----------
    samples : InMemory or RowBlocks
        Where the samples live (:mod:`rsvm_conic.solvers.samples`; on row blocks, one pass).
    w : ndarray of shape (n,)
        The weights.

    Returns
    -------
    bool
    """
    score, size = samples.score_sizes(w)
    level = 1e-7 * (1.0 + size)
    return score <= level or score > IPM_RESOLVED * level


#: above this many multiply-adds per interior-point iteration (L n^2) the automatic route is stochastic
IPM_WORK_LIMIT = 5e11

#: the automatic chain tries SCS only while C max_i ||x_i||^2 is at most this: beyond it the problem is close to a
#: linear programme that the first-order SCS does not certify in minutes
SCS_AUTO_MAX = 1e12


class LinearProblem(LazyModel, Formulation):
    """Base for linear SVM formulations whose loss is the robust hinge (see the module docstring).

    Parameters
    ----------
    X : ndarray of shape (L, n)
        Samples (in memory, or on row blocks: :mod:`~rsvm_conic.solvers.samples`).
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    C : float
        Weight of the hinge terms, > 0.
    check_input : bool, default=True
        Check ``X`` and ``y`` (False: trusted arrays, validated by the caller).
    sample_weight : ndarray of shape (L,) or None, default=None
        Positive weights ``s_i`` of the hinge terms (trusted); None: all 1.
    """

    #: the name of the parameter that scales gamma_i (``radius`` or ``kappa``); None: nominal
    gamma_param: str | None = None
    BACKENDS = {
        "ipm": "structure-exploiting interior point (p = 2 and nominal); certificate: duality gap",
        "clarabel": "CVXPY + Clarabel interior point; certificate: recomputed duality gap",
        "scs": "CVXPY + SCS (first-order conic); certificate: recomputed duality gap",
        "sgd": "minibatch stochastic subgradient; certificate: dual point built from the iterate",
        "prox": "stochastic proximal gradient; certificate: dual point built from the iterate",
    }

    #: the routes that take per-sample weights (the stochastic routes sample uniformly and do not)
    WEIGHTED_BACKENDS = ("libsvm", "ipm", "clarabel", "scs")

    def __init__(self, X, y, C: float, check_input: bool = True, sample_weight=None):
        msg = "y must be a vector of -1/+1 labels with one entry per row of X."
        #: where the samples live (:mod:`~rsvm_conic.solvers.samples`: in memory, or row blocks whose per-sample
        #: work runs where the blocks are) and the sums over them that depend on it
        self.samples = samples_of(X, y, check_input, msg)
        self.X, self.y = self.samples.X, self.samples.y
        self.C0 = check_positive(C, "C")
        #: per-sample weights ``s_i > 0`` of the hinge terms (``C_i = C s_i``), None: all 1 (trusted: the estimators
        #: validate them and drop the samples of weight 0, which take no part in the problem)
        self.sample_weight = None if sample_weight is None else np.asarray(sample_weight, dtype=float)
        if self.sample_weight is not None and (not self.samples.in_memory or self.sample_weight.shape != (X.shape[0],)):
            raise ValueError(
                f"{self.name}: sample_weight must hold one positive number per in-memory sample ({X.shape[0]}); "
                f"got shape {self.sample_weight.shape}"
                + ("." if self.samples.in_memory else f" with {self.samples.description}.")
            )
        self.uncertainty: ResolvedUncertainty | None = None
        self._values = {"C": self.C0}
        if self.gamma_param is not None:
            self._values[self.gamma_param] = 0.0

    def solve(self, backend: str = "clarabel", **options) -> Solution:
        if self.sample_weight is not None and backend in self.BACKENDS and backend not in self.WEIGHTED_BACKENDS:
            takes = [b for b in self.backends if b in self.WEIGHTED_BACKENDS]
            raise ValueError(
                f"solver {backend!r} does not take sample weights (it samples the rows uniformly); with "
                f"sample_weight or class_weight use solver='auto' or one of {takes}."
            )
        return super().solve(backend, **options)

    # ------------------------------------------------------------------ lazy CVXPY model
    def _build_model(self):
        """Return ``(problem, parameters, variables, margin_constraint)``; subclasses implement it."""
        raise NotImplementedError

    def _materialise(self):
        if self._problem is None and not self.samples.in_memory:
            raise ValueError(
                f"{self.name}: no CVXPY model for {self.samples.description} (it would hold every "
                "sample); the 'ipm' route solves it on the row blocks."
            )
        return super()._materialise()

    # ------------------------------------------------------------------ evaluation
    @property
    def C(self) -> float:
        return float(self._values["C"])

    @property
    def C_box(self):
        """The upper bounds of the dual box, ``C s_i`` (one per sample), or the scalar ``C`` without weights."""
        return self.C if self.sample_weight is None else self.C * self.sample_weight

    def total_weight(self) -> float:
        """``sum_i s_i`` (L without weights): ``C`` times it is ``P(0, 0)``, the trivial classifier's objective."""
        return float(self.X.shape[0] if self.sample_weight is None else self.sample_weight.sum())

    def hinge_total(self, C_par, xi):
        """The CVXPY expression of the weighted hinge term ``C sum_i s_i xi_i`` (for the builders)."""
        import cvxpy as cp

        return C_par * (cp.sum(xi) if self.sample_weight is None else self.sample_weight @ xi)

    def current_uncertainty(self) -> ResolvedUncertainty | None:
        """The resolved uncertainty with gamma scaled by the current parameter value."""
        if self.uncertainty is None or self.gamma_param is None:
            return None
        u = self.uncertainty
        return ResolvedUncertainty(
            u.factors, u.diagonal, u.group_index, u.p, u.q, float(self._values[self.gamma_param]), u.scale
        )

    def resolve(self, uncertainty):
        """``uncertainty.resolve(L, n)`` for these samples (per-sample arrays kept on their row blocks)."""
        return self.samples.resolve(uncertainty)

    def datafit(self) -> RobustHinge:
        """The robust hinge at the current parameter values (its data are ``self.X``, ``self.y``)."""
        return RobustHinge(self.current_uncertainty())

    def objective_wb(self, w, b) -> float:
        """P(w, b) = 1/2 ||w||^2 + C * sum of robust hinge losses (pure numpy; row blocks: one pass)."""
        w = np.asarray(w, dtype=float)
        return 0.5 * float(w @ w) + self.C * self.samples.hinge_total(w, b, self._fit(), self.sample_weight)

    def _fit(self):
        """The robust term as the samples' layout takes it: the data fit in memory, the uncertainty on row blocks."""
        return self.datafit() if self.samples.in_memory else self.current_uncertainty()

    def objective(self, solution: Solution) -> float:
        return self.objective_wb(solution["w"], solution["b"])

    def decision_function(self, solution: Solution, X) -> np.ndarray:
        return check_X(X, n_features=self.X.shape[1]) @ solution["w"] + solution["b"]

    def _extract(self) -> dict:
        return {"w": np.asarray(self.variables["w"].value, dtype=float).ravel(), "b": float(self.variables["b"].value)}

    # ------------------------------------------------------------------ certificate
    def dual_value(self, alpha: np.ndarray, w: np.ndarray, *, optimise_u: bool = False, multipliers=None) -> float:
        """``D(alpha, u)`` of the module docstring after projecting ``alpha`` onto the dual set.

        ``u_g`` is the maximiser of ``u'A_g'w`` at ``w`` (optimal at the optimum when unique) or, when the solver
        returned its cone multipliers ``z_g`` (``multipliers``, rows; :meth:`_cone_multipliers`), ``z_g / s_g``
        projected onto the unit p-ball, whichever gives the larger ``D``.  The maximiser is not unique where
        ``A_g'w`` is 0 or, for p in {1, inf}, has zero or tied entries (the dual norms' kinks, which the optimum
        of a p in {1, inf} model lands on); the multipliers say which point the optimum uses.  With
        ``optimise_u`` (unless the factors hold more than 2e7 numbers) ``u`` is then improved by accelerated
        projected gradient on ``max_u D(alpha, u)``.  The data fit computes the robust term
        (:meth:`~rsvm_conic.solvers.datafits.RobustHinge.dual_term`).
        """
        if not self.samples.in_memory:  # the same projection (a few passes) and dual value (one pass)
            unc = self.current_uncertainty()
            improve = best_u if optimise_u and unc is not None and unc.factors.size <= 2e7 else None
            return self.samples.dual_value(alpha, w, self.C, unc, improve)
        a = project_dual_set(np.asarray(alpha, dtype=float), self.y, self.C_box)
        v = self.X.T @ (a * self.y)
        robust = self.datafit().dual_term(a, np.asarray(w, dtype=float), optimise_u, v, multipliers)
        if robust is not None:
            v = v - robust
        return float(a.sum() - 0.5 * v @ v)

    def _cone_multipliers(self):
        """The conic solver's multipliers ``z_g`` of the robust cones after a solve (None: no robust cones)."""
        return None

    def hard_margin_rescaling(self, w, b):
        """The better of ``(w, b)`` and ``t (w, b)`` with every robust margin ``y_i (<w, x_i> + b) - gamma_i
        ||A_g' w||_q`` (positively homogeneous in ``(w, b)``) scaled to ``>= 1`` beyond its rounding, when all are
        positive: ``(w, b, t)``.  At a large C whose optimum separates the data the point as solved pays C times the
        rounding of the support vectors' margins; the rescaled one has no hinge loss (in-memory samples only)."""
        w = np.asarray(w, dtype=float)
        if not self.samples.in_memory or not np.any(w):
            return w, b, 1.0
        t = hard_margin_scale(self.X, self.y, w, b, self.current_uncertainty())
        if t != 1.0 and self.objective_wb(t * w, t * b) < self.objective_wb(w, b):
            return t * w, t * b, t
        return w, b, 1.0

    def certificate(self, route: str, w, b, alpha, *, tol: float = EXACT_TOL, multipliers=None, **kwargs):
        """The certificate of ``(w, b)`` against the dual value of ``alpha`` (:meth:`dual_value`; None: no dual point,
        uncertified) and the solver's cone ``multipliers`` if any (:func:`~rsvm_conic.certify.linear.certify_point`).

        Parameters
        ----------
        route : str
            The route's name.
        w, b : ndarray of shape (n,), float
            The point.
        alpha : ndarray of shape (L,) or None
            The dual point.
        tol : float, default=EXACT_TOL
            The relative tolerance.
        multipliers : ndarray or None, default=None
            The solver's multipliers of the robust cones.
        **kwargs
            Passed to :func:`~rsvm_conic.certify.contract.certify` (``time``, ``iterations``, ``detail``).

        Returns
        -------
        SolveInfo
        """

        def dual_value(optimise_u):
            return self.dual_value(alpha, w, optimise_u=optimise_u, multipliers=multipliers)

        kwargs.setdefault("floor", 1e-9 * self.C * self.total_weight())  # P(0, 0) = C sum s: the trivial objective
        return certify_point(route, self.objective_wb(w, b), None if alpha is None else dual_value, tol, **kwargs)

    def _certified(self, sol: Solution, alpha, tol: float, multipliers=None, **kwargs) -> Solution:
        """Attach the certificate of ``(w, b)`` with the dual value of ``alpha`` (:meth:`dual_value`; None: no dual
        point, uncertified) and, if the solver returned them, its cone ``multipliers``
        (:func:`~rsvm_conic.certify.linear.certify_point`); a route that cannot certify raises SolverError (auto then
        falls back).  The point certified (and returned) is the solver's or, where better, its hard-margin rescaling
        (:meth:`hard_margin_rescaling`)."""
        w, b, t = self.hard_margin_rescaling(sol["w"], sol["b"])
        if t != 1.0:
            sol.values["w"], sol.values["b"] = w, float(b)
            kwargs.setdefault("detail", {})["scale"] = t
        w, b = sol["w"], sol["b"]
        info = self.certificate(sol.backend, w, b, alpha, tol=tol, multipliers=multipliers, time=sol.time,
                                iterations=sol.info.get("iterations"), **kwargs)  # fmt: skip
        info.detail.setdefault("solver_status", sol.status)
        sol.certificate = info
        sol.objective = info.primal
        sol.status = info.status
        if info.status != "optimal":
            floor = None if alpha is None else self._rounding_floor(alpha, w, b)
            raise uncertified_error(info, tol, floor, self.C, self.X)
        return sol

    def _rounding_floor(self, alpha, w, b) -> float:
        """Size of the round-off in the certified gap at ``(w, b)`` and ``alpha``: in the dual value ``sum(a) -
        1/2 ||v||^2`` (``v = X'(a y)``, off by at most eps ``|X|'a`` entrywise), and in the primal's hinge terms (each
        margin off by eps ``(|x_i|'|w| + |b|)``, weighted by C)."""
        sums = self.samples.rounding_sums(alpha, np.abs(np.asarray(w, dtype=float)))
        C = self.C if self.sample_weight is None else self.C * float(self.sample_weight.max())
        return rounding_floor(sums, C, self.X.shape[0], b)

    # ------------------------------------------------------------------ constant classifier
    def zero_threshold(self, **options):
        """Bounds on the value of the radius parameter (``gamma_param``: radius or kappa) at and above which
        ``w = 0`` is optimal, from the data alone (:func:`~rsvm_conic.solvers.zero_threshold.zero_threshold`: a
        subdifferential test at ``w = 0`` and small conic programs; the SVM is not solved again; C plays no part).

        Returns a :class:`~rsvm_conic.solvers.zero_threshold.ZeroThreshold` on the parameter's scale (``lower``:
        ``w != 0`` below it; ``upper``: ``w = 0`` from it on, inf if not bracketed), or None when there is no
        robust term (nominal model, parameter 0), the samples are on row blocks (not computed there) or weighted
        (the test is unweighted).
        ``options`` go to the solver function.
        """
        from ..solvers.zero_threshold import zero_threshold

        if self.gamma_param is None or not self.samples.in_memory or self.sample_weight is not None:
            return None
        ops = self.datafit().factor_ops()
        value = float(self._values[self.gamma_param])
        if ops is None or value == 0.0 or not np.any(ops.gamma > 0):
            return None
        zt = zero_threshold(self.X, self.y, ops, **options)
        return zt._replace(lower=zt.lower * value, upper=zt.upper * value)

    # ------------------------------------------------------------------ routes
    def _available(self, backend: str) -> bool:
        if self.samples.routes is not None and backend not in self.samples.routes:
            return False
        if self.sample_weight is not None and backend not in self.WEIGHTED_BACKENDS:
            return False
        if backend == "ipm":
            unc = self.current_uncertainty()
            return unc is None or unc.q == 2.0
        return backend in self.BACKENDS

    def auto_routes(self) -> tuple[str, ...]:
        """Fastest certifiable route first: the interior point for p = 2 (and the nominal model)
        unless one iteration's L n^2 work is excessive (then the stochastic proximal method),
        Clarabel for p in {1, inf}; each route falls back to the next exact one."""
        L, n = self.X.shape
        if not self.samples.in_memory:  # no exact route but the interior point runs on row blocks
            if "ipm" not in self.backends:
                raise ValueError(
                    f"{self.name}: {self.samples.description} are solved by the interior point "
                    "on their row blocks, for p = 2 (ellipsoidal) uncertainty and the nominal model; "
                    "this model has another norm."
                )
            return ("ipm",)
        scs = ("scs",) if self._lp_like() <= SCS_AUTO_MAX else ()
        if "ipm" in self.backends:
            if L * n * n > IPM_WORK_LIMIT and self._available("prox"):
                return ("prox", "ipm", "clarabel")
            return ("ipm", "clarabel") + scs
        return ("clarabel",) + scs

    def _lp_like(self) -> float:
        """``C max_i ||x_i||^2``: how far the hinge term outweighs ``||w||^2 / 2`` (scaling X by s is scaling C by
        s^2); the objective is close to a linear programme's when it is large."""
        if getattr(self, "_sq_radius", None) is None:  # the largest squared norm of a sample, one pass, once
            self._sq_radius = self.samples.max_sq_norm()
        return float(np.max(self.C_box)) * self._sq_radius

    def _auto_hint(self) -> str:
        return lp_like_hint(self.C, self._lp_like(), SCS_AUTO_MAX)

    def _retrying(self, solve, backend, tol, options):
        """``solve(**options)``; if uncertified and the caller set no tolerances, once more at
        :data:`~rsvm_conic.certify.linear.TIGHT` (:func:`~rsvm_conic.certify.linear.tightened`)."""
        try:
            return solve(tol=tol, **options)
        except SolverError as exc:
            retry = tightened(backend, tol, options, getattr(exc, "certificate", None))
            if retry is None:
                raise
            return solve(tol=tol, **retry)

    def _solve_conic(self, backend, *, tol: float = EXACT_TOL, **options) -> Solution:
        """Clarabel / SCS through CVXPY.  An ``optimal_inaccurate`` status is accepted when the
        recomputed duality gap meets ``tol`` (recorded in the certificate); otherwise one retry at
        tighter solver tolerances, then SolverError."""
        return self._retrying(lambda **o: self._solve_conic_once(backend, **o), backend, tol, options)

    def _solve_conic_once(self, backend, *, tol: float = EXACT_TOL, **options) -> Solution:
        t0 = time.perf_counter()
        self._materialise()
        stats = solve_cvxpy(self._problem, backend, accept_inaccurate=True, quiet_inaccurate=True, **options)
        sol = Solution(
            backend=backend,
            status=stats["status"],
            objective=float("nan"),
            time=time.perf_counter() - t0,
            values=self._extract(),
            info=stats,
        )
        alpha = np.asarray(self._constraints.dual_value, dtype=float).ravel()
        return self._certified(sol, alpha, tol, multipliers=self._cone_multipliers())

    def ipm_solution(self, **opts) -> Solution:
        """The interior point's point at the current parameters, not yet certified: a Solution whose ``objective``
        is :meth:`objective`'s and whose ``info`` holds the run's multipliers (``alpha``, ``cone_multipliers``).
        ``opts`` go to :func:`~rsvm_conic.solvers.ipm.robust_svm.solve_robust_ipm`; SolverError unless the run
        reached its own tolerances or ``accept_inaccurate=True``."""
        from ..solvers.ipm.robust_svm import solve_robust_ipm

        unc = self.current_uncertainty()
        arrays = {}
        if unc is not None:
            if unc.q != 2.0:
                raise ValueError(
                    f"the 'ipm' backend handles p = 2 (ellipsoidal) uncertainty; this model has "
                    f"p = {unc.p:g}. Use solver='clarabel' for p = 1 or inf."
                )
            arrays = dict(gamma=unc.gamma, factors=unc.factors, diagonal=unc.diagonal, group_index=unc.group_index)
        t0 = time.perf_counter()
        values, info = solve_robust_ipm(self.X, self.y, self.C_box, **arrays, **opts)
        sol = Solution(backend="ipm", status=info["status"], objective=float("nan"), time=0.0, values=values, info=info)
        sol.time = time.perf_counter() - t0
        sol.objective = float(self.objective(sol))
        return sol

    def _solve_ipm(self, *, tol: float = EXACT_TOL, **options) -> Solution:
        """Structure-exploiting interior-point method (p = 2; see :mod:`rsvm_conic.solvers.ipm.robust_svm`).  A run
        that stops short of its own tolerances (``"numerical_error"``, ``"max_iter"``; e.g. a large C, where its KKT
        systems lose accuracy first) is judged by the certificate like any other point: kept when its certified gap
        meets ``tol`` (the status is recorded), else SolverError naming the status.  The run may stop early, at
        relative gap ``IPM_GAP_SHARE * tol`` and residuals ``IPM_FEAS`` where the decision values are resolved
        (:func:`decisions_resolved`), unless ``options`` set the interior point's tolerances; and it goes on to
        ``IPM_HOLD_GAP`` where they are neither resolved nor at round-off level (:func:`decisions_decided`), unless
        ``options`` set ``hold``."""
        import warnings

        from ..exceptions import SolverWarning

        def once(tol, **opts):
            quiet = "accept_inaccurate" not in opts
            with warnings.catch_warnings():
                if quiet:  # the certificate decides, and its SolverError names the status
                    warnings.simplefilter("ignore", SolverWarning)
                samples = self.samples
                if not {"tol_gap_rel", "tol_feas", "early"} & set(opts):
                    opts["early"] = (IPM_GAP_SHARE * tol, IPM_FEAS, lambda w: decisions_resolved(samples, w))
                opts.setdefault("hold", (IPM_HOLD_GAP, lambda w: decisions_decided(samples, w)))
                sol = self.ipm_solution(**({"accept_inaccurate": True} if quiet else {}), **opts)
            return self._certified(sol, sol.info.get("alpha"), tol, multipliers=sol.info.get("cone_multipliers"))

        return self._retrying(once, "ipm", tol, options)

    # ------------------------------------------------------------------ stochastic backends
    def _stochastic(self, name, **options) -> Solution:
        """The stochastic route ``name`` (``"sgd"`` or ``"prox"``) where the samples live: in memory
        (:meth:`~rsvm_conic.solvers.samples.InMemory.stochastic`) or, on row blocks, iterative parameter mixing
        certified by the dual bound over the blocks (:meth:`~rsvm_conic.solvers.samples.RowBlocks.stochastic`):
        SolverError unless the certified gap meets ``tol`` (a failed solve is never returned as a model)."""
        t0 = time.perf_counter()
        (w, b), cert, info = self.samples.stochastic(self._fit(), self.C, prox=name == "prox", **options)
        cert.floor = 1e-9 * self.C * self.X.shape[0]  # the same relative-gap convention as the exact routes
        return Solution(name, cert.status, cert.primal, time.perf_counter() - t0, {"w": w, "b": b}, info, cert)

    def _solve_sgd(self, **options) -> Solution:
        """Minibatch stochastic subgradient (see :mod:`rsvm_conic.solvers.stochastic`)."""
        return self._stochastic("sgd", **options)

    def _solve_prox(self, **options) -> Solution:
        """Stochastic proximal gradient (see :mod:`rsvm_conic.solvers.stochastic`)."""
        return self._stochastic("prox", **options)
