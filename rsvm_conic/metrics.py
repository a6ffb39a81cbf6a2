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
    """Labels ``f_t^s`` in {-1, +1} of decision values (``F >= 0`` predicts +1).

    Parameters
    ----------
    F : array-like
        Decision values, any shape.

    Returns
    -------
    ndarray of float
        ``+1.0`` where ``F >= 0``, else ``-1.0``, with the shape of ``F``.
    """
    return np.where(np.asarray(F) >= 0, 1.0, -1.0)


def nom_err(F, y) -> float:
    """NomErr ([BBBB10], eq. 20): percentage of (sample, test point) pairs misclassified.

    Parameters
    ----------
    F : array-like of shape (n_s, n_test) or (n_test,)
        Decision values ``F[s, t]`` of test point ``t`` on sampled kernel row ``s``; one row if 1-D.
    y : array-like of shape (n_test,)
        True labels in {-1, +1}.

    Returns
    -------
    float
        The error in percent, in [0, 100].

    Raises
    ------
    ValueError
        If the shapes disagree, a label is not in {-1, +1} or a score is not finite.
    """
    F, y = _check_scores(F, y)
    return float(100.0 * np.mean(sample_predictions(F) != y[None, :]))


def maj_err(F, y) -> float:
    """MajErr ([BBBB10], eq. 18): percentage of test points whose majority vote over samples is wrong.

    The vote is ``sign(sum_s f_t^s)``; a tie (possible for even ``n_s``) counts as an error.

    Parameters
    ----------
    F : array-like of shape (n_s, n_test) or (n_test,)
        Decision values ``F[s, t]`` of test point ``t`` on sampled kernel row ``s``; one row if 1-D.
    y : array-like of shape (n_test,)
        True labels in {-1, +1}.

    Returns
    -------
    float
        The error in percent, in [0, 100].

    Raises
    ------
    ValueError
        If the shapes disagree, a label is not in {-1, +1} or a score is not finite.
    """
    F, y = _check_scores(F, y)
    vote = np.sum(sample_predictions(F), axis=0)
    return float(100.0 * np.mean(np.sign(vote) != y))


def robust_err(F, y) -> float:
    """RobustErr ([BBBB10], eq. 19): percentage of test points with at least one misclassified sample.

    Parameters
    ----------
    F : array-like of shape (n_s, n_test) or (n_test,)
        Decision values ``F[s, t]`` of test point ``t`` on sampled kernel row ``s``; one row if 1-D.
    y : array-like of shape (n_test,)
        True labels in {-1, +1}.

    Returns
    -------
    float
        The error in percent, in [0, 100].

    Raises
    ------
    ValueError
        If the shapes disagree, a label is not in {-1, +1} or a score is not finite.
    """
    F, y = _check_scores(F, y)
    return float(100.0 * np.mean(np.any(sample_predictions(F) != y[None, :], axis=0)))


def kernel_robust_errors(F, y) -> dict:
    """The three errors of [BBBB10], Sec. 4 for one set of scores.

    Parameters
    ----------
    F : array-like of shape (n_s, n_test) or (n_test,)
        Decision values ``F[s, t]`` of test point ``t`` on sampled kernel row ``s``; one row if 1-D.
    y : array-like of shape (n_test,)
        True labels in {-1, +1}.

    Returns
    -------
    dict
        ``{"NE": nom_err(F, y), "ME": maj_err(F, y), "RE": robust_err(F, y)}``, in percent.
    """
    return {"NE": nom_err(F, y), "ME": maj_err(F, y), "RE": robust_err(F, y)}


def quadratic_form_samples(alpha, y, K_samples, chunk: int = 256) -> np.ndarray:
    """``alpha' Y K^s Y alpha`` for every sampled kernel matrix ``K^s``.

    Parameters
    ----------
    alpha, y : array-like of shape (n,)
        Dual coefficients and labels in {-1, +1}.
    K_samples : array-like of shape (S, n, n)
        The sampled kernel matrices.
    chunk : int, default 256
        Number of samples multiplied at a time (bounds the temporary memory).

    Returns
    -------
    ndarray of shape (S,)
        The quadratic form of each sample.

    Raises
    ------
    ValueError
        If ``K_samples`` is not of shape (S, n, n).
    """
    v = np.asarray(alpha, dtype=float) * np.asarray(y, dtype=float)
    Ks = np.asarray(K_samples)
    if Ks.ndim != 3 or Ks.shape[1:] != (v.size, v.size):
        raise ValueError(f"K_samples must have shape (S, {v.size}, {v.size}); got {Ks.shape}.")
    out = np.empty(Ks.shape[0])
    for s in range(0, Ks.shape[0], chunk):
        out[s : s + chunk] = (Ks[s : s + chunk] @ v) @ v
    return out


def epsilon_effective(alpha, y, t, K_samples) -> float:
    """[BBBB10], Sec. 5.1.3: fraction of kernel samples with ``alpha' Y K^s Y alpha > t``.

    Theorems 1 and 3 promise ``epsilon_effective <= epsilon`` for the ``(alpha, t)`` solving (15)
    when the samples follow the noise model used to fit.

    Parameters
    ----------
    alpha, y : array-like of shape (n,)
        Dual coefficients and labels in {-1, +1}.
    t : float
        The bound on the quadratic form found by the fit.
    K_samples : array-like of shape (S, n, n)
        Kernel matrices sampled from the noise model.

    Returns
    -------
    float
        The fraction of samples violating the bound, in [0, 1].
    """
    q = quadratic_form_samples(alpha, y, K_samples)
    return float(np.mean(q > float(t)))
