"""scikit-learn style estimator for SVMs robust to noise in the kernel matrix (Bhadra et al. 2010).

``KernelRobustSVC(method="qp"|"socp"|"qn", noise="gaussian"|"finite", epsilon, C)`` fits
formulation (15) (see :mod:`rsvm_conic.formulations.kernel_robust`).

Inputs are kernels, so the scikit-learn contract is followed "as far as kernel inputs allow":

* ``fit(X, y)`` with ``X`` either the samples of the noisy training kernel, shape
  ``(S, n, n)`` (mean and noise parameters are estimated; pass ``K_bar=`` if the mean kernel is
  known), or a mean kernel ``(n, n)`` together with ``sigma2=`` (Gaussian) or ``a=, b=``
  (supports of the noise, finite case);
* ``decision_function(X)`` / ``predict(X)`` take kernel rows against the training points,
  shape ``(m, n)``, or sampled rows ``(S, m, n)``: scores then have shape ``(S, m)`` and
  ``predict`` returns the majority vote over samples (MajErr's rule; a tie goes to
  ``classes_[1]``);
* ``n_features_in_`` is the number of training points (the kernel rows' width).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import check_binary_labels, check_choice, check_finite_array, check_positive, check_probability
from ..formulations.kernel_robust import RSVMQN, RSVMQP, RSVMSOCP
from ..uncertainty.kernel_matrix import KernelUncertainty, kappa as kappa_of

__all__ = ["KernelRobustSVC"]

_SOLVERS = {"qp": ("libsvm", "clarabel", "scs"), "socp": ("ipm", "clarabel", "scs"), "qn": ("dfp",)}


class KernelRobustSVC(ClassifierMixin, BaseEstimator):
    """Robust SVM for uncertain kernel matrices (RSVM_QP / RSVM_SOCP / RSVM_QN of Bhadra et al. 2010).

    Parameters
    ----------
    method : "qp" (rank-one beta, libsvm), "socp" (PSD part of beta, eq. 16) or "qn"
        (original beta, penalty function (17) by DFP quasi-Newton with multiple starts).
    noise : "gaussian" (kappa = -Phi^{-1}(epsilon), beta = sigma^2) or "finite"
        (kappa = sqrt(2 log(1/epsilon)), beta = l^2 gamma^2 of eq. 9).
    epsilon : probability in (0, 1) allowed for the chance constraint (3) to fail; the Gaussian
        model needs epsilon <= 0.5 (kappa >= 0).
    C : box constraint.
    solver : backend; default "libsvm" (qp), "ipm" with Clarabel fallback (socp), "dfp" (qn).
    sv_tol : support-vector threshold (alpha_i > sv_tol * C) for the bias of Sec. 3.
    n_random_starts : extra random starts for "qn" (the nominal SVM solution is always a start).
    random_state : seed for the random starts.
    """

    def __init__(self, method="socp", noise="gaussian", epsilon=0.1, C=1.0, solver=None, sv_tol=1e-6,
                 n_random_starts=1, random_state=0):
        self.method = method
        self.noise = noise
        self.epsilon = epsilon
        self.C = C
        self.solver = solver
        self.sv_tol = sv_tol
        self.n_random_starts = n_random_starts
        self.random_state = random_state

    def _kappa(self):
        eps = check_probability(self.epsilon, "epsilon")
        k = kappa_of(eps, self.noise)
        if k < 0:
            raise ValueError(f"epsilon = {eps} > 0.5 gives kappa = -Phi^-1(epsilon) = {k:.3g} < 0 for Gaussian noise; "
                             "(15) is then non-convex and no longer a robust counterpart. Use epsilon <= 0.5.")
        return k

    def fit(self, X, y, *, K_bar=None, sigma2=None, a=None, b=None):
        check_choice(self.method, "method", ("qp", "socp", "qn"))
        check_choice(self.noise, "noise", ("gaussian", "finite"))
        C = check_positive(self.C, "C")
        kappa = self._kappa()
        solver = self.solver or _SOLVERS[self.method][0]
        check_choice(solver, "solver", _SOLVERS[self.method])
        X = check_finite_array(X, "X", ndim=(2, 3))
        if X.ndim == 3:
            if sigma2 is not None or a is not None or b is not None:
                raise ValueError("pass either kernel samples (S, n, n) or a mean kernel with sigma2 / a, b, not both.")
            unc = KernelUncertainty.from_samples(X, K_bar)
        else:
            if K_bar is not None:
                raise ValueError("with a mean kernel X (n, n), do not pass K_bar as well.")
            if self.noise == "gaussian" and sigma2 is None:
                raise ValueError("noise='gaussian' with a mean kernel needs sigma2 (the entrywise variances).")
            if self.noise == "finite" and (a is None or b is None):
                raise ValueError("noise='finite' with a mean kernel needs a and b (supports of the noise).")
            unc = KernelUncertainty.from_parameters(X, sigma2=sigma2 if self.noise == "gaussian" else None,
                                                    a=a if self.noise == "finite" else None,
                                                    b=b if self.noise == "finite" else None)
        n = unc.n
        y_pm, classes = check_binary_labels(y, n)
        beta = unc.beta(self.noise)
        if self.method == "qp":
            f = RSVMQP(unc.K_bar, y_pm, beta, C=C, kappa=kappa, sv_tol=self.sv_tol)
            sol = f.solve(solver)
        elif self.method == "socp":
            f = RSVMSOCP(unc.K_bar, y_pm, beta, C=C, kappa=kappa, sv_tol=self.sv_tol)
            sol = f.solve(solver, fallback="clarabel") if solver == "ipm" else f.solve(solver)
        else:
            f = RSVMQN(unc.K_bar, y_pm, beta, C=C, kappa=kappa, sv_tol=self.sv_tol,
                       n_random=int(self.n_random_starts), seed=self.random_state)
            sol = f.solve(solver)
        self.classes_ = classes
        self.n_features_in_ = n
        self.uncertainty_ = unc
        self.formulation_ = f
        self.solution_ = sol
        self.kappa_ = kappa
        self.alpha_ = sol["alpha"]
        self.intercept_ = float(sol["b"])
        self.t_ = float(sol["t"])
        self.support_ = np.flatnonzero(self.alpha_ > self.sv_tol * C)
        self.dual_coef_ = (y_pm * self.alpha_)[self.support_][None, :]
        self._y_pm = y_pm
        return self

    def decision_function(self, X):
        """Scores for kernel rows ``(m, n)`` -> ``(m,)`` or sampled rows ``(S, m, n)`` -> ``(S, m)``."""
        check_is_fitted(self, "alpha_")
        X = check_finite_array(X, "X", ndim=(2, 3))
        if X.shape[-1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[-1]} columns but the model was fitted on {self.n_features_in_} "
                             "training points; pass kernel rows against the training points.")
        return X @ (self._y_pm * self.alpha_) + self.intercept_

    def predict(self, X):
        """Labels; for sampled rows ``(S, m, n)`` the majority vote over the ``S`` samples."""
        F = self.decision_function(X)
        if F.ndim == 2:
            F = np.sum(np.where(F >= 0, 1.0, -1.0), axis=0)
        return np.where(F >= 0, self.classes_[1], self.classes_[0])
