"""A user error on the command line is one line on stderr starting with ``rsvm-conic:`` and exit
code 2, never a traceback; a real internal error keeps its traceback."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rsvm_conic.cli import main
from rsvm_conic.runner import ResultsStore, GridExperiment

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args, timeout=120):
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "rsvm_conic.cli", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return res, time.monotonic() - t0


def _user_error(res, *fragments):
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rsvm-conic: "), res.stderr
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def a_file(tmp_path):
    f = tmp_path / "a-file"
    f.write_text("not a directory")
    return f


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["check", "robust-small", "--backends", "foo"], ["unknown backend 'foo'", "clarabel, scs, sgd, prox"]),
        (["check", "robust-small", "--backends", "clarabel,"], ["unknown backend ''"]),
        (["check", "no-such-instance"], ["no instance named 'no-such-instance'; available:"]),
        (["run", "linear-noise-grid", "--quick", "--n-jobs", "0"], ["--n-jobs must be a positive", "-1", "got 0"]),
        (["run", "linear-noise-grid", "--quick", "--n-jobs", "-3"], ["got -3"]),
        (["run", "linear-noise-grid", "--n-jobs", "two"], ["invalid int value: 'two'"]),
        (["run", "linear-noise-grid", "--quick", "--backend", "dask"], ["--backend dask needs --scheduler"]),
        (
            ["run", "linear-noise-grid", "--quick", "--backend", "dask", "--scheduler", "foo"],
            ["'foo' is not a Dask scheduler address", "SCHEME://HOST:PORT"],
        ),
        (["run", "linear-noise-grid", "--quick", "--scheduler", "tcp://127.0.0.1:8786"], ["--scheduler is only used"]),
        (["reproduce", "couellan2020-fig1", "--quick", "--n-jobs", "0"], ["--n-jobs must be a positive", "got 0"]),
        (["run", "linear-noise-grid", "--resume"], ["unrecognized arguments: --resume"]),
    ],
)
def test_option_errors(args, fragments):
    res, _ = _cli(*args)
    _user_error(res, *fragments)


@pytest.mark.parametrize("command", ["run linear-noise-grid", "reproduce couellan2020-fig1"])
def test_out_that_is_a_file_or_cannot_be_created(command, a_file):
    res, _ = _cli(*command.split(), "--quick", "--out", a_file)
    _user_error(res, f"--out {a_file} is an existing file, not a directory")
    res, _ = _cli(*command.split(), "--quick", "--out", a_file / "sub")
    _user_error(res, f"cannot write to the output directory {a_file / 'sub'} (Not a directory)", "--out")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_out_that_is_not_writable(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        res, _ = _cli("run", "linear-noise-grid", "--quick", "--out", ro)
        _user_error(res, f"cannot write to the output directory {ro} (Permission denied)")
    finally:
        ro.chmod(0o700)


def test_unreachable_scheduler_fails_fast():
    pytest.importorskip("distributed")
    res, _ = _cli("run", "linear-noise-grid", "--quick", "--backend", "dask", "--scheduler", "tcp://127.0.0.1:1")
    # the 5 s connection timeout is the CLI's own (named in the message); no wall-clock assertion: a loaded
    # machine took 46 s for the whole command
    _user_error(res, "cannot connect to the Dask scheduler at tcp://127.0.0.1:1 (no answer within 5 s)")


def test_locked_store(tmp_path):
    with ResultsStore(tmp_path / "results.jsonl").locked():
        res, _ = _cli("run", "linear-noise-grid", "--quick", "--no-progress", "--out", tmp_path)
    _user_error(
        res,
        "results.jsonl is being written by another run",
        f"(pid {os.getpid()} on ",
        "wait for it to finish or use another --out",
    )
    assert not (tmp_path / "results.jsonl").exists()


def test_user_error_in_process_and_internal_error_keeps_its_traceback(tmp_path, capsys, monkeypatch):
    assert main(["run", "linear-noise-grid", "--n-jobs", "0"]) == 2
    assert capsys.readouterr().err.startswith("rsvm-conic: --n-jobs")

    def boom(self, *a, **k):
        raise RuntimeError("an internal bug")

    monkeypatch.setattr(GridExperiment, "run", boom)
    with pytest.raises(RuntimeError, match="an internal bug"):
        main(["run", "linear-noise-grid", "--quick", "--out", str(tmp_path)])
