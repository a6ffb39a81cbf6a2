"""Error measures (flat module of plain functions).

[BBBB10], Sec. 4 and 5.1.3.  A classifier is scored on ``n_s``
sampled kernel rows per test point: ``F[s, t] = sum_j alpha_j y_j K^s_tj + b``.  The sign
convention is the package's: ``F >= 0`` predicts ``+1``.

Note on the paper: Table 1 is headed "accuracy (%)" and its rows are named after the errors
(ME, RE, NE); the numbers are accuracies, i.e. ``100 - error``.  Sec. 4 also describes
RobustErr as "the fraction of data points for which all the samples are classified correctly"
while eq. 19 counts the points with *some* misclassified sample; we implement eq. 19 (an error).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "sample_predictions",
    "nom_err",
    "maj_err",
    "robust_err",
    "kernel_robust_errors",
    "epsilon_effective",
    "quadratic_form_samples",
]


def _check_scores(F, y):
    F = np.asarray(F, dtype=float)
    if F.ndim == 1:
        F = F[None, :]
    if F.ndim != 2:
        raise ValueError(f"scores must have shape (n_samples, n_test); got {F.shape}.")
    y = np.asarray(y, dtype=float).ravel()
    if y.shape[0] != F.shape[1]:
        raise ValueError(f"y has {y.shape[0]} labels but the scores cover {F.shape[1]} test points.")
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError("y must hold labels in {-1, +1}.")
    if not np.all(np.isfinite(F)):
        raise ValueError("scores contain NaN or infinite values.")
    return F, y


def sample_predictions(F):
    """Labels ``f_t^s`` in {-1, +1} (``F >= 0`` -> +1)."""
    return np.where(np.asarray(F) >= 0, 1.0, -1.0)


def nom_err(F, y) -> float:
    """NomErr (eq. 20): percentage of (sample, test point) pairs misclassified."""
    F, y = _check_scores(F, y)
    return float(100.0 * np.mean(sample_predictions(F) != y[None, :]))


def maj_err(F, y) -> float:
    """MajErr (eq. 18): percentage of test points whose majority vote over samples is wrong.

    The vote is ``sign(sum_s f_t^s)``; a tie (possible for even ``n_s``) counts as an error.
    """
    F, y = _check_scores(F, y)
    vote = np.sum(sample_predictions(F), axis=0)
    return float(100.0 * np.mean(np.sign(vote) != y))


def robust_err(F, y) -> float:
    """RobustErr (eq. 19): percentage of test points with at least one misclassified sample."""
    F, y = _check_scores(F, y)
    return float(100.0 * np.mean(np.any(sample_predictions(F) != y[None, :], axis=0)))


def kernel_robust_errors(F, y) -> dict:
    """``{"NE": nom_err, "ME": maj_err, "RE": robust_err}`` for scores ``F`` (n_s, n_test)."""
    return {"NE": nom_err(F, y), "ME": maj_err(F, y), "RE": robust_err(F, y)}


def quadratic_form_samples(alpha, y, K_samples, chunk: int = 256) -> np.ndarray:
    """``alpha' Y K^s Y alpha`` for every sample ``K^s`` (array ``(S, n, n)``)."""
    v = np.asarray(alpha, dtype=float) * np.asarray(y, dtype=float)
    Ks = np.asarray(K_samples)
    if Ks.ndim != 3 or Ks.shape[1:] != (v.size, v.size):
        raise ValueError(f"K_samples must have shape (S, {v.size}, {v.size}); got {Ks.shape}.")
    out = np.empty(Ks.shape[0])
    for s in range(0, Ks.shape[0], chunk):
        out[s : s + chunk] = (Ks[s : s + chunk] @ v) @ v
    return out


def epsilon_effective(alpha, y, t, K_samples) -> float:
    """Sec. 5.1.3: fraction of samples with ``alpha' Y K^s Y alpha > t``.

    Theorems 1 and 3 promise ``epsilon_effective <= epsilon`` for the ``(alpha, t)`` solving (15)
    when the samples follow the noise model used to fit.
    """
    q = quadratic_form_samples(alpha, y, K_samples)
    return float(np.mean(q > float(t)))
