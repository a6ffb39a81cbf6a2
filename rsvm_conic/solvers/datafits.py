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
from ..certify.hinge import DualCertificate, FactorOps, dual_bound
from ..certify.linear import robust_dual_term


class RobustHinge:
    """Robust hinge of a resolved uncertainty set (None: the nominal hinge); labels in {-1, +1}.

    Parameters
    ----------
    uncertainty : ResolvedUncertainty or None
        The uncertainty set (None: the nominal hinge).
    """

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
        """The robust term as a :class:`~rsvm_conic.certify.hinge.FactorOps` (None: nominal hinge)."""
        return FactorOps.from_uncertainty(self.unc)

    def dual_bound(self, X: np.ndarray, y: np.ndarray, w: np.ndarray, b: float, C: float, **options) -> DualCertificate:
        """P(w, b) = 1/2 ||w||^2 + C * value on (X, y) and a feasible dual point of the robust SVM built from
        (w, b), whose objective D <= min P (see :func:`~rsvm_conic.certify.hinge.dual_bound` for ``options``)."""
        return dual_bound(X, y, C, w, b, self.factor_ops(), **options)

    def dual_term(self, a, w, optimise_u: bool = False, v0=None, multipliers=None):
        """``sum_g s_g A_g u_g``, the robust part of the dual point at the multipliers ``a``
        (:func:`~rsvm_conic.certify.linear.robust_dual_term`).

        Parameters
        ----------
        a : ndarray of shape (L,)
            Multipliers in the dual set.
        w : ndarray of shape (n,)
            The primal weights.
        optimise_u : bool, default=False
            Improve ``u`` by accelerated projected gradient.
        v0 : ndarray of shape (n,) or None, default=None
            ``X'(a y)`` (needed with ``multipliers`` or ``optimise_u``).
        multipliers : ndarray of shape (k, n) or None, default=None
            A conic solver's cone multipliers ``z_g``.

        Returns
        -------
        ndarray of shape (n,) or None
            The term, None without a robust term.
        """
        return robust_dual_term(a, w, self.unc, optimise_u, v0, multipliers)

    def _robust_term(self, w, idx=None):
        """``gamma_i ||A_{g(i)}^T w||_q`` for the samples ``idx`` (0.0 without a robust term)."""
        if self.unc is None or self.unc.radius == 0:
            return 0.0
        if idx is None:
            return self.unc.robust_penalty(w)
        gamma, gi = self._gamma[idx], self.unc.group_index[idx]
        if self.unc.n_groups <= ALL_GROUPS:
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

    def subgradient(self, X: np.ndarray, y: np.ndarray, w: np.ndarray, Xw: np.ndarray, idx):
        """Mean subgradient w.r.t. (w, b) over the samples ``idx`` (rows ``X``, labels ``y``, scores ``Xw``): the
        nominal hinge part over the active samples plus :meth:`_robust_subgradient` (the gradient of the
        robust term).  Returns ``(gw, gb, active)``, ``active`` the mask of the samples whose loss is positive
        (the stochastic solvers average it into a dual estimate)."""
        return _hinge_step(X, y, w, Xw, *self._robust_batch(w, idx))

    def blocks(self, perm: np.ndarray) -> "HingeBlocks":
        """The minibatch steps of this loss on the samples ``perm``, in that order (:class:`HingeBlocks`): its
        per-sample parameters are gathered once, so that a step on the samples ``perm[s:e]`` reads views."""
        return HingeBlocks(self, perm)

    def _robust_batch(self, w: np.ndarray, idx):
        """The robust term of the samples ``idx`` and a function ``active -> sum_{active} gamma_i d||A_{g(i)}^T w||_q
        / dw`` (``(0.0, None)`` without a robust term): the factors meet ``w`` once per distinct group of the batch
        (every group when there are at most 64), for the loss and its subgradient alike."""
        unc = self.unc
        if unc is None or unc.radius == 0:
            return 0.0, None
        gamma, gi = self._gamma[idx], unc.group_index[idx]
        if unc.n_groups <= ALL_GROUPS:
            return _group_terms(unc.factors, unc.diagonal, unc.q, gamma, gi, w)
        if self._one_per_sample:  # a group per sample: the batch's groups are distinct, no sort needed
            return _sample_terms(unc.factors[gi], unc.diagonal, unc.q, gamma, w)
        ug, inv = np.unique(gi, return_inverse=True)
        return _group_terms(unc.factors[ug], unc.diagonal, unc.q, gamma, inv, w)

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


#: a batch's robust term applies every group's factor to w when there are at most this many groups (no sort)
ALL_GROUPS = 64


def _hinge_step(X, y, w, Xw, term, robust_grad):
    """``(gw, gb, active)`` of :meth:`RobustHinge.subgradient` from the batch's robust term and its gradient."""
    active = 1.0 - y * Xw + term > 0
    m = X.shape[0]
    if not active.any():  # (array methods: a step is O(B) work, where numpy's function wrappers would show)
        return np.zeros_like(w), 0.0, active
    ya = y * active  # y on the active samples, 0 elsewhere: one pass over X's rows, no copy of them
    gw = -(ya @ X)
    gb = -float(ya.sum())
    if robust_grad is not None:
        gw += robust_grad(active)
    gw /= m
    return gw, gb / m, active


def _group_terms(F, diagonal, q, gamma, inv, w):
    """Robust term ``gamma_i ||A_{inv(i)}^T w||_q`` of a batch whose samples use the factors ``F[inv]`` (k groups),
    and its gradient ``active -> sum_{active} gamma_i d||A_{inv(i)}^T w||_q / dw``: each factor meets w once."""
    V = F * w if diagonal else w @ F  # A_g^T w, (k, n)
    term = gamma * dual_norm_values(V, q)[inv]

    def grad(active):
        weights = np.bincount(inv, weights=gamma * active, minlength=F.shape[0])
        G = dual_norm_subgradient(V, q)
        D = F * G if diagonal else np.matmul(F, G[:, :, None])[:, :, 0]  # A_g u_g, (k, n)
        return weights @ D

    return term, grad


def _sample_terms(F, diagonal, q, gamma, w):
    """As :func:`_group_terms` for one factor per sample, ``F`` (m, n) or (m, n, n) the batch's factors."""
    V = F * w if diagonal else np.einsum("kij,i->kj", F, w)
    term = gamma * dual_norm_values(V, q)

    def grad(active):
        G = dual_norm_subgradient(V, q)
        D = F * G if diagonal else np.einsum("kij,kj->ki", F, G)
        return (gamma * active) @ D

    return term, grad


class HingeBlocks:
    """The minibatch steps of a :class:`RobustHinge` on its samples ``perm``, in that order: sample ``j`` here is
    sample ``perm[j]`` of the loss.  The per-sample parameters a step reads -- gamma_i, the group index, and
    per-sample diagonal factors -- are gathered once into that order, so that :meth:`subgradient` on the
    samples ``s:e`` (a ``slice``) reads views: no fancy-indexed copy per step.  Per-sample diagonal factors
    with q in {1, 2} are kept as ``a * a`` (q = 2) or ``|a|`` (q = 1): a step's robust term and its gradient
    are then one ``(B, n) x (n,)`` product each (:meth:`_power_step`).  Memory: O(L) numbers, plus one (L, n)
    copy of per-sample diagonal factors; per-sample full factors are not copied (no second (L, n, n) array: a
    step gathers its (B, n, n) factors, as :meth:`RobustHinge.subgradient` does).

    Parameters
    ----------
    fit : RobustHinge
        The loss.
    perm : ndarray of shape (L,)
        The samples' order.
    """

    def __init__(self, fit: RobustHinge, perm: np.ndarray):
        unc = fit.unc
        self.robust = unc is not None and unc.radius != 0
        self.gamma = self.gi = self.F = self.P = self.rows = None
        if not self.robust:
            return
        self.diagonal, self.q = unc.diagonal, unc.q
        self.gamma = fit._gamma[perm]
        self.all_groups = unc.n_groups <= ALL_GROUPS
        if fit._one_per_sample and not self.all_groups:
            if not unc.diagonal:  # full factors: their rows in this order, gathered per step
                self.rows, self.F = unc.group_index[perm], unc.factors
                return
            F = unc.factors[unc.group_index[perm]]
            if unc.q in (1.0, 2.0):
                self.P = np.multiply(F, F, out=F) if unc.q == 2.0 else np.abs(F, out=F)
            else:
                self.F = F
        else:
            self.gi, self.F = unc.group_index[perm], unc.factors

    def subgradient(self, X: np.ndarray, y: np.ndarray, w: np.ndarray, Xw: np.ndarray, idx: slice):
        """:meth:`RobustHinge.subgradient` of the samples ``idx`` (a slice of this order)."""
        if not self.robust:
            return _hinge_step(X, y, w, Xw, 0.0, None)
        gamma = self.gamma[idx]
        if self.P is not None:
            return self._power_step(X, y, w, Xw, self.P[idx], gamma)
        if self.rows is not None:
            return _hinge_step(X, y, w, Xw, *_sample_terms(self.F[self.rows[idx]], False, self.q, gamma, w))
        if self.gi is None:
            return _hinge_step(X, y, w, Xw, *_sample_terms(self.F[idx], self.diagonal, self.q, gamma, w))
        gi = self.gi[idx]
        if self.all_groups:
            return _hinge_step(X, y, w, Xw, *_group_terms(self.F, self.diagonal, self.q, gamma, gi, w))
        ug, inv = np.unique(gi, return_inverse=True)
        return _hinge_step(X, y, w, Xw, *_group_terms(self.F[ug], self.diagonal, self.q, gamma, inv, w))

    def _power_step(self, X, y, w, Xw, P, gamma):
        """:func:`_hinge_step` for per-sample diagonal factors ``a_i`` and q in {1, 2}, from ``P = a * a`` (q = 2) or
        ``P = |a|`` (q = 1): ``||a_i * w||_2 = sqrt(P_i . w^2)``, gradient ``P_i * w / ||a_i * w||_2``;
        ``||a_i * w||_1 = P_i . |w|``, gradient ``P_i * sign(w)`` (``a_i * sign(a_i * w)`` of
        :func:`_sample_terms`).  Two ``(B, n) x (n,)`` products, no (B, n) temporary, few numpy calls (the
        per-sample hot path)."""
        if self.q == 2.0:
            nrm = P @ (w * w)
            np.sqrt(nrm, out=nrm)
        else:
            nrm = P @ np.abs(w)
        active = 1.0 - y * Xw + gamma * nrm > 0
        m = X.shape[0]
        if not active.any():
            return np.zeros_like(w), 0.0, active
        ya = y * active
        c = gamma * active
        if self.q == 2.0:
            if nrm.all():
                c /= nrm
            else:  # a zero norm leaves gamma_i there: its row contributes exactly 0 all the same (P_ij w_j^2 = 0
                # for every j: P_ij = 0, or the column's sum is multiplied by w_j = 0)
                np.divide(c, nrm, out=c, where=nrm > 0)
            gw = (c @ P) * w
        else:
            gw = (c @ P) * np.sign(w)
        gw -= ya @ X
        gw /= m
        return gw, -float(ya.sum()) / m, active


def _restrict(unc: ResolvedUncertainty | None, idx) -> ResolvedUncertainty | None:
    if unc is None:
        return None
    return ResolvedUncertainty(
        unc.factors, unc.diagonal, unc.group_index[idx], unc.p, unc.q, unc.radius, unc.scale[idx]
    )
