"""Data sets larger than memory: chunked Zarr arrays on disk, written and read one row block at a time.

A *store* is a directory with one Zarr array per per-sample field -- ``X`` (L, n), ``y`` (L,), and
optionally ``groups`` and ``sample_radius`` (L,) -- all chunked along rows with the same row chunk,
``Sigma`` (the uncertainty matrices of the groups, small) if any, and ``rsvm-dataset.json`` (shapes,
chunking, how it was made, and every chunk's CRC-32C).  :func:`open_dataset` gives the fields as Dask
arrays whose chunks are the store's, so a fit reads each row block from disk when a pass needs it and
holds no more than a few blocks per worker; the estimators' ``fit`` also takes the store's path in
place of ``X``::

    make_classification_store("/data/big.zarr", 10**8, 50)          # written block by block, 40 GB
    RobustSVC(C=1.0, radius=0.5).fit("/data/big.zarr")               # X, y, Sigma, groups from the store

Writing never holds more than one row block per task: :func:`write_dataset` copies numpy or Dask
arrays block by block, :func:`make_classification_store` draws each block from its own seed (the
same distribution as :func:`~.synthetic.make_uncertain_classification`, not the same numbers), in
parallel on the current Dask scheduler.  Blocks are stored uncompressed (random floats do not
compress; reading is the cost of a pass).  Works with Zarr 2 and 3 (``pip install 'rsvm-conic[dask]'``:
Dask, Zarr and google-crc32c).

Every chunk is accounted for.  The writer records each array's shape, dtype, chunk count and the CRC-32C
of every chunk's values; :func:`check_dataset` (run by :func:`open_dataset`, so by ``fit(path)``) checks
the description, each array's Zarr metadata and that every chunk file is there with its size, without
reading any data; and every read of a chunk during a pass checks its CRC-32C on the values just read (no
extra pass).  A missing, truncated or altered chunk, a damaged ``rsvm-dataset.json`` or a damaged
``zarr.json`` / ``.zarray`` raises :class:`DatasetError` naming the file, the array and the chunk.  A
store written before checksums existed (store format 1) is refused with the way to write it again.
"""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from ..exceptions import DatasetError

__all__ = [
    "ChunkedDataset",
    "DatasetError",
    "check_dataset",
    "default_chunk_rows",
    "make_classification_store",
    "open_dataset",
    "write_dataset",
]

META = "rsvm-dataset.json"
FIELDS = ("X", "y", "groups", "sample_radius")
#: 2: every array's shape, dtype, chunk count and per-chunk CRC-32C in META (1: none of them)
FORMAT = 2


def default_chunk_rows(n_features: int, target_bytes: int = 64 * 2**20) -> int:
    """Rows per chunk so that a chunk of X holds about ``target_bytes``.

    Parameters
    ----------
    n_features : int
        Columns of X (float64).
    target_bytes : int, default 64 MiB
        Size of a chunk.

    Returns
    -------
    int
        Rows per chunk (at least 1).
    """
    return max(1, int(target_bytes) // (8 * max(int(n_features), 1)))


def _zarr():
    try:
        import zarr
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError("chunked stores need zarr: pip install 'rsvm-conic[dask]'") from exc
    return zarr


def _zarr_major() -> int:
    return int(_zarr().__version__.split(".")[0])


def _crc(a) -> int:
    """CRC-32C of an array's values (C order, little-endian), as written and as read: hardware-accelerated
    (``google-crc32c``, about 10 GB/s on one core, against about 1 GB/s for zlib's CRC-32)."""
    try:
        from google_crc32c import value
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError("chunked stores need google-crc32c: pip install 'rsvm-conic[dask]'") from exc
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    view = a.view()
    view.flags.writeable = False  # the extension reads read-only buffers only
    return value(view)


def _create(path: Path, shape, chunks, dtype):
    """An uncompressed Zarr array that writes every chunk, even one equal to the fill value (so that every
    chunk has its file and a missing file is always damage)."""
    zarr = _zarr()
    if _zarr_major() >= 3:
        return zarr.create_array(
            store=str(path),
            shape=shape,
            chunks=chunks,
            dtype=dtype,
            compressors=None,
            overwrite=True,
            config={"write_empty_chunks": True},
        )
    return zarr.open_array(
        store=str(path), mode="w", shape=shape, chunks=chunks, dtype=dtype, compressor=None, write_empty_chunks=True
    )


def _write_rows(targets: dict, start: int, *blocks) -> dict:
    """Write one row block of each field into ``targets`` (name -> the Zarr array made by :func:`_create`; a
    Dask task: the arrays travel with it to any scheduler).  Returns each block's CRC-32C."""
    crcs = {}
    for name, block in zip(FIELDS, blocks):
        if block is not None:
            arr = targets[name]
            block = np.ascontiguousarray(block, dtype=arr.dtype)
            arr[start : start + block.shape[0]] = block
            crcs[name] = _crc(block)
    return crcs


def _prepare(path, overwrite: bool) -> Path:
    path = Path(path)
    if path.exists():
        if not overwrite:
            raise FileExistsError(f"{path} exists; pass overwrite=True to replace it.")
        if not (path / META).exists():
            raise FileExistsError(f"{path} exists and is not a data set store ({META} missing); not replacing it.")
        shutil.rmtree(path)
    path.mkdir(parents=True)
    (path / META).write_text(json.dumps({"format": FORMAT, "complete": False}) + "\n")  # until every block is written
    return path


def _finish(path: Path, L, n, chunk_rows, targets: dict, block_crcs: list, Sigma, extra):
    """Write Sigma, then the description with every array's chunk count and CRC-32Cs; the chunk files are
    checked (as :func:`check_dataset` does) before the store is marked complete."""
    arrays = {
        name: {
            "shape": list(arr.shape),
            "dtype": np.dtype(arr.dtype).str,
            "chunks": len(block_crcs),
            "crc32c": [int(c[name]) for c in block_crcs],
        }
        for name, arr in targets.items()
    }
    if Sigma is not None:
        Sigma = np.ascontiguousarray(Sigma, dtype="<f8")
        _create(path / "Sigma", Sigma.shape, Sigma.shape, "<f8")[...] = Sigma
        arrays["Sigma"] = {"shape": list(Sigma.shape), "dtype": "<f8", "chunks": 1, "crc32c": [_crc(Sigma)]}
    meta = {
        "format": FORMAT,
        "complete": True,
        "n_samples": int(L),
        "n_features": int(n),
        "chunk_rows": int(chunk_rows),
        "fields": [name for name in FIELDS if name in targets] + (["Sigma"] if Sigma is not None else []),
        "arrays": arrays,
        **extra,
    }
    _check(path, meta)
    (path / META).write_text(json.dumps(meta, indent=1) + "\n")


def write_dataset(
    path, X, y, *, Sigma=None, groups=None, sample_radius=None, chunk_rows: int | None = None, overwrite: bool = False
) -> Path:
    """Write a data set to a row-chunked Zarr store, one row block per task, with each chunk's CRC-32C.

    The blocks are written on the current Dask scheduler; numpy or Dask arrays are accepted.

    Parameters
    ----------
    path : str or os.PathLike
        The store's directory.
    X : array-like of shape (L, n)
        The points.
    y : array-like of shape (L,)
        Numeric labels.
    Sigma : array-like, optional
        The uncertainty matrices (small; stored whole).
    groups : array-like of int, shape (L,), optional
        Each sample's matrix in ``Sigma``.
    sample_radius : array-like of shape (L,), optional
        Per-sample radii.
    chunk_rows : int, optional
        Rows per chunk (default: :func:`default_chunk_rows`, about 64 MiB of X).
    overwrite : bool, default False
        Replace an existing store.

    Returns
    -------
    Path
        The store's path.

    Raises
    ------
    ValueError
        If a per-sample array's length differs from X's, or the labels are not numeric.
    """
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
    targets = {
        name: _create(path / name, a.shape, (chunk_rows,) + tuple(a.shape[1:]), np.dtype(a.dtype).str)
        for name, a in columns.items()
        if a is not None
    }
    tasks = []
    for start in range(0, L, chunk_rows):
        blocks = []
        for name in FIELDS:
            a = columns[name]
            blk = None if a is None else a[start : start + chunk_rows]
            blocks.append(blk if blk is None or is_dask_array(blk) else np.asarray(blk))
        tasks.append(dask.delayed(_write_rows, pure=False)(targets, start, *blocks))
    crcs = dask.compute(*tasks)
    _finish(path, L, n, chunk_rows, targets, list(crcs), Sigma, {"source": "write_dataset"})
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


def _write_class_block(targets, start, size, *args):
    X, y, groups = _class_block(start, size, *args)
    return _write_rows(targets, start, X, y, groups, None)


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
    """Two Gaussian classes seen through group noise of known covariance, written to a store block by block.

    The data are those of :func:`~.synthetic.make_uncertain_classification`; memory per task is one block, whatever
    ``n_samples``.  Each block has its own random stream (seeded by ``random_state`` and its first row), so the store
    is reproducible.

    Parameters
    ----------
    path : str or os.PathLike
        The store's directory.
    n_samples, n_features : int
        Shape of X.
    chunk_rows : int, optional
        Rows per chunk (default: :func:`default_chunk_rows`, about 64 MiB of X).
    separation : float, default 2.0
        Distance between the class means.
    noise_scale : float, default 0.3
        Scale of the noise covariances.
    n_groups : int, default 2
        Number of noise groups.
    random_state : int, default 0
        Seed.
    overwrite : bool, default False
        Replace an existing store.

    Returns
    -------
    Path
        The store's path.
    """
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
    targets = {
        "X": _create(path / "X", (L, n), (chunk_rows, n), "<f8"),
        "y": _create(path / "y", (L,), (chunk_rows,), "<f8"),
        "groups": _create(path / "groups", (L,), (chunk_rows,), "<i8"),
    }
    args = (n, direction, chol, float(separation), int(n_groups), int(random_state))
    crcs = dask.compute(
        *[
            dask.delayed(_write_class_block, pure=False)(targets, s, min(chunk_rows, L - s), *args)
            for s in range(0, L, chunk_rows)
        ]
    )
    _finish(
        path,
        L,
        n,
        chunk_rows,
        targets,
        list(crcs),
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


# ----------------------------------------------------------------------------------------------- checking
def _is_int(v, lo: int = 0) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _damaged_meta(file: Path, what: str) -> DatasetError:
    return DatasetError(f"{file}: {what}; the store's description is damaged: write the store again")


def _read_meta(path: Path) -> dict:
    """The store's description, checked field by field (DatasetError naming the file and the field)."""
    file = path / META
    if not file.is_file():
        raise FileNotFoundError(
            f"{path} is not a data set store ({META} not found); write one with "
            "write_dataset or make_classification_store."
        )
    try:
        meta = json.loads(file.read_bytes())
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise _damaged_meta(file, f"not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise _damaged_meta(file, f"a JSON {type(meta).__name__}, not an object")
    if meta.get("complete") is not True:
        if meta.get("complete") is False:
            raise DatasetError(f"{path} is incomplete (its writing was interrupted); write it again (overwrite=True).")
        raise _damaged_meta(file, "'complete' missing or not true/false")
    fmt = meta.get("format", 1)
    if fmt == 1:
        redo = (
            "make_classification_store(..., overwrite=True) with the parameters recorded in it"
            if meta.get("source") == "make_classification_store"
            else "write_dataset(new_path, ...) from its arrays"
        )
        raise DatasetError(
            f"{path} was written without chunk checksums (store format 1, an older rsvm-conic), so a missing or "
            f"damaged chunk could not be detected; write it again with this version: {redo}"
        )
    if not _is_int(fmt, 1) or fmt > FORMAT:
        raise DatasetError(
            f"{file}: store format {fmt!r}, this rsvm-conic reads format {FORMAT}; upgrade rsvm-conic or write the "
            "store again"
        )
    for key in ("n_samples", "n_features", "chunk_rows"):
        if not _is_int(meta.get(key), 1):
            raise _damaged_meta(file, f"{key!r} missing or not a positive integer (got {meta.get(key)!r})")
    fields = meta.get("fields")
    known = (*FIELDS, "Sigma")
    if (
        not isinstance(fields, list)
        or not {"X", "y"} <= set(fields)
        or not set(fields) <= set(known)
        or len(set(fields)) != len(fields)
    ):
        raise _damaged_meta(file, f"'fields' must list X, y and some of {', '.join(known[2:])} (got {fields!r})")
    arrays = meta.get("arrays")
    if not isinstance(arrays, dict):
        raise _damaged_meta(file, "'arrays' missing or not an object")
    L, n, rows = meta["n_samples"], meta["n_features"], meta["chunk_rows"]
    for name in fields:
        a = arrays.get(name)
        k = 1 if name == "Sigma" else math.ceil(L / rows)
        if not isinstance(a, dict):
            raise _damaged_meta(file, f"arrays[{name!r}] missing or not an object")
        shape = a.get("shape")
        if (
            not isinstance(shape, list)
            or not all(_is_int(d) for d in shape)
            or (name != "Sigma" and shape != ([L, n] if name == "X" else [L]))
        ):
            raise _damaged_meta(file, f"arrays[{name!r}]['shape'] is {shape!r}, not the array's shape")
        try:
            np.dtype(a.get("dtype"))
        except TypeError:
            raise _damaged_meta(file, f"arrays[{name!r}]['dtype'] is {a.get('dtype')!r}, not a dtype") from None
        crcs = a.get("crc32c")
        if a.get("chunks") != k or not isinstance(crcs, list) or len(crcs) != k:
            raise _damaged_meta(file, f"arrays[{name!r}] must record {k} chunks and their CRC-32Cs")
        if not all(_is_int(c) and c < 2**32 for c in crcs):
            raise _damaged_meta(file, f"arrays[{name!r}]['crc32c'] holds a value that is not a CRC-32C")
    return meta


def _damaged_array(file, what: str) -> DatasetError:
    return DatasetError(f"{file}: {what}; the array's Zarr metadata is damaged: write the store again")


@dataclass(frozen=True)
class _Array:
    """Where one field's chunks are and how to read and check them (it goes into every read task)."""

    store: str
    name: str
    shape: tuple
    chunk_rows: int
    dtype: str
    prefix: str  # the chunk key's prefix ("c/" in Zarr 3's default encoding)
    separator: str
    chunk_bytes: int
    token: tuple  # (inode, mtime) of the Zarr metadata checked: a rewritten store is opened anew

    @property
    def n_chunks(self) -> int:
        return math.ceil(self.shape[0] / self.chunk_rows)

    def key(self, i: int) -> str:
        return self.prefix + self.separator.join([str(i)] + ["0"] * (len(self.shape) - 1))

    def rows(self, i: int) -> tuple[int, int]:
        return i * self.chunk_rows, min((i + 1) * self.chunk_rows, self.shape[0])

    def where(self, i: int) -> str:
        start, stop = self.rows(i)
        return f"chunk {i} of {self.name}" + (f" (rows {start} to {stop - 1})" if self.name != "Sigma" else "")

    def damaged(self, i: int, what: str) -> DatasetError:
        return DatasetError(
            f"{self.store}: {self.where(i)} is {what}; the store is damaged: restore the file or write the store again"
        )

    def file_problem(self, i: int) -> str | None:
        """What is wrong with chunk ``i``'s file, from its size alone (None: it is there, whole)."""
        rel = f"{self.name}/{self.key(i)}"
        try:
            size = os.stat(Path(self.store) / rel).st_size
        except FileNotFoundError:
            return f"missing ({rel} not found)"
        if size < self.chunk_bytes:
            return f"truncated ({rel} holds {size} of its {self.chunk_bytes} bytes)"
        if size > self.chunk_bytes:
            return f"the wrong size ({rel} holds {size} bytes, not {self.chunk_bytes})"
        return None

    def read(self, i: int, crc: int) -> np.ndarray:
        """Chunk ``i``'s rows, its CRC-32C checked on the values read."""
        start, stop = self.rows(i)
        try:
            block = np.asarray(_open_array(str(Path(self.store) / self.name), self.token)[start:stop])
        except Exception as exc:  # noqa: BLE001 - zarr's own errors on a damaged chunk vary by version
            raise self.damaged(i, self.file_problem(i) or f"unreadable ({type(exc).__name__}: {exc})") from exc
        if _crc(block) != crc:
            raise self.damaged(
                i, self.file_problem(i) or "altered (its CRC-32C differs from the one recorded when it was written)"
            )
        return block


@functools.lru_cache(maxsize=64)
def _open_array(directory: str, token: tuple):
    """A read-only Zarr array, opened once per process for the store version ``token`` (opening costs about
    as much as reading a small chunk)."""
    return _zarr().open_array(store=directory, mode="r")


def _layout(path: Path, name: str, entry: dict, chunk_rows: int) -> _Array:
    """One array's chunk layout from its Zarr metadata (``zarr.json``, or ``.zarray`` for Zarr format 2),
    checked against the store's description."""
    d = path / name
    file = d / "zarr.json" if (d / "zarr.json").is_file() else d / ".zarray"
    if not file.is_file():
        raise DatasetError(
            f"{path}: array {name} is missing ({name}/zarr.json or {name}/.zarray not found); write the store again"
        )
    try:
        stat = file.stat()
        m = json.loads(file.read_bytes())
    except ValueError as exc:
        raise _damaged_array(file, f"not valid JSON ({exc})") from None
    try:
        if file.name == "zarr.json":
            if m["zarr_format"] != 3 or m["node_type"] != "array" or m["chunk_grid"]["name"] != "regular":
                raise ValueError("not a regular Zarr format 3 array")
            chunks = m["chunk_grid"]["configuration"]["chunk_shape"]
            dtype = np.dtype(m["data_type"])
            codecs = [c["name"] for c in m["codecs"]]
            if codecs != ["bytes"] or m["codecs"][0].get("configuration", {}).get("endian", "little") != "little":
                raise ValueError(f"codecs {codecs}, not the uncompressed little-endian bytes this store writes")
            enc = m.get("chunk_key_encoding", {"name": "default"})
            default = enc["name"] == "default"
            if enc["name"] not in ("default", "v2"):
                raise ValueError(f"chunk key encoding {enc['name']!r}")
            sep = enc.get("configuration", {}).get("separator", "/" if default else ".")
            prefix = "c" + sep if default else ""
        else:
            if m["zarr_format"] != 2 or m["compressor"] is not None or m.get("filters") or m.get("order", "C") != "C":
                raise ValueError("not an uncompressed C-order Zarr format 2 array")
            chunks, dtype = m["chunks"], np.dtype(m["dtype"])
            sep, prefix = m.get("dimension_separator") or ".", ""
        shape = [int(v) for v in m["shape"]]
        chunks = [int(v) for v in chunks]
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        what = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
        raise _damaged_array(file, f"not the metadata of an array this store writes ({what})") from None
    rows = shape[0] if name == "Sigma" else chunk_rows
    if shape != entry["shape"] or chunks != [rows, *shape[1:]] or dtype != np.dtype(entry["dtype"]):
        raise _damaged_array(
            file,
            f"shape {shape}, chunks {chunks}, dtype {dtype.str} disagree with {META} (shape {entry['shape']}, "
            f"chunks of {rows} rows, dtype {entry['dtype']})",
        )
    if file.name == "zarr.json" and _zarr_major() < 3:
        raise DatasetError(
            f"{file}: written by Zarr 3 (format 3), which zarr {_zarr().__version__} cannot read; "
            "upgrade zarr (pip install -U zarr)"
        )
    try:
        _zarr().open_array(store=str(d), mode="r")
    except Exception as exc:  # noqa: BLE001 - what zarr itself finds wrong
        raise _damaged_array(file, f"zarr cannot open it ({type(exc).__name__}: {exc})") from None
    nbytes = math.prod(chunks) * dtype.itemsize
    return _Array(str(path), name, tuple(shape), rows, dtype.str, prefix, sep, nbytes, (stat.st_ino, stat.st_mtime_ns))


def _check(path: Path, meta: dict) -> dict[str, _Array]:
    """Every array's layout checked against ``meta``, and every chunk file there with its size."""
    layouts = {}
    for name in meta["fields"]:
        arr = layouts[name] = _layout(path, name, meta["arrays"][name], meta["chunk_rows"])
        for i in range(arr.n_chunks):
            what = arr.file_problem(i)
            if what is not None:
                raise arr.damaged(i, what)
    return layouts


def check_dataset(path) -> dict:
    """Check the store at ``path`` without reading its data: its description (``rsvm-dataset.json``), each
    array's Zarr metadata, and that every chunk file is there with its size.  Returns the description.

    Parameters
    ----------
    path : str or path-like
        The store's directory.

    Returns
    -------
    dict
        The store's description (shapes, chunking, each array's chunk CRC-32Cs, how it was made).

    Raises
    ------
    FileNotFoundError
        ``path`` holds no ``rsvm-dataset.json``.
    DatasetError
        A damaged description or Zarr metadata, a missing or wrongly sized chunk file (naming the file,
        the array and the chunk), an incomplete store, or one written without chunk checksums.
    """
    path = Path(path)
    meta = _read_meta(path)
    _check(path, meta)
    return meta


def _dask_array(arr: _Array, crcs: list):
    """``arr`` as a Dask array with the store's chunks: one task per chunk, no dependencies, each reading its
    chunk and checking its CRC-32C (one graph layer, like ``dask.array.from_zarr``)."""
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    name = f"rsvm-store-{arr.name}-{tokenize(arr, crcs)}"
    tail = (0,) * (len(arr.shape) - 1)
    dsk = {(name, i, *tail): (arr.read, i, int(crc)) for i, crc in enumerate(crcs)}
    chunks = (tuple(b - a for a, b in map(arr.rows, range(len(crcs)))), *((t,) for t in arr.shape[1:]))
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=())
    return da.Array(graph, name, chunks, meta=np.empty((0,) * len(arr.shape), dtype=arr.dtype))


@dataclass
class ChunkedDataset:
    """A store's fields as Dask arrays (chunked like the store) and its small ``Sigma`` as numpy.

    Attributes
    ----------
    path : Path
        The store.
    X, y : dask.array.Array
        Points and labels.
    Sigma : ndarray or None
        The uncertainty matrices.
    groups, sample_radius : dask.array.Array or None
        Per-sample groups and radii.
    meta : dict
        The store's description (``rsvm-dataset.json``).
    """

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
    """The store at ``path`` as a :class:`ChunkedDataset` (lazy: nothing is read until a pass needs it).

    The store is checked first (:func:`check_dataset`: description, Zarr metadata, every chunk file and its
    size), and every chunk a pass reads has its CRC-32C checked on the values read.

    Parameters
    ----------
    path : str or os.PathLike
        The store's directory.

    Returns
    -------
    ChunkedDataset
        The store's arrays.

    Raises
    ------
    DatasetError
        If the store is damaged: a missing, truncated or altered chunk (named with its array), a damaged
        description or Zarr metadata, or a store format without checksums.
    """
    path = Path(path)
    meta = _read_meta(path)
    layouts = _check(path, meta)
    crcs = {name: meta["arrays"][name]["crc32c"] for name in meta["fields"]}
    arrays = {name: _dask_array(layouts[name], crcs[name]) for name in meta["fields"] if name in FIELDS}
    Sigma = layouts["Sigma"].read(0, crcs["Sigma"][0]) if "Sigma" in meta["fields"] else None
    return ChunkedDataset(
        path, arrays["X"], arrays["y"], Sigma, arrays.get("groups"), arrays.get("sample_radius"), meta
    )
