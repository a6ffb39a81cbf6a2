"""Where a linear SVM's samples live, and the reductions over them that its formulation needs.

A linear SVM formulation (:mod:`rsvm_conic.formulations._linear`) holds one layout object and asks it for every
sum over samples that depends on where they are: :class:`InMemory` (numpy arrays) or :class:`RowBlocks`
(Dask arrays chunked along the rows, whose per-sample work runs on the row blocks of
:mod:`rsvm_conic.solvers.ipm.row_blocks`: nothing of size L is gathered).  The formulation's mathematics (its
objective, dual value and certificate) is the same for both; the layout says which routes run on its samples,
resolves the uncertainty on them, and computes the row-block versions of the objective's hinge sum, the dual
value and the rounding floor's sums.  :func:`samples_of` checks the samples at the public boundary and picks
the layout.  ``dask`` is imported only for Dask samples.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_dask_values, check_dask_X, check_X, dask_compute, dask_rows, is_dask_array

__all__ = ["InMemory", "RowBlocks", "samples_of"]


class InMemory:
    """Samples in numpy arrays: every route runs on them; the sums over them take the formulation's data fit.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        The samples.
    y : ndarray of shape (L,)
        The labels.
    """

    in_memory = True
    #: the routes that run on these samples (None: every route of the formulation)
    routes = None
    description = "in-memory samples"

    def __init__(self, X, y):
        self.X, self.y = X, y

    def resolve(self, uncertainty):
        """``uncertainty.resolve(L, n)`` for these samples."""
        return uncertainty.resolve(*self.X.shape)

    def hinge_total(self, w, b, fit, weights=None) -> float:
        """``sum_i s_i l_i(w, b)``, the data fit's losses summed with the weights ``s_i``.

        Parameters
        ----------
        w : ndarray of shape (n,)
            Weights.
        b : float
            Bias.
        fit : RobustHinge
            The data fit (:mod:`~rsvm_conic.solvers.datafits`; its robust term may be the formulation's own).
        weights : ndarray of shape (L,) or None, default=None
            The weights ``s_i`` (None: all 1).

        Returns
        -------
        float
        """
        Xw = self.X @ w + b
        return fit.value(self.y, w, Xw) if weights is None else float(weights @ fit.losses(self.y, w, Xw))

    def stochastic(self, fit, C: float, prox: bool, **options):
        """The stochastic proximal (``prox``) or subgradient method (:mod:`rsvm_conic.solvers.stochastic`) on
        ``1/2 ||w||^2 + C sum_i l_i(w, b)``, certified by the dual bound of its iterate.

        Parameters
        ----------
        fit : RobustHinge
            The data fit.
        C : float
            The weight of the losses.
        prox : bool
            The proximal method (else the subgradient method).
        **options
            The method's options.

        Returns
        -------
        (w, b) : tuple
            The point.
        certificate : SolveInfo
            Its certificate.
        info : dict
            ``epochs``, ``eta0``, ``history``, ``gap_history``.
        """
        from .penalties import L2Squared
        from .stochastic import stochastic_proximal, stochastic_subgradient

        method = stochastic_proximal if prox else stochastic_subgradient
        res = method(self.X, self.y, fit, L2Squared(1.0 / (C * self.X.shape[0])), **options)
        info = {"epochs": res.epochs, "eta0": res.eta0, "history": res.history, "gap_history": res.gap_history}
        return (res.w, res.b), res.info, info

    def max_sq_norm(self) -> float:
        """``max_i ||x_i||^2``."""
        return float((self.X * self.X).sum(axis=1).max())

    def score_sizes(self, w) -> tuple[float, float]:
        """``(max_i |x_i'w|, max |X|)``: the largest decision value without the intercept and the largest entry."""
        X = self.X
        return float(np.max(np.abs(X @ w))), max(float(np.max(X)), -float(np.min(X)))

    def rounding_sums(self, alpha, w):
        """``(sum |a|, X'(a y), |X|'|a|, sum |X||w|)`` (the sizes of the certificate's round-off)."""
        alpha = np.asarray(alpha, dtype=float)
        a = np.abs(alpha)
        absX = np.abs(self.X)
        return a.sum(), self.X.T @ (alpha * self.y), absX.T @ a, float((absX @ np.abs(w)).sum())


class RowBlocks:
    """Samples in Dask arrays chunked along the rows: the interior point and the stochastic routes run on the row
    blocks, and every sum over samples is one pass (or a few) over them.

    Parameters
    ----------
    X : dask.array.Array of shape (L, n)
        The samples, chunked along rows.
    y : dask.array.Array of shape (L,)
        The labels, with X's row chunks.
    """

    in_memory = False
    routes = ("ipm", "sgd", "prox")
    description = "samples given as a Dask array"

    def __init__(self, X, y):
        self.X, self.y = X, y

    def resolve(self, uncertainty):
        """The resolved uncertainty with its per-sample arrays on X's row chunks
        (:func:`~rsvm_conic.solvers.ipm.row_blocks.resolve_uncertainty`)."""
        from .ipm.row_blocks import resolve_uncertainty

        return resolve_uncertainty(uncertainty, self.X)

    def hinge_total(self, w, b, unc, weights=None) -> float:
        """``sum_i max{0, 1 - y_i (<w, x_i> + b) + gamma_i ||A_g(i)' w||_q}``, one pass (``unc``: the resolved
        uncertainty on the row blocks; ``weights`` must be None: row blocks take no sample weights)."""
        from .ipm.row_blocks import hinge_sum

        return hinge_sum(self.X, self.y, w, b, unc)[0]

    def dual_value(self, alpha, w, C: float, unc, improve_u=None) -> float:
        """The certificate's dual value at the projection of ``alpha``
        (:func:`~rsvm_conic.solvers.ipm.row_blocks.dual_value_rows`)."""
        from .ipm.row_blocks import dual_value_rows

        return dual_value_rows(self.X, self.y, alpha, w, C, unc, improve_u)

    def max_sq_norm(self) -> float:
        """``max_i ||x_i||^2``, one pass."""
        (sq,) = dask_compute((self.X * self.X).sum(axis=1).max())
        return float(sq)

    def score_sizes(self, w) -> tuple[float, float]:
        """:meth:`InMemory.score_sizes` in one pass."""
        score, size = dask_compute(abs(self.X @ w).max(), abs(self.X).max())
        return float(score), float(size)

    def rounding_sums(self, alpha, w):
        """:meth:`InMemory.rounding_sums` in one pass."""
        a, absX = abs(alpha), abs(self.X)
        s, v, av, m = dask_compute(a.sum(), self.X.T @ (alpha * self.y), absX.T @ a, (absX @ np.abs(w)).sum())
        return s, v, av, float(m)

    def stochastic(self, unc, C: float, prox: bool, **options):
        """The stochastic routes by iterative parameter mixing over the blocks, certified there
        (:func:`~rsvm_conic.solvers.dask_stochastic.stochastic_mixing`; ``unc``: the resolved uncertainty on the row
        blocks): ``((w, b), certificate, info)`` as :meth:`InMemory.stochastic`, ``info`` with ``rounds``, ``eta0``
        and ``gap_history``."""
        from .dask_stochastic import stochastic_mixing

        (w, b), cert, history = stochastic_mixing(self.X, self.y, unc, C, prox=prox, **options)
        return (w, b), cert, {"rounds": cert.detail["rounds"], "eta0": cert.detail["eta0"], "gap_history": history}


def samples_of(X, y, check_input: bool = True, labels_message: str = ""):
    """The layout of the samples ``X`` (numpy or Dask) with labels ``y`` in {-1, +1}.

    Parameters
    ----------
    X : array (L, n) or Dask array chunked along rows
        The samples.
    y : array (L,)
        Labels in {-1, +1} (a Dask array with X's row chunks for Dask samples).
    check_input : bool
        Check the samples and labels (Dask: shapes now, values in one pass, nothing gathered); False for trusted
        arrays.
    labels_message : str
        The ValueError's message when ``y`` is not one -1/+1 label per row.

    Returns
    -------
    InMemory or RowBlocks
        The layout, holding the (checked) ``X`` and ``y``.
    """
    if is_dask_array(X):
        if check_input:
            X = check_dask_X(X, finite=False)
            y = dask_rows(y, X, "y")
            check_dask_values({"X": ("data", X, None), "y": ("pm", y, labels_message)})
        return RowBlocks(X, y)
    if check_input:
        X = check_X(X)
        y = np.asarray(y, dtype=float)
        if y.shape != (X.shape[0],) or not np.all(np.isin(y, (-1.0, 1.0))):
            raise ValueError(labels_message)
    return InMemory(X, y)
