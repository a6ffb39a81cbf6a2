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

Papers are cited by key, e.g. ``[CJ20, eq. 4]``:

* [CJ20] N. Couellan, S. Jan, "Feature uncertainty bounds for explicit feature maps and large robust
  nonlinear SVM classifiers", Annals of Mathematics and Artificial Intelligence 88 (2020).
* [BBBB10] S. Bhadra, S. Bhattacharya, C. Bhattacharyya, A. Ben-Tal, "Robust Formulations for Handling
  Uncertainty in Kernel Matrices", ICML 2010.
* [RR07] A. Rahimi, B. Recht, "Random Features for Large-Scale Kernel Machines", NIPS 2007.
* [ElD19] A. El Dakdouki, "Machine a vecteurs de support hyperbolique et ingenierie du noyau", PhD thesis,
  Universite de Lille, 2019.
* [CGT19] Y. Chen, T. T. Georgiou, A. R. Tannenbaum, "Probabilistic Kernel Support Vector Machines",
  arXiv:1904.06762, 2019.

The README's References section lists these and the secondary references (CW16, CW17, KS98, OC15, SZ13, Van10).
"""

__version__ = "0.1.0"  # the one version string (pyproject.toml reads it)

#: every estimator, exported here: ``from rsvm_conic import RobustSVC`` imports its module at that moment (PEP 562),
#: so that ``import rsvm_conic`` (and the ``rsvm-conic`` command's start) loads no scikit-learn, CVXPY or numba;
#: tests/test_startup.py checks this table against ``rsvm_conic.estimators.__all__``
_ESTIMATORS = (
    "ChanceConstrainedSVC",
    "HyperbolicSVC",
    "KernelRobustSVC",
    "NominalSVC",
    "PkSVC",
    "RobustFeatureSVC",
    "RobustSVC",
    "RobustSVCCV",
    "SafeSVC",
    "WassersteinSVC",
    "WassersteinSVCCV",
    "WestonWatkinsSVC",
)

__all__ = [*_ESTIMATORS, "__version__"]


def __getattr__(name: str):
    if name in _ESTIMATORS:
        from . import estimators

        value = getattr(estimators, name)
        globals()[name] = value  # the next access is a plain attribute
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
