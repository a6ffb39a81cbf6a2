"""Worst-case robust linear SVM [CJ20, eq. 3-4], an SOCP.

Each sample may move anywhere in ``U_i = {A_g u : ||u||_p <= gamma_i}``
(:class:`~rsvm_conic.uncertainty.UncertaintySet`).  The worst case of the margin
constraint is ``y_i (<w, x_i> + b) - gamma_i ||A_g^T w||_q``, so::

    minimise    1/2 ||w||^2 + C sum_i xi_i
    subject to  y_i (<w, x_i> + b) + xi_i - radius * s_i * t_{g(i)} >= 1,   xi >= 0,
                t_g >= ||A_g^T w||_q                for each group g

with gamma_i = radius * s_i.  Samples that share an uncertainty matrix share one
cone: k groups give k cones, however many samples there are (one vectorised
model; per-sample matrices give L cones, still built with one
vectorised constraint).  ``radius`` and ``C`` are ``cp.Parameter`` s: a grid over
them re-uses the compiled problem.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ..certify.linear import cone_multipliers
from ..uncertainty.sets import UncertaintySet
from ._linear import LinearProblem

if TYPE_CHECKING:
    import cvxpy as cp


def group_support_expr(w: cp.Variable, factors: np.ndarray, diagonal: bool):
    """The CVXPY expression whose column g is ``A_g^T w``, built with one matrix product.

    Parameters
    ----------
    w : cvxpy.Variable of shape (n,)
        The weights.
    factors : ndarray of shape (k, n, n) or (k, n)
        The factors ``A_g`` (``diagonal``: their diagonals).
    diagonal : bool
        Whether the factors are diagonal.

    Returns
    -------
    cvxpy.Expression of shape (n, k)
    """
    import cvxpy as cp

    k, n = factors.shape[0], factors.shape[-1]
    if diagonal:
        # row g n + j holds A_g[j] in column j; built directly in O(k n) (stacking k identity blocks is far slower)
        stacked = sp.csr_matrix((factors.ravel(), (np.arange(k * n), np.tile(np.arange(n), k))), shape=(k * n, n))
    else:
        stacked = np.swapaxes(factors, 1, 2).reshape(k * n, n)  # rows: A_g^T
    return cp.reshape(stacked @ w, (n, k), order="F")


def robust_cone_constraints(w, t, factors, diagonal, q):
    """``t_g >= ||A_g^T w||_q`` for every group, as vectorised constraints.

    Their dual values give the cone multipliers ``z_g`` of the certificate
    (:func:`~rsvm_conic.certify.linear.cone_multipliers`): one SOC for
    q = 2; for q = inf ``+-A_g^T w <= t_g``; for q = 1 ``+-A_g^T w <= v_g``, ``sum_j v_gj <= t_g``.

    Parameters
    ----------
    w : cvxpy.Variable of shape (n,)
        The weights.
    t : cvxpy.Variable of shape (k,)
        The epigraph variables.
    factors : ndarray of shape (k, n, n) or (k, n)
        The factors ``A_g``.
    diagonal : bool
        Whether the factors are diagonal.
    q : {1, 2, inf}
        The dual norm.

    Returns
    -------
    list of cvxpy.Constraint
    """
    import cvxpy as cp

    Z = group_support_expr(w, factors, diagonal)
    if q == 2.0:
        return [cp.SOC(t, Z, axis=0)]
    T = cp.reshape(t, (1, factors.shape[0]), order="F")
    if q == np.inf:
        return [Z <= T, -Z <= T]
    V = cp.Variable(Z.shape, name="support_abs")
    return [Z <= V, -Z <= V, cp.sum(V, axis=0) <= t]


class RobustProblem(LinearProblem):
    """Worst-case robust linear SVM (eq. 4), an SOCP with one cone per uncertainty group; see the module docstring.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        Nominal inputs.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    uncertainty : UncertaintySet or None, default=None
        The sets ``U_i`` (shape matrices, groups, p, per-sample scales); None: unit 2-norm balls.
    C : float, default=1.0
        Weight of the robust hinge loss against ``1/2 ||w||^2``.
    radius : float or None, default=None
        Global multiplier gamma of the sets (a DPP parameter); None: the uncertainty set's own radius.
    check_input : bool, default=True
        Validate ``X`` and ``y`` (False: internal callers passing trusted float arrays).
    sample_weight : ndarray of shape (L,) or None, default=None
        Positive weights ``s_i`` of the hinge terms (``C_i = C s_i``); None: all 1.  Trusted (the estimators
        validate them and drop the samples of weight 0).
    """

    name = "robust"
    gamma_param = "radius"

    def __init__(
        self,
        X,
        y,
        uncertainty: UncertaintySet | None = None,
        C=1.0,
        radius=None,
        *,
        check_input: bool = True,
        sample_weight=None,
    ):
        super().__init__(X, y, C, check_input=check_input, sample_weight=sample_weight)
        uncertainty = uncertainty if uncertainty is not None else UncertaintySet()
        self.uncertainty = unc = self.resolve(uncertainty)
        self.set_params(**{self.gamma_param: float(unc.radius if radius is None else radius)})

    def _build_model(self):
        """The SOCP of the module docstring (built on first use: only conic routes need it)."""
        import cvxpy as cp

        unc = self.uncertainty
        L, n = self.X.shape
        w, b = cp.Variable(n, name="w"), cp.Variable(name="b")
        t = cp.Variable(unc.n_groups, name="t", nonneg=True)
        C_par = cp.Parameter(nonneg=True, name="C")
        r_par = cp.Parameter(nonneg=True, name=self.gamma_param)
        penalty = t[unc.group_index] if np.all(unc.scale == 1) else cp.multiply(unc.scale, t[unc.group_index])
        xi = cp.Variable(L, name="xi", nonneg=True)
        # DPP: each parameter multiplies a parameter-free expression, so re-solves skip compilation.
        margin = cp.multiply(self.y, self.X @ w + b) + xi - r_par * penalty >= 1
        self._cones = robust_cone_constraints(w, t, unc.factors, unc.diagonal, unc.q)
        problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + self.hinge_total(C_par, xi)), [margin, *self._cones])
        return problem, {"C": C_par, self.gamma_param: r_par}, {"w": w, "b": b, "t": t, "xi": xi}, margin

    def _cone_multipliers(self):
        """The conic solver's cone multipliers ``z_g`` (rows; :func:`~rsvm_conic.certify.linear.cone_multipliers` of
        the dual values of :func:`robust_cone_constraints`)."""
        return cone_multipliers([cone.dual_value for cone in self._cones[:2]], self.uncertainty.q)


def robust_svm(X, y, uncertainty: UncertaintySet | None = None, C=1.0, radius=None) -> RobustProblem:
    """Build the worst-case robust SVM (eq. 4); the parameters are those of :class:`RobustProblem`.

    Parameters
    ----------
    X, y, uncertainty, C, radius
        See :class:`RobustProblem`.

    Returns
    -------
    RobustProblem
    """
    return RobustProblem(X, y, uncertainty, C, radius)
