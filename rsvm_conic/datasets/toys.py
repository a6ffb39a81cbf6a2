"""Toy data sets from the papers.

``make_xor_thesis`` -- the XOR problem of [ElD19], Sec. 4.4.2: two classes, each made of
two subclasses, in the square [1, 9]^2, 20 points per subclass.  The thesis does not give
the subclass positions; we use the four quadrant squares of [1, 9]^2 (class 0 on the
diagonal quadrants [1,5)x[1,5) and [5,9]x[5,9], class 1 on the anti-diagonal ones), with
points uniform in a square of half-width ``spread`` around each quadrant centre
(3, 3), (7, 7), (3, 7), (7, 3).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_positive


def make_xor_thesis(n_per_subclass: int = 20, spread: float = 1.5, seed: int | None = 0):
    """The XOR toy of [ElD19], Sec. 4.4.2: four square clusters in [1, 9]^2, two per class on opposite quadrants.

    Parameters
    ----------
    n_per_subclass : int, default 20
        Points per quadrant.
    spread : float, default 1.5
        Half-width of each quadrant's square.
    seed : int or None, default 0
        Seed.

    Returns
    -------
    X : ndarray of shape (4 n_per_subclass, 2)
        The points.
    y : ndarray of shape (4 n_per_subclass,)
        Labels in {0, 1}.
    subclass : ndarray of shape (4 n_per_subclass,)
        The quadrant of each point, in {0, 1, 2, 3}.
    """
    if isinstance(n_per_subclass, bool) or not isinstance(n_per_subclass, (int, np.integer)) or n_per_subclass < 1:
        raise ValueError(f"n_per_subclass must be a positive integer; got {n_per_subclass!r}.")
    spread = check_positive(spread, "spread")
    if spread > 2.0:
        raise ValueError(f"spread must be <= 2 so that the points stay in [1, 9]^2; got {spread}.")
    rng = np.random.default_rng(seed)
    centres = np.array([[3.0, 3.0], [7.0, 7.0], [3.0, 7.0], [7.0, 3.0]])
    labels = np.array([0, 0, 1, 1])
    X = np.concatenate([c + rng.uniform(-spread, spread, size=(n_per_subclass, 2)) for c in centres])
    sub = np.repeat(np.arange(4), n_per_subclass)
    return X, labels[sub], sub
