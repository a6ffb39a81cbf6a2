"""BLAS threads per solve: one thread where the matrices are small, the caller's setting where they are large.

A solver wraps its solve in ``with blas_threads_for(flops):``, ``flops`` the cost of its largest BLAS call (e.g.
``L (n + 1)^2`` for the robust SVM's Schur matrix, ``n^3`` for an ``n x n`` factorisation).  Below
:data:`SMALL_FLOPS` the BLAS libraries are limited to one thread for the solve (as scikit-learn does around its
small-BLAS loops): on small matrices a call takes microseconds, and threads that wait for each other lose
far more than that as soon as other processes hold the cores (``rsvm-conic bench first-hour`` measures it
beside two busy processes).  From :data:`SMALL_FLOPS` on, nothing is changed.

The user keeps the usual control, :func:`threadpoolctl.threadpool_limits`::

    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):  # every fit inside: one BLAS thread
        clf.fit(X, y)

The choice here only ever lowers the number of threads to one, so it never raises a limit set outside.
``rsvm-conic bench first-hour`` measures the default against one and all threads beside two busy processes.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading

__all__ = ["SMALL_FLOPS", "blas_threads_by", "blas_threads_for"]

#: Solves whose largest BLAS call costs fewer floating-point operations than this run on one BLAS thread
#: (about 30 ms of one core at 3 GFLOP/s: a call this long amortises the threads' start and wait).
SMALL_FLOPS = 1e8

_LOCK = threading.Lock()
_CONTROLLER: dict = {}


def _controller():
    """A ``threadpoolctl.ThreadpoolController`` of the BLAS libraries loaded now.  Its scan of the loaded libraries
    (about 4 ms) is kept while no module has been imported since: a library (e.g. scipy's own OpenBLAS) is loaded
    only by importing an extension module, and a controller built before it would leave it unlimited."""
    with _LOCK:
        if _CONTROLLER.get("modules") != len(sys.modules):
            from threadpoolctl import ThreadpoolController

            _CONTROLLER["controller"] = ThreadpoolController()
            _CONTROLLER["modules"] = len(sys.modules)
        return _CONTROLLER["controller"]


def blas_threads_for(flops: float):
    """The BLAS thread context of a solve whose largest BLAS call costs ``flops`` floating-point operations.

    Parameters
    ----------
    flops : float
        The cost of the solve's largest BLAS call.

    Returns
    -------
    contextlib.AbstractContextManager
        One BLAS thread below :data:`SMALL_FLOPS` (``threadpoolctl``'s limit, restored on exit), else a context
        that changes nothing (the caller's setting, e.g. an enclosing ``threadpool_limits``).
    """
    if flops >= SMALL_FLOPS:
        return contextlib.nullcontext()
    return _controller().limit(limits=1, user_api="blas")


def blas_threads_by(flops_of):
    """Decorator: run a solver inside :func:`blas_threads_for` of ``flops_of(*args, **kwargs)`` (its arguments'
    largest BLAS call).

    Parameters
    ----------
    flops_of : callable
        Takes the solver's arguments, returns the cost of its largest BLAS call in floating-point operations.

    Returns
    -------
    callable
        The decorator.
    """

    def decorate(fn):
        @functools.wraps(fn)
        def solver(*args, **kwargs):
            with blas_threads_for(flops_of(*args, **kwargs)):
                return fn(*args, **kwargs)

        return solver

    return decorate
