"""The consolidation kernel of [ElD19] (PhD thesis, chapter 4): kappa (Def. 4.1) and kappa^m (Def. 4.2).

``kappa(x, x') = tau_0 G_0(x - x') + sum_i tau_i h_{d_i}(<u_i, x - x'>) G_1(x - x')``: a Gaussian term plus one
periodic term per direction ``v_i = d_i u_i`` joining two k-means subclass centres of the same class
(:func:`subclass_centres`, :func:`consolidation_directions`: a direction that would also join centres of two
different classes is excluded, within ``exclusion_tol * ||v||``).  ``h_d`` (:func:`h_periodic`) is periodic with
period ``d`` and has non-negative Fourier coefficients, so the kernel is positive semi-definite; kappa^m replaces
it by its Fourier partial sum (:func:`h_periodic_m`), a spectral mixture whose random features are
:class:`ConsolidationRandomFeatures`.

The construction step by step, the choice of ``sigma`` / ``tau``, and the corrections to the printed definitions
(each checked in ``tests/test_consolidation_kernel.py``) are in the user guide's Weston-Watkins page, section
"The consolidation kernel".
"""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import check_positive, check_X
from .rbf import reference_point, same_rows, squared_distances


# ----------------------------------------------------------------------------- h_d and its series
def h_periodic(t, d: float) -> np.ndarray:
    """The periodic function of [ElD19], Sec. 4.3: ``h_d(kd + t) = 4t^2/d^2 - 4t/d + 1`` for ``t in [0, d)``.

    Parameters
    ----------
    t : array-like
        Points.
    d : float
        The period (> 0).

    Returns
    -------
    ndarray
        ``h_d(t)``, with the shape of ``t``.
    """
    d = check_positive(d, "d")
    s = np.mod(np.asarray(t, dtype=np.float64), d) / d
    return (1.0 - 2.0 * s) ** 2


def fourier_coefficients(m: int) -> np.ndarray:
    """The cosine-series coefficients of ``h_d``: ``a_0 = 1/3`` and ``a_j = 4 / (j^2 pi^2)``.

    Parameters
    ----------
    m : int
        Number of terms after ``a_0``.

    Returns
    -------
    ndarray of shape (m + 1,)
        ``a_0, ..., a_m``.
    """
    m = _check_m(m)
    j = np.arange(1, m + 1, dtype=np.float64)
    return np.concatenate([[1.0 / 3.0], 4.0 / (j**2 * np.pi**2)])


def h_periodic_m(t, d: float, m: int) -> np.ndarray:
    """Fourier partial sum ``h_d^m(t) = 1/3 + sum_{j=1}^m a_j cos(2 pi j t / d)``.

    Parameters
    ----------
    t : array-like
        Points.
    d : float
        The period (> 0).
    m : int
        Number of cosine terms.

    Returns
    -------
    ndarray
        ``h_d^m(t)``, with the shape of ``t``.
    """
    d = check_positive(d, "d")
    a = fourier_coefficients(m)
    t = np.asarray(t, dtype=np.float64)
    theta = 2.0 * np.pi * t / d
    return a[0] + _cos_series(theta, a[1:])


def _cos_series(theta: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """``sum_j coef[j-1] cos(j theta)`` by the Chebyshev recurrence (no per-term trig calls)."""
    out = np.zeros_like(theta)
    if coef.size == 0:
        return out
    c1 = np.cos(theta)
    prev, cur = np.ones_like(theta), c1
    for j, a in enumerate(coef, start=1):
        if j > 1:
            prev, cur = cur, 2.0 * c1 * cur - prev
        out += a * cur
    return out


def _check_m(m) -> int:
    if isinstance(m, bool) or not isinstance(m, numbers.Integral) or m < 0:
        raise ValueError(f"m (number of Fourier terms) must be a non-negative integer; got {m!r}.")
    return int(m)


# ----------------------------------------------------------------------------- direction set
def subclass_centres(X, y, n_subclasses: int = 5, random_state=0):
    """k-means subclass centres per class (step 1 of the construction).

    Parameters
    ----------
    X : array-like of shape (L, p)
        Training points.
    y : array-like of shape (L,)
        Their labels.
    n_subclasses : int, default 5
        Subclasses per class (fewer for a class with fewer points).
    random_state : int, default 0
        Seed of k-means.

    Returns
    -------
    centres : ndarray of shape (K, p)
        The subclass centres.
    centre_class : ndarray of shape (K,)
        The class label of each centre.
    """
    from sklearn.cluster import KMeans

    X = check_X(X)
    y = np.asarray(y)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"y has {y.shape[0]} labels but X has {X.shape[0]} rows.")
    if isinstance(n_subclasses, bool) or not isinstance(n_subclasses, numbers.Integral) or n_subclasses < 1:
        raise ValueError(f"n_subclasses must be a positive integer; got {n_subclasses!r}.")
    centres, owner = [], []
    for k, cls in enumerate(np.unique(y)):
        Xk = X[y == cls]
        n_uniq = np.unique(Xk, axis=0).shape[0]
        q = int(min(n_subclasses, n_uniq))
        if q == 1:
            centres.append(Xk.mean(axis=0, keepdims=True))
        else:
            km = KMeans(n_clusters=q, n_init=4, random_state=random_state).fit(Xk)
            centres.append(km.cluster_centers_)
        owner.extend([k] * centres[-1].shape[0])
    return np.vstack(centres), np.asarray(owner)


def consolidation_directions(centres, owner, exclusion_tol: float = 0.25):
    """Steps 2-3 of the construction: same-class centre pairs, minus those the exclusion rule drops.

    Parameters
    ----------
    centres : ndarray of shape (K, p)
        Subclass centres.
    owner : ndarray of shape (K,)
        The class of each centre.
    exclusion_tol : float, default 0.25
        Drop ``v`` when some centre ``a + v`` (or ``a - v``) lies within ``exclusion_tol * ||v||`` of a centre of
        another class.

    Returns
    -------
    V : ndarray of shape (M, p)
        ``V[i] = centres[pairs[i, 1]] - centres[pairs[i, 0]]`` for the kept pairs.
    pairs : ndarray of int, shape (M, 2)
        The kept pairs of centre indices.
    excluded : list of tuple
        ``(pair, a, b)`` witnesses: centre ``a + v`` lands within ``exclusion_tol * ||v||`` of centre ``b`` of
        another class.
    """
    centres = np.asarray(centres, dtype=np.float64)
    owner = np.asarray(owner)
    exclusion_tol = check_positive(exclusion_tol, "exclusion_tol", strict=False)
    kept, pairs, excluded = [], [], []
    diff_class = owner[:, None] != owner[None, :]
    for p in range(len(centres)):
        for q in range(p + 1, len(centres)):
            if owner[p] != owner[q]:
                continue
            v = centres[q] - centres[p]
            d = float(np.linalg.norm(v))
            if d <= 1e-12:
                continue
            witness = None
            for sgn in (1.0, -1.0):
                moved = centres + sgn * v  # a + v for every centre a
                dist = np.sqrt(squared_distances(moved, centres))
                hit = np.argwhere(diff_class & (dist <= exclusion_tol * d))
                if hit.size:
                    witness = (int(hit[0, 0]), int(hit[0, 1]))
                    break
            if witness is None:
                kept.append(v)
                pairs.append((p, q))
            else:
                excluded.append(((p, q), witness[0], witness[1]))
    V = np.array(kept).reshape(-1, centres.shape[1])
    return V, np.array(pairs, dtype=int).reshape(-1, 2), excluded


# ----------------------------------------------------------------------------- the kernel
class ConsolidationKernel:
    """kappa (``m=None``) or kappa^m (``m`` an integer) of [ElD19], Defs. 4.1-4.2.

    Parameters
    ----------
    sigma : length scale of the plain Gaussian term (``sigma_0`` of the thesis is ``1/sigma``).
    sigma_dir : length scale of the Gaussian envelope of the periodic terms (default ``sigma``;
        ``np.inf`` removes the envelope).
    m : number of Fourier terms (``None`` = exact periodic ``h_d``).  Default 41, the thesis's
        value for ``|kappa - kappa^m| < 1e-2``.
    n_subclasses : k-means subclasses per class (the thesis uses 5).
    exclusion_tol : tolerance of the exclusion rule (>= 0, default 0.25): drop the direction ``v`` when
        some centre ``a + v`` (or ``a - v``) lies within ``exclusion_tol * ||v||`` of a centre of another
        class (the user guide's consolidation kernel section, step 3).
    random_state : seed of k-means.
    tau0 : weight of the plain Gaussian term; ``None`` gives ``tau_i = 1/(M+1)`` for all i.
    directions : optional explicit ``(M, p)`` array of vectors ``c_i1 - c_i2`` (skips k-means).
    """

    def __init__(
        self,
        sigma: float = 1.0,
        sigma_dir: float | None = None,
        m: int | None = 41,
        n_subclasses: int = 5,
        exclusion_tol: float = 0.25,
        tau0: float | None = None,
        directions=None,
        random_state=0,
    ):
        self.sigma = check_positive(sigma, "sigma")
        self.sigma_dir = self.sigma if sigma_dir is None else check_positive(sigma_dir, "sigma_dir", allow_inf=True)
        self.m = None if m is None else _check_m(m)
        self.n_subclasses = n_subclasses
        self.exclusion_tol = exclusion_tol
        self.tau0 = tau0
        self.random_state = random_state
        self.directions_ = None
        if directions is not None:
            self._set_directions(check_X(directions, "directions"))

    # -- fitting the direction set ---------------------------------------------------------------
    def fit(self, X, y) -> "ConsolidationKernel":
        """k-means subclasses per class, then the direction set with the exclusion rule."""
        X = check_X(X)
        centres, owner = subclass_centres(X, y, self.n_subclasses, self.random_state)
        V, pairs, excluded = consolidation_directions(centres, owner, self.exclusion_tol)
        self.centres_, self.centre_class_, self.pairs_, self.excluded_ = centres, owner, pairs, excluded
        self._set_directions(V)
        return self

    def _set_directions(self, V):
        V = np.asarray(V, dtype=np.float64).reshape(-1, V.shape[-1] if V.ndim else 1)
        d = np.linalg.norm(V, axis=1)
        if np.any(d <= 1e-12):
            raise ValueError("directions must be non-zero vectors c_i1 - c_i2.")
        self.directions_ = V
        self.d_ = d
        self.u_ = V / d[:, None]
        M = V.shape[0]
        if self.tau0 is None:
            tau = np.full(M + 1, 1.0 / (M + 1))
        else:
            t0 = float(self.tau0)
            if not 0.0 <= t0 <= 1.0:
                raise ValueError(f"tau0 must lie in [0, 1]; got {t0}.")
            if M == 0 and t0 != 1.0:
                t0 = 1.0  # no direction survived: the kernel is the Gaussian
            tau = np.concatenate([[t0], np.full(M, (1.0 - t0) / M if M else 0.0)])
        self.tau_ = tau

    @property
    def n_directions(self) -> int:
        self._check_fitted()
        return int(self.directions_.shape[0])

    def _check_fitted(self):
        if self.directions_ is None:
            raise ValueError("ConsolidationKernel is not fitted: call fit(X, y) or pass directions=.")

    def mu(self) -> np.ndarray:
        """Frequencies ``mu_ij = 2 pi j u_i / d_i`` (corrected Def. 4.2), shape ``(M, m+1, p)``."""
        self._check_fitted()
        if self.m is None:
            raise ValueError("mu is defined for the truncated kernel (m an integer).")
        j = np.arange(self.m + 1, dtype=np.float64)
        return 2.0 * np.pi * j[None, :, None] * (self.u_ / self.d_[:, None])[:, None, :]

    # -- evaluation -----------------------------------------------------------------------------
    def _envelopes(self, sq):
        g0 = np.exp(-sq / (2.0 * self.sigma**2))
        g1 = np.ones_like(sq) if np.isinf(self.sigma_dir) else np.exp(-sq / (2.0 * self.sigma_dir**2))
        return g0, g1

    def __call__(self, X, Y=None) -> np.ndarray:
        """Gram matrix between rows of X and Y (kappa^m if ``m`` is set, else exact kappa)."""
        self._check_fitted()
        same = Y is None or Y is X
        X = check_X(X, n_features=self.directions_.shape[1] if self.directions_.size else None)
        Y = X if same else check_X(Y, "Y", n_features=X.shape[1])
        same = same_rows(X, Y)
        sq = squared_distances(X, None if same else Y)
        g0, g1 = self._envelopes(sq)
        tau0, tau = self.tau_[0], self.tau_[1:]
        if tau.size == 0:
            return tau0 * g0
        # every term depends on x - y only: project x - c and y - c (c a common reference point), so
        # that the rounding of <u_i, x> / d_i scales with the data spread, not with its offset
        c = reference_point(X, None if same else Y)
        X = X - c
        Y = X if same else Y - c
        if self.m is None:
            periodic = np.zeros_like(sq)
            PX, PY = X @ self.u_.T, Y @ self.u_.T
            for i in range(tau.size):
                periodic += tau[i] * h_periodic(PX[:, i][:, None] - PY[:, i][None, :], self.d_[i])
        else:
            # sum_j a_j cos(mu_ij (x - y)) = const + F(x) F(y)^T with cos/sin features: one GEMM
            a = fourier_coefficients(self.m)
            FX = self._trig_features(X, a, tau)
            FY = FX if same else self._trig_features(Y, a, tau)
            periodic = a[0] * tau.sum() + (FX @ FY.T if FX.shape[1] else 0.0)
        return tau0 * g0 + g1 * periodic

    def _trig_features(self, X, a, tau):
        if self.m == 0:
            return np.zeros((X.shape[0], 0))
        P = (X @ self.u_.T) / self.d_[None, :]  # (n, M): <u_i, x> / d_i
        j = np.arange(1, self.m + 1, dtype=np.float64)
        ang = 2.0 * np.pi * P[:, :, None] * j[None, None, :]  # (n, M, m)
        w = np.sqrt(tau[:, None] * a[None, 1:])[None]  # (1, M, m)
        return np.concatenate(
            [(w * np.cos(ang)).reshape(X.shape[0], -1), (w * np.sin(ang)).reshape(X.shape[0], -1)], axis=1
        )

    def diag_value(self) -> float:
        """``kappa(x, x)`` (1 for the exact kernel, ``Z < 1`` for kappa^m)."""
        self._check_fitted()
        if self.m is None:
            return float(self.tau_.sum())
        return float(self.tau_[0] + self.tau_[1:].sum() * fourier_coefficients(self.m).sum())

    # -- random features --------------------------------------------------------------------------
    def random_features(self, n_components: int = 500, random_state=None) -> "ConsolidationRandomFeatures":
        """An exact (unbiased) random-feature map for kappa^m; see :class:`ConsolidationRandomFeatures`."""
        return ConsolidationRandomFeatures(self, n_components, random_state)


class ConsolidationRandomFeatures:
    """Random Fourier features of kappa^m: ``z(x) = sqrt(Z / D) [cos(W x), sin(W x)]``.

    The rows of ``W`` are drawn from the normalised spectral measure of kappa^m (a Gaussian mixture), so
    ``E[z(x) . z(y)] = kappa^m(x, y)``.  Mixture components are allocated by systematic sampling (one uniform offset,
    ``D`` equally spaced points on the mixture CDF), so component ``c`` receives ``D pi_c`` frequencies in
    expectation; with equal weights ``Z / D`` this is unbiased and has lower variance than independent component
    draws.  The output has ``2 D`` columns.

    Parameters
    ----------
    kernel : ConsolidationKernel
        A fitted kappa^m (``m`` an integer).
    n_components : int, default 500
        Number of frequencies ``D``.
    random_state : int, Generator or None
        Seed of the frequencies.
    """

    def __init__(self, kernel: ConsolidationKernel, n_components: int = 500, random_state=None):
        kernel._check_fitted()
        if kernel.m is None:
            raise ValueError("random features are implemented for kappa^m (set m to an integer).")
        if isinstance(n_components, bool) or not isinstance(n_components, numbers.Integral) or n_components < 1:
            raise ValueError(f"n_components must be a positive integer; got {n_components!r}.")
        if np.isinf(kernel.sigma_dir):
            raise ValueError("random features need a finite sigma_dir (a Gaussian envelope).")
        rng = np.random.default_rng(random_state)
        p = kernel.directions_.shape[1]
        a = fourier_coefficients(kernel.m)
        M = kernel.n_directions
        weights = [kernel.tau_[0]]
        means = [np.zeros(p)]
        scales = [1.0 / kernel.sigma]
        if M:
            mu = kernel.mu().reshape(-1, p)  # (M (m+1), p)
            w = (kernel.tau_[1:, None] * a[None, :]).ravel()
            weights.extend(w.tolist())
            means.extend(list(mu))
            scales.extend([1.0 / kernel.sigma_dir] * mu.shape[0])
        weights = np.asarray(weights)
        Z = weights.sum()
        pi = weights / Z
        D = int(n_components)
        # systematic sampling of the mixture components: E[count_c] = D pi_c exactly, so equal
        # weights Z / D keep the estimator unbiased while spreading samples over components.
        u = (rng.uniform() + np.arange(D)) / D
        comp = np.minimum(np.searchsorted(np.cumsum(pi), u, side="right"), pi.size - 1)
        means = np.asarray(means)
        scales = np.asarray(scales)
        W = means[comp] + rng.standard_normal((D, p)) * scales[comp][:, None]
        self.W_ = W
        self.scale_ = np.full(D, np.sqrt(Z / D))
        self.Z_ = Z
        self.n_components = D

    def transform(self, X) -> np.ndarray:
        X = check_X(X, n_features=self.W_.shape[1])
        proj = X @ self.W_.T
        return np.hstack([np.cos(proj) * self.scale_, np.sin(proj) * self.scale_])
