"""The rows the Weston-Watkins feature solvers run on, for an exact Gram matrix or explicit features.

Every feature solver (:func:`~rsvm_conic.solvers.multiclass.ww_dual_cd`, :func:`~rsvm_conic.solvers.multiclass.
ww_primal_alm`, :func:`~rsvm_conic.solvers.multiclass.ww_primal_lbfgs`) keeps ``W`` in the span of its rows and uses
only inner products of rows with rows and with ``W``, so any rows with the same Gram matrix give the same model:
:class:`FeatureRows` picks the cheapest and maps the solver's ``W`` back to the model's coefficients.
"""

from __future__ import annotations

import time

import numpy as np

from .cd import ww_threads
from .certificate import gram_rows

__all__ = ["ROW_SPACE_RATIO", "FeatureRows"]

#: feature solvers run on the rows' own coordinates (a thin QR factor) when n <= ROW_SPACE_RATIO * D: the
#: factorisation costs about as much as 10-20 passes over Phi and each later pass then costs n / D of one
ROW_SPACE_RATIO = 0.7


class FeatureRows:
    """The feature rows of one training set (give exactly one of ``K`` and ``Phi``), factorised once.

    Parameters
    ----------
    K : ndarray of shape (n, n) or None, default=None
        The exact Gram matrix (symmetric PSD, trusted).
    Phi : ndarray of shape (n, D) or None, default=None
        Explicit features (trusted).
    """

    def __init__(self, K=None, Phi=None):
        self.K, self.Phi = K, Phi
        self._factor = None  # gram_rows(K): the feature routes and the dual QP's fallback share it
        self._qr = None  # thin QR of Phi' (features with n <= ROW_SPACE_RATIO D)

    def kernel_rows(self):
        """:func:`~rsvm_conic.solvers.multiclass.certificate.gram_rows` of ``K`` (pivoted Cholesky rows), once.

        Returns
        -------
        tuple
            ``(F, back)`` with ``F F' = K`` and ``back(W) -> coef``.
        """
        if self._factor is None:
            self._factor = gram_rows(self.K)
        return self._factor

    def rows(self):
        """``(F, back)``: the rows the feature solvers run on and the map from their ``W`` to the coefficients.

        Exact kernel: :meth:`kernel_rows` (``F F' = K`` by pivoted Cholesky, ``coef`` the kernel expansion).
        Features with fewer samples than columns (``n <= ROW_SPACE_RATIO D``): ``F = R'`` from the thin QR
        factorisation ``Phi' = Q R``, ``coef = Q W`` (``Q`` preserves the inner products, so the iterates are those on
        ``Phi`` up to rounding at ``n / D`` of the cost per pass).  Otherwise ``Phi`` itself.

        Returns
        -------
        F : ndarray of shape (n, r)
        back : callable
            ``back(W) -> coef``.
        """
        if self.K is not None:
            return self.kernel_rows()
        n, D = self.Phi.shape
        if n > ROW_SPACE_RATIO * D:
            return self.Phi, lambda W: W
        if self._qr is None:
            self._qr = np.linalg.qr(self.Phi.T)
        Q, R = self._qr
        return np.ascontiguousarray(R.T), lambda W: Q @ W

    def solve(self, solver, codes, n_classes: int, zeta, **options):
        """``solver`` on :meth:`rows` with the BLAS threads chosen from its sizes, mapped back.

        Parameters
        ----------
        solver : callable
            A feature solver ``solver(F, codes, n_classes, zeta, **options) -> (W, b, info)``.
        codes : ndarray of shape (n,)
            Class codes.
        n_classes : int
            Number of classes.
        zeta : float or ndarray of shape (n,)
            The penalty.
        **options
            The solver's options.

        Returns
        -------
        coef : ndarray
            The coefficients against :attr:`K`'s columns or :attr:`Phi`'s features.
        b : ndarray of shape (n_classes,)
        certificate : SolveInfo
            The solver's certificate, its time including the factorisation.
        """
        t0 = time.perf_counter()
        F, back = self.rows()
        with ww_threads(F, n_classes):
            W, b, info = solver(F, codes, n_classes, zeta, **options)
        info["certificate"].time = time.perf_counter() - t0
        return back(W), b, info["certificate"]
