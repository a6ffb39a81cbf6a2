"""The results store survives damage, a second run on the same store and a killed parent; records
note the package versions they were computed under, and reusing other versions is reported."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pytest

from rsvm_conic.runner import ResultsStore, cell_key, run_grid
from rsvm_conic.runner.grid import _indexed, environment
from rsvm_conic.exceptions import StoreLockedError, StoreWarning

ROOT = Path(__file__).resolve().parents[1]
CELLS = [{"a": i} for i in range(4)]


def _square(cell, calls):
    calls.append(cell["a"])
    return {"sq": cell["a"] ** 2}


def _run(path, calls=None, **kw):
    calls = [] if calls is None else calls
    out = run_grid(CELLS, lambda c: _square(c, calls), ResultsStore(path), progress=False, **kw)
    assert [r["sq"] for r in out] == [c["a"] ** 2 for c in CELLS]
    return calls


@pytest.fixture
def done(tmp_path):
    """A complete store of CELLS: (path, its record lines as bytes, in cell order)."""
    path = tmp_path / "res.jsonl"
    _run(path)
    lines = path.read_bytes().splitlines()
    assert [json.loads(x)["cell"]["a"] for x in lines] == [0, 1, 2, 3]
    return path, lines


def _without(line: bytes, field: str) -> bytes:
    rec = json.loads(line)
    del rec[field]
    return json.dumps(rec).encode()


# each: cell 1's line -> the damaged line(s) that replace it
DAMAGE = {
    "not-a-record": lambda line: b'{"foo": 1}',
    "null": lambda line: b"null",
    "number": lambda line: b"42",
    "invalid-utf8": lambda line: line.replace(b'"sq"', b'"s\xff\xfe"'),
    "no-result": lambda line: _without(line, "result"),
    "no-key": lambda line: _without(line, "key"),
    "no-cell": lambda line: _without(line, "cell"),
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_a_damaged_line_is_set_aside_and_its_cell_recomputed(done, kind):
    path, lines = done
    bad = DAMAGE[kind](lines[1])
    path.write_bytes(b"\n".join([lines[0], bad, lines[2], lines[3]]) + b"\n")
    with pytest.warns(
        StoreWarning,
        match=r"res\.jsonl: 1 damaged line moved to res\.jsonl\.damaged; their cells "
        r"will be recomputed",
    ):
        calls = _run(path)
    assert calls == [1]
    assert Path(f"{path}.damaged").read_bytes() == bad + b"\n"
    assert path.read_bytes().splitlines()[:3] == [lines[0], lines[2], lines[3]]
    assert len(ResultsStore(path).records()) == 4 and ResultsStore(path).damaged == 0


def test_truncated_last_line_and_many_damaged_lines(done):
    path, lines = done
    cut = lines[3][: len(lines[3]) // 2]  # a kill in the middle of writing cell 3
    bad = [b'{"foo": 1}', b"null", b"42", b"\xff\xfe{", _without(lines[1], "result"), cut]
    path.write_bytes(b"\n".join([lines[0], *bad[:5], lines[2], cut]))
    with pytest.warns(StoreWarning, match="6 damaged lines moved to res.jsonl.damaged") as rec:
        calls = _run(path)
    assert len([w for w in rec if issubclass(w.category, StoreWarning)]) == 1
    assert sorted(calls) == [1, 3]
    assert Path(f"{path}.damaged").read_bytes() == b"".join(x + b"\n" for x in bad)
    with warnings.catch_warnings():  # now clean: no warning, nothing recomputed
        warnings.simplefilter("error", StoreWarning)
        assert _run(path) == []
    # damaged lines are appended to the side file, never lost
    with open(path, "ab") as fh:
        fh.write(b"[1, 2]\n")
    with pytest.warns(StoreWarning, match="1 damaged line"):
        _run(path)
    assert Path(f"{path}.damaged").read_bytes().splitlines() == [*bad, b"[1, 2]"]


def test_reading_a_damaged_store_never_fails_nor_changes_it(done):
    path, lines = done
    data = b"\n".join([lines[0], b"null", b"\xff", b"42", lines[2], lines[3][:10]])
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        store = ResultsStore(path)
        assert sorted(r["cell"]["a"] for r in store.records()) == [0, 2]
    assert store.damaged == 4 and store.get({"a": 1}) is None and {"a": 2} in store
    assert path.read_bytes() == data and not Path(f"{path}.damaged").exists()


def test_add_after_a_partial_last_line_starts_a_new_line(done):
    path, lines = done
    path.write_bytes(lines[0] + b"\n" + lines[1][:7])
    store = ResultsStore(path)
    store.add({"a": 9}, {"sq": 81})
    assert ResultsStore(path).get({"a": 9}) == {"sq": 81} and ResultsStore(path).damaged == 1


def test_a_second_run_on_a_locked_store_refuses_naming_the_owner(tmp_path):
    path = tmp_path / "res.jsonl"

    def nested(cell):  # a second run on the same store while the first holds it
        return run_grid(CELLS, dict, ResultsStore(path), progress=False)

    with pytest.raises(
        StoreLockedError,
        match=rf"res\.jsonl is being written by another run \(pid {os.getpid()} "
        r"on .*, started .*\); wait for it to finish or use another --out",
    ):
        run_grid([{"x": 0}], nested, ResultsStore(path), progress=False)
    assert not Path(f"{path}.lock").exists()  # released after the exception
    assert _run(path) == [0, 1, 2, 3]


def test_lock_released_after_keyboard_interrupt_and_waiting_for_it(tmp_path):
    path = tmp_path / "res.jsonl"

    def interrupted(cell):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_grid(CELLS, interrupted, ResultsStore(path), progress=False)
    assert not Path(f"{path}.lock").exists()
    holder, entered, leave = ResultsStore(path), threading.Event(), threading.Event()

    def hold():
        with holder.locked():
            entered.set()
            leave.wait(60)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert entered.wait(60)
        with pytest.raises(StoreLockedError):
            _run(path)
        threading.Timer(0.3, leave.set).start()
        assert _run(path, wait=60) == [0, 1, 2, 3]  # waited for the holder
    finally:
        leave.set()
        t.join()


def test_stale_lock_of_a_dead_run_is_taken_over(tmp_path):
    path = tmp_path / "res.jsonl"
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(proc.stdout)  # a pid that no longer exists
    Path(f"{path}.lock").write_text(json.dumps({"pid": dead, "host": "h", "started": "2020-01-01 00:00:00"}))
    with pytest.warns(StoreWarning, match=rf"res\.jsonl\.lock: took over the lock left by .*pid {dead} on h"):
        assert _run(path) == [0, 1, 2, 3]
    assert not Path(f"{path}.lock").exists()


def test_the_store_is_reread_under_the_lock(tmp_path):
    path = tmp_path / "res.jsonl"
    early = ResultsStore(path)  # opened before another run finished every cell
    _run(path)
    calls = []
    run_grid(CELLS, lambda c: _square(c, calls), early, progress=False)
    assert calls == []
    assert len(path.read_bytes().splitlines()) == 4


def test_records_note_versions_and_other_versions_are_reported(done):
    path, lines = done
    recs = [json.loads(x) for x in lines]
    env = environment()
    assert all(r["env"] == env for r in recs) and set(env) >= {
        "python",
        "numpy",
        "scipy",
        "scikit-learn",
        "cvxpy",
        "clarabel",
        "scs",
        "rsvm-conic",
    }
    assert all(r["key"] == cell_key(r["cell"]) for r in recs)  # the key scheme is unchanged
    recs[0]["env"] = {**env, "cvxpy": "0.0.1"}
    recs[1]["env"] = {**env, "cvxpy": "0.0.2", "numpy": "1.0"}
    del recs[2]["env"]  # an older store
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    with pytest.warns(StoreWarning) as rec:
        assert _run(path) == []
    (msg,) = [str(w.message) for w in rec if issubclass(w.category, StoreWarning)]
    assert msg == (
        f"3 cells in res.jsonl were computed under other versions (numpy 1.0 -> {env['numpy']}, "
        f"cvxpy 0.0.1/0.0.2 -> {env['cvxpy']}; 1 of them under unknown versions); reused; use --fresh or "
        f"another --out to recompute them"
    )
    recs = [{k: v for k, v in r.items() if k != "env"} for r in recs]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs[:1]))
    with pytest.warns(StoreWarning, match="^1 cell in res.jsonl was computed under unknown versions"):
        assert _run(path) == [1, 2, 3]


def test_no_parent_watch_in_the_main_process(tmp_path):
    before = {t.name for t in threading.enumerate()}
    assert _indexed(dict, 3, {"a": 1}, os.getpid()) == (3, {"a": 1})
    _run(tmp_path / "res.jsonl")  # n_jobs=1: cells run here
    assert {t.name for t in threading.enumerate()} == before


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead
    except FileNotFoundError:
        return False
    except OSError:  # pragma: no cover - no /proc
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_workers_exit_when_the_parent_is_killed(tmp_path):
    script = textwrap.dedent(f"""
        import os, time
        from rsvm_conic.runner import run_grid

        def fn(cell):
            with open(os.path.join({str(tmp_path)!r}, str(os.getpid())), "w") as fh:
                fh.write(str(os.getppid()))
            time.sleep(120)
            return {{}}

        run_grid([{{"a": i}} for i in range(4)], fn, n_jobs=2, progress=False)
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    workers = []
    try:
        deadline = time.monotonic() + 180
        while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            workers = [int(p.name) for p in tmp_path.iterdir() if p.name.isdigit() and p.read_text()]
        assert len(workers) == 2, "the workers did not start"
        assert {int((tmp_path / str(w)).read_text()) for w in workers} == {proc.pid}  # children of the main process
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 15
        while any(map(_alive, workers)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(map(_alive, workers)), "workers outlived their parent"
    finally:
        proc.kill()
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)
