"""Synthetic data for the linear robust models: two Gaussian classes with known noise."""

from __future__ import annotations

import numpy as np


def make_uncertain_classification(
    n_samples=1000, n_features=20, separation=1.0, noise_scale=0.3, n_groups=2, random_state=0
):
    """Two Gaussian classes observed through per-group noise of known covariance.

    Returns ``X, y, Sigma, groups``: ``X`` the observed (noisy) points, ``y`` in
    {-1, +1}, ``Sigma`` of shape (n_groups, n, n) the noise covariance of each group
    and ``groups`` the group of each sample (``n_groups=2`` puts each class in its
    own group, ``1`` shares one covariance).  Class means are +-separation/2 along a
    random unit direction; the clean points have identity covariance.  Memory is
    O(L n + n_groups n^2): the noise is coloured one group at a time.
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
    """Split several aligned arrays (first axis = samples) the same way."""
    L = arrays[0].shape[0]
    rng = np.random.default_rng(random_state)
    perm = rng.permutation(L)
    cut = L - int(round(test_fraction * L))
    tr, te = perm[:cut], perm[cut:]
    return [a[tr] for a in arrays], [a[te] for a in arrays]
