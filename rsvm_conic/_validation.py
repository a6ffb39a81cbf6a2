"""Input validation shared by every public entry point.

Every check raises :class:`ValueError` with a message that says what is wrong
and what to do about it.  Nothing here mutates its inputs.
"""

from __future__ import annotations

import numbers

import numpy as np


def check_finite_array(A, name: str, ndim: int | tuple[int, ...] | None = None) -> np.ndarray:
    """Return ``A`` as a float64 array after checking dimension and finiteness."""
    try:
        arr = np.asarray(A, dtype=np.float64)
    except (TypeError, ValueError) as exc:  # strings, ragged lists
        raise ValueError(f"{name} must be numeric; could not convert it to a float array ({exc}).") from exc
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            raise ValueError(f"{name} must have {' or '.join(map(str, allowed))} dimension(s); got shape {arr.shape}.")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}); pass at least one entry.")
    if not np.all(np.isfinite(arr)):
        n_bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} contains {n_bad} NaN or infinite value(s); impute or drop them before fitting.")
    return arr


def validate_estimator_input(estimator, X, y=None, *, reset: bool):
    """scikit-learn's ``validate_data`` (records/checks ``n_features_in_``) plus our NaN/inf message.

    Returns X, or (X, y_pm, classes) when ``y`` is given (``reset=True``, in fit).
    """
    from sklearn.utils.validation import validate_data

    common = dict(accept_sparse=False, dtype=np.float64, ensure_all_finite=False)
    if y is None and not reset:
        X = validate_data(estimator, X, reset=False, **common)
        return check_finite_array(X, "X", ndim=2)
    if y is None:
        raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target y is None.")
    X, y = validate_data(estimator, X, y, reset=reset, **common)
    X = check_finite_array(X, "X", ndim=2)
    y_pm, classes = check_binary_labels(y, X.shape[0])
    return X, y_pm, classes


def check_X(X, name: str = "X", n_features: int | None = None) -> np.ndarray:
    """A dense 2-D float64 array of finite values (scikit-learn's check_array, then our NaN message)."""
    from sklearn.utils.validation import check_array

    try:
        X = check_array(X, accept_sparse=False, dtype=np.float64, ensure_all_finite=False, input_name=name)
    except TypeError as exc:  # sparse input
        raise TypeError(f"{exc} rsvm-conic models need dense {name}; convert with {name}.toarray().") from exc
    X = check_finite_array(X, name, ndim=2)
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{name} has {X.shape[1]} features but {n_features} were expected (the number seen in fit).")
    return X


def check_binary_labels(y, n_samples: int, name: str = "y"):
    """Return ``(y_pm, classes)`` with ``y_pm`` in {-1, +1} and the two original classes.

    ``classes[0]`` maps to -1 and ``classes[1]`` to +1 (sorted order, as scikit-learn does).
    """
    from sklearn.utils.multiclass import check_classification_targets

    if y is None:
        raise ValueError(f"this estimator requires y to be passed, but the target {name} is None.")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        import warnings

        from sklearn.exceptions import DataConversionWarning

        warnings.warn(
            f"A column-vector {name} was passed when a 1d array was expected; it was raveled.",
            DataConversionWarning,
            stacklevel=3,
        )
        y = np.ravel(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of labels; got shape {y.shape}.")
    if y.shape[0] != n_samples:
        raise ValueError(f"{name} has {y.shape[0]} labels but X has {n_samples} rows; they must match.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(f"{name} contains NaN or infinite labels; drop those samples.")
    check_classification_targets(y)  # 'Unknown label type: continuous' for regression targets
    classes = check_two_classes(y, name, reason="a binary classifier needs samples of two classes")
    if classes.shape[0] > 2:
        raise ValueError(
            f"Only binary classification is supported. {name} has {classes.shape[0]} classes; use a "
            "multi-class estimator "
            "(e.g. WestonWatkinsSVC) or reduce the labels to two classes."
        )
    y_pm = np.where(y == classes[1], 1.0, -1.0)
    return y_pm, classes


def check_positive(value, name: str, *, strict: bool = True, allow_inf: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number; got {value!r}.")
    value = float(value)
    if np.isnan(value) or (np.isinf(value) and not allow_inf):
        raise ValueError(f"{name} must be finite; got {value}.")
    if strict and value <= 0:
        raise ValueError(f"{name} must be > 0; got {value}.")
    if not strict and value < 0:
        raise ValueError(f"{name} must be >= 0; got {value}.")
    return value


def check_probability(
    value, name: str = "epsilon", *, low_open: bool = True, high_open: bool = True, high: float = 1.0
) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or np.isnan(value):
        raise ValueError(f"{name} must be a real number in (0, {high}); got {value!r}.")
    value = float(value)
    lo_ok = value > 0 if low_open else value >= 0
    hi_ok = value < high if high_open else value <= high
    if not (lo_ok and hi_ok):
        lb = "(" if low_open else "["
        rb = ")" if high_open else "]"
        raise ValueError(f"{name} must lie in {lb}0, {high}{rb}; got {value}.")
    return value


def check_choice(value, name: str, choices) -> object:
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(map(str, choices))}; got {value!r}.")
    return value


def check_norm(p) -> float:
    """Accept 1, 2, np.inf, 'inf' and return a float p in {1, 2, inf}."""
    if isinstance(p, str) and p.lower() in ("inf", "infinity"):
        return float("inf")
    if isinstance(p, numbers.Real) and not isinstance(p, bool) and float(p) in (1.0, 2.0, float("inf")):
        return float(p)
    raise ValueError(f"norm must be 1, 2 or 'inf' (np.inf); got {p!r}.")


def dual_norm(p: float) -> float:
    """The dual exponent q with 1/p + 1/q = 1 for p in {1, 2, inf}."""
    p = check_norm(p)
    return {1.0: float("inf"), 2.0: 2.0, float("inf"): 1.0}[p]


# ------------------------------------------------------------------------------------------ labels
def check_two_classes(y, name: str = "y", *, reason: str | None = None, classes=None) -> np.ndarray:
    """Raise ValueError unless ``y`` holds at least two distinct labels; return the sorted distinct labels.

    The one single-class check: every estimator, builder and solver that needs two classes calls it.
    ``reason`` says why two are needed (default: a classifier needs them); ``classes`` gives the
    distinct labels when the caller already has them (e.g. ``range(n_classes)`` for class codes),
    which skips ``np.unique``.
    """
    classes = np.unique(np.asarray(y)) if classes is None else np.asarray(classes)
    if classes.shape[0] < 2:
        which = ""
        if classes.shape[0]:
            first = classes[0].item() if isinstance(classes[0], np.generic) else classes[0]
            which = f" ({first!r})"
        why = reason or "a classifier needs more than one class to separate"
        raise ValueError(
            f"{name} holds a single class{which} (got {classes.shape[0]} class); {why}. "
            "Pass samples of at least two classes."
        )
    return classes


# ------------------------------------------------------------------------ symmetric PSD matrices
#: eigenvalue scales are floored here, so that a zero matrix gives zero thresholds without 0/0
_TINY = 1e-300


def check_symmetric(S, name: str = "matrix", *, rtol: float = 1e-8, atol: float = 0.0) -> np.ndarray:
    """Check that the last two axes of ``S`` hold square symmetric matrices; return them symmetrised.

    Non-symmetric means ``max |S - S^T| > rtol * max(1, max |S|) + atol``.  Raises ValueError naming
    the first bad block of a stack.
    """
    S = np.asarray(S, dtype=np.float64)
    if S.ndim < 2 or S.shape[-1] != S.shape[-2]:
        raise ValueError(f"{name} must be square; got shape {S.shape}.")
    scale = max(1.0, float(np.max(np.abs(S)))) if S.size else 1.0
    asym = np.max(np.abs(S - np.swapaxes(S, -1, -2)), axis=(-1, -2)) if S.size else np.zeros(S.shape[:-2])
    if np.any(asym > rtol * scale + atol):
        idx = int(np.argmax(np.atleast_1d(asym)))
        where = f" (block {idx})" if S.ndim == 3 else ""
        raise ValueError(
            f"{name}{where} is not symmetric (max |S - S^T| = {float(np.max(asym)):.3g}); "
            "pass a symmetric matrix, e.g. (S + S.T) / 2."
        )
    return 0.5 * (S + np.swapaxes(S, -1, -2))


def _raise_not_psd(name, S, eigmin, threshold, hint):
    eigmin = np.atleast_1d(eigmin)
    threshold = np.broadcast_to(threshold, eigmin.shape)
    idx = int(np.argmax(eigmin < -threshold))
    where = f" (block {idx})" if np.ndim(S) == 3 else ""
    raise ValueError(
        f"{name}{where} is not positive semidefinite: smallest eigenvalue {float(eigmin[idx]):.3g}, "
        f"a negative eigenvalue beyond the round-off tolerance {float(threshold[idx]):.3g}"
        + (f"; {hint}" if hint else "")
        + "."
    )


def check_psd(S, name: str = "matrix", *, neg_tol: float = 1e-8, scale: float | None = None, hint: str = "") -> None:
    """The one PSD check: raise ValueError if a symmetric ``S`` (or stack) has an eigenvalue below
    ``-neg_tol * scale`` (``scale`` default ``max(1, max |S|)``).

    ``S`` must already be symmetric (:func:`check_symmetric`).  Decided by a Cholesky factorisation
    of ``S + (threshold / 2) I`` (success proves ``lambda_min > -threshold``; ~5x cheaper than
    ``eigvalsh``); only when it fails are the eigenvalues computed, which decide.
    """
    S = np.asarray(S, dtype=np.float64)
    if scale is None:
        scale = max(1.0, float(np.max(np.abs(S)))) if S.size else 1.0
    threshold = neg_tol * scale
    if shifted_cholesky_ok(S, 0.5 * threshold):
        return
    eigmin = np.linalg.eigvalsh(S)[..., 0]
    if np.any(eigmin < -threshold):
        _raise_not_psd(name, S, eigmin, threshold, hint)


def shifted_cholesky_ok(S, shift: float) -> bool:
    """Whether every ``S + shift I`` has a Cholesky factor (LAPACK ``dpotrf`` on a copy for one matrix)."""
    if S.ndim == 2:
        from scipy.linalg.lapack import dpotrf

        M = np.array(S, dtype=np.float64, order="F")
        M[np.diag_indices_from(M)] += shift
        _, info = dpotrf(M, lower=1, clean=0, overwrite_a=1)
        return info == 0
    try:
        np.linalg.cholesky(S + shift * np.eye(S.shape[-1]))
    except np.linalg.LinAlgError:
        return False
    return True


def psd_eigh(
    S,
    name: str = "matrix",
    *,
    on_negative: str = "raise",
    neg_tol: float = 1e-8,
    neg_atol: float = 0.0,
    scale: float | None = None,
    drop_tol: float | None = None,
    drop_atol: float = 0.0,
    hint: str = "",
):
    """The one eigendecomposition behind every PSD factorisation and projection: ``(vals, vecs)``,
    eigenvalues ascending, of the symmetric matrix (or stack) ``S`` from a single ``np.linalg.eigh``.

    Tolerances are relative to ``scale`` (default: the spectral radius ``max |lambda|`` of each
    matrix, floored at 1e-300):

    * ``on_negative="raise"``: ValueError if the smallest eigenvalue is below
      ``-max(neg_tol * scale, neg_atol)``; the remaining round-off negatives are set to 0.
      ``"clip"``: negative eigenvalues are set to 0 (the projection onto the PSD cone, never
      raises).  ``"keep"``: the eigenvalues as computed (the caller inspects them).
    * ``drop_tol`` (one matrix only): keep only the eigenpairs with ``lambda > max(drop_tol * scale,
      drop_atol)`` (null and negative directions dropped); ``vals``/``vecs`` then have ``r`` entries/columns.

    ``S`` is not symmetrised here (``eigh`` reads one triangle): pass a symmetric matrix.
    """
    check_choice(on_negative, "on_negative", ("raise", "clip", "keep"))
    vals, vecs = np.linalg.eigh(S)
    ref = np.max(np.abs(vals), axis=-1) if scale is None else np.asarray(scale, dtype=np.float64)
    ref = np.maximum(ref, _TINY)
    if on_negative == "raise":
        threshold = np.maximum(neg_tol * ref, neg_atol)
        if np.any(vals[..., 0] < -threshold):
            _raise_not_psd(name, S, vals[..., 0], threshold, hint)
    if on_negative != "keep":
        vals = np.clip(vals, 0.0, None)
    if drop_tol is not None:
        if vals.ndim != 1:
            raise ValueError("psd_eigh: drop_tol needs a single matrix, not a stack.")
        keep = vals > max(drop_tol * float(ref), drop_atol)
        vals, vecs = vals[keep], vecs[:, keep]
    return vals, vecs


def psd_factor(
    S, name: str = "matrix", *, form: str = "left", on_negative: str = "raise", return_eig: bool = False, **tolerances
):
    """A factor ``A`` with ``A A' = S`` (after clipping round-off negatives) from one :func:`psd_eigh`.

    ``form="sqrt"``: the symmetric square root ``V diag(sqrt(lambda_+)) V'`` (n x n, stacks allowed);
    ``form="left"``: ``V_r diag(sqrt(lambda_r))`` (n x r) over the kept eigenpairs (``drop_tol``:
    null directions dropped).  ``on_negative`` and the tolerances are :func:`psd_eigh`'s (``"keep"``
    is not allowed: a factor needs nonnegative eigenvalues).  ``return_eig=True`` returns
    ``(A, vecs, vals)`` (the kept eigenpairs, ascending).
    """
    check_choice(form, "form", ("left", "sqrt"))
    check_choice(on_negative, "on_negative", ("raise", "clip"))
    vals, vecs = psd_eigh(S, name, on_negative=on_negative, **tolerances)
    root = np.sqrt(vals)
    A = vecs * root[..., None, :]
    if form == "sqrt":
        A = A @ np.swapaxes(vecs, -1, -2)
    return (A, vecs, vals) if return_eig else A


def check_symmetric_psd(S, name: str = "Sigma", *, tol: float = 1e-8, factor: bool | str = False) -> np.ndarray:
    """Check that the last two axes of ``S`` hold symmetric positive semidefinite matrices.

    Returns the symmetrised matrices, or a factor ``A`` with ``A A' = S`` from the same factorisation
    that validated them (one factorisation per matrix, not two): ``factor="sqrt"`` (or True) the
    symmetric PSD square root (negative round-off eigenvalues clipped); ``factor="cholesky"`` the
    Cholesky factor, about 5x cheaper, when every matrix is positive definite (a successful
    Cholesky factorisation proves it), else the symmetric root.  Raises ValueError naming the first
    bad block.  PSD means ``lambda_min >= -tol * max(1, max |S|)`` (:func:`check_psd`).
    """
    S = check_symmetric(S, name, rtol=10 * tol, atol=1e-12)
    scale = max(1.0, float(np.max(np.abs(S)))) if S.size else 1.0
    hint = "a covariance must be PSD"
    if not factor:
        check_psd(S, name, neg_tol=tol, scale=scale, hint=hint)
        return S
    if factor == "cholesky":
        try:
            return np.linalg.cholesky(S)
        except np.linalg.LinAlgError:
            pass  # singular or indefinite somewhere: the eigendecomposition decides which
    return psd_factor(S, name, form="sqrt", neg_tol=tol, scale=scale, hint=hint)
