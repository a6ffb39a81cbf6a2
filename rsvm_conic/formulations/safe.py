"""Safe SVM ([CJ20], eq. 7; [CW17]): learn the uncertainty ellipsoid on validation data::

    min_{sigma}   sum_v l(y_v, <w*, x_v> + b*)                       (validation hinge)
    s.t.          sigma_min <= sigma_t <= sigma_max
                  (w*, b*) = argmin 1/2 ||w||^2 + C sum_i max{0, 1 - y_i(<w, x_i> + b) + ||diag(sigma) w||_2}

(eq. 7 with lam = 1/C; Sigma_sigma = diag(sigma)^2, p = q = 2, gamma_i = 1 so that sigma holds the
ellipsoid's semi-axes).

Two backends (``BACKENDS``; ``solve(backend)``), both on the same smoothed problem: both levels
replace ``max{0, z}`` by the softplus ``tau log(1 + exp(z / tau))`` and the lower level replaces
``||diag(sigma) w||_2`` by ``sqrt(||diag(sigma) w||^2 + eps^2)``; the lower level is then smooth and
strongly convex in w.

* ``"hypergradient"`` (default; a documented alternative to the paper's method): the lower level is
  solved to machine precision by a damped Newton method (dimension n + 1) and the implicit function
  theorem gives the exact hypergradient of the smoothed upper objective,

      dF/dsigma = -(d^2 g / d theta d sigma)' H^{-1} grad_theta F,     theta = (w, b),  H = d^2 g / d theta^2,

  (checked against finite differences in the tests); projected gradient descent with Armijo
  backtracking on the box gives sigma (:func:`~rsvm_conic.solvers.bilevel.hypergradient_descent`).  Each
  iteration costs one Newton solve (O(L n^2 + n^3)).
* ``"stochastic_bilevel"``: the stochastic bi-level gradient method with which [CJ20] solve eq. (7)
  ([CW16], [CW17]): minibatch stochastic gradient steps on the lower level, a stochastic hypergradient
  from minibatches of both levels, diminishing outer steps (:mod:`rsvm_conic.solvers.bilevel`).

Both end the same way: the exact (non-smoothed) robust SVM is re-solved at the learned sigma and
certified (``"hypergradient"``: the structured interior point, gap 1e-6; ``"stochastic_bilevel"``: the
stochastic proximal method of [CJ20, eq. 5] warm-started at the method's own iterate, certified by the
robust-hinge dual bound of :mod:`rsvm_conic.certify.hinge`); the returned ``objective`` is the
exact validation hinge of that lower-level solution, the same quantity for both backends, so the shared
runner compares them (``rsvm-conic check safe-svm-bilevel``).  The certificate covers the lower level
only: eq. (7) is non-convex in sigma, and neither backend certifies the upper level (the hypergradient
route stops at a stationary point of the smoothed problem, the stochastic route after a fixed budget).
``tau -> 0`` recovers the non-smooth problem.

The paper's qualitative claim -- the learned ellipsoid grows with the noise variance -- is NOT
reproduced with eq. (7) as printed: two Gaussian classes in R^2, training and validation inputs
with added N(0, v I) noise, box [0.05, 3], 6 seeds: mean volume prod(sigma) = 0.51, 0.33, 0.12,
0.018 for v = 0, 0.1, 0.3, 1 (it shrinks; with validation data kept clean it shrinks too).  A
likely reason: the same ||diag(sigma) w|| is added to every active sample, so a fixed sigma
regularises more when more samples are active (noisier data), and the validation hinge, which
rewards large ||w||, then asks for a smaller sigma.  The paper's own stochastic bi-level method
shrinks it too (0.159, 0.161, 0.055, 0.022 on the same seeds).  tests/test_safe_svm.py keeps the claim as a
strict xfail.  Note also that sigma = 0 is a kink of ||diag(sigma) w|| (zero smoothed gradient),
so sigma_min > 0 is advisable.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from .._validation import (
    check_binary_labels,
    check_bounds,
    check_labels_of,
    check_positive,
    check_sample_weight,
    check_X,
)
from ..solvers.bilevel import SmoothedBilevel, hypergradient, hypergradient_descent, solve_lower, stochastic_bilevel
from ..certify.contract import Solution, SolveInfo
from ..uncertainty.sets import UncertaintySet
from .base import Formulation


@dataclass
class SafeResult(Solution):
    """A :class:`~rsvm_conic.certify.contract.Solution` (``backend``, ``status``, ``objective`` = exact validation
    hinge at the certified lower-level solution, ``values = {sigma, w, b}``, ``certificate`` = the lower level's)
    plus the upper-level search.

    Attributes
    ----------
    backend, status, objective, time, values, info, certificate
        Those of :class:`~rsvm_conic.certify.contract.Solution`.
    sigma : ndarray of shape (n,)
        The learned semi-axes.
    w, b
        The certified lower-level solution at ``sigma``.
    smoothed_objective : float
        The smoothed validation loss at ``sigma``, at the method's own lower-level iterate.
    val_hinge : float
        The exact validation hinge at the certified lower-level solution (= ``objective``).
    iterations : int
        Upper-level iterations.
    converged : bool
        Whether the upper-level search met its stopping test.
    history : list
        The upper-level objective per iteration.
    """

    sigma: np.ndarray | None = None
    w: np.ndarray | None = None
    b: float = 0.0
    smoothed_objective: float = math.nan  # smoothed validation loss at sigma, at the method's own lower iterate
    val_hinge: float = math.nan  # exact validation hinge at the certified lower-level solution (= objective)
    iterations: int = 0
    converged: bool = False
    history: list = field(default_factory=list)


class SafeProblem(Formulation):
    """Bi-level safe SVM (eq. 7), solved by the hypergradient or the stochastic bi-level method; see the module
    docstring.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        Training inputs (lower level).
    y : array-like of shape (L,)
        Training labels, any two values.
    X_val : ndarray of shape (L_val, n)
        Validation inputs (upper level).
    y_val : array-like of shape (L_val,)
        Validation labels, from the two classes of ``y``.
    C : float, default=1.0
        Weight of the robust hinge loss of the lower level (``lam = 1/C`` in eq. 7).
    sigma_min, sigma_max : float or ndarray of shape (n,), default=0.0, 1.0
        Box for the semi-axes (``sigma_min > 0`` is advisable: sigma = 0 is a kink).
    tau : float, default=0.05
        Softplus smoothing of the hinge on both levels.
    eps : float, default=1e-3
        Smoothing of ``||diag(sigma) w||_2`` as ``sqrt(||diag(sigma) w||^2 + eps^2)``.
    sample_weight : array-like of shape (L,) or None, default=None
        Nonnegative weights of the training rows' loss terms (lower level and the certified robust SVM at the
        learned sigma); the ``hypergradient`` backend takes them, ``stochastic_bilevel`` raises a ValueError.
    sample_weight_val : array-like of shape (L_val,) or None, default=None
        Nonnegative weights of the validation rows' loss terms (upper level).
    """

    name = "safe"
    BACKENDS = {
        "hypergradient": "exact hypergradient (implicit function theorem, Newton lower level), projected descent; "
        "certificate: lower level at the learned sigma (interior point, duality gap); upper level uncertified",
        "stochastic_bilevel": "stochastic bi-level gradient method of [CJ20] / [CW16] (minibatches on both levels); "
        "certificate: lower level at the learned sigma (stochastic proximal, dual bound); upper level uncertified",
    }
    conic_backends = ()

    def __init__(
        self,
        X,
        y,
        X_val,
        y_val,
        C=1.0,
        sigma_min=0.0,
        sigma_max=1.0,
        tau=0.05,
        eps=1e-3,
        sample_weight=None,
        sample_weight_val=None,
    ):
        self.X = check_X(X)
        n = self.X.shape[1]
        self.y, classes = check_binary_labels(y, self.X.shape[0])
        self.X_val = check_X(X_val, "X_val", n_features=n)
        self.y_val = check_labels_of(y_val, classes, self.X_val.shape[0])
        self.classes = classes
        self.C = check_positive(C, "C")
        self.sigma_min, self.sigma_max = check_bounds(sigma_min, sigma_max, n)
        self.tau = check_positive(tau, "tau")
        self.eps = check_positive(eps, "eps")
        # the weights of the training and validation rows' loss terms (1: unweighted); the hypergradient route
        # takes them
        self.sample_weight = 1.0 if sample_weight is None else check_sample_weight(sample_weight, self.X.shape[0])
        self.sample_weight_val = (
            1.0 if sample_weight_val is None else check_sample_weight(sample_weight_val, self.X_val.shape[0])
        )
        self._theta = np.zeros(n + 1)
        self.parameters, self.variables = {}, {}

    # ------------------------------------------------------------------ the two levels (solvers.bilevel)
    def smoothed(self) -> SmoothedBilevel:
        """The smoothed bi-level problem's data at the current ``C``, ``tau`` and ``eps``."""
        weights = (self.sample_weight, self.sample_weight_val)
        return SmoothedBilevel(self.X, self.y, self.X_val, self.y_val, self.C, self.tau, self.eps, *weights)

    def lower_objective(self, theta, sigma) -> float:
        """The smoothed lower level at ``theta = (w, b)``
        (:meth:`~rsvm_conic.solvers.bilevel.SmoothedBilevel.lower_objective`)."""
        return self.smoothed().lower_objective(theta, sigma)

    def solve_lower(self, sigma, theta0=None, tol=1e-10, max_iter=200):
        """The smoothed lower level's ``theta = (w, b)`` (:func:`~rsvm_conic.solvers.bilevel.solve_lower`), warm-started
        from ``theta0`` or the previous solve's point (a cold start on the first solve)."""
        theta0 = self._warm_theta() if theta0 is None else theta0
        self._theta = solve_lower(self.smoothed(), np.asarray(sigma, dtype=float), theta0, tol, max_iter)
        return self._theta

    def _warm_theta(self):
        return self._theta if np.any(self._theta) else None

    def upper_objective(self, theta) -> float:
        return self.smoothed().upper_objective(theta)

    def validation_hinge(self, theta) -> float:
        """The exact weighted validation hinge at ``theta = (w, b)``
        (:meth:`~rsvm_conic.solvers.bilevel.SmoothedBilevel.validation_hinge`)."""
        return self.smoothed().validation_hinge(theta)

    def hypergradient(self, sigma, theta=None):
        """(F(sigma), dF/dsigma) of the smoothed bi-level problem by implicit differentiation
        (:func:`~rsvm_conic.solvers.bilevel.hypergradient`)."""
        sigma = np.asarray(sigma, dtype=float)
        return hypergradient(self.smoothed(), sigma, self.solve_lower(sigma) if theta is None else theta)

    # ------------------------------------------------------------------ backends
    def solve(self, backend: str = "hypergradient", **options) -> SafeResult:
        """Learn sigma with ``backend`` (see ``BACKENDS``; ``"auto"`` tries them in order), then re-solve and
        certify the exact lower level at it; returns a :class:`SafeResult`."""
        return super().solve(backend, **options)

    def auto_routes(self) -> tuple[str, ...]:
        """The backends in order; with sample weights the one that takes them (``hypergradient``)."""
        if np.ndim(self.sample_weight) or np.ndim(self.sample_weight_val):
            return ("hypergradient",)
        return tuple(self.BACKENDS)

    def _solve_hypergradient(self, sigma0=None, max_iter=100, step0=1.0, tol=1e-6, lower_tol=1e-6) -> SafeResult:
        """Projected hypergradient descent on the box [sigma_min, sigma_max] with Armijo backtracking
        (:func:`~rsvm_conic.solvers.bilevel.hypergradient_descent`)."""
        t0 = time.perf_counter()
        box = (self.sigma_min, self.sigma_max)
        options = {"sigma0": sigma0, "max_iter": max_iter, "step0": step0, "tol": tol}
        res = hypergradient_descent(self.smoothed(), *box, theta0=self._warm_theta(), **options)
        self._theta = res.theta
        search = (res.sigma, res.F, res.iterations, res.converged, res.history, t0)
        detail = {"step_tol": tol, "lower_solves": res.lower_solves}
        return self._finish("hypergradient", *search, "ipm", {"tol": lower_tol}, detail)

    def _solve_stochastic_bilevel(self, sigma0=None, seed=0, lower_tol=1e-4, lower_options=None, **options):
        """The stochastic bi-level gradient method (:func:`~rsvm_conic.solvers.bilevel.stochastic_bilevel`;
        ``options`` go to it: ``n_outer``, ``inner_steps``, ``batch_size``, ``hyper_batch``, ``val_batch``,
        ``eta0``, ``beta0``, ``warmup``), then the stochastic proximal method on the exact lower level at the
        learned sigma, warm-started at the method's iterate and certified to ``lower_tol`` (``lower_options``
        go to it)."""
        if np.ndim(self.sample_weight) or np.ndim(self.sample_weight_val):
            raise ValueError(
                "the stochastic_bilevel route does not take sample weights; the route that does: hypergradient."
            )
        t0 = time.perf_counter()
        data = (self.X, self.y, self.X_val, self.y_val, self.C, self.sigma_min, self.sigma_max)
        res = stochastic_bilevel(*data, sigma0=sigma0, tau=self.tau, eps=self.eps, seed=seed, **options)
        theta = np.append(res.w, res.b)
        smoothed = self.upper_objective(theta)
        lower = {"tol": lower_tol, "seed": seed, "w0": res.w, "b0": res.b, "max_epochs": 2000}
        lower.update(lower_options or {})
        detail = {"inner_steps": res.inner_steps, "eta0": res.eta0, "beta0": res.beta0, "seed": seed}
        return self._finish(
            "stochastic_bilevel", res.sigma, smoothed, res.iterations, False, res.history, t0, "prox", lower, detail
        )

    def _finish(self, route, sigma, smoothed, iterations, converged, history, t0, lower_route, lower_opts, detail):
        """Re-solve the exact robust SVM at sigma by ``lower_route`` (certified), score it on the validation data."""
        from .robust import RobustProblem

        rob = RobustProblem(
            self.X,
            self.y,
            UncertaintySet(Sigma=sigma**2, radius=1.0),
            C=self.C,
            check_input=False,
            sample_weight=self.sample_weight if np.ndim(self.sample_weight) else None,
        )
        low = rob.solve(lower_route, **lower_opts)
        w, b = np.asarray(low["w"], dtype=float), float(low["b"])
        upper = self.validation_hinge(np.append(w, b))
        lower = low.certificate or SolveInfo(route, "uncertified", low.objective, tol=0.0)  # a route without bound
        detail = {
            "certified": "lower level at the learned sigma only (eq. 7 is non-convex in sigma)",
            "lower_route": lower_route,
            "upper_objective": upper,
            "smoothed_upper_objective": smoothed,
            **detail,
        }
        info = replace(lower, route=route, iterations=iterations, time=time.perf_counter() - t0, detail=detail)
        values = {"sigma": sigma.copy(), "w": w, "b": b}
        search = {"iterations": iterations, "converged": converged, "history": history}
        return SafeResult(
            route, info.status, upper, info.time, values, {"iterations": iterations, "lower": low.info}, info,
            sigma=sigma.copy(), w=w, b=b, smoothed_objective=smoothed, val_hinge=upper, **search,
        )  # fmt: skip

    def objective(self, solution) -> float:
        """The exact validation hinge of the solution's lower-level (w, b)."""
        return self.validation_hinge(np.append(solution["w"], solution["b"]))

    def decision_function(self, solution, X) -> np.ndarray:
        return check_X(X, n_features=self.X.shape[1]) @ solution["w"] + solution["b"]


def safe_svm(X, y, X_val, y_val, C=1.0, sigma_min=0.0, sigma_max=1.0, **kwargs) -> SafeProblem:
    """Build the bi-level safe SVM (eq. 7); the parameters are those of :class:`SafeProblem`.

    Parameters
    ----------
    X, y, X_val, y_val, C, sigma_min, sigma_max
        See :class:`SafeProblem`.
    **kwargs
        ``tau``, ``eps``, ``sample_weight``, ``sample_weight_val`` of :class:`SafeProblem`.

    Returns
    -------
    SafeProblem
    """
    return SafeProblem(X, y, X_val, y_val, C, sigma_min, sigma_max, **kwargs)
