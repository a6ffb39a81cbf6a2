"""Problem builders: data and hyper-parameters in, a model (usually CVXPY) out."""

from .base import Formulation, Solution
from .chance import ChanceConstrainedSVM, chance_constrained_svm
from .nominal import NominalSVM, nominal_svm
from .robust import RobustSVM, robust_svm

__all__ = [
    "ChanceConstrainedSVM", "Formulation", "NominalSVM", "RobustSVM", "Solution", "chance_constrained_svm",
    "nominal_svm", "robust_svm",
]
