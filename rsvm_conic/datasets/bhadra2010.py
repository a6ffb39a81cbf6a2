"""Synthetic noisy-kernel data of [BBBB10], Sec. 5.1.

Two classes of ``n_per_class`` points from a Gaussian mixture, a linear kernel
``K_bar = X X'``, and ``n_samples`` noisy kernels ``K^s = K_bar + l * Z^s`` with
``Z^s_ij`` i.i.d. from a base law: ``"gaussian"`` N(0, 1), ``"uniform"`` U[-0.5, 0.5],
``"beta"`` Beta(0.5, 0.5) - 0.5, ``"beta55"`` Beta(5, 5) - 0.5 (used in Fig. 3), and
``l_ij = l_ji = scale * |K_bar_ij|`` (the paper: ``l_ij = 0.25 K_ij``; a linear kernel can be
negative, so we take the absolute value).

Choices the paper leaves open (documented, fixed by the seed):

* the mixture: 2-D, one isotropic Gaussian per class (std 0.7) with means
  ``center +- sep * u``, ``center = (2, 2)``, ``u = (1, -1)/sqrt(2)``, ``sep = 1.5``.  The
  classes sit away from the origin, so the kernel values (and with them the noise
  ``l = 0.25 |K|``) are large compared with the class separation -- the regime in which
  the paper's nominal SVM breaks down (Table 1).  With classes centred at the origin the
  nominal SVM at C = 0.1 stays near 97 % accurate under this noise (measured), unlike the
  paper's 53-59 % NomErr accuracy;
* all ``n^2`` noise entries are drawn independently (the independence Lemma 1 and
  Theorem 2 assume), so ``K^s`` is not symmetric -- as the paper allows ("not necessarily
  psd and symmetric").  ``symmetric=True`` draws one value per pair instead;
* ``iid=True`` (Fig. 2) uses one common ``l = scale * mean |K_bar|`` for every entry;
* the multiplier: Sec. 5.1 first multiplies the noise "by a random ``l_ij`` (``l_ij = l_ji``)", then says
  it "chose ``l_ij = 0.25 * K_ij``".  ``multiplier="fixed"`` (default) reads the second sentence;
  ``multiplier="random"`` the first: ``l_ij = l_ji = scale * |K_bar_ij| * u_ij`` with ``u_ij = u_ji ~ U(0, 1)``
  drawn once per data set (after the points, so the same seed gives the same points), i.e. at most the
  stated ``0.25 |K_ij|``;
* the data scale, which the paper never states: ``data_scale`` multiplies the points (after the
  seeded draws, so the same seed gives the same points up to the factor).  It matters only through
  ``C``: scaling the points by ``s`` scales ``K_bar``, ``l`` and every noisy kernel by ``s^2`` and
  ``beta`` by ``s^4``, which is exactly the problem at scale 1 with ``C`` multiplied by ``s^2`` (same
  predictions, objective times ``s^2``; ``tests/test_bhadra_reproduction.py`` checks it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rsvm_conic._validation import check_positive

__all__ = ["NOISE_LAWS", "MULTIPLIERS", "base_noise", "noise_std", "BhadraData", "make_bhadra2010", "sample_kernels"]

NOISE_LAWS = ("gaussian", "uniform", "beta", "beta55")
MULTIPLIERS = ("fixed", "random")


def base_noise(rng: np.random.Generator, law: str, size) -> np.ndarray:
    """Centred draws of the base law (before multiplication by ``l``).

    Parameters
    ----------
    rng : numpy.random.Generator
        The random stream.
    law : {"gaussian", "uniform", "beta", "beta55"}
        The base law (see the module docstring).
    size : int or tuple of int
        Shape of the draws.

    Returns
    -------
    ndarray
        The draws, mean 0.
    """
    if law == "gaussian":
        return rng.standard_normal(size)
    if law == "uniform":
        return rng.uniform(-0.5, 0.5, size)
    if law == "beta":
        return rng.beta(0.5, 0.5, size) - 0.5
    if law == "beta55":
        return rng.beta(5.0, 5.0, size) - 0.5
    raise ValueError(f"law must be one of {NOISE_LAWS}; got {law!r}.")


def noise_std(law: str) -> float:
    """Standard deviation of the base law.

    Parameters
    ----------
    law : {"gaussian", "uniform", "beta", "beta55"}
        The base law (see the module docstring).

    Returns
    -------
    float
    """
    return {"gaussian": 1.0, "uniform": np.sqrt(1 / 12), "beta": np.sqrt(1 / 8), "beta55": np.sqrt(25 / (100 * 11))}[
        law
    ]


@dataclass
class BhadraData:
    """One synthetic data set of [BBBB10], Sec. 5.1 (from :func:`make_bhadra2010`).

    Attributes
    ----------
    X : ndarray of shape (2 n_per_class, 2)
        The points.
    y : ndarray of shape (2 n_per_class,)
        Labels in {-1, +1}.
    K_bar : ndarray of shape (L, L)
        The clean linear kernel ``X X'``.
    l : ndarray of shape (L, L)
        The noise multipliers ``l_ij``.
    law : str
        The base law of the noise.
    K_samples : ndarray of shape (n_samples, L, L) or None
        The noisy kernels ``K_bar + l * Z^s``.
    """

    X: np.ndarray
    y: np.ndarray
    K_bar: np.ndarray
    l: np.ndarray
    law: str
    K_samples: np.ndarray | None = None


def make_bhadra2010(
    seed: int,
    law: str = "gaussian",
    *,
    n_per_class: int = 100,
    n_samples: int = 100,
    scale: float = 0.25,
    iid: bool = False,
    symmetric: bool = False,
    std: float = 0.7,
    center=(2.0, 2.0),
    sep: float = 1.5,
    data_scale: float = 1.0,
    multiplier: str = "fixed",
    dtype=np.float64,
) -> BhadraData:
    """One synthetic data set: points, clean linear kernel and ``n_samples`` noisy kernels.

    Parameters
    ----------
    seed : int
        Seed of everything drawn.
    law : {"gaussian", "uniform", "beta", "beta55"}
        The base law (see the module docstring).
    n_per_class : int, default 100
        Points per class.
    n_samples : int, default 100
        Noisy kernels drawn.
    scale : float, default 0.25
        ``l_ij = scale * |K_bar_ij|`` (or ``scale * mean |K_bar|`` with ``iid``).
    iid : bool, default False
        One common multiplier for every entry ([BBBB10], Fig. 2).
    symmetric : bool, default False
        One noise value per pair ``(i, j)``, so that every ``K^s`` is symmetric.
    std : float, default 0.7
        Standard deviation of each class's Gaussian.
    center : tuple of float, default (2.0, 2.0)
        Midpoint of the two class means.
    sep : float, default 1.5
        The class means are ``center +- sep * u`` with ``u = (1, -1) / sqrt(2)``.
    data_scale : float, default 1.0
        Factor applied to the points after the draws (equivalent to multiplying ``C`` by its square).
    multiplier : {"fixed", "random"}, default "fixed"
        ``"random"`` multiplies ``l`` by ``u_ij = u_ji ~ U(0, 1)``, drawn once per data set.
    dtype : numpy dtype, default float64
        Type of the noisy kernels.

    Returns
    -------
    BhadraData
        The data set.

    Raises
    ------
    ValueError
        If ``law`` or ``multiplier`` is not one of the choices, or ``data_scale`` is not positive.
    """
    if law not in NOISE_LAWS:
        raise ValueError(f"law must be one of {NOISE_LAWS}; got {law!r}.")
    if multiplier not in MULTIPLIERS:
        raise ValueError(f"multiplier must be one of {MULTIPLIERS}; got {multiplier!r}.")
    data_scale = check_positive(data_scale, "data_scale")
    rng = np.random.default_rng(seed)
    center = np.asarray(center, dtype=float)
    u = np.array([1.0, -1.0]) / np.sqrt(2.0)
    Xs, ys = [], []
    for label in (1.0, -1.0):
        Xs.append(center + label * sep * u + std * rng.standard_normal((n_per_class, 2)))
        ys.append(np.full(n_per_class, label))
    X = np.vstack(Xs)
    y = np.concatenate(ys)
    perm = rng.permutation(X.shape[0])
    X, y = data_scale * X[perm], y[perm]
    K_bar = X @ X.T
    if iid:
        l = np.full_like(K_bar, scale * float(np.mean(np.abs(K_bar))))
    else:
        l = scale * np.abs(K_bar)
    if multiplier == "random":
        u = np.triu(rng.uniform(0.0, 1.0, K_bar.shape))
        l = l * (u + np.triu(u, 1).T)
    data = BhadraData(X, y, K_bar, l, law)
    data.K_samples = sample_kernels(rng, K_bar, l, law, n_samples, symmetric=symmetric, dtype=dtype)
    return data


def sample_kernels(
    rng, K_bar, l, law, n_samples, *, noise_scale: float = 1.0, symmetric: bool = False, dtype=np.float64
) -> np.ndarray:
    """Noisy kernels ``K^s = K_bar + noise_scale * l * Z^s`` for ``s = 1..n_samples``.

    Parameters
    ----------
    rng : numpy.random.Generator
        The random stream.
    K_bar : ndarray of shape (n, m)
        The clean kernel.
    l : ndarray of shape (n, m)
        The noise multipliers.
    law : {"gaussian", "uniform", "beta", "beta55"}
        The base law (see the module docstring).
    n_samples : int
        Number of kernels drawn.
    noise_scale : float, default 1.0
        Factor applied to the noise.
    symmetric : bool, default False
        One noise value per pair (needs a square ``K_bar``).
    dtype : numpy dtype, default float64
        Type of the result.

    Returns
    -------
    ndarray of shape (n_samples, n, m)
        The noisy kernels.

    Raises
    ------
    ValueError
        If ``symmetric`` and ``K_bar`` is not square.
    """
    Z = base_noise(rng, law, (n_samples,) + K_bar.shape)
    if symmetric:
        if K_bar.shape[0] != K_bar.shape[1]:
            raise ValueError("symmetric noise needs a square K_bar.")
        Z = np.triu(Z) + np.swapaxes(np.triu(Z, 1), 1, 2)
    out = (K_bar[None] + noise_scale * l[None] * Z).astype(dtype, copy=False)
    return out
