"""Kernels and explicit feature maps."""

from .consolidation import ConsolidationKernel, ConsolidationRandomFeatures
from .feature_maps import NystroemMap, RandomFourierFeatures
from .gaussian_points import GaussianPointRFF, expected_rbf_kernel, expected_rbf_kernel_mc
from .rbf import gaussian_kernel

__all__ = [
    "ConsolidationKernel",
    "ConsolidationRandomFeatures",
    "GaussianPointRFF",
    "gaussian_kernel",
    "NystroemMap",
    "RandomFourierFeatures",
    "expected_rbf_kernel",
    "expected_rbf_kernel_mc",
]
