"""2-D figures for teaching: decision boundaries, decision regions, uncertainty ellipsoids.

Small helpers used by the notebooks (``notebooks/``) and the reproductions' figures.  matplotlib is the
optional ``plot`` extra (``pip install "rsvm-conic[plot]"``); the helpers draw on the ``ax`` you pass, so
importing this module needs no matplotlib, and :func:`require_matplotlib` is the one check that it is installed.

* :func:`require_matplotlib` -- matplotlib, or an ImportError naming the extra that installs it,

* :func:`ellipse_points` -- the boundary of ``{c + radius * A u : ||u||_2 <= 1}``, ``A A^T = Sigma``,
* :func:`plot_uncertainty_ellipses` -- one such ellipse around every sample,
* :func:`plot_decision_boundary` -- level sets ``f = -1, 0, +1`` of a binary decision function,
* :func:`plot_decision_regions` -- coloured regions of a (multi-class) predictor.
"""

from __future__ import annotations

import numpy as np

from .uncertainty.sets import psd_sqrt


#: the one line a missing matplotlib gives (:func:`require_matplotlib`)
MISSING_MATPLOTLIB = 'figures need matplotlib, the plot extra: pip install "rsvm-conic[plot]"'


def require_matplotlib():
    """Import and return :mod:`matplotlib`.

    Returns
    -------
    module
        The :mod:`matplotlib` package.

    Raises
    ------
    ImportError
        When matplotlib is not installed: one line naming the extra that installs it (``exc.name`` is
        ``"matplotlib"``).
    """
    try:
        import matplotlib
    except ImportError:
        raise ImportError(MISSING_MATPLOTLIB, name="matplotlib") from None
    return matplotlib


def _check_2d(X, name="X"):
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"{name} must have shape (n_samples, 2) for a 2-D plot; got {X.shape}.")
    return X


def ellipse_points(center, Sigma, radius=1.0, n_points=100) -> np.ndarray:
    """Points on the boundary of ``{center + radius * A u : ||u||_2 <= 1}`` with ``A A^T = Sigma``.

    Parameters
    ----------
    center : array-like of shape (2,)
        Centre of the ellipse.
    Sigma : array-like of shape (2, 2)
        Positive semi-definite shape matrix.
    radius : float, default 1.0
        Scale of the ellipse.
    n_points : int, default 100
        Number of points.

    Returns
    -------
    ndarray of shape (n_points, 2)
        The boundary points, in order.
    """
    center = np.asarray(center, dtype=float).reshape(2)
    Sigma = np.asarray(Sigma, dtype=float)
    if Sigma.shape != (2, 2):
        raise ValueError(f"Sigma must be a 2x2 matrix; got shape {Sigma.shape}.")
    if radius < 0:
        raise ValueError(f"radius must be >= 0; got {radius}.")
    A = psd_sqrt(Sigma)
    t = np.linspace(0.0, 2.0 * np.pi, int(n_points))
    return center + radius * np.column_stack([np.cos(t), np.sin(t)]) @ A.T


def plot_uncertainty_ellipses(ax, X, Sigma, groups=None, radius=1.0, colors=None, **line_kw):
    """Draw the uncertainty ellipse of every sample.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes drawn on.
    X : array-like of shape (L, 2)
        The samples (the ellipses' centres).
    Sigma : array-like of shape (2, 2), (k, 2, 2) or (L, 2, 2)
        One shared matrix, one per group (with ``groups``) or one per sample (``groups=None``).
    groups : array-like of shape (L,), optional
        Group index in ``0..k-1`` of each sample, for a (k, 2, 2) ``Sigma``.
    radius : float, default 1.0
        Scale of every ellipse.
    colors : sequence, optional
        One colour per sample (default: matplotlib's colour cycle).
    **line_kw
        Passed to ``ax.plot``.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``.
    """
    X = _check_2d(X)
    Sigma = np.asarray(Sigma, dtype=float)
    if Sigma.shape == (2, 2):
        S = np.broadcast_to(Sigma, (len(X), 2, 2))
    elif Sigma.ndim == 3 and groups is not None:
        S = Sigma[np.asarray(groups, dtype=int)]
    elif Sigma.ndim == 3 and Sigma.shape[0] == len(X):
        S = Sigma
    else:
        raise ValueError(
            "Sigma must be (2, 2), (k, 2, 2) with groups, or (n_samples, 2, 2); "
            f"got {Sigma.shape} with groups={'given' if groups is not None else 'None'}."
        )
    line_kw = {"lw": 0.6, "alpha": 0.6, **line_kw}
    for i, (x, s) in enumerate(zip(X, S)):
        P = ellipse_points(x, s, radius)
        ax.plot(P[:, 0], P[:, 1], color=None if colors is None else colors[i], **line_kw)
    return ax


def _grid(X, grid, margin):
    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = margin * (hi - lo + 1e-12)
    xx, yy = np.meshgrid(
        np.linspace(lo[0] - pad[0], hi[0] + pad[0], grid), np.linspace(lo[1] - pad[1], hi[1] + pad[1], grid)
    )
    return xx, yy, np.column_stack([xx.ravel(), yy.ravel()])


def plot_decision_boundary(
    ax, decision_function, X, y=None, grid=200, margin=0.1, levels=(-1.0, 0.0, 1.0), color="k", label=None, scatter=True
):
    """Contour the level sets of a binary decision function over the data's box.

    The 0 level is solid, the margins dashed.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes drawn on.
    decision_function : callable
        Maps points (m, 2) to decision values (m,).
    X : array-like of shape (L, 2)
        The data, whose bounding box (widened by ``margin``) is contoured.
    y : array-like of shape (L,), optional
        Labels; with ``scatter``, the samples are drawn coloured by label.
    grid : int, default 200
        Grid points per axis.
    margin : float, default 0.1
        Fraction of the box's size added on each side.
    levels : tuple of float, default (-1.0, 0.0, 1.0)
        The level sets drawn.
    color : str, default "k"
        Colour of the contours.
    label : str, optional
        Legend label of the 0 level.
    scatter : bool, default True
        Draw the samples when ``y`` is given.

    Returns
    -------
    matplotlib.contour.QuadContourSet
        The contour set.
    """
    X = _check_2d(X)
    xx, yy, P = _grid(X, grid, margin)
    Z = np.asarray(decision_function(P), dtype=float).reshape(xx.shape)
    styles = ["--" if lv != 0 else "-" for lv in levels]
    cs = ax.contour(
        xx,
        yy,
        Z,
        levels=sorted(levels),
        colors=color,
        linestyles=[s for _, s in sorted(zip(levels, styles))],
        linewidths=1.2,
    )
    if label is not None:
        ax.plot([], [], color=color, label=label)
    if scatter and y is not None:
        ax.scatter(X[:, 0], X[:, 1], c=np.asarray(y), cmap="coolwarm", s=12, edgecolors="k", linewidths=0.3)
    return cs


def plot_decision_regions(ax, predict, X, y=None, grid=200, margin=0.1, cmap="Pastel1", scatter_cmap="Set1"):
    """Colour the plane by the labels a classifier predicts (any number of classes).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes drawn on.
    predict : callable
        Maps points (m, 2) to labels (m,).
    X : array-like of shape (L, 2)
        The data, whose bounding box (widened by ``margin``) is coloured.
    y : array-like of shape (L,), optional
        Labels; if given, the samples are drawn coloured by label.
    grid : int, default 200
        Grid points per axis.
    margin : float, default 0.1
        Fraction of the box's size added on each side.
    cmap, scatter_cmap : str, default "Pastel1", "Set1"
        Colour maps of the regions and of the samples.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``.
    """
    X = _check_2d(X)
    xx, yy, P = _grid(X, grid, margin)
    labels = np.asarray(predict(P))
    classes, codes = np.unique(labels if y is None else np.concatenate([np.asarray(y), labels]), return_inverse=True)
    Z = codes[-len(P) :].reshape(xx.shape)
    ax.contourf(xx, yy, Z, levels=np.arange(len(classes) + 1) - 0.5, cmap=cmap, alpha=0.8)
    if y is not None:
        ax.scatter(
            X[:, 0],
            X[:, 1],
            c=codes[: len(X)],
            cmap=scatter_cmap,
            s=12,
            edgecolors="k",
            linewidths=0.3,
            vmin=0,
            vmax=max(len(classes) - 1, 1),
        )
    return ax
