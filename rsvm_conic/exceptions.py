"""Every exception and warning class of rsvm-conic, in one module that imports nothing.

Errors say what failed and what to change; warnings say what happened that the caller should know.
The modules that raise them import them from here (``rsvm_conic.solvers`` re-exports the solver ones).
"""

from __future__ import annotations

__all__ = [
    "ConstantClassifierWarning",
    "DatasetError",
    "SchedulerError",
    "SolverError",
    "SolverWarning",
    "StoreError",
    "StoreLockedError",
    "StoreWarning",
    "WorkersLostError",
]


class SolverError(RuntimeError):
    """A solver failed or returned a status that does not certify optimality."""


class SolverWarning(UserWarning):
    """A fallback happened or an inaccurate status was accepted on request."""


class ConstantClassifierWarning(UserWarning):
    """The fitted linear classifier is constant (w = 0); the message says why and what to change."""


class WorkersLostError(RuntimeError):
    """A Dask computation of a fit was cancelled: its distributed cluster had no worker left
    (:func:`rsvm_conic._validation.dask_compute`)."""


class DatasetError(ValueError):
    """A data set store that cannot be used as it is: its description (``rsvm-dataset.json``) or an array's
    Zarr metadata is damaged, a chunk is missing, truncated or altered, or it was written without chunk
    checksums.  The message names the file (or the array and the chunk) and what to do."""


class StoreError(RuntimeError):
    """The results store cannot be used as it is: its file (or lock, or side file) is a directory, or it
    cannot be read or written (a full disk, no permission).  The message names the file and what to do."""


class StoreLockedError(StoreError):
    """Another run is writing this results store (it holds ``<store>.lock``)."""


class SchedulerError(RuntimeError):
    """A Dask scheduler address that is malformed or where no scheduler answers."""


class StoreWarning(UserWarning):
    """Something about a results store worth knowing: damaged lines set aside, a stale lock taken
    over, cells reused that were computed under other package versions."""
