"""Safety factors turning a chance constraint into a second-order cone constraint.

For a perturbation ``dx`` with mean 0 and covariance ``Sigma`` the linear constraint
``y (<w, x + dx> + b) + xi >= 1`` holds with probability at least ``1 - epsilon`` if

    y (<w, x> + b) + xi - 1 >= kappa(epsilon) * ||Sigma^{1/2} w||_2 .

* ``gaussian``: dx ~ N(0, Sigma) exactly: ``kappa = Phi^{-1}(1 - epsilon)``; the
  constraint is then also necessary.  Convex only for ``epsilon <= 1/2`` (kappa >= 0).
* ``chebyshev``: any distribution with that mean and covariance (one-sided
  multivariate Chebyshev / Cantelli bound ``P[Z >= t] <= s^2 / (s^2 + t^2)``):
  ``kappa = sqrt((1 - epsilon) / epsilon)``.  Tight: a two-point law along the
  direction ``Sigma^{1/2} w`` attains it (see tests).

Correction of [CJ20] (Sec. 3, "Chance constrained approach"): the text states
gamma_i = sqrt(epsilon_i / (1 - epsilon_i)); that is the reciprocal of the correct
factor.  With it, epsilon = 0.1 would give kappa = 0.33 and a violation
probability up to 1 / (1 + 0.33^2) = 0.9 under Chebyshev's worst case.  The test
``test_chance_constraint_holds`` measures both.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from .._validation import check_choice, check_probability

DISTRIBUTIONS = ("chebyshev", "gaussian")  # the linear chance-constrained SVM's choices
#: every model kappa(epsilon) knows: the two above and [BBBB10]'s finite-support noise
MODELS = ("chebyshev", "gaussian", "finite")


def kappa(epsilon: float, model: str = "chebyshev", *, allow_negative: bool = False) -> float:
    """The safety factor kappa(epsilon) for ``P[constraint holds] >= 1 - epsilon`` -- the one home of it.

    * ``"chebyshev"``: ``sqrt((1 - epsilon) / epsilon)`` (any law with the given mean and covariance);
    * ``"gaussian"``: ``Phi^{-1}(1 - epsilon)`` (Gaussian perturbations; [BBBB10], Thm 1 for
      the kernel matrix).  Negative for ``epsilon > 1/2``, where the constraint is non-convex: that
      raises unless ``allow_negative`` (the Table 1 reproduction clips such values at 0 itself);
    * ``"finite"``: ``sqrt(2 log(1 / epsilon))`` (finite-support kernel noise, [BBBB10], Thm 3).
    """
    check_choice(model, "model", MODELS)
    eps = check_probability(epsilon, "epsilon")
    if model == "gaussian":
        if eps > 0.5 and not allow_negative:
            raise ValueError(
                f"epsilon = {eps} > 0.5 makes the Gaussian chance constraint non-convex "
                "(kappa < 0); use epsilon in (0, 0.5]."
            )
        return float(norm.isf(eps))
    if model == "finite":
        return float(np.sqrt(2.0 * np.log(1.0 / eps)))
    return float(np.sqrt((1.0 - eps) / eps))


def epsilon_from_kappa(k: float, model: str = "chebyshev") -> float:
    """Inverse of :func:`kappa` (for ``k >= 0``)."""
    check_choice(model, "model", MODELS)
    if k < 0:
        raise ValueError(f"kappa must be >= 0; got {k}.")
    if model == "gaussian":
        return float(norm.sf(k))
    if model == "finite":
        return float(np.exp(-0.5 * k * k))
    return float(1.0 / (1.0 + k * k))
