"""scikit-learn style estimators."""

from .feature import RobustFeatureSVC, SafeSVC
from .gaussian_points import PkSVC
from .kernel_robust import KernelRobustSVC
from .linear import ChanceConstrainedSVC, NominalSVC, RobustSVC

__all__ = ["ChanceConstrainedSVC", "KernelRobustSVC", "NominalSVC", "PkSVC", "RobustFeatureSVC", "RobustSVC", "SafeSVC"]
