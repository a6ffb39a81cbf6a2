"""Chance-constrained linear SVM [CJ20, Sec. 3 "Chance constrained approach"].

Replace each margin constraint by
``P[y_i (<w, x_i + dx_i> + b) + xi_i >= 1] >= 1 - epsilon`` with ``dx_i`` of mean 0
and covariance ``Sigma_i``.  Both versions reduce to the robust SOCP with p = 2 and
gamma_i = kappa(epsilon) (:func:`rsvm_conic.uncertainty.kappa`):

* ``distribution="gaussian"``: kappa = Phi^{-1}(1 - epsilon) (exact for Gaussian noise),
* ``distribution="chebyshev"``: kappa = sqrt((1 - epsilon) / epsilon) (any law with
  that covariance; the paper's printed sqrt(epsilon/(1 - epsilon)) is inverted --
  see :mod:`rsvm_conic.uncertainty.chance`).

The CVXPY parameter is ``kappa``; ``set_params(epsilon=...)`` converts.
"""

from __future__ import annotations

from .._validation import check_choice
from ..uncertainty.chance import DISTRIBUTIONS, kappa
from ..uncertainty.sets import UncertaintySet
from .robust import RobustProblem


class ChanceConstrainedProblem(RobustProblem):
    """Chance-constrained linear SVM: the robust SOCP with p = 2 and gamma_i = kappa(epsilon); see the module docstring.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        Nominal inputs.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    Sigma : ndarray or None, default=None
        Covariances of the perturbations, shapes as in :class:`~rsvm_conic.uncertainty.UncertaintySet`
        (None: identity).
    groups : array-like of shape (L,), "sample" or None, default=None
        Which covariance each sample uses.
    C : float, default=1.0
        Weight of the hinge loss against ``1/2 ||w||^2``.
    epsilon : float in (0, 1), default=0.1
        Allowed probability of violating each margin constraint.
    distribution : {"chebyshev", "gaussian"}, default="chebyshev"
        Model of the perturbation: any law with the given covariance (Chebyshev-Cantelli bound) or Gaussian.
    check_input : bool, default=True
        Validate ``X`` and ``y`` (False: internal callers passing trusted float arrays).
    sample_weight : ndarray of shape (L,) or None, default=None
        Positive weights ``s_i`` of the hinge terms (``C_i = C s_i``); None: all 1.  Trusted (the estimators
        validate them and drop the samples of weight 0).
    """

    name = "chance"
    gamma_param = "kappa"

    def __init__(
        self,
        X,
        y,
        Sigma=None,
        groups=None,
        C=1.0,
        epsilon=0.1,
        distribution="chebyshev",
        *,
        check_input: bool = True,
        sample_weight=None,
    ):
        self.distribution = check_choice(distribution, "distribution", DISTRIBUTIONS)
        k = kappa(epsilon, distribution)
        self.epsilon = float(epsilon)
        super().__init__(
            X,
            y,
            UncertaintySet(Sigma=Sigma, groups=groups, p=2, radius=k),
            C=C,
            radius=k,
            check_input=check_input,
            sample_weight=sample_weight,
        )

    def set_params(self, **values):
        if "epsilon" in values:
            eps = values.pop("epsilon")
            values["kappa"] = kappa(eps, self.distribution)
            self.epsilon = float(eps)
        return super().set_params(**values)


def chance_constrained_svm(
    X, y, Sigma=None, groups=None, C=1.0, epsilon=0.1, distribution="chebyshev"
) -> ChanceConstrainedProblem:
    """Build the chance-constrained SVM; the parameters are those of :class:`ChanceConstrainedProblem`.

    Parameters
    ----------
    X, y, Sigma, groups, C, epsilon, distribution
        See :class:`ChanceConstrainedProblem`.

    Returns
    -------
    ChanceConstrainedProblem
    """
    return ChanceConstrainedProblem(X, y, Sigma, groups, C, epsilon, distribution)
