"""Formulation (15) of [BBBB10]: SVMs robust to noise in the kernel matrix.

.. math::

    \\min_{t,\\ \\alpha\\in S_n} \\tfrac12 t - e'\\alpha \\quad\\text{s.t.}\\quad
    \\alpha' Y\\bar K Y\\alpha + \\kappa\\sqrt{\\textstyle\\sum_{ij}\\beta_{ij}\\alpha_i^2\\alpha_j^2}\\le t,
    \\qquad S_n = \\{0\\le\\alpha\\le C,\\ y'\\alpha = 0\\}.

Eliminating ``t``, the objective is ``F(alpha) = 1/2 alpha'Q alpha + kappa/2 sqrt(nu' beta nu) -
e'alpha`` with ``Q = Y K_bar Y`` and ``nu = alpha * alpha``.  The classes here build the CVXPY models, order
the routes and turn a route's arrays into a certified :class:`Solution`; the routes, their certificates and
their polishing take arrays (:mod:`rsvm_conic.solvers.kernel_uncertainty`).  Three routes (Sec. 3):

* :class:`KernelRobustQPProblem` (Thm 4): ``beta`` replaced by the rank-one ``rho rho'`` of Sec. 5.1; then (15) is
  the SVM dual with kernel ``K_bar + kappa diag(rho)``.  Backends: ``"libsvm"`` (the solve of
  scikit-learn's ``SVC(kernel="precomputed")`` through its low-level ``_libsvm.fit``, the fast path) and
  ``"clarabel"``/``"scs"`` (CVXPY model).
* :class:`KernelRobustSOCPProblem` (Thm 6, eq. 16): ``beta`` replaced by its PSD part ``B'B``; DPP CVXPY model with
  ``C`` and ``kappa`` as parameters (backends ``"clarabel"``, ``"scs"``), plus ``"newton"`` (the
  default): projected Newton on ``F`` over ``S_n`` warm-started by libsvm
  (:func:`~rsvm_conic.solvers.rsvm_socp.solve_rsvm_socp`), certified by the Frank-Wolfe duality gap
  ``max_{s in S_n} grad F(alpha)'(alpha - s) <= tol * max(1, |F|)`` with the multipliers
  ``lambda >= 0`` of ``alpha_i^2 <= nu_i``, and ``"ipm"``: the exact cone interior-point method on
  (16) in ``(alpha, nu)`` (:func:`~rsvm_conic.solvers.rsvm_socp.rsvm_socp_ipm`, also Newton's own
  fallback).  ``F``, its gradient, Hessian and multipliers are
  :class:`~rsvm_conic.solvers.rsvm_socp.RobustKernelObjective` (:meth:`KernelRobustSOCPProblem.dual_objective`).  When
  ``beta_hat`` is elementwise nonnegative, ``F`` is convex, the gap bounds ``F(alpha) - F*`` and
  (16) has ``nu = alpha^2`` at the optimum.  If ``beta_hat`` has negative entries (the PSD part of a
  nonnegative matrix can), Thm 6's relaxation ``alpha_i^2 <= nu_i`` may be slack;
  ``info["beta_hat_min"]`` reports it and the cone IPM, exact for (16) in any case, certifies it.  A failed
  ``"newton"`` or uncertified ``"ipm"`` run raises :class:`SolverError`; ``solve(("newton", "clarabel"))`` tries
  the routes in turn, warning at each fallback (the one chain, :meth:`Formulation.solve`).
* :class:`KernelRobustQNProblem` (case 3, eq. 17): the original ``beta``; DFP quasi-Newton on the penalty
  function with multiple starts (backend ``"dfp"``, see :mod:`rsvm_conic.solvers.quasi_newton`).
  When ``kappa * beta = 0`` (noise-free kernel or ``kappa = 0``), (15) is the nominal SVM dual and
  ``"dfp"`` returns libsvm's exact solution instead (``info["reduced_to"]``).

Bias (Sec. 3): ``b = (1/#SV) [sum_{j in SV} y_j - sum_{i,j in SV} y_i alpha_i K_bar_ij]`` with
``SV = {i : alpha_i > sv_tol * C}``, ``sv_tol = 1e-6`` by default (the paper does not give a
threshold; 1e-6 separates zero from nonzero multipliers for libsvm, Clarabel (interior-point
multipliers of non-SVs are ~1e-9 C) and the projected gradient (exact zeros)).  ``bias="free"``
averages over free SVs ``sv_tol C < alpha_i < (1 - sv_tol) C`` only and, when every SV is at its
bound, takes the midpoint of the interval of ``b`` allowed by the KKT conditions (libsvm's rule
on ``K_bar``; with ``beta = 0`` the decision function is then libsvm's).
Decision function on test kernel rows ``K_rows`` (shape ``(..., n)``): ``K_rows @ (y * alpha) + b``.
"""

from __future__ import annotations

import time

import numpy as np

from .._validation import check_choice, check_positive, check_sample_weight, psd_factor
from ..certify.contract import SolveInfo
from ..exceptions import SolverError
from ..solvers import kernel_uncertainty as ku
from ..solvers.rsvm_socp import RobustKernelObjective
from ..uncertainty.kernel_matrix import psd_part, rank_one_approx, validate_kernel_problem
from .base import Formulation, Solution

__all__ = ["KernelRobustQPProblem", "KernelRobustSOCPProblem", "KernelRobustQNProblem", "CERT_TOL"]

#: relative duality gap a kernel-robust solve must certify (``SolveInfo.status == "optimal"``)
CERT_TOL = 1e-6


# ----------------------------------------------------------------------------------------
# common base
# ----------------------------------------------------------------------------------------
class _KernelRobustProblem(Formulation):
    name = "kernel-robust"

    def __init__(
        self,
        K_bar,
        y,
        beta,
        C=1.0,
        kappa=0.0,
        *,
        sv_tol: float = 1e-6,
        bias: str = "paper",
        check_input: bool = True,
        cert_tol: float = CERT_TOL,
        sample_weight=None,
        first_route: str | None = None,
    ):
        if check_input:
            self.K_bar, self.y, self.beta, C, kappa = validate_kernel_problem(K_bar, y, beta, C, kappa)
        else:  # trusted arrays (validated once at the caller's boundary): K_bar symmetric PSD, y in {-1, +1}
            self.K_bar, self.y, self.beta = K_bar, y, beta  # beta symmetric too (KernelUncertainty.beta is)
            C, kappa = check_positive(C, "C"), check_positive(kappa, "kappa", strict=False)
        self.cert_tol = check_positive(cert_tol, "cert_tol")
        self.n = self.K_bar.shape[0]
        if sample_weight is not None and check_input:
            sample_weight = check_sample_weight(sample_weight, self.n)
            if np.any(sample_weight == 0):
                raise ValueError("sample_weight has zeros: drop those samples (rows and columns of K_bar and beta).")
        #: the weights ``s_i`` of the box ``0 <= alpha_i <= C s_i`` (positive), or None
        self.sample_weight = None if sample_weight is None else np.asarray(sample_weight, dtype=float)
        self._Q = None
        self._F = None
        self._products = ku.KernelProducts(self.K_bar, self.y)  # Q a through K_bar's rows, with a memo
        self.sv_tol = check_positive(sv_tol, "sv_tol")
        self.bias = check_choice(bias, "bias", ("paper", "free"))
        self._values = {"C": C, "kappa": kappa}  # what the routes read; the CVXPY parameters follow on access
        self._cvx_parameters = None  # built by the first conic route: the other routes never need them
        self._problem = None
        self.variables = {}
        #: the route ``solve("auto")`` starts from (None: the first of ``BACKENDS``)
        self.first_route = None if first_route is None else check_choice(first_route, "first_route", self.BACKENDS)

    @classmethod
    def from_uncertainty(cls, uncertainty, y, noise: str, epsilon: float, C: float = 1.0, **kw):
        """The Gaussian (``noise="gaussian"``, RSVM^(g)) or finite-support (``"finite"``) variant from a
        :class:`~rsvm_conic.uncertainty.kernel_matrix.KernelUncertainty` and ``epsilon``, with the paper's
        ``kappa(epsilon, noise)``; for moments estimated from ``S`` samples the constructor takes
        ``kappa=kappa_estimated(epsilon, noise, S)`` (:func:`~rsvm_conic.uncertainty.chance.kappa_estimated`)."""
        from ..uncertainty.chance import kappa as kappa_of

        check_choice(noise, "noise", ("gaussian", "finite"))
        k = kappa_of(epsilon, noise)  # raises for Gaussian epsilon > 0.5 (kappa < 0)
        return cls(uncertainty.K_bar, y, uncertainty.beta(noise), C=C, kappa=k, **kw)

    @property
    def Q(self) -> np.ndarray:
        """``Y K_bar Y`` (built on first use: the libsvm route never needs it)."""
        if self._Q is None:
            self._Q = (self.y[:, None] * self.K_bar) * self.y[None, :]
        return self._Q

    def dual_objective(self) -> RobustKernelObjective:
        """``F(alpha) = 1/2 t(alpha) - e'alpha`` (the objective of (15) with ``t`` eliminated) at the current
        ``kappa``: :class:`~rsvm_conic.solvers.rsvm_socp.RobustKernelObjective` with this route's matrix
        (RSVM_SOCP: ``beta_hat``; RSVM_QN: the original ``beta``)."""
        if self._F is None:
            M, B = self._robust_matrix()
            self._F = RobustKernelObjective(self.Q, M, 0.0, B)
        return self._F.at_kappa(self.kappa)

    def _robust_matrix(self):  # pragma: no cover - overridden
        """``(M, B)``: the matrix of the robust term ``sqrt(nu'M nu)`` and a factor ``B'B = M`` (or None)."""
        raise NotImplementedError

    def _Qa(self, a) -> np.ndarray:
        """``Q @ a`` (:meth:`~rsvm_conic.solvers.kernel_uncertainty.KernelProducts.Qa`)."""
        return self._products.Qa(a)

    def _dual(self) -> ku.KernelDual:
        """Problem (15) at the current ``(C, kappa)`` as arrays (:mod:`rsvm_conic.solvers.kernel_uncertainty`)."""
        return ku.KernelDual(self._products, self.box, self._box_total(), self.cert_tol)

    # parameters as plain attributes (for other solvers plugging in)
    @property
    def C(self) -> float:
        return float(self._values["C"])

    @property
    def kappa(self) -> float:
        return float(self._values["kappa"])

    @property
    def box(self):
        """The upper bounds of ``alpha``: ``C``, or ``C s_i`` per sample with ``sample_weight``."""
        return self.C if self.sample_weight is None else self.C * self.sample_weight

    def _box_total(self) -> float:
        return self.C * (self.n if self.sample_weight is None else float(np.sum(self.sample_weight)))

    @property
    def parameters(self) -> dict:
        """The CVXPY parameters ``C`` and ``kappa`` of the conic models, brought up to date with :meth:`set_params`
        when read (:meth:`~rsvm_conic.formulations.base.Formulation._synced`)."""
        return self._sync_parameters()

    def _sync_parameters(self) -> dict:
        import cvxpy as cp

        if self._cvx_parameters is None:
            self._cvx_parameters = {key: cp.Parameter(nonneg=True, name=key) for key in ("C", "kappa")}
        return self._synced(self._cvx_parameters)

    @property
    def problem(self):
        self._sync_parameters()  # the CVXPY parameters up to date before any conic solve
        if self._problem is None:
            self._problem = self._build()
        return self._problem

    def _build(self):  # pragma: no cover - overridden
        raise NotImplementedError

    def robust_term(self, alpha) -> float:
        """The robust term ``r(alpha)`` of ``t = alpha'Q alpha + kappa r(alpha)`` (of :meth:`dual_objective`)."""
        return self.dual_objective().robust_term(np.asarray(alpha, dtype=float))

    def t_value(self, alpha) -> float:
        """Left side of (15) at ``alpha`` (computed on the support of ``alpha``; at ``kappa = 0`` the robust term is
        not evaluated: RSVM_QP's needs an eigen-solve for ``rho``)."""
        a = np.asarray(alpha, dtype=float)
        quad = float(a @ self._Qa(a))
        return quad + self.kappa * self.robust_term(a) if self.kappa != 0.0 else quad

    def objective(self, solution: Solution) -> float:
        """``1/2 t - e'alpha`` in numpy (``t`` from the solution when present: same formula)."""
        a = solution["alpha"]
        t = solution.values.get("t")
        return 0.5 * (self.t_value(a) if t is None else t) - float(a.sum())

    def constraint_violation(self, alpha) -> float:
        """How far ``alpha`` is from the feasible set
        (:func:`~rsvm_conic.solvers.kernel_uncertainty.constraint_violation`)."""
        return ku.constraint_violation(alpha, self.y, self.box)

    def _nominal_alpha(self, polish: bool = False):
        """The nominal SVM dual solution on ``K_bar`` (libsvm; ``polish``: Newton-polished in double precision)."""
        return ku.nominal_alpha(self.K_bar, self.y, self.box, self.cert_tol, polish)

    # -- certificates ---------------------------------------------------------------------
    def certificate(self, alpha, route: str, **detail) -> SolveInfo:
        """The certificate of the feasible ``alpha`` by this route's dual (RSVM_QP:
        :meth:`~rsvm_conic.solvers.kernel_uncertainty.QPDual.certificate`, the SVM duality gap on the modified kernel;
        RSVM_SOCP: :meth:`~rsvm_conic.solvers.kernel_uncertainty.SOCPDual.certificate`, the Lagrangian bound of (16'),
        with the solver's ``nu`` in ``detail`` where it has one)."""
        return self._dual().certificate(alpha, route, **detail)

    def _solved(self, route: str, values: dict, cert: SolveInfo, info: dict, t0: float) -> Solution:
        """The Solution of ``route`` (``values`` from :meth:`_finish`) with its objective and certificate ``cert``."""
        sol = Solution(route, cert.status, float("nan"), time.perf_counter() - t0, values, info)
        sol.objective = self.objective(sol)
        return self._attach(sol, cert)

    def _attach(self, sol: Solution, cert: SolveInfo) -> Solution:
        """Record the certificate (``sol.certificate``) and its status."""
        cert.time = sol.time
        sol.certificate = cert
        sol.status = cert.status
        return sol

    def auto_routes(self) -> tuple[str, ...]:
        """``solve("auto")``: the routes of ``BACKENDS`` from :attr:`first_route` on, fastest certified first, as
        ``"<name>/<route>"`` (RSVM_QN adds its convex surrogate's)."""
        routes = tuple(self.BACKENDS)
        if self.first_route is not None:
            routes = routes[routes.index(self.first_route) :]
        return tuple(f"{self.name}/{route}" for route in routes)

    def _attempt(self, label: str, options: dict) -> Solution:
        name, _, route = label.rpartition("/")  # a plain route name (``solve(("newton", "clarabel"))``): this model's
        return (self if name in ("", self.name) else self.surrogate()).solve(route, **options)

    def surrogate(self) -> "_KernelRobustProblem":  # pragma: no cover - RSVM_QN's
        raise NotImplementedError

    def _what(self) -> str:
        return "KernelRobustSVC"

    def _solve_conic(self, backend, **options) -> Solution:
        """CVXPY + Clarabel/SCS, then the certificate at the returned point; an interior-point
        solution accurate to the solver's tolerance only (gap above ``cert_tol``, e.g. large C) is
        polished by Newton steps warm-started from it (:meth:`KernelDual.polished
        <rsvm_conic.solvers.kernel_uncertainty.KernelDual.polished>`: kept where it certifies a smaller gap)."""
        sol = super()._solve_conic(backend, **options)
        route = f"{self.name}/{backend}"
        detail = {"iterations": sol.info.get("iterations"), "solver_status": sol.info.get("status")}
        cert = self.certificate(sol["alpha"], route, nu=sol.values.get("nu"), **detail)
        t0 = time.perf_counter()
        a, cert_p = self._dual().polished(sol["alpha"], cert, route, **detail)
        if cert_p is not cert:
            sol.values.update(self._finish(a))
            sol.time += time.perf_counter() - t0
            sol.objective = float(self.objective(sol))
            cert = cert_p
        return self._attach(sol, cert)

    def _finish(self, alpha, extra=None) -> dict:
        """The solution's values at ``alpha`` made feasible (clipped to the box and, if ``y'alpha`` is off by more
        than round-off, projected onto ``S``): ``alpha``, the bias of [BBBB10, Sec. 3], ``t`` and ``extra``."""
        a = _KernelRobustProblem._dual(self).feasible(alpha)
        vals = {
            "alpha": a,
            "b": ku.paper_bias(a, self.y, self.K_bar, self.C, self.sv_tol, self.bias, self.sample_weight),
            "t": self.t_value(a),
        }
        if extra:
            vals.update(extra)
        return vals

    def decision_function(self, solution: Solution, K_rows) -> np.ndarray:
        """Scores ``K_rows @ (y * alpha) + b`` for kernel rows against the training points.

        ``K_rows`` has shape ``(m, n)`` or ``(S, m, n)`` (sampled rows).
        """
        K_rows = np.asarray(K_rows, dtype=float)
        if K_rows.shape[-1] != self.n:
            raise ValueError(f"kernel rows must have {self.n} columns (one per training point); got {K_rows.shape}.")
        return K_rows @ (self.y * solution["alpha"]) + solution["b"]

    def _cvx_common(self):
        import cvxpy as cp

        a = cp.Variable(self.n, name="alpha")
        # L L' = K_bar (validated PSD), null directions (eigenvalues <= 1e-12 max(1, lambda_max)) dropped
        L = psd_factor(self.K_bar, "K_bar", on_negative="clip", drop_tol=1e-12, drop_atol=1e-12)
        quad = cp.sum_squares(L.T @ cp.multiply(self.y, a)) if L.shape[1] else cp.Constant(0.0)
        top = self.parameters["C"] if self.sample_weight is None else self.parameters["C"] * self.sample_weight
        cons = [a >= 0, a <= top, self.y @ a == 0]
        return a, quad, cons


# ----------------------------------------------------------------------------------------
# RSVM_QP
# ----------------------------------------------------------------------------------------
class KernelRobustQPProblem(_KernelRobustProblem):
    """RSVM_QP (Thm 4): SVM with kernel ``K_bar + kappa diag(rho)``, ``rho rho'`` the rank-one
    approximation of ``beta`` from Sec. 5.1 (``rho`` may be passed directly).

    Parameters
    ----------
    K_bar : ndarray of shape (n, n)
        Mean kernel matrix (symmetric PSD).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    beta : ndarray of shape (n, n)
        Second-moment matrix of the kernel noise (eq. 9 / Lemma 1; symmetrised on input).
    C : float, default=1.0
        Box constraint ``0 <= alpha <= C``.
    kappa : float, default=0.0
        Chance-constraint factor (:func:`~rsvm_conic.uncertainty.chance.kappa`); 0 gives the nominal SVM.
    rho : ndarray of shape (n,) or None, default=None
        The rank-one factor; None: the leading eigenvector approximation of ``beta``.
    libsvm_tol : float, default=1e-7
        libsvm's own stopping tolerance (the certificate, not this, decides optimality).
    **kw
        ``sv_tol`` (support-vector threshold for the bias, default 1e-6), ``bias`` (``"paper"`` or ``"free"``),
        ``check_input`` (default True), ``cert_tol`` (certified relative gap, default 1e-6) and ``sample_weight``
        (positive weights ``s_i``: the weighted box ``0 <= alpha_i <= C s_i``; default None).
    """

    name = "rsvm-qp"
    #: the routes, fastest first (the estimator's ``solver`` choices and fallback order)
    BACKENDS = {
        "libsvm": "libsvm on the modified kernel, polished in double precision; certificate: "
        "Lagrangian/Frank-Wolfe bound",
        "clarabel": "CVXPY + Clarabel; certificate: recomputed bound on the numpy objective",
        "scs": "CVXPY + SCS; certificate: recomputed bound on the numpy objective",
    }

    def __init__(self, K_bar, y, beta, C=1.0, kappa=0.0, *, rho=None, libsvm_tol: float = 1e-7, **kw):
        super().__init__(K_bar, y, beta, C, kappa, **kw)
        self._rho = None if rho is None else self._checked_rho(np.asarray(rho, dtype=float))
        self.libsvm_tol = libsvm_tol
        self._Kmod = ku.ModifiedKernel(self.K_bar)

    def _checked_rho(self, rho):
        if rho.shape != (self.n,) or np.any(rho < 0):
            raise ValueError("rho must be a nonnegative vector with one entry per training point.")
        return rho

    @property
    def rho(self) -> np.ndarray:
        """The rank-one factor (computed from ``beta`` on first use, whatever ``kappa`` was at construction: a
        model built at ``kappa = 0`` and then given ``set_params(kappa=k)`` solves RSVM_QP, not the nominal SVM)."""
        if self._rho is None:
            # self.beta is symmetric: symmetrised by the validation, or trusted (KernelUncertainty.beta symmetrises)
            self._rho = self._checked_rho(rank_one_approx(self.beta, symmetric=True))
        return self._rho

    def _kappa_rho(self):
        """``kappa rho``, or None at ``kappa = 0`` (then no eigen-solve for ``rho``)."""
        return None if self.kappa == 0.0 else self.kappa * self.rho

    def robust_term(self, alpha) -> float:
        return float(self.rho @ (np.asarray(alpha) ** 2))

    def modified_kernel(self) -> np.ndarray:
        """``K_bar + kappa diag(rho)`` (:class:`~rsvm_conic.solvers.kernel_uncertainty.ModifiedKernel`: one copy, a new
        kappa only rewrites the diagonal)."""
        return self._Kmod.at(self.kappa, self._kappa_rho())

    def _build(self):
        import cvxpy as cp

        a, quad, cons = self._cvx_common()
        self.variables = {"alpha": a}
        obj = 0.5 * quad + 0.5 * self.parameters["kappa"] * (self.rho @ cp.square(a)) - cp.sum(a)
        return cp.Problem(cp.Minimize(obj), cons)

    def _extract(self) -> dict:
        return self._finish(self.variables["alpha"].value)

    def _dual(self) -> ku.QPDual:
        return ku.QPDual(
            self._products, self.box, self._box_total(), self.cert_tol, self._kappa_rho(), self.modified_kernel
        )

    def _solve_libsvm(self, **options) -> Solution:
        """libsvm on the modified kernel, polished in double precision where its gap misses ``cert_tol``, certified
        by the SVM duality gap (:func:`~rsvm_conic.solvers.kernel_uncertainty.libsvm_route`)."""
        t0 = time.perf_counter()
        opts = {"tol": options.get("tol", self.libsvm_tol)}
        opts.update({k: options[k] for k in ("cache_size", "shrinking") if k in options})
        a, cert, info = ku.libsvm_route(self._dual(), f"{self.name}/libsvm", **opts)
        return self._solved("libsvm", self._finish(a), cert, info, t0)


# ----------------------------------------------------------------------------------------
# RSVM_SOCP
# ----------------------------------------------------------------------------------------
class KernelRobustSOCPProblem(_KernelRobustProblem):
    """RSVM_SOCP (Thm 6, eq. 16) with ``beta_hat`` = PSD part of ``beta`` (Sec. 5.1).

    Parameters
    ----------
    K_bar : ndarray of shape (n, n)
        Mean kernel matrix (symmetric PSD).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    beta : ndarray of shape (n, n)
        Second-moment matrix of the kernel noise (eq. 9 / Lemma 1; symmetrised on input).
    C : float, default=1.0
        Box constraint ``0 <= alpha <= C``.
    kappa : float, default=0.0
        Chance-constraint factor (:func:`~rsvm_conic.uncertainty.chance.kappa`); 0 gives the nominal SVM.
    **kw
        ``sv_tol`` (support-vector threshold for the bias, default 1e-6), ``bias`` (``"paper"`` or ``"free"``),
        ``check_input`` (default True), ``cert_tol`` (certified relative gap, default 1e-6) and ``sample_weight``
        (positive weights ``s_i``: the weighted box ``0 <= alpha_i <= C s_i``; default None).

    Attributes for other solvers: ``K_bar``, ``Q``, ``y``, ``beta`` (original, symmetrised),
    ``beta_hat``, ``B`` (``B'B = beta_hat``), ``C``, ``kappa``.
    """

    name = "rsvm-socp"
    #: the routes, fastest first (the estimator's ``solver`` choices and fallback order)
    BACKENDS = {
        "newton": "projected Newton warm-started by libsvm (cone IPM as its own fallback); "
        "certificate: Frank-Wolfe gap",
        "ipm": "exact cone interior point on (16) in (alpha, nu), dense (2n+1) KKT system; certificate: "
        "Lagrangian bound (after projected Newton polishing), else its dual value",
        "clarabel": "CVXPY + Clarabel; certificate: recomputed bound on the numpy objective",
        "scs": "CVXPY + SCS; certificate: recomputed bound on the numpy objective",
    }

    def __init__(self, K_bar, y, beta, C=1.0, kappa=0.0, **kw):
        super().__init__(K_bar, y, beta, C, kappa, **kw)
        self.beta_hat, self.B = psd_part(self.beta)
        scale = max(float(np.max(np.abs(self.beta_hat))), 1e-300)
        self.beta_hat_min = float(np.min(self.beta_hat)) / scale  # < 0: relaxation of Thm 6 may be slack

    def _robust_matrix(self):
        return self.beta_hat, self.B

    def _build(self):
        import cvxpy as cp

        a, quad, cons = self._cvx_common()
        nu = cp.Variable(self.n, name="nu")
        self.variables = {"alpha": a, "nu": nu}
        obj = 0.5 * quad + 0.5 * self.parameters["kappa"] * cp.norm(self.B @ nu, 2) - cp.sum(a)
        return cp.Problem(cp.Minimize(obj), cons + [cp.square(a) <= nu])

    def _extract(self) -> dict:
        a = self.variables["alpha"].value
        nu = self.variables["nu"].value
        return self._finish(a, {"nu": nu, "relaxation_slack": float(np.max(nu - a**2))})

    def _dual(self) -> ku.SOCPDual:
        return ku.SOCPDual(self._products, self.box, self._box_total(), self.cert_tol, self.dual_objective())

    def _solve_newton(self, tol=None, max_iter=60, warm_start=None, svm_start=False) -> Solution:
        """Projected Newton on ``F`` from a libsvm start (or from ``warm_start``, e.g. the previous grid point's
        ``alpha``; ``svm_start=True`` uses only its multipliers, better after a change of C), with the exact cone
        IPM of (16') as its own fallback (:func:`~rsvm_conic.solvers.kernel_uncertainty.newton_route`, which
        factorises a dense (2n+1) KKT system per iteration).  A failed solve raises :class:`SolverError`; an
        uncertified one is returned with its status."""
        t0 = time.perf_counter()
        tol = 0.01 * self.cert_tol if tol is None else tol
        try:
            a, nu, cert, info = ku.newton_route(
                self._dual(), f"{self.name}/newton", tol, max_iter, warm_start, svm_start
            )
        except (SolverError, np.linalg.LinAlgError) as exc:
            raise SolverError(f"RSVM_SOCP projected Newton / cone IPM failed: {exc}.") from exc
        return self._solved("newton", self._finish(a, None if nu is None else {"nu": nu}), cert, info, t0)

    def _solve_ipm(self, max_iter=100, gap_tol=None, **ipm_options) -> Solution:
        """The exact cone IPM on (16') (:func:`~rsvm_conic.solvers.kernel_uncertainty.ipm_route`; ``ipm_options`` go
        to :func:`~rsvm_conic.solvers.ipm.engine.cone_ipm`), certified by :meth:`certificate` with the IPM's ``nu``
        (relative gap ``<= cert_tol``; ``gap_tol`` overrides ``cert_tol``); where a converged IPM's point misses
        it, after projected Newton polishing, else by the IPM's dual value.  Uncertified: :class:`SolverError`."""
        t0 = time.perf_counter()
        route = f"{self.name}/ipm"
        try:
            a, nu, cert, info = ku.ipm_route(self._dual(), self.Q, self.B, route, max_iter, gap_tol, **ipm_options)
        except np.linalg.LinAlgError as exc:  # KKT matrix not PD: not certified
            raise SolverError(f"RSVM_SOCP interior point failed: LinAlgError: {exc}.") from exc
        info.update({"beta_hat_min": self.beta_hat_min, "convex": self.beta_hat_min >= -1e-12})
        if cert.status != "optimal":
            why = f"status {info['status']!r} after {info['iterations']} iterations"
            raise SolverError(
                f"RSVM_SOCP interior point: {why}, certified relative gap {cert.gap_rel:.3g} > {cert.tol:g}."
            )
        return self._solved("ipm", self._finish(a, None if nu is None else {"nu": nu}), cert, info, t0)


# ----------------------------------------------------------------------------------------
# RSVM_QN
# ----------------------------------------------------------------------------------------
class KernelRobustQNProblem(_KernelRobustProblem):
    """RSVM_QN (eq. 17) with the original ``beta``; backend ``"dfp"`` (non-conic, ``problem`` is None).

    Starts: the previous solution (warm start, if any), the nominal SVM solution from libsvm,
    ``n_random`` random points, and any ``starts`` passed to ``solve``.

    Parameters
    ----------
    K_bar : ndarray of shape (n, n)
        Mean kernel matrix (symmetric PSD).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    beta : ndarray of shape (n, n)
        Second-moment matrix of the kernel noise (eq. 9 / Lemma 1; symmetrised on input).
    C : float, default=1.0
        Box constraint ``0 <= alpha <= C``.
    kappa : float, default=0.0
        Chance-constraint factor (:func:`~rsvm_conic.uncertainty.chance.kappa`); 0 gives the nominal SVM.
    n_random : int, default=1
        Random starts in ``[0, C]^n``.
    P_levels : int, default=2
        Penalty levels ``P = P0 * P_factor^k`` of the penalty function (17).
    P_factor : float, default=1000.0
        Growth of the penalty between levels.
    gtol : float, default=1e-9
        Gradient tolerance of each DFP minimisation.
    max_iter : int, default=1000
        DFP iterations per level.
    seed : int, default=0
        Seed of the random starts.
    nominal_start : bool, default=True
        Start from the nominal SVM solution (libsvm).
    **kw
        ``sv_tol`` (support-vector threshold for the bias, default 1e-6), ``bias`` (``"paper"`` or ``"free"``),
        ``check_input`` (default True), ``cert_tol`` (certified relative gap, default 1e-6) and ``sample_weight``
        (positive weights ``s_i``: the weighted box ``0 <= alpha_i <= C s_i``; default None).
    """

    name = "rsvm-qn"
    #: non-convex penalty (17); certificate: the relaxation bound (certified only when beta is near PSD)
    BACKENDS = {"dfp": "DFP quasi-Newton with multiple starts; certificate: the convex relaxation's bound"}

    def __init__(
        self,
        K_bar,
        y,
        beta,
        C=1.0,
        kappa=0.0,
        *,
        n_random: int = 1,
        P_levels: int = 2,
        P_factor: float = 1000.0,
        gtol: float = 1e-9,
        max_iter: int = 1000,
        seed: int = 0,
        nominal_start: bool = True,
        **kw,
    ):
        super().__init__(K_bar, y, beta, C, kappa, **kw)
        self.n_random, self.P_levels, self.P_factor = n_random, P_levels, P_factor
        self.gtol, self.max_iter, self.seed, self.nominal_start = gtol, max_iter, seed, nominal_start
        self._warm = self._surrogate = self._relax = self._relax_model = self._P0 = None

    def auto_routes(self) -> tuple[str, ...]:
        """DFP, then the routes of the conservative convex surrogate (:meth:`surrogate`, certified)."""
        return super().auto_routes() + tuple(
            f"{KernelRobustSOCPProblem.name}/{route}" for route in KernelRobustSOCPProblem.BACKENDS
        )

    def surrogate(self) -> "KernelRobustSOCPProblem":
        """RSVM_SOCP on the same data, weights and parameters (the convex model on the PSD part of beta), built
        once."""
        if self._surrogate is None:
            self._surrogate = self._socp(self.beta)
        return self._surrogate.set_params(C=self._values["C"], kappa=self._values["kappa"])

    def _socp(self, beta) -> "KernelRobustSOCPProblem":
        """RSVM_SOCP on this model's data and weights with the noise matrix ``beta`` (trusted)."""
        return KernelRobustSOCPProblem(self.K_bar, self.y, beta, sv_tol=self.sv_tol, bias=self.bias, check_input=False,
                        cert_tol=self.cert_tol, sample_weight=self.sample_weight)  # fmt: skip

    @property
    def problem(self):
        return None

    def _robust_matrix(self):
        return self.beta, None

    def _dual(self) -> ku.QNDual:
        """(15) with the original ``beta``, certified through :meth:`relaxation_bound` (the nominal SVM dual's bound
        when ``kappa * beta = 0``; :class:`~rsvm_conic.solvers.kernel_uncertainty.QNDual`)."""
        nominal = self.kappa == 0.0 or not np.any(self.beta)
        return ku.QNDual(self._products, self.box, self._box_total(), self.cert_tol, self.dual_objective(),
                         None if nominal else self.relaxation_bound)  # fmt: skip

    def relaxation_bound(self):
        """``(lower bound on OPT(15; beta), description, alpha of the relaxation)``: the bound of
        :class:`~rsvm_conic.solvers.kernel_uncertainty.Relaxation` (built once; it keeps the bound of the last
        ``(C, kappa)``)."""
        if self._relax is None:  # M and its eigenvalue problems: once per instance
            self._relax = ku.Relaxation(self.Q, self.beta)
        return self._relax.bound(self._products, self.box, self._box_total(), self.cert_tol, self.kappa,
                                 self._relaxation_conic)  # fmt: skip

    def _relaxation_conic(self):
        """The relaxation of :meth:`relaxation_bound` by Clarabel, ``(alpha, certificate)`` (model built once)."""
        if self._relax_model is None:
            self._relax_model = self._socp(self._relax.M)
        sol = self._relax_model.set_params(C=self.C, kappa=self.kappa).solve("clarabel")
        return sol["alpha"], sol.certificate

    def _solve_dfp(self, starts=None, **options) -> Solution:
        """Multi-start DFP on the penalty function (17), keeping the relaxation's optimum where it is better; with
        ``kappa * beta = 0`` libsvm's exact solution (:func:`~rsvm_conic.solvers.kernel_uncertainty.qn_route`).  The
        time includes the certificate's relaxation solve."""
        t0 = time.perf_counter()
        keys = ("n_random", "P_levels", "gtol", "max_iter")
        qn = {k: options.get(k, getattr(self, k)) for k in keys} | {"P_factor": self.P_factor, "seed": self.seed}
        a, raw, cert, info = ku.qn_route(self._dual(), self.K_bar, self.beta, self.kappa, self._penalty_start,
                                         self.name, starts, self._warm, self.nominal_start, **qn)  # fmt: skip
        self._warm = a if "primal_from" in cert.detail else raw
        return self._solved("dfp", self._finish(a, {"alpha_raw": raw}), cert, info, t0)

    def _penalty_start(self) -> float:
        """rsvm_qn's default first penalty weight ``1e3 (1 + lambda_max(Q))`` (one eigen-solve per instance)."""
        if self._P0 is None:
            self._P0 = 1e3 * (1.0 + float(np.linalg.eigvalsh(self.Q)[-1]))
        return self._P0
