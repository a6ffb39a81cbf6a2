import gzip

import numpy as np
import pytest

from rsvm_conic.datasets.keel import (
    TABLE41_SIZES,
    VENDORED,
    load_dataset,
    load_keel,
    parse_keel,
    train_test_split_table41,
)
from rsvm_conic.datasets.toys import make_xor_thesis


@pytest.mark.parametrize("name", sorted(VENDORED))
def test_vendored_sizes_match_table41(name):
    X, y = load_dataset(name)
    n_train, n_test = TABLE41_SIZES[name]
    assert X.shape[0] == n_train + n_test
    assert X.shape[1] == VENDORED[name][3]
    assert np.unique(y).size == VENDORED[name][4]
    assert np.all(np.isfinite(X))


def test_aliases_and_split():
    X, y = load_dataset("Liver")
    Xtr, Xte, ytr, yte = train_test_split_table41("liver", seed=1)
    assert Xtr.shape == (276, 6) and Xte.shape == (69, 6)
    # the split is a partition of the data set
    both = np.sort(np.concatenate([Xtr, Xte]).view([("", float)] * 6).ravel())
    assert np.array_equal(both, np.sort(X.view([("", float)] * 6).ravel()))


def test_header_form_and_gzip(tmp_path):
    text = (
        "@relation toy\n@attribute a real [0, 1]\n@attribute cls {p, q}\n@attribute b real\n"
        "@inputs a, b\n@outputs cls\n@data\n0.5, p, 1\n0.25, q, 2\n"
    )
    X, y = parse_keel(text)
    assert X.tolist() == [[0.5, 1.0], [0.25, 2.0]] and y.tolist() == ["p", "q"]
    p = tmp_path / "t.dat.gz"
    p.write_bytes(gzip.compress(b"1,2,3\n4,5,6\n"))
    X, y = load_keel(p)
    assert X.shape == (2, 2) and y.tolist() == [3, 6]


@pytest.mark.parametrize("text", ["", "1,2\n3\n", "1,?,0\n2,3,1\n", "a,b,0\n1,2,1\n", "5\n6\n"])
def test_bad_input_raises(text):
    with pytest.raises(ValueError):
        parse_keel(text)


def test_bad_names_raise(tmp_path):
    with pytest.raises(ValueError):
        load_dataset("iris")
    with pytest.raises(ValueError):
        load_keel(tmp_path / "missing.dat")
    with pytest.raises(ValueError):
        train_test_split_table41("glass")


def test_xor_toy():
    X, y, sub = make_xor_thesis(20, seed=3)
    assert X.shape == (80, 2) and np.all((X >= 1) & (X <= 9))
    assert np.bincount(y).tolist() == [40, 40]
    # XOR: the label is the parity of the quadrant
    q = (X[:, 0] > 5).astype(int) ^ (X[:, 1] > 5).astype(int)
    assert np.array_equal(q, y)
    with pytest.raises(ValueError):
        make_xor_thesis(0)


def test_provenance_lists_every_checksum_and_every_table42_set():
    """Issue 15: PROVENANCE.md records the sha256 of each vendored file (checked against the file itself and
    the loader's table), and the 19 data sets of thesis Table 4.2 are either vendored or listed as not."""
    import hashlib
    import re

    from rsvm_conic.datasets.keel import DATA_DIR, NOT_VENDORED

    text = (DATA_DIR / "PROVENANCE.md").read_text()
    for name, (fname, sha, *_rest) in VENDORED.items():
        raw = gzip.decompress((DATA_DIR / fname).read_bytes())
        assert hashlib.sha256(raw).hexdigest() == sha, fname
        row = next(line for line in text.splitlines() if line.startswith(f"| {fname[: -len('.gz')]} "))
        assert sha in row, fname
    assert len(VENDORED) + len(NOT_VENDORED) == 19
    for key in NOT_VENDORED:
        assert re.sub(r" \(.*", "", key).split()[0] in text, key
