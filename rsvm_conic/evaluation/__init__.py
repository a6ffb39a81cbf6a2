"""Evaluation tools, not solvers: the worst case of a trained model or of a bound over an uncertainty set.

* :mod:`.attacks` -- adversarial (worst-case) error of a classifier by projected gradient attacks,
* :mod:`.search` -- the maximum of a function over an input set by sampling plus local ascent (used to
  test the feature-space bounds of :mod:`rsvm_conic.uncertainty.feature_bounds`).
"""

from .attacks import adversarial_error, rbf_svc_functions, worst_margins
from .search import adversarial_search, nystroem_worst_case, rff_worst_case

__all__ = [
    "adversarial_error",
    "adversarial_search",
    "nystroem_worst_case",
    "rbf_svc_functions",
    "rff_worst_case",
    "worst_margins",
]
