"""scikit-learn estimators for the multi-class machines of El Dakdouki 2019 (PhD thesis).

``WestonWatkinsSVC`` -- the WW-M-SVM (eq. 1.9) with a Gaussian, consolidation (kappa^m), linear
kernel, exact (Gram matrix) or through random features.
``HyperbolicSVC`` -- the hyperbolic kernel machine (chapter 3, Problem 1) trained by CCP.

Solver paths of ``WestonWatkinsSVC`` (``solver="auto"``):

* exact kernel, two classes -> ``libsvm`` (WW binary = 2 x SVC(C), exact; the fastest path),
* exact kernel, ``n C <= 1500`` -> ``dual``: the kernel-dual QP in CVXPY + Clarabel,
* exact kernel, larger -> ``primal``: the empirical kernel map ``K = U diag(l) U^T``,
  ``Phi = U sqrt(l)`` (eigenvalues below ``1e-10 max`` dropped) and the numpy L-BFGS primal solver,
* random features (``n_components`` set) -> ``primal`` on the features.

Every route is certified (``solver_stats_``: primal objective minus a feasible dual value); an
uncertified route falls back with a ``SolverWarning`` naming both routes or raises ``SolverError``.

Bandwidth: ``sigma`` is a length scale, ``k(x, y) = exp(-||x - y||^2 / (2 sigma^2))``;
``sigma="thesis"`` gives ``sqrt(5 n_features)`` (Table 4.2).  Features are not standardised
here: use a ``Pipeline`` with ``StandardScaler`` (the reproduction does).
"""

from __future__ import annotations

import numbers
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import check_choice, check_finite_array, check_positive, validate_estimator_input
from ..formulations.hyperbolic import DUMMY, HyperbolicMachine, centre_distances, margins, decision_rule
from ..formulations.multiclass_ww import (WWKernelDual, encode_labels, psd_factor, ww_binary_libsvm, ww_certificate,
                                          ww_primal_lbfgs)
from ..solvers.conic import SolverError, SolverWarning
from ..solvers.contract import certify
from ..kernels.consolidation import ConsolidationKernel
from ..kernels.rbf import gaussian_kernel, thesis_sigma

KERNELS = ("rbf", "consolidation", "linear")
#: solver="auto" on an exact kernel: the dual QP up to n * classes = DUAL_MAX, else the primal L-BFGS; a primal
#: run (auto or asked for) that cannot certify falls back with a SolverWarning to the dual QP while
#: n * classes <= DUAL_FALLBACK_MAX, else raises SolverError
DUAL_MAX = 1500
DUAL_FALLBACK_MAX = 6000


class _KernelMixin:
    """Shared kernel / random-feature handling (fitted attributes: ``sigma_``, ``kernel_obj_``, ``rff_``)."""

    def _setup_kernel(self, X, codes):
        check_choice(self.kernel, "kernel", KERNELS)
        p = X.shape[1]
        if isinstance(self.sigma, str):
            if self.sigma != "thesis":
                raise ValueError(f"sigma must be a positive number or 'thesis'; got {self.sigma!r}.")
            self.sigma_ = thesis_sigma(p)
        else:
            self.sigma_ = check_positive(self.sigma, "sigma")
        self.kernel_obj_ = None
        if self.kernel == "consolidation":
            sd = None if self.sigma_dir is None else check_positive(self.sigma_dir, "sigma_dir", allow_inf=True)
            self.kernel_obj_ = ConsolidationKernel(sigma=self.sigma_, sigma_dir=sd, m=self.m,
                                                   n_subclasses=self.n_subclasses,
                                                   random_state=self.random_state).fit(X, codes)
        self.rff_ = None
        if self.n_components is not None:
            nc = self.n_components
            if isinstance(nc, bool) or not isinstance(nc, numbers.Integral) or nc < 1:
                raise ValueError(f"n_components must be a positive integer or None; got {nc!r}.")
            if self.kernel == "linear":
                raise ValueError("random features are for the rbf and consolidation kernels, not 'linear'.")
            if self.kernel == "rbf":
                from sklearn.kernel_approximation import RBFSampler

                self.rff_ = RBFSampler(gamma=1.0 / (2.0 * self.sigma_**2), n_components=int(nc),
                                       random_state=self.random_state).fit(X)
            else:
                # ConsolidationRandomFeatures returns 2 * n_components columns (cos and sin)
                self.rff_ = self.kernel_obj_.random_features(max(1, int(nc) // 2), random_state=self.random_state)

    def _gram(self, A, B):
        if self.kernel == "rbf":
            return gaussian_kernel(A, B, self.sigma_)
        if self.kernel == "linear":
            return A @ B.T
        return self.kernel_obj_(A, B)

    def _features(self, X):
        return self.rff_.transform(X)


def _check_fit_input(estimator, X, y):
    """scikit-learn's validate_data (sets n_features_in_), our NaN message, label checks."""
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import validate_data

    if y is None:
        raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target y is None.")
    X, y = validate_data(estimator, X, y, accept_sparse=False, dtype=np.float64, ensure_all_finite=False)
    X = check_finite_array(X, "X", ndim=2)
    check_classification_targets(y)
    codes, classes = encode_labels(y, X.shape[0])  # the single-class check (check_two_classes)
    return X, codes, classes


def _binary_scores(scores):
    """scikit-learn's convention: with two classes, one score per sample, positive for classes_[1]."""
    return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores


class WestonWatkinsSVC(_KernelMixin, ClassifierMixin, BaseEstimator):
    """Weston-Watkins multi-class SVM (El Dakdouki 2019, eq. 1.9), margin 2, penalty ``C`` (the thesis's zeta).

    Parameters
    ----------
    C : penalty on the slacks (> 0).
    kernel : ``"rbf"`` (Gaussian), ``"consolidation"`` (kappa^m, Def. 4.2) or ``"linear"``.
    sigma : length scale, or ``"thesis"`` for ``sqrt(5 n_features)``.
    m, n_subclasses : consolidation-kernel settings (Fourier terms, k-means subclasses per class).
    sigma_dir : length scale of the Gaussian envelope of the consolidation kernel's periodic
        terms (``None``: the same as ``sigma``; ``np.inf``: no envelope, purely periodic terms).
    n_components : ``None`` for the exact kernel, else the number of random features.
    solver : ``"auto"``, ``"libsvm"`` (binary), ``"dual"`` (CVXPY QP) or ``"primal"`` (numpy L-BFGS).
    primal_tol, primal_mu, primal_max_iter : the ``primal`` path is certified: after every smoothing
        stage a dual bound is built from its multipliers
        (:func:`~rsvm_conic.formulations.multiclass_ww.ww_dual_bound`) and it stops once the
        relative gap is ``<= primal_tol`` (default 1e-3, as the stochastic solvers); ``primal_mu`` is
        the smallest smoothing tried, ``primal_max_iter`` the L-BFGS iterations per stage.  If the
        gap is not met, ``auto`` falls back to the dual QP with a ``SolverWarning`` (moderate
        sizes) or raises ``SolverError``.  The exact routes (``libsvm`` with a double-precision
        polish, ``dual``) certify a 1e-6 relative gap.
    solver_stats_ : dict (fitted) -- route, status, primal and dual objective, certified gap, fallbacks.
    random_state : seed for k-means and random features.
    """

    def __init__(self, C=1.0, kernel="rbf", sigma="thesis", m=41, n_subclasses=5, n_components=None,
                 solver="auto", primal_mu=1e-6, primal_max_iter=2000, primal_tol=1e-3, random_state=0,
                 sigma_dir=None):
        self.C = C
        self.sigma_dir = sigma_dir
        self.primal_mu = primal_mu
        self.primal_max_iter = primal_max_iter
        self.primal_tol = primal_tol
        self.kernel = kernel
        self.sigma = sigma
        self.m = m
        self.n_subclasses = n_subclasses
        self.n_components = n_components
        self.solver = solver
        self.random_state = random_state

    def fit(self, X, y):
        X, codes, classes = _check_fit_input(self, X, y)
        zeta = check_positive(self.C, "C")
        check_choice(self.solver, "solver", ("auto", "libsvm", "dual", "primal"))
        primal_tol = check_positive(self.primal_tol, "primal_tol")
        self.classes_ = classes
        nC = classes.size
        self._setup_kernel(X, codes)
        primal_kw = dict(mu_min=check_positive(self.primal_mu, "primal_mu"), maxiter=int(self.primal_max_iter),
                         tol=primal_tol)
        if self.rff_ is not None:
            Phi = self._features(X)
            if self.solver == "libsvm":
                raise ValueError("solver='libsvm' needs the exact kernel (n_components=None).")
            routes = ["primal"] if self.solver == "auto" else [self.solver]
            apply_K = _feature_apply(Phi)
        else:
            if self.solver == "libsvm" and nC != 2:
                raise ValueError("solver='libsvm' is exact only for two classes; use 'dual' or 'primal'.")
            K = self._gram(X, X)
            apply_K = _kernel_apply(K)
            if self.solver == "auto":
                routes = ["libsvm", "dual"] if nC == 2 else (["dual"] if X.shape[0] * nC <= DUAL_MAX else ["primal"])
            else:
                routes = [self.solver]

        factors = []  # psd_factor(K), computed once: the primal route and its dual fallback share it

        def kernel_factor():
            if not factors:
                factors.append(psd_factor(K))
            return factors[0]

        def attempt(route):
            if route == "primal":
                if self.rff_ is not None:
                    W, b, info = ww_primal_lbfgs(Phi, codes, nC, zeta, **primal_kw)
                    return W, b, info["certificate"]
                _, U, lam = kernel_factor()
                W, b, info = ww_primal_lbfgs(U * np.sqrt(lam), codes, nC, zeta, **primal_kw)
                return U @ (W / np.sqrt(lam)[:, None]), b, info["certificate"]
            t0 = time.perf_counter()
            if route == "libsvm":
                beta, b = ww_binary_libsvm(K, codes, zeta)
                cert = ww_certificate(route, beta, b, codes, zeta, apply_K, tol=1e-6)
            else:
                exact = self.rff_ is None  # inputs validated in fit: the builder does not check them again
                Kd = K if exact else Phi @ Phi.T
                # an 'optimal_inaccurate' Clarabel status is kept when the recomputed certificate meets tol
                # (recorded in the certificate).  Badly scaled instances (huge kernel entries, tiny C) are
                # retried on the normalised problem K / s, C s (same minimiser: beta = beta' / s, same b),
                # then with tolerances scaled to its objective; the best certificate is kept
                s_K = max(float(np.max(np.abs(Kd))), 1e-300)
                best = None
                for s_, tight in ((1.0, False), (s_K, False), (s_K, True)):
                    opts = {}
                    if tight and best is not None:
                        opts = dict(tol_gap_abs=1e-12 * max(abs(best[3].primal) * s_, 1e-300), tol_gap_rel=1e-12,
                                    tol_feas=1e-12)
                    try:
                        dual = (WWKernelDual(Kd, codes, nC, zeta, check_input=False,
                                             factor=kernel_factor()[0] if exact else None) if s_ == 1.0 else
                                WWKernelDual(Kd / s_, codes, nC, zeta * s_, check_input=False))
                        sol = dual.solve("clarabel", accept_inaccurate=True, quiet_inaccurate=True, **opts)
                    except SolverError:
                        continue
                    c = ww_certificate(route, sol["beta"] / s_, sol["b"], codes, zeta, apply_K, tol=1e-6)
                    if best is None or c.gap_rel < best[3].gap_rel:
                        best = (sol["beta"] / s_, sol["b"], sol.status, c)
                    if c.certified:
                        break
                if best is None:
                    return None, None, certify(route, np.inf, -np.inf, 1e-6, failed_status="failed",
                                               time=time.perf_counter() - t0)
                beta, b, status, cert = best
                cert.detail["solver_status"] = status
            cert.time = time.perf_counter() - t0
            return (Phi.T @ beta if self.rff_ is not None else beta), b, cert

        # an uncertified primal run falls back (SolverWarning) to the dual QP while that is of moderate size; the
        # smoothed multipliers cannot certify optima whose multipliers are tiny (e.g. kernel entries ~1e6)
        fallback = "dual" if routes == ["primal"] and X.shape[0] * nC <= DUAL_FALLBACK_MAX else None
        coef, b, cert = _first_certified(routes, attempt, "WestonWatkinsSVC", fallback=fallback)
        self.solver_ = cert.route if cert.route != "lbfgs" else "primal"
        self.solver_info_ = self.solver_stats_ = cert.as_dict()
        if self.rff_ is not None:
            self.coef_, self.intercept_ = coef, b
            return self
        self.X_fit_ = X
        self.dual_coef_ = coef
        self.intercept_ = b
        return self

    def class_scores(self, X):
        """Scores f_k(x) of every class, shape (n_samples, n_classes)."""
        check_is_fitted(self, "intercept_")
        X = validate_estimator_input(self, X, reset=False)
        if self.rff_ is not None:
            return self._features(X) @ self.coef_ + self.intercept_
        return self._gram(X, self.X_fit_) @ self.dual_coef_ + self.intercept_

    def decision_function(self, X):
        """``class_scores`` for 3+ classes; for two, ``f_1 - f_0`` (scikit-learn's convention)."""
        return _binary_scores(self.class_scores(X))

    def predict(self, X):
        scores = self.class_scores(X)  # checks fitted first
        return self.classes_[np.argmax(scores, axis=1)]


class HyperbolicSVC(_KernelMixin, ClassifierMixin, BaseEstimator):
    """The hyperbolic kernel machine (El Dakdouki 2019, chapter 3), trained by the CCP of
    :mod:`rsvm_conic.formulations.hyperbolic`.

    Parameters
    ----------
    lam : weight of ``||R||^2`` (lambda of Problem 1).
    gamma : margin parameter of the truncated hinge in (0, 1], or ``"auto"``: the median of
        ``|rho|`` at the initial point (class means, equal radii), clipped to [1e-3, 1].
    kernel, sigma, m, n_subclasses, sigma_dir, n_components : as in :class:`WestonWatkinsSVC`.
    max_rank : with the exact kernel the machine works on the top ``max_rank`` eigen-features of
        the Gram matrix (Nystrom extension for new points); the SOCP has ``n C`` cones of that
        dimension, so this bounds its size.  ``None`` keeps every eigenvalue above ``1e-10 max``.
    solver : ``"ccp"`` (SOCPs, Clarabel), ``"anchors"`` (large-scale numpy), ``"auto"``
        (``ccp`` for ``n <= 1000``).
    n_starts, max_iter, n_anchors : CCP starts, CCP iterations, anchors per class (``anchors``).

    ``predict`` returns the dummy category ``"*"`` (object array) for points with tied top scores
    (Def. 3.2); ``decision_rule_codes`` gives the codes with ``-1`` for the dummy.
    """

    def __init__(self, lam=1e-2, gamma="auto", kernel="rbf", sigma="thesis", m=41, n_subclasses=5,
                 n_components=None, max_rank=30, solver="auto", n_starts=3, max_iter=30, n_anchors=20,
                 random_state=0, sigma_dir=None):
        self.lam = lam
        self.sigma_dir = sigma_dir
        self.gamma = gamma
        self.kernel = kernel
        self.sigma = sigma
        self.m = m
        self.n_subclasses = n_subclasses
        self.n_components = n_components
        self.max_rank = max_rank
        self.solver = solver
        self.n_starts = n_starts
        self.max_iter = max_iter
        self.n_anchors = n_anchors
        self.random_state = random_state

    def _train_features(self, X):
        if self.rff_ is not None:
            return self._features(X)
        K = self._gram(X, X)
        _, U, lam = psd_factor(K)
        if self.max_rank is not None:
            r = int(self.max_rank)
            if r < 1:
                raise ValueError(f"max_rank must be a positive integer or None; got {self.max_rank!r}.")
            U, lam = U[:, -r:], lam[-r:]
        self.X_fit_ = X
        self.nystrom_ = U / np.sqrt(lam)  # phi(x) = k(x, X) U / sqrt(lam)
        return U * np.sqrt(lam)

    def _map(self, X):
        if self.rff_ is not None:
            return self._features(X)
        return self._gram(X, self.X_fit_) @ self.nystrom_

    def fit(self, X, y):
        X, codes, classes = _check_fit_input(self, X, y)
        lam = check_positive(self.lam, "lam")
        check_choice(self.solver, "solver", ("auto", "ccp", "anchors"))
        self.classes_ = classes
        self._setup_kernel(X, codes)
        Phi = self._train_features(X)
        if isinstance(self.gamma, str):
            if self.gamma != "auto":
                raise ValueError(f"gamma must be in (0, 1] or 'auto'; got {self.gamma!r}.")
            Y = np.zeros((X.shape[0], classes.size))
            Y[np.arange(X.shape[0]), codes] = 1.0
            O0 = (Y / Y.sum(axis=0)).T @ Phi
            rho = margins(-centre_distances(O0, Phi), codes)
            gamma = float(np.clip(np.median(np.abs(rho)), 1e-3, 1.0))
        else:
            gamma = float(self.gamma)
        self.gamma_ = gamma
        machine = HyperbolicMachine(Phi, codes, classes.size, gamma=gamma, lam=lam)
        solver = self.solver
        if solver == "auto":
            solver = "ccp" if X.shape[0] <= 1000 else "anchors"
        if solver == "ccp":
            sol = machine.solve("ccp", n_starts=self.n_starts, max_iter=self.max_iter,
                                random_state=self.random_state)
        else:
            sol = machine.solve("anchors", n_starts=self.n_starts, max_iter=self.max_iter,
                                n_anchors=self.n_anchors, random_state=self.random_state)
        self.solver_ = solver
        self.centres_ = sol["O"]
        self.radii_ = sol["R"]
        self.objective_ = sol.objective
        self.histories_ = sol.info["histories"]
        self.n_iter_ = max(len(h) for h in self.histories_)  # CCP iterations of the longest start
        return self

    def class_scores(self, X):
        """h_k(x) = R_k - ||O_k - phi(x)|| for every class, shape (n_samples, n_classes)."""
        check_is_fitted(self, "radii_")
        X = validate_estimator_input(self, X, reset=False)
        return self.radii_[None, :] - centre_distances(self.centres_, self._map(X))

    def decision_function(self, X):
        """``class_scores`` for 3+ classes; for two, ``h_1 - h_0`` (scikit-learn's convention)."""
        return _binary_scores(self.class_scores(X))

    def decision_rule_codes(self, X):
        return decision_rule(self.class_scores(X))

    def predict(self, X):
        codes = self.decision_rule_codes(X)
        if np.all(codes != DUMMY):
            return self.classes_[codes]
        out = self.classes_[np.maximum(codes, 0)].astype(object)
        out[codes == DUMMY] = "*"
        return out


def _kernel_apply(K):
    return lambda B: K @ B


def _feature_apply(Phi):
    return lambda B: Phi @ (Phi.T @ B)


def _first_certified(routes, attempt, who, fallback=None):
    """Try ``routes`` in order (then ``fallback``); return the first ``(coef, b, SolveInfo)`` that is certified.

    An uncertified route is followed by a :class:`SolverWarning` naming it and the next route; none
    certified raises :class:`SolverError` naming every route and its gap (never a silent model).
    """
    chain = list(routes) + ([fallback] if fallback and fallback not in routes else [])
    tried = []
    for k, route in enumerate(chain):
        coef, b, cert = attempt(route)
        if cert.status == "optimal":
            cert.detail["fallbacks"] = [r for r, _ in tried]
            return coef, b, cert
        tried.append((route, cert))
        if k + 1 < len(chain):
            warnings.warn(f"{who}: route {route!r} ended with certified relative gap {cert.gap_rel:.2e} > "
                          f"{cert.tol:g} (status {cert.status!r}); falling back to {chain[k + 1]!r}.",
                          SolverWarning, stacklevel=3)
    detail = "; ".join(f"{r}: gap {c.gap_rel:.2e} > {c.tol:g} ({c.status})" for r, c in tried)
    raise SolverError(f"{who}: no route certified the solution ({detail}). For the primal route lower primal_mu "
                      "or raise primal_max_iter; for a small problem use solver='dual'.")
