"""Structure-aware robust hinge for formulation (10) on random Fourier features.

For RFF with interleaved cos/sin pairs the feature-space set of sample i is
``{dphi : ||R_i dphi||_pbar <= Gamma_i}`` with ``R_i = diag(P_ij')`` block-diagonal of 2x2
rotations (Prop. 4.1).  Its worst case is (dphi = R_i' v, R_i orthogonal)

    min_{dphi} y <zeta, dphi> = -Gamma_i max_{||v||_pbar <= 1} <R_i zeta, v> = -Gamma_i ||R_i zeta||_qbar,

so the robust loss is ``max{0, 1 - y_i(<zeta, phi_i> + b) + Gamma_i ||R_i zeta||_qbar}``.

This is the per-sample robust hinge of :class:`~.datafits.RobustHinge` with the factor ``A_i = R_i^T``
(``||A_i^T zeta||_q = ||R_i zeta||_q``), so the dual certificate of :mod:`rsvm_conic.certify.hinge` applies as
it stands: for ``alpha in [0, C]^L``, ``y'alpha = 0`` and ``||u_i||_pbar <= 1``,
``D = sum alpha_i - 1/2 ||sum_i alpha_i (y_i phi_i - Gamma_i R_i^T u_i)||^2 <= P*``
(:class:`RotationOps` applies ``R_i`` and ``R_i^T`` in O(D) per sample).  (Eq. (10)
of [CJ20] prints ``||R_i' zeta||``; in general the term is ``||R_i^{-T} zeta||``, which is
``R_i zeta`` for rotations and ``Lambda^{-1/2} zeta`` for the Nystroem ``R = Lambda^{1/2}``; the
two readings differ for qbar != 2 -- see tests/test_feature_robust.py.)

``R_i zeta`` costs O(D) per sample from the (cos, sin) of the angles, so the data fit never
forms the L x D x D factors.  Its parameters are the per-sample angles' (cos, sin), Gamma_i and qbar; like
:class:`~.datafits.RobustHinge` it holds no data and has the methods the stochastic solvers use
(``initialize``, ``value``, ``subgradient``, ``restrict(idx)``, ``dual_bound``), so ``eta0="auto"``
calibrates on this loss itself.
"""

from __future__ import annotations

import numpy as np

from .._validation import dual_norm
from ..uncertainty.sets import dual_norm_subgradient, dual_norm_values
from ..certify.dual_u import best_u_fista
from ..certify.hinge import FactorOps
from .datafits import RobustHinge


def rotate(C, S, zeta):
    """``R_i zeta`` for every row (C, S of shape (m, D/2)): shape (m, D).

    Parameters
    ----------
    C, S : ndarray of shape (m, D/2)
        The rotations' cosines and sines.
    zeta : ndarray of shape (D,)
        The vector to rotate.

    Returns
    -------
    ndarray of shape (m, D)
    """
    zc, zs = zeta[0::2], zeta[1::2]
    out = np.empty((C.shape[0], 2 * C.shape[1]))
    out[:, 0::2] = C * zc + S * zs
    out[:, 1::2] = -S * zc + C * zs
    return out


def rotate_transpose(C, S, G):
    """``R_i' g_i`` for every row of G (m, D): shape (m, D).

    Parameters
    ----------
    C, S : ndarray of shape (m, D/2)
        The rotations' cosines and sines.
    G : ndarray of shape (m, D)
        One vector per row.

    Returns
    -------
    ndarray of shape (m, D)
    """
    gc, gs = G[:, 0::2], G[:, 1::2]
    out = np.empty_like(G)
    out[:, 0::2] = C * gc - S * gs
    out[:, 1::2] = S * gc + C * gs
    return out


class RotatedRobustHinge(RobustHinge):
    """Robust hinge with per-sample rotation blocks: ``max{0, 1 - y(<z, phi> + b) + gamma_i ||R_i z||_q}``.

    Only the robust term differs from :class:`~rsvm_conic.solvers.datafits.RobustHinge` (``unc`` is
    None; the robust term is in ``cos``, ``sin``, ``gamma``, ``q``).

    Parameters
    ----------
    cos, sin : ndarray of shape (L, D/2)
        Cosines and sines of each sample's rotation angles.
    gamma : array_like of shape (L,)
        The samples' radii.
    q : float
        The norm of the robust term.
    """

    def __init__(self, cos, sin, gamma, q):
        super().__init__(None)
        self.cos, self.sin = cos, sin
        self.gamma = np.asarray(gamma, dtype=float)
        self.q = float(q)
        self._robust = bool(np.any(self.gamma))  # once: O(L) a check, too much for each minibatch

    def initialize(self, X, y) -> "RotatedRobustHinge":
        """Check that the rotations fit the data (one row per sample, D = X.shape[1] = 2 * angles)."""
        if self.cos.shape[0] != X.shape[0] or 2 * self.cos.shape[1] != X.shape[1]:
            raise ValueError(
                f"the rotations hold {self.cos.shape[0]} samples of {self.cos.shape[1]} angles; "
                f"the features have shape {X.shape} (D = 2 * angles)."
            )
        return self

    def restrict(self, idx) -> "RotatedRobustHinge":
        return RotatedRobustHinge(self.cos[idx], self.sin[idx], self.gamma[idx], self.q)

    def blocks(self, perm) -> "RotatedRobustHinge":
        """The loss on the samples ``perm`` in that order (:meth:`restrict`): a step on a slice reads views."""
        return self.restrict(perm)

    def factor_ops(self) -> "RotationOps | None":
        return RotationOps(self.cos, self.sin, self.gamma, self.q) if np.any(self.gamma) else None

    def dual_term(self, a, w, optimise_u: bool = False, v0=None, multipliers=None):
        """``sum_i a_i gamma_i R_i' u_i``, the robust part of the dual point, ``u_i`` the maximiser of ``u'R_i w``
        in the unit p-ball (p the dual exponent of ``q``).

        Parameters
        ----------
        a : ndarray of shape (L,)
            Multipliers in the dual set.
        w : ndarray of shape (D,)
            The primal weights.
        optimise_u : bool, default=False
            Improve the ``u_i`` by accelerated projected gradient (:func:`~rsvm_conic.certify.dual_u.best_u_fista`;
            ``R_i`` orthogonal, of norm 1).
        v0 : ndarray of shape (D,) or None, default=None
            ``Phi'(a y)`` (needed with ``optimise_u``).
        multipliers : None
            Not used (the conic model's per-sample cones return none).

        Returns
        -------
        ndarray of shape (D,)
        """
        cos, sin = self.cos, self.sin
        U = dual_norm_subgradient(rotate(cos, sin, w), self.q)
        if optimise_u:
            ones = np.ones(len(self.gamma))
            U = best_u_fista(v0, a * self.gamma, lambda V: rotate_transpose(cos, sin, V), lambda r: rotate(cos, sin, r),
                             ones, dual_norm(self.q), U)  # fmt: skip
        return (a * self.gamma) @ rotate_transpose(cos, sin, U)

    def _robust_batch(self, w, idx):
        """As :meth:`RobustHinge._robust_batch`: ``R_i w`` once per sample of the batch, for the loss and its
        subgradient."""
        if not self._robust:
            return 0.0, None
        C, S, g = self.cos[idx], self.sin[idx], self.gamma[idx]
        V = rotate(C, S, w)
        term = g * dual_norm_values(V, self.q)

        def grad(active):
            G = dual_norm_subgradient(V[active], self.q)
            return g[active] @ rotate_transpose(C[active], S[active], G)

        return term, grad

    def _robust_term(self, w, idx=None):
        if not self._robust:
            return 0.0
        C = self.cos if idx is None else self.cos[idx]
        S = self.sin if idx is None else self.sin[idx]
        g = self.gamma if idx is None else self.gamma[idx]
        return g * dual_norm_values(rotate(C, S, w), self.q)

    def _robust_subgradient(self, w, ia):
        """``sum_{i in ia} gamma_i R_i' dq(R_i w)``, ``dq`` a subgradient of ``||.||_q``."""
        if not self._robust:
            return None
        C, S = self.cos[ia], self.sin[ia]
        G = dual_norm_subgradient(rotate(C, S, w), self.q)
        return self.gamma[ia] @ rotate_transpose(C, S, G)


class RotationOps(FactorOps):
    """Per-sample factors ``A_i = R_i^T`` for :mod:`rsvm_conic.certify.hinge` (one group per sample).

    Parameters
    ----------
    cos, sin : ndarray of shape (L, D/2)
        Cosines and sines of each sample's rotation angles.
    gamma : array_like of shape (L,)
        The samples' radii.
    q : float
        The norm of the robust term.
    """

    def __init__(self, cos, sin, gamma, q):
        q = float(q)
        super().__init__(gamma, np.arange(cos.shape[0]), cos.shape[0], dual_norm(q), q)
        self.cos, self.sin = cos, sin

    @property
    def entries(self) -> int:
        return 4 * int(self.cos.size)

    def transpose_apply(self, w, groups):  # A_i^T w = R_i w
        if groups is None:
            return rotate(self.cos, self.sin, w)
        return rotate(self.cos[groups], self.sin[groups], w)

    def apply(self, Z, groups):  # A_i z_i = R_i^T z_i
        if groups is None:
            return rotate_transpose(self.cos, self.sin, Z)
        return rotate_transpose(self.cos[groups], self.sin[groups], Z)

    def columns(self, groups, j):  # A_i e_j = R_i^T e_j
        E = np.zeros((len(groups), 2 * self.cos.shape[1]))
        E[np.arange(len(groups)), j] = 1.0
        return rotate_transpose(self.cos[groups], self.sin[groups], E)

    def weighted_transpose(self, weights, groups):  # sum_i w_i R_i: 2x2 blocks [[c, s], [-s, c]] on the diagonal
        c, s = weights @ self.cos[groups], weights @ self.sin[groups]
        out = np.zeros((2 * c.size, 2 * c.size))
        j = 2 * np.arange(c.size)
        out[j, j], out[j, j + 1], out[j + 1, j], out[j + 1, j + 1] = c, s, -s, c
        return out
