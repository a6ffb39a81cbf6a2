"""Chunked stores on disk (rsvm_conic.datasets.zarr_store) and the paths that take one: ``fit(path)``,
``rsvm-conic run robust-outofcore --data`` and ``rsvm-conic check robust-outofcore --data``."""

import contextlib
import io
import json

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("zarr")

from rsvm_conic.cli import main  # noqa: E402
from rsvm_conic.datasets.zarr_store import META, make_classification_store, open_dataset, write_dataset  # noqa: E402
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
    ref = RobustSVC(C=1.0, radius=0.5).fit(X, y, Sigma=ds.Sigma, groups=g)
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
