"""Uncertainty sets, chance-constraint factors and feature-space bounds."""

from .chance import epsilon_from_kappa, kappa
from .sets import ResolvedUncertainty, UncertaintySet, psd_sqrt

__all__ = ["ResolvedUncertainty", "UncertaintySet", "epsilon_from_kappa", "kappa", "psd_sqrt"]
