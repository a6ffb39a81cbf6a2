"""What the command line prints: ``check`` runs every backend of the family (``ipm`` included) and names the
certified gap and the distance to the best objective apart; a benchmark prints a Markdown table with a legend
and keeps JSON in its results file; an entry whose extra is not installed stops with one line naming it."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rsvm_conic import problems
from rsvm_conic.cli import main
from rsvm_conic.runner import BackendReport, format_reports

ROOT = Path(__file__).resolve().parents[1]

#: a meta-path finder that makes the named top-level modules missing, as on an install without their extra
BLOCKER = """
import sys

class _Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)

sys.meta_path.insert(0, _Missing())
"""


def _run_without(blocked: set[str], code: str) -> subprocess.CompletedProcess:
    src = BLOCKER.format(blocked=sorted(blocked)) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", src], cwd=ROOT, capture_output=True, text=True, timeout=300)


def _cli_without(blocked: set[str], *args: str) -> subprocess.CompletedProcess:
    return _run_without(blocked, f"from rsvm_conic.cli import main\nsys.exit(main({list(args)!r}))\n")


def _table(out: str) -> tuple[list[str], dict[str, dict[str, str]]]:
    """Header and rows (by first cell) of the first Markdown table in ``out``."""
    lines = [line for line in out.splitlines() if line.startswith("|")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    head = cells[0]
    return head, {row[0]: dict(zip(head, row)) for row in cells[2:]}


# -- check: every backend, two gaps that cannot be confused ------------------------------------------------------


@pytest.mark.parametrize("name", ["robust-small", "robust-small-inf", "nominal-breast-cancer", "chance-gaussian-small"])
def test_linear_instances_run_every_backend_their_formulation_takes(name):
    """``check NAME`` runs every backend the built formulation accepts (the structured interior point too, where
    it applies: p = 2), in the order of the formulation's BACKENDS table."""
    instance = problems.get("INSTANCES", name)
    formulation, _, _ = instance.build()
    assert instance.backends == formulation.backends
    assert ("ipm" in instance.backends) == (name != "robust-small-inf")


def test_the_large_instance_runs_every_backend_of_its_family():
    from rsvm_conic.formulations import RobustProblem

    assert problems.get("INSTANCES", "robust-large").backends == tuple(RobustProblem.BACKENDS)


def test_check_accepts_ipm_and_prints_what_each_column_holds(capsys):
    assert main(["check", "robust-small", "--backends", "ipm,sgd"]) == 0
    out = capsys.readouterr().out
    head, rows = _table(out)
    assert head == [
        "backend",
        "status",
        "objective",
        "certified gap",
        "above best",
        "test acc",
        "agree",
        "time [s]",
    ]
    assert list(rows) == ["ipm", "sgd"]
    assert rows["ipm"]["status"] == "optimal" and float(rows["ipm"]["certified gap"]) <= 1e-6
    assert float(rows["ipm"]["above best"]) == 0.0  # the interior point's objective is the lowest here
    # the stochastic route: its own certificate does not meet the tolerance, whatever its distance to the best
    assert rows["sgd"]["status"] == "uncertified" and float(rows["sgd"]["certified gap"]) > 1e-6
    assert "rel.gap" not in out
    assert "certified gap = (primal - dual bound)" in out and "above best = (objective - lowest objective" in out
    assert "certified optimal: ipm; not certified: sgd (uncertified)" in out


def test_format_reports_puts_each_gap_in_its_own_column():
    """A property of the table, not of one solve: for any pair (certified gap, distance to the best) the cells
    under each header hold exactly that value, and a route without a dual bound shows n/a."""
    reports = [
        BackendReport("a", "optimal", 10.0, 0.0, 0.9, 1.0, 0.1, certified_gap=1e-9),
        BackendReport("b", "uncertified", 10.001, 1e-4, 0.9, 1.0, 0.2, certified_gap=5e-3),
        BackendReport("c", "uncertified", 10.5, 0.05, 0.8, 0.9, 0.3),
        BackendReport("d", "error", math.nan, math.nan, math.nan, math.nan, 0.4, error="SolverError: boom"),
    ]
    text = format_reports(reports, "title")
    _, rows = _table(text)
    for r in reports:
        row = rows[r.backend]
        for column, value in (("certified gap", r.certified_gap), ("above best", r.gap)):
            assert row[column] == ("n/a" if math.isnan(value) else f"{value:.2e}"), (r.backend, column)
    assert text.splitlines()[0] == "title"
    assert "d error: SolverError: boom" in text


# -- reproductions and benchmarks: Markdown on stdout, JSON in the results files -------------------------------


def test_feature_robust_benchmark_prints_a_table_and_writes_json(tmp_path, capsys, monkeypatch):
    from rsvm_conic.problems import feature_robust

    row = {"test_acc": 0.9, "test_adv": 0.2, "val_acc": 0.9, "val_adv": 0.2, "C": 1.0, "sigma": 1.0}
    record = {
        "dataset": "breast_cancer",
        "clean": {"nominal_rbf_svc": row, "robust_rff": row},
        "robust_aware": {"nominal_rbf_svc": row, "robust_rff": row},
        "grid": {"nominal_rbf_svc": [row] * 40, "robust_rff": [row] * 120},  # the 3 kB of every model
    }
    monkeypatch.setattr(feature_robust, "compare_robust_nominal", lambda *a: record)
    assert feature_robust.bench_adversarial(quick=True, out=tmp_path) == 0
    out = capsys.readouterr().out
    assert all(len(line) < 400 and not line.lstrip().startswith("{") for line in out.splitlines())
    head, rows = _table(out)
    assert head[:4] == ["data set", "gamma", "seed", "protocol"] and len(rows) == 1  # one data set in quick
    assert "adv. error = " in out
    assert [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()] == [record]


def test_a_grid_run_prints_a_markdown_table_with_a_legend(tmp_path, capsys):
    assert main(["run", "linear-noise-grid", "--quick", "--no-progress", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    head, rows = _table(out)
    assert head[:3] == ["method", "param", "C"] and {"nominal", "robust", "chance"} <= set(rows)
    assert "param = the robust radius (method robust, p = 2), the violation probability epsilon" in out
    for line in out.splitlines():  # JSON stays in results.jsonl
        assert not line.lstrip().startswith(("{", "[")), line
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 12


# -- extras: one line, exit 2 ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("check", "robust-outofcore"),
        ("check", "robust-outofcore-sample"),
        ("run", "robust-outofcore", "--quick", "--no-progress"),
        ("bench", "store-checks", "--quick"),
        ("bench", "robust-outofcore", "--quick"),
    ],
)
def test_a_dask_entry_without_dask_is_one_line(args, tmp_path):
    res = _cli_without({"dask", "distributed", "zarr"}, *args, *(["--out", str(tmp_path)] if args[0] == "run" else []))
    assert res.returncode == 2, res.stderr[-3000:]
    assert res.stderr == f'rsvm-conic: {args[1]} needs the dask extra: pip install "rsvm-conic[dask]"\n'
    assert res.stdout == ""


def test_list_without_dask_marks_the_entries_that_need_it():
    res = _cli_without({"dask", "distributed", "zarr", "matplotlib"}, "list")
    assert res.returncode == 0, res.stderr[-3000:]
    lines = {line.split()[0]: line for line in res.stdout.splitlines() if line.startswith("  ")}
    assert lines["robust-outofcore-sample"].endswith("[needs: dask]")
    assert lines["couellan2020-fig1"].endswith("[needs: plot]")
    assert not lines["robust-small"].endswith("]")


def test_a_figure_without_matplotlib_is_one_line(tmp_path):
    res = _cli_without({"matplotlib"}, "reproduce", "couellan2020-fig1", "--quick", "--out", str(tmp_path))
    assert res.returncode == 2, res.stderr[-3000:]
    assert res.stderr == 'rsvm-conic: couellan2020-fig1 needs the plot extra: pip install "rsvm-conic[plot]"\n'


def test_a_missing_extra_found_during_a_run_is_one_line(tmp_path):
    """An entry the catalogue does not mark (here a grid whose report draws): the ImportError of the missing
    module becomes the same line, naming the entry and the extra."""
    res = _run_without(
        {"matplotlib"},
        f"""
        from rsvm_conic import cli, problems
        from rsvm_conic.runner import GridExperiment, Number, Record

        def report(run):
            from rsvm_conic.plotting import require_matplotlib

            require_matplotlib()
            return "", True

        exp = GridExperiment("sq", "sq", lambda quick: [{{"a": 1}}], lambda cell: {{"sq": 1}}, report,
                             result_fields=Record({{"sq": Number(0)}}))
        problems.get = lambda kind, name: exp
        sys.exit(cli.main(["run", "sq", "--out", {str(tmp_path)!r}, "--n-jobs", "1", "--no-progress"]))
        """,
    )
    assert res.returncode == 2, res.stderr[-3000:]
    assert res.stderr == 'rsvm-conic: sq needs the plot extra: pip install "rsvm-conic[plot]"\n'


def test_require_matplotlib_names_the_extra():
    res = _run_without(
        {"matplotlib"},
        """
        from rsvm_conic import plotting  # importing the helpers needs no matplotlib
        try:
            plotting.require_matplotlib()
        except ImportError as exc:
            print(exc.name, "|", exc)
        """,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout == 'matplotlib | figures need matplotlib, the plot extra: pip install "rsvm-conic[plot]"\n'


def test_check_without_matplotlib_works():
    """The README's first line (``pip install -e . && rsvm-conic check robust-small``) on a bare install."""
    res = _cli_without({"matplotlib"}, "check", "robust-small", "--backends", "clarabel")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "| clarabel | optimal |" in res.stdout
