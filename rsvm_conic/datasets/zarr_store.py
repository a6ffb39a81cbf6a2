"""Data sets larger than memory: chunked Zarr arrays on disk, written and read one row block at a time.

A *store* is a directory with one Zarr array per per-sample field -- ``X`` (L, n), ``y`` (L,), and
optionally ``groups`` and ``sample_radius`` (L,) -- all chunked along rows with the same row chunk,
``Sigma`` (the uncertainty matrices of the groups, small) if any, and ``rsvm-dataset.json`` (shapes,
chunking, how it was made).  :func:`open_dataset` gives the fields as Dask arrays whose chunks are the
store's, so a fit reads each row block from disk when a pass needs it and holds no more than a few
blocks per worker; the estimators' ``fit`` also takes the store's path in place of ``X``::

    make_classification_store("/data/big.zarr", 10**8, 50)          # written block by block, 40 GB
    RobustSVC(C=1.0, radius=0.5).fit("/data/big.zarr")               # X, y, Sigma, groups from the store

Writing never holds more than one row block per task: :func:`write_dataset` copies numpy or Dask
arrays block by block, :func:`make_classification_store` draws each block from its own seed (the
same distribution as :func:`~.synthetic.make_uncertain_classification`, not the same numbers), in
parallel on the current Dask scheduler.  Blocks are stored uncompressed (random floats do not
compress; reading is the cost of a pass).  Works with Zarr 2 and 3 (``pip install 'rsvm-conic[dask]'``).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["ChunkedDataset", "default_chunk_rows", "make_classification_store", "open_dataset", "write_dataset"]

META = "rsvm-dataset.json"
FIELDS = ("X", "y", "groups", "sample_radius")


def default_chunk_rows(n_features: int, target_bytes: int = 64 * 2**20) -> int:
    """Rows per chunk so that a chunk of X holds about ``target_bytes`` (64 MiB)."""
    return max(1, int(target_bytes) // (8 * max(int(n_features), 1)))


def _zarr():
    try:
        import zarr
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError("chunked stores need zarr: pip install 'rsvm-conic[dask]'") from exc
    return zarr


def _create(path: Path, shape, chunks, dtype):
    zarr = _zarr()
    if int(zarr.__version__.split(".")[0]) >= 3:
        return zarr.create_array(
            store=str(path), shape=shape, chunks=chunks, dtype=dtype, compressors=None, overwrite=True
        )
    return zarr.open_array(store=str(path), mode="w", shape=shape, chunks=chunks, dtype=dtype, compressor=None)


def _write_rows(path: str, start: int, *arrays):
    """Write one row block of each field (a Dask task: opens the store itself, so any scheduler can run it)."""
    zarr = _zarr()
    for name, block in zip(FIELDS, arrays):
        if block is not None:
            zarr.open_array(store=str(Path(path) / name), mode="r+")[start : start + block.shape[0]] = block
    return None


def _prepare(path, overwrite: bool) -> Path:
    path = Path(path)
    if path.exists():
        if not overwrite:
            raise FileExistsError(f"{path} exists; pass overwrite=True to replace it.")
        if not (path / META).exists():
            raise FileExistsError(f"{path} exists and is not a data set store ({META} missing); not replacing it.")
        shutil.rmtree(path)
    path.mkdir(parents=True)
    (path / META).write_text(json.dumps({"format": 1, "complete": False}) + "\n")  # until every block is written
    return path


def _finish(path: Path, L, n, chunk_rows, fields, Sigma, extra):
    if Sigma is not None:
        Sigma = np.asarray(Sigma, dtype=float)
        _create(path / "Sigma", Sigma.shape, Sigma.shape, "f8")[...] = Sigma
    meta = {
        "format": 1,
        "complete": True,
        "n_samples": int(L),
        "n_features": int(n),
        "chunk_rows": int(chunk_rows),
        "fields": list(fields) + (["Sigma"] if Sigma is not None else []),
        **extra,
    }
    (path / META).write_text(json.dumps(meta, indent=1) + "\n")


def write_dataset(
    path, X, y, *, Sigma=None, groups=None, sample_radius=None, chunk_rows: int | None = None, overwrite: bool = False
) -> Path:
    """Write X (L, n), numeric labels y and optional per-sample ``groups`` / ``sample_radius`` (numpy or Dask
    arrays) and ``Sigma`` to a store at ``path``, one row block (``chunk_rows`` rows, default about 64 MiB
    of X) per task on the current Dask scheduler.  Returns the path."""
    import dask

    from .._validation import is_dask_array

    L, n = X.shape
    chunk_rows = int(chunk_rows or default_chunk_rows(n))
    columns = {"X": X, "y": y, "groups": groups, "sample_radius": sample_radius}
    for name, a in columns.items():
        if a is not None and (a.shape[0] != L or (name != "X" and len(a.shape) != 1)):
            raise ValueError(f"{name} must hold one entry per row of X ({L}); got shape {a.shape}.")
        if a is not None and np.dtype(a.dtype).kind not in "biuf":
            raise ValueError(f"{name} must be numeric (encode labels as numbers); got dtype {a.dtype}.")
    path = _prepare(path, overwrite)
    present = [name for name in FIELDS if columns[name] is not None]
    for name in present:
        a = columns[name]
        _create(path / name, a.shape, (chunk_rows,) + tuple(a.shape[1:]), np.dtype(a.dtype).str)
    tasks = []
    for start in range(0, L, chunk_rows):
        blocks = []
        for name in FIELDS:
            a = columns[name]
            blk = None if a is None else a[start : start + chunk_rows]
            blocks.append(blk if blk is None or is_dask_array(blk) else np.asarray(blk))
        tasks.append(dask.delayed(_write_rows)(str(path), start, *blocks))
    dask.compute(*tasks)
    _finish(path, L, n, chunk_rows, present, Sigma, {"source": "write_dataset"})
    return path


def _class_block(start, size, n, direction, chol, separation, n_groups, seed):
    """Rows ``start:start+size`` of make_classification_store's data (their own random stream)."""
    rng = np.random.default_rng([seed, start])
    y = np.where(rng.random(size) < 0.5, -1.0, 1.0)
    groups = (y > 0).astype(np.int64) if n_groups == 2 else rng.integers(0, n_groups, size)
    X = rng.standard_normal((size, n))
    for g in range(n_groups):  # noise coloured one group at a time
        idx = np.flatnonzero(groups == g)
        X[idx] = X[idx] @ chol[g].T
    X += rng.standard_normal((size, n)) + 0.5 * separation * y[:, None] * direction
    return X, y, groups


def _write_class_block(path, start, size, *args):
    X, y, groups = _class_block(start, size, *args)
    return _write_rows(path, start, X, y, groups, None)


def make_classification_store(
    path,
    n_samples: int,
    n_features: int,
    *,
    chunk_rows: int | None = None,
    separation: float = 2.0,
    noise_scale: float = 0.3,
    n_groups: int = 2,
    random_state: int = 0,
    overwrite: bool = False,
) -> Path:
    """Two Gaussian classes seen through group noise of known covariance (as
    :func:`~.synthetic.make_uncertain_classification`) written to a store, block by block: memory per task
    is one block (``chunk_rows`` rows, default about 64 MiB of X), whatever ``n_samples``.  Each block has
    its own random stream (seeded by ``random_state`` and its first row), so the store is reproducible.
    Returns the path."""
    import dask

    L, n = int(n_samples), int(n_features)
    chunk_rows = int(chunk_rows or default_chunk_rows(n))
    rng = np.random.default_rng(random_state)
    direction = rng.standard_normal(n)
    direction /= np.linalg.norm(direction)
    Sigma = np.empty((n_groups, n, n))
    for g in range(n_groups):
        B = rng.standard_normal((n, n)) / np.sqrt(n)
        Sigma[g] = noise_scale**2 * (B @ B.T + 0.1 * np.eye(n))
    chol = np.linalg.cholesky(Sigma)
    path = _prepare(path, overwrite)
    _create(path / "X", (L, n), (chunk_rows, n), "<f8")
    _create(path / "y", (L,), (chunk_rows,), "<f8")
    _create(path / "groups", (L,), (chunk_rows,), "<i8")
    args = (n, direction, chol, float(separation), int(n_groups), int(random_state))
    dask.compute(
        *[
            dask.delayed(_write_class_block)(str(path), s, min(chunk_rows, L - s), *args)
            for s in range(0, L, chunk_rows)
        ]
    )
    _finish(
        path,
        L,
        n,
        chunk_rows,
        ("X", "y", "groups"),
        Sigma,
        {
            "source": "make_classification_store",
            "separation": separation,
            "noise_scale": noise_scale,
            "n_groups": n_groups,
            "random_state": random_state,
        },
    )
    return path


@dataclass
class ChunkedDataset:
    """A store's fields as Dask arrays (chunked like the store) and its small ``Sigma`` as numpy."""

    path: Path
    X: object
    y: object
    Sigma: np.ndarray | None = None
    groups: object = None
    sample_radius: object = None
    meta: dict = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        """Bytes of X."""
        return int(self.X.nbytes)

    def uncertainty(self) -> dict:
        """``Sigma``, ``groups``, ``sample_radius`` (those present) as keywords of an estimator's ``fit``."""
        return {
            k: v
            for k, v in (("Sigma", self.Sigma), ("groups", self.groups), ("sample_radius", self.sample_radius))
            if v is not None
        }


def open_dataset(path) -> ChunkedDataset:
    """The store at ``path`` as a :class:`ChunkedDataset` (lazy: nothing is read until a pass needs it)."""
    import dask.array as da

    path = Path(path)
    if not (path / META).exists():
        raise FileNotFoundError(
            f"{path} is not a data set store ({META} not found); write one with "
            "write_dataset or make_classification_store."
        )
    meta = json.loads((path / META).read_text())
    if not meta.get("complete"):
        raise ValueError(f"{path} is incomplete (its writing was interrupted); write it again (overwrite=True).")
    arrays = {name: da.from_zarr(str(path / name)) for name in meta["fields"] if name in FIELDS}
    Sigma = (
        np.asarray(_zarr().open_array(store=str(path / "Sigma"), mode="r")[...]) if "Sigma" in meta["fields"] else None
    )
    return ChunkedDataset(
        path, arrays["X"], arrays["y"], Sigma, arrays.get("groups"), arrays.get("sample_radius"), meta
    )
