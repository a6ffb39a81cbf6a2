"""Named problem instances: benchmarks, paper-table reproductions and runner checks.

Every module in this package may define any of three dicts, keyed by a
dash-separated name:

* ``INSTANCES`` -- name -> :class:`rsvm_conic.runner.ProblemInstance` (``rsvm-conic check NAME``),
* ``REPRODUCTIONS`` -- name -> ``fn(quick: bool, out: pathlib.Path, **options) -> int``
  (``rsvm-conic reproduce NAME``; writes tables/figures under ``out``; returns an exit code),
* ``BENCHMARKS`` -- name -> ``fn(quick: bool) -> int`` (``rsvm-conic bench NAME``),
* ``GRIDS`` -- name -> :class:`rsvm_conic.runner.GridExperiment` (``rsvm-conic run NAME``:
  resumable, parallel through joblib/loky or a Dask cluster).

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
