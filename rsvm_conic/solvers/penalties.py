"""Penalty terms with their proximal operators, passed to the solvers (skglm style: not built inside them)."""

from __future__ import annotations

import numpy as np


class L2Squared:
    """h(w) = lam / 2 ||w||^2.

    Parameters
    ----------
    lam : float
        The penalty's weight.
    """

    def __init__(self, lam: float):
        self.lam = float(lam)

    def value(self, w: np.ndarray) -> float:
        return 0.5 * self.lam * float(w @ w)

    def gradient(self, w: np.ndarray) -> np.ndarray:
        return self.lam * w

    def prox(self, w: np.ndarray, step: float) -> np.ndarray:
        """argmin_z h(z) + ||z - w||^2 / (2 step)."""
        return w / (1.0 + step * self.lam)
