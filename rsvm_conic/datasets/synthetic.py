"""Synthetic data for the linear robust models: two Gaussian classes with known noise."""

from __future__ import annotations

import numpy as np


def make_uncertain_classification(
    n_samples=1000, n_features=20, separation=1.0, noise_scale=0.3, n_groups=2, random_state=0
):
    """Two Gaussian classes observed through per-group noise of known covariance.

    Class means are +-separation/2 along a random unit direction; the clean points have identity covariance.
    Memory is O(L n + n_groups n^2): the noise is coloured one group at a time.

    Parameters
    ----------
    n_samples : int, default 1000
        Number of points L.
    n_features : int, default 20
        Dimension n.
    separation : float, default 1.0
        Distance between the class means.
    noise_scale : float, default 0.3
        Scale of the noise covariances.
    n_groups : int, default 2
        Number of noise groups (2 puts each class in its own group, 1 shares one covariance).
    random_state : int, default 0
        Seed.

    Returns
    -------
    X : ndarray of shape (L, n)
        The observed (noisy) points.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    Sigma : ndarray of shape (n_groups, n, n)
        The noise covariance of each group.
    groups : ndarray of int, shape (L,)
        The group of each sample.
    """
    rng = np.random.default_rng(random_state)
    L, n = int(n_samples), int(n_features)
    y = np.where(rng.random(L) < 0.5, -1.0, 1.0)
    direction = rng.standard_normal(n)
    direction /= np.linalg.norm(direction)
    clean = rng.standard_normal((L, n)) + 0.5 * separation * y[:, None] * direction
    if n_groups == 2:
        groups = (y > 0).astype(int)
    else:
        groups = rng.integers(0, n_groups, L)
    Sigma = np.empty((n_groups, n, n))
    for g in range(n_groups):
        B = rng.standard_normal((n, n)) / np.sqrt(n)
        Sigma[g] = noise_scale**2 * (B @ B.T + 0.1 * np.eye(n))
    chol = np.linalg.cholesky(Sigma)
    X = rng.standard_normal((L, n))  # noise draws, coloured in place one group at a time:
    for g in range(n_groups):  # memory O(L n + k n^2), never an (L, n, n) array
        idx = np.flatnonzero(groups == g)
        X[idx] = X[idx] @ chol[g].T
    X += clean
    return X, y, Sigma, groups


def train_test_split_arrays(arrays, test_fraction=0.25, random_state=0):
    """Split several aligned arrays (first axis = samples) the same way.

    Parameters
    ----------
    arrays : sequence of ndarray
        Arrays with the same first dimension.
    test_fraction : float, default 0.25
        Fraction of the samples in the test part.
    random_state : int, default 0
        Seed of the permutation.

    Returns
    -------
    train, test : list of ndarray
        The training and test parts of every array, in order.
    """
    L = arrays[0].shape[0]
    rng = np.random.default_rng(random_state)
    perm = rng.permutation(L)
    cut = L - int(round(test_fraction * L))
    tr, te = perm[:cut], perm[cut:]
    return [a[tr] for a in arrays], [a[te] for a in arrays]
