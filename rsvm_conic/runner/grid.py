"""Grids of independent cells whose results are written as they finish and resumed.

A *cell* is a JSON-serialisable dict that fully specifies one unit of work
(dataset, fold, method, hyper-parameters, seed).  :class:`ResultsStore` appends
one JSON line per finished cell (write + flush + fsync, so a killed run loses at
most the cell in flight) keyed by a hash of the cell and a code version; running
the same grid again skips what is done.

Faults: a run holds ``<store>.lock`` (:class:`StoreLockedError` for a second run; a lock left
by a dead run is taken over); lines that are not records (a kill mid-write, a bad edit) and
records whose result fails the experiment's declared result fields (:mod:`.fields`: a ``null``
result, a missing field, a string where a number belongs, NaN or a value out of range) are moved
to ``<store>.damaged`` and their cells recomputed; a store that cannot be read or written (its
file or lock is a directory, a full disk) raises :class:`StoreError` naming the file; every record
notes the versions of the numerical stack (``"env"``), and reusing cells computed under other
versions is reported.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import platform
import re
import socket
import stat
import tempfile
import threading
import time
import warnings
from collections import defaultdict
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from tqdm.auto import tqdm

from .fields import ResultFields, result_problem
from ..exceptions import SchedulerError, StoreError, StoreLockedError, StoreWarning

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: runs are not locked
    fcntl = None


ENV_PACKAGES = ("numpy", "scipy", "scikit-learn", "cvxpy", "clarabel", "scs", "rsvm-conic")


@functools.lru_cache(maxsize=None)
def environment() -> dict:
    """Versions of Python and of the numerical stack (None for a package that is not installed)."""
    from importlib import metadata

    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return {"python": platform.python_version(), **{p: version(p) for p in ENV_PACKAGES}}


def cell_key(cell: dict, version: str = "") -> str:
    """The key of a cell in a results store: a hash of its specification and the experiment's version.

    Parameters
    ----------
    cell : dict
        The cell (JSON-serialisable values; others are keyed by ``str``).
    version : str, default ""
        The experiment's version.

    Returns
    -------
    str
        20 hexadecimal digits.
    """
    blob = json.dumps(cell, sort_keys=True, default=str) + "|" + version
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def seed_from_cell(cell: dict, base: int = 0) -> int:
    """A deterministic 32-bit seed derived from the cell's specification.

    Parameters
    ----------
    cell : dict
        The cell.
    base : int, default 0
        Offset giving another stream for the same cell.

    Returns
    -------
    int
        A seed in ``[0, 2**32 - 1)``.
    """
    return int(cell_key(cell, str(base)), 16) % (2**32 - 1)


def _parse_record(line: bytes) -> dict | None:
    """The record on one line, or None if the line is not one (bad UTF-8 or JSON, cut, not a record)."""
    try:
        rec = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    ok = (
        isinstance(rec, dict)
        and isinstance(rec.get("key"), str)
        and isinstance(rec.get("cell"), dict)
        and "result" in rec
    )
    return rec if ok else None


def _os_problem(path: Path, exc: OSError, doing: str, what: str = "results file") -> str:
    """One line on a file of the results store that the system refused: what and what to do."""
    if isinstance(exc, IsADirectoryError) or (exc.errno == errno.EISDIR) or path.is_dir():
        return f"{path} is a directory, not a {what}; move it away or use another --out"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return (
            f"cannot {doing} {path} ({exc.strerror or exc}); free some space and run the same command again "
            f"(finished cells are kept), or use another --out"
        )
    return f"cannot {doing} {path} ({exc.strerror or exc}); fix its permissions or use another --out"


def _atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data``: a temporary file beside it, fsync'd, then ``os.replace``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:  # make the rename itself durable
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:  # pragma: no cover - directories cannot be fsync'd everywhere
        pass


class _Lock:
    """``<store>.lock``: an exclusive ``flock`` held by one run, the file naming its owner.

    The kernel drops an ``flock`` when its process dies, however it dies, so a lock file whose
    lock can be taken was left by a run that ended without removing it (killed): it is taken over
    with a warning naming that run.  The holder removes the file before releasing the lock; a
    waiter that then gets the lock of the removed file sees that its inode is no longer the
    path's and tries again.
    """

    def __init__(self, store: Path):
        self.store, self.path, self.fd = store, Path(f"{store}.lock"), None

    def _owner(self, text: str) -> str:
        try:
            o = json.loads(text)
            return f"pid {o['pid']} on {o['host']}, started {o['started']}"
        except (ValueError, TypeError, KeyError):
            return "owner unknown"

    def acquire(self, wait: float = 0.0) -> None:
        if fcntl is None:  # pragma: no cover
            return
        deadline = time.monotonic() + max(0.0, wait)
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:  # a directory in its place, a full disk, no permission
                raise StoreError(_os_problem(self.path, exc, "create the lock", "lock file")) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() >= deadline:
                    try:
                        text = self.path.read_text(errors="replace")
                    except OSError:  # released meanwhile
                        text = ""
                    raise StoreLockedError(
                        f"{self.store} is being written by another run ({self._owner(text)}); wait for it to "
                        f"finish or use another --out"
                    ) from None
                time.sleep(0.2)
                continue
            except OSError as exc:  # pragma: no cover - a file system without flock
                os.close(fd)
                warnings.warn(f"{self.path}: cannot lock ({exc}); running without a lock", StoreWarning)
                return
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # got the lock of a file its holder removed meanwhile: try again
        left = os.read(fd, 65536).decode("utf-8", "replace").strip()
        if left:
            warnings.warn(
                f"{self.path.name}: took over the lock left by a run that ended without releasing it "
                f"({self._owner(left)}; no longer running)",
                StoreWarning,
            )
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        self.fd = fd
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(me).encode(), 0)
        except OSError as exc:  # a full disk: the lock is held all the same; release it and say why
            self.release()
            raise StoreError(_os_problem(self.path, exc, "write the lock", "lock file")) from None

    def release(self) -> None:
        if self.fd is not None:
            self.path.unlink(missing_ok=True)  # while still holding it (see the inode check above)
            os.close(self.fd)
            self.fd = None


class ResultsStore:
    """Append-only JSON-lines file of finished cells.

    Reading never changes the file and never fails on damage: lines that are not records are
    skipped (``damaged`` counts them), and so are records of this version whose result fails
    ``fields`` (the experiment's declared result fields, :mod:`.fields`; without them a result must
    be a JSON object; ``invalid`` counts them).  Inside :meth:`locked` (which :func:`run_grid` takes
    for a run) the file is re-read and both are moved to ``<store>.damaged``, so their cells are
    recomputed.  A file that cannot be read or written raises :class:`StoreError`.

    Parameters
    ----------
    path : str or os.PathLike
        The ``results.jsonl`` file (created on the first write).
    version : str, default ""
        The experiment's version: records of another version are not reused.
    fields : Record, callable or None
        The declared result fields (see :func:`~rsvm_conic.runner.fields.result_problem`).
    """

    def __init__(self, path: str | os.PathLike, version: str = "", fields: ResultFields | None = None):
        self.path = Path(path)
        self.version = version
        self.fields = fields
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = _Lock(self.path)
        self._load()

    def _problem(self, rec: dict) -> str | None:
        """Why a record of this version cannot be reused (None: it can; records of other versions are
        never reused, so they are not checked)."""
        if rec["key"] != self.key(rec["cell"]):
            return None
        return result_problem(rec["result"], rec["cell"], self.fields)

    def _load(self) -> None:
        self._done: dict[str, dict] = {}
        self._good: list[bytes] = []
        self._damaged: list[bytes] = []
        self._invalid: list[tuple[bytes, dict, str]] = []  # (line, cell, why)
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as exc:  # a directory in its place, no permission
            raise StoreError(_os_problem(self.path, exc, "read")) from None
        for line in data.split(b"\n"):  # bytes, decoded line by line: bad UTF-8 damages one line only
            if line.strip():
                rec = _parse_record(line)
                why = None if rec is None else self._problem(rec)
                if rec is None:
                    self._damaged.append(line)
                elif why is not None:
                    self._invalid.append((line, rec["cell"], why))
                else:
                    self._good.append(line)
                    self._done[rec["key"]] = rec

    @property
    def damaged(self) -> int:
        """Lines of the file that are not records (a line cut by a kill, a bad edit)."""
        return len(self._damaged)

    @property
    def invalid(self) -> int:
        """Records of this version whose result fails the declared result fields."""
        return len(self._invalid)

    @contextmanager
    def locked(self, wait: float = 0.0):
        """Hold ``<store>.lock`` for a run: another run raises :class:`StoreLockedError` (after
        waiting up to ``wait`` seconds for it).  The file is re-read (another run may have finished
        cells meanwhile) and damaged lines and invalid records are moved to ``<store>.damaged``.
        Re-entrant per object."""
        if self._lock.fd is not None:
            yield self
            return
        self._lock.acquire(wait)
        try:
            self._load()
            self._set_damaged_aside()
            yield self
        finally:
            self._lock.release()

    def _set_damaged_aside(self) -> None:
        if not self._damaged and not self._invalid:
            return
        side = Path(f"{self.path}.damaged")
        moved = self._damaged + [line for line, _, _ in self._invalid]
        try:
            with open(side, "ab") as fh:  # first secure them, then drop them from the store
                fh.write(b"".join(line + b"\n" for line in moved))
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise StoreError(_os_problem(side, exc, "write", "side file of damaged lines")) from None
        try:
            _atomic_write(self.path, b"".join(line + b"\n" for line in self._good))
        except OSError as exc:
            raise StoreError(_os_problem(self.path, exc, "rewrite")) from None
        parts = []
        if self._damaged:
            n = len(self._damaged)
            parts.append(f"{n} damaged line{'s' * (n != 1)}")
        if self._invalid:
            n = len(self._invalid)
            _, cell, why = self._invalid[0]
            first = f"cell {json.dumps(cell, sort_keys=True, default=str)}: {why}"
            parts.append(
                f"{n} record{'s' * (n != 1)} whose result fails the experiment's result fields "
                f"({first}{f'; and {n - 1} more' if n > 1 else ''})"
            )
        self._damaged, self._invalid = [], []
        warnings.warn(
            f"{self.path.name}: {' and '.join(parts)} moved to {side.name}; their cells will be recomputed",
            StoreWarning,
        )

    def set_aside(self) -> Path | None:
        """Start over: rename the file to ``<stem>.<mtime>[-n]<suffix>`` (never deleted); under :meth:`locked`."""
        if not self.path.exists():
            return None
        stem = f"{self.path.stem}.{int(self.path.stat().st_mtime)}"
        new, n = self.path.with_name(stem + self.path.suffix), 0
        while new.exists():
            n += 1
            new = self.path.with_name(f"{stem}-{n}{self.path.suffix}")
        try:
            self.path.rename(new)
        except OSError as exc:
            raise StoreError(_os_problem(self.path, exc, "rename")) from None
        self._load()
        return new

    def key(self, cell: dict) -> str:
        return cell_key(cell, self.version)

    def __contains__(self, cell: dict) -> bool:
        return self.key(cell) in self._done

    def record(self, cell: dict) -> dict | None:
        """The stored record of ``cell`` (``key``, ``cell``, ``result``, ``env``), or None."""
        return self._done.get(self.key(cell))

    def get(self, cell: dict) -> dict | None:
        rec = self._done.get(self.key(cell))
        return None if rec is None else rec["result"]

    def records(self) -> list[dict]:
        return list(self._done.values())

    def add(self, cell: dict, result: dict) -> None:
        """Append ``cell``'s record (written, flushed and fsync'd).  A result that fails the declared
        result fields is not stored: ValueError naming the cell and the field (a bug in the cell
        function or in its declaration); a file that cannot be written: :class:`StoreError`."""
        rec = {"key": self.key(cell), "cell": cell, "result": result, "env": environment()}
        line = json.dumps(rec, sort_keys=True, default=_json_default).encode() + b"\n"
        why = result_problem(json.loads(line)["result"], cell, self.fields)  # checked as it will be read
        if why is not None:
            raise ValueError(
                f"cell {json.dumps(cell, sort_keys=True, default=str)} returned a result that fails the "
                f"experiment's result fields ({why}); it is not stored"
            )
        try:
            with open(self.path, "ab+") as fh:
                if fh.seek(0, os.SEEK_END) > 0:  # a partial last line (a kill mid-write) is ended first
                    fh.seek(-1, os.SEEK_END)
                    if fh.read(1) != b"\n":
                        line = b"\n" + line
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:  # a full disk, a directory in the file's place
            raise StoreError(_os_problem(self.path, exc, "write")) from None
        self._done[rec["key"]] = rec


def _json_default(obj):
    try:
        import numpy as np

        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    except ImportError:  # pragma: no cover
        pass
    return str(obj)


def _report_other_versions(store: ResultsStore, records: list[dict]) -> None:
    """One warning for the reused records computed under other package versions than these."""
    now, old, unknown, n = environment(), defaultdict(set), 0, 0
    for rec in records:
        env = rec.get("env")
        if not isinstance(env, dict):
            unknown += 1
            continue
        diff = [k for k in now if env.get(k) != now[k]]
        for k in diff:
            old[k].add(str(env.get(k)))
        n += bool(diff)
    if not n + unknown:
        return
    what = ", ".join(f"{k} {'/'.join(sorted(old[k]))} -> {now[k]}" for k in now if k in old)
    what = (
        f"other versions ({what}{f'; {unknown} of them under unknown versions' if unknown else ''})"
        if n
        else "unknown versions (stored before versions were recorded)"
    )
    n += unknown
    warnings.warn(
        f"{n} cell{'s' * (n != 1)} in {store.path.name} {'were' if n != 1 else 'was'} computed under {what}; "
        f"reused; use --fresh or another --out to recompute them",
        StoreWarning,
    )


BACKENDS = ("loky", "dask")
_ADDRESS = re.compile(r"[a-z][a-z0-9+.-]*://(\[[0-9A-Fa-f:.]+\]|[^\s/:\[\]]+):(\d{1,5})")
_watched_parent: int | None = None


def _exit_with_parent(parent: int) -> None:
    """In a worker process whose parent is ``parent``: once per process, a daemon thread that ends
    the process within ~0.5 s of the parent's death (the worker is then reparented), so that killed
    runs leave no workers behind.  Nothing happens in ``parent`` itself or in a non-child."""
    global _watched_parent
    if _watched_parent is not None or os.getpid() == parent or os.getppid() != parent:
        return
    _watched_parent = parent

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="rsvm-conic-exit-with-parent", daemon=True).start()


def _indexed(fn, i, cell, parent: int | None = None):
    if parent is not None:
        _exit_with_parent(parent)
    return i, fn(cell)


def connect_scheduler(address: str, timeout: float | None = None):
    """A ``distributed.Client`` on the scheduler at ``address``.

    Parameters
    ----------
    address : str
        ``SCHEME://HOST:PORT``, e.g. ``tcp://127.0.0.1:8786``.
    timeout : float, optional
        Seconds to wait for the scheduler (default: Dask's connect timeout).

    Returns
    -------
    distributed.Client
        The connected client.

    Raises
    ------
    SchedulerError
        If the address is malformed or nothing answers within ``timeout``.
    ImportError
        If the ``dask`` extra is not installed.
    """
    try:
        from distributed import Client
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError("the dask backend needs the optional extra: pip install 'rsvm-conic[dask]'") from exc
    m = _ADDRESS.fullmatch(str(address).strip())
    if not m or not 0 < int(m[2]) < 65536:
        raise SchedulerError(
            f"{address!r} is not a Dask scheduler address; give SCHEME://HOST:PORT, e.g. tcp://127.0.0.1:8786"
        )
    try:
        return Client(m[0], **({} if timeout is None else {"timeout": timeout}))
    except OSError as exc:  # TimeoutError included
        reason = (
            "no answer" + (f" within {timeout:g} s" if timeout else "") if "timed out" in str(exc).lower() else str(exc)
        )
        raise SchedulerError(
            f"cannot connect to the Dask scheduler at {m[0]} ({reason}); start it or fix --scheduler"
        ) from exc


def run_grid(
    cells: Iterable[dict],
    fn: Callable[[dict], dict],
    store: ResultsStore | None = None,
    *,
    n_jobs: int = 1,
    backend: str = "loky",
    scheduler=None,
    progress: bool = True,
    desc: str = "cells",
    wait: float = 0.0,
) -> list[dict]:
    """Run ``fn(cell)`` over all cells not yet in ``store``; return results in cell order.

    Results are written by this process, one cell at a time *as each finishes* (in any
    order), so an interrupted run loses at most the cells in flight.  The bar shows cells
    done / total and an ETA.

    Parameters
    ----------
    cells : iterable of dict
        The cells.
    fn : callable
        ``fn(cell) -> dict``; picklable (a module-level function) for the parallel backends.
    store : ResultsStore, optional
        Where finished cells are kept (default: none, every cell runs).
    n_jobs : int, default 1
        With ``backend="loky"``: 1 runs in this process; otherwise joblib's loky worker processes (``-1``: one
        per core), which exit when this process dies.
    backend : {"loky", "dask"}, default "loky"
        ``"dask"``: an existing Dask distributed cluster, given by ``scheduler``.
    scheduler : str or distributed.Client, optional
        The cluster's address (``"tcp://host:8786"``) or a client, for ``backend="dask"``.
    progress : bool, default True
        Show a progress bar.
    desc : str, default "cells"
        The bar's label.
    wait : float, default 0.0
        Seconds to wait for another run holding the store's lock (:meth:`ResultsStore.locked`).

    Returns
    -------
    list of dict
        The result of every cell, in cell order (stored ones included).

    Raises
    ------
    StoreLockedError
        If another run holds the store after ``wait`` seconds.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}.")
    cells = list(cells)
    with store.locked(wait) if store is not None else nullcontext():
        stored = [None] * len(cells) if store is None else [store.record(c) for c in cells]
        todo = [i for i, rec in enumerate(stored) if rec is None]
        if len(todo) < len(cells):
            _report_other_versions(store, list({rec["key"]: rec for rec in stored if rec is not None}.values()))
        bar = tqdm(total=len(cells), initial=len(cells) - len(todo), desc=desc, disable=not progress)
        results: dict[int, dict] = {}

        def record(i, res):
            if store is not None:
                store.add(cells[i], res)
            results[i] = res
            bar.update(1)

        try:
            if backend == "dask":
                _run_dask(cells, todo, fn, scheduler, record)
            elif n_jobs == 1 or len(todo) <= 1:
                for i in todo:
                    record(i, fn(cells[i]))
            else:
                from joblib import Parallel, delayed

                par = Parallel(n_jobs=n_jobs, backend="loky", return_as="generator_unordered")
                gen = par(delayed(_indexed)(fn, i, cells[i], os.getpid()) for i in todo)
                try:
                    for i, res in gen:
                        record(i, res)
                finally:  # stopping on an error or an interrupt cancels the cells in flight: no warning for it
                    with warnings.catch_warnings():
                        warnings.filterwarnings("ignore", r"\d+ tasks which were still being processed", UserWarning)
                        gen.close()
        finally:
            bar.close()
        return [results[i] if i in results else stored[i]["result"] for i in range(len(cells))]


def _run_dask(cells, todo, fn, scheduler, record):
    try:
        from distributed import Client, as_completed
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError("the dask backend needs the optional extra: pip install 'rsvm-conic[dask]'") from exc
    if scheduler is None:
        raise ValueError(
            "the dask backend needs the address of a running scheduler (--scheduler tcp://HOST:PORT) "
            "or a distributed.Client."
        )
    client = scheduler if isinstance(scheduler, Client) else connect_scheduler(scheduler)
    try:
        futures = [client.submit(_indexed, fn, i, cells[i], pure=False) for i in todo]
        for fut in as_completed(futures):
            i, res = fut.result()
            record(i, res)
    finally:
        if client is not scheduler:
            client.close()


def default_n_jobs(quick: bool) -> int:
    """The one ``n_jobs`` default of every grid and reproduction.

    Cells pin their own BLAS threads and seed themselves, so the numbers do not depend on it.

    Parameters
    ----------
    quick : bool
        Whether the run is the reduced (quick) grid.

    Returns
    -------
    int
        1 for a quick run (small, and in this process), ``min(2, cores)`` for a full one.
    """
    return 1 if quick else min(2, os.cpu_count() or 1)


@dataclass
class GridRun:
    """One run of a :class:`GridExperiment`: where and how it ran, its cells and their results.

    Attributes
    ----------
    name : str
        The experiment's name.
    out : Path
        The output folder (``results.jsonl`` and the report's files).
    quick : bool
        Whether the reduced grid ran.
    n_jobs : int
        Worker processes used.
    backend : str
        ``"loky"`` or ``"dask"``.
    cells, results : list of dict
        The cells and their results, in cell order (``records`` merges each cell with its result).
    started : float
        ``time.perf_counter()`` when the run began.
    summary : str
        What the report returned to print.
    ok : bool
        Whether the experiment's own checks passed.
    """

    name: str
    out: Path
    quick: bool
    n_jobs: int
    backend: str
    cells: list[dict]
    results: list[dict]
    started: float = field(default_factory=time.perf_counter)  # perf_counter() when the run began
    summary: str = ""
    ok: bool = True

    @property
    def records(self) -> list[dict]:
        return [{**c, **r} for c, r in zip(self.cells, self.results)]

    def elapsed(self) -> float:
        """Wall seconds since the run began."""
        return time.perf_counter() - self.started


class GridExperiment:
    """A named grid: the one contract of every grid and paper reproduction (``rsvm-conic run NAME``,
    ``rsvm-conic reproduce NAME``).

    A grid whose cells fit on a chunked data store given at run time (``rsvm-conic run NAME --data PATH``)
    sets ``takes_data = True`` and accepts ``run(..., data=PATH)``.  Output layout: ``OUT/results.jsonl`` (one record
    per finished cell, see :class:`ResultsStore`; ``.lock`` and ``.damaged`` beside it) and the report's files beside
    it.

    Parameters
    ----------
    name, description : str
        The experiment's name and one line on it.
    cells : callable
        ``cells(quick) -> list[dict]`` lists the cells (``quick``: the reduced grid).
    fn : callable
        ``fn(cell) -> dict`` computes one, seeded from the cell (a module-level function, picklable for the
        parallel backends).
    report : callable, optional
        ``report(run: GridRun) -> (summary, ok)`` writes the tables/figures into ``run.out`` from the cells and
        their results and returns a printable summary and whether the experiment's own checks passed (the
        command's exit code is 1 otherwise).
    version : str, default "1"
        Enters every cell's key: bump it when the computation changes so that old results are not re-used.
    result_fields : Record or callable, optional
        What ``fn`` returns (:mod:`rsvm_conic.runner.fields`: a ``Record`` of fields with their types and ranges,
        or a function of the cell giving it): stored records that fail it are set aside and recomputed, so
        ``report`` only reads results that pass; a fresh result that fails it is not stored (ValueError naming
        the cell and the field).
    """

    takes_data = False

    def __init__(self, name, description, cells, fn, report=None, version="1", *, result_fields=None):
        self.name = name
        self.description = description
        self.cells = cells
        self.fn = fn
        self.report = report
        self.version = version
        self.result_fields = result_fields

    def store(self, out: str | os.PathLike) -> ResultsStore:
        """The results store of this experiment in ``out`` (``out/results.jsonl``), checking records
        against ``result_fields``."""
        from .. import __version__

        return ResultsStore(
            Path(out) / "results.jsonl",
            version=f"{self.name}:{self.version}:{__version__}",
            fields=self.result_fields,
        )

    def run(
        self,
        out: str | os.PathLike,
        *,
        quick=False,
        n_jobs: int | None = None,
        backend="loky",
        scheduler=None,
        progress=True,
        fresh=False,
        wait=0.0,
        select: Callable[[dict], bool] | None = None,
    ) -> GridRun:
        """Run the cells not yet in ``out/results.jsonl`` (:func:`run_grid`), then the report.

        ``n_jobs=None``: :func:`default_n_jobs`.  ``fresh``: the old results file is renamed first
        (never deleted).  ``select``: run and report only the cells it accepts (a part of the grid)."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        n_jobs = default_n_jobs(quick) if n_jobs is None else n_jobs
        started = time.perf_counter()
        store = self.store(out)
        cells = [c for c in self.cells(quick) if select is None or select(c)]
        with store.locked(wait):
            if fresh:  # keep the old results, never delete them
                store.set_aside()
            results = run_grid(
                cells,
                self.fn,
                store,
                n_jobs=n_jobs,
                backend=backend,
                scheduler=scheduler,
                progress=progress,
                desc=self.name,
            )
        run = GridRun(self.name, out, quick, n_jobs, backend, cells, results, started)
        if self.report is not None:
            run.summary, run.ok = self.report(run)
        return run
