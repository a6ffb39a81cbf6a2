"""Data-fit terms (skglm style: the loss is separate from the penalty and the solver, and holds no data).

``RobustHinge`` is the robust loss of [CJ20], eq. (6):

    l_i(w, b) = max{0, 1 - y_i (<w, x_i> + b) + gamma_i ||A_{g(i)}^T w||_q},

which is the nominal hinge at radius 0.  It is the worst case of the hinge loss
over the uncertainty set U_i (see :mod:`rsvm_conic.uncertainty.sets`).

A data fit holds its *parameters* (here the resolved uncertainty set: factors, the group and gamma_i of
each sample) but not the data: ``initialize(X, y)`` checks that the parameters fit the data, and every
method takes the labels ``y`` and the scores ``Xw = X w + b`` of the samples ``idx`` (row indices of the data
given to ``initialize``; None: all of them), and ``w`` itself for the robust term.  The solvers that use a
data fit declare the methods they call and check them (:mod:`.stochastic`).
"""

from __future__ import annotations

import numpy as np

from ..uncertainty.sets import ResolvedUncertainty, dual_norm_subgradient, dual_norm_values
from .certificates import DualCertificate, FactorOps, dual_bound


class RobustHinge:
    """Robust hinge of a resolved uncertainty set (None: the nominal hinge); labels in {-1, +1}."""

    def __init__(self, uncertainty: ResolvedUncertainty | None = None):
        self.unc = uncertainty
        # gamma_i = radius * scale_i, formed once (``unc.gamma`` is O(L) a call: too much for each minibatch)
        self._gamma = None if uncertainty is None else uncertainty.gamma
        self._one_per_sample = uncertainty is not None and bool(
            uncertainty.n_groups == uncertainty.group_index.shape[0]
            and np.array_equal(np.sort(uncertainty.group_index), np.arange(uncertainty.n_groups))
        )

    def initialize(self, X: np.ndarray, y: np.ndarray) -> "RobustHinge":
        """Check that the parameters fit the data (one group per sample, factors of n = X.shape[1]).

        Nothing is precomputed: every method evaluates the robust term from the parameters.
        """
        if self.unc is not None and (
            self.unc.group_index.shape[0] != X.shape[0] or self.unc.factors.shape[-1] != X.shape[1]
        ):
            raise ValueError(
                f"the uncertainty set was resolved for {self.unc.group_index.shape[0]} samples of "
                f"{self.unc.factors.shape[-1]} features; the data have shape {X.shape}."
            )
        return self

    def restrict(self, idx) -> "RobustHinge":
        """The same loss on the samples ``idx`` (each keeps its group and gamma)."""
        return RobustHinge(_restrict(self.unc, idx))

    def factor_ops(self) -> FactorOps | None:
        """The robust term as a :class:`~.certificates.FactorOps` (None: nominal hinge)."""
        return FactorOps.from_uncertainty(self.unc)

    def dual_bound(self, X: np.ndarray, y: np.ndarray, w: np.ndarray, b: float, C: float, **options) -> DualCertificate:
        """P(w, b) = 1/2 ||w||^2 + C * value on (X, y) and a feasible dual point of the robust SVM built from
        (w, b), whose objective D <= min P (see :func:`~.certificates.dual_bound` for ``options``)."""
        return dual_bound(X, y, C, w, b, self.factor_ops(), **options)

    def _robust_term(self, w, idx=None):
        """``gamma_i ||A_{g(i)}^T w||_q`` for the samples ``idx`` (0.0 without a robust term)."""
        if self.unc is None or self.unc.radius == 0:
            return 0.0
        if idx is None:
            return self.unc.robust_penalty(w)
        gamma, gi = self._gamma[idx], self.unc.group_index[idx]
        if self.unc.n_groups <= 64:
            s = self.unc.support(w)[gi]
        else:
            ug, inv = np.unique(gi, return_inverse=True)
            s = self.unc.support(w, ug)[inv]
        return gamma * s

    def losses(self, y: np.ndarray, w: np.ndarray, Xw: np.ndarray, idx=None) -> np.ndarray:
        """The robust hinge loss of each of the samples ``idx``, whose labels are ``y`` and scores ``Xw``."""
        return np.maximum(0.0, 1.0 - y * Xw + self._robust_term(w, idx))

    def value(self, y: np.ndarray, w: np.ndarray, Xw: np.ndarray, idx=None) -> float:
        """Sum of the robust hinge losses of the samples ``idx`` (all by default)."""
        return float(np.sum(self.losses(y, w, Xw, idx)))

    def subgradient(self, X: np.ndarray, y: np.ndarray, w: np.ndarray, Xw: np.ndarray, idx: np.ndarray):
        """Mean subgradient w.r.t. (w, b) over the samples ``idx`` (rows ``X``, labels ``y``, scores ``Xw``): the
        nominal hinge part over the active samples plus :meth:`_robust_subgradient` (the gradient of the
        robust term).  Returns ``(gw, gb, active)``, ``active`` the mask of the samples whose loss is positive
        (the stochastic solvers average it into a dual estimate)."""
        term, robust_grad = self._robust_batch(w, idx)
        active = 1.0 - y * Xw + term > 0
        m = idx.shape[0]
        if not np.any(active):
            return np.zeros_like(w), 0.0, active
        ya = y * active  # y on the active samples, 0 elsewhere: one pass over X's rows, no copy of them
        gw = -(ya @ X)
        gb = -float(np.sum(ya))
        if robust_grad is not None:
            gw = gw + robust_grad(active)
        return gw / m, gb / m, active

    def _robust_batch(self, w: np.ndarray, idx: np.ndarray):
        """The robust term of the samples ``idx`` and a function ``active -> sum_{active} gamma_i d||A_{g(i)}^T w||_q
        / dw`` (``(0.0, None)`` without a robust term): the factors meet ``w`` once per distinct group of the batch
        (every group when there are at most 64), for the loss and its subgradient alike."""
        unc = self.unc
        if unc is None or unc.radius == 0:
            return 0.0, None
        gamma, gi = self._gamma[idx], unc.group_index[idx]
        if unc.n_groups <= 64:
            F, inv = unc.factors, gi
        elif self._one_per_sample:  # a group per sample: the batch's groups are distinct, no sort needed
            F, inv = unc.factors[gi], None
        else:
            ug, inv = np.unique(gi, return_inverse=True)
            F = unc.factors[ug]
        V = F * w if unc.diagonal else np.einsum("kij,i->kj", F, w)  # A_g^T w, (k, n)
        sup = dual_norm_values(V, unc.q)
        term = gamma * (sup if inv is None else sup[inv])

        def grad(active):
            if inv is None:
                weights = gamma * active
            else:
                weights = np.bincount(inv[active], weights=gamma[active], minlength=F.shape[0])
            G = dual_norm_subgradient(V, unc.q)
            D = F * G if unc.diagonal else np.einsum("kij,kj->ki", F, G)
            return weights @ D

        return term, grad

    def _robust_subgradient(self, w: np.ndarray, ia: np.ndarray):
        """``sum_{i in ia} gamma_i d||A_{g(i)}^T w||_q / dw`` (None when there is no robust term)."""
        if self.unc is None or self.unc.radius == 0:
            return None
        gi = self.unc.group_index[ia]
        gamma = self._gamma[ia]
        ug, inv = np.unique(gi, return_inverse=True)
        G = self.unc.support_grad(w, ug)  # (len(ug), n)
        weights = np.bincount(inv, weights=gamma, minlength=ug.shape[0])
        return weights @ G


def _restrict(unc: ResolvedUncertainty | None, idx) -> ResolvedUncertainty | None:
    if unc is None:
        return None
    return ResolvedUncertainty(
        unc.factors, unc.diagonal, unc.group_index[idx], unc.p, unc.q, unc.radius, unc.scale[idx]
    )
