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


def run_grid(cells: Iterable[dict], fn: Callable[[dict], dict], store: ResultsStore | None = None, *,
             n_jobs: int = 1, progress: bool = True, desc: str = "cells") -> list[dict]:
    """Run ``fn(cell)`` over all cells not yet in ``store``; return results in cell order.

    With ``n_jobs != 1`` cells run in joblib worker processes; results are still
    written by this process one by one as they arrive.
    """
    cells = list(cells)
    todo = [c for c in cells if store is None or c not in store]
    bar = tqdm(total=len(cells), initial=len(cells) - len(todo), desc=desc, disable=not progress)
    results: dict[int, dict] = {}
    try:
        if n_jobs == 1:
            for cell in todo:
                res = fn(cell)
                if store is not None:
                    store.add(cell, res)
                results[id(cell)] = res
                bar.update(1)
        else:
            from joblib import Parallel, delayed

            par = Parallel(n_jobs=n_jobs, return_as="generator")
            for cell, res in zip(todo, par(delayed(fn)(c) for c in todo)):
                if store is not None:
                    store.add(cell, res)
                results[id(cell)] = res
                bar.update(1)
    finally:
        bar.close()
    out = []
    for cell in cells:
        out.append(results[id(cell)] if id(cell) in results else store.get(cell))
    return out
