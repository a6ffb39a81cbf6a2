"""Weston-Watkins multi-class SVM [ElD19, Sec. 1.3.3.4, eq. 1.9].

Primal (eq. 1.9), classes ``k = 0..C-1``, scores ``f_k(x) = <w_k, phi(x)> + b_k``::

    min_{W, b, xi}  1/2 sum_k ||w_k||^2 + zeta sum_i sum_{k != y_i} xi_ik
    s.t.            f_{y_i}(x_i) - f_k(x_i) >= 2 - xi_ik,   xi_ik >= 0.

Equivalently ``1/2 ||W||_F^2 + zeta sum_{i, k != y_i} max(0, 2 - f_{y_i}(x_i) + f_k(x_i))``;
:func:`~rsvm_conic.solvers.multiclass.ww_objective` evaluates this in numpy and is the objective every backend is
scored on; its kernel dual (derived there, the thesis does not print it) is the QP of :class:`WestonWatkinsKernelDual`.
The biases are the multipliers of the dual's equality constraints (sign fixed by a test against the primal).
For ``C = 2`` the WW machine is exactly ``2 x`` the binary SVM with ``C_svm = zeta``, so libsvm solves it
exactly; this is the ``libsvm`` backend and the fastest path for the binary data sets.

C convention (MSVMpack)
-----------------------
The thesis trained this machine with MSVMpack (Lauer & Guermeur, JMLR 12, 2011), whose WW model has
margin 1, ``f_{y_i} - f_k >= 1 - xi_ik``, penalty ``C`` (default ``C = 10``).  The substitution
``(W, b, xi) = 2 (W', b', xi')`` maps eq. 1.9 with ``zeta = 2 C`` onto it exactly (same classifier, eq. 1.9's
objective is 4 times MSVMpack's): :func:`~rsvm_conic.solvers.multiclass.msvmpack_zeta`,
:func:`~rsvm_conic.solvers.multiclass.msvmpack_objective`.  The formulations in
this module take eq. 1.9's ``zeta``; :class:`~rsvm_conic.estimators.WestonWatkinsSVC` takes MSVMpack's
``C`` and reports MSVMpack's scores and objective.

Backends
--------
``WestonWatkinsKernelDual``  (Gram matrix in): ``clarabel`` / ``scs`` (the dual QP, vectorised, one
    ``sum_squares(L^T beta)`` with ``K = L L^T``), ``libsvm`` (binary only).
``WestonWatkinsFeatures`` (explicit features ``Phi`` in, e.g. random features): ``clarabel`` / ``scs`` on the
    primal QP, ``dual`` (the kernel dual with ``K = Phi Phi^T``, weights ``W = Phi^T beta``) and
    ``lbfgs`` (:func:`~rsvm_conic.solvers.multiclass.ww_primal_lbfgs`).
``WestonWatkinsProblem`` (the estimator's routes): ``cd``, ``alm``, ``libsvm``, ``dual``, ``primal``; the numerical
    methods are in :mod:`rsvm_conic.solvers.multiclass` (arrays in, arrays and a certificate out), this module hands
    them their arrays and turns the result into a certified :class:`~rsvm_conic.formulations.base.Solution`.
"""

from __future__ import annotations

import time

import numpy as np

from .._validation import check_codes, check_positive, check_symmetric, check_X
from ..solvers.multiclass import ww_binary_libsvm, ww_dual_cd, ww_objective, ww_primal_alm, ww_primal_lbfgs
from ..solvers.multiclass.certificate import gram_factor, ww_binary_certified, ww_dual_retries, ww_evaluated
from ..solvers.multiclass.features import FeatureRows
from .base import Formulation, Solution


# ----------------------------------------------------------------------------- helpers


def check_features_and_codes(Phi, codes, n_classes=None):
    """Check a feature matrix and its class codes once, at the public boundary.

    Parameters
    ----------
    Phi : array-like of shape (n, D)
        Features (finite).
    codes : array-like of shape (n,)
        Class codes in ``0..n_classes-1``.
    n_classes : int or None, default=None
        Number of classes (None: ``max(codes) + 1``).

    Returns
    -------
    tuple
        ``(Phi, codes, n_classes)`` checked.
    """
    Phi = check_X(Phi, "Phi")
    codes, n_classes = check_codes(codes, Phi.shape[0], n_classes)
    return Phi, codes, n_classes


# ----------------------------------------------------------------------------- kernel dual
class WestonWatkinsKernelDual(Formulation):
    """The WW kernel dual as a vectorised CVXPY QP (small problems; ``n C`` up to a few 1000).

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The Gram matrix (symmetric PSD).
    codes : ndarray of shape (n,)
        Class codes in ``0..n_classes-1``.
    n_classes : int or None, default=None
        Number of classes (None: ``max(codes) + 1``).
    zeta : float, default=1.0
        Eq. 1.9's penalty (a CVXPY parameter).
    check_input : bool, default=True
        Check ``K``, ``codes`` and ``n_classes`` (False: trusted, from an estimator).
    factor : ndarray of shape (n, r) or None, default=None
        ``L`` with ``L L' = K`` when the caller has it (:func:`~rsvm_conic.solvers.multiclass.certificate.gram_factor`).
    sample_weight : ndarray of shape (n,) or None, default=None
        Positive weights ``s_i`` (the box ``alpha_ik <= zeta s_i``), trusted.
    """

    name = "ww-kernel-dual"

    def __init__(
        self,
        K,
        codes,
        n_classes: int | None = None,
        zeta: float = 1.0,
        *,
        check_input: bool = True,
        factor=None,
        sample_weight=None,
    ):
        import cvxpy as cp

        if check_input:
            K = check_symmetric(check_X(K, "K"), "K", rtol=1e-8)  # finite, square, symmetric
            self.codes, self.n_classes = check_codes(codes, K.shape[0], n_classes)
        else:
            K = 0.5 * (K + K.T)
            self.codes, self.n_classes = codes, int(n_classes)
        self.K = K
        codes = self.codes
        n, C = K.shape[0], self.n_classes
        self.Y = np.zeros((n, C))
        self.Y[np.arange(n), codes] = 1.0
        L = gram_factor(self.K)[0] if factor is None else factor
        alpha = cp.Variable((n, C), nonneg=True)
        zeta_p = cp.Parameter(nonneg=True, value=check_positive(zeta, "zeta"), name="zeta")
        A = cp.sum(alpha, axis=1, keepdims=True)  # (n, 1)
        beta = cp.multiply(self.Y, A @ np.ones((1, C))) - alpha
        self._eq = cp.sum(beta, axis=0) == 0
        top = 1.0 - self.Y if sample_weight is None else (1.0 - self.Y) * np.asarray(sample_weight)[:, None]
        cons = [alpha <= zeta_p * top, self._eq]
        obj = 0.5 * cp.sum_squares(L.T @ beta) - 2.0 * cp.sum(alpha)
        self.problem = cp.Problem(cp.Minimize(obj), cons)
        self.parameters = {"zeta": zeta_p}
        self.variables = {"alpha": alpha}
        self._beta = beta

    def _extract(self) -> dict:
        beta = np.asarray(self._beta.value)
        b = np.asarray(self._eq.dual_value).ravel()
        return {
            "beta": beta,
            "b": b - b.mean(),
            "alpha": np.asarray(self.variables["alpha"].value),
            "dual_objective": float(-self.problem.value),
        }

    def _solve_libsvm(self, tol: float = 1e-8) -> Solution:
        """Binary case only: WW = 2 x SVC(C = zeta) (see module docstring)."""
        if self.n_classes != 2:
            raise ValueError("the libsvm backend solves the binary (C = 2) WW machine only.")
        t0 = time.perf_counter()
        beta, b = ww_binary_libsvm(self.K, self.codes, self.parameters["zeta"].value, tol=tol)
        sol = Solution("libsvm", "optimal", float("nan"), time.perf_counter() - t0, {"beta": beta, "b": b})
        sol.objective = self.objective(sol)
        return sol

    def objective(self, solution: Solution) -> float:
        beta, b = solution["beta"], solution["b"]
        scores = self.K @ beta + b
        return ww_objective(float(np.sum(beta * (self.K @ beta))), scores, self.codes, self.parameters["zeta"].value)

    def decision_function(self, solution: Solution, K_test) -> np.ndarray:
        return np.asarray(K_test) @ solution["beta"] + solution["b"]

    def predict(self, solution: Solution, K_test) -> np.ndarray:
        return np.argmax(self.decision_function(solution, K_test), axis=1)


# ----------------------------------------------------------------------------- explicit features
class WestonWatkinsFeatures(Formulation):
    """WW on explicit features ``Phi`` (n, D): primal QP, kernel dual, or the numpy L-BFGS solver.

    Parameters
    ----------
    Phi : ndarray of shape (n, D)
        Features.
    codes : ndarray of shape (n,)
        Class codes in ``0..n_classes-1``.
    n_classes : int or None, default=None
        Number of classes (None: ``max(codes) + 1``).
    zeta : float, default=1.0
        Eq. 1.9's penalty.
    build_conic : bool, default=True
        Build the primal QP's CVXPY model (False: the ``dual`` and ``lbfgs`` routes only).
    """

    name = "ww-features"

    def __init__(self, Phi, codes, n_classes: int | None = None, zeta: float = 1.0, build_conic: bool = True):
        import cvxpy as cp

        self.Phi, self.codes, self.n_classes = check_features_and_codes(Phi, codes, n_classes)
        self.zeta = check_positive(zeta, "zeta")
        n, D = self.Phi.shape
        C = self.n_classes
        self.Y = np.zeros((n, C))
        self.Y[np.arange(n), codes] = 1.0
        zeta_p = cp.Parameter(nonneg=True, value=self.zeta, name="zeta")
        self.parameters = {"zeta": zeta_p}
        self.variables = {}
        if build_conic:
            W = cp.Variable((D, C))
            b = cp.Variable(C)
            xi = cp.Variable((n, C), nonneg=True)
            S = self.Phi @ W + np.ones((n, 1)) @ cp.reshape(b, (1, C), order="C")
            fy = cp.sum(cp.multiply(self.Y, S), axis=1, keepdims=True)
            cons = [xi >= cp.multiply(1.0 - self.Y, 2.0 + S - fy @ np.ones((1, C)))]
            self.problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(W) + zeta_p * cp.sum(xi)), cons)
            self.variables = {"W": W, "b": b, "xi": xi}

    def _set_param(self, key, value):
        super()._set_param(key, value)
        if key == "zeta":
            self.zeta = float(value)

    def _extract(self) -> dict:
        b = np.asarray(self.variables["b"].value)
        return {"W": np.asarray(self.variables["W"].value), "b": b - b.mean()}

    def _solve_dual(self, solver: str = "clarabel", **options) -> Solution:
        t0 = time.perf_counter()
        dual = WestonWatkinsKernelDual(self.Phi @ self.Phi.T, self.codes, self.n_classes, self.zeta)
        sol = dual.solve(solver, **options)
        W = self.Phi.T @ sol["beta"]
        out = Solution(
            "dual",
            sol.status,
            float("nan"),
            time.perf_counter() - t0,
            {"W": W, "b": sol["b"], "beta": sol["beta"]},
            {"dual_objective": sol["dual_objective"], **sol.info},
        )
        out.objective = self.objective(out)
        return out

    def _solve_lbfgs(self, **options) -> Solution:
        t0 = time.perf_counter()
        W, b, info = ww_primal_lbfgs(self.Phi, self.codes, self.n_classes, self.zeta, **options)
        sol = Solution("lbfgs", info["status"], float("nan"), time.perf_counter() - t0, {"W": W, "b": b}, info)
        sol.objective = self.objective(sol)
        return sol

    def objective(self, solution: Solution) -> float:
        W, b = solution["W"], solution["b"]
        return ww_objective(float(np.sum(W * W)), self.Phi @ W + b, self.codes, self.zeta)

    def decision_function(self, solution: Solution, Phi_test) -> np.ndarray:
        return np.asarray(Phi_test) @ solution["W"] + solution["b"]

    def predict(self, solution: Solution, Phi_test) -> np.ndarray:
        return np.argmax(self.decision_function(solution, Phi_test), axis=1)


# ----------------------------------------------------------------------------- the estimator's routes
#: Weston-Watkins fits with at most this many (sample, class) pairs take the numpy ``alm`` route rather than the
#: compiled ``cd`` epoch, which costs seconds to compile at a process's first fit (``rsvm-conic bench first-hour``)
SMALL_PAIRS = 1000
#: an uncertified ``alm`` or ``primal`` run falls back to the dual QP while n * classes <= DUAL_FALLBACK_MAX
DUAL_FALLBACK_MAX = 6000


class WestonWatkinsProblem(Formulation):
    """The WW machine of one training set as :class:`~rsvm_conic.estimators.WestonWatkinsSVC` solves it:
    an exact Gram matrix ``K`` or explicit features ``Phi`` (random features), with the certified routes of
    :attr:`BACKENDS`.  Inputs come validated from the estimator (trusted, not checked again).

    Solutions hold ``coef`` (``beta`` (n, C) against the training points for ``K``, ``W`` (D, C) for
    ``Phi``) and ``b`` (C,); ``certificate`` is the route's
    :class:`~rsvm_conic.certify.contract.SolveInfo` (route ``"lbfgs"`` for ``primal``).

    Parameters
    ----------
    codes : ndarray of shape (n,)
        Class codes in ``0..n_classes-1``.
    n_classes : int
        Number of classes.
    zeta : float
        Eq. 1.9's penalty.
    K : ndarray of shape (n, n) or None, default=None
        The exact Gram matrix (give exactly one of ``K`` and ``Phi``).
    Phi : ndarray of shape (n, D) or None, default=None
        Explicit features.
    primal_options : dict or None, default=None
        Options of the ``primal`` route (:func:`~rsvm_conic.solvers.multiclass.ww_primal_lbfgs`).
    sample_weight : ndarray of shape (n,) or None, default=None
        Positive weights ``s_i`` (penalty ``zeta s_i``); only the routes of :attr:`WEIGHTED` take them.
    solver : str, default="auto"
        The route :meth:`auto_routes` starts from (``"auto"``: its own choice).
    """

    name = "ww-msvm"
    conic_backends = ()
    #: the routes; :meth:`auto_routes` picks among them by structure and size
    BACKENDS = {
        "libsvm": "exact kernel, two classes: WW = 2 x SVC(C) by libsvm, polished in double precision; "
        "certificate: dual bound of its multipliers (1e-6)",
        "alm": "numpy method of multipliers with semismooth Newton-CG steps (features, or the kernel's PSD "
        "factor), bias exact; certificate: dual bound of its multipliers (1e-6)",
        "cd": "compiled dual coordinate descent with shrinking, bias by multipliers, then alm's Newton steps "
        "(features, or the kernel's PSD factor); certificate: dual bound of its multipliers (1e-6)",
        "dual": "kernel-dual QP in CVXPY + Clarabel (rescaled retries for badly scaled instances); "
        "certificate: dual bound of its multipliers (1e-6)",
        "primal": "numpy L-BFGS on the smoothed primal (features, or the kernel's PSD factor); "
        "certificate: dual bound of the smoothed multipliers (primal tol)",
    }

    #: the routes that take sample weights (the box ``alpha_ik <= zeta s_i``)
    WEIGHTED = ("libsvm", "dual")

    def __init__(
        self,
        codes,
        n_classes: int,
        zeta: float,
        *,
        K=None,
        Phi=None,
        primal_options=None,
        sample_weight=None,
        solver: str = "auto",
    ):
        if (K is None) == (Phi is None):
            raise ValueError("give exactly one of K (exact kernel) and Phi (explicit features).")
        self.codes, self.n_classes = codes, int(n_classes)
        self.sample_weight = sample_weight  # positive weights s_i (trusted), or None
        #: the penalty: ``zeta``, or ``zeta s_i`` per sample with sample weights
        self.zeta = float(zeta) if sample_weight is None else float(zeta) * np.asarray(sample_weight, dtype=float)
        self.zeta_scalar = float(zeta)
        self.K, self.Phi = K, Phi
        self.n = (K if K is not None else Phi).shape[0]
        self.primal_options = dict(primal_options or {})
        self.parameters, self.variables = {}, {}
        #: the rows the feature routes run on (the kernel's pivoted Cholesky rows or Phi's thin QR factor), once
        self.rows = FeatureRows(K, Phi)
        self.solver = solver  # the route solve("auto") starts from ("auto": auto_routes' own choice)

    def _available(self, backend: str) -> bool:
        if self.sample_weight is not None and backend not in self.WEIGHTED:
            return False
        return backend != "libsvm" or (self.K is not None and self.n_classes == 2)

    def auto_routes(self) -> tuple[str, ...]:
        """libsvm (then the dual QP) for two classes on an exact kernel; otherwise, on features or an exact
        kernel, the exact ``cd`` solver (with its fallbacks, :meth:`chain`).  ``cd`` rather than ``alm``: as fast
        on easy fits and far faster on hard ones (many margins at the kink, a large ``zeta``), measured side by
        side by ``rsvm-conic bench ww-exact``.  Up to :data:`SMALL_PAIRS` (sample, class) pairs: ``alm``,
        which needs no compiler (a first fit in a fresh process would spend seconds compiling ``cd``'s epoch)."""
        if self.solver != "auto":
            return self.chain(self.solver)
        if self.K is not None and self.n_classes == 2:
            return ("libsvm", "dual")
        if self.sample_weight is not None:  # the routes that take weights
            return ("dual",)
        if self.n * self.n_classes <= SMALL_PAIRS:  # small: numpy alm, nothing to compile
            return self.chain("alm")
        return self.chain("cd")

    def _auto_hint(self) -> str:
        return "For the primal route lower primal_mu or raise primal_max_iter; for a small problem use solver='dual'."

    def chain(self, route: str) -> tuple[str, ...]:
        """``route`` and its fallbacks: an uncertified ``cd``, ``alm`` or primal run falls back to the dual
        QP while that is of moderate size (``n C <= DUAL_FALLBACK_MAX``; the smoothed multipliers cannot
        certify optima whose multipliers are tiny, e.g. kernel entries ~1e6); beyond it ``cd`` falls back to
        ``alm`` and ``alm`` to the primal L-BFGS (certified to its own, looser tolerance).  With sample weights
        only :attr:`WEIGHTED` routes run: ``libsvm`` falls back to ``dual``."""
        if self.sample_weight is not None:
            return (route, "dual") if route == "libsvm" else (route,)
        if route in ("cd", "alm", "primal") and self.n * self.n_classes <= DUAL_FALLBACK_MAX:
            return (route, "dual")
        if route == "cd":
            return ("cd", "alm", "primal")
        if route == "alm":
            return ("alm", "primal")
        return (route,)

    def _apply_K(self, B):
        return self.K @ B if self.K is not None else self.Phi @ (self.Phi.T @ B)

    def _solution(self, route, coef, b, cert) -> Solution:
        """The certified solution ``(coef, b)``; its certificate's primal is recomputed from the coefficients as the
        estimator evaluates them (scores ``K coef + b`` or ``Phi coef + b``), for ``(coef, b)`` or, where better,
        its hard-margin rescaling (:func:`~rsvm_conic.solvers.multiclass.ww_scaled_model`), against the route's
        dual bound."""
        if coef is not None and np.all(np.isfinite(coef)):
            data = self.K if self.K is not None else self.Phi
            coef, b, cert = ww_evaluated(route, data, self.K, coef, b, self.codes, self.zeta, cert)
        sol = Solution(route, cert.status, cert.primal, cert.time, {"coef": coef, "b": b})
        sol.certificate = cert
        return sol

    def _feature_route(self, route, solver, **options) -> Solution:
        """``solver`` on the feature rows (:meth:`~rsvm_conic.solvers.multiclass.features.FeatureRows.solve`)."""
        coef, b, cert = self.rows.solve(solver, self.codes, self.n_classes, self.zeta, **options)
        return self._solution(route, coef, b, cert)

    def _solve_primal(self) -> Solution:
        return self._feature_route("primal", ww_primal_lbfgs, **self.primal_options)

    def _solve_alm(self) -> Solution:
        return self._feature_route("alm", ww_primal_alm)

    def _solve_cd(self) -> Solution:
        return self._feature_route("cd", ww_dual_cd)

    def _solve_libsvm(self) -> Solution:
        return self._solution("libsvm", *ww_binary_certified(self.K, self.codes, self.zeta, self._apply_K))

    def _solve_dual(self) -> Solution:
        """The kernel-dual QP.  An 'optimal_inaccurate' Clarabel status is kept when the recomputed
        certificate meets tol (recorded in the certificate).  Badly scaled instances (huge kernel entries,
        tiny C) are retried on the normalised problem K / s, C s (same minimiser: beta = beta' / s, same b),
        then with tolerances scaled to its objective; the best certificate is kept."""
        t0 = time.perf_counter()
        exact = self.K is not None
        Kd = self.K if exact else self.Phi @ self.Phi.T
        z, w = self.zeta_scalar, self.sample_weight

        def solve_qp(s, options):
            factor = self.rows.kernel_rows()[0] if exact and s == 1.0 else None
            qp = WestonWatkinsKernelDual(Kd / s if s != 1.0 else Kd, self.codes, self.n_classes, z * s,
                                         check_input=False, factor=factor, sample_weight=w)  # fmt: skip
            sol = qp.solve("clarabel", accept_inaccurate=True, quiet_inaccurate=True, **options)
            return sol["beta"], sol["b"], sol.status

        scale = max(float(np.max(np.abs(Kd))), 1e-300)
        beta, b, cert = ww_dual_retries(solve_qp, scale, self.codes, self.zeta, self._apply_K, t0)
        return self._solution("dual", beta if exact or beta is None else self.Phi.T @ beta, b, cert)

    def objective(self, solution: Solution) -> float:
        return solution.certificate.primal

    def decision_function(self, solution: Solution, data) -> np.ndarray:
        """Class scores from kernel rows against the training points (``K``) or feature rows (``Phi``)."""
        return np.asarray(data) @ solution["coef"] + solution["b"]

    def predict(self, solution: Solution, data) -> np.ndarray:
        return np.argmax(self.decision_function(solution, data), axis=1)
