"""scikit-learn style estimator for SVMs robust to noise in the kernel matrix [BBBB10].

``KernelRobustSVC(method="qp"|"socp"|"qn", noise="gaussian"|"finite", epsilon, C)`` fits
formulation (15) (see :mod:`rsvm_conic.formulations.kernel_robust`).

The estimator is *pairwise* (scikit-learn tag ``input_tags.pairwise = True``, like
``SVC(kernel="precomputed")``): its inputs are kernels, not feature vectors.

* ``fit(X, y)`` with ``X`` either

  - the samples of the noisy training kernel, shape ``(S, n, n)`` (mean and noise parameters
    are estimated; pass ``K_bar=`` if the mean kernel is known), or
  - a mean kernel ``(n, n)`` together with ``sigma2=`` (Gaussian) or ``a=, b=`` (supports of
    the noise, finite case), or
  - a mean kernel ``(n, n)`` alone: the kernel is then taken as **noise-free** (``sigma2 = 0``,
    resp. ``a = b = 0``, so ``beta = 0``).  Formulation (15) then reduces exactly to the nominal
    SVM dual on ``X`` -- the same problem as ``SVC(kernel="precomputed")`` (tested: dual
    objective and decision values agree with libsvm).  This is what scikit-learn's estimator
    checks and ``GridSearchCV`` / ``Pipeline`` with precomputed kernels pass;
    ``noise_free_`` records it.

* ``decision_function(X)`` / ``predict(X)`` take kernel rows against the training points,
  shape ``(m, n)``, or sampled rows ``(S, m, n)``: scores then have shape ``(S, m)`` and
  ``predict`` returns the majority vote over samples (MajErr's rule; a tie goes to
  ``classes_[1]``);
* ``n_features_in_`` is the number of training points (the kernel rows' width).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._validation import (
    check_binary_labels,
    check_choice,
    check_finite_array,
    check_no_overflow,
    check_positive,
    check_probability,
)
from ..formulations.kernel_robust import KernelRobustQNProblem, KernelRobustQPProblem, KernelRobustSOCPProblem
from ..certify.contract import solver_stats
from ..uncertainty.chance import kappa as kappa_of
from ..uncertainty.chance import kappa_estimated
from ..uncertainty.kernel_matrix import BETA_RULES, KernelUncertainty, check_mean_kernel
from ._base import BinaryClassifierTags, keep_weighted, sample_weights

__all__ = ["KernelRobustSVC"]

#: how to rescale kernel matrices whose squares overflow (check_no_overflow: the interior points form K'DK)
_KERNEL_SCALE = "e.g. divide the kernel matrices by their largest entry"
#: routes per method, fastest certified first; an uncertified result falls back along this order
#: the routes of each method, fastest first: read from the formulations' BACKENDS tables
_SOLVERS = {
    "qp": tuple(KernelRobustQPProblem.BACKENDS),
    "socp": tuple(KernelRobustSOCPProblem.BACKENDS),
    "qn": tuple(KernelRobustQNProblem.BACKENDS),
}


class KernelRobustSVC(BinaryClassifierTags, ClassifierMixin, BaseEstimator):
    """Robust SVM for uncertain kernel matrices (RSVM_QP / RSVM_SOCP / RSVM_QN of [BBBB10]).

    Parameters
    ----------
    method : "qp" (rank-one beta, libsvm), "socp" (PSD part of beta, eq. 16) or "qn"
        (original beta, penalty function (17) by DFP quasi-Newton with multiple starts).
    noise : "gaussian" (kappa = -Phi^{-1}(epsilon), beta = sigma^2) or "finite"
        (kappa = sqrt(2 log(1/epsilon)), beta = l^2 gamma^2 of eq. 9).
    beta : "auto" (default), "paper" or "symmetric" -- which ``beta`` the chance constraint uses.
        The paper's ``beta`` (Lemma 1 / Thm 2) assumes all ``n^2`` noise entries independent; a
        sampled kernel matrix is symmetric (``Z_ij = Z_ji``), which makes ``Var Tr(Z V)`` twice the
        paper's off-diagonal terms, and the paper's ``beta`` then violates the chance constraint
        (measured 0.07 / 0.12 at epsilon = 0.05 / 0.1 on Sec. 5.1 data with symmetric noise).
        "symmetric" doubles the off-diagonal of ``beta``
        (:func:`~rsvm_conic.uncertainty.kernel_matrix.symmetric_noise_beta`; conservative for
        independent entries); "auto" does so when fitting from samples that are all symmetric to
        round-off (:func:`~rsvm_conic.uncertainty.kernel_matrix.samples_symmetric`) and keeps the
        paper's ``beta`` otherwise (non-symmetric samples, or ``sigma2`` / ``a, b`` given: say
        "symmetric" if that noise is symmetric); "paper" always uses the paper's ``beta``.
        ``beta_rule_`` records the rule applied.
    epsilon : probability in (0, 1) allowed for the chance constraint (3) to fail; the Gaussian
        model needs epsilon <= 0.5 (kappa >= 0).
    moment_error : "bound" (default) or "ignore" -- whether the guarantee accounts for estimating the noise
        moments from the ``S`` kernel samples given to ``fit``.  The paper's ``kappa`` assumes the true mean
        kernel and ``beta``; estimated from ``S`` samples, the fitted classifier then violates its chance
        constraint on fresh draws more often than epsilon (up to 0.165 at epsilon = 0.1, S = 20, limit
        epsilon + 3 SE = 0.114: ``rsvm-conic run kernel-chance-mc``).  "bound" uses
        :func:`~rsvm_conic.uncertainty.chance.kappa_estimated` (the normal tolerance factor for the
        Gaussian model, a sub-Gaussian bound on the mean's error for the finite one): with probability at
        least ``moment_confidence`` over the samples, the constraint holds with probability ``1 - epsilon``
        for the law they came from (for a fixed ``alpha``; the check above measures the fitted one).
        "ignore" is the paper's ``kappa(epsilon, noise)``.  Moments given to ``fit`` (``sigma2`` or ``a, b``
        with a mean kernel) are taken as exact under both.
    moment_confidence : probability in (0, 1) of that guarantee over the draw of the samples (default 0.95).
    C : box constraint.
    solver : first route; "auto" (default) starts from the fastest: "libsvm" (qp), "newton" (socp:
        projected Newton warm-started by libsvm, with the cone IPM as its own fallback, see
        :func:`~rsvm_conic.solvers.rsvm_socp.solve_rsvm_socp`; 10-100x faster than "ipm"),
        "dfp" (qn).  Every result is certified (``solver_info_``); an uncertified or failed route
        falls back to the next one -- qp: libsvm, clarabel, scs; socp: newton, ipm, clarabel, scs;
        qn: dfp, then the socp routes on the PSD part of ``beta`` (RSVM_QN solves a non-convex
        problem whose bound is certified only when ``beta`` is close to PSD) -- with a
        :class:`~rsvm_conic.exceptions.SolverWarning` naming both routes; when none certifies,
        :class:`~rsvm_conic.exceptions.SolverError` is raised.
    sv_tol : support-vector threshold (alpha_i > sv_tol * C) for the bias.
    bias : "paper" (Sec. 3: average of ``y_j - f(x_j)`` over all support vectors, bounded ones
        included) or "free" (over the free support vectors ``sv_tol C < alpha_j < (1 - sv_tol) C``
        only, libsvm's rule, which satisfies the KKT conditions; used when every SV is bounded).
        The dual ``alpha`` does not depend on it; with a noise-free kernel and ``bias="free"`` the
        decision function is libsvm's.
    n_random_starts : extra random starts for "qn" (the nominal SVM solution is always a start).
    random_state : seed for the random starts.
    class_weight : dict, "balanced" or None, default=None
        Weight of each class's loss terms, as in scikit-learn's ``SVC``: the dual box becomes
        ``0 <= alpha_i <= C * class_weight[y_i] * sample_weight[i]`` on every method and route;
        ``"balanced"``: ``n / (2 * count(y_i))``.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels.
    alpha_ : ndarray of shape (n_train,)
        Dual multipliers of the robust SVM; ``support_`` and ``dual_coef_`` (``y_i alpha_i`` on the support) as in
        scikit-learn's ``SVC``.
    intercept_ : float
        Bias (rule ``bias``).
    t_ : float
        ``t = alpha'Q alpha + kappa r(alpha)``, the left side of the deterministic constraint (15).
    kappa_ : float
        The chance-constraint factor used: :func:`~rsvm_conic.uncertainty.chance.kappa_estimated` when fitted
        from samples with ``moment_error="bound"``, else :func:`~rsvm_conic.uncertainty.chance.kappa`.
    uncertainty_ : KernelUncertainty
        The fitted kernel-matrix uncertainty model; ``noise_free_`` is True when ``beta = 0``.
    formulation_, solution_ : Formulation, Solution
        The builder and its certified solution.
    solver_info_ : dict -- the record of the returned solution (:func:`rsvm_conic.certify.contract.solver_stats`):
        ``route`` (e.g. ``"rsvm-qp/libsvm"``), ``status``
        (``"optimal"``), ``primal`` (objective of the route's problem at ``alpha_``), ``dual`` (a
        certified lower bound on its optimum), ``gap_abs``, ``gap_rel`` (``<= tol = 1e-6``), ...,
        and ``fallback_from`` (routes tried before, ``"route: why"``).  ``solver_stats_`` is the same dict.
    beta_rule_ : "paper" or "symmetric" -- the ``beta`` rule applied (see ``beta``).

    Inputs (see the module docstring): kernel samples ``(S, n, n)``, a mean kernel ``(n, n)``
    with ``sigma2=`` or ``a=, b=``, or a mean kernel alone, which is treated as noise-free
    (``beta = 0``): the fit is then exactly the nominal SVM ``SVC(kernel="precomputed")``.
    Pairwise estimator: scikit-learn's checks and model selection pass square kernel matrices
    to ``fit`` and kernel rows ``(m, n_train)`` to ``predict``.
    """

    def __init__(
        self,
        method="socp",
        noise="gaussian",
        epsilon=0.1,
        C=1.0,
        solver="auto",
        sv_tol=1e-6,
        bias="paper",
        n_random_starts=1,
        random_state=0,
        beta="auto",
        moment_error="bound",
        moment_confidence=0.95,
        class_weight=None,
    ):
        self.method = method
        self.noise = noise
        self.beta = beta
        self.epsilon = epsilon
        self.C = C
        self.solver = solver
        self.sv_tol = sv_tol
        self.bias = bias
        self.n_random_starts = n_random_starts
        self.random_state = random_state
        self.moment_error = moment_error
        self.moment_confidence = moment_confidence
        self.class_weight = class_weight

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = True
        return tags

    def _kappa(self):
        return kappa_of(self.epsilon, self.noise)  # Gaussian epsilon > 0.5 (kappa < 0, (15) non-convex) raises

    def fit(self, X, y, sample_weight=None, *, K_bar=None, sigma2=None, a=None, b=None):
        """Fit the robust SVM on an uncertain training kernel (see the module docstring for the input forms).

        Parameters
        ----------
        X : array-like of shape (S, n, n) or (n, n)
            Samples of the noisy training kernel, or its mean kernel.
        y : array-like of shape (n,)
            Binary labels.
        sample_weight : array-like of shape (n,) or None, default=None
            Nonnegative weight ``s_i`` of each training point: the dual box ``0 <= alpha_i <= C s_i`` (times the class
            weight).  An integer weight is the same as repeating the point with its kernel noise shared by the copies
            (the dual depends on the copies' total multiplier); for a noise-free kernel that is exactly the fit on the
            repeated Gram matrix.  A point of weight 0 takes no part in the fit (its ``alpha_i`` is 0).
        K_bar : array-like of shape (n, n) or None, default=None
            The known mean kernel, with kernel samples ``X`` (None: their mean).
        sigma2 : array-like of shape (n, n) or None, default=None
            Entrywise noise variances of a mean kernel ``X`` (``noise="gaussian"``).
        a, b : array-like of shape (n, n) or None, default=None
            Lower and upper supports of the noise of a mean kernel ``X`` (``noise="finite"``).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        check_choice(self.method, "method", ("qp", "socp", "qn"))
        check_choice(self.noise, "noise", ("gaussian", "finite"))
        check_choice(self.bias, "bias", ("paper", "free"))
        check_choice(self.beta, "beta", BETA_RULES)
        check_choice(self.moment_error, "moment_error", ("bound", "ignore"))
        confidence = check_probability(self.moment_confidence, "moment_confidence")
        C = check_positive(self.C, "C")
        kappa = self._kappa()
        check_choice(self.solver, "solver", ("auto",) + _SOLVERS[self.method])
        solver = _SOLVERS[self.method][0] if self.solver == "auto" else self.solver
        # validation happens here, once; the formulations below take the checked arrays as trusted
        labels = None
        if _is_samples(X):
            X = check_finite_array(X, "X", ndim=3)
            check_no_overflow(X, "X", hint=_KERNEL_SCALE)
            if sigma2 is not None or a is not None or b is not None:
                raise ValueError("pass either kernel samples (S, n, n) or a mean kernel with sigma2 / a, b, not both.")
            unc = KernelUncertainty.from_samples(X, K_bar, noise=self.noise, check_input=False)  # the used model only
            noise_free = False
            if self.moment_error == "bound":  # the moments are S-sample estimates
                kappa = kappa_estimated(
                    self.epsilon, self.noise, X.shape[0], confidence=confidence, mean_known=K_bar is not None
                )
        else:
            X = validate_data(
                self,
                X,
                reset=True,
                accept_sparse=False,
                dtype=np.float64,
                ensure_all_finite=False,
                ensure_min_samples=2,
            )
            X = check_finite_array(X, "X", ndim=2)
            check_no_overflow(X, "X", hint=_KERNEL_SCALE)
            labels = check_binary_labels(y, X.shape[0])  # 'Only binary classification ...' before the shape complaint
            if X.shape[0] != X.shape[1]:
                raise ValueError(
                    f"X must be a square kernel matrix (n, n) or kernel samples (S, n, n); got shape "
                    f"{X.shape}. KernelRobustSVC is pairwise: pass K(X_train, X_train), not features."
                )
            if K_bar is not None:
                raise ValueError("with a mean kernel X (n, n), do not pass K_bar as well.")
            noise_free = sigma2 is None and a is None and b is None
            if noise_free:  # a kernel without noise parameters is exact: beta = 0 (both models), the nominal SVM
                K = check_mean_kernel(X, "X")
                zero = np.zeros_like(K)
                unc = KernelUncertainty(K, beta_gaussian=zero, beta_finite=zero, a=zero, b=zero)
            else:
                if self.noise == "gaussian" and sigma2 is None:
                    raise ValueError(
                        "noise='gaussian' with a mean kernel needs sigma2 (the entrywise variances); "
                        "a and b are the finite-support parameters."
                    )
                if self.noise == "finite" and (a is None or b is None):
                    raise ValueError(
                        "noise='finite' with a mean kernel needs a and b (supports of the noise); "
                        "sigma2 is the Gaussian parameter."
                    )
                unc = KernelUncertainty.from_parameters(
                    X,
                    sigma2=sigma2 if self.noise == "gaussian" else None,
                    a=a if self.noise == "finite" else None,
                    b=b if self.noise == "finite" else None,
                )
        n = unc.n
        y_pm, classes = check_binary_labels(y, n) if labels is None else labels  # (n = X.shape[0] there)
        rule = self.beta if self.beta != "auto" else ("symmetric" if unc.symmetric_noise else "paper")
        beta = unc.beta(self.noise, rule=rule)
        K_fit, y_fit, keep = unc.K_bar, y_pm, None
        weights = sample_weights(y_pm, classes, sample_weight, self.class_weight)
        if weights is not None:
            keep = keep_weighted(weights, y_pm, classes)
            if not np.all(keep):  # a point of weight 0 takes no part: its rows and columns are dropped
                sub = np.ix_(keep, keep)
                K_fit, y_fit, beta, weights = unc.K_bar[sub], y_pm[keep], beta[sub], weights[keep]
        common = dict(
            C=C,
            kappa=kappa,
            sv_tol=self.sv_tol,
            bias=self.bias,
            check_input=False,
            sample_weight=weights,
            first_route=solver,
        )
        if self.method == "qp":
            f = KernelRobustQPProblem(K_fit, y_fit, beta, **common)
        elif self.method == "socp":
            f = KernelRobustSOCPProblem(K_fit, y_fit, beta, **common)
        else:
            f = KernelRobustQNProblem(
                K_fit, y_fit, beta, n_random=int(self.n_random_starts), seed=self.random_state, **common
            )
        sol = f.solve("auto")  # from ``solver`` on; RSVM_QN then its convex surrogate (PSD part of beta), certified
        if sol.certificate.route.split("/")[0] != f.name:
            f = f.surrogate()
        self.classes_ = classes
        self.n_features_in_ = n
        self.noise_free_ = noise_free
        self.uncertainty_ = unc
        self.beta_rule_ = rule
        self.formulation_ = f
        self.solution_ = sol
        self.solver_info_ = self.solver_stats_ = solver_stats(sol)
        self.kappa_ = kappa
        alpha = sol["alpha"]
        if keep is not None and not np.all(keep):  # the dropped points' multipliers are 0
            alpha = np.zeros(n)
            alpha[keep] = sol["alpha"]
        self.alpha_ = alpha
        self.intercept_ = float(sol["b"])
        self.t_ = float(sol["t"])
        self.support_ = np.flatnonzero(self.alpha_ > self.sv_tol * C)
        self.dual_coef_ = (y_pm * self.alpha_)[self.support_][None, :]
        self._y_pm = y_pm
        return self

    def decision_function(self, X):
        """Scores for kernel rows ``(m, n)`` -> ``(m,)`` or sampled rows ``(S, m, n)`` -> ``(S, m)``."""
        check_is_fitted(self, "alpha_")
        n = self.n_features_in_
        if _is_samples(X):
            X = check_finite_array(X, "X", ndim=3)
            check_no_overflow(X, "X", hint=_KERNEL_SCALE)
        else:
            X_in = X
            X = check_array(X, accept_sparse=False, dtype=np.float64, ensure_all_finite=False)
            X = check_finite_array(X, "X", ndim=2)  # NaN / inf message first
            check_no_overflow(X, "X", hint=_KERNEL_SCALE)
            if X.shape[1] != n:
                raise ValueError(
                    f"X has {X.shape[1]} features, but {type(self).__name__} is expecting {n} features "
                    f"as input: pass kernel rows (m, {n}) against the {n} training points."
                )
            validate_data(self, X_in, reset=False, accept_sparse=False, dtype=np.float64, ensure_all_finite=False)
        if X.shape[-1] != n:
            raise ValueError(
                f"X has {X.shape[-1]} columns but the model was fitted on {n} "
                "training points; pass kernel rows against the training points."
            )
        return X @ (self._y_pm * self.alpha_) + self.intercept_

    def predict(self, X):
        """Labels; for sampled rows ``(S, m, n)`` the majority vote over the ``S`` samples."""
        F = self.decision_function(X)
        if F.ndim == 2:
            F = np.sum(np.where(F >= 0, 1.0, -1.0), axis=0)
        return np.where(F >= 0, self.classes_[1], self.classes_[0])


def _is_samples(X) -> bool:
    """True for a 3-D array-like (kernel samples); sparse matrices and ragged input are never 3-D."""
    if sp.issparse(X):
        return False
    ndim = getattr(X, "ndim", None)
    if ndim is None:
        try:
            ndim = np.asarray(X).ndim
        except (ValueError, TypeError):  # ragged nested lists: not samples; validation says what is wrong
            return False
    return ndim == 3
