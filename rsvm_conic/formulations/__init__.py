"""Problem builders: data and hyper-parameters in, a model (usually CVXPY) out."""

from .base import Formulation, Solution
from .chance import ChanceConstrainedSVM, chance_constrained_svm
from .feature_robust import FeatureRobustSVM, feature_robust_svm
from .kernel_robust import RSVMQN, RSVMQP, RSVMSOCP
from .nominal import NominalSVM, nominal_svm
from .robust import RobustSVM, robust_svm
from .safe import SafeSVM, safe_svm
from .wasserstein import WassersteinProblem

__all__ = [
    "ChanceConstrainedSVM",
    "FeatureRobustSVM",
    "Formulation",
    "NominalSVM",
    "RSVMQN",
    "RSVMQP",
    "RSVMSOCP",
    "RobustSVM",
    "SafeSVM",
    "Solution",
    "WassersteinProblem",
    "chance_constrained_svm",
    "feature_robust_svm",
    "nominal_svm",
    "robust_svm",
    "safe_svm",
]
