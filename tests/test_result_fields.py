"""Stored results are checked against the experiment's declared result fields before a report reads them:
a record whose result has the wrong type, lacks a field, or holds NaN or a value out of range is set aside
(to ``results.jsonl.damaged``) and its cell recomputed; a fresh result that fails is not stored."""

import json
import math
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rsvm_conic import problems
from rsvm_conic.runner import (
    Flag,
    GridExperiment,
    ListOf,
    MapOf,
    Maybe,
    Number,
    OneOf,
    Record,
    ResultsStore,
    Text,
    run_grid,
)
from rsvm_conic.exceptions import StoreWarning
from rsvm_conic.runner.fields import result_problem

EXPERIMENTS = {**problems.registry("REPRODUCTIONS"), **problems.registry("GRIDS")}


def test_every_experiment_declares_its_result_fields():
    assert EXPERIMENTS and all(e.result_fields is not None for e in EXPERIMENTS.values())


# ------------------------------------------------------------------ a real experiment, its store damaged
def _rff_select(cell):
    return cell["D"] == 10 and cell["seed"] < 2  # two cells of rff-error --quick


@pytest.fixture(scope="module")
def rff_done(tmp_path_factory):
    """rff-error's store after a clean run of two cells: (path, its lines, their results)."""
    from rsvm_conic.problems.rff_error import EXPERIMENT

    out = tmp_path_factory.mktemp("rff")
    run = EXPERIMENT.run(out, quick=True, progress=False, select=_rff_select)
    assert run.ok and len(run.results) == 2
    lines = (out / "results.jsonl").read_bytes().splitlines()
    return out / "results.jsonl", lines, run.results


# each: cell 0's result -> the wrong value stored in its place
WRONG = {
    "null": None,
    "list": [0.4],
    "empty-object": {},
    "string-for-number": {"sup_error": "0.45"},
    "nan": {"sup_error": math.nan},
    "infinity": {"sup_error": math.inf},
    "out-of-range": {"sup_error": 7.5},
    "negative": {"sup_error": -0.1},
    "bool-for-number": {"sup_error": True},
}


@pytest.mark.parametrize("kind", sorted(WRONG))
def test_an_invalid_record_is_set_aside_and_recomputed_not_reported(rff_done, tmp_path, kind):
    from rsvm_conic.problems.rff_error import EXPERIMENT

    path, lines, results = rff_done
    rec = json.loads(lines[0])
    rec["result"] = WRONG[kind]
    bad = json.dumps(rec).encode()
    (tmp_path / "results.jsonl").write_bytes(b"\n".join([bad, lines[1]]) + b"\n")
    cell = json.dumps(rec["cell"], sort_keys=True)
    with pytest.warns(StoreWarning) as caught:
        run = EXPERIMENT.run(tmp_path, quick=True, progress=False, select=_rff_select)
    (msg,) = [str(w.message) for w in caught if issubclass(w.category, StoreWarning)]
    assert msg.startswith(
        f"results.jsonl: 1 record whose result fails the experiment's result fields (cell {cell}: result"
    ), msg
    assert msg.endswith("moved to results.jsonl.damaged; their cells will be recomputed"), msg
    assert run.ok and run.results == results  # recomputed: the same number as the clean run
    assert (tmp_path / "results.jsonl.damaged").read_bytes() == bad + b"\n"
    with warnings.catch_warnings():  # clean now: nothing set aside, nothing recomputed
        warnings.simplefilter("error", StoreWarning)
        assert EXPERIMENT.run(tmp_path, quick=True, progress=False, select=_rff_select).results == results


def test_the_message_names_the_field_and_what_it_should_be(rff_done, tmp_path):
    path, lines, _ = rff_done
    rec = json.loads(lines[1])
    rec["result"]["sup_error"] = math.nan
    (tmp_path / "results.jsonl").write_bytes(lines[0] + b"\n" + json.dumps(rec).encode() + b"\n")
    from rsvm_conic.problems.rff_error import EXPERIMENT

    store = EXPERIMENT.store(tmp_path)
    assert store.invalid == 1 and store.damaged == 0 and len(store.records()) == 1
    with pytest.warns(StoreWarning, match=r"result\['sup_error'\] is NaN, expected a finite number in \[0, 2\]\)"):
        with store.locked():
            pass


# ------------------------------------------------------------------ the store on its own
CELLS = [{"a": i} for i in range(4)]
FIELDS = Record({"sq": Number(0, integer=True)})


def _square(cell, calls):
    calls.append(cell["a"])
    return {"sq": cell["a"] ** 2}


def _run(path, fields=FIELDS):
    calls = []
    out = run_grid(CELLS, lambda c: _square(c, calls), ResultsStore(path, fields=fields), progress=False)
    assert out == [{"sq": c["a"] ** 2} for c in CELLS]
    return calls


@pytest.mark.parametrize("result", [None, [1], "1", 1])
def test_without_declared_fields_a_result_must_be_an_object(tmp_path, result):
    path = tmp_path / "res.jsonl"
    _run(path, fields=None)
    lines = path.read_bytes().splitlines()
    rec = json.loads(lines[2])
    rec["result"] = result
    path.write_bytes(b"\n".join([lines[0], lines[1], json.dumps(rec).encode(), lines[3]]) + b"\n")
    with pytest.warns(StoreWarning, match="1 record whose result fails .* expected an object"):
        assert _run(path, fields=None) == [2]


def test_damaged_lines_and_invalid_records_in_one_warning(tmp_path):
    path = tmp_path / "res.jsonl"
    _run(path)
    lines = path.read_bytes().splitlines()
    recs = [json.loads(x) for x in lines]
    recs[1]["result"] = {"sq": 1.5}
    recs[2]["result"] = {"sq": -4}
    path.write_bytes(b"\n".join([lines[0], json.dumps(recs[1]).encode(), json.dumps(recs[2]).encode(), b"{"]))
    with pytest.warns(StoreWarning) as caught:
        assert sorted(_run(path)) == [1, 2, 3]
    (msg,) = [str(w.message) for w in caught if issubclass(w.category, StoreWarning)]
    assert msg == (
        "res.jsonl: 1 damaged line and 2 records whose result fails the experiment's result fields "
        "(cell {\"a\": 1}: result['sq'] is 1.5, expected an integer >= 0; and 1 more) moved to "
        "res.jsonl.damaged; their cells will be recomputed"
    )


def test_records_of_other_versions_are_not_checked_nor_moved(tmp_path):
    path = tmp_path / "res.jsonl"
    run_grid(CELLS, lambda c: {"sq": None}, ResultsStore(path, version="old"), progress=False)
    before = path.read_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        store = ResultsStore(path, version="new", fields=FIELDS)
        with store.locked():
            assert store.invalid == 0 and not any(c in store for c in CELLS)  # never reused: a different key
    assert path.read_bytes() == before


def test_a_fresh_result_that_fails_is_not_stored(tmp_path):
    path = tmp_path / "res.jsonl"

    def fn(cell):
        return {"sq": math.nan if cell["a"] == 2 else cell["a"] ** 2}

    with pytest.raises(ValueError, match=r'cell \{"a": 2\} returned a result that fails .*result\[\'sq\'\] is NaN'):
        run_grid(CELLS, fn, ResultsStore(path, fields=FIELDS), progress=False)
    assert [json.loads(x)["cell"]["a"] for x in path.read_bytes().splitlines()] == [0, 1]


def test_a_report_of_an_experiment_only_reads_valid_results(tmp_path):
    seen = []

    def report(run):
        seen.append([r["sq"] for r in run.results])
        return str(sum(r["sq"] for r in run.results)), True

    exp = GridExperiment("squares", "squares", lambda quick: CELLS, _sq, report, result_fields=FIELDS)
    exp.run(tmp_path, progress=False, n_jobs=1)
    path = tmp_path / "results.jsonl"
    recs = [json.loads(x) for x in path.read_bytes().splitlines()]
    recs[3]["result"] = {"sq": "9"}
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    with pytest.warns(StoreWarning, match="result\\['sq'\\] is \"9\", expected an integer >= 0"):
        assert exp.run(tmp_path, progress=False, n_jobs=1).summary == "14"
    assert seen == [[0, 1, 4, 9], [0, 1, 4, 9]]


def _sq(cell):
    return {"sq": cell["a"] ** 2}


# ------------------------------------------------------------------ the field types, as a family
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


@given(JSON)
def test_a_number_field_accepts_exactly_the_numbers_in_its_range(value):
    field = Number(0, 1)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= 1
    assert (field.problem(value, "v") is None) == ok
    assert (Number(0, 1, nan=True).problem(value, "v") is None) == (
        ok or (isinstance(value, float) and math.isnan(value))
    )
    integer = ok and isinstance(value, int)
    assert (Number(0, 1, integer=True).problem(value, "v") is None) == integer


@given(JSON)
def test_container_fields_check_every_item(value):
    item = Number(0, 100, nan=True)
    lists = ListOf(Maybe(item)).problem(value, "v") is None
    expect = isinstance(value, list) and all(v is None or item.problem(v, "x") is None for v in value)
    assert lists == expect
    maps = MapOf(item, keys=("a",)).problem(value, "v") is None
    expect = isinstance(value, dict) and "a" in value and all(item.problem(v, "x") is None for v in value.values())
    assert maps == expect
    rec = Record({"a": Flag()}, optional={"b": Text("x", "y")}).problem(value, "v") is None
    expect = (
        isinstance(value, dict) and isinstance(value.get("a"), bool) and ("b" not in value or value["b"] in ("x", "y"))
    )
    assert rec == expect
    either = OneOf(Text("auto"), Number(0)).problem(value, "v") is None
    assert either == (value == "auto" or Number(0).problem(value, "x") is None)


def test_lists_of_a_given_length_and_nested_paths():
    field = Record({"errors": MapOf(ListOf(ListOf(Maybe(Number(0, 100)), 2), 2), keys=("qp",))})
    good = {"errors": {"qp": [[1.0, None], [0, 100]]}}
    assert result_problem(good, {}, field) is None
    bad = {"errors": {"qp": [[1.0, None], [0, 100.5]]}}
    assert result_problem(bad, {}, field) == (
        "result['errors']['qp'][1][1] is 100.5, expected a finite number in [0, 100]"
    )
    assert result_problem({"errors": {"qp": [[1.0]]}}, {}, field) == "result['errors']['qp'] has 1 items, expected 2"
    assert result_problem({"errors": {}}, {}, field) == "result['errors'] has no 'qp'"
