"""The expected RBF kernel between Gaussian points [CGT19, eq. 6 and 8], corrected.

A Gaussian point is a pair (x, Sigma): the datum is xi ~ N(x, Sigma).  For the Gaussian kernel
``k(a, b) = exp(-||a - b||^2 / (2 sigma^2))`` and *independent* xi_i ~ N(x_i, Sigma_i),
xi_j ~ N(x_j, Sigma_j), with d = x_i - x_j and S = Sigma_i + Sigma_j::

    E k(xi_i, xi_j) = |I + S / sigma^2|^{-1/2} exp(-1/2 d' (sigma^2 I + S)^{-1} d)        (*)

(xi_i - xi_j ~ N(d, S); a Gaussian integral).  The paper prints the determinant power
as +1/2 (eq. 6 and 8).  That is wrong twice over:

* it does not match the expectation: a Monte Carlo check (0.4395 vs 0.4397 for
  -1/2, against 0.989 for +1/2; re-checked in tests/test_gaussian_points.py to 3 standard errors);
* the printed kernel is not positive semidefinite: two points with the same mean, Sigma_1 = 0
  and Sigma_2 = a sigma^2 (n = 1) give the Gram matrix [[1, sqrt(1+a)], [sqrt(1+a), sqrt(1+2a)]]
  whose determinant sqrt(1+2a) - (1+a) is negative for every a > 0.  The proof of Theorem 1
  compares the Gram entries termwise with E k, which does not preserve positive semidefiniteness.

With the -1/2 power, (*) applied to *all* pairs including i = j (S = 2 Sigma_i, i.e. two
independent copies) is the inner product of the kernel mean embeddings
``mu_i = E phi(xi_i)``; it is therefore a positive kernel on Gaussian points, and it reduces to
k(x_i, x_j) when all Sigma are 0.  (The paper's E k(xi_i, xi_i) = 1 uses the *same* draw twice;
that value is not a kernel between distributions.)

Random features for Gaussian points: for w ~ N(0, I / sigma^2),
``E_xi cos(w'xi) = exp(-w'Sigma w / 2) cos(w'x)`` (same for sin), so

    psi(x, Sigma) = sqrt(2/D) [e^{-w_j'Sigma w_j / 2} (cos w_j'x, sin w_j'x)]_{j = 1..D/2}

satisfies E_w <psi(x_i, Sigma_i), psi(x_j, Sigma_j)> = (*) exactly (:class:`GaussianPointRFF`).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_finite_array, check_no_overflow, check_positive, check_symmetric_psd, check_X
from .feature_maps import RandomFourierFeatures

VARIANTS = ("corrected", "printed")


def as_covariances(Sigma, L: int, n: int, name: str = "Sigma"):
    """Normalise the covariances of L Gaussian points in R^n.

    Parameters
    ----------
    Sigma : None or array-like
        None (all zero), (n,) shared diagonal, (n, n) shared matrix, (L, n) per-point diagonals or (L, n, n)
        per-point matrices.
    L, n : int
        Number of points and their dimension.
    name : str, default "Sigma"
        The argument's name, for messages.

    Returns
    -------
    S : ndarray of shape (L, n) or (L, n, n)
        Per-point diagonals or matrices.
    diagonal : bool
        Whether ``S`` holds diagonals.

    Raises
    ------
    ValueError
        If the shape is none of the above, or a matrix is not symmetric positive semi-definite.
    """
    if Sigma is None:
        return np.zeros((L, n)), True
    S = check_finite_array(Sigma, name, ndim=(1, 2, 3))
    check_no_overflow(S, name, products=True, hint="with X: Sigma scales as the square of X's scale")
    if S.ndim == 1:
        if S.shape != (n,):
            raise ValueError(f"a 1-D {name} is a shared diagonal of length {n}; got {S.shape}.")
        S = np.broadcast_to(S, (L, n)).copy()
    if S.ndim == 2:
        if L == n:
            raise ValueError(
                f"a 2-D {name} is ambiguous when there are as many points as features ({n}): "
                f"pass per-point matrices (L, n, n) or a shared diagonal (n,) instead."
            )
        if S.shape == (L, n):
            if np.any(S < 0):
                raise ValueError(f"{name} holds negative variances; diagonal covariances must be >= 0.")
            return S, True
        if S.shape != (n, n):
            raise ValueError(
                f"a 2-D {name} must be (L, n) = ({L}, {n}) diagonals or one ({n}, {n}) matrix; got {S.shape}."
            )
        S = np.broadcast_to(check_symmetric_psd(S, name), (L, n, n)).copy()
        return S, False
    if S.shape != (L, n, n):
        raise ValueError(f"a 3-D {name} must be (L, n, n) = ({L}, {n}, {n}); got {S.shape}.")
    return check_symmetric_psd(S, name), False


def expected_rbf_kernel(X1, Sigma1=None, X2=None, Sigma2=None, sigma=1.0, variant="corrected", chunk=256) -> np.ndarray:
    """Gram matrix of the expected RBF kernel (*) between Gaussian points (X1, Sigma1) and (X2, Sigma2).

    Parameters
    ----------
    X1 : array-like of shape (L1, n)
        Means of the first points.
    Sigma1 : array-like, optional
        Their covariances (any form of :func:`as_covariances`; default 0).
    X2, Sigma2 : array-like, optional
        The second points (default: the first).
    sigma : float, default 1.0
        Length scale of the Gaussian kernel.
    variant : {"corrected", "printed"}, default "corrected"
        ``"printed"`` uses the paper's +1/2 power (for the tests that show it is wrong).
    chunk : int, default 256
        Rows computed at a time for full covariances (bounds the memory).

    Returns
    -------
    ndarray of shape (L1, L2)
        The Gram matrix.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}; got {variant!r}.")
    sigma = check_positive(sigma, "sigma")
    X1 = check_X(X1, "X1")
    L1, n = X1.shape
    S1, diag1 = as_covariances(Sigma1, L1, n, "Sigma1")
    if X2 is None:
        if Sigma2 is not None:
            raise ValueError("Sigma2 given without X2.")
        X2, S2, diag2 = X1, S1, diag1
    else:
        X2 = check_X(X2, "X2", n_features=n)
        S2, diag2 = as_covariances(Sigma2, X2.shape[0], n, "Sigma2")
    power = -0.5 if variant == "corrected" else 0.5
    s2 = sigma * sigma
    out = np.empty((L1, X2.shape[0]))
    if diag1 and diag2:
        for a in range(0, L1, chunk):
            S = S1[a : a + chunk, None, :] + S2[None]  # (c, L2, n)
            d = X1[a : a + chunk, None, :] - X2[None]
            logdet = np.sum(np.log1p(S / s2), axis=2)
            quad = np.sum(d * d / (s2 + S), axis=2)
            out[a : a + chunk] = np.exp(power * logdet - 0.5 * quad)
        return out
    F1 = S1 if not diag1 else np.einsum("li,ij->lij", S1, np.eye(n))
    F2 = S2 if not diag2 else np.einsum("li,ij->lij", S2, np.eye(n))
    eye = np.eye(n)
    step = max(1, chunk // max(1, n))
    for a in range(0, L1, step):
        M = s2 * eye + F1[a : a + step, None] + F2[None]  # (c, L2, n, n)
        Lc = np.linalg.cholesky(M)
        logdet = 2.0 * np.sum(np.log(np.diagonal(Lc, axis1=-2, axis2=-1)), axis=-1) - n * np.log(s2)
        d = X1[a : a + step, None, :] - X2[None]
        z = np.linalg.solve(Lc, d[..., None])[..., 0]
        quad = np.sum(z * z, axis=-1)
        out[a : a + step] = np.exp(power * logdet - 0.5 * quad)
    return out


def expected_rbf_kernel_mc(x1, Sigma1, x2, Sigma2, sigma=1.0, n_mc=100_000, random_state=0):
    """Monte Carlo estimate of ``E k(xi_1, xi_2)`` for independent Gaussian points.

    Parameters
    ----------
    x1, x2 : array-like of shape (n,)
        The means.
    Sigma1, Sigma2 : array-like of shape (n, n)
        The covariances.
    sigma : float, default 1.0
        Length scale of the Gaussian kernel.
    n_mc : int, default 100000
        Number of draws.
    random_state : int, default 0
        Seed of the draws.

    Returns
    -------
    mean : float
        The estimate.
    standard_error : float
        Its standard error.
    """
    rng = np.random.default_rng(random_state)
    x1, x2 = np.asarray(x1, float), np.asarray(x2, float)
    n = x1.shape[0]
    S1 = np.zeros((n, n)) if Sigma1 is None else np.atleast_2d(Sigma1) if np.ndim(Sigma1) == 2 else np.diag(Sigma1)
    S2 = np.zeros((n, n)) if Sigma2 is None else np.atleast_2d(Sigma2) if np.ndim(Sigma2) == 2 else np.diag(Sigma2)
    a = rng.multivariate_normal(x1, S1, size=n_mc, method="eigh")
    b = rng.multivariate_normal(x2, S2, size=n_mc, method="eigh")
    v = np.exp(-np.sum((a - b) ** 2, axis=1) / (2 * sigma * sigma))
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(n_mc))


class GaussianPointRFF(RandomFourierFeatures):
    """Random Fourier features of Gaussian points: cos/sin pairs damped by ``exp(-w'Sigma w / 2)``.

    ``transform(X, Sigma)`` takes the points' covariances (any form of :func:`as_covariances`).

    Parameters
    ----------
    n_components : even int, default 100
        Output dimension (D/2 frequencies, each giving a cos and a sin coordinate).
    sigma : float, default 1.0
        Kernel length scale; frequencies are ``N(0, I / sigma^2)``.
    random_state : int, Generator or None
        Seed of the frequencies.
    """

    def transform(self, X, Sigma=None) -> np.ndarray:
        self._check_fitted()
        X = check_X(X, n_features=self.n_features_in_)
        S, diag = as_covariances(Sigma, X.shape[0], X.shape[1])
        W = self.omega_
        if diag:
            damp = np.exp(-0.5 * (S @ (W * W)))  # (L, F)
        else:
            damp = np.exp(-0.5 * np.einsum("im,lij,jm->lm", W, S, W))
        T = X @ W
        out = np.empty((X.shape[0], 2 * W.shape[1]))
        out[:, 0::2] = damp * np.cos(T)
        out[:, 1::2] = damp * np.sin(T)
        return out * np.sqrt(1.0 / W.shape[1])

    def fit_transform(self, X, y=None, Sigma=None):
        return self.fit(X).transform(X, Sigma)
