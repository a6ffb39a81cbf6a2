"""Grid execution: loky and a real Dask LocalCluster give identical results; a SIGKILL loses nothing;
the same command twice gives identical numbers."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rsvm_conic import problems
from rsvm_conic.runner import ResultsStore, run_grid

ROOT = Path(__file__).resolve().parents[1]
GRID = problems.get("GRIDS", "linear-noise-grid")
DETERMINISTIC = ("clean_acc", "noisy_acc", "objective")


def _values(records):
    return sorted(
        (r["method"], r["param"], r["C"], r["fold"], *(round(r[k], 12) for k in DETERMINISTIC)) for r in records
    )


@pytest.fixture(scope="module")
def sequential(tmp_path_factory):
    run = GRID.run(tmp_path_factory.mktemp("seq"), quick=True, progress=False)
    assert "| robust |" in run.summary and run.ok
    return run.records


def test_same_command_twice_gives_identical_numbers(sequential, tmp_path):
    again = GRID.run(tmp_path, quick=True, progress=False).records
    assert _values(again) == _values(sequential)


def test_loky_workers_match_sequential(sequential, tmp_path):
    records = GRID.run(tmp_path, quick=True, n_jobs=2, progress=False).records
    assert _values(records) == _values(sequential)


@pytest.mark.slow
def test_dask_local_cluster_matches_sequential(sequential, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        records = GRID.run(
            tmp_path, quick=True, backend="dask", scheduler=cluster.scheduler_address, progress=False
        ).records
    assert _values(records) == _values(sequential)


@pytest.mark.slow
def test_sigkill_mid_grid_then_resume_loses_nothing(sequential, tmp_path):
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "rsvm_conic.cli",
        "run",
        "linear-noise-grid",
        "--quick",
        "--out",
        str(out),
        "--no-progress",
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    results = out / "results.jsonl"
    deadline = time.time() + 240
    while time.time() < deadline:
        if results.exists() and len(results.read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(ResultsStore(results).records())
    assert 3 <= done_before < len(sequential), "the kill did not land mid-grid"
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)  # resumes by default
    assert res.returncode == 0, res.stderr
    assert "rsvm-conic: warning: results.jsonl.lock: took over the lock left by" in res.stderr  # the killed run's
    recs = [json.loads(line) for line in results.read_text().splitlines() if line.strip().endswith("}")]
    assert len({r["key"] for r in recs}) == len(sequential)
    assert _values([{**r["cell"], **r["result"]} for r in recs]) == _values(sequential)


def test_dask_backend_needs_a_scheduler():
    with pytest.raises(ValueError, match="scheduler"):
        run_grid([{"a": 1}], dict, backend="dask", progress=False)
    with pytest.raises(ValueError, match="backend"):
        run_grid([{"a": 1}], dict, backend="spark", progress=False)
