"""Feature-space uncertainty bounds ``||R_i dphi_i||_pbar <= Gamma_i`` [CJ20, Sec. 4-5].

Input uncertainty [CJ20, Sec. 3]: ``dx_i = A_i u``, ``||u||_p <= gamma_i``
(:class:`~rsvm_conic.uncertainty.sets.UncertaintySet`); ``dphi_i = phi(x_i + dx_i) - phi(x_i)``.

* :func:`rff_feature_bound` -- random Fourier features (Prop. 4.1), from the angle bounds
  ``t_ij = gamma_i ||A_i' w_j||_q`` (:func:`frequency_supports`, eq. 12);
* :func:`nystroem_feature_bound` -- Nystroem features (Prop. 4.2);
* :func:`prop51_sigma`, :func:`min_sigma_for_angle` -- the bandwidth of Prop. 5.1, and the smallest one that
  keeps every angle below ``theta_max`` with a given probability (Monte Carlo).

``variant="printed"`` gives the paper's formulas (its pbar = 2 case of Prop. 4.1 is not a bound);
``variant="corrected"`` (default) gives valid bounds, no looser than the printed ones, with joint bounds over all
frequencies for pbar = 1 and 2.  Each case, its derivation and its tightness against adversarial search are in the
user guide's feature-map page, section "The feature-space bounds" (checked in ``tests/test_feature_bounds.py``).
"""

from __future__ import annotations

import numpy as np
from .._validation import check_finite_array, check_norm, check_positive, dual_norm
from .sets import ResolvedUncertainty, UncertaintySet, dual_norm_values

VARIANTS = ("corrected", "printed")


def _check_variant(variant):
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}; got {variant!r}.")
    return variant


def _resolve(unc, L, n) -> ResolvedUncertainty:
    if isinstance(unc, ResolvedUncertainty):
        if unc.group_index.shape[0] != L or unc.factors.shape[-1] != n:
            raise ValueError("the resolved uncertainty does not match the data shape.")
        return unc
    if isinstance(unc, UncertaintySet):
        return unc.resolve(L, n)
    raise ValueError("uncertainty must be an UncertaintySet (or a ResolvedUncertainty).")


def dense_factors(unc: ResolvedUncertainty) -> np.ndarray:
    """The group factors as full (k, n, n) matrices.

    Parameters
    ----------
    unc : ResolvedUncertainty
        The resolved input set.

    Returns
    -------
    ndarray of shape (k, n, n)
        ``A_g`` of every group (diagonal factors expanded).
    """
    F = unc.factors
    return np.stack([np.diag(f) for f in F]) if unc.diagonal else F


def frequency_supports(unc: ResolvedUncertainty, omega: np.ndarray) -> np.ndarray:
    """``t_ij = gamma_i ||A_{g(i)}' w_j||_q``: the largest ``|w_j'dx_i|`` over U_i ([CJ20], eq. 12).

    Parameters
    ----------
    unc : ResolvedUncertainty
        The resolved input set.
    omega : ndarray of shape (n, F)
        The frequencies ``w_j``.

    Returns
    -------
    ndarray of shape (L, F)
        The angle bounds.
    """
    omega = np.asarray(omega, dtype=float)
    if unc.diagonal:
        M = unc.factors[:, :, None] * omega[None]  # (k, n, F): A' w for diagonal A
    else:
        M = np.einsum("kij,im->kjm", unc.factors, omega)
    S = dual_norm_values(M, unc.q, axis=1)  # (k, F)
    return unc.gamma[:, None] * S[unc.group_index]


# --------------------------------------------------------------------------- Prop. 4.1
def rff_gamma_from_angles(t: np.ndarray, pbar, variant: str = "corrected") -> np.ndarray:
    """Gamma_i of [CJ20], Prop. 4.1 from the angle bounds ``t``.

    Parameters
    ----------
    t : ndarray of shape (L, D/2)
        Angle bounds (:func:`frequency_supports`).
    pbar : {1, 2, inf}
        Norm of the feature-space perturbation.
    variant : {"corrected", "printed"}, default "corrected"
        The exact per-block maximum, or the paper's formula (invalid for pbar = 2).

    Returns
    -------
    ndarray of shape (L,)
        The per-block bound Gamma_i.
    """
    pbar = check_norm(pbar)
    _check_variant(variant)
    t = np.atleast_2d(np.asarray(t, dtype=float))
    if np.any(t < 0) or not np.all(np.isfinite(t)):
        raise ValueError("angle bounds t must be finite and nonnegative.")
    D = 2 * t.shape[1]
    c = np.sqrt(2.0 / D)
    if variant == "printed":
        alpha = np.minimum(2.0, t**2 / 2.0)
        beta = np.minimum(1.0, t)
        if pbar == 1.0:
            return c * np.sum(alpha + beta, axis=1)
        if pbar == 2.0:
            return np.sqrt(4.0 / D) * np.sum(alpha, axis=1)
        return c * np.maximum(alpha.max(axis=1), beta.max(axis=1))
    if pbar == 1.0:
        s = np.minimum(t, 0.75 * np.pi)
        return c * np.sum(1.0 - np.cos(s) + np.sin(s), axis=1)
    if pbar == 2.0:
        h = 2.0 * np.sin(np.minimum(t, np.pi) / 2.0)
        return c * np.sqrt(np.sum(h * h, axis=1))
    h = np.maximum(1.0 - np.cos(np.minimum(t, np.pi)), np.sin(np.minimum(t, np.pi / 2)))
    return c * h.max(axis=1)


def rff_feature_bound(rff, X, uncertainty, pbar=2, variant: str = "corrected") -> np.ndarray:
    """Gamma_i with ``||R_i dphi_i||_pbar <= Gamma_i`` for a fitted :class:`RandomFourierFeatures`.

    For pbar = 2 the corrected variant also uses the joint bound
    ``||R dphi||_2^2 = (2/D) sum_j (2 sin(th_j/2))^2 <= (2/D) ||Omega' dx||_2^2
    <= (2/D) gamma_i^2 ||Omega' A_i||_{p->2}^2`` and keeps the smaller of the two; it is
    nearly tight in high input dimension, where the per-frequency maximisation is loose by
    about sqrt(n) (each frequency gets its own worst dx).  For pbar = 1 it likewise keeps the smaller of the
    per-block bound and a joint one (module docstring).

    Parameters
    ----------
    rff : RandomFourierFeatures
        A fitted feature map.
    X : array-like of shape (L, n)
        The points.
    uncertainty : UncertaintySet or ResolvedUncertainty
        The input set of every sample.
    pbar : {1, 2, inf}, default 2
        Norm of the feature-space perturbation.
    variant : {"corrected", "printed"}, default "corrected"
        Valid bounds, or the paper's formulas.

    Returns
    -------
    ndarray of shape (L,)
        The bounds Gamma_i.
    """
    X = check_finite_array(X, "X", ndim=2)
    unc = _resolve(uncertainty, *X.shape)
    G = rff_gamma_from_angles(frequency_supports(unc, rff.omega_), pbar, variant)
    pbar = check_norm(pbar)
    if variant == "corrected" and pbar in (1.0, 2.0):
        A = dense_factors(unc)  # (k, n, n)
        OA = np.einsum("im,kij->kmj", rff.omega_, A)  # Omega' A_g  (k, F, n)
        n2 = np.array([_p_to_2_norm(M, unc.p) for M in OA])[unc.group_index] * unc.gamma  # sup ||Omega' dx||_2
        if pbar == 2.0:
            joint = n2
        else:  # sum_j |th_j| + th_j^2 / 2 <= sup ||Omega' dx||_1 + sup ||Omega' dx||_2^2 / 2
            n1 = np.array([_p_to_1_norm(M, unc.p) for M in OA])[unc.group_index] * unc.gamma
            joint = n1 + 0.5 * n2**2
        G = np.minimum(G, np.sqrt(2.0 / (2 * rff.omega_.shape[1])) * joint)
    return G


def rff_rotated_perturbation(rff, x, dX) -> np.ndarray:
    """``R dphi`` computed from the map itself for one point x and a batch of perturbations.

    ``R = diag(P_j')`` with P_j the rotation of angle ``w_j'x`` ([CJ20], Prop. 4.1).

    Parameters
    ----------
    rff : RandomFourierFeatures
        A fitted feature map.
    x : array-like of shape (n,)
        The point.
    dX : array-like of shape (m, n)
        The perturbations.

    Returns
    -------
    ndarray of shape (m, D)
        ``R (phi(x + dx) - phi(x))`` per perturbation.
    """
    x = np.asarray(x, dtype=float).reshape(1, -1)
    dphi = rff.transform(x + np.asarray(dX, dtype=float)) - rff.transform(x)
    c, s = rff.rotations(x)
    out = np.empty_like(dphi)
    out[:, 0::2] = c * dphi[:, 0::2] + s * dphi[:, 1::2]
    out[:, 1::2] = -s * dphi[:, 0::2] + c * dphi[:, 1::2]
    return out


# --------------------------------------------------------------------------- Prop. 4.2
def _p_to_2_norm(A: np.ndarray, p: float) -> float:
    """An upper bound on max ||A u||_2 over ||u||_p <= 1 (exact for p = 1, 2)."""
    if p == 2.0:
        return float(np.linalg.norm(A, 2))
    cols = np.linalg.norm(A, axis=0)
    if p == 1.0:
        return float(cols.max())
    return float(min(np.sqrt(A.shape[1]) * np.linalg.norm(A, 2), cols.sum()))


def _p_to_1_norm(M: np.ndarray, p: float) -> float:
    """An upper bound on max ||M u||_1 over ||u||_p <= 1 (exact for p = 1).

    p = 1: the largest column 1-norm.  Otherwise the smaller of the row-wise Hoelder bound
    ``sum_j ||M_j||_q`` (one worst u per row: what the per-frequency bound uses to first order) and
    ``sqrt(F) max ||M u||_2`` (Cauchy-Schwarz over the F rows, one u shared by all rows); the exact
    value is NP-hard for p = 2 and inf.
    """
    if p == 1.0:
        return float(np.abs(M).sum(axis=0).max())
    rows = float(np.sum(dual_norm_values(M, dual_norm(p), axis=1)))
    return min(rows, float(np.sqrt(M.shape[0]) * _p_to_2_norm(M, p)))


def nystroem_feature_bound(nys, X, uncertainty, variant: str = "corrected") -> np.ndarray:
    """Gamma_i with ``||Lambda^{1/2} dphi_i||_2 <= Gamma_i`` for a fitted :class:`NystroemMap` ([CJ20], Prop. 4.2).

    Parameters
    ----------
    nys : NystroemMap
        A fitted feature map.
    X : array-like of shape (L, n)
        The points.
    uncertainty : UncertaintySet or ResolvedUncertainty
        The input set of every sample.
    variant : {"corrected", "printed"}, default "corrected"
        The tighter per-landmark bound without the factor r, or the paper's formula.

    Returns
    -------
    ndarray of shape (L,)
        The bounds Gamma_i.
    """
    _check_variant(variant)
    X = check_finite_array(X, "X", ndim=2)
    unc = _resolve(uncertainty, *X.shape)
    sigma2 = float(nys.sigma) ** 2
    A = dense_factors(unc)  # (k, n, n)
    Kr = nys.kernel_rows(X)  # k_ij (L, m)
    s = np.empty_like(Kr)  # sup over U_i of |dx'(x_i - xhat_j)|   (L, m), in chunks of samples
    step = max(1, 2_000_000 // max(1, Kr.shape[1] * X.shape[1]))
    for a in range(0, X.shape[0], step):
        V = X[a : a + step, None, :] - nys.landmarks_[None]  # x_i - xhat_j
        proj = np.einsum("lji,lmj->lmi", A[unc.group_index[a : a + step]], V)  # A' (x_i - xhat_j)
        s[a : a + step] = unc.gamma[a : a + step, None] * dual_norm_values(proj, unc.q, axis=2)
    norm2 = np.array([_p_to_2_norm(a, unc.p) for a in A])[unc.group_index] * unc.gamma  # sup ||dx||_2
    tau = np.exp(-s / sigma2)  # exp(-2 gamma ||.|| / (2 sigma^2))
    rho = np.exp(-(norm2**2) / (2.0 * sigma2))
    if variant == "printed":
        r = nys.rank_
        val = np.sum(Kr**2 * (1.0 / tau**2 + 1.0), axis=1) - 2.0 * rho * np.sum(Kr**2 * tau, axis=1)
        return np.sqrt(r * np.maximum(val, 0.0))
    per = Kr * np.maximum(1.0 - tau * rho[:, None], 1.0 / tau - 1.0)
    per = np.minimum(per, np.maximum(Kr, 1.0 - Kr))
    return np.sqrt(np.sum(per**2, axis=1))


def nystroem_rotated_perturbation(nys, x, dX) -> np.ndarray:
    """``Lambda^{1/2} dphi = U' (khat(x + dx) - khat(x))`` for one point and a batch of perturbations.

    Parameters
    ----------
    nys : NystroemMap
        A fitted feature map.
    x : array-like of shape (n,)
        The point.
    dX : array-like of shape (m, n)
        The perturbations.

    Returns
    -------
    ndarray of shape (m, r)
        The rotated feature perturbations.
    """
    x = np.asarray(x, dtype=float).reshape(1, -1)
    dk = nys.kernel_rows(x + np.asarray(dX, dtype=float)) - nys.kernel_rows(x)
    return dk @ nys.eigenvectors_


# --------------------------------------------------------------------------- Prop. 5.1
def prop51_sigma(theta_max, gamma, factor) -> float:
    """The paper's sufficient bandwidth ``3 gamma ||Sigma^{1/2}||_F / theta_max`` ([CJ20], Prop. 5.1).

    Parameters
    ----------
    theta_max : float
        The largest angle allowed.
    gamma : float
        Radius of the input set.
    factor : array-like of shape (n, n) or (n,)
        ``Sigma^{1/2}`` (a diagonal as a vector).

    Returns
    -------
    float
    """
    theta_max = check_positive(theta_max, "theta_max")
    gamma = check_positive(gamma, "gamma", strict=False)
    A = check_finite_array(factor, "factor", ndim=(1, 2))
    return 3.0 * gamma * float(np.linalg.norm(A)) / theta_max


def _worst_angle_scale(factor, norm, n_mc, n_frequencies, rng):
    """Samples of ``max_{j <= F} ||A' z_j||_q`` with z_j ~ N(0, I) (the worst angle at sigma = gamma = 1)."""
    A = check_finite_array(factor, "factor", ndim=(1, 2))
    A = np.diag(A) if A.ndim == 1 else A
    q = dual_norm(check_norm(norm))
    Z = rng.standard_normal((n_mc * n_frequencies, A.shape[0]))
    vals = dual_norm_values(Z @ A, q)  # rows: (A' z)'
    return vals.reshape(n_mc, n_frequencies).max(axis=1)


def angle_probability(sigma, theta_max, gamma, factor, norm=2, n_frequencies=1, n_mc=200_000, random_state=0) -> float:
    """Monte Carlo ``P(max_j sup_{dx in U} |w_j'dx| <= theta_max)`` for w_j ~ N(0, I/sigma^2).

    Parameters
    ----------
    sigma : float
        Kernel length scale.
    theta_max : float
        The largest angle allowed.
    gamma : float
        Radius of the input set.
    factor : array-like of shape (n, n) or (n,)
        Shape factor ``A`` of the input set (a diagonal as a vector).
    norm : {1, 2, inf}, default 2
        The input set's norm p (the angle bound uses its dual q).
    n_frequencies : int, default 1
        Frequencies that must all satisfy the bound.
    n_mc : int, default 200000
        Draws.
    random_state : int, default 0
        Seed.

    Returns
    -------
    float
        The estimated probability.
    """
    sigma = check_positive(sigma, "sigma")
    theta_max = check_positive(theta_max, "theta_max")
    gamma = check_positive(gamma, "gamma", strict=False)
    rng = np.random.default_rng(random_state)
    s = _worst_angle_scale(factor, norm, int(n_mc), int(n_frequencies), rng)
    return float(np.mean(gamma * s / sigma <= theta_max))


def min_sigma_for_angle(
    theta_max, gamma, factor, prob=0.997, norm=2, n_frequencies=1, n_mc=200_000, random_state=0
) -> float:
    """Smallest sigma with ``P(max_j sup_{dx in U} |w_j'dx| <= theta_max) >= prob`` (Monte Carlo quantile).

    Use it to set the lower end of a sigma grid.

    Parameters
    ----------
    theta_max : float
        The largest angle allowed.
    gamma : float
        Radius of the input set.
    factor : array-like of shape (n, n) or (n,)
        Shape factor ``A`` of the input set (a diagonal as a vector).
    prob : float, default 0.997
        Required probability.
    norm : {1, 2, inf}, default 2
        The input set's norm p (the angle bound uses its dual q).
    n_frequencies : int, default 1
        Frequencies that must all satisfy the bound (all D/2 at once).
    n_mc : int, default 200000
        Draws.
    random_state : int, default 0
        Seed.

    Returns
    -------
    float
        The bandwidth.
    """
    theta_max = check_positive(theta_max, "theta_max")
    gamma = check_positive(gamma, "gamma", strict=False)
    if not 0 < prob < 1:
        raise ValueError(f"prob must lie in (0, 1); got {prob}.")
    if int(n_frequencies) < 1 or int(n_mc) < 100:
        raise ValueError("n_frequencies must be >= 1 and n_mc >= 100.")
    rng = np.random.default_rng(random_state)
    s = _worst_angle_scale(factor, norm, int(n_mc), int(n_frequencies), rng)
    return float(gamma * np.quantile(s, prob, method="higher") / theta_max)
