"""Grids of independent cells whose results are written as they finish and resumed.

A *cell* is a JSON-serialisable dict that fully specifies one unit of work
(dataset, fold, method, hyper-parameters, seed).  :class:`ResultsStore` appends
one JSON line per finished cell (write + flush + fsync, so a killed run loses at
most the cell in flight) keyed by a hash of the cell and a code version; running
the same grid again skips what is done.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable

from tqdm.auto import tqdm


def cell_key(cell: dict, version: str = "") -> str:
    blob = json.dumps(cell, sort_keys=True, default=str) + "|" + version
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def seed_from_cell(cell: dict, base: int = 0) -> int:
    """A deterministic 32-bit seed derived from the cell's specification."""
    return (int(cell_key(cell, str(base)), 16) % (2**32 - 1))


class ResultsStore:
    """Append-only JSON-lines file of finished cells."""

    def __init__(self, path: str | os.PathLike, version: str = ""):
        self.path = Path(path)
        self.version = version
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._done: dict[str, dict] = {}
        if self.path.exists():
            with open(self.path, "rb+") as fh:  # a run killed mid-write leaves a partial last line:
                fh.seek(0, os.SEEK_END)          # end it so the next record starts on its own line
                if fh.tell() > 0:
                    fh.seek(-1, os.SEEK_END)
                    if fh.read(1) != b"\n":
                        fh.write(b"\n")
            with open(self.path, "r", encoding="utf-8") as fh:
                for line in fh:
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut by a crash: that cell is simply redone
                    self._done[rec["key"]] = rec

    def key(self, cell: dict) -> str:
        return cell_key(cell, self.version)

    def __contains__(self, cell: dict) -> bool:
        return self.key(cell) in self._done

    def get(self, cell: dict) -> dict | None:
        rec = self._done.get(self.key(cell))
        return None if rec is None else rec["result"]

    def records(self) -> list[dict]:
        return list(self._done.values())

    def add(self, cell: dict, result: dict) -> None:
        rec = {"key": self.key(cell), "cell": cell, "result": result}
        line = json.dumps(rec, sort_keys=True, default=_json_default) + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
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


BACKENDS = ("loky", "dask")


def _indexed(fn, i, cell):
    return i, fn(cell)


def run_grid(cells: Iterable[dict], fn: Callable[[dict], dict], store: ResultsStore | None = None, *,
             n_jobs: int = 1, backend: str = "loky", scheduler=None, progress: bool = True,
             desc: str = "cells") -> list[dict]:
    """Run ``fn(cell)`` over all cells not yet in ``store``; return results in cell order.

    * ``backend="loky"`` (default): ``n_jobs == 1`` runs in this process; otherwise joblib's
      loky worker processes.
    * ``backend="dask"``: an existing Dask distributed cluster, ``scheduler`` being its address
      (``"tcp://host:8786"``) or a ``distributed.Client``.

    Results are written by this process, one cell at a time *as each finishes* (in any
    order), so an interrupted run loses at most the cells in flight; ``fn`` must be
    picklable (a module-level function) for the parallel backends.  The bar shows cells
    done / total and an ETA.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}.")
    cells = list(cells)
    todo = [i for i, c in enumerate(cells) if store is None or c not in store]
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
            for i, res in par(delayed(_indexed)(fn, i, cells[i]) for i in todo):
                record(i, res)
    finally:
        bar.close()
    return [results[i] if i in results else store.get(cells[i]) for i in range(len(cells))]


def _run_dask(cells, todo, fn, scheduler, record):
    try:
        from distributed import Client, as_completed
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError("the dask backend needs the optional extra: pip install 'rsvm-conic[dask]'") from exc
    if scheduler is None:
        raise ValueError("the dask backend needs the address of a running scheduler (--scheduler tcp://HOST:PORT) "
                         "or a distributed.Client.")
    client = scheduler if isinstance(scheduler, Client) else Client(scheduler)
    try:
        futures = [client.submit(_indexed, fn, i, cells[i], pure=False) for i in todo]
        for fut in as_completed(futures):
            i, res = fut.result()
            record(i, res)
    finally:
        if client is not scheduler:
            client.close()


class GridExperiment:
    """A named grid: ``cells(quick)`` lists the cells, ``fn(cell)`` computes one (a module-level
    function, seeded from the cell), ``summarize(records, out)`` writes tables/figures and
    returns a printable summary.  ``version`` enters every cell's key: bump it when the
    computation changes so that old results are not re-used."""

    def __init__(self, name, description, cells, fn, summarize=None, version="1"):
        self.name = name
        self.description = description
        self.cells = cells
        self.fn = fn
        self.summarize = summarize
        self.version = version

    def run(self, out: str | os.PathLike, *, quick=False, n_jobs=1, backend="loky", scheduler=None,
            progress=True, fresh=False) -> tuple[list[dict], str]:
        from .. import __version__

        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        path = out / "results.jsonl"
        if fresh and path.exists():  # keep the old results, never delete them
            path.rename(out / f"results.{int(os.path.getmtime(path))}.jsonl")
        store = ResultsStore(path, version=f"{self.name}:{self.version}:{__version__}")
        cells = self.cells(quick)
        results = run_grid(cells, self.fn, store, n_jobs=n_jobs, backend=backend, scheduler=scheduler,
                           progress=progress, desc=self.name)
        records = [{**c, **r} for c, r in zip(cells, results)]
        summary = self.summarize(records, out) if self.summarize else ""
        return records, summary
