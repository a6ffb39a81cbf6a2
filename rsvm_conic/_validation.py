"""Input validation shared by every public entry point.

Every check raises :class:`ValueError` with a message that says what is wrong
and what to do about it.  Nothing here mutates its inputs.
"""

from __future__ import annotations

import math
import numbers
import sys

import numpy as np
from ._jit import jit
from .exceptions import WorkersLostError
from ._threads import blas_threads_for


def check_finite_array(A, name: str, ndim: int | tuple[int, ...] | None = None) -> np.ndarray:
    """``A`` as a float64 array after checking its dimension and finiteness.

    Parameters
    ----------
    A : array-like
        The input.
    name : str
        Its name, for messages.
    ndim : int or tuple of int, optional
        Allowed numbers of dimensions.

    Returns
    -------
    ndarray of float64

    Raises
    ------
    ValueError
        If ``A`` is not numeric, has another number of dimensions, is empty, or holds NaN or inf.
    """
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
    # a finite sum proves every entry finite (a NaN or an inf makes it NaN or inf) with no boolean temporary; a sum
    # that overflows from finite entries is decided entry by entry
    if not math.isfinite(float(arr.sum())) and not np.all(np.isfinite(arr)):
        n_bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} contains {n_bad} NaN or infinite value(s); impute or drop them before fitting.")
    return arr


#: the largest sum the models may form from the data's squares (or from a covariance's entries): float64's largest
#: value times its precision (about 4e292), which leaves a solve room on top of the data's own sums for its
#: factors (C, an interior point's scaling weights, round-off bounds)
OVERFLOW_LIMIT = float(np.finfo(np.float64).max * np.finfo(np.float64).eps)


def check_no_overflow(A, name: str = "X", *, products: bool = False, hint: str = "") -> None:
    """Raise ValueError, saying to rescale, when the sums a model forms from ``A`` overflow float64.

    Parameters
    ----------
    A : ndarray
        A finite float64 array (checked before, e.g. by :func:`check_finite_array`).
    name : str
        How the message calls ``A``.
    products : bool
        False: ``A`` holds data (samples, or a kernel matrix, whose products ``K'DK`` an interior point forms),
        whose sum of squares ``||A||_F^2`` bounds every product the models form from it (the entries of ``A'A``
        and ``A A'``, the squared norms ``||a_i||^2``, a quarter of the squared distances ``||a_i - a_j||^2``).
        True: ``A`` holds products of the data already (a covariance), and ``max |A|`` times its number of
        entries bounds the sums of its entries the models form.
    hint : str
        How to rescale, appended to the message (default: scikit-learn's ``StandardScaler`` for data).

    Either bound must stay below :data:`OVERFLOW_LIMIT`.  One pass over ``A`` (a BLAS dot product, or its
    maximum and minimum for products); the message's figures are computed only when it is raised.
    """
    A = np.asarray(A)
    if A.size == 0:
        return
    if products:
        top = max(float(A.max()), -float(A.min()))
        if top * A.size <= OVERFLOW_LIMIT:
            return
        log_total = math.log10(top) + math.log10(A.size)
        raise ValueError(overflow_message(name, top, log_total, products=A.size, hint=hint))
    if _sum_of_squares(A) <= OVERFLOW_LIMIT:
        return
    top = max(float(A.max()), -float(A.min()))
    log_total = 2.0 * math.log10(top) + math.log10(_sum_of_squares(A / top))
    raise ValueError(overflow_message(name, top, log_total, hint=hint))


def _sum_of_squares(A) -> float:
    """``sum A_ij^2`` in one pass with no temporary (a BLAS dot product for a contiguous ``A``); inf on overflow."""
    with np.errstate(over="ignore", invalid="ignore"):
        if A.flags.c_contiguous or A.flags.f_contiguous:
            flat = A.ravel(order="K")
            return float(np.dot(flat, flat))
        axes = list(range(A.ndim))
        return float(np.einsum(A, axes, A, axes, []))


def overflow_message(name: str, top: float, log_total: float, *, products: int = 0, hint: str = "") -> str:
    """The message of :func:`check_no_overflow` (also raised for Dask arrays).

    Parameters
    ----------
    name : str
        The array's name.
    top : float
        The largest absolute entry.
    log_total : float
        ``log10`` of the sum of squares.
    products : int, default 0
        With a covariance: the number of entries, whose products with ``top`` overflow.
    hint : str, default ""
        A sentence appended (what to do).

    Returns
    -------
    str
    """
    if products:
        what = f"whose sums overflow float64 in the models: max |{name}| times its {products} entries is about"
    else:
        what = (
            f"whose squares overflow float64 in the models' sums: ||{name}||_F^2 (a bound on the products the models "
            f"form from {name}, such as {name}'{name}, the squared norms and distances) is about"
        )
    how = hint or "e.g. sklearn.preprocessing.StandardScaler"
    return (
        f"{name} has entries up to {top:.3g} {what} 1e{round(log_total):+d}, above {OVERFLOW_LIMIT:.3g} (float64's "
        f"largest value times its precision, the room a solve needs); rescale {name} ({how}) before fitting."
    )


def validate_estimator_input(estimator, X, y=None, *, reset: bool):
    """scikit-learn's ``validate_data`` (records/checks ``n_features_in_``) plus our NaN/inf message and
    :func:`check_no_overflow`.

    Parameters
    ----------
    estimator : BaseEstimator
        The estimator (``n_features_in_`` is set on it when ``reset``).
    X : array-like of shape (L, n)
        The data.
    y : array-like of shape (L,), optional
        Binary labels (in ``fit``).
    reset : bool
        True in ``fit`` (records ``n_features_in_``), False in ``predict`` (checks it).

    Returns
    -------
    X : ndarray of float64
        When ``y`` is None.
    X, y_pm, classes
        When ``y`` is given: labels in {-1, +1} and the two original classes (:func:`check_binary_labels`).

    Raises
    ------
    ValueError
        On NaN/inf, entries whose squares overflow, a feature count that differs from fit's, or labels that are
        not two classes.
    """
    from sklearn.utils.validation import validate_data

    if is_dask_array(X):
        return _validate_dask_estimator_input(estimator, X, y, reset)
    common = dict(accept_sparse=False, dtype=np.float64, ensure_all_finite=False)
    if y is None and not reset:
        X = validate_data(estimator, X, reset=False, **common)
        X = check_finite_array(X, "X", ndim=2)
        check_no_overflow(X, "X")
        return X
    if y is None:
        raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target y is None.")
    X, y = validate_data(estimator, X, y, reset=reset, **common)
    X = check_finite_array(X, "X", ndim=2)
    check_no_overflow(X, "X")
    y_pm, classes = check_binary_labels(y, X.shape[0])
    return X, y_pm, classes


def check_X(X, name: str = "X", n_features: int | None = None) -> np.ndarray:
    """A dense 2-D float64 array of finite values whose squares the models can sum.

    scikit-learn's ``check_array``, then our NaN message, then :func:`check_no_overflow`.

    Parameters
    ----------
    X : array-like of shape (L, n)
        The data.
    name : str, default "X"
        Its name, for messages.
    n_features : int, optional
        The number of columns required (the one seen in fit).

    Returns
    -------
    ndarray of float64, shape (L, n)

    Raises
    ------
    ValueError
        If ``X`` is not 2-D numeric, is empty, holds NaN/inf or overflowing entries, or has another column count.
    """
    from sklearn.utils.validation import check_array

    if is_dask_array(X):
        return check_dask_X(X, name, n_features)
    try:
        X = check_array(X, accept_sparse=False, dtype=np.float64, ensure_all_finite=False, input_name=name)
    except TypeError as exc:  # sparse input
        raise TypeError(f"{exc} rsvm-conic models need dense {name}; convert with {name}.toarray().") from exc
    X = check_finite_array(X, name, ndim=2)
    check_no_overflow(X, name)
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{name} has {X.shape[1]} features but {n_features} were expected (the number seen in fit).")
    return X


def check_binary_labels(y, n_samples: int, name: str = "y"):
    """Binary labels as {-1, +1} and the two original classes.

    ``classes[0]`` maps to -1 and ``classes[1]`` to +1 (sorted order, as scikit-learn does).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        The labels.
    n_samples : int
        The number of rows of X.
    name : str, default "y"
        Its name, for messages.

    Returns
    -------
    y_pm : ndarray of float64, shape (n_samples,)
        Labels in {-1, +1}.
    classes : ndarray of shape (2,)
        The original labels.

    Raises
    ------
    ValueError
        If ``y`` has another length, or holds one class or more than two.
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


def check_codes(codes, n: int, n_classes=None):
    """Class codes: ``n`` integers in ``0..n_classes-1`` (``n_classes >= 2``).

    Non-integer values raise (``np.asarray(..., dtype=int64)`` would silently truncate 0.5 to 0).

    Parameters
    ----------
    codes : array-like of shape (n,)
        Class codes (integers, or floats holding integers).
    n : int
        The number of samples they must cover.
    n_classes : int, optional
        The number of classes; default ``max(codes) + 1``.

    Returns
    -------
    codes : ndarray of int64
        The codes.
    n_classes : int
        The number of classes.

    Raises
    ------
    ValueError
        On a wrong shape, a non-integer or out-of-range code, or fewer than two classes present.
    """
    raw = np.asarray(codes)
    if raw.shape != (n,):
        raise ValueError(f"codes must have shape ({n},); got {raw.shape}.")
    if raw.dtype.kind not in "iub":
        if raw.dtype.kind != "f" or not np.all(np.isfinite(raw)) or np.any(raw != np.round(raw)):
            raise ValueError("codes must be integers in 0..n_classes-1 (encode labels with encode_labels(y)).")
    codes = raw.astype(np.int64)
    if n == 0:
        raise ValueError("codes is empty; at least two samples of two classes are needed.")
    n_classes = int(n_classes if n_classes is not None else codes.max() + 1)
    if codes.min() < 0 or codes.max() >= n_classes:
        raise ValueError("codes must be integers in 0..n_classes-1 with n_classes >= 2.")
    check_two_classes(codes, "codes", classes=np.arange(n_classes))  # n_classes < 2: a single class
    return codes, n_classes


def encode_labels(y, n: int | None = None):
    """Encode labels as class codes ``0..C-1``; at least two classes required.

    Parameters
    ----------
    y : array-like of shape (n,)
        Labels.
    n : int, optional
        The number of rows of X they must match.

    Returns
    -------
    codes : ndarray of int64
        Each label's index in ``classes``.
    classes : ndarray
        The sorted distinct labels.

    Raises
    ------
    ValueError
        If ``y`` is not 1-D, does not match ``n``, or holds fewer than two classes.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D array of labels; got shape {y.shape}.")
    if n is not None and y.shape[0] != n:
        raise ValueError(f"y has {y.shape[0]} labels but X has {n} rows; they must match.")
    classes, codes = np.unique(y, return_inverse=True)
    check_two_classes(y, "y", classes=classes)
    return codes.astype(np.int64), classes


def check_labels_of(y, classes, n: int, name: str = "y_val", rows: str = "X_val") -> np.ndarray:
    """Labels from two known classes, one per row, mapped to {-1, +1} (``classes[1]`` to +1).

    Parameters
    ----------
    y : array-like of shape (n,)
        The labels.
    classes : ndarray of shape (2,)
        The classes of the training labels.
    n : int
        Number of rows.
    name, rows : str
        The labels' and the rows' names, for the message.

    Returns
    -------
    ndarray of shape (n,)
    """
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n or not np.all(np.isin(y, classes)):
        raise ValueError(f"{name} must hold one label per row of {rows}, from the two classes of y.")
    return np.where(y == classes[1], 1.0, -1.0)


def check_bounds(lower, upper, n: int, names=("sigma_min", "sigma_max")):
    """Bounds ``0 <= lower <= upper`` (finite), as scalars or one value per feature.

    Parameters
    ----------
    lower, upper : float or array-like of shape (n,)
        The bounds.
    n : int
        Number of features.
    names : tuple of two str, default=("sigma_min", "sigma_max")
        Their names, for the message.

    Returns
    -------
    lower, upper : ndarray of shape (n,)
    """
    lo = np.broadcast_to(np.asarray(lower, dtype=float), (n,)).copy()
    hi = np.broadcast_to(np.asarray(upper, dtype=float), (n,)).copy()
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))) or np.any(lo < 0) or np.any(hi < lo):
        raise ValueError(f"need 0 <= {names[0]} <= {names[1]} (finite), as scalars or one value per feature.")
    return lo, hi


def check_per_sample(value, n: int, name: str) -> np.ndarray:
    """A nonnegative number per sample, or one for all.

    Parameters
    ----------
    value : float or array-like of shape (n,)
        The numbers.
    n : int
        Number of samples.
    name : str
        The argument's name, for the message.

    Returns
    -------
    ndarray of shape (n,)
    """
    G = check_finite_array(value, name, ndim=(0, 1))
    G = np.full(n, float(G)) if G.ndim == 0 else G
    if G.shape != (n,) or np.any(G < 0):
        raise ValueError(f"{name} must hold {n} nonnegative numbers (one per sample); got shape {G.shape}.")
    return G


def check_rotations(rotations, n: int, D: int):
    """The ``(cos, sin)`` of per-sample block rotations: two finite (n, D/2) arrays, D even.

    Parameters
    ----------
    rotations : tuple of two array-like
        ``(cos, sin)``.
    n : int
        Number of samples.
    D : int
        Number of features.

    Returns
    -------
    tuple of two ndarray of shape (n, D/2)
    """
    c = check_finite_array(rotations[0], "cos", ndim=2)
    s = check_finite_array(rotations[1], "sin", ndim=2)
    if c.shape != (n, D // 2) or s.shape != c.shape or D % 2:
        raise ValueError(
            f"rotations must be two (L, D/2) = ({n}, {D // 2}) arrays for an even D; "
            f"got {c.shape} and {s.shape} with D = {D}."
        )
    return c, s


def check_feature_metric(R, D: int) -> np.ndarray:
    """An invertible matrix ``R`` of a feature space: ``(D,)`` (a positive diagonal) or ``(D, D)``.

    Parameters
    ----------
    R : array-like of shape (D,) or (D, D)
        The matrix (finite).
    D : int
        Number of features.

    Returns
    -------
    ndarray of shape (D,) or (D, D)
    """
    Rm = check_finite_array(R, "R", ndim=(1, 2))
    if Rm.shape[0] != D or (Rm.ndim == 2 and Rm.shape != (D, D)):
        raise ValueError(f"R must be (D,) or (D, D) with D = {D}; got {Rm.shape}.")
    if Rm.ndim == 1 and np.any(Rm <= 0):
        raise ValueError("a diagonal R must be positive (it must be invertible).")
    return Rm


def check_positive(value, name: str, *, strict: bool = True, allow_inf: bool = False) -> float:
    """A real number ``> 0`` (``>= 0`` unless ``strict``), returned as float.

    Parameters
    ----------
    value : float
        The value.
    name : str
        Its name, for messages.
    strict : bool, default True
        Require ``> 0`` rather than ``>= 0``.
    allow_inf : bool, default False
        Accept ``inf``.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``value`` is not a real number (bools are refused), is NaN or (unless allowed) infinite, or is too small.
    """
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


def check_integer(value, name: str, *, minimum: int = 1) -> int:
    """An integer (not a bool) ``>= minimum``, returned as ``int``.

    Parameters
    ----------
    value : int
        The value.
    name : str
        Its name, for messages.
    minimum : int, default 1
        The smallest value allowed.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If ``value`` is not an integer or is below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def check_probability(
    value, name: str = "epsilon", *, low_open: bool = True, high_open: bool = True, high: float = 1.0
) -> float:
    """A real number in ``(0, high)``, with either end closed on request, returned as float.

    Parameters
    ----------
    value : float
        The value.
    name : str, default "epsilon"
        Its name, for messages.
    low_open, high_open : bool, default True
        Exclude 0 / ``high``.
    high : float, default 1.0
        The upper end.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``value`` is not a real number or lies outside the interval.
    """
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
    """``value`` if it is one of ``choices``.

    Parameters
    ----------
    value : object
        The value.
    name : str
        Its name, for messages.
    choices : collection
        The values allowed.

    Returns
    -------
    object
        ``value``.

    Raises
    ------
    ValueError
        Naming the choices, if ``value`` is not one of them.
    """
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(map(str, choices))}; got {value!r}.")
    return value


def check_sample_scale(scale, n_samples: int, name: str = "sample_scale") -> np.ndarray:
    """Per-sample multipliers of the uncertainty radius: ``n_samples`` finite numbers >= 0.

    Parameters
    ----------
    scale : array-like of shape (n_samples,)
        The multipliers.
    n_samples : int
        The number of samples.
    name : str, default "sample_scale"
        What the caller's users call them (e.g. ``sample_radius`` for the estimators).

    Returns
    -------
    ndarray of float64, shape (n_samples,)

    Raises
    ------
    ValueError
        If the length is wrong, or an entry is negative or not finite.
    """
    scale = check_finite_array(scale, name, ndim=1)
    if scale.shape[0] != n_samples or np.any(scale < 0):
        n_bad = int(np.count_nonzero(scale < 0))
        got = f"{n_bad} negative" if scale.shape[0] == n_samples else f"shape {scale.shape}"
        raise ValueError(f"{name} must hold {n_samples} nonnegative numbers (one per sample); got {got}.")
    return scale


def check_sample_weight(sample_weight, n_samples: int, name: str = "sample_weight") -> np.ndarray:
    """Per-sample weights of the loss terms: ``n_samples`` finite numbers >= 0, at least one of them positive.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,)
        The weights.
    n_samples : int
        The number of samples.
    name : str, default "sample_weight"
        Its name, for messages.

    Returns
    -------
    ndarray of float64, shape (n_samples,)

    Raises
    ------
    ValueError
        If the length is wrong, an entry is negative or not finite, or every weight is 0.
    """
    weights = check_sample_scale(sample_weight, n_samples, name)  # n_samples finite numbers >= 0
    if not np.any(weights > 0):
        raise ValueError(f"{name} is zero for every sample: give at least one sample a positive weight.")
    return weights


def check_sigma_index(sigma_index, n_samples: int, n_matrices: int) -> np.ndarray:
    """The estimators' ``sigma_index``: one integer per sample, the position of its matrix along Sigma's first axis.

    Parameters
    ----------
    sigma_index : array-like of int, shape (n_samples,)
        The indices.
    n_samples : int
        The number of samples.
    n_matrices : int
        The number of matrices in Sigma.

    Returns
    -------
    ndarray of int, shape (n_samples,)

    Raises
    ------
    ValueError
        If the length is wrong, or an entry is not an integer in ``0 .. n_matrices - 1``.
    """
    idx = np.asarray(sigma_index)
    if idx.ndim != 1 or idx.shape[0] != n_samples:
        raise ValueError(
            f"sigma_index must hold one integer per sample ({n_samples}): the position of each sample's matrix "
            f"along Sigma's first axis; got shape {idx.shape}."
        )
    if idx.dtype.kind not in "iu" and not (idx.dtype.kind == "f" and np.all(idx == np.round(idx))):
        raise ValueError(
            f"sigma_index must hold integers (positions along Sigma's first axis), not labels of dtype {idx.dtype}; "
            "map labels to positions first, e.g. np.unique(labels, return_inverse=True)[1]."
        )
    idx = idx.astype(np.intp)
    if idx.min() < 0 or idx.max() >= n_matrices:
        raise ValueError(
            f"sigma_index holds values from {idx.min()} to {idx.max()} but Sigma holds {n_matrices} matrices "
            f"(positions 0..{n_matrices - 1})."
        )
    return idx


def check_fit_keywords(estimator, keywords: dict) -> None:
    """Refuse the keyword arguments a ``fit`` does not take.

    ``groups`` (scikit-learn's model selection gives it to the splitter, never to the estimator) names its
    replacement ``sigma_index``.

    Parameters
    ----------
    estimator : BaseEstimator
        The estimator, for messages.
    keywords : dict
        The keyword arguments ``fit`` did not take.

    Raises
    ------
    ValueError
        For ``groups``.
    TypeError
        For any other keyword.
    """
    name = type(estimator).__name__
    if "groups" in keywords:
        raise ValueError(
            f"{name}.fit takes no groups: the position of each sample's covariance along Sigma's first axis is "
            "sigma_index= (scikit-learn's GridSearchCV and cross_validate keep groups= for the splitter and do not "
            "pass it to the estimator). Pass sigma_index=... instead."
        )
    if keywords:
        raise TypeError(f"{name}.fit() got unexpected keyword argument(s) {sorted(keywords)}.")


def check_groups_have_sigma(groups, Sigma, factor=None) -> None:
    """``groups`` say which Sigma (or factor) each sample uses: without either they would be silently ignored.

    Parameters
    ----------
    groups : array-like or None
        The samples' groups.
    Sigma, factor : array-like or None
        The matrices the groups index.

    Raises
    ------
    ValueError
        If ``groups`` is given without ``Sigma`` and ``factor``.
    """
    if groups is not None and Sigma is None and factor is None:
        raise ValueError(
            "groups was given without Sigma: groups say which Sigma matrix each sample uses, and without Sigma "
            "every sample gets the identity, so groups would be ignored. Pass Sigma (one matrix per group, or one "
            "shared) together with groups, or drop groups."
        )


def check_norm(p) -> float:
    """A norm exponent p in {1, 2, inf} as a float.

    Parameters
    ----------
    p : int, float or str
        1, 2, ``np.inf`` or ``"inf"``.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For any other value.
    """
    if isinstance(p, str) and p.lower() in ("inf", "infinity"):
        return float("inf")
    if isinstance(p, numbers.Real) and not isinstance(p, bool) and float(p) in (1.0, 2.0, float("inf")):
        return float(p)
    raise ValueError(f"norm must be 1, 2 or 'inf' (np.inf); got {p!r}.")


def dual_norm(p: float) -> float:
    """The dual exponent q with 1/p + 1/q = 1 for p in {1, 2, inf}.

    Parameters
    ----------
    p : float
        1.0, 2.0 or inf (as :func:`check_norm` returns).

    Returns
    -------
    float
    """
    p = check_norm(p)
    return {1.0: float("inf"), 2.0: 2.0, float("inf"): 1.0}[p]


# ------------------------------------------------------------------------------- Dask arrays, lazily
def is_dask_array(A) -> bool:
    """Whether ``A`` is a Dask array (Dask is not imported to find out).

    Parameters
    ----------
    A : object

    Returns
    -------
    bool
    """
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(A, da.Array)


def check_dask_X(X, name: str = "X", n_features: int | None = None, *, finite: bool = True):
    """:func:`check_X` for a Dask array without computing it.

    2-D, numeric, known row chunks, not empty, ``n_features`` columns; cast to float64 and rechunked to one column
    chunk lazily.  Finite-ness and :func:`check_no_overflow` are one reduction pass (:func:`check_dask_values`, kind
    ``"data"``).

    Parameters
    ----------
    X : dask.array.Array of shape (L, n)
        The data.
    name : str, default "X"
        Its name, for messages.
    n_features : int, optional
        The number of columns required.
    finite : bool, default True
        Run the value checks here; False leaves them to the caller, to share the pass.

    Returns
    -------
    dask.array.Array of float64
        ``X``, lazily cast and rechunked.

    Raises
    ------
    ValueError
        If a shape, dtype or chunk check fails, or (``finite``) a value check does.
    """
    if X.ndim != 2:
        raise ValueError(f"{name} must have 2 dimension(s); got shape {X.shape}.")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric; got a Dask array of dtype {X.dtype}.")
    if any(math.isnan(c) for c in X.chunks[0]):
        raise ValueError(
            f"{name} has unknown chunk sizes (e.g. after boolean indexing); call {name}.compute_chunk_sizes() first."
        )
    if X.size == 0:
        raise ValueError(f"{name} is empty (shape {X.shape}); pass at least one entry.")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{name} has {X.shape[1]} features but {n_features} were expected (the number seen in fit).")
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    if finite:
        check_dask_values({name: ("data", X, None)})
    return X


#: dask config key: the longest a computation waits on a distributed cluster that has no worker, in seconds (or a
#: dask duration such as "2 minutes"); environment: ``DASK_RSVM_CONIC__NO_WORKERS_TIMEOUT``
NO_WORKERS_TIMEOUT_KEY = "rsvm-conic.no-workers-timeout"
#: its default
NO_WORKERS_TIMEOUT = 60.0
#: how often a waiting computation asks the scheduler for its workers, at most (seconds)
NO_WORKERS_POLL = 1.0


def no_workers_timeout() -> float:
    """The configured wait of :func:`dask_compute` on a cluster without workers, in seconds.

    Returns
    -------
    float
        The dask config ``rsvm-conic.no-workers-timeout`` (default 60), > 0.

    Raises
    ------
    ValueError
        If the configured value is not a positive duration.
    """
    import dask
    from dask.utils import parse_timedelta

    value = dask.config.get(NO_WORKERS_TIMEOUT_KEY, NO_WORKERS_TIMEOUT)
    try:
        seconds = parse_timedelta(value, default="seconds")
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(
            f"dask config {NO_WORKERS_TIMEOUT_KEY!r} must be a duration in seconds (e.g. 60 or '2 minutes'); "
            f"got {value!r}."
        ) from exc
    if seconds is None or not (seconds > 0 and math.isfinite(seconds)):
        raise ValueError(f"dask config {NO_WORKERS_TIMEOUT_KEY!r} must be a positive duration; got {value!r}.")
    return float(seconds)


def dask_compute(*collections):
    """``dask.compute(*collections)`` on the current scheduler, with a bounded wait on a cluster that loses its
    workers: every computation of a Dask fit goes through here.

    On a distributed cluster (the scheduler of a ``distributed.Client``) the computation is submitted and its
    scheduler is asked for its workers about every second while it runs.  When the cluster has had no worker for
    :func:`no_workers_timeout` seconds (dask config ``rsvm-conic.no-workers-timeout``, default 60; workers that a
    nanny restarts, or that an adaptive cluster adds, within that time let the computation go on), the computation
    is cancelled.  A fit that loses every worker thus ends about that many seconds later (plus one poll).  Other
    schedulers (threads, processes, synchronous) run ``dask.compute``.

    Parameters
    ----------
    *collections
        Dask collections.

    Returns
    -------
    tuple
        Their computed values, as ``dask.compute`` returns them.

    Raises
    ------
    WorkersLostError
        If the cluster had no worker for the configured wait.
    """
    import dask
    from dask.base import get_scheduler

    client = getattr(get_scheduler(), "__self__", None)  # the configured scheduler, or the default Client's
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - depends on the optional extra
        Client = None
    if Client is None or not isinstance(client, Client):
        return dask.compute(*collections)
    return _compute_watched(client, collections, no_workers_timeout())


def _compute_watched(client, collections, timeout: float):
    import asyncio
    import time

    from distributed import wait

    futures = client.compute(list(collections))
    idle_since = None
    while True:
        try:
            wait(futures, timeout=min(NO_WORKERS_POLL, timeout))
            return tuple(client.gather(futures))
        except (TimeoutError, asyncio.TimeoutError):
            pass
        if client.nthreads():
            idle_since = None
            continue
        now = time.monotonic()
        if idle_since is None:
            idle_since = now
        elif now - idle_since >= timeout:
            client.cancel(futures)
            raise WorkersLostError(
                f"the Dask cluster lost all its workers: its scheduler ({client.scheduler.address}) has had none "
                f"for {timeout:g} s while the fit waited for a computation, which was cancelled.  Restart or add "
                f"workers and fit again; to wait longer for workers to come back, raise the dask config "
                f"{NO_WORKERS_TIMEOUT_KEY!r} (seconds)."
            )


def dask_rows(a, X, name: str):
    """A per-sample vector (numpy or Dask, one entry per row of X) as a Dask array with X's row chunks.

    Parameters
    ----------
    a : array-like or dask.array.Array of shape (L,)
        The vector.
    X : dask.array.Array of shape (L, n)
        The data.
    name : str
        The vector's name, for messages.

    Returns
    -------
    dask.array.Array of shape (L,)

    Raises
    ------
    ValueError
        If ``a`` is not one entry per row of X.
    """
    import dask.array as da

    if not is_dask_array(a):
        a = np.asarray(a)
        if a.ndim != 1 or a.shape[0] != X.shape[0]:
            raise ValueError(f"{name} must hold one entry per row of X ({X.shape[0]}); got shape {a.shape}.")
        return da.from_array(a, chunks=(X.chunks[0],))
    if a.ndim != 1 or a.shape[0] != X.shape[0]:
        raise ValueError(f"{name} must hold one entry per row of X ({X.shape[0]}); got shape {a.shape}.")
    return a if a.chunks[0] == X.chunks[0] else a.rechunk((X.chunks[0],))


def check_dask_values(checks: dict) -> None:
    """Value checks of Dask arrays in one pass over all of them (only counts reach the client).

    Parameters
    ----------
    checks : dict
        Name -> ``(kind, array, message)``; kinds: ``"finite"`` (no NaN/inf), ``"data"`` (finite, and
        :func:`check_no_overflow`: the sum of squares of the blocks), ``"nonnegative"`` (finite and >= 0), ``"pm"``
        (labels in {-1, +1}, both present).  ``message`` None: the in-memory checks' wording.

    Raises
    ------
    ValueError
        For the first failing check.
    """
    (counts,) = dask_compute(_lazy_counts(checks))
    _raise_counts(checks, counts)


def _lazy_counts(checks: dict) -> dict:
    import dask.array as da

    lazy = {}
    for name, (kind, A, _) in checks.items():
        if kind == "finite":
            lazy[name] = (~da.isfinite(A)).sum()
        elif kind == "data":
            lazy[name] = {"bad": (~da.isfinite(A)).sum(), "squares": _block_squares(A)}
        elif kind == "nonnegative":
            lazy[name] = (~(da.isfinite(A) & (A >= 0))).sum()
        else:
            lazy[name] = da.stack([(~((A == 1) | (A == -1))).sum(), (A == 1).sum(), (A == -1).sum()])
    return lazy


def _raise_counts(checks: dict, counts: dict) -> None:
    for name, (kind, A, message) in checks.items():
        c = np.asarray(counts[name]["bad"] if kind == "data" else counts[name])
        if kind == "pm":
            if c[0] or not (c[1] and c[2]):
                raise ValueError(message or f"{name} must hold labels in {{-1, +1}} of both classes.")
        elif c:
            raise ValueError(
                message
                or (
                    f"{name} contains {int(c)} NaN or infinite value(s); impute or drop them before fitting."
                    if kind in ("finite", "data")
                    else f"{name} must hold finite, nonnegative numbers ({int(c)} are not)."
                )
            )
        elif kind == "data" and _total(counts[name]["squares"]) > OVERFLOW_LIMIT:
            _raise_dask_overflow(A, name)


def _raise_dask_overflow(A, name: str) -> None:
    """:func:`check_no_overflow`'s message for a Dask array (its figures cost two more passes, on this path only)."""
    import dask

    top = float(dask.compute(abs(A).max())[0])
    scaled = _total(dask.compute(_block_squares(A / top))[0])
    raise ValueError(overflow_message(name, top, 2.0 * math.log10(top) + math.log10(scaled)))


def _block_squares(A):
    """The sum of squares of each block of a Dask array (:func:`_sum_of_squares`), lazily: one entry a block."""
    return A.map_blocks(
        lambda block: np.full((1,) * block.ndim, _sum_of_squares(block)),
        chunks=tuple((1,) * len(c) for c in A.chunks),
        dtype=np.float64,
    )


def _total(sums) -> float:
    """The sum of the blocks' sums (inf on overflow, without numpy's warning)."""
    with np.errstate(over="ignore"):
        return float(np.sum(sums))


def _few_labels(*blocks):
    """The sorted distinct labels of the blocks, at most 3 (more than 2 is all a binary check needs)."""
    return np.unique(np.concatenate([np.ravel(b) for b in blocks]))[:3]


def check_dask_binary_labels(y, X, name: str = "y", extra: dict | None = None):
    """:func:`check_binary_labels` for labels aligned with the rows of a Dask ``X``.

    The labels' distinct values (at most 3) are found by a tree reduction over the chunks.

    Parameters
    ----------
    y : array-like or dask.array.Array of shape (L,)
        The labels.
    X : dask.array.Array of shape (L, n)
        The data.
    name : str, default "y"
        Its name, for messages.
    extra : dict, optional
        Further :func:`check_dask_values` checks, sharing the pass.

    Returns
    -------
    y_pm : dask.array.Array of shape (L,)
        Lazy labels in {-1, +1}.
    classes : ndarray of shape (2,)
        The original labels.

    Raises
    ------
    ValueError
        If the labels are not two classes, or an ``extra`` check fails.
    """
    import dask
    import dask.array as da
    from sklearn.utils.multiclass import check_classification_targets

    if y is None:
        raise ValueError(f"this estimator requires y to be passed, but the target {name} is None.")
    if is_dask_array(y) and y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    y = dask_rows(y, X, name)
    parts = [dask.delayed(_few_labels)(b) for b in y.to_delayed().ravel()]
    while len(parts) > 1:
        parts = [dask.delayed(_few_labels)(*parts[i : i + 8]) for i in range(0, len(parts), 8)]
    lazy = {"labels": parts[0]}
    if y.dtype.kind == "f":
        lazy["bad"] = (~da.isfinite(y)).sum()
    (res, counts) = dask_compute(lazy, _lazy_counts(extra or {}))
    _raise_counts(extra or {}, counts)
    if res.get("bad", 0):
        raise ValueError(f"{name} contains NaN or infinite labels; drop those samples.")
    labels = res["labels"]
    check_classification_targets(labels)
    classes = check_two_classes(labels, name, reason="a binary classifier needs samples of two classes", classes=labels)
    if classes.shape[0] > 2:
        raise ValueError(
            f"Only binary classification is supported. {name} has more than 2 classes; use a "
            "multi-class estimator (e.g. WestonWatkinsSVC) or reduce the labels to two classes."
        )
    return da.where(y == classes[1], 1.0, -1.0), classes


def _validate_dask_estimator_input(estimator, X, y, reset):
    """validate_estimator_input for a Dask X (no scikit-learn validate_data: it would compute X)."""
    if y is None and not reset:
        return check_dask_X(X, "X", n_features=getattr(estimator, "n_features_in_", None))
    if y is None:
        raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target y is None.")
    X = check_dask_X(X, "X", finite=False)
    y_pm, classes = check_dask_binary_labels(y, X, extra={"X": ("data", X, None)})
    if reset:
        estimator.n_features_in_ = X.shape[1]
        if hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
    return X, y_pm, classes


# ------------------------------------------------------------------------------------------ labels
def check_two_classes(y, name: str = "y", *, reason: str | None = None, classes=None) -> np.ndarray:
    """The sorted distinct labels of ``y``, which must hold at least two.

    The one single-class check: every estimator, builder and solver that needs two classes calls it.

    Parameters
    ----------
    y : array-like
        The labels.
    name : str, default "y"
        Its name, for messages.
    reason : str, optional
        Why two classes are needed (default: a classifier needs them).
    classes : array-like, optional
        The distinct labels when the caller already has them (e.g. ``range(n_classes)`` for class codes), which
        skips ``np.unique``.

    Returns
    -------
    ndarray
        The distinct labels.

    Raises
    ------
    ValueError
        If ``y`` holds a single label.
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


def check_symmetric(
    S, name: str = "matrix", *, rtol: float = 1e-8, atol: float = 0.0, return_scale: bool = False
) -> np.ndarray:
    """Check that the last two axes of ``S`` hold square symmetric matrices; return them symmetrised.

    Non-symmetric means ``max |S - S^T| > rtol * max(1, max |S|) + atol``.  One finite matrix (2-D) that is exactly
    symmetric is returned as is (it equals its symmetrisation bit for bit; no copy).

    Parameters
    ----------
    S : array-like of shape (..., n, n)
        One matrix or a stack.
    name : str, default "matrix"
        Its name, for messages.
    rtol, atol : float, default 1e-8, 0.0
        Tolerances of the symmetry test.
    return_scale : bool, default False
        Also return ``max(1, max |S_sym|)`` of the returned matrix (the default scale of :func:`check_psd`), from the
        same pass where it can be.

    Returns
    -------
    S_sym : ndarray of float64
        ``(S + S^T) / 2``.
    scale : float
        Only with ``return_scale``.

    Raises
    ------
    ValueError
        Naming the first bad block of a stack, if a matrix is not square, not finite or not symmetric.
    """
    S = np.asarray(S, dtype=np.float64)
    if S.ndim < 2 or S.shape[-1] != S.shape[-2]:
        raise ValueError(f"{name} must be square; got shape {S.shape}.")
    if S.ndim == 2:
        return _check_symmetric_2d(S, name, rtol, atol, return_scale)
    scale = max(1.0, float(np.max(np.abs(S)))) if S.size else 1.0
    asym = np.max(np.abs(S - np.swapaxes(S, -1, -2)), axis=(-1, -2)) if S.size else np.zeros(S.shape[:-2])
    if np.any(asym > rtol * scale + atol):
        idx = int(np.argmax(np.atleast_1d(asym)))
        where = f" (block {idx})" if S.ndim == 3 else ""
        raise ValueError(
            f"{name}{where} is not symmetric (max |S - S^T| = {float(np.max(asym)):.3g}); "
            "pass a symmetric matrix, e.g. (S + S.T) / 2."
        )
    out = 0.5 * (S + np.swapaxes(S, -1, -2))
    return (out, _max_abs_scale(out)) if return_scale else out


#: row blocks of the one-matrix symmetrisation (a block and its transposed counterpart stay in cache)
_SYM_BLOCK = 256
#: tiles of the compiled symmetry scan (an (i, j) tile and its transposed (j, i) tile stay in cache)
_SCAN_TILE = 128
#: matrices of fewer entries than this are scanned by numpy (:func:`_symmetry_scan_numpy`,
#: :func:`_low_rank_residual_numpy`): a few passes cost milliseconds where compiling the scan costs a second
_NUMPY_BELOW = 1 << 22


def _scan(S):
    """:func:`_symmetry_scan` of ``S``: numpy below :data:`_NUMPY_BELOW` entries, compiled from there on."""
    return _symmetry_scan_numpy(S) if S.size < _NUMPY_BELOW else _symmetry_scan(S, _SCAN_TILE)


def _symmetry_scan_numpy(S):
    """:func:`_symmetry_scan` with numpy's reductions (an n x n temporary): the same four values when ``S`` is
    finite (``finite`` False otherwise, where the other three are not meaningful)."""
    if S.size == 0:
        return 0.0, -np.inf, np.inf, True
    if not np.isfinite(S).all():
        return np.nan, np.nan, np.nan, False
    d = S - S.T
    return max(float(d.max()), -float(d.min())), float(S.max()), float(S.min()), True


@jit()
def _symmetry_scan(S, tile):
    """``(max |S_ij - S_ji|, max S, min S, finite)`` of one square ``S`` in one pass over tile pairs (each entry read
    once).  Meaningful only when ``finite``: the comparisons skip NaN."""
    n = S.shape[0]
    asym = 0.0
    smax = -np.inf
    smin = np.inf
    nonfinite = 0.0  # a * 0 is 0 for finite a, NaN for NaN and inf: the sum is 0 exactly when every entry is finite
    for i0 in range(0, n, tile):
        i1 = min(i0 + tile, n)
        for j0 in range(i0, n, tile):
            j1 = min(j0 + tile, n)
            for i in range(i0, i1):
                for j in range(i + 1 if j0 == i0 else j0, j1):
                    a = S[i, j]
                    b = S[j, i]
                    nonfinite += a * 0.0 + b * 0.0
                    asym = max(asym, abs(a - b))
                    smax = max(smax, max(a, b))
                    smin = min(smin, min(a, b))
    for i in range(n):
        a = S[i, i]
        nonfinite += a * 0.0
        smax = max(smax, a)
        smin = min(smin, a)
    return asym, smax, smin, nonfinite == 0.0


def _exactly_symmetric_as_is(S, asym, finite) -> bool:
    """Whether ``S`` can stand for ``(S + S^T) / 2`` itself: finite, exactly symmetric (then ``(s + s) / 2 = s`` bit for
    bit) and contiguous (the symmetrised copy would be)."""
    return finite and asym == 0.0 and (S.flags.c_contiguous or S.flags.f_contiguous)


def _check_symmetric_2d(S, name, rtol, atol, return_scale):
    """:func:`check_symmetric` for one matrix: the compiled scan decides, and an exactly symmetric finite ``S``
    is returned as is (no n x n copy); otherwise ``(S + S^T) / 2`` by row blocks (:func:`symmetric_part`).  A
    non-finite ``S`` is checked by numpy's blockwise reductions (:func:`_asymmetry_blocks`)."""
    asym, smax, smin, finite = _scan(S)
    if not finite:
        asym, smax, smin = _asymmetry_blocks(S)
    scale = max(1.0, smax, -smin)
    if asym > rtol * scale + atol:
        raise ValueError(
            f"{name} is not symmetric (max |S - S^T| = {asym:.3g}); pass a symmetric matrix, e.g. (S + S.T) / 2."
        )
    if _exactly_symmetric_as_is(S, asym, finite):
        return (S, scale) if return_scale else S
    out = _symmetrised_copy(S)  # the scan above has decided: no second one
    return (out, _max_abs_scale(out)) if return_scale else out


def _asymmetry_blocks(S):
    """``(max |S - S^T|, max S, min S)`` by row blocks with numpy's reductions, for a matrix with a NaN or an inf
    (where the scan's answer is not meaningful); a block whose reduction is NaN fails the comparisons and is passed
    over (so a NaN never counts as asymmetry)."""
    n = S.shape[0]
    asym, smax, smin = 0.0, -np.inf, np.inf
    blk = np.empty((min(_SYM_BLOCK, n), n))
    for i in range(0, n, _SYM_BLOCK):
        rows = S[i : i + _SYM_BLOCK]
        b = np.subtract(rows, S[:, i : i + _SYM_BLOCK].T, out=blk[: rows.shape[0]])
        asym = max(asym, float(b.max()), -float(b.min()))  # max |S - S^T| without an |.| pass
        smax, smin = max(smax, float(rows.max())), min(smin, float(rows.min()))
    return asym, smax, smin


def _max_abs_scale(S) -> float:
    """``max(1, max |S|)`` without an ``|S|`` temporary."""
    return max(1.0, float(np.max(S)), -float(np.min(S))) if S.size else 1.0


def symmetric_part(S) -> np.ndarray:
    """``(S + S^T) / 2`` of one square matrix.

    It is scanned first (compiled, one pass): when it is finite and exactly symmetric, ``S`` itself is returned (the
    same bits, no copy); otherwise a new array formed by row blocks (each entry the same operations as the
    whole-array expression, the same bits, no n x n temporaries).

    Parameters
    ----------
    S : ndarray of shape (n, n)
        The matrix.

    Returns
    -------
    ndarray of shape (n, n)
    """
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 2:
        return 0.5 * (S + S.T)
    asym, _, _, finite = _scan(S)
    if _exactly_symmetric_as_is(S, asym, finite):
        return S
    return _symmetrised_copy(S)


def _symmetrised_copy(S) -> np.ndarray:
    """``(S + S^T) / 2`` of one square matrix as a new array, by row blocks (each entry the same operations as the
    whole-array expression, the same bits, no n x n temporaries)."""
    out = np.empty_like(S)
    for i in range(0, S.shape[0], _SYM_BLOCK):
        blk = out[i : i + _SYM_BLOCK]
        np.add(S[i : i + _SYM_BLOCK], S[:, i : i + _SYM_BLOCK].T, out=blk)
        blk *= 0.5
    return out


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
    ``-neg_tol * scale``.

    Decided by a Cholesky factorisation of ``S + (threshold / 2) I`` (success proves ``lambda_min > -threshold``;
    cheaper than ``eigvalsh``); only when it fails are the eigenvalues computed, which decide.

    Parameters
    ----------
    S : ndarray of shape (..., n, n)
        Symmetric matrices (:func:`check_symmetric`).
    name : str, default "matrix"
        Its name, for messages.
    neg_tol : float, default 1e-8
        Relative tolerance on negative eigenvalues.
    scale : float, optional
        The scale of the tolerance (default ``max(1, max |S|)``).
    hint : str, default ""
        A sentence appended to the message (what to do).

    Raises
    ------
    ValueError
        Naming the smallest eigenvalue, if a matrix is not PSD within the tolerance.
    """
    S = np.asarray(S, dtype=np.float64)
    if scale is None:
        scale = _max_abs_scale(S)
    threshold = neg_tol * scale
    if S.ndim == 2 and low_rank_psd_ok(S, 0.5 * threshold):
        return
    if shifted_cholesky_ok(S, 0.5 * threshold):
        return
    eigmin = np.linalg.eigvalsh(S)[..., 0]
    if np.any(eigmin < -threshold):
        _raise_not_psd(name, S, eigmin, threshold, hint)


#: :func:`low_rank_psd_ok` runs for ``n >= LOW_RANK_MIN_N`` with at most ``max(8, n // LOW_RANK_DIVISOR)`` pivots
#: (capped at ``LOW_RANK_MAX``): its pivots cost ``O(n r^2)`` and its residual check ``O(n^2 r)``, a small part of
#: the ``n^3 / 3`` of a Cholesky factorisation, and a matrix of higher rank gives up after ``O(n r^2)``
LOW_RANK_MIN_N, LOW_RANK_DIVISOR, LOW_RANK_MAX = 128, 32, 64


def low_rank_psd_ok(S, slack: float, max_rank: int | None = None) -> bool:
    """Whether a low-rank factorisation proves ``lambda_min(S) >= -slack`` for one symmetric ``S`` (n x n).

    A pivoted Cholesky factorisation (largest remaining diagonal first, ``r <= max_rank`` steps) stops when the
    trace of the remaining Schur complement is below ``slack``; then ``S = R'R + E`` with ``R'R`` PSD, so
    ``lambda_min(S) >= -||E||_2 >= -||E||_F``, and ``||E||_F`` is computed explicitly (``O(n^2 r)``: one compiled
    pass for ``r <= 8``, BLAS row blocks above), plus bounds on its rounding (``n (r + 2) eps (max|S| + max diag S)`` on
    the entries, a factor ``1 + 2 (n^2 + 1) eps`` on the sum of squares): the proof holds for any symmetric ``S``,
    PSD or not.  A numerically low-rank kernel (e.g. a linear kernel of few features) is proved PSD in
    ``O(n^2 r)`` instead of the ``n^3 / 3`` of :func:`shifted_cholesky_ok`.

    Parameters
    ----------
    S : ndarray of shape (n, n)
        A symmetric matrix.
    slack : float
        The tolerance on negative eigenvalues (> 0).
    max_rank : int, optional
        The largest rank tried.

    Returns
    -------
    bool
        True if proved; False (nothing proved, the caller factorises) when ``S`` has more than ``max_rank``
        directions above ``slack``, a diagonal entry below ``-slack``, or ``n < LOW_RANK_MIN_N``.
    """
    n = S.shape[0]
    if max_rank is None:
        if n < LOW_RANK_MIN_N:
            return False
        max_rank = min(LOW_RANK_MAX, max(8, n // LOW_RANK_DIVISOR))
    d = np.array(S.diagonal(), dtype=np.float64)
    dmax = float(d.max()) if n else 0.0
    if n and float(d.min()) < -slack:
        return False  # lambda_min <= S_ii < -slack: not PSD to this slack (the caller's check says by how much)
    R = np.empty((max_rank, n))
    r = 0
    while float(d.sum()) > slack:  # tr(E) >= ||E||_F when E is PSD: the stopping rule; the check below proves it
        if r == max_rank:
            return False
        p = int(np.argmax(d))
        if d[p] <= 0.0:
            return False
        row = np.array(S[p], dtype=np.float64)  # S symmetric: row p is column p, contiguous
        if r > 8:
            row -= R[:r, p] @ R[:r]
        else:  # a few axpys without BLAS (a threaded product with an inner size of 2 can cost more than it does)
            for k in range(r):
                row -= R[k, p] * R[k]
        row /= math.sqrt(d[p])
        R[r] = row
        d -= row * row
        d[p] = 0.0
        r += 1
    Rr = R[:r]
    if r <= 8:  # a compiled pass (a threaded GEMM with an inner size of 2 took 30 ms a block under load)
        sq, smax = _low_rank_residual_numpy(S, Rr) if S.size < _NUMPY_BELOW else _low_rank_residual(S, Rr)
    else:
        sq = smax = 0.0
        E = np.empty((min(_SYM_BLOCK, n), n))
        for i in range(0, n, _SYM_BLOCK):
            Si = S[i : i + _SYM_BLOCK]
            Ei = E[: Si.shape[0]]
            np.matmul(Rr[:, i : i + _SYM_BLOCK].T, Rr, out=Ei)
            np.subtract(Si, Ei, out=Ei)
            sq += float(np.einsum("ij,ij->", Ei, Ei))
            smax = max(smax, float(Si.max()), -float(Si.min()))
    eps = np.finfo(np.float64).eps
    rounding = n * (r + 2) * eps * (smax + max(dmax, 0.0))
    # the entries' rounding above; the n^2 squares (each within a factor 1 + eps) summed in any order (within a factor
    # 1 + (n^2 - 1) eps of the exact sum): 2 (n^2 + 1) eps covers both, to first order
    return math.sqrt(sq * (1.0 + 2.0 * (n * n + 1) * eps)) + rounding <= slack


@jit(fastmath={"reassoc", "nsz"})
def _low_rank_residual(S, R):
    """``(||S - R'R||_F^2, max |S|)`` for a short ``R`` (r x n), row by row with no n x n temporary.  The sums may
    be taken in any order (vectorised); a NaN in ``S`` makes the first value NaN."""
    r, n = R.shape
    sq = 0.0
    smax = 0.0
    e = np.empty(n)
    for i in range(n):
        m = smax
        for j in range(n):
            a = S[i, j]
            e[j] = a
            m = max(m, abs(a))
        smax = m
        for k in range(r):
            c = R[k, i]
            for j in range(n):
                e[j] -= c * R[k, j]
        row = 0.0
        for j in range(n):
            row += e[j] * e[j]
        sq += row
    return sq, smax


def _low_rank_residual_numpy(S, R):
    """:func:`_low_rank_residual` with numpy (one n x n temporary; the r <= 8 rank-one updates without BLAS)."""
    E = np.array(S, dtype=np.float64)
    smax = max(0.0, float(np.max(np.abs(E)))) if E.size else 0.0
    for k in range(R.shape[0]):
        E -= np.multiply.outer(R[k], R[k])
    return float(np.einsum("ij,ij->", E, E)), smax


def shifted_cholesky_ok(S, shift: float) -> bool:
    """Whether every ``S + shift I`` has a Cholesky factor (LAPACK ``dpotrf`` on a copy for one matrix).

    Parameters
    ----------
    S : ndarray of shape (..., n, n)
        Symmetric matrices.
    shift : float
        The diagonal shift.

    Returns
    -------
    bool
    """
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
    """The one eigendecomposition behind every PSD factorisation and projection.

    Eigenvalues ascending, of the symmetric matrix (or stack) ``S`` from a single ``np.linalg.eigh``.  Tolerances are
    relative to ``scale``.  ``S`` is not symmetrised here (``eigh`` reads one triangle): pass a symmetric matrix.

    Parameters
    ----------
    S : ndarray of shape (..., n, n)
        Symmetric matrices.
    name : str, default "matrix"
        Its name, for messages.
    on_negative : {"raise", "clip", "keep"}, default "raise"
        ``"raise"``: ValueError if the smallest eigenvalue is below ``-max(neg_tol * scale, neg_atol)``; the
        remaining round-off negatives are set to 0.  ``"clip"``: negative eigenvalues are set to 0 (the projection
        onto the PSD cone, never raises).  ``"keep"``: the eigenvalues as computed (the caller inspects them).
    neg_tol, neg_atol : float, default 1e-8, 0.0
        Tolerances on negative eigenvalues.
    scale : float, optional
        Default: the spectral radius ``max |lambda|`` of each matrix, floored at 1e-300.
    drop_tol, drop_atol : float, optional
        One matrix only: keep only the eigenpairs with ``lambda > max(drop_tol * scale, drop_atol)`` (null and
        negative directions dropped).
    hint : str, default ""
        A sentence appended to the message.

    Returns
    -------
    vals : ndarray
        Eigenvalues, ascending (``r`` of them with ``drop_tol``).
    vecs : ndarray
        Eigenvectors as columns.

    Raises
    ------
    ValueError
        With ``on_negative="raise"``, if an eigenvalue is below the tolerance.

    Notes
    -----
    ``S`` is not symmetrised here (``eigh`` reads one triangle): pass a symmetric matrix.  The decomposition runs
    inside :func:`~rsvm_conic._threads.blas_threads_for` of ``n^3`` (one BLAS thread for an ``n x n`` matrix below
    ``n ~ 460``).
    """
    check_choice(on_negative, "on_negative", ("raise", "clip", "keep"))
    with blas_threads_for(float(np.shape(S)[-1]) ** 3):
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

    Parameters
    ----------
    S : ndarray of shape (..., n, n)
        Symmetric PSD matrices.
    name : str, default "matrix"
        Its name, for messages.
    form : {"left", "sqrt"}, default "left"
        ``"sqrt"``: the symmetric square root ``V diag(sqrt(lambda_+)) V'`` (n x n, stacks allowed); ``"left"``:
        ``V_r diag(sqrt(lambda_r))`` (n x r) over the kept eigenpairs (``drop_tol``: null directions dropped).
    on_negative : {"raise", "clip"}, default "raise"
        As :func:`psd_eigh` (``"keep"`` is not allowed: a factor needs nonnegative eigenvalues).
    return_eig : bool, default False
        Also return the kept eigenpairs.
    **tolerances
        ``neg_tol``, ``neg_atol``, ``scale``, ``drop_tol``, ``drop_atol``, ``hint`` of :func:`psd_eigh`.

    Returns
    -------
    A : ndarray
        The factor.
    vecs, vals : ndarray
        Only with ``return_eig``: the kept eigenpairs, ascending.

    Raises
    ------
    ValueError
        With ``on_negative="raise"``, if ``S`` is not PSD within the tolerance.
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

    PSD means ``lambda_min >= -tol * max(1, max |S|)`` (:func:`check_psd`).  The factor comes from the same
    factorisation that validated the matrices (one per matrix, not two).

    Parameters
    ----------
    S : array-like of shape (..., n, n)
        One matrix or a stack.
    name : str, default "Sigma"
        Its name, for messages.
    tol : float, default 1e-8
        Relative tolerance on negative eigenvalues.
    factor : bool or {"sqrt", "cholesky"}, default False
        False: return the symmetrised matrices.  ``"sqrt"`` (or True): the symmetric PSD square root (negative
        round-off eigenvalues clipped).  ``"cholesky"``: the Cholesky factor when every matrix is positive definite
        (a successful factorisation proves it), else the symmetric root.

    Returns
    -------
    ndarray
        The symmetrised matrices, or a factor ``A`` with ``A A' = S``.

    Raises
    ------
    ValueError
        Naming the first bad block, if a matrix is not symmetric or not PSD.
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
