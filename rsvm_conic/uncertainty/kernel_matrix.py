"""Uncertainty model of a kernel matrix [BBBB10, Sec. 2 and 5.1].

A noisy kernel is ``K = K_bar + Z`` with independent, centred entries ``Z_ij``.  The robust
formulation (15) only needs the mean ``K_bar``, a nonnegative weight matrix ``beta`` and a
factor ``kappa(epsilon)`` (:func:`rsvm_conic.uncertainty.chance.kappa`, models ``"gaussian"`` and
``"finite"``):

* Gaussian noise, ``Z_ij ~ N(0, sigma_ij^2)`` (Theorem 1): ``beta = sigma**2`` and
  ``kappa = -Phi^{-1}(epsilon)``.
* Finite support, ``a_ij <= Z_ij <= b_ij`` (Theorems 2-3): with ``l = (b - a)/2``,
  ``c = (b + a)/2`` and ``mu_hat = -c / l``, ``beta = l**2 * gamma**2`` where ``gamma`` is the
  smallest ``sigma >= 0`` with ``sigma^2 z^2 / 2 + mu_hat z - log(cosh z + mu_hat sinh z) >= 0``
  for all real ``z`` (eq. 9), and ``kappa = sqrt(2 log(1/epsilon))``.

``gamma`` is computed numerically (:func:`gamma_finite_support`: coarse grid bracket, then a
vectorised golden-section search of ``sup_z 2 (log(cosh z + mu sinh z) - mu z) / z^2``).  We
also checked it against a closed form that the paper does not give: the supremum is
``mu / artanh(mu)`` (``1`` at ``mu = 0``), attained at ``z* = -2 artanh(mu)`` -- the optimal
sub-Gaussian variance proxy of a two-point law [KS98].  Tests verify eq. 9 on a
dense z-grid and that any smaller gamma violates it.

Conventions and corrections
---------------------------
* When estimating from samples ``K^s`` (shape ``(S, n, n)``) the mean is the sample mean and
  the support of ``Z_ij`` is ``[min_s K^s_ij - K_bar_ij, max_s K^s_ij - K_bar_ij]`` (Sec. 5.1
  writes the support of ``K``; the theorems need the support of the centred ``Z``).
* ``beta`` only enters through the quadratic form ``nu' beta nu`` with ``nu = alpha**2``, so it
  is symmetrised, ``(beta + beta') / 2``, without changing the model.
* Independence of *all* ``n^2`` entries is an assumption of Lemma 1 / Theorem 2.  If the noise
  is symmetric (``Z_ij = Z_ji``) the off-diagonal variances count twice:
  ``Var Tr(Z V) = sum_i s_ii V_ii^2 + 4 sum_{i<j} s_ij V_ij^2``; use
  :func:`symmetric_noise_beta` to get a ``beta`` for which the theorems hold in that case.
* The proof of Theorem 2 prints ``E(e^{s V Z}) <= s^2 V^2 gamma^2 l^2 / 2``; the right side
  must be exponentiated.  It also calls (14) a "necessary" condition; it is sufficient.
"""

from __future__ import annotations

import numpy as np

from .._threads import blas_threads_for
from .._validation import (
    check_finite_array,
    check_psd,
    check_positive,
    check_symmetric,
    check_two_classes,
    psd_eigh,
    psd_factor,
    shifted_cholesky_ok,
    symmetric_part,
)

__all__ = [
    "KernelUncertainty",
    "gamma_finite_support",
    "gamma_closed_form",
    "eq9_residual",
    "finite_support_beta",
    "psd_part",
    "rank_one_approx",
    "symmetric_noise_beta",
    "check_mean_kernel",
    "validate_kernel_problem",
    "samples_symmetric",
]


# ----------------------------------------------------------------------------------------
# gamma of eq. 9
# ----------------------------------------------------------------------------------------
def _log_cosh_plus_mu_sinh(z, mu):
    """Stable ``log(cosh z + mu sinh z)`` for ``|mu| < 1`` (broadcasts)."""
    z = np.asarray(z, dtype=float)
    s = np.where(z >= 0, 1.0, -1.0)
    az = np.abs(z)
    return az + np.log(0.5 * (1.0 + s * mu) + 0.5 * (1.0 - s * mu) * np.exp(-2.0 * az))


def _ratio(z, mu):
    """``2 (f(z) - mu z) / z^2``: eq. 9 holds for sigma iff sigma^2 >= this for all z.

    Evaluated without cancellation: for ``|z| < 1``, ``cosh z + mu sinh z = 1 + u`` with
    ``u = 2 sinh^2(z/2) + mu sinh z`` and ``f = log1p(u)``; for ``|z| < 1e-4`` the Taylor series
    ``(1 - mu^2) (1 - 2 mu z / 3 - (1 - 3 mu^2) z^2 / 6) + O(z^3)``.  (The direct formula loses
    ~1e-4 relative near ``|z| = 1e-6``, which made the numerical gamma exceed the exact one.)
    """
    z = np.asarray(z, dtype=float)
    mu = np.asarray(mu, dtype=float)
    az = np.abs(z)
    tiny = az < 1e-4
    mid = (az < 1.0) & ~tiny
    zz = np.where(tiny, 1.0, z)
    big_f = _log_cosh_plus_mu_sinh(zz, mu)
    zm = np.where(mid, z, 0.5)
    mid_f = np.log1p(2.0 * np.sinh(0.5 * zm) ** 2 + mu * np.sinh(zm))
    f = np.where(mid, mid_f, big_f)
    val = 2.0 * (f - mu * zz) / zz**2
    # Taylor: f(z) - mu z = (1 - mu^2) z^2 / 2 - mu (1 - mu^2) z^3 / 3 - (1 - mu^2)(1 - 3 mu^2) z^4 / 12 + O(z^5)
    taylor = (1.0 - mu**2) * (1.0 - 2.0 * mu * z / 3.0 - (1.0 - 3.0 * mu**2) * z**2 / 6.0)
    return np.where(tiny, taylor, val)


def eq9_residual(z, mu, sigma):
    """Left side of [BBBB10], eq. 9: ``sigma^2 z^2 / 2 + mu z - log(cosh z + mu sinh z)`` (must be >= 0).

    Parameters
    ----------
    z : array-like
        Points.
    mu, sigma : float or array-like
        The normalised mean and the candidate ``gamma`` (broadcast with ``z``).

    Returns
    -------
    ndarray
        The residual.
    """
    return 0.5 * sigma**2 * np.asarray(z) ** 2 + mu * np.asarray(z) - _log_cosh_plus_mu_sinh(z, mu)


def gamma_finite_support(
    mu_hat, *, z_max: float = 40.0, n_grid: int = 401, n_golden: int = 45, return_argmax: bool = False
):
    """``gamma`` of [BBBB10], eq. 9, computed numerically for every entry of ``mu_hat``.

    ``gamma^2 = sup_z 2 (log(cosh z + mu sinh z) - mu z) / z^2``.  A coarse grid on
    ``[-z_max, z_max]`` brackets the maximiser, a golden-section search refines it
    (vectorised over entries).  ``|mu| = 1`` (a degenerate, constant noise) gives 0.

    Parameters
    ----------
    mu_hat : array-like
        Normalised means, ``|mu_hat| <= 1``.
    z_max : float, default 40.0
        Half-width of the grid.
    n_grid : int, default 401
        Grid points.
    n_golden : int, default 45
        Golden-section steps.
    return_argmax : bool, default False
        Also return the maximising ``z``.

    Returns
    -------
    gamma : ndarray
        With the shape of ``mu_hat``.
    z : ndarray
        The maximisers (only with ``return_argmax``).
    """
    mu = np.asarray(mu_hat, dtype=float)
    if np.any(~np.isfinite(mu)) or np.any(np.abs(mu) > 1.0 + 1e-12):
        raise ValueError("mu_hat must be finite with |mu_hat| <= 1 (the noise mean lies inside its support).")
    shape = mu.shape
    flat = np.clip(mu.ravel(), -1.0, 1.0)
    gam2 = np.zeros_like(flat)
    zarg = np.zeros_like(flat)
    inner = np.abs(flat) < 1.0 - 1e-12
    m_all = flat[inner]
    out2 = np.empty_like(m_all)
    outz = np.empty_like(m_all)
    grid = np.linspace(-z_max, z_max, n_grid)
    step = grid[1] - grid[0]
    chunk = max(1, 4_000_000 // n_grid)
    invphi = (np.sqrt(5.0) - 1.0) / 2.0
    for start in range(0, m_all.size, chunk):
        m = m_all[start : start + chunk][:, None]
        vals = _ratio(grid[None, :], m)
        k = np.argmax(vals, axis=1)
        lo = grid[k] - step
        hi = grid[k] + step
        m1 = m[:, 0]
        for _ in range(n_golden):
            x1 = hi - invphi * (hi - lo)
            x2 = lo + invphi * (hi - lo)
            left = _ratio(x1, m1) > _ratio(x2, m1)  # maximiser in [lo, x2]
            hi = np.where(left, x2, hi)
            lo = np.where(left, lo, x1)
        zs = 0.5 * (lo + hi)
        cand = np.stack([_ratio(zs, m1), vals.max(axis=1)])
        best = np.argmax(cand, axis=0)
        out2[start : start + chunk] = cand.max(axis=0)
        outz[start : start + chunk] = np.where(best == 0, zs, grid[k])
    gam2[inner] = out2
    zarg[inner] = outz
    gamma = np.sqrt(np.maximum(gam2, 0.0)).reshape(shape)
    if return_argmax:
        return gamma, zarg.reshape(shape)
    return gamma


def gamma_closed_form(mu_hat):
    """Closed form ``gamma^2 = mu / artanh(mu)`` of [BBBB10], eq. 9 (1 at 0, 0 at ``|mu| = 1``).

    Parameters
    ----------
    mu_hat : array-like
        Normalised means, ``|mu_hat| <= 1``.

    Returns
    -------
    ndarray
        ``gamma``, with the shape of ``mu_hat``.
    """
    mu = np.clip(np.asarray(mu_hat, dtype=float), -1.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        g2 = np.where(np.abs(mu) < 1e-8, 1.0 - mu**2 / 3.0, mu / np.arctanh(mu))
    g2 = np.where(np.abs(mu) >= 1.0, 0.0, g2)
    return np.sqrt(g2)


def finite_support_beta(a, b, *, gamma_method: str = "closed"):
    """The parameters of [BBBB10], Theorem 2 for noise supports ``[a, b]`` (a <= 0 <= b).

    Entries with ``l = 0`` (no noise) get ``mu_hat = 0`` and ``beta = 0``.

    Parameters
    ----------
    a, b : array-like of shape (n, n)
        Lower and upper ends of each entry's noise support.
    gamma_method : {"closed", "numeric"}, default "closed"
        ``"closed"``: :func:`gamma_closed_form`, equal to the numerical supremum to 4e-16 on 4000 values of
        ``mu_hat`` in (-1, 1) and satisfying eq. 9 to round-off (``tests/test_kernel_uncertainty.py``), without
        a search per entry; ``"numeric"``: :func:`gamma_finite_support`.

    Returns
    -------
    beta, l, c, mu_hat, gamma : ndarray of shape (n, n)
        ``beta = l^2 gamma^2`` and eq. 9's half-width, centre, normalised mean and ``gamma``.
    """
    if gamma_method not in ("closed", "numeric"):
        raise ValueError(f"gamma_method must be 'closed' or 'numeric'; got {gamma_method!r}.")
    a = check_finite_array(a, "a")
    b = check_finite_array(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape; got {a.shape} and {b.shape}.")
    if np.any(a > b):
        raise ValueError("every support interval needs a <= b.")
    tol = 1e-12 * max(1.0, float(np.max(np.abs(b - a))))
    if np.any(a > tol) or np.any(b < -tol):
        raise ValueError("a zero-mean noise needs a <= 0 <= b for every entry (the support must contain 0).")
    l = 0.5 * (b - a)
    c = 0.5 * (b + a)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = np.where(l > 0, -c / np.where(l > 0, l, 1.0), 0.0)
    mu = np.clip(mu, -1.0, 1.0)
    gamma = gamma_closed_form(mu) if gamma_method == "closed" else gamma_finite_support(mu)
    beta = l**2 * gamma**2
    return beta, l, c, mu, gamma


def symmetric_noise_beta(beta):
    """``beta`` to use when the noise is symmetric (``Z_ij = Z_ji``, one draw per pair).

    Lemma 1 and Theorem 2 of [BBBB10] assume all ``n^2`` entries independent.  With a symmetric ``Z`` and
    a symmetric ``V`` the pair ``(i, j), (j, i)`` contributes ``2 Z_ij V_ij``, so the variance
    (resp. the sub-Gaussian proxy) of ``Tr(Z V)`` is ``sum_ij beta'_ij V_ij^2`` with
    ``beta'_ij = 2 beta_ij`` off the diagonal and ``beta'_ii = beta_ii``.

    Parameters
    ----------
    beta : array-like of shape (n, n)
        The paper's ``beta`` (independent entries).

    Returns
    -------
    ndarray of shape (n, n)
        ``beta'``.
    """
    beta = np.asarray(beta, dtype=float)
    out = 2.0 * beta
    np.fill_diagonal(out, np.diag(beta))
    return out


# ----------------------------------------------------------------------------------------
# approximations of beta used in Sec. 5.1
# ----------------------------------------------------------------------------------------
def psd_part(beta, *, rel_tol: float = 1e-12):
    """The PSD part of ``beta`` and a factor of it.

    ``beta_hat = sum_{v_r > 0} v_r e_r e_r'``.  Since ``beta_hat - beta`` is PSD, ``nu' beta_hat nu >= nu' beta nu``:
    the PSD part is a conservative replacement (the chance-constraint guarantee still holds).

    Parameters
    ----------
    beta : array-like of shape (n, n)
        A symmetric matrix.
    rel_tol : float, default 1e-12
        Eigenvalues up to ``rel_tol`` times the largest magnitude are dropped.

    Returns
    -------
    beta_hat : ndarray of shape (n, n)
        The PSD part.
    B : ndarray of shape (r, n)
        A factor, ``B'B = beta_hat``.
    """
    beta = 0.5 * (np.asarray(beta, dtype=float) + np.asarray(beta, dtype=float).T)
    if not np.any(beta):  # noise-free: skip the eigendecomposition
        return np.zeros_like(beta), np.zeros((1, beta.shape[0]))
    B = psd_factor(beta, "beta", on_negative="clip", drop_tol=rel_tol).T  # eigenvalues > rel_tol * max |v| kept
    beta_hat = B.T @ B
    if B.shape[0] == 0:
        B = np.zeros((1, beta.shape[0]))
    return beta_hat, B


def rank_one_approx(beta, *, symmetric: bool = False):
    """``rho`` with ``beta_hat = rho rho'`` as in [BBBB10], Sec. 5.1: ``beta_hat = sqrt(v_max) e e'``.

    ``v_max``, ``e`` are the principal eigenpair of ``beta beta'`` (so ``sqrt(v_max)`` is the
    spectral radius of the symmetric ``beta``).  For elementwise nonnegative ``beta`` the
    Perron vector is nonnegative; its sign is fixed so and round-off negatives are set to 0.
    ``beta = 0`` (a noise-free kernel) gives ``rho = 0``.

    Parameters
    ----------
    beta : array-like of shape (n, n)
        The noise parameter.
    symmetric : bool, default False
        ``beta`` is already exactly symmetric (e.g. validated and symmetrised by the caller), so
        ``(beta + beta')/2`` -- the same matrix -- is not formed again.

    Returns
    -------
    ndarray of shape (n,)
        ``rho``.
    """
    beta = np.asarray(beta, dtype=float)
    if not symmetric:
        beta = 0.5 * (beta + beta.T)
    if not np.any(beta):
        return np.zeros(beta.shape[0])
    if beta.shape[0] > 300:  # only the principal pair is needed: Lanczos instead of a full eigh
        from scipy.linalg.blas import dsymv
        from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

        # the products by BLAS dsymv, which reads one triangle of the symmetric beta (faster than a general
        # product), the matrix-vector products being all of Lanczos' cost here
        Bt = np.ascontiguousarray(beta).T  # Fortran order: the lower triangle of beta' is beta's upper one
        n = beta.shape[0]
        op = LinearOperator((n, n), matvec=lambda x: dsymv(1.0, Bt, np.ravel(x), lower=1), dtype=np.float64)
        try:  # 8 Lanczos vectors: 9 products where ARPACK's default of 20 takes 21 (a nonnegative beta's Perron root
            # is well separated; the same pair to 1e-15 on Sec. 5.1's data); a small gap is left to the default
            # after 10 restarts (~50 products)
            v, E = eigsh(op, k=1, which="LM", tol=1e-12, v0=np.ones(n), ncv=8, maxiter=10)
        except ArpackNoConvergence:
            v, E = eigsh(op, k=1, which="LM", tol=1e-12, v0=np.ones(n))
        k = 0
    else:
        with blas_threads_for(float(beta.shape[0]) ** 3):  # n <= 300: one BLAS thread
            v, E = np.linalg.eigh(beta)
        k = int(np.argmax(np.abs(v)))
    e = E[:, k]
    if e.sum() < 0:
        e = -e
    e = np.maximum(e, 0.0)
    return np.sqrt(abs(v[k])) * e


# ----------------------------------------------------------------------------------------
# the model
# ----------------------------------------------------------------------------------------
def check_mean_kernel(K, name: str = "K_bar", *, tol: float = 1e-8) -> np.ndarray:
    """A symmetric PSD square matrix (the paper assumes ``K_bar`` is a kernel matrix).

    PSD means ``lambda_min >= -tol * max(1, max|K|) * n``.  Tested by a Cholesky factorisation of
    ``K + (threshold / 2) I`` (success proves ``lambda_min > -threshold``; cheaper than ``eigvalsh``); only when it
    fails is the smallest eigenvalue computed, which decides (:func:`rsvm_conic._validation.check_psd`).

    Parameters
    ----------
    K : array-like of shape (n, n)
        The mean kernel.
    name : str, default "K_bar"
        The argument's name, for messages.
    tol : float, default 1e-8
        Relative tolerance on negative eigenvalues.

    Returns
    -------
    ndarray of shape (n, n)
        ``K`` as a symmetric float array.

    Raises
    ------
    ValueError
        If ``K`` is not square, not finite, not symmetric or not PSD within the tolerance.
    """
    K = check_finite_array(K, name, ndim=2)
    K, scale = check_symmetric(K, name, rtol=1e-8, return_scale=True)
    check_psd(K, name, neg_tol=tol * K.shape[0], scale=scale, hint="the mean kernel must be a kernel matrix")
    return K


def validate_kernel_problem(K_bar, y, beta, C, kappa):
    """The data of problem (15) of [BBBB10], checked once at the public boundary.

    Parameters
    ----------
    K_bar : array-like of shape (n, n)
        The mean kernel (:func:`check_mean_kernel`).
    y : array-like of shape (n,)
        Labels in {-1, +1}, both present.
    beta : array-like of shape (n, n)
        The kernel noise's second moments, elementwise >= 0 (symmetrised here).
    C : float
        Box bound, > 0.
    kappa : float
        Chance-constraint factor, >= 0.

    Returns
    -------
    tuple
        ``(K_bar, y, beta, C, kappa)`` as float arrays and floats.

    Raises
    ------
    ValueError
        Naming the argument to fix.
    """
    K_bar = check_mean_kernel(K_bar)
    n = K_bar.shape[0]
    y = check_finite_array(y, "y", ndim=1)
    if y.shape[0] != n:
        raise ValueError(f"y has {y.shape[0]} labels but K_bar is {n} x {n}; they must match.")
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError("y must hold labels in {-1, +1}.")
    check_two_classes(y, "y", reason="y'alpha = 0 with alpha >= 0 needs both labels -1 and +1")
    beta = check_finite_array(beta, "beta", ndim=2)
    if beta.shape != (n, n):
        raise ValueError(f"beta must have shape {(n, n)} like K_bar; got {beta.shape}.")
    if float(beta.min()) < 0:  # (finite: checked above)
        raise ValueError("beta must be elementwise >= 0 (variances or l^2 gamma^2).")
    beta = symmetric_part(beta)
    C = check_positive(C, "C")
    kappa = check_positive(kappa, "kappa", strict=False)
    return K_bar, y, beta, C, kappa


def samples_symmetric(K_samples, *, rtol: float | None = None) -> bool:
    """Whether every sample ``K^s`` is symmetric to round-off: ``max |K^s - K^s'| <= rtol * max |K^s|``.

    Samples are checked one at a time (stops at the first asymmetric one).  Used to choose
    :func:`symmetric_noise_beta`: a symmetric sampler draws one noise value per pair ``{i, j}``, which the paper's
    ``beta`` (independent entries) undercounts.

    Parameters
    ----------
    K_samples : array-like of shape (S, n, n)
        The kernel samples.
    rtol : float, optional
        Relative tolerance (default ``1000 * eps`` of the samples' floating dtype: 2.2e-13 for float64, 1.2e-4
        for float32).

    Returns
    -------
    bool
    """
    Ks = np.asarray(K_samples)
    rtol = _symmetry_rtol(Ks.dtype) if rtol is None else rtol
    buf = np.empty(Ks.shape[1:], dtype=np.result_type(Ks.dtype, np.float64))
    return all(_sample_symmetric(Kk, rtol, buf) for Kk in Ks)


def _symmetry_rtol(dtype) -> float:
    """:func:`samples_symmetric`'s default tolerance: ``1000 * eps`` of a floating ``dtype`` (float64's otherwise)."""
    dt = dtype if np.issubdtype(dtype, np.floating) else np.dtype(np.float64)
    return 1000.0 * float(np.finfo(dt).eps)


#: rows per block of :func:`_sample_symmetric` (upper-triangle strips against the transposed lower ones)
_SYMMETRY_BLOCK = 256


def _sample_symmetric(Kk, rtol: float, buf) -> bool:
    """``max |K - K'| <= rtol max |K|`` for one sample ``K`` (n, n): True at once when ``K == K'`` entry by entry
    (one comparison pass, the usual case of a symmetric sampler: neither the scale nor the difference is formed);
    otherwise by strips of :data:`_SYMMETRY_BLOCK` rows of the upper triangle against the transposed lower strips
    (cache-friendly, half the work), each written into ``buf`` (n, n) and measured by ``max(d.max(), -d.min())``
    (two reductions, no ``abs`` pass)."""
    if (Kk == Kk.T).all():
        return True
    scale = max(float(Kk.max()), -float(Kk.min()))
    n, step = Kk.shape[0], _SYMMETRY_BLOCK
    for i in range(0, n, step):
        d = buf[: min(step, n - i), : n - i]
        np.subtract(Kk[i : i + step, i:], Kk[i:, i : i + step].T, out=d)
        if max(float(d.max()), -float(d.min())) > rtol * scale:
            return False
    return True


def _sample_moments(Ks, ddof: int, rtol: float):
    """``(mean, var, symmetric)`` of the samples ``Ks`` (S, n, n): the entrywise sample mean, the sample variance
    (each sample's deviation from the mean squared and summed, one sample at a time: no (S, n, n) temporaries and
    no cancellation) and :func:`samples_symmetric`, the last two in one loop over the samples."""
    S = Ks.shape[0]
    mean = Ks.sum(axis=0)
    mean /= S
    var = np.zeros_like(mean)
    d = np.empty_like(mean)
    symmetric = True
    for Kk in Ks:
        np.subtract(Kk, mean, out=d)
        d *= d
        var += d
        symmetric = symmetric and _sample_symmetric(Kk, rtol, d)  # d is free until the next sample
    var /= max(S - ddof, 1)
    return mean, var, symmetric


BETA_RULES = ("auto", "paper", "symmetric")


class KernelUncertainty:
    """Mean kernel plus the ``beta`` of both noise models (Gaussian and finite support).

    The finite-support parameters ``beta_finite, l, c, mu_hat, gamma`` are computed from ``a, b``
    on first access (eq. 9's ``gamma`` costs a numerical supremum per entry; a Gaussian fit never
    needs it).

    Parameters
    ----------
    K_bar : ndarray of shape (n, n)
        Symmetric PSD mean kernel.
    beta_gaussian : ndarray of shape (n, n), optional
        ``sigma^2`` of the Gaussian model (None if unknown).
    beta_finite : ndarray of shape (n, n), optional
        ``l^2 gamma^2`` of the finite-support model (None: computed from ``a, b`` when needed).
    a, b : ndarray of shape (n, n), optional
        Noise supports (finite case).
    l, c, mu_hat, gamma : ndarray of shape (n, n), optional
        Eq. 9's half-width, centre, normalised mean and ``gamma``, given with ``beta_finite``.
    symmetric_noise : bool, default False
        The noise is known to be symmetric (``Z_ij = Z_ji``): set by :meth:`from_samples` when every sample is
        symmetric; :meth:`beta` then applies :func:`symmetric_noise_beta` by default (``rule="auto"``).
    """

    def __init__(
        self,
        K_bar,
        beta_gaussian=None,
        beta_finite=None,
        a=None,
        b=None,
        l=None,
        c=None,
        mu_hat=None,
        gamma=None,
        *,
        symmetric_noise: bool = False,
    ):
        self.K_bar = K_bar
        self.beta_gaussian = beta_gaussian
        self.a, self.b = a, b
        self._finite = None
        if beta_finite is not None:
            self._finite = (beta_finite, l, c, mu_hat, gamma)
        self.symmetric_noise = bool(symmetric_noise)
        self.mean_psd_clipped = 0.0

    def _finite_params(self):
        if self._finite is None and self.a is not None and self.b is not None:
            self._finite = finite_support_beta(self.a, self.b)
        return self._finite or (None,) * 5

    beta_finite = property(lambda self: self._finite_params()[0], doc="``l^2 gamma^2`` (lazy).")
    l = property(lambda self: self._finite_params()[1], doc="half-widths of the supports (lazy).")  # noqa: E741
    c = property(lambda self: self._finite_params()[2], doc="centres of the supports (lazy).")
    mu_hat = property(lambda self: self._finite_params()[3], doc="``-c / l`` (lazy).")
    gamma = property(lambda self: self._finite_params()[4], doc="gamma of eq. 9 (lazy).")

    @property
    def n(self) -> int:
        return self.K_bar.shape[0]

    def beta(self, noise: str, rule: str = "auto") -> np.ndarray:
        """Symmetrised ``beta`` for ``noise`` in ``{"gaussian", "finite"}``.

        ``rule``: ``"paper"`` -- the paper's ``beta`` (independent entries); ``"symmetric"`` --
        :func:`symmetric_noise_beta` of it (off-diagonal doubled: the guarantee for symmetric
        noise, conservative otherwise); ``"auto"`` -- ``"symmetric"`` if :attr:`symmetric_noise`
        else ``"paper"``.
        """
        if rule not in BETA_RULES:
            raise ValueError(f"rule must be one of {BETA_RULES}; got {rule!r}.")
        if noise == "gaussian":
            beta = self.beta_gaussian
        elif noise == "finite":
            beta = self.beta_finite
        else:
            raise ValueError(f"noise must be 'gaussian' or 'finite'; got {noise!r}.")
        if beta is None:
            raise ValueError(
                f"this uncertainty model has no {noise} parameters; build it from samples "
                f"or pass the {'variances' if noise == 'gaussian' else 'supports'}."
            )
        beta = symmetric_part(beta)
        if rule == "symmetric" or (rule == "auto" and self.symmetric_noise):
            beta = symmetric_noise_beta(beta)
        return beta

    def subset(self, rows, cols=None) -> "KernelUncertainty":
        """The block ``[rows][:, cols]`` of every matrix (square when ``cols`` is None)."""
        cols = rows if cols is None else cols
        ix = np.ix_(np.asarray(rows), np.asarray(cols))
        take = lambda M: None if M is None else M[ix]  # noqa: E731
        fin = self._finite or (None,) * 5  # not computed yet: stays lazy (elementwise in a, b)
        out = KernelUncertainty(
            self.K_bar[ix],
            take(self.beta_gaussian),
            take(fin[0]),
            take(self.a),
            take(self.b),
            *(take(M) for M in fin[1:]),
            symmetric_noise=self.symmetric_noise,
        )
        return out

    # -- constructors ---------------------------------------------------------------
    @classmethod
    def from_samples(
        cls,
        K_samples,
        K_bar=None,
        *,
        ddof: int = 1,
        mean_psd: str = "clip",
        noise: str | None = None,
        check_input: bool = True,
    ) -> "KernelUncertainty":
        """Estimate the noise models from samples ``K^s`` (array ``(S, n, n)``, ``S >= 2``).

        ``K_bar``: the known mean kernel (Sec. 5.1 computes it from the clean points); it must be
        symmetric PSD.  If omitted, the sample mean is used, symmetrised, and -- since a mean of
        noisy kernels is rarely PSD -- projected onto the PSD cone (``mean_psd="clip"``, the
        clipped eigenvalue mass is stored in ``mean_psd_clipped``; skipped when a Cholesky
        factorisation shows the mean is already positive definite) or rejected (``"raise"``).
        ``sigma^2`` = sample variance (``ddof=1``); support of ``Z_ij`` =
        ``[min_s K^s_ij - K_bar_ij, max_s K^s_ij - K_bar_ij]`` (widened to contain 0).
        ``noise``: ``"gaussian"`` or ``"finite"`` to estimate only that model's parameters,
        ``None`` (default) for both.  ``symmetric_noise`` is set when every sample is symmetric
        (:func:`samples_symmetric`; with the Gaussian model, in the variance's loop over the samples).
        ``check_input=False``: ``K_samples`` is trusted to be a finite float64 array (validated by the caller).
        """
        if noise not in (None, "gaussian", "finite"):
            raise ValueError(f"noise must be 'gaussian', 'finite' or None; got {noise!r}.")
        in_dtype = getattr(K_samples, "dtype", None)
        Ks = check_finite_array(K_samples, "K_samples", ndim=3) if check_input else K_samples
        if Ks.shape[1] != Ks.shape[2]:
            raise ValueError(f"K_samples must have shape (S, n, n); got {Ks.shape}.")
        if Ks.shape[0] < 2:
            raise ValueError("K_samples needs at least 2 samples to estimate the noise.")
        n = Ks.shape[1]
        clipped = 0.0
        rtol = _symmetry_rtol(np.float64 if in_dtype is None else in_dtype)
        mean = var = sym = None
        if noise in (None, "gaussian"):
            mean, var, sym = _sample_moments(Ks, ddof, rtol)
        if K_bar is not None:
            K_bar = check_mean_kernel(K_bar)
            if K_bar.shape != (n, n):
                raise ValueError(f"K_bar has shape {K_bar.shape} but the samples are {n} x {n}.")
            center = K_bar
        else:
            if mean_psd not in ("clip", "raise"):
                raise ValueError(f"mean_psd must be 'clip' or 'raise'; got {mean_psd!r}.")
            center = Ks.mean(axis=0) if mean is None else mean
            Ksym = 0.5 * (center + center.T)
            if mean_psd == "raise":
                K_bar = check_mean_kernel(Ksym, "symmetrised mean of K_samples")
            elif shifted_cholesky_ok(Ksym, 0.0):  # positive definite: the projection would be the identity
                K_bar = Ksym
            else:
                v, E = psd_eigh(Ksym, "symmetrised mean of K_samples", on_negative="keep")
                clipped = float(-np.sum(v[v < 0]))
                pos = v > 0  # the projection sum_{v_r > 0} v_r e_r e_r' over its terms only (a low-rank mean: few)
                K_bar = (E[:, pos] * v[pos]) @ E[:, pos].T
                K_bar = 0.5 * (K_bar + K_bar.T)
        if sym is None:
            sym = samples_symmetric(Ks, rtol=rtol)
        a = b = None
        if noise in (None, "finite"):
            a = np.minimum(Ks.min(axis=0) - center, 0.0)
            b = np.maximum(Ks.max(axis=0) - center, 0.0)
        out = cls(K_bar, var, a=a, b=b, symmetric_noise=sym)
        out.mean_psd_clipped = clipped
        return out

    @classmethod
    def from_parameters(
        cls, K_bar, *, sigma2=None, a=None, b=None, symmetric_noise: bool = False, check_input: bool = True
    ) -> "KernelUncertainty":
        """Build from a mean kernel plus variances (Gaussian) and/or supports ``[a, b]`` of ``Z``.

        ``symmetric_noise=True`` states that the noise is symmetric (``Z_ij = Z_ji``) so that
        ``beta(noise)`` applies :func:`symmetric_noise_beta`.  ``check_input=False``: ``K_bar``
        is trusted to be symmetric PSD (already validated by the caller).
        """
        K_bar = check_mean_kernel(K_bar) if check_input else K_bar
        n = K_bar.shape[0]
        beta_g = None
        if sigma2 is not None:
            beta_g = check_finite_array(sigma2, "sigma2", ndim=2)
            if beta_g.shape != (n, n):
                raise ValueError(f"sigma2 must have shape {(n, n)} like K_bar; got {beta_g.shape}.")
            if float(beta_g.min()) < 0:  # finite (checked above); no boolean n x n temporary
                raise ValueError("sigma2 holds variances and must be >= 0.")
        out = cls(K_bar, beta_g, symmetric_noise=symmetric_noise)
        if (a is None) != (b is None):
            raise ValueError("pass both a and b (the support of the noise) or neither.")
        if a is not None:
            a = check_finite_array(a, "a", ndim=2)
            b = check_finite_array(b, "b", ndim=2)
            if a.shape != (n, n) or b.shape != (n, n):
                raise ValueError(f"a and b must have shape {(n, n)} like K_bar; got {a.shape}, {b.shape}.")
            out._finite = finite_support_beta(a, b)  # validates a <= 0 <= b now
            out.a, out.b = a, b
        if sigma2 is None and a is None:
            raise ValueError("pass sigma2 (Gaussian noise) and/or a, b (finite support).")
        return out
