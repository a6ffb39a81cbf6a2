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
  backtracking on the box gives sigma.  Each iteration costs one Newton solve (O(L n^2 + n^3)).
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
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_binary_labels, check_positive, check_sample_weight, check_X
from ..solvers.bilevel import lower_derivatives, softplus, stochastic_bilevel, upper_gradient
from ..certify.contract import Solution, SolveInfo
from ..uncertainty.sets import UncertaintySet
from .base import Formulation


@dataclass
class SafeResult(Solution):
    """A :class:`~rsvm_conic.certify.contract.Solution` (``backend``, ``status``, ``objective`` = exact validation
    hinge at the certified lower-level solution, ``values = {sigma, w, b}``, ``certificate`` = the lower level's)
    plus the upper-level search."""

    sigma: np.ndarray | None = None
    w: np.ndarray | None = None
    b: float = 0.0
    smoothed_objective: float = math.nan  # smoothed validation loss at sigma, at the method's own lower iterate
    val_hinge: float = math.nan  # exact validation hinge at the certified lower-level solution (= objective)
    iterations: int = 0
    converged: bool = False
    history: list = field(default_factory=list)


class SafeSVM(Formulation):
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
        yv = np.asarray(y_val)
        if yv.ndim != 1 or yv.shape[0] != self.X_val.shape[0] or not np.all(np.isin(yv, classes)):
            raise ValueError("y_val must hold one label per row of X_val, from the two classes of y.")
        self.y_val = np.where(yv == classes[1], 1.0, -1.0)
        self.classes = classes
        self.C = check_positive(C, "C")
        lo = np.broadcast_to(np.asarray(sigma_min, dtype=float), (n,)).copy()
        hi = np.broadcast_to(np.asarray(sigma_max, dtype=float), (n,)).copy()
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))) or np.any(lo < 0) or np.any(hi < lo):
            raise ValueError("need 0 <= sigma_min <= sigma_max (finite), as scalars or one value per feature.")
        self.sigma_min, self.sigma_max = lo, hi
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

    # ------------------------------------------------------------------ lower level
    def _parts(self, theta, sigma):
        X, y = self.X, self.y
        w, b = theta[:-1], theta[-1]
        r = np.sqrt(np.sum((sigma * w) ** 2) + self.eps**2)
        z = 1.0 - y * (X @ w + b) + r
        return w, b, r, z

    def lower_objective(self, theta, sigma) -> float:
        w, _, _, z = self._parts(theta, sigma)
        return 0.5 * float(w @ w) + self.C * float(np.sum(self.sample_weight * softplus(z, self.tau)))

    def _grad_hess(self, theta, sigma, mixed=False):
        grad, H, J, _ = lower_derivatives(
            self.X, self.y, self.C, theta, sigma, self.tau, self.eps, weight=self.sample_weight, mixed=mixed
        )
        return grad, H, J

    def solve_lower(self, sigma, theta0=None, tol=1e-10, max_iter=200):
        """Damped (Levenberg-regularised) Newton on the smoothed lower level; returns theta = (w, b).

        Cold starts go through a continuation in tau (1, 0.1, ..., tau) so that the softplus is
        never followed from far away at its sharpest.
        """
        sigma = np.asarray(sigma, dtype=float)
        if theta0 is None and not np.any(self._theta):
            theta, tau_final = np.zeros_like(self._theta), self.tau
            for t in [10.0**-k for k in range(0, 8) if 10.0**-k > tau_final]:
                self.tau = t
                theta = self._newton(sigma, theta, 1e-6, max_iter)
            self.tau = tau_final
        else:
            theta = self._theta.copy() if theta0 is None else np.array(theta0, dtype=float)
        theta = self._newton(sigma, theta, tol, max_iter)
        self._theta = theta
        return theta

    def _newton(self, sigma, theta, tol, max_iter):
        f = self.lower_objective(theta, sigma)
        mu = 1e-10
        eye = np.eye(theta.shape[0])
        for _ in range(max_iter):
            g, H, _ = self._grad_hess(theta, sigma)
            if np.linalg.norm(g) <= tol * max(1.0, abs(f)):
                break
            accepted = False
            while mu < 1e12:
                step = np.linalg.solve(H + mu * eye, g)
                t = 1.0
                while t >= 1e-4:
                    cand = theta - t * step
                    fc = self.lower_objective(cand, sigma)
                    if fc <= f - 1e-4 * t * float(g @ step):
                        accepted = True
                        break
                    t *= 0.5
                if accepted:
                    break
                mu *= 100.0
            if not accepted:
                break  # no descent possible at machine precision
            theta, f = cand, fc
            mu = max(mu / 100.0, 1e-10)
        return theta

    # ------------------------------------------------------------------ upper level
    def upper_objective(self, theta) -> float:
        return upper_gradient(self.X_val, self.y_val, theta, self.tau, self.sample_weight_val)[0]

    def validation_hinge(self, theta) -> float:
        m = self.y_val * (self.X_val @ theta[:-1] + theta[-1])
        return float(np.sum(self.sample_weight_val * np.maximum(0.0, 1.0 - m)))

    def hypergradient(self, sigma, theta=None):
        """(F(sigma), dF/dsigma) of the smoothed bi-level problem by implicit differentiation."""
        sigma = np.asarray(sigma, dtype=float)
        theta = self.solve_lower(sigma) if theta is None else theta
        _, H, J = self._grad_hess(theta, sigma, mixed=True)
        F, gF = upper_gradient(self.X_val, self.y_val, theta, self.tau, self.sample_weight_val)
        v = np.linalg.solve(H + 1e-12 * np.eye(H.shape[0]), gF)
        return F, -J.T @ v

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
        """Projected hypergradient descent on the box [sigma_min, sigma_max] with Armijo backtracking."""
        t0 = time.perf_counter()
        lo, hi = self.sigma_min, self.sigma_max
        sigma = np.clip(0.5 * (lo + hi) if sigma0 is None else np.asarray(sigma0, dtype=float), lo, hi)
        F, g = self.hypergradient(sigma)
        theta = self._theta.copy()
        step = step0
        history = [(0, F, sigma.copy())]
        converged = False
        it = 0
        for it in range(1, max_iter + 1):
            while True:
                cand = np.clip(sigma - step * g, lo, hi)
                th = self.solve_lower(cand, theta)
                Fc = self.upper_objective(th)
                if Fc <= F - 1e-4 * float(g @ (sigma - cand)) or step < 1e-10:
                    break
                step *= 0.5
            moved = np.linalg.norm(cand - sigma)
            sigma, theta, Fprev = cand, th, F
            F, g = self.hypergradient(sigma, theta)
            history.append((it, F, sigma.copy()))
            step *= 2.0
            if moved <= tol * max(1.0, np.linalg.norm(sigma)) or abs(Fprev - F) <= tol * max(1.0, abs(F)):
                converged = True
                break
        return self._finish(
            "hypergradient", sigma, F, it, converged, history, t0, "ipm", {"tol": lower_tol}, {"step_tol": tol}
        )

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
        res = stochastic_bilevel(
            self.X,
            self.y,
            self.X_val,
            self.y_val,
            self.C,
            self.sigma_min,
            self.sigma_max,
            sigma0=sigma0,
            tau=self.tau,
            eps=self.eps,
            seed=seed,
            **options,
        )
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
        from .robust import RobustSVM

        rob = RobustSVM(
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
        lc = low.certificate
        info = SolveInfo(
            route=route,
            status=lc.status if lc is not None else "uncertified",
            primal=lc.primal if lc is not None else low.objective,
            dual=lc.dual if lc is not None else -math.inf,
            tol=lc.tol if lc is not None else 0.0,
            iterations=iterations,
            time=time.perf_counter() - t0,
            floor=lc.floor if lc is not None else 0.0,
            detail={
                "certified": "lower level at the learned sigma only (eq. 7 is non-convex in sigma)",
                "lower_route": lower_route,
                "upper_objective": upper,
                "smoothed_upper_objective": smoothed,
                **detail,
            },
        )
        return SafeResult(
            backend=route,
            status=info.status,
            objective=upper,
            time=info.time,
            values={"sigma": sigma.copy(), "w": w, "b": b},
            info={"iterations": iterations, "lower": low.info},
            certificate=info,
            sigma=sigma.copy(),
            w=w,
            b=b,
            smoothed_objective=smoothed,
            val_hinge=upper,
            iterations=iterations,
            converged=converged,
            history=history,
        )

    def objective(self, solution) -> float:
        """The exact validation hinge of the solution's lower-level (w, b)."""
        return self.validation_hinge(np.append(solution["w"], solution["b"]))

    def decision_function(self, solution, X) -> np.ndarray:
        return check_X(X, n_features=self.X.shape[1]) @ solution["w"] + solution["b"]


def safe_svm(X, y, X_val, y_val, C=1.0, sigma_min=0.0, sigma_max=1.0, **kwargs) -> SafeSVM:
    """Build the bi-level safe SVM (eq. 7); the parameters are those of :class:`SafeSVM`."""
    return SafeSVM(X, y, X_val, y_val, C, sigma_min, sigma_max, **kwargs)
