"""A user error on the command line is one line on stderr starting with ``rsvm-conic:`` and exit
code 2, never a traceback; a real internal error keeps its traceback.

The command runs in this process (``rsvm_conic.cli.main`` with the output captured); the entry point itself, a
write error from the kernel (a file size limit) and signals are checked in a child process."""

import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from rsvm_conic.cli import main
from rsvm_conic.runner import ResultsStore, GridExperiment

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cli(capsys):
    """``cli(*args)`` runs ``rsvm-conic args`` in this process: its exit code, stdout and stderr."""

    def run(*args):
        capsys.readouterr()
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse's --version and --help
            code = exc.code
        out, err = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=out, stderr=err)

    return run


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
def test_option_errors(cli, args, fragments):
    res = cli(*args)
    _user_error(res, *fragments)


@pytest.mark.parametrize("command", ["run linear-noise-grid", "reproduce couellan2020-fig1"])
def test_out_that_is_a_file_or_cannot_be_created(cli, command, a_file):
    res = cli(*command.split(), "--quick", "--out", a_file)
    _user_error(res, f"--out {a_file} is an existing file, not a directory")
    res = cli(*command.split(), "--quick", "--out", a_file / "sub")
    _user_error(res, f"cannot write to the output directory {a_file / 'sub'} (Not a directory)", "--out")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_out_that_is_not_writable(cli, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        res = cli("run", "linear-noise-grid", "--quick", "--out", ro)
        _user_error(res, f"cannot write to the output directory {ro} (Permission denied)")
    finally:
        ro.chmod(0o700)


def test_unreachable_scheduler_fails_fast(cli):
    pytest.importorskip("distributed")
    res = cli("run", "linear-noise-grid", "--quick", "--backend", "dask", "--scheduler", "tcp://127.0.0.1:1")
    # the 5 s connection timeout is the CLI's own (named in the message); no wall-clock assertion: a loaded
    # machine took 46 s for the whole command
    _user_error(res, "cannot connect to the Dask scheduler at tcp://127.0.0.1:1 (no answer within 5 s)")


def test_locked_store(cli, tmp_path):
    with ResultsStore(tmp_path / "results.jsonl").locked():
        res = cli("run", "linear-noise-grid", "--quick", "--no-progress", "--out", tmp_path)
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


def test_version_and_an_empty_out(cli, capsys):
    from rsvm_conic import __version__

    res = cli("--version")
    assert res.returncode == 0 and res.stdout == f"rsvm-conic {__version__}\n" and res.stderr == ""
    res = cli("run", "linear-noise-grid", "--quick", "--out", "")
    _user_error(res, "--out is empty; give an output directory")
    assert main(["reproduce", "couellan2020-fig1", "--out", "  "]) == 2
    assert "--out is empty" in capsys.readouterr().err


@pytest.mark.parametrize("which", ["results.jsonl", "results.jsonl.lock", "results.jsonl.damaged"])
def test_a_directory_in_place_of_a_store_file(cli, tmp_path, which):
    if which == "results.jsonl.damaged":  # only written when there is a damaged line to set aside
        (tmp_path / "results.jsonl").write_text("not a record\n")
    (tmp_path / which).mkdir()
    res = cli("run", "linear-noise-grid", "--quick", "--no-progress", "--out", tmp_path)
    what = {"results.jsonl": "results file", "results.jsonl.lock": "lock file"}.get(which, "side file")
    _user_error(res, f"{tmp_path / which} is a directory, not a {what}", "move it away or use another --out")
    assert not (tmp_path / "results.jsonl.lock").is_file()


def _tiny_grid(report=None):
    """A two-cell grid of squares (fast, in this process)."""
    from rsvm_conic.runner import Number, Record

    def squares(run):
        return str([r["sq"] for r in run.results]), True

    return GridExperiment(
        "squares",
        "two squares",
        lambda quick: [{"a": 1}, {"a": 2}],
        lambda cell: {"sq": cell["a"] ** 2},
        report or squares,
        result_fields=Record({"sq": Number(0)}),
    )


@pytest.mark.parametrize("n_jobs", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_a_full_disk_is_one_line(cli, tmp_path, monkeypatch, n_jobs):
    import errno

    from rsvm_conic import problems
    from rsvm_conic.runner import Number, Record, grid

    def fn(cell):
        time.sleep(0.1 * cell["a"])
        return {"sq": cell["a"] ** 2}

    def full(fd):  # the store's append: the disk fills when its data reach the device
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    exp = GridExperiment(
        "sq",
        "sq",
        lambda quick: [{"a": i} for i in range(6)],
        fn,
        lambda run: ("", True),
        result_fields=Record({"sq": Number(0)}),
    )
    monkeypatch.setattr(grid.os, "fsync", full)
    monkeypatch.setattr(problems, "get", lambda kind, name: exp)
    res = cli("run", "sq", "--out", tmp_path, "--n-jobs", n_jobs, "--no-progress")
    line = _user_error(res)  # one line: no warning about the cells in flight
    assert line == (
        f"rsvm-conic: cannot write {tmp_path / 'results.jsonl'} (No space left on device); free some space and "
        "run the same command again (finished cells are kept), or use another --out"
    )
    assert not (tmp_path / "results.jsonl.lock").exists()


def test_a_full_disk_while_the_report_writes_is_one_line(tmp_path, capsys, monkeypatch):
    import errno

    from rsvm_conic import problems

    def report(run):  # the report's table: the disk is full by then
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(run.out / "summary.md"))

    monkeypatch.setattr(problems, "get", lambda kind, name: _tiny_grid(report))
    assert main(["run", "squares", "--out", str(tmp_path), "--no-progress", "--n-jobs", "1"]) == 2
    assert capsys.readouterr().err == (
        f"rsvm-conic: cannot write {tmp_path / 'summary.md'} (No space left on device); free some space and "
        "run the same command again (finished cells are kept), or use another --out\n"
    )
    assert len(ResultsStore(tmp_path / "results.jsonl").records()) == 2  # the cells were kept
    assert not (tmp_path / "results.jsonl.lock").exists()


@pytest.mark.slow
def test_a_file_size_limit_is_one_line(tmp_path):
    """A real write error from the kernel: RLIMIT_FSIZE (EFBIG) stops the store's third record."""
    resource = pytest.importorskip("resource")

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))

    def run(out, **kwargs):
        return subprocess.run(
            [sys.executable, "-m", "rsvm_conic.cli", "run", "linear-noise-grid", "--quick", "--no-progress"]
            + ["--out", str(out)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            **kwargs,
        )

    # a fresh environment's first run also writes numba's cache files (larger than the limit): write them first,
    # so that the limit stops the store's own write
    assert run(tmp_path / "warm-up").returncode == 0
    res = run(tmp_path / "out", preexec_fn=limit)
    tmp_path = tmp_path / "out"
    _user_error(res, f"cannot write {tmp_path / 'results.jsonl'} (File too large); free some space")
    assert 1 <= len(ResultsStore(tmp_path / "results.jsonl").records()) <= 3
    assert not (tmp_path / "results.jsonl.lock").exists()


SLOW_GRID = """
import sys, time
from rsvm_conic import cli, problems
from rsvm_conic.runner import GridExperiment, Number, Record

def fn(cell):
    if cell["a"] >= 2:
        time.sleep(600)
    return {{"a": cell["a"]}}

exp = GridExperiment("slow", "slow", lambda quick: [{{"a": i}} for i in range(6)], fn, lambda run: ("", True),
                     result_fields=Record({{"a": Number(0, integer=True)}}))
problems.get = lambda kind, name: exp
sys.exit(cli.main(["run", "slow", "--out", {out!r}, "--n-jobs", "{n_jobs}", "--no-progress"]))
"""


@pytest.mark.parametrize("n_jobs", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_sigterm_stops_a_run_like_ctrl_c(tmp_path, n_jobs):
    psutil = pytest.importorskip("psutil")
    import signal

    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_GRID.format(out=str(out), n_jobs=n_jobs)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    results, family = out / "results.jsonl", []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            family = psutil.Process(proc.pid).children(recursive=True)
            if results.exists() and len(results.read_text().splitlines()) == 2 and len(family) >= 2 * (n_jobs > 1):
                break
            time.sleep(0.1)
        assert (out / "results.jsonl.lock").exists(), "the run did not start"
        time.sleep(0.5)  # the next cells have started
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143, stderr
    assert stderr == "rsvm-conic: terminated (finished grid cells are kept; the same command resumes)\n"
    assert not (out / "results.jsonl.lock").exists()
    assert sorted(r["cell"]["a"] for r in ResultsStore(results).records()) == [0, 1]
    gone, alive = psutil.wait_procs(family, timeout=15)
    assert not alive, f"worker processes outlived the run: {alive}"
