"""Covariances under a per-feature rescaling of the data (e.g. scikit-learn's ``StandardScaler``).

A noise covariance is in the units of X squared.  A scaler that maps ``x -> D^-1 (x - c)`` with ``D =
diag(scale_)`` maps a perturbation ``dx`` of covariance ``Sigma`` to ``D^-1 dx``, of covariance
``D^-1 Sigma D^-1``; a model fitted on the scaled data needs that covariance.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_finite_array


def _feature_factors(scaler) -> np.ndarray:
    """The per-feature factor ``f`` with ``x_scaled = f * x + const``."""
    if hasattr(scaler, "scale_"):
        from sklearn.preprocessing import MinMaxScaler

        scale = getattr(scaler, "scale_", None)
        if scale is None:  # StandardScaler(with_std=False): no rescaling
            return np.ones(int(scaler.n_features_in_))
        scale = check_finite_array(scale, "scaler.scale_", ndim=1)
        return scale if isinstance(scaler, MinMaxScaler) else 1.0 / scale  # MinMaxScaler multiplies by scale_
    if hasattr(scaler, "fit") and hasattr(scaler, "transform"):
        raise ValueError(
            f"scaler must be fitted and rescale each feature (scale_ attribute, e.g. StandardScaler, MaxAbsScaler, "
            f"RobustScaler, MinMaxScaler); got {type(scaler).__name__} without scale_ (fit it first)."
        )
    scale = check_finite_array(scaler, "scale", ndim=1)
    if np.any(scale <= 0):
        raise ValueError("scale must hold positive per-feature divisors (x_scaled = x / scale).")
    return 1.0 / scale


def scale_covariance(Sigma, scaler, *, diagonal: bool | None = None) -> np.ndarray:
    """The covariance ``D^-1 Sigma D^-1`` of the noise after the data are rescaled by ``scaler``.

    Parameters
    ----------
    Sigma : array-like of shape (n,), (n, n), (k, n) or (k, n, n)
        Noise covariances in the units of X squared: a diagonal, a matrix, a diagonal per row, a matrix per
        row (the shapes the estimators' ``fit`` takes).
    scaler : fitted scikit-learn scaler or array-like of shape (n,)
        A fitted ``StandardScaler``, ``RobustScaler``, ``MaxAbsScaler`` (``x -> (x - c) / scale_``) or
        ``MinMaxScaler`` (``x -> x * scale_ + min_``); or the per-feature divisors ``D`` themselves
        (``x -> x / D``).
    diagonal : bool or None, default=None
        Whether a 2-D Sigma holds diagonals (one per row) rather than one matrix; None: a square (n, n) Sigma
        is a matrix, any other 2-D shape holds diagonals.

    Returns
    -------
    ndarray
        The covariances of the scaled noise, shaped as ``Sigma``: ``Sigma_jl / (D_j D_l)`` (diagonals:
        ``Sigma_j / D_j^2``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import StandardScaler
    >>> X = np.array([[0.0, 0.0], [2.0, 20.0]])
    >>> scale_covariance(np.diag([1.0, 100.0]), StandardScaler().fit(X))
    array([[1., 0.],
           [0., 1.]])
    """
    S = check_finite_array(Sigma, "Sigma", ndim=(1, 2, 3))
    f = _feature_factors(scaler)
    n = f.shape[0]
    if S.shape[-1] != n:
        raise ValueError(f"Sigma has {S.shape[-1]} features per row but the scaler has {n}.")
    if diagonal is None:
        diagonal = S.ndim == 1 or (S.ndim == 2 and S.shape != (n, n))
    if diagonal:
        if S.ndim == 3:
            raise ValueError("diagonal=True needs a 1-D or 2-D Sigma (diagonals); got a 3-D one.")
        return S * (f * f)
    if S.shape[-2:] != (n, n):
        raise ValueError(f"Sigma matrices must be {n} x {n}; got shape {S.shape}.")
    return S * f[:, None] * f[None, :]
