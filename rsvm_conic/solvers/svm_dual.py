"""libsvm on the SVM dual over the box and hyperplane.

Every kernel SVM of the package meets the same problem (nominal SVM, RSVM_QP's modified kernel,
the fixed-multiplier Lagrangian of RSVM_SOCP, PkSVC's expected kernel, the binary WW machine):

.. math::

    \\min_{\\alpha\\in S} q(\\alpha) = \\tfrac12 \\alpha' Y K Y \\alpha - e'\\alpha,\\qquad
    S = \\{0 \\le \\alpha \\le C,\\ y'\\alpha = 0\\}\\quad (y \\in \\{-1, +1\\}^n,\\ K \\text{ PSD}).

:func:`libsvm_dual` / :func:`libsvm_alpha`: libsvm (the solve of ``SVC(kernel="precomputed")``, called through
scikit-learn's low-level ``_libsvm.fit``) and the dense ``alpha`` read from a fitted ``SVC`` (``dual_coef_`` holds
``y_i alpha_i`` of the support vectors); :func:`submatrix`, the kernel blocks the polish and the Newton routes read.
Polishing and certifying libsvm's point: :mod:`.svm_polish`; the bounds: :mod:`rsvm_conic.certify.kernel`; the
projection onto ``S``: :func:`rsvm_conic.certify.projections.project_dual_set`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np


__all__ = ["LibsvmFit", "libsvm_alpha", "libsvm_dual", "submatrix"]


def libsvm_alpha(svc, n: int) -> np.ndarray:
    """The dense dual ``alpha`` (``n`` entries in ``[0, C]``) of a fitted binary ``sklearn.svm.SVC`` (or of the
    :class:`LibsvmFit` of :func:`libsvm_dual`).

    Parameters
    ----------
    svc : sklearn.svm.SVC or LibsvmFit
        A fitted binary model.
    n : int
        The number of training samples.

    Returns
    -------
    ndarray of shape (n,)
    """
    alpha = np.zeros(n)
    alpha[svc.support_] = np.abs(svc.dual_coef_[0])
    return alpha


def libsvm_linear(X, y, C: float, weights=None, tol: float = 1e-8, max_iter: int | None = None):
    """A linear SVM by libsvm (``sklearn.svm.SVC(kernel="linear")``): weights, intercept and dual multipliers.

    libsvm's own stopping rule bounds a KKT violation, not the objective error, so the caller certifies the result;
    its ConvergenceWarning is silenced (the certificate judges the point).  The intercept is re-optimised exactly for
    libsvm's ``w`` (:func:`~rsvm_conic.certify.linear.optimal_intercept`, a 1-D convex problem).

    Parameters
    ----------
    X : ndarray of shape (L, n)
        Samples (trusted).
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    C : float
        The hinge terms' weight.
    weights : ndarray of shape (L,) or None, default=None
        Positive weights ``s_i`` (the box ``alpha_i <= C s_i``).
    tol : float, default=1e-8
        libsvm's stopping tolerance.
    max_iter : int or None, default=None
        libsvm's iteration cap (None: ``max(10^5, 20 L)``, so that a badly conditioned problem cannot run for
        minutes).

    Returns
    -------
    w : ndarray of shape (n,)
    b : float
    alpha : ndarray of shape (L,)
        The dual multipliers.
    info : dict
        ``n_support`` and ``iterations``.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import SVC

    from ..certify.linear import optimal_intercept

    max_iter = max(100_000, 20 * X.shape[0]) if max_iter is None else max_iter
    svc = SVC(kernel="linear", C=C, tol=tol, max_iter=max_iter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svc.fit(X, y, sample_weight=weights)  # classes_ = [-1, 1]: the decision function is w.x + b
    w = svc.coef_.ravel().copy()
    b = optimal_intercept(X @ w, y, float(svc.intercept_[0]), weights)
    info = {"n_support": int(svc.n_support_.sum()), "iterations": int(np.sum(svc.n_iter_))}
    return w, b, libsvm_alpha(svc, X.shape[0]), info


@dataclass
class LibsvmFit:
    """What :func:`libsvm_dual` read from libsvm, with ``SVC``'s attribute names and signs (binary case):
    ``support_``, ``dual_coef_`` (``y_i alpha_i``, shape ``(1, m)``), ``intercept_`` (shape ``(1,)``),
    ``n_iter_`` (shape ``(1,)``), ``fit_status_``; ``route`` says which interface ran (``"libsvm"``: the
    low-level ``sklearn.svm._libsvm.fit``; ``"SVC"``: the estimator, used when the low-level interface
    is missing or its signature or return value is not the one checked here).

    Attributes
    ----------
    support_ : ndarray of shape (m,)
        Indices of the support vectors.
    dual_coef_ : ndarray of shape (1, m)
        ``y_i alpha_i`` of the support vectors.
    intercept_ : ndarray of shape (1,)
        The bias.
    n_iter_ : ndarray of shape (1,)
        libsvm's iterations.
    fit_status_ : int
        libsvm's status (0: converged).
    route : str
        The interface that ran: ``"libsvm"`` or ``"SVC"``.
    """

    support_: np.ndarray
    dual_coef_: np.ndarray
    intercept_: np.ndarray
    n_iter_: np.ndarray
    fit_status_: int
    route: str


#: the low-level ``fit`` returns these nine arrays (scikit-learn 1.6 - 1.9, checked by the tests):
#: support, support_vectors, n_class_SV, sv_coef, intercept, probA, probB, fit_status, n_iter
_LIBSVM_FIT_RETURNS = 9


def _libsvm_lowlevel():
    """``sklearn.svm._libsvm`` when its ``fit`` has the keyword arguments used here, else None."""
    try:
        from sklearn.svm import _libsvm
    except ImportError:  # pragma: no cover - a scikit-learn without the private module
        return None
    fit = getattr(_libsvm, "fit", None)
    return _libsvm if fit is not None and hasattr(_libsvm, "set_verbosity_wrap") else None


def _libsvm_fit_lowlevel(lib, K, y, C, tol, cache_size, shrinking, max_iter, weights=None):
    """libsvm's C-SVC through ``sklearn.svm._libsvm.fit`` with exactly what ``SVC.fit`` passes it (labels
    encoded 0/1 in sorted order, class weights one, no sample weights, seed 0 -- used only for probability
    estimates, which are off): the same alpha as ``SVC(kernel="precomputed")`` without the estimator's
    parameter and input validation, which costs more than a small solve.  None if the interface does not answer
    as expected."""
    y = np.asarray(y)
    pos = y == 1
    if np.all(pos | (y == -1)) and pos.any() and not pos.all():  # {-1, +1}: np.unique's codes without its sort
        y_enc = pos.astype(np.float64)
    else:
        classes, y_enc = np.unique(y, return_inverse=True)
        if classes.size != 2:
            return None  # SVC raises the right error
    K = np.ascontiguousarray(K, dtype=np.float64)
    lib.set_verbosity_wrap(0)
    try:
        out = lib.fit(
            K,
            np.asarray(y_enc, dtype=np.float64),
            svm_type=0,
            kernel="precomputed",
            tol=float(tol),
            C=float(C),
            class_weight=np.ones(2),
            sample_weight=np.empty(0) if weights is None else np.ascontiguousarray(weights, dtype=np.float64),
            shrinking=int(bool(shrinking)),
            probability=0,
            cache_size=float(cache_size),
            max_iter=int(max_iter),
            random_seed=0,
        )
    except TypeError:  # another signature: use the estimator
        return None
    if not isinstance(out, tuple) or len(out) != _LIBSVM_FIT_RETURNS:
        return None
    support, _, _, sv_coef, intercept, _, _, status, n_iter = out
    # SVC flips the signs of the binary dual coefficients and intercept (its classes_[1] is the positive class)
    return LibsvmFit(
        np.asarray(support),
        -np.asarray(sv_coef),
        -np.asarray(intercept),
        np.asarray(n_iter, dtype=np.int64),
        int(status),
        "libsvm",
    )


def libsvm_dual(
    K,
    y,
    C: float,
    *,
    tol: float = 1e-7,
    cache_size: float = 200,
    shrinking: bool = True,
    max_iter: int = -1,
    lowlevel: bool = True,
):
    """libsvm on the SVM dual with the precomputed Gram matrix ``K``: ``(alpha, LibsvmFit)``.

    The same solve as ``SVC(C=C, kernel="precomputed", tol=tol, cache_size=..., shrinking=..., max_iter=...)``
    (identical ``alpha``, tested), called through scikit-learn's low-level ``sklearn.svm._libsvm.fit`` so that
    the estimator's per-call validation is not paid (``K`` and ``y`` are trusted: ``K`` square, finite,
    ``y`` with two classes); ``lowlevel=False``, or a scikit-learn whose low-level interface differs,
    uses ``SVC`` itself.  ``alpha`` meets libsvm's KKT tolerance only; :func:`polish_svm_dual` /
    :func:`certified_svm_dual` polish and certify it.  ``C`` may hold one positive bound per sample (the weighted
    box ``0 <= alpha_i <= C_i``): libsvm's sample weights ``C_i / max C`` with ``C = max C``.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The Gram matrix (trusted).
    y : ndarray of shape (n,)
        Labels, two classes.
    C : float or ndarray of shape (n,)
        The box's bound (shared or per sample).
    tol : float, default 1e-7
        libsvm's KKT tolerance.
    cache_size : float, default 200
        libsvm's kernel cache in MB.
    shrinking : bool, default True
        libsvm's shrinking heuristic.
    max_iter : int, default -1
        libsvm's iteration limit (-1: none).
    lowlevel : bool, default True
        Call the low-level interface when it answers as expected.

    Returns
    -------
    alpha : ndarray of shape (n,)
        The dual.
    fit : LibsvmFit
        What libsvm returned.
    """
    weights = None
    if np.ndim(C):
        C = np.asarray(C, dtype=float)
        C, weights = float(C.max()), C / float(C.max())
    fit = None
    lib = _libsvm_lowlevel() if lowlevel else None
    if lib is not None:
        fit = _libsvm_fit_lowlevel(lib, K, y, C, tol, cache_size, shrinking, max_iter, weights)
        if fit is not None and fit.fit_status_ == 1:
            from sklearn.exceptions import ConvergenceWarning

            warnings.warn(
                f"Solver terminated early (max_iter={int(max_iter)}).  Consider pre-processing your "
                "data with StandardScaler or MinMaxScaler.",
                ConvergenceWarning,
                stacklevel=2,
            )
    if fit is None:
        from sklearn.svm import SVC

        svc = SVC(
            C=C, kernel="precomputed", tol=tol, cache_size=cache_size, shrinking=shrinking, max_iter=max_iter
        ).fit(K, y, sample_weight=weights)
        fit = LibsvmFit(svc.support_, svc.dual_coef_, svc.intercept_, np.asarray(svc.n_iter_), svc.fit_status_, "SVC")
    return libsvm_alpha(fit, np.shape(y)[0]), fit


def submatrix(A: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``A[np.ix_(rows, cols)]`` (a new array, the same values): rows first, then columns, by ``take`` when the
    columns are at least a quarter of ``A``'s (then the row copy costs little and ``take`` avoids ``np.ix_``'s
    fancy indexing of both axes), else ``np.ix_`` (it reads only the block).

    Parameters
    ----------
    A : ndarray of shape (m, n)
        The matrix.
    rows, cols : ndarray of int
        The indices.

    Returns
    -------
    ndarray of shape (len(rows), len(cols))
    """
    if 4 * np.size(cols) >= A.shape[1]:
        return A.take(rows, axis=0).take(cols, axis=1)
    return A[np.ix_(rows, cols)]
