"""Robust SVM in an explicit feature space [CJ20, formulation 10].

Given features ``phi_i = phi(x_i)`` (RFF or Nystroem) and feature-space sets
``{dphi : ||R_i dphi||_pbar <= Gamma_i}`` (:mod:`rsvm_conic.uncertainty.feature_bounds`),

    minimise_{zeta, b}  1/2 ||zeta||^2 + C sum_i max{0, 1 - y_i(<zeta, phi_i> + b) + r Gamma_i ||R_i^{-T} zeta||_qbar}

(eq. 10 with lam = 1/C, objective scaled by C; ``r`` = the ``radius`` parameter, 1 by default,
a multiplier of Gamma).  Derivation of the robust term: ``dphi = R_i^{-1} v`` with
``||v||_pbar <= Gamma_i``, so ``min y <zeta, dphi> = -Gamma_i ||R_i^{-T} zeta||_qbar``.  Eq. (10)
prints ``||R_i' zeta||``, which is wrong unless ``R_i^{-T} = R_i'`` up to a qbar-isometry
(true for qbar = 2 and orthogonal R_i only); for the RFF rotations the correct term is
``||R_i zeta||_qbar`` and for the Nystroem ``R = Lambda^{1/2}`` it is ``||Lambda^{-1/2} zeta||_2``.

Two structures:

* ``rotations=(cos, sin)`` -- per-sample block rotations of Prop. 4.1 (shape (L, D/2) each).
  Conic backend: one vectorised constraint with a sparse operator of 2 nonzeros per row
  (O(L D) model size, L cones); stochastic backends: :class:`RotatedRobustHinge` (O(D) per sample).
  For qbar = 2 the rotations drop out (``||R_i zeta||_2 = ||zeta||_2``): one cone, plain hinge data fit.
* ``R=`` a shared matrix ((D,) diagonal or (D, D)), e.g. ``Lambda^{1/2}`` for Nystroem, or None
  (identity).  One cone for all samples (the grouped model of :mod:`.robust`); stochastic
  backends use the package's :class:`RobustHinge`.

Backends: ``ipm`` (the structured interior point of :mod:`rsvm_conic.solvers.ipm.robust_svm`, for the shared
2-norm cone: qbar = 2, RFF or Nystroem), ``clarabel``, ``scs`` (CVXPY, the model built on first use; ``C`` and
``radius`` are DPP parameters), ``sgd``, ``prox``.
"""

from __future__ import annotations


import numpy as np
import scipy.sparse as sp

from .._validation import check_feature_metric, check_norm, check_per_sample, check_rotations, dual_norm
from ..solvers.datafits import RobustHinge
from ..solvers.feature_datafits import RotatedRobustHinge
from ..uncertainty.sets import ResolvedUncertainty
from ._linear import LinearProblem
from .base import Solution
from .robust import robust_cone_constraints


#: ``solve("auto")``'s attempts: label -> (route, solver options)
_AUTO_CHAIN = {
    "ipm": ("ipm", {}),
    "clarabel": ("clarabel", {}),
    "clarabel at 1e-7": ("clarabel", dict(tol_gap_abs=1e-7, tol_gap_rel=1e-7, tol_feas=1e-7)),
    "scs at 1e-6": ("scs", dict(eps_abs=1e-6, eps_rel=1e-6)),
}


def rotation_operator(cos, sin) -> sp.csr_matrix:
    """The per-sample rotations of Prop. 4.1 stacked as one sparse operator for the CVXPY model.

    Parameters
    ----------
    cos, sin : ndarray of shape (L, D/2)
        The rotations' cosines and sines.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (L*D, D)
        Rows ``i*D..(i+1)*D-1`` are ``R_i`` (block ``j``: ``[[c, s], [-s, c]]``).
    """
    L, F = cos.shape
    D = 2 * F
    i = np.repeat(np.arange(L), F)
    j = np.tile(np.arange(F), L)
    c, s = cos.ravel(), sin.ravel()
    r0 = i * D + 2 * j  # row of the cos output of block j
    rows = np.concatenate([r0, r0, r0 + 1, r0 + 1])
    cols = np.concatenate([2 * j, 2 * j + 1, 2 * j, 2 * j + 1])
    vals = np.concatenate([c, s, -s, c])
    return sp.csr_matrix((vals, (rows, cols)), shape=(L * D, D))


class FeatureRobustProblem(LinearProblem):
    """Formulation (10): the robust SVM on explicit features; see the module docstring.

    Parameters
    ----------
    Phi : ndarray of shape (L, D)
        Feature matrix (stored as ``X``, as in the linear formulations).
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    Gamma : float or ndarray of shape (L,)
        Feature-space bounds ``||R_i dphi||_pbar <= Gamma_i``.
    pbar : {1, 2, inf}, default=2
        Norm of the feature-space sets; the robust term uses its dual norm qbar.
    C : float, default=1.0
        Weight of the robust hinge loss against ``1/2 ||zeta||^2``.
    radius : float, default=1.0
        Multiplier r of Gamma (a DPP parameter).
    rotations : tuple of two ndarrays of shape (L, D/2) or None, default=None
        ``(cos, sin)`` of the per-sample block rotations of Prop. 4.1 (RFF).
    R : ndarray of shape (D,) or (D, D), or None, default=None
        A shared matrix (e.g. ``Lambda^{1/2}`` for Nystroem); None: identity.
    sample_weight : ndarray of shape (L,) or None, default=None
        Positive weights ``s_i`` of the hinge terms (``C_i = C s_i``); None: all 1.  Trusted (the estimators
        validate them and drop the samples of weight 0).
    """

    name = "feature-robust"
    gamma_param = "radius"

    def __init__(self, Phi, y, Gamma, pbar=2, C=1.0, radius=1.0, rotations=None, R=None, *, sample_weight=None):
        super().__init__(Phi, y, C, sample_weight=sample_weight)
        L, D = self.X.shape
        self.pbar = check_norm(pbar)
        self.qbar = dual_norm(self.pbar)
        self.Gamma = G = check_per_sample(Gamma, L, "Gamma")
        if rotations is not None and R is not None:
            raise ValueError("give either rotations (RFF) or R (a shared matrix), not both.")
        self.rotations = None
        if rotations is not None and self.qbar == 2.0:
            rotations = None  # ||R_i zeta||_2 = ||zeta||_2 for rotations: one shared cone suffices
            if R is None:
                R = np.ones(D)
        if rotations is not None:
            self.rotations = check_rotations(rotations, L, D)
            factors, diagonal = None, False
        elif R is None:
            factors, diagonal = np.ones((1, D)), True
        else:
            Rm = check_feature_metric(R, D)
            if Rm.ndim == 1:
                factors, diagonal = (1.0 / Rm)[None], True  # A = R^{-1}: A' zeta = R^{-T} zeta
            else:
                factors, diagonal = np.linalg.inv(Rm)[None], False
        self.uncertainty = (
            None
            if factors is None
            else ResolvedUncertainty(
                factors, diagonal, np.zeros(L, dtype=np.intp), self.pbar, self.qbar, float(radius), G
            )
        )
        self.set_params(radius=float(radius))

    def _build_model(self):
        """The CVXPY model of formulation (10) (built on first use: only the conic routes need it)."""
        import cvxpy as cp

        L, D = self.X.shape
        zeta, b = cp.Variable(D, name="w"), cp.Variable(name="b")
        t = cp.Variable(L if self.rotations is not None else 1, name="t", nonneg=True)
        xi = cp.Variable(L, name="xi", nonneg=True)
        C_par = cp.Parameter(nonneg=True, name="C")
        r_par = cp.Parameter(nonneg=True, name="radius")
        if self.rotations is not None:
            Z = cp.reshape(rotation_operator(*self.rotations) @ zeta, (D, L), order="F")
            cones = (
                [cp.SOC(t, Z, axis=0)]
                if self.qbar == 2.0
                else [cp.norm(Z, 1 if self.qbar == 1.0 else "inf", axis=0) <= t]
            )
            penalty = cp.multiply(self.Gamma, t)
        else:
            unc = self.uncertainty
            cones = robust_cone_constraints(zeta, t, unc.factors, unc.diagonal, self.qbar)
            penalty = self.Gamma * t[0]
        margin = cp.multiply(self.y, self.X @ zeta + b) + xi - r_par * penalty >= 1  # its multipliers: alpha
        problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(zeta) + self.hinge_total(C_par, xi)), [margin] + cones)
        return problem, {"C": C_par, "radius": r_par}, {"w": zeta, "b": b, "t": t, "xi": xi}, margin

    def _available(self, backend: str) -> bool:
        if backend == "ipm":  # the structured interior point: one shared 2-norm cone (no per-sample rotations)
            return self.rotations is None and self.qbar == 2.0
        return super()._available(backend)

    def auto_routes(self) -> tuple[str, ...]:
        """The structured interior point where it applies (:meth:`_available`), then the labels of
        :data:`_AUTO_CHAIN`: Clarabel at the package tolerances (1e-9), Clarabel at 1e-7 and SCS at 1e-6 (RFF
        features of size sqrt(2/D) and a large C make ||zeta|| large, and the 1e-9 gap is then sometimes out of
        reach for Clarabel).  Every attempt is certified to the same relative gap (1e-6)."""
        return (("ipm",) if self._available("ipm") else ()) + tuple(_AUTO_CHAIN)[1:]

    def _attempt(self, label: str, options: dict) -> Solution:
        backend, opts = _AUTO_CHAIN[label]
        return self.solve(backend, **{**opts, **options})

    def datafit(self):
        r = float(self._values["radius"])
        if self.rotations is not None:
            return RotatedRobustHinge(*self.rotations, r * self.Gamma, self.qbar)
        return RobustHinge(self.current_uncertainty())


def feature_robust_svm(Phi, y, Gamma, pbar=2, C=1.0, radius=1.0, rotations=None, R=None) -> FeatureRobustProblem:
    """Build formulation (10); the parameters are those of :class:`FeatureRobustProblem`.

    Parameters
    ----------
    Phi, y, Gamma, pbar, C, radius, rotations, R
        See :class:`FeatureRobustProblem`.

    Returns
    -------
    FeatureRobustProblem
    """
    return FeatureRobustProblem(Phi, y, Gamma, pbar, C, radius, rotations, R)
