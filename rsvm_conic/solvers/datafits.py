"""Data-fit terms (skglm style: the loss is separate from the penalty and the solver).

``RobustHinge`` is the robust loss of Couellan & Jan 2020, eq. (6):

    l_i(w, b) = max{0, 1 - y_i (<w, x_i> + b) + gamma_i ||A_{g(i)}^T w||_q},

which is the nominal hinge at radius 0.  It is the worst case of the hinge loss
over the uncertainty set U_i (see :mod:`rsvm_conic.uncertainty.sets`).
"""

from __future__ import annotations

import numpy as np

from ..uncertainty.sets import ResolvedUncertainty
from .certificates import DualCertificate, FactorOps, dual_bound


class RobustHinge:
    """Robust hinge over data (X, y) in {-1, +1} and a resolved uncertainty set (or None)."""

    def __init__(self, X: np.ndarray, y: np.ndarray, uncertainty: ResolvedUncertainty | None = None):
        self.X = X
        self.y = y
        self.unc = uncertainty

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    def restrict(self, idx) -> "RobustHinge":
        """The same loss on the samples ``idx`` (each keeps its group and gamma)."""
        return RobustHinge(self.X[idx], self.y[idx], _restrict(self.unc, idx))

    def factor_ops(self) -> FactorOps | None:
        """The robust term as a :class:`~.certificates.FactorOps` (None: nominal hinge)."""
        return FactorOps.from_uncertainty(self.unc)

    def dual_bound(self, w: np.ndarray, b: float, C: float, **options) -> DualCertificate:
        """P(w, b) = 1/2 ||w||^2 + C * value(w, b) and a feasible dual point of the robust SVM built from
        (w, b), whose objective D <= min P (see :func:`~.certificates.dual_bound` for ``options``)."""
        return dual_bound(self.X, self.y, C, w, b, self.factor_ops(), **options)

    def _penalty(self, w, idx=None):
        if self.unc is None or self.unc.radius == 0:
            return 0.0
        gamma = self.unc.gamma if idx is None else self.unc.gamma[idx]
        gi = self.unc.group_index if idx is None else self.unc.group_index[idx]
        if self.unc.n_groups <= 64 or idx is None:
            s = self.unc.support(w)[gi]
        else:
            ug, inv = np.unique(gi, return_inverse=True)
            s = self.unc.support(w, ug)[inv]
        return gamma * s

    def losses(self, w: np.ndarray, b: float, idx=None) -> np.ndarray:
        X = self.X if idx is None else self.X[idx]
        y = self.y if idx is None else self.y[idx]
        return np.maximum(0.0, 1.0 - y * (X @ w + b) + self._penalty(w, idx))

    def value(self, w: np.ndarray, b: float) -> float:
        """Sum of the robust hinge losses over all samples."""
        return float(np.sum(self.losses(w, b)))

    def subgradient(self, w: np.ndarray, b: float, idx: np.ndarray, return_active: bool = False):
        """Mean subgradient over the samples ``idx`` w.r.t. (w, b): the nominal hinge part over the
        active samples plus :meth:`_robust_subgradient` (the gradient of the robust term).  With
        ``return_active`` also the mask of the samples whose loss is positive (the solvers average it
        into a dual estimate)."""
        X, y = self.X[idx], self.y[idx]
        active = self.losses(w, b, idx) > 0
        m = idx.shape[0]
        if not np.any(active):
            return (np.zeros_like(w), 0.0, active) if return_active else (np.zeros_like(w), 0.0)
        ya = y[active]
        gw = -(ya @ X[active])
        gb = -float(np.sum(ya))
        robust = self._robust_subgradient(w, idx[active])
        if robust is not None:
            gw = gw + robust
        return (gw / m, gb / m, active) if return_active else (gw / m, gb / m)

    def _robust_subgradient(self, w: np.ndarray, ia: np.ndarray):
        """``sum_{i in ia} gamma_i d||A_{g(i)}^T w||_q / dw`` (None when there is no robust term)."""
        if self.unc is None or self.unc.radius == 0:
            return None
        gi = self.unc.group_index[ia]
        gamma = self.unc.gamma[ia]
        ug, inv = np.unique(gi, return_inverse=True)
        G = self.unc.support_grad(w, ug)  # (len(ug), n)
        weights = np.bincount(inv, weights=gamma, minlength=ug.shape[0])
        return weights @ G


def _restrict(unc: ResolvedUncertainty | None, idx) -> ResolvedUncertainty | None:
    if unc is None:
        return None
    return ResolvedUncertainty(unc.factors, unc.diagonal, unc.group_index[idx], unc.p, unc.q, unc.radius,
                               unc.scale[idx])
