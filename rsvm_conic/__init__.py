"""rsvm-conic: support vector machines that stay correct when the data are uncertain.

Sub-packages, one concern each:

* :mod:`rsvm_conic.uncertainty` -- uncertainty sets, chance-constraint factors, bounds,
* :mod:`rsvm_conic.kernels` -- kernels and explicit feature maps,
* :mod:`rsvm_conic.formulations` -- problem builders (data in, CVXPY model out),
* :mod:`rsvm_conic.solvers` -- conic solve wrapper, stochastic and special-purpose solvers,
* :mod:`rsvm_conic.evaluation` -- worst-case evaluation: adversarial attacks and searches,
* :mod:`rsvm_conic.estimators` -- scikit-learn style estimators,
* :mod:`rsvm_conic.metrics` -- error measures,
* :mod:`rsvm_conic.datasets` -- synthetic generators and vendored public data,
* :mod:`rsvm_conic.runner` -- multi-backend comparison and resumable grids,
* :mod:`rsvm_conic.cli` -- the ``rsvm-conic`` command.
"""

__version__ = "0.1.0"  # the one version string (pyproject.toml reads it)

from .estimators import (  # noqa: E402  (after __version__, which submodules may read)
    ChanceConstrainedSVC,
    HyperbolicSVC,
    KernelRobustSVC,
    NominalSVC,
    PkSVC,
    RobustFeatureSVC,
    RobustSVC,
    SafeSVC,
    WestonWatkinsSVC,
)

__all__ = ["ChanceConstrainedSVC", "HyperbolicSVC", "KernelRobustSVC", "NominalSVC", "PkSVC", "RobustFeatureSVC",
           "RobustSVC", "SafeSVC", "WestonWatkinsSVC", "__version__"]
