"""scikit-learn style estimators."""

from .feature import RobustFeatureSVC, SafeSVC
from .gaussian_points import PkSVC
from .kernel_robust import KernelRobustSVC
from .cv import RobustSVCCV, WassersteinSVCCV
from .linear import ChanceConstrainedSVC, NominalSVC, RobustSVC
from .multiclass import HyperbolicSVC, WestonWatkinsSVC
from .wasserstein import WassersteinSVC

__all__ = [
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
]
