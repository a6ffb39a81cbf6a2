"""Seeded explicit feature maps for the Gaussian kernel ([CJ20], Sec. 4.1-4.2; [RR07]).

Kernel convention (as everywhere in the package): ``k(x, z) = exp(-||x - z||^2 / (2 sigma^2))``,
``sigma`` a length scale.  Its spectral measure is ``N(0, I / sigma^2)``.

* :class:`RandomFourierFeatures` -- cos/sin pairs ([CJ20], Sec. 4.1, the lower-variance variant of
  Sutherland & Schneider; the Psi of the random Fourier feature lecture notes)::

      phi(x) = sqrt(2 / D) [cos(w_1'x), sin(w_1'x), ..., cos(w_{D/2}'x), sin(w_{D/2}'x)]

  with the pairs *interleaved*, so that block j of phi (coordinates 2j, 2j+1) is the point
  ``sqrt(2/D) (cos, sin)(w_j'x)`` on a circle.  ``<phi(x), phi(z)> = (2/D) sum_j cos(w_j'(x - z))``,
  an unbiased estimate of k(x, z).  scikit-learn's ``RBFSampler`` draws the same frequencies but
  uses ``sqrt(2/D) cos(w'x + b)`` with a random phase (the first variant of [CJ20]), so it cannot
  provide the cos/sin pairs whose rotation structure Prop. 4.1 needs; we reuse only its
  ``check_random_state`` seeding convention.  The frequencies are drawn as
  ``rng.standard_normal((n, D/2)) / sigma`` from ``np.random.default_rng(random_state)``.

* :class:`NystroemMap` -- the map of Sec. 4.2: landmarks ``xhat_1..m`` drawn without replacement
  (seeded), ``Khat = U Lambda U'`` (eigendecomposition), rank r = number of eigenvalues above
  ``rcond * lambda_max``, and ``phi(x) = Lambda_r^{-1/2} U_r' khat(x)``.  scikit-learn's
  ``Nystroem`` computes the rotated map ``U Lambda^{-1/2} U' khat(x)`` through an SVD and does
  not expose Lambda and U, which Prop. 4.2 (``R_i = Lambda^{1/2}``) needs; we therefore build the
  map ourselves and test that its Gram matrix equals scikit-learn's for the same landmarks.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import check_positive, check_X, psd_eigh
from .rbf import gaussian_kernel


def _check_int(value, name, minimum=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def _rng(random_state):
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        return np.random.default_rng(random_state)
    raise ValueError(f"random_state must be None, an int or a numpy Generator; got {random_state!r}.")


class RandomFourierFeatures:
    """cos/sin random Fourier features for the Gaussian kernel of length scale ``sigma``.

    Parameters
    ----------
    n_components : even int D >= 2
        Output dimension (D/2 frequencies, each giving a cos and a sin coordinate).
    sigma : float > 0
        Kernel length scale; frequencies are ``N(0, I / sigma^2)``.
    random_state : int, Generator or None

    Attributes (after ``fit``)
    --------------------------
    omega_ : (n_features, D/2) frequencies; ``n_features_in_``.
    """

    def __init__(self, n_components=100, sigma=1.0, random_state=None):
        self.n_components = n_components
        self.sigma = sigma
        self.random_state = random_state

    def fit(self, X, y=None):
        X = check_X(X)
        D = _check_int(self.n_components, "n_components", 2)
        if D % 2:
            raise ValueError(f"n_components must be even (cos/sin pairs); got {D}.")
        sigma = check_positive(self.sigma, "sigma")
        rng = _rng(self.random_state)
        self.n_features_in_ = X.shape[1]
        self.omega_ = rng.standard_normal((X.shape[1], D // 2)) / sigma
        return self

    def _check_fitted(self):
        if not hasattr(self, "omega_"):
            raise ValueError("this RandomFourierFeatures is not fitted; call fit(X) first.")

    @property
    def n_frequencies(self) -> int:
        self._check_fitted()
        return self.omega_.shape[1]

    def angles(self, X) -> np.ndarray:
        """``w_j' x`` for every row: shape (L, D/2)."""
        self._check_fitted()
        return check_X(X, n_features=self.n_features_in_) @ self.omega_

    def transform(self, X) -> np.ndarray:
        T = self.angles(X)
        out = np.empty((T.shape[0], 2 * T.shape[1]))
        out[:, 0::2] = np.cos(T)
        out[:, 1::2] = np.sin(T)
        return out * np.sqrt(1.0 / T.shape[1])  # sqrt(2/D), D = 2 * (D/2)

    def fit_transform(self, X, y=None):
        return self.fit(X).transform(X)

    def jacobian_vector(self, X, V) -> np.ndarray:
        """Directional derivative ``d phi(x_i)[v_i]`` for rows of X and V (used by attacks)."""
        T = self.angles(X)
        dT = check_X(V, "V", n_features=self.n_features_in_) @ self.omega_
        out = np.empty((T.shape[0], 2 * T.shape[1]))
        out[:, 0::2] = -np.sin(T) * dT
        out[:, 1::2] = np.cos(T) * dT
        return out * np.sqrt(1.0 / T.shape[1])

    def input_gradient(self, X, zeta) -> np.ndarray:
        """Gradient w.r.t. x of ``<zeta, phi(x)>`` for each row of X: shape (L, n)."""
        T = self.angles(X)
        zc, zs = np.asarray(zeta)[0::2], np.asarray(zeta)[1::2]
        coef = (-np.sin(T) * zc + np.cos(T) * zs) * np.sqrt(1.0 / T.shape[1])
        return coef @ self.omega_.T

    def rotations(self, X) -> tuple[np.ndarray, np.ndarray]:
        """(cos, sin) of the angles ``w_j'x_i``: the blocks P_ij of Prop. 4.1, each (L, D/2)."""
        T = self.angles(X)
        return np.cos(T), np.sin(T)


class NystroemMap:
    """Nystroem feature map of Sec. 4.2 for the Gaussian kernel.

    Parameters
    ----------
    n_components : int m >= 1
        Number of landmarks (capped at the number of training rows).
    sigma : float > 0
    rcond : float
        Eigenvalues below ``rcond * max eigenvalue`` are dropped (they define the rank r).
    random_state : int, Generator or None

    Attributes
    ----------
    landmarks_ (m, n), eigenvalues_ (r,) descending, eigenvectors_ (m, r), rank_ r.
    """

    def __init__(self, n_components=100, sigma=1.0, rcond=1e-10, random_state=None):
        self.n_components = n_components
        self.sigma = sigma
        self.rcond = rcond
        self.random_state = random_state

    def fit(self, X, y=None, landmarks=None):
        X = check_X(X)
        sigma = check_positive(self.sigma, "sigma")
        rcond = check_positive(self.rcond, "rcond")
        if landmarks is None:
            m = min(_check_int(self.n_components, "n_components"), X.shape[0])
            idx = _rng(self.random_state).choice(X.shape[0], size=m, replace=False)
            self.landmark_indices_ = np.sort(idx)
            Z = X[self.landmark_indices_]
        else:
            Z = check_X(landmarks, "landmarks", n_features=X.shape[1])
            self.landmark_indices_ = None
        K = gaussian_kernel(Z, Z, sigma)
        # eigenpairs with lambda > rcond * lambda_max (K is PSD: the largest is the spectral radius)
        vals, vecs = psd_eigh(K, "the landmark kernel", on_negative="keep", drop_tol=rcond)
        self.landmarks_ = Z
        self.eigenvalues_ = vals[::-1].copy()  # descending
        self.eigenvectors_ = np.ascontiguousarray(vecs[:, ::-1])
        self.rank_ = int(vals.shape[0])
        self.n_features_in_ = X.shape[1]
        return self

    def _check_fitted(self):
        if not hasattr(self, "landmarks_"):
            raise ValueError("this NystroemMap is not fitted; call fit(X) first.")

    def kernel_rows(self, X) -> np.ndarray:
        """``khat(x) = (k(x, xhat_1), ..., k(x, xhat_m))`` for every row: (L, m)."""
        self._check_fitted()
        return gaussian_kernel(check_X(X, n_features=self.n_features_in_), self.landmarks_, self.sigma)

    def transform(self, X) -> np.ndarray:
        return (self.kernel_rows(X) @ self.eigenvectors_) / np.sqrt(self.eigenvalues_)

    def fit_transform(self, X, y=None):
        return self.fit(X).transform(X)

    def input_gradient(self, X, zeta) -> np.ndarray:
        """Gradient w.r.t. x of ``<zeta, phi(x)>`` for each row of X: shape (L, n)."""
        Kr = self.kernel_rows(X)  # (L, m)
        c = self.eigenvectors_ @ (np.asarray(zeta) / np.sqrt(self.eigenvalues_))  # (m,)
        X = check_X(X, n_features=self.n_features_in_)
        # d/dx k(x, z) = -k(x, z) (x - z) / sigma^2
        W = Kr * c  # (L, m)
        return -(W.sum(axis=1)[:, None] * X - W @ self.landmarks_) / self.sigma**2
