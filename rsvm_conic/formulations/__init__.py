"""Problem builders: data and hyper-parameters in, a model (usually CVXPY) out."""

from .base import Formulation, Solution
from .chance import ChanceConstrainedProblem, chance_constrained_svm
from .feature_robust import FeatureRobustProblem, feature_robust_svm
from .kernel_robust import KernelRobustQNProblem, KernelRobustQPProblem, KernelRobustSOCPProblem
from .nominal import NominalProblem, nominal_svm
from .robust import RobustProblem, robust_svm
from .safe import SafeProblem, safe_svm
from .wasserstein import WassersteinProblem

__all__ = [
    "ChanceConstrainedProblem",
    "FeatureRobustProblem",
    "Formulation",
    "NominalProblem",
    "KernelRobustQNProblem",
    "KernelRobustQPProblem",
    "KernelRobustSOCPProblem",
    "RobustProblem",
    "SafeProblem",
    "Solution",
    "WassersteinProblem",
    "chance_constrained_svm",
    "feature_robust_svm",
    "nominal_svm",
    "robust_svm",
    "safe_svm",
]
