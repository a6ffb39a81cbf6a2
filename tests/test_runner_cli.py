"""Shared runner, results store and command line."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rsvm_conic import problems
from rsvm_conic.cli import main
from rsvm_conic.runner import ResultsStore, check_instance, run_grid, seed_from_cell
from rsvm_conic.exceptions import StoreWarning

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "name",
    ["robust-small", "robust-small-inf"]
    + [pytest.param(n, marks=pytest.mark.slow) for n in ("nominal-breast-cancer", "chance-gaussian-small")],
)
def test_small_instances_agree_across_backends(name):
    inst = problems.get("INSTANCES", name)
    reports, ok = check_instance(inst)
    assert ok, reports
    assert len(reports) >= 4
    assert all(r.agreement > 0.95 for r in reports)


def test_runner_reports_a_failing_backend_without_stopping():
    inst = problems.get("INSTANCES", "robust-small")
    reports, ok = check_instance(inst, backends=("clarabel", "libsvm"))
    assert not ok
    assert reports[0].error is None and "cannot be solved with backend 'libsvm'" in reports[1].error


def test_cli_check_and_list(capsys):
    assert main(["check", "robust-small"]) == 0
    out = capsys.readouterr().out
    assert "clarabel" in out and "prox" in out and "AGREE" in out
    assert main(["list"]) == 0
    assert "robust-large" in capsys.readouterr().out
    assert main(["check", "no-such-problem"]) == 2


def test_console_script_entry_point():
    res = subprocess.run(
        [sys.executable, "-m", "rsvm_conic.cli", "list"], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert res.returncode == 0 and "check:" in res.stdout


def test_results_store_resumes(tmp_path):
    path = tmp_path / "res.jsonl"
    cells = [{"a": i} for i in range(5)]
    calls = []

    def fn(cell):
        calls.append(cell["a"])
        if cell["a"] == 3 and len(calls) == 4:
            raise KeyboardInterrupt  # simulated crash in the middle of the grid
        return {"sq": cell["a"] ** 2, "seed": seed_from_cell(cell)}

    with pytest.raises(KeyboardInterrupt):
        run_grid(cells, fn, ResultsStore(path), progress=False)
    assert len(path.read_text().splitlines()) == 3
    with open(path, "a") as fh:
        fh.write('{"key": "trunc')  # a line cut by a kill
    with pytest.warns(StoreWarning, match="1 damaged line moved to res.jsonl.damaged"):
        out = run_grid(cells, fn, ResultsStore(path), progress=False)
    assert [r["sq"] for r in out] == [0, 1, 4, 9, 16]
    assert calls == [0, 1, 2, 3, 3, 4]  # finished cells were not redone
    assert out[2]["seed"] == seed_from_cell({"a": 2})
    recs = [json.loads(line) for line in path.read_text().splitlines()]  # the cut line was set aside
    assert sorted(r["cell"]["a"] for r in recs) == list(range(5))
    assert (tmp_path / "res.jsonl.damaged").read_text() == '{"key": "trunc\n'


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text().splitlines()
    ci = (ROOT / ".ci" / "run").read_text()
    cmds = [line for line in readme[:8] if line.startswith("pip install")]
    assert len(cmds) == 2 and cmds[1].startswith('pip install -e ".[test]"')
    assert "grep -m1 -E '^pip install -e \"\\.\\[test\\]\"' README.md" in ci


def test_every_reproduction_and_grid_is_one_grid_experiment():
    import os

    from rsvm_conic.runner import GridExperiment, default_n_jobs

    entries = {**problems.registry("REPRODUCTIONS"), **problems.registry("GRIDS")}
    assert {"bhadra2010-table1", "dakdouki2019-table4-2", "couellan2020-fig1", "rff-error", "linear-noise-grid"} <= set(
        entries
    )
    assert all(isinstance(e, GridExperiment) and e.report is not None for e in entries.values())
    assert default_n_jobs(True) == 1 and default_n_jobs(False) == min(2, os.cpu_count() or 1)
