"""The safe SVM [CJ20, eq. 7]: the two backends cross-checked on one instance.

* ``INSTANCES["safe-svm-bilevel"]`` -- two Gaussian classes in R^2 (means +-(1, 1), std 0.5, plus
  N(0, 0.3 I) input noise), 100 training and 200 validation samples, C = 1, box [0.05, 2] for both
  semi-axes.  Backends ``hypergradient`` (exact hypergradient, Newton lower level) and
  ``stochastic_bilevel`` (the stochastic bi-level gradient method of [CJ20] / [CW16], 300 outer
  iterations, seed 0).  Both re-solve and certify the exact lower level at their learned sigma; the
  runner compares the upper-level objective (exact validation hinge, relative tolerance 0.1) and the
  learned ellipsoid (``max_t |sigma_t - sigma_t'| <= 0.25``, an eighth of the box width).  The
  tolerances are loose on purpose: eq. (7) is non-convex and flat in sigma, and a stochastic method
  stopped after a fixed budget lands near, not at, the stationary point the hypergradient method finds.
  Measured with this builder, seeds 0-5 (seed 0 is the instance): upper objectives within 0.2-5.5 %
  of each other (the stochastic one lower on 3 of 6), sigma within 0.02-0.25 on 5 seeds and 0.65 on
  seed 3, where the stochastic method ends in another basin with a 4 % *lower* exact objective
  (11.39 vs 11.87): the cross-check can only be local for a non-convex problem.
"""

from __future__ import annotations

import numpy as np

from rsvm_conic.formulations.safe import SafeProblem
from rsvm_conic.runner.compare import ProblemInstance


def _two_gaussians(L, noise, rng):
    y = np.where(rng.uniform(size=L) < 0.5, 1.0, -1.0)
    X = y[:, None] + 0.5 * rng.normal(size=(L, 2))
    return X + np.sqrt(noise) * rng.normal(size=(L, 2)), y


def build_safe_instance(L=100, L_val=200, L_test=500, noise=0.3, C=1.0, seed=0):
    """The safe SVM on two noisy Gaussian classes; returns ``(formulation, X_test, y_test)``."""
    rng = np.random.default_rng(seed)
    X, y = _two_gaussians(L, noise, rng)
    Xv, yv = _two_gaussians(L_val, noise, rng)
    Xt, yt = _two_gaussians(L_test, noise, rng)
    return SafeProblem(X, y, Xv, yv, C=C, sigma_min=0.05, sigma_max=2.0), Xt, yt


INSTANCES = {
    "safe-svm-bilevel": ProblemInstance(
        "safe-svm-bilevel",
        "safe SVM eq. (7): exact hypergradient vs the stochastic bi-level method, 2 Gaussians L=100, N_val=200",
        build_safe_instance,
        backends=("hypergradient", "stochastic_bilevel"),
        backend_options={"stochastic_bilevel": {"n_outer": 300, "seed": 0}},
        rtol=0.1,
        value_atol={"sigma": 0.25},
    ),
}
