"""Chunked stores on disk (rsvm_conic.datasets.zarr_store) and the paths that take one: ``fit(path)``,
``rsvm-conic run robust-outofcore --data`` and ``rsvm-conic check robust-outofcore --data``."""

import contextlib
import io
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

da = pytest.importorskip("dask.array")
pytest.importorskip("zarr")

from rsvm_conic.cli import main  # noqa: E402
from rsvm_conic.datasets.zarr_store import (  # noqa: E402
    META,
    check_dataset,
    make_classification_store,
    open_dataset,
    write_dataset,
)
from rsvm_conic.exceptions import DatasetError  # noqa: E402
from rsvm_conic.estimators import NominalSVC, RobustSVC  # noqa: E402


def test_write_and_open_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(1000, 3)), np.where(rng.random(1000) < 0.5, 1, -1)
    groups, radius = rng.integers(0, 3, 1000), rng.uniform(0.5, 1.5, 1000)
    Sigma = np.stack([np.eye(3) * s for s in (0.1, 0.2, 0.3)])
    for name, Xin in (("np", X), ("dask", da.from_array(X, chunks=(333, 2)))):
        path = write_dataset(tmp_path / name, Xin, y, Sigma=Sigma, groups=groups, sample_radius=radius, chunk_rows=256)
        ds = open_dataset(path)
        assert ds.X.chunks[0] == (256, 256, 256, 232) and ds.y.chunks == ds.groups.chunks
        np.testing.assert_array_equal(ds.X.compute(), X)
        np.testing.assert_array_equal(ds.y.compute(), y)
        np.testing.assert_array_equal(ds.groups.compute(), groups)
        np.testing.assert_array_equal(ds.sample_radius.compute(), radius)
        np.testing.assert_array_equal(ds.Sigma, Sigma)
        assert ds.meta["n_samples"] == 1000 and ds.nbytes == X.nbytes
        assert set(ds.uncertainty()) == {"Sigma", "groups", "sample_radius"}


def test_generated_store_is_reproducible_and_written_by_blocks(tmp_path):
    a = open_dataset(make_classification_store(tmp_path / "a", 5000, 4, chunk_rows=1200, random_state=3))
    b = open_dataset(make_classification_store(tmp_path / "b", 5000, 4, chunk_rows=1200, random_state=3))
    X, y, g = a.X.compute(), a.y.compute(), a.groups.compute()
    np.testing.assert_array_equal(X, b.X.compute())
    assert a.X.numblocks == (5, 1) and a.Sigma.shape == (2, 4, 4)
    np.testing.assert_array_equal(g, (y > 0).astype(int))  # one noise covariance per class
    assert 0.4 < np.mean(y > 0) < 0.6 and np.all(np.isfinite(X))
    # blocks have their own random streams: no two blocks repeat
    assert not np.allclose(X[:1200], X[1200:2400])


def test_fit_takes_a_store_path(tmp_path):
    path = make_classification_store(tmp_path / "d", 3000, 5, chunk_rows=700)
    ds = open_dataset(path)
    X, y, g = ds.X.compute(), ds.y.compute(), ds.groups.compute()
    est = RobustSVC(C=1.0, radius=0.5).fit(str(path))
    ref = RobustSVC(C=1.0, radius=0.5).fit(X, y, Sigma=ds.Sigma, sigma_index=g)
    assert est.objective_ == pytest.approx(ref.objective_, rel=1e-8) and est.solver_stats_["status"] == "optimal"
    nom = NominalSVC(C=1.0).fit(path)  # the nominal model takes no uncertainty from the store
    assert nom.objective_ == pytest.approx(NominalSVC(C=1.0, solver="ipm").fit(X, y).objective_, rel=1e-8)
    with pytest.raises(ValueError, match="pass none of them"):
        RobustSVC().fit(path, y)


def test_stores_are_not_clobbered(tmp_path):
    path = make_classification_store(tmp_path / "d", 100, 2, chunk_rows=50)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        make_classification_store(path, 100, 2)
    make_classification_store(path, 100, 2, overwrite=True)
    other = tmp_path / "mine"
    other.mkdir()
    with pytest.raises(FileExistsError, match="not a data set store"):
        write_dataset(other, np.zeros((4, 2)), np.array([1, -1, 1, -1]), overwrite=True)
    meta = json.loads((path / META).read_text())
    (path / META).write_text(json.dumps({**meta, "complete": False}))
    with pytest.raises(ValueError, match="incomplete"):
        open_dataset(path)
    with pytest.raises(FileNotFoundError, match="not a data set store"):
        open_dataset(other)
    with pytest.raises(ValueError, match="numeric"):
        write_dataset(tmp_path / "s", np.zeros((2, 2)), np.array(["a", "b"]))


def _cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_cli_run_and_check_take_a_store(tmp_path):
    path = make_classification_store(tmp_path / "d", 4000, 5, chunk_rows=1000)
    code, out, _ = _cli(
        "run", "robust-outofcore", "--quick", "--data", str(path), "--out", str(tmp_path / "r"), "--no-progress"
    )
    assert code == 0 and "certified gap" in out
    records = [json.loads(line) for line in (tmp_path / "r" / "results.jsonl").read_text().splitlines()]
    assert len(records) == 1 and records[0]["result"]["status"] == "optimal"
    assert records[0]["result"]["passes"] > records[0]["result"]["iterations"]
    code, out, _ = _cli("check", "robust-outofcore", "--data", str(path))
    assert code == 0 and "AGREE" in out and "ipm_dask" in out
    code, _, err = _cli("run", "linear-noise-grid", "--quick", "--data", str(path), "--out", str(tmp_path / "x"))
    assert code == 2 and "takes no --data" in err
    code, _, err = _cli("check", "robust-small", "--data", str(path))
    assert code == 2 and "takes no --data" in err
    code, _, err = _cli("run", "robust-outofcore", "--data", str(tmp_path / "nothing"), "--out", str(tmp_path / "y"))
    assert code == 2 and "not a data set store" in err


# ------------------------------------------------------------------ every chunk accounted for
def _small_store(path, **kw):
    """A store with every field: 1000 rows in chunks of 256 (4 chunks, the last one short)."""
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(1000, 3)), np.where(rng.random(1000) < 0.5, 1.0, -1.0)
    groups, radius = rng.integers(0, 3, 1000), rng.uniform(0.5, 1.5, 1000)
    Sigma = np.stack([np.eye(3) * s for s in (0.1, 0.2, 0.3)])
    return write_dataset(path, X, y, Sigma=Sigma, groups=groups, sample_radius=radius, chunk_rows=256, **kw)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return _small_store(tmp_path_factory.mktemp("store") / "s")


def _copy(src, tmp_path):
    import shutil

    dst = tmp_path / "copy"
    shutil.copytree(src, dst)
    return dst


def _chunk_file(store, name, i):
    """The file of chunk i of an array, whichever Zarr format wrote it (the store's own layout)."""
    from rsvm_conic.datasets.zarr_store import _read_meta, _layout

    meta = _read_meta(store)
    arr = _layout(store, name, meta["arrays"][name], meta["chunk_rows"])
    return store / name / arr.key(i)


def _read_all(ds):
    import dask

    dask.compute(ds.X, ds.y, ds.groups, ds.sample_radius)


DAMAGE = {
    "missing": lambda f: f.unlink(),
    "truncated": lambda f: f.write_bytes(f.read_bytes()[:-8]),
    "extended": lambda f: f.write_bytes(f.read_bytes() + b"\0" * 8),
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
@pytest.mark.parametrize(
    "name, chunk", [("X", 0), ("X", 3), ("y", 1), ("groups", 2), ("sample_radius", 3), ("Sigma", 0)]
)
def test_a_missing_or_resized_chunk_is_found_on_open_and_named(pristine, tmp_path, name, chunk, kind):
    store = _copy(pristine, tmp_path)
    f = _chunk_file(store, name, chunk)
    DAMAGE[kind](f)
    rel = f.relative_to(store)
    rows = "" if name == "Sigma" else rf" \(rows {256 * chunk} to {min(256 * chunk + 255, 999)}\)"
    what = {
        "missing": rf"missing \({rel} not found\)",
        "truncated": rf"truncated \({rel} holds",
        "extended": "the wrong",
    }
    with pytest.raises(DatasetError, match=rf"{store}: chunk {chunk} of {name}{rows} is {what[kind]}"):
        open_dataset(store)
    with pytest.raises(DatasetError, match=f"chunk {chunk} of {name}"):
        check_dataset(store)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_changed_byte_of_any_chunk_is_found_when_read(pristine, tmp_path_factory, data):
    """Same size, other bytes: the open-time check passes; the pass that reads the chunk raises."""
    name = data.draw(st.sampled_from(["X", "y", "groups", "sample_radius"]))
    chunk = data.draw(st.integers(0, 3))
    store = _copy(pristine, tmp_path_factory.mktemp("flip"))
    f = _chunk_file(store, name, chunk)
    raw = bytearray(f.read_bytes())
    valid = (min(256, 1000 - 256 * chunk)) * (3 if name == "X" else 1) * 8  # bytes of real rows (not the padding)
    at = data.draw(st.integers(0, valid - 1))
    raw[at] ^= data.draw(st.integers(1, 255))
    f.write_bytes(bytes(raw))
    ds = open_dataset(store)  # sizes are right: the open-time check passes
    with pytest.raises(DatasetError, match=rf"chunk {chunk} of {name} \(rows .*\) is altered \(its CRC-32C differs"):
        _read_all(ds)


def test_a_chunk_lost_after_opening_is_named_by_the_pass_that_reads_it(pristine, tmp_path):
    store = _copy(pristine, tmp_path)
    ds = open_dataset(store)
    _chunk_file(store, "X", 2).unlink()
    with pytest.raises(DatasetError, match=r"chunk 2 of X \(rows 512 to 767\) is missing"):
        ds.X.sum().compute()
    ds.y.sum().compute()  # the other arrays still read


@pytest.mark.parametrize("name", ["X", "groups"])
def test_fit_on_a_store_with_a_missing_chunk_raises_instead_of_reading_zeros(tmp_path, name):
    path = make_classification_store(tmp_path / "d", 3000, 5, chunk_rows=700)
    assert RobustSVC(C=1.0, radius=0.5).fit(str(path)).solver_stats_["status"] == "optimal"
    _chunk_file(path, name, 2).unlink()
    with pytest.raises(DatasetError, match=rf"chunk 2 of {name} \(rows 1400 to 2099\) is missing"):
        RobustSVC(C=1.0, radius=0.5).fit(str(path))


def test_all_zero_chunks_are_written_and_checked(tmp_path):
    """A chunk equal to the fill value still gets its file (Zarr 3 skips such chunks by default)."""
    X = np.zeros((600, 2))
    X[:10] = 1.0
    path = write_dataset(tmp_path / "z", X, np.tile([1.0, -1.0], 300), groups=np.zeros(600, int), chunk_rows=200)
    ds = open_dataset(path)
    np.testing.assert_array_equal(ds.X.compute(), X)
    assert ds.groups.sum().compute() == 0


META_DAMAGE = {
    "not JSON": (lambda m: b"{not json", "not valid JSON"),
    "not an object": (lambda m: b"[1, 2]", "a JSON list, not an object"),
    "no n_samples": (lambda m: _dump({k: v for k, v in m.items() if k != "n_samples"}), "'n_samples' missing"),
    "chunk_rows a string": (lambda m: _dump({**m, "chunk_rows": "256"}), "'chunk_rows' missing or not a positive"),
    "no fields": (lambda m: _dump({k: v for k, v in m.items() if k != "fields"}), "'fields' must list X, y"),
    "no arrays": (lambda m: _dump({k: v for k, v in m.items() if k != "arrays"}), "'arrays' missing"),
    "a checksum short": (
        lambda m: _dump({**m, "arrays": {**m["arrays"], "y": {**m["arrays"]["y"], "crc32c": [1, 2, 3]}}}),
        r"arrays\['y'\] must record 4 chunks and their CRC-32Cs",
    ),
    "wrong shape": (
        lambda m: _dump({**m, "n_samples": 900}),
        r"arrays\['X'\]\['shape'\] is \[1000, 3\], not the array's shape",
    ),
    "unknown format": (lambda m: _dump({**m, "format": 99}), "store format 99, this rsvm-conic reads format 2"),
}


def _dump(meta):
    return json.dumps(meta).encode()


@pytest.mark.parametrize("kind", sorted(META_DAMAGE))
def test_a_damaged_description_is_named(pristine, tmp_path, kind):
    store = _copy(pristine, tmp_path)
    damage, message = META_DAMAGE[kind]
    (store / META).write_bytes(damage(json.loads((store / META).read_text())))
    with pytest.raises(DatasetError, match=rf"^{store / META}: .*{message}"):
        open_dataset(store)


ZARR_DAMAGE = {
    "not JSON": (lambda m: b"\x00garbage", "not valid JSON"),
    "no shape": (lambda m: _dump({k: v for k, v in m.items() if k != "shape"}), "no 'shape'"),
    "other shape": (lambda m: _dump({**m, "shape": [999, 3]}), "shape \\[999, 3\\], chunks .* disagree with"),
}


@pytest.mark.parametrize("kind", sorted(ZARR_DAMAGE))
def test_damaged_zarr_metadata_is_named(pristine, tmp_path, kind):
    store = _copy(pristine, tmp_path)
    file = store / "X" / "zarr.json" if (store / "X" / "zarr.json").exists() else store / "X" / ".zarray"
    damage, message = ZARR_DAMAGE[kind]
    file.write_bytes(damage(json.loads(file.read_text())))
    with pytest.raises(DatasetError, match=rf"^{file}: .*{message}.*the array's Zarr metadata is damaged"):
        open_dataset(store)
    (store / "X").rename(store / "X-gone")
    with pytest.raises(DatasetError, match=rf"{store}: array X is missing"):
        open_dataset(store)


def test_a_store_written_without_checksums_is_refused_with_the_way_to_rewrite_it(tmp_path):
    path = make_classification_store(tmp_path / "d", 1000, 3, chunk_rows=300, random_state=5)
    meta = json.loads((path / META).read_text())
    old = {k: v for k, v in meta.items() if k != "arrays"}
    (path / META).write_text(json.dumps({**old, "format": 1}))
    with pytest.raises(DatasetError, match=r"written without chunk checksums .* make_classification_store\("):
        open_dataset(path)
    (path / META).write_text(json.dumps({k: v for k, v in old.items() if k not in ("format", "source")}))
    with pytest.raises(DatasetError, match=r"written without chunk checksums .* write_dataset\(new_path"):
        open_dataset(path)


def test_cli_names_a_damaged_data_store_in_one_line(tmp_path):
    path = make_classification_store(tmp_path / "d", 4000, 5, chunk_rows=1000)
    _chunk_file(path, "X", 1).unlink()
    for args in (("run", "robust-outofcore", "--quick", "--out", str(tmp_path / "r")), ("check", "robust-outofcore")):
        code, out, err = _cli(*args, "--data", str(path))
        assert code == 2 and out == "", (out, err)
        assert err == (
            f"rsvm-conic: --data {path}: {path}: chunk 1 of X (rows 1000 to 1999) is missing "
            f"({_chunk_file(path, 'X', 1).relative_to(path)} not found); the store is damaged: "
            "restore the file or write the store again\n"
        )
