"""scikit-learn style estimators."""

from .linear import ChanceConstrainedSVC, NominalSVC, RobustSVC

__all__ = ["ChanceConstrainedSVC", "NominalSVC", "RobustSVC"]
