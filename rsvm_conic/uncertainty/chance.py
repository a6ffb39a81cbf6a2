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

Correction of Couellan & Jan 2020 (Sec. 3, "Chance constrained approach"): the text states
gamma_i = sqrt(epsilon_i / (1 - epsilon_i)); that is the reciprocal of the correct
factor.  With it, epsilon = 0.1 would give kappa = 0.33 and a violation
probability up to 1 / (1 + 0.33^2) = 0.9 under Chebyshev's worst case.  The test
``test_chance_constraint_holds`` measures both.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from .._validation import check_choice, check_probability

DISTRIBUTIONS = ("chebyshev", "gaussian")


def kappa(epsilon: float, distribution: str = "chebyshev") -> float:
    """The factor kappa(epsilon) for ``P[constraint holds] >= 1 - epsilon``."""
    check_choice(distribution, "distribution", DISTRIBUTIONS)
    if distribution == "gaussian":
        eps = check_probability(epsilon, "epsilon")
        if eps > 0.5:
            raise ValueError(f"epsilon = {eps} > 0.5 makes the Gaussian chance constraint non-convex "
                             "(kappa < 0); use epsilon in (0, 0.5].")
        return float(norm.isf(eps))
    eps = check_probability(epsilon, "epsilon")
    return float(np.sqrt((1.0 - eps) / eps))


def epsilon_from_kappa(k: float, distribution: str = "chebyshev") -> float:
    """Inverse of :func:`kappa`."""
    check_choice(distribution, "distribution", DISTRIBUTIONS)
    if k < 0:
        raise ValueError(f"kappa must be >= 0; got {k}.")
    if distribution == "gaussian":
        return float(norm.sf(k))
    return float(1.0 / (1.0 + k * k))
