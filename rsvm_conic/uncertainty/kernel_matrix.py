"""Uncertainty model of a kernel matrix (Bhadra et al. 2010, Sec. 2 and 5.1).

A noisy kernel is ``K = K_bar + Z`` with independent, centred entries ``Z_ij``.  The robust
formulation (15) only needs the mean ``K_bar``, a nonnegative weight matrix ``beta`` and a
factor ``kappa(epsilon)``:

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
sub-Gaussian variance proxy of a two-point law (Kearns & Saul 1998).  Tests verify eq. 9 on a
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

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from .._validation import check_finite_array, check_probability

__all__ = [
    "KernelUncertainty", "kappa_gaussian", "kappa_finite", "kappa", "gamma_finite_support",
    "gamma_closed_form", "eq9_residual", "finite_support_beta", "psd_part", "rank_one_approx",
    "symmetric_noise_beta", "check_mean_kernel",
]


# ----------------------------------------------------------------------------------------
# kappa(epsilon)
# ----------------------------------------------------------------------------------------
def kappa_gaussian(epsilon) -> float:
    """``kappa = -Phi^{-1}(epsilon)`` (Theorem 1).  Negative for ``epsilon > 0.5``."""
    eps = check_probability(epsilon, "epsilon")
    return float(-ndtri(eps))


def kappa_finite(epsilon) -> float:
    """``kappa = sqrt(2 log(1/epsilon))`` (Theorem 3)."""
    eps = check_probability(epsilon, "epsilon")
    return float(np.sqrt(2.0 * np.log(1.0 / eps)))


def kappa(epsilon, noise: str) -> float:
    """``kappa`` for ``noise`` in ``{"gaussian", "finite"}``."""
    if noise == "gaussian":
        return kappa_gaussian(epsilon)
    if noise == "finite":
        return kappa_finite(epsilon)
    raise ValueError(f"noise must be 'gaussian' or 'finite'; got {noise!r}.")


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
    """Left side of eq. 9: ``sigma^2 z^2 / 2 + mu z - log(cosh z + mu sinh z)`` (must be >= 0)."""
    return 0.5 * sigma**2 * np.asarray(z) ** 2 + mu * np.asarray(z) - _log_cosh_plus_mu_sinh(z, mu)


def gamma_finite_support(mu_hat, *, z_max: float = 40.0, n_grid: int = 401, n_golden: int = 45,
                         return_argmax: bool = False):
    """``gamma`` of eq. 9, computed numerically for every entry of ``mu_hat`` (``|mu_hat| <= 1``).

    ``gamma^2 = sup_z 2 (log(cosh z + mu sinh z) - mu z) / z^2``.  A coarse grid on
    ``[-z_max, z_max]`` brackets the maximiser, a golden-section search refines it
    (vectorised over entries).  ``|mu| = 1`` (a degenerate, constant noise) gives 0.
    With ``return_argmax=True`` also returns the maximising ``z``.
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
        m = m_all[start:start + chunk][:, None]
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
        out2[start:start + chunk] = cand.max(axis=0)
        outz[start:start + chunk] = np.where(best == 0, zs, grid[k])
    gam2[inner] = out2
    zarg[inner] = outz
    gamma = np.sqrt(np.maximum(gam2, 0.0)).reshape(shape)
    if return_argmax:
        return gamma, zarg.reshape(shape)
    return gamma


def gamma_closed_form(mu_hat):
    """Closed form ``gamma^2 = mu / artanh(mu)`` (1 at 0, 0 at |mu| = 1); used as a cross-check."""
    mu = np.clip(np.asarray(mu_hat, dtype=float), -1.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        g2 = np.where(np.abs(mu) < 1e-8, 1.0 - mu**2 / 3.0, mu / np.arctanh(mu))
    g2 = np.where(np.abs(mu) >= 1.0, 0.0, g2)
    return np.sqrt(g2)


def finite_support_beta(a, b):
    """``(beta, l, c, mu_hat, gamma)`` of Theorem 2 for noise supports ``[a, b]`` (a <= 0 <= b).

    Entries with ``l = 0`` (no noise) get ``mu_hat = 0`` and ``beta = 0``.
    """
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
    gamma = gamma_finite_support(mu)
    beta = l**2 * gamma**2
    return beta, l, c, mu, gamma


def symmetric_noise_beta(beta):
    """``beta`` to use when the noise is symmetric (``Z_ij = Z_ji``, one draw per pair).

    Lemma 1 and Theorem 2 assume all ``n^2`` entries independent.  With a symmetric ``Z`` and
    a symmetric ``V`` the pair ``(i, j), (j, i)`` contributes ``2 Z_ij V_ij``, so the variance
    (resp. the sub-Gaussian proxy) of ``Tr(Z V)`` is ``sum_ij beta'_ij V_ij^2`` with
    ``beta'_ij = 2 beta_ij`` off the diagonal and ``beta'_ii = beta_ii``.
    """
    beta = np.asarray(beta, dtype=float)
    out = 2.0 * beta
    np.fill_diagonal(out, np.diag(beta))
    return out


# ----------------------------------------------------------------------------------------
# approximations of beta used in Sec. 5.1
# ----------------------------------------------------------------------------------------
def psd_part(beta, *, rel_tol: float = 1e-12):
    """``(beta_hat, B)``: ``beta_hat = sum_{v_r > 0} v_r e_r e_r'`` and a factor ``B`` (r x n), ``B'B = beta_hat``.

    Since ``beta_hat - beta`` is PSD, ``nu' beta_hat nu >= nu' beta nu``: the PSD part is a
    conservative replacement (the chance-constraint guarantee still holds).
    """
    beta = 0.5 * (np.asarray(beta, dtype=float) + np.asarray(beta, dtype=float).T)
    v, E = np.linalg.eigh(beta)
    vmax = max(float(np.max(np.abs(v))), 0.0)
    keep = v > rel_tol * max(vmax, 1e-300)
    B = (E[:, keep] * np.sqrt(v[keep])).T
    beta_hat = B.T @ B
    if B.shape[0] == 0:
        B = np.zeros((1, beta.shape[0]))
    return beta_hat, B


def rank_one_approx(beta):
    """``rho`` with ``beta_hat = rho rho'`` as in Sec. 5.1: ``beta_hat = sqrt(v_max) e e'``.

    ``v_max``, ``e`` are the principal eigenpair of ``beta beta'`` (so ``sqrt(v_max)`` is the
    spectral radius of the symmetric ``beta``).  For elementwise nonnegative ``beta`` the
    Perron vector is nonnegative; its sign is fixed so and round-off negatives are set to 0.
    """
    beta = 0.5 * (np.asarray(beta, dtype=float) + np.asarray(beta, dtype=float).T)
    if beta.shape[0] > 300:  # only the principal pair is needed: Lanczos instead of a full eigh
        from scipy.sparse.linalg import eigsh

        v, E = eigsh(beta, k=1, which="LM", tol=1e-12, v0=np.ones(beta.shape[0]))
        k = 0
    else:
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
    """A symmetric PSD square matrix (the paper assumes ``K_bar`` is a kernel matrix)."""
    K = check_finite_array(K, name, ndim=2)
    if K.shape[0] != K.shape[1]:
        raise ValueError(f"{name} must be square; got shape {K.shape}.")
    scale = max(1.0, float(np.max(np.abs(K))))
    asym = float(np.max(np.abs(K - K.T)))
    if asym > 1e-8 * scale:
        raise ValueError(f"{name} is not symmetric (max |K - K'| = {asym:.3g}); pass (K + K.T) / 2.")
    K = 0.5 * (K + K.T)
    lam = float(np.linalg.eigvalsh(K)[0])
    if lam < -tol * scale * K.shape[0]:
        raise ValueError(f"{name} is not positive semidefinite (smallest eigenvalue {lam:.3g}); "
                         "the mean kernel must be a kernel matrix.")
    return K


@dataclass
class KernelUncertainty:
    """Mean kernel plus the ``beta`` of both noise models (Gaussian and finite support).

    Attributes
    ----------
    K_bar : (n, n) symmetric PSD mean kernel.
    beta_gaussian : (n, n) ``sigma^2`` (None if unknown).
    beta_finite : (n, n) ``l^2 gamma^2`` (None if unknown).
    a, b : (n, n) noise supports (finite case), ``l, c, mu_hat, gamma`` as in eq. 9.
    """

    K_bar: np.ndarray
    beta_gaussian: np.ndarray | None = None
    beta_finite: np.ndarray | None = None
    a: np.ndarray | None = None
    b: np.ndarray | None = None
    l: np.ndarray | None = None
    c: np.ndarray | None = None
    mu_hat: np.ndarray | None = None
    gamma: np.ndarray | None = None

    @property
    def n(self) -> int:
        return self.K_bar.shape[0]

    def beta(self, noise: str) -> np.ndarray:
        """Symmetrised ``beta`` for ``noise`` in ``{"gaussian", "finite"}``."""
        if noise == "gaussian":
            beta = self.beta_gaussian
        elif noise == "finite":
            beta = self.beta_finite
        else:
            raise ValueError(f"noise must be 'gaussian' or 'finite'; got {noise!r}.")
        if beta is None:
            raise ValueError(f"this uncertainty model has no {noise} parameters; build it from samples "
                             f"or pass the {'variances' if noise == 'gaussian' else 'supports'}.")
        return 0.5 * (beta + beta.T)

    def kappa(self, epsilon, noise: str) -> float:
        return kappa(epsilon, noise)

    def subset(self, rows, cols=None) -> "KernelUncertainty":
        """The block ``[rows][:, cols]`` of every matrix (square when ``cols`` is None)."""
        cols = rows if cols is None else cols
        ix = np.ix_(np.asarray(rows), np.asarray(cols))
        take = lambda M: None if M is None else M[ix]  # noqa: E731
        return KernelUncertainty(self.K_bar[ix], take(self.beta_gaussian), take(self.beta_finite), take(self.a),
                                 take(self.b), take(self.l), take(self.c), take(self.mu_hat), take(self.gamma))

    # -- constructors ---------------------------------------------------------------
    @classmethod
    def from_samples(cls, K_samples, K_bar=None, *, ddof: int = 1, mean_psd: str = "clip") -> "KernelUncertainty":
        """Estimate both noise models from samples ``K^s`` (array ``(S, n, n)``, ``S >= 2``).

        ``K_bar``: the known mean kernel (Sec. 5.1 computes it from the clean points); it must be
        symmetric PSD.  If omitted, the sample mean is used, symmetrised, and -- since a mean of
        noisy kernels is rarely PSD -- projected onto the PSD cone (``mean_psd="clip"``, the
        clipped eigenvalue mass is stored in ``mean_psd_clipped``) or rejected (``"raise"``).
        ``sigma^2`` = sample variance (``ddof=1``); support of ``Z_ij`` =
        ``[min_s K^s_ij - K_bar_ij, max_s K^s_ij - K_bar_ij]`` (widened to contain 0).
        """
        Ks = check_finite_array(K_samples, "K_samples", ndim=3)
        if Ks.shape[1] != Ks.shape[2]:
            raise ValueError(f"K_samples must have shape (S, n, n); got {Ks.shape}.")
        if Ks.shape[0] < 2:
            raise ValueError("K_samples needs at least 2 samples to estimate the noise.")
        n = Ks.shape[1]
        clipped = 0.0
        if K_bar is not None:
            K_bar = check_mean_kernel(K_bar)
            if K_bar.shape != (n, n):
                raise ValueError(f"K_bar has shape {K_bar.shape} but the samples are {n} x {n}.")
            center = K_bar
        else:
            if mean_psd not in ("clip", "raise"):
                raise ValueError(f"mean_psd must be 'clip' or 'raise'; got {mean_psd!r}.")
            center = Ks.mean(axis=0)
            Ksym = 0.5 * (center + center.T)
            if mean_psd == "raise":
                K_bar = check_mean_kernel(Ksym, "symmetrised mean of K_samples")
            else:
                v, E = np.linalg.eigh(Ksym)
                clipped = float(-np.sum(v[v < 0]))
                K_bar = (E * np.maximum(v, 0.0)) @ E.T
                K_bar = 0.5 * (K_bar + K_bar.T)
        var = Ks.var(axis=0, ddof=ddof)
        a = np.minimum(Ks.min(axis=0) - center, 0.0)
        b = np.maximum(Ks.max(axis=0) - center, 0.0)
        beta_f, l, c, mu, gamma = finite_support_beta(a, b)
        out = cls(K_bar, var, beta_f, a, b, l, c, mu, gamma)
        out.mean_psd_clipped = clipped
        return out

    @classmethod
    def from_parameters(cls, K_bar, *, sigma2=None, a=None, b=None) -> "KernelUncertainty":
        """Build from a mean kernel plus variances (Gaussian) and/or supports ``[a, b]`` of ``Z``."""
        K_bar = check_mean_kernel(K_bar)
        n = K_bar.shape[0]
        beta_g = None
        if sigma2 is not None:
            beta_g = check_finite_array(sigma2, "sigma2", ndim=2)
            if beta_g.shape != (n, n):
                raise ValueError(f"sigma2 must have shape {(n, n)} like K_bar; got {beta_g.shape}.")
            if np.any(beta_g < 0):
                raise ValueError("sigma2 holds variances and must be >= 0.")
        out = cls(K_bar, beta_g)
        if (a is None) != (b is None):
            raise ValueError("pass both a and b (the support of the noise) or neither.")
        if a is not None:
            a = check_finite_array(a, "a", ndim=2)
            b = check_finite_array(b, "b", ndim=2)
            if a.shape != (n, n) or b.shape != (n, n):
                raise ValueError(f"a and b must have shape {(n, n)} like K_bar; got {a.shape}, {b.shape}.")
            out.beta_finite, out.l, out.c, out.mu_hat, out.gamma = finite_support_beta(a, b)
            out.a, out.b = a, b
        if sigma2 is None and a is None:
            raise ValueError("pass sigma2 (Gaussian noise) and/or a, b (finite support).")
        return out
