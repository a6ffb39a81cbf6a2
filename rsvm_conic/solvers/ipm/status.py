"""How a run of the robust SVM's interior point that did not reach "optimal" ends (in memory and on row blocks
alike): :func:`finish_status` raises a SolverError saying what to do, or warns when an inaccurate point is accepted."""

from __future__ import annotations

import warnings

import numpy as np

from ..._validation import dask_compute, is_dask_array
from ...exceptions import SolverError, SolverWarning

__all__ = ["WELL_SCALED", "column_rms", "finish_status", "scale_advice"]

#: X counts as badly scaled when the root mean square of one of its nonzero columns lies outside this range, far
#: from standardised data's 1 (``rsvm-conic bench robust-ipm-scale``: the interior point certified two-group robust
#: SVMs whose columns' root mean squares lay anywhere from 1e-7 to 1e5, and failed in 5 of the 6 runs with a column
#: at 1e6 or above).
WELL_SCALED = (1e-3, 1e3)


def column_rms(X) -> np.ndarray:
    """The root mean square of each column of ``X`` (numpy, or Dask: one pass).

    Parameters
    ----------
    X : ndarray or dask.array.Array of shape (L, n)
        The samples.

    Returns
    -------
    ndarray of shape (n,)
    """
    if is_dask_array(X):
        (ms,) = dask_compute((X * X).mean(axis=0))
        return np.sqrt(np.asarray(ms, dtype=float))
    return np.sqrt(np.einsum("ij,ij->j", X, X) / max(X.shape[0], 1))


def scale_advice(rms, alternative: str) -> str:
    """What to do after a numerical error, from the root mean squares ``rms`` of X's columns: standardise X only
    when a nonzero column lies outside :data:`WELL_SCALED`; else ``alternative`` (another route).

    Parameters
    ----------
    rms : ndarray of shape (n,)
        The root mean squares of X's columns.
    alternative : str
        The advice naming another route.

    Returns
    -------
    str
    """
    rms = np.asarray(rms, dtype=float)
    live = rms[rms > 0]
    if not live.size:
        return alternative
    lo, hi = float(live.min()), float(live.max())
    span = f"X's nonzero columns have root mean squares from {lo:.1e} to {hi:.1e}"
    if lo < WELL_SCALED[0] or hi > WELL_SCALED[1]:
        return f"{span}: standardise X (e.g. sklearn's StandardScaler), or {alternative}"
    return f"{span}, so rescaling X will not help: {alternative}"


def finish_status(info, accept_inaccurate, rms=None, alternative="use solver='clarabel'"):
    """A run that did not reach "optimal": SolverError saying what to do, or with ``accept_inaccurate`` a
    SolverWarning naming the status (in memory and on Dask row blocks alike).  ``rms``: a callable returning the
    root mean squares of X's columns, called for a numerical error only (:func:`scale_advice`); ``alternative``:
    the advice naming another route.

    Parameters
    ----------
    info : dict
        The run's ``status``, ``iterations`` and measures.
    accept_inaccurate : bool
        Warn rather than raise.
    rms : callable, optional
        Returns the root mean squares of X's columns.
    alternative : str
        The advice naming another route.

    Raises
    ------
    SolverError
        When the status is not ``"optimal"`` and ``accept_inaccurate`` is False.
    """
    if info["status"] == "optimal":
        return
    msg = (
        f"robust IPM stopped with status {info['status']!r} after {info['iterations']} iterations "
        f"(gap_rel {info['gap_rel']:.2e}, pres {info['pres']:.2e}, dres {info['dres']:.2e})"
    )
    if not accept_inaccurate:
        if info["status"] == "max_iter":
            hint = "raise max_iter or loosen the tolerances"
        else:
            hint = scale_advice(rms() if rms is not None else [], alternative)
        raise SolverError(f"{msg}: {hint}.")
    warnings.warn(
        msg + "; accepted on request (accept_inaccurate=True), not certified optimal.", SolverWarning, stacklevel=3
    )
