"""Named problem instances: benchmarks, paper-table reproductions and runner checks.

Every module in this package may define any of four dicts, keyed by a
dash-separated name:

* ``INSTANCES`` -- name -> :class:`rsvm_conic.runner.ProblemInstance` (``rsvm-conic check NAME``),
* ``REPRODUCTIONS`` -- name -> :class:`rsvm_conic.runner.GridExperiment` (``rsvm-conic reproduce NAME``:
  a paper's table or figure),
* ``GRIDS`` -- name -> :class:`rsvm_conic.runner.GridExperiment` (``rsvm-conic run NAME``: other grids),
* ``BENCHMARKS`` -- name -> ``fn(quick: bool) -> int`` (``rsvm-conic bench NAME``).

Reproductions and grids share one contract and one code path: independent cells (``cells(quick)``,
``fn(cell)``, each seeded from its specification), run resumably and in parallel (joblib/loky or a
Dask cluster; ``n_jobs`` default :func:`rsvm_conic.runner.default_n_jobs`: 1 with ``quick``, else
``min(2, cores)``), then a report that writes the tables/figures from the cells and returns a summary
and whether the experiment's checks passed (exit code 0 / 1).

Output layout of every grid and reproduction, in ``OUT`` (``--out``; default ``results/NAME``, or
``results/NAME-quick`` with ``--quick``):

* ``results.jsonl`` -- one JSON record per finished cell (cell, result, package versions), resumed
  by the next run; ``results.jsonl.lock`` while a run writes it, ``results.jsonl.damaged`` for lines
  set aside; ``--fresh`` renames the old file;
* the report's tables (``.md``, ``.csv``, ``.json``) and figures (``.png``) beside it, named in each
  module's docstring.

Modules are discovered automatically; adding a file is enough.
"""

from __future__ import annotations

import importlib
import pkgutil

KINDS = ("INSTANCES", "REPRODUCTIONS", "BENCHMARKS", "GRIDS")


def _modules():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            yield importlib.import_module(f"{__name__}.{info.name}")


def registry(kind: str) -> dict:
    """All entries of one kind across the package's modules."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    out = {}
    for mod in _modules():
        for name, entry in getattr(mod, kind, {}).items():
            if name in out:
                raise RuntimeError(f"problem name {name!r} is defined twice ({mod.__name__})")
            out[name] = entry
    return out


def get(kind: str, name: str):
    reg = registry(kind)
    if name not in reg:
        raise KeyError(f"no {kind[:-1].lower()} named {name!r}; available: {', '.join(sorted(reg)) or 'none'}")
    return reg[name]
