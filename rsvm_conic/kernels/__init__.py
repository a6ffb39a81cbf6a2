"""Kernels and explicit feature maps."""

from .feature_maps import NystroemMap, RandomFourierFeatures
from .gaussian_points import GaussianPointRFF, expected_rbf_kernel, expected_rbf_kernel_mc

__all__ = ["GaussianPointRFF", "NystroemMap", "RandomFourierFeatures", "expected_rbf_kernel",
           "expected_rbf_kernel_mc"]
