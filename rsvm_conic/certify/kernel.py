"""Certified bounds of the kernel SVM dual over ``S = {0 <= alpha <= C, y'alpha = 0}``.

For ``min_{alpha in S} q(alpha)``, ``q(alpha) = 1/2 alpha' Y K Y alpha - e'alpha`` (K PSD; ``C`` one bound or one per
sample):

* :func:`min_linear_box_hyperplane` (``min_{s in S} g's``, exact) and :func:`frank_wolfe_gap`
  (``g'alpha - min_{s in S} g's``: for a convex function with gradient ``g`` at ``alpha``, an upper
  bound on its value at ``alpha`` minus its minimum over ``S``);
* :func:`scaled_svm_primal`: the SVM primal at the model ``w = sum_i alpha_i y_i phi_i`` with the best bias, or its
  hard-margin rescaling;
* :func:`lagrangian_lower_bound`: a certified lower bound on ``min_S q`` from any feasible ``alpha``;
* :func:`margin_rounding`: the rounding of margins computed as sums of products.
"""

from __future__ import annotations

import numpy as np

from .hinge import hinge_min

__all__ = [
    "frank_wolfe_gap",
    "lagrangian_lower_bound",
    "margin_rounding",
    "min_linear_box_hyperplane",
    "scaled_svm_primal",
]


def min_linear_box_hyperplane(g: np.ndarray, y: np.ndarray, C: float) -> float:
    """``min_{s in S} g's`` over ``S = {0 <= s <= C, y's = 0}``: pair the smallest ``g`` of each class
    greedily (a pair ``s_i = s_j = C``, ``y_i = -y_j``, pays ``C (g_i + g_j)``; only negative sums help).
    ``C`` may hold one bound per coordinate (the weighted box): then mass is paired in the same order, the cost
    being ``min(0, g_i + g_j)`` per unit of mass moved (``O(n log n)``).

    Parameters
    ----------
    g : ndarray of shape (n,)
        The linear objective.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    C : float or ndarray of shape (n,)
        The box's upper bound (shared or per coordinate).

    Returns
    -------
    float
    """
    if np.ndim(C):
        return _min_linear_weighted_box(np.asarray(g, dtype=float), y, np.asarray(C, dtype=float))
    gp = np.sort(g[y > 0])
    gn = np.sort(g[y < 0])
    m = min(gp.size, gn.size)
    return C * float(np.sum(np.minimum(gp[:m] + gn[:m], 0.0)))


def _min_linear_weighted_box(g, y, C) -> float:
    """:func:`min_linear_box_hyperplane` over ``{0 <= s_i <= C_i, y's = 0}``: each class's coordinates sorted by
    ``g`` hold their capacity ``C_i`` on consecutive intervals of a mass axis; the minimum is the integral over
    that axis of ``min(0, g_+(t) + g_-(t))`` (an exchange argument: the cheapest unit of each class first)."""
    pos = y > 0
    op, on = np.argsort(g[pos], kind="stable"), np.argsort(g[~pos], kind="stable")
    gp, gn = g[pos][op], g[~pos][on]
    ep, en = np.cumsum(C[pos][op]), np.cumsum(C[~pos][on])  # interval ends on the mass axis
    total = min(float(ep[-1]) if ep.size else 0.0, float(en[-1]) if en.size else 0.0)
    if total <= 0.0:
        return 0.0
    cuts = np.unique(np.concatenate([ep[ep < total], en[en < total], [total]]))
    lengths = np.diff(np.concatenate([[0.0], cuts]))
    mids = cuts - 0.5 * lengths  # inside each piece: which coordinate of each class holds it
    ip = np.minimum(np.searchsorted(ep, mids, side="right"), gp.size - 1)
    i_n = np.minimum(np.searchsorted(en, mids, side="right"), gn.size - 1)
    return float(np.sum(lengths * np.minimum(gp[ip] + gn[i_n], 0.0)))


def frank_wolfe_gap(g: np.ndarray, alpha: np.ndarray, y: np.ndarray, C: float) -> float:
    """``g'alpha - min_{s in S} g's`` (:func:`min_linear_box_hyperplane`): for a convex ``F`` with
    gradient ``g`` at the feasible ``alpha``, ``F(alpha) - min_S F <= frank_wolfe_gap``.

    Parameters
    ----------
    g : ndarray of shape (n,)
        The gradient at ``alpha``.
    alpha : ndarray of shape (n,)
        A feasible point of ``S``.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    C : float or ndarray of shape (n,)
        The box's upper bound.

    Returns
    -------
    float
    """
    return float(g @ alpha) - min_linear_box_hyperplane(g, y, C)


def scaled_svm_primal(m, y, C: float, quad: float, margin_err: float = 0.0):
    """The SVM primal ``1/2 ||w||^2 + C sum_i max(0, 1 - y_i f(x_i))`` at the best of two models built on
    ``w = sum_i alpha_i y_i phi_i`` (margins without bias ``m_i = y_i <w, phi_i>``, ``quad = ||w||^2``):
    ``f = <w, .> + b`` with the best bias (:func:`~rsvm_conic.certify.hinge.hinge_min`), and, when a bias
    separates the classes (``rho = max_b min_i (m_i + y_i b) > 0``), the hard-margin model
    ``f = t (<w, .> + beta)`` with the smallest ``t`` whose margins are ``>= 1`` even when each ``m_i`` is off by
    ``margin_err`` (its rounding), by a relative 1e-12 more.  Returns ``(P, t, b)``, the model being
    ``t <w, .> + b``.

    At a large C the first model pays C times the rounding of the margins of the support vectors (margins 1 up to
    ~1e-15): at C = 1e10 a relative 1e-5 of the objective, above a 1e-6 certificate.  When the optimum separates
    the data (multipliers below C) the scaled model has no hinge loss at all and costs ``t^2 - 1 ~ 1e-12``
    relative.

    Parameters
    ----------
    m : ndarray of shape (L,)
        Margins without bias ``y_i <w, phi_i>``.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    C : float
        The hinge's weight.
    quad : float
        ``||w||^2``.
    margin_err : float, default 0.0
        A bound on the rounding of each margin.

    Returns
    -------
    P : float
        The primal objective of the better model.
    t : float
        Its scale (1 for the best-bias model).
    b : float
        Its bias.
    """
    if np.ndim(C):  # one weight C_i per sample: sum_i C_i max(0, 1 - y_i f(x_i))
        hinge, b = hinge_min(1.0 - m, y, C)
        best = (0.5 * quad + hinge, 1.0, b)
    else:
        hinge, b = hinge_min(1.0 - m, y)
        best = (0.5 * quad + C * hinge, 1.0, b)
    pos = y > 0
    if pos.any() and (~pos).any():
        mp, mn = float(np.min(m[pos])), float(np.min(m[~pos]))
        rho = 0.5 * (mp + mn) - 2.0 * margin_err
        if rho > 0.0:
            t = (1.0 + 1e-12) / rho
            beta = 0.5 * (mn - mp)
            slack = np.maximum(1.0 - t * (m + y * beta), 0.0)  # zero by construction; summed, not assumed
            P = 0.5 * t * t * quad + (float(C @ slack) if np.ndim(C) else C * float(slack.sum()))
            if P < best[0]:
                best = (P, t, t * beta)
    return best


def margin_rounding(abs_products: np.ndarray, n_terms: int) -> float:
    """A bound on the rounding of margins computed as sums of ``n_terms`` products whose absolute values sum to
    ``abs_products`` (per sample): ``n_terms * eps * max(abs_products)`` (the classical worst-case bound).

    Parameters
    ----------
    abs_products : ndarray of shape (L,)
        Per sample, the sum of the products' absolute values.
    n_terms : int
        Products per margin.

    Returns
    -------
    float
    """
    if abs_products.size == 0:
        return 0.0
    return float(max(n_terms, 1) * np.finfo(float).eps * np.max(abs_products))


def lagrangian_lower_bound(F, g, alpha, y, C, margin_err: float = 0.0):
    """A lower bound on ``min_{a in S} q(a)`` for a convex QP ``q(a) = 1/2 a'(Q + 2 diag(lam))a - e'a``
    (``Q = Y K Y`` PSD, ``lam >= 0``) from a feasible ``alpha`` with ``q(alpha) = F``, ``grad q(alpha) = g``.

    The larger of two weak-duality bounds, both exact at the optimum:

    * Frank-Wolfe: ``q(alpha) - (g'alpha - min_{s in S} g's)`` (convexity of ``q``);
    * SVM duality: ``q`` is the dual of the SVM with kernel ``K + 2 diag(lam)``; its primal at any model,
      here the better of ``w = sum_i alpha_i y_i phi_i`` with the best bias and its hard-margin rescaling
      (:func:`scaled_svm_primal`; margins ``y_i f_i = g_i + 1``, off by at most ``margin_err``), is ``P`` and
      ``min q >= -P``.  The rescaling keeps the bound tight at large C where the optimum separates the data.

    Parameters
    ----------
    F : float
        ``q(alpha)``.
    g : ndarray of shape (L,)
        ``grad q(alpha)``.
    alpha : ndarray of shape (L,)
        A feasible point of ``S = {0 <= a <= C, y'a = 0}``.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    C : float or ndarray of shape (L,)
        The box's upper bound.
    margin_err : float, default 0.0
        A bound on the rounding of the margins ``g_i + 1``.

    Returns
    -------
    float
    """
    a = alpha
    fw = F - frank_wolfe_gap(g, a, y, C)
    P, _, _ = scaled_svm_primal(g + 1.0, y, C, float(a @ g) + float(a.sum()), margin_err)
    return max(fw, -P)
