"""The one numba decorator of the package: :func:`jit`.

A function decorated with ``@jit(...)`` is handed to numba (``numba.njit``, nopython mode) on its first call, and
numba is imported then: ``import rsvm_conic`` loads no numba.  The machine code is cached on disk (numba's
``cache=True``) when numba finds a writable cache directory (``NUMBA_CACHE_DIR``, the package's ``__pycache__``
or the user's cache directory); when it finds none (a read-only installation with an unwritable home), the
functions are compiled in memory in every process instead, and one :class:`RuntimeWarning` per process says so
and how to keep the cache (``NUMBA_CACHE_DIR`` set to a writable directory).

A compiled function may have a numpy twin (``fn.numpy``: a vectorised function with the same arguments and results,
installed by the module that defines both).  Inside ``with numpy_paths(True):`` (a solver's choice for small data, see
:data:`rsvm_conic.solvers.ipm.cone_loops.NUMPY_BELOW`) calls from Python go to the twin, and nothing is compiled: a
small fit in a fresh process imports no numba.  The choice is per context (:mod:`contextvars`): a thread or a Dask
task that did not make it runs the compiled code.

Compiled functions call each other by their module-level names: at the first call of any of a module's compiled
functions, every compiled function of that module is handed to numba, and the module's names (and names it
imported from other compiled modules) are bound to numba's dispatchers, which is what numba resolves when it
compiles a call from one compiled function to another.  Names imported elsewhere keep the :class:`Compiled`
wrapper, which forwards each call to the dispatcher.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import threading
import warnings

__all__ = ["Compiled", "jit", "numpy_paths"]

_NUMPY_PATHS = contextvars.ContextVar("rsvm_conic_numpy_paths", default=False)

_LOCK = threading.RLock()
#: module name -> its compiled functions not yet handed to numba, in definition order
_PENDING: dict[str, list[Compiled]] = {}
_warned = False


def jit(**options):
    """Decorator: compile the function with ``numba.njit(**options)`` on its first call, cached when possible.

    Parameters
    ----------
    **options
        numba's ``njit`` options (``error_model``, ``fastmath``, ``inline``, ...); ``cache`` is chosen here.

    Returns
    -------
    callable
        A decorator turning a Python function into a :class:`Compiled` function.
    """
    if "cache" in options:
        raise TypeError("jit chooses numba's cache itself; do not pass cache=.")

    def decorate(py_func):
        return Compiled(py_func, options)

    return decorate


@contextlib.contextmanager
def numpy_paths(enabled: bool = True):
    """Context manager: inside it, calls of compiled functions that have a numpy twin run the twin (``enabled``).

    Parameters
    ----------
    enabled : bool, default=True
        Whether the numpy twins run; ``False`` restores the compiled code inside an enclosing ``numpy_paths()``.

    Yields
    ------
    None
    """
    token = _NUMPY_PATHS.set(bool(enabled))
    try:
        yield
    finally:
        _NUMPY_PATHS.reset(token)


#: every compiled function defined so far (the numpy twins are looked up here once a module's names are bound)
_ALL: list = []


class Compiled:
    """A function compiled by numba on its first call (see the module docstring); calls go to the dispatcher.

    Parameters
    ----------
    py_func : callable
        The Python function compiled.
    options : dict
        Keyword arguments of ``numba.njit`` (e.g. ``cache``, ``fastmath``).
    """

    def __init__(self, py_func, options: dict):
        functools.update_wrapper(self, py_func)
        self.py_func = py_func
        self.options = dict(options)
        self.dispatcher = None
        self.numpy = None  # the numpy twin, if the defining module installs one
        with _LOCK:
            _PENDING.setdefault(py_func.__module__, []).append(self)
            _ALL.append(self)  # binding replaces the module's name by the dispatcher: the registry keeps the twins

    def __call__(self, *args, **kwargs):
        if self.numpy is not None and _NUMPY_PATHS.get():
            return self.numpy(*args, **kwargs)
        dispatcher = self.dispatcher
        if dispatcher is None:
            with _LOCK:
                _bind_module(self.py_func.__module__)
            dispatcher = self.dispatcher
        return dispatcher(*args, **kwargs)

    def __reduce__(self):  # by reference, as for a function: the module's name (the dispatcher once bound)
        return (_lookup, (self.py_func.__module__, self.py_func.__qualname__))

    def __repr__(self) -> str:
        state = "compiled" if self.dispatcher is not None else "not yet compiled"
        return f"<rsvm_conic compiled function {self.py_func.__module__}.{self.py_func.__qualname__} ({state})>"


def _lookup(module: str, qualname: str):
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _bind_module(module: str) -> None:
    """Hand every pending compiled function of ``module`` to numba, then bind the module's names of compiled
    functions (its own and imported ones, whose modules are bound first) to the dispatchers."""
    pending = _PENDING.pop(module, [])
    if not pending:
        return
    for fn in pending:
        fn.dispatcher = _dispatcher(fn.py_func, fn.options)
    namespace = pending[0].py_func.__globals__
    for name, value in list(namespace.items()):
        if isinstance(value, Compiled):
            if value.dispatcher is None:
                _bind_module(value.py_func.__module__)
            namespace[name] = value.dispatcher


def _dispatcher(py_func, options: dict):
    """``numba.njit(cache=True, **options)(py_func)``; without the cache when numba finds no writable cache
    directory (it raises RuntimeError at decoration then), with one RuntimeWarning per process."""
    global _warned
    import numba

    try:
        return numba.njit(cache=True, **options)(py_func)
    except RuntimeError as exc:
        reason = str(exc)
    dispatcher = numba.njit(**options)(py_func)  # raises if something other than the cache was wrong
    if not _warned:
        _warned = True
        warnings.warn(
            f"numba cannot cache rsvm_conic's compiled functions ({reason}); they are compiled in every process "
            "instead (seconds at the first fit). Set NUMBA_CACHE_DIR to a writable directory to cache them.",
            RuntimeWarning,
            stacklevel=4,
        )
    return dispatcher
