"""scikit-learn style estimators."""

from .feature import RobustFeatureSVC, SafeSVC
from .gaussian_points import PkSVC
from .linear import ChanceConstrainedSVC, NominalSVC, RobustSVC

__all__ = ["ChanceConstrainedSVC", "NominalSVC", "PkSVC", "RobustFeatureSVC", "RobustSVC", "SafeSVC"]
