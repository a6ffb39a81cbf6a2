"""The robust term's part of a dual point: the rows ``u_g`` of the unit p-ball that maximise the dual value.

For a fixed ``alpha`` the dual value of the robust hinge (:mod:`.hinge`) is
``D(alpha, u) = sum_i alpha_i - 1/2 ||v0 - sum_g s_g A_g u_g||^2`` with ``v0 = sum_i alpha_i y_i x_i`` and
``s_g = sum_{i in g} alpha_i gamma_i``, so the best ``u`` is the least-squares point over a product of unit p-balls:
:func:`best_u` (exact trust-region blocks for p = 2 with few groups, else :func:`best_u_fista`).
"""

from __future__ import annotations

import numpy as np

from ..uncertainty.sets import ResolvedUncertainty
from .projections import project_pball

__all__ = ["apply_factors", "best_u", "best_u_fista", "best_u_trust_region", "trust_region"]


def apply_factors(unc: ResolvedUncertainty, U: np.ndarray) -> np.ndarray:
    """Rows ``A_g u_g`` (k, n).

    Parameters
    ----------
    unc : ResolvedUncertainty
        The factors ``A_g`` (diagonal or full).
    U : ndarray of shape (k, n)
        One row ``u_g`` per group.

    Returns
    -------
    ndarray of shape (k, n)
    """
    return unc.factors * U if unc.diagonal else np.einsum("kij,kj->ki", unc.factors, U)


def best_u(v0, s, unc: ResolvedUncertainty, U0) -> np.ndarray:
    """``argmin ||v0 - sum_g s_g A_g u_g||^2`` over rows ``u_g`` in the unit p-ball.

    p = 2 with few groups: exact trust-region blocks; otherwise accelerated projected gradient
    (:func:`best_u_fista`), O(k n^2) per iteration, independent of the number of samples.

    Parameters
    ----------
    v0 : ndarray of shape (n,)
        ``sum_i alpha_i y_i x_i``.
    s : ndarray of shape (k,)
        The groups' radii ``s_g = sum_{i in g} alpha_i gamma_i``.
    unc : ResolvedUncertainty
        The factors ``A_g`` and the norm ``p``.
    U0 : ndarray of shape (k, n)
        The starting rows.

    Returns
    -------
    ndarray of shape (k, n)
        The rows ``u_g``.
    """
    if unc.p == 2.0 and unc.n_groups <= 64:
        return best_u_trust_region(v0, s, unc, U0)
    F = unc.factors
    norms = np.max(np.abs(F), axis=1) if unc.diagonal else np.linalg.norm(F, 2, axis=(1, 2))
    return best_u_fista(
        v0,
        s,
        lambda U: apply_factors(unc, U),
        lambda r: F * r if unc.diagonal else np.einsum("kij,i->kj", F, r),
        norms,
        unc.p,
        U0,
    )


def best_u_fista(v0, s, apply_rows, adjoint, norms, p, U0, max_iter: int = 5000, rtol: float = 1e-14):
    """FISTA for ``min_U 1/2 ||v0 - sum_g s_g A_g u_g||^2`` over rows of ``U`` in the unit p-ball.

    ``apply_rows(U)`` returns the rows ``A_g u_g``, ``adjoint(r)`` the rows ``A_g' r``; ``norms``
    bound ``||A_g||_2``, so ``1 / sum_g (s_g norms_g)^2`` is a safe step.

    Parameters
    ----------
    v0 : ndarray of shape (n,)
        The target vector.
    s : ndarray of shape (k,)
        The groups' radii.
    apply_rows, adjoint : callable
        The products with the factors and their transposes.
    norms : ndarray of shape (k,)
        Upper bounds on ``||A_g||_2``.
    p : float
        The ball's norm (1, 2 or inf).
    U0 : ndarray of shape (k, n)
        The starting rows.
    max_iter : int, default 5000
        Iteration limit.
    rtol : float, default 1e-14
        Stop when 100 iterations lower the objective by less than this fraction.

    Returns
    -------
    ndarray of shape (k, n)
    """
    lip = float(np.sum((s * norms) ** 2))
    if lip == 0.0:
        return U0

    def resid(U):
        return v0 - s @ apply_rows(U)

    U, Z, t = U0.copy(), U0.copy(), 1.0
    r = resid(U)
    f_old = 0.5 * float(r @ r)
    for it in range(max_iter):
        U_new = project_pball(Z + (s[:, None] * adjoint(resid(Z))) / lip, 1.0, p)
        if np.sum((Z - U_new) * (U_new - U)) > 0.0:  # adaptive restart [OC15]:
            t, Z_next = 1.0, U_new  # momentum points uphill -> linear convergence kept
        else:
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            Z_next = U_new + ((t - 1.0) / t_new) * (U_new - U)
            t = t_new
        U, Z = U_new, Z_next
        if it % 100 == 99:
            r = resid(U)
            f = 0.5 * float(r @ r)
            if 0.0 <= f_old - f <= rtol * max(f, 1e-300) or f == 0.0:
                break
            f_old = min(f, f_old)
    return U


def trust_region(M, r, u0=None, eig=None):
    """``argmin ||r - M u||`` over ``||u||_2 <= 1`` exactly (eigen-decomposition + secular equation; ``eig``:
    ``eigh(M' M)`` if known).

    Parameters
    ----------
    M : ndarray of shape (m, d)
        The matrix.
    r : ndarray of shape (m,)
        The target.
    u0 : ndarray, optional
        Unused: the solve is exact and needs no start.
    eig : tuple, optional
        ``(eigenvalues, eigenvectors)`` of ``M' M``.

    Returns
    -------
    ndarray of shape (d,)
    """
    lam, V = np.linalg.eigh(M.T @ M) if eig is None else eig
    lam = np.maximum(lam, 0.0)
    g = V.T @ (M.T @ r)

    def norm_u(mu):
        return float(np.sqrt(np.sum((g / np.maximum(lam + mu, 1e-300)) ** 2)))

    if lam[0] > 1e-12 * max(lam[-1], 1e-300) and norm_u(0.0) <= 1.0:
        return V @ (g / lam)
    lo, hi = 0.0, max(float(np.linalg.norm(g)), 1e-300)  # ||u(hi)|| <= ||g|| / hi = 1
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if norm_u(mid) > 1.0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    u = V @ (g / (lam + hi))
    nrm = np.linalg.norm(u)
    return u / nrm if nrm > 1.0 else u


def best_u_trust_region(v0, s, unc: ResolvedUncertainty, U0, sweeps: int = 100) -> np.ndarray:
    """p = 2: block coordinate descent over groups, each block an exact trust-region solve.

    Parameters
    ----------
    v0 : ndarray of shape (n,)
        ``sum_i alpha_i y_i x_i``.
    s : ndarray of shape (k,)
        The groups' radii.
    unc : ResolvedUncertainty
        The factors ``A_g`` (p = 2).
    U0 : ndarray of shape (k, n)
        The starting rows.
    sweeps : int, default 100
        The most passes over the groups.

    Returns
    -------
    ndarray of shape (k, n)
    """
    k, n = U0.shape
    F = unc.factors
    mats = [np.diag(F[g]) if unc.diagonal else F[g] for g in range(k)]
    U = U0.copy()
    AU = apply_factors(unc, U) * s[:, None]
    eigs = [None if s[g] == 0.0 else np.linalg.eigh((s[g] * mats[g]).T @ (s[g] * mats[g])) for g in range(k)]
    for _ in range(sweeps if k > 1 else 1):
        change = 0.0
        for g in range(k):
            if s[g] == 0.0:
                continue
            r = v0 - AU.sum(axis=0) + AU[g]
            U[g] = trust_region(s[g] * mats[g], r, eig=eigs[g])
            new = s[g] * (mats[g] @ U[g])
            change = max(change, float(np.max(np.abs(new - AU[g]))))
            AU[g] = new
        if change <= 1e-15 * (1.0 + float(np.max(np.abs(v0)))):
            break
    return U
