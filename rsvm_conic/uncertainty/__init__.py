"""Uncertainty sets, chance-constraint factors and feature-space bounds."""

from .chance import epsilon_from_kappa, kappa, kappa_estimated
from .feature_bounds import (
    angle_probability,
    min_sigma_for_angle,
    nystroem_feature_bound,
    prop51_sigma,
    rff_feature_bound,
)
from .kernel_matrix import (
    KernelUncertainty,
    finite_support_beta,
    gamma_finite_support,
    psd_part,
    rank_one_approx,
    symmetric_noise_beta,
)
from .sets import ResolvedUncertainty, UncertaintySet, psd_sqrt

__all__ = [
    "KernelUncertainty",
    "ResolvedUncertainty",
    "UncertaintySet",
    "finite_support_beta",
    "gamma_finite_support",
    "psd_part",
    "rank_one_approx",
    "symmetric_noise_beta",
    "angle_probability",
    "epsilon_from_kappa",
    "kappa",
    "kappa_estimated",
    "min_sigma_for_angle",
    "nystroem_feature_bound",
    "prop51_sigma",
    "psd_sqrt",
    "rff_feature_bound",
]
