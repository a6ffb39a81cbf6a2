"""What every binary estimator of the toolkit shares."""

from __future__ import annotations


class BinaryClassifierTags:
    """Mixin (put it before ClassifierMixin): declares the estimator binary-only, so that
    scikit-learn's checks expect 'Only binary classification is supported.' on 3+ classes."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


def sample_weights(y_pm, classes, sample_weight, class_weight, *, dask: bool = False):
    """The weights ``s_i`` of the samples' loss terms (``C_i = C s_i``).

    ``sample_weight`` times the class weights, computed from the unweighted labels as scikit-learn's ``SVC`` does.
    Validated here (the public boundary).

    Parameters
    ----------
    y_pm : ndarray of shape (L,)
        Labels in {-1, +1}.
    classes : ndarray of shape (2,)
        The original labels of -1 and +1.
    sample_weight : array-like of shape (L,) or None
        Per-sample weights (>= 0).
    class_weight : None, "balanced" or dict
        ``{label: weight}``, or "balanced" for weights inversely proportional to the class frequencies.
    dask : bool, default False
        Whether the fit is on Dask arrays, whose routes take no weights.

    Returns
    -------
    ndarray of shape (L,) or None
        The weights, or None when both ``sample_weight`` and ``class_weight`` are None.

    Raises
    ------
    ValueError
        If weights are given for a Dask fit, ``sample_weight`` is invalid (wrong length, a negative or non-finite
        entry), or the weights are zero for every sample.
    """
    if sample_weight is None and class_weight is None:
        return None
    if dask:
        raise ValueError(
            "sample_weight and class_weight are not supported for samples given as a Dask array (the row-block "
            "routes take no weights); fit in memory, or repeat the samples instead."
        )
    import numpy as np

    from .._validation import check_sample_weight

    L = y_pm.shape[0]
    weights = np.ones(L) if sample_weight is None else check_sample_weight(sample_weight, L)
    if class_weight is not None:
        from sklearn.utils.class_weight import compute_class_weight

        y = classes[(y_pm > 0).astype(int)]
        per_class = compute_class_weight(class_weight, classes=classes, y=y)
        weights = weights * per_class[(y_pm > 0).astype(int)]
    if not np.all(np.isfinite(weights)) or not np.any(weights > 0):
        raise ValueError("sample_weight times class_weight is zero for every sample: give a sample positive weight.")
    return weights


def keep_weighted(weights, y_pm, classes):
    """The mask of the samples of positive weight (those of weight 0 take no part in the problem).

    Parameters
    ----------
    weights : ndarray of shape (L,)
        The samples' weights (from :func:`sample_weights`).
    y_pm : ndarray of shape (L,)
        Labels in {-1, +1}.
    classes : ndarray of shape (2,)
        The original labels, for the message.

    Returns
    -------
    ndarray of bool, shape (L,)
        True for the samples kept.

    Raises
    ------
    ValueError
        If the samples of positive weight hold a single class.
    """
    import numpy as np

    keep = weights > 0
    if not np.all(y_pm[keep] == y_pm[keep][0]):
        return keep
    raise ValueError(
        f"only samples of class {classes[int(y_pm[keep][0] > 0)]!r} have positive weight: a binary classifier needs "
        "both classes with positive sample_weight."
    )


def fit_uncertainty(Sigma, sigma_index, n_samples: int, n_features: int):
    """``(Sigma, groups)`` for :class:`~rsvm_conic.uncertainty.UncertaintySet` from the estimators' ``Sigma`` and
    ``sigma_index`` (the position of each sample's matrix along Sigma's first axis).

    The rules are unambiguous under scikit-learn's cross-validation, which slices every fit parameter whose first
    axis has the length of X (``sklearn.utils.validation._check_method_params``): per-sample arrays (a Sigma of one
    matrix per sample, ``sigma_index``, ``sample_radius``, ``sample_weight``) are sliced with the samples, and a
    shared Sigma is passed with a leading axis of length 1 (``Sigma[None]``: shape (1, d) or (1, d, d)) when its
    own first axis could equal the number of samples.  A Sigma of one matrix per sample together with
    ``sigma_index`` is rejected (sliced or not, it cannot be told apart); a (d, d) or (d,) Sigma that was sliced
    fails the shape checks, with that advice.  ``sigma_index`` need not use every matrix (a fold may miss some).

    Parameters
    ----------
    Sigma : array-like or None
        Shape (d, d) or (d,) (shared), (1, d, d) or (1, d) (shared, sliced-safe), (k, d, d) or (k, d) with
        ``sigma_index``, or (L, d, d) / (L, d) (one per sample).
    sigma_index : array-like of int, shape (L,), or None
        Index of each sample's matrix along Sigma's first axis.
    n_samples, n_features : int
        The data's shape.

    Returns
    -------
    Sigma : ndarray or None
        The matrices, one per group (or the shared one).
    groups : ndarray of int or None
        Each sample's group, or None when every sample uses the same matrix or its own.

    Raises
    ------
    ValueError
        If the shapes do not fit one of the forms above, saying which form to pass.
    """
    import numpy as np

    from .._validation import check_sigma_index, is_dask_array

    shared = "pass a shared Sigma with a leading axis of length 1 (Sigma[None]), which cross-validation never slices"
    if Sigma is None or is_dask_array(sigma_index) or isinstance(sigma_index, str):
        if Sigma is None and sigma_index is not None:
            raise ValueError("sigma_index was given without Sigma: it says which matrix of Sigma each sample uses.")
        return Sigma, sigma_index
    S = np.asarray(Sigma) if not is_dask_array(Sigma) else Sigma
    d = n_features
    if sigma_index is None:
        if S.ndim == 2 and S.shape[0] == 1:  # (1, d): one shared diagonal
            return S[0], None
        if (S.ndim == 1 and S.shape != (d,)) or (S.ndim == 2 and S.shape != (d, d)):
            what = f"diagonal of {d} entries" if S.ndim == 1 else f"{d}x{d} matrix"
            raise ValueError(
                f"without sigma_index a {S.ndim}-D Sigma is one shared {what} (n_features = {d}); got shape {S.shape}. "
                "If it went through a cross-validation splitter with as many samples as features, scikit-learn sliced "
                f"it: {shared}."
            )
        if S.ndim == 3 and S.shape[0] not in (1, n_samples):
            raise ValueError(
                f"Sigma holds {S.shape[0]} matrices for {n_samples} samples; pass sigma_index= (the position of each "
                "sample's matrix along Sigma's first axis; scikit-learn's groups= goes to the splitter, not here)."
            )
        return S, None
    if S.ndim == 1:
        return S, None  # one shared diagonal: every sample uses it
    k = S.shape[0]
    if k == n_samples and k > 1:
        raise ValueError(
            f"Sigma holds one matrix per sample ({k}) and sigma_index was given: under cross-validation scikit-learn "
            "slices such a Sigma with the samples, and an index into it would then be wrong. Pass Sigma[sigma_index] "
            "(one matrix per sample) without sigma_index."
        )
    idx = check_sigma_index(sigma_index, n_samples, k)
    used = np.unique(idx)
    return S[used], idx  # UncertaintySet numbers the groups by their sorted labels: the used matrices, in order


def drop_samples(keep, n_samples: int, Sigma, sigma_index, sample_radius):
    """``(Sigma, sigma_index, sample_radius)`` restricted to the samples ``keep`` (per-sample arrays only).

    Parameters
    ----------
    keep : ndarray of bool, shape (n_samples,)
        The samples kept.
    n_samples : int
        Number of samples before the restriction.
    Sigma, sigma_index, sample_radius : array-like or None
        The fit's uncertainty arguments; an array whose first axis has length ``n_samples`` is per sample and is
        restricted, anything else is returned as it is.

    Returns
    -------
    Sigma, sigma_index, sample_radius
        The arguments restricted to ``keep``.
    """
    import numpy as np

    from .._validation import check_sample_scale, check_sigma_index

    if sample_radius is not None:
        sample_radius = check_sample_scale(sample_radius, n_samples, "sample_radius")[keep]
    per_sample = isinstance(sigma_index, str) or (
        sigma_index is None and Sigma is not None and np.ndim(Sigma) == 3 and np.shape(Sigma)[0] == n_samples > 1
    )
    if per_sample:
        S = np.asarray(Sigma)
        Sigma = S[keep] if S.shape[0] == n_samples else S
    elif sigma_index is not None and Sigma is not None and np.ndim(Sigma) > 1:
        k = np.shape(Sigma)[0]
        if k == n_samples and k > 1:
            fit_uncertainty(Sigma, sigma_index, n_samples, np.shape(Sigma)[-1])  # raises: one matrix per sample
        sigma_index = check_sigma_index(sigma_index, n_samples, k)[keep]
    return Sigma, sigma_index, sample_radius
