"""The full runs stored for the documentation (``docs/stored_runs/``): each names the commit and command that made it,
and the reproductions' current code renders it (the pages render them at build time, so a stored run that the code
can no longer read, or a quick run stored in place of a full one, fails here first)."""

import json
import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
STORED = ROOT / "docs" / "stored_runs"


def _load(name):
    return json.loads((STORED / f"{name}.json").read_text())


def _check_provenance(prov, name):
    assert re.fullmatch(r"[0-9a-f]{40}", prov["commit"]) and prov["dirty"] is False
    assert re.fullmatch(r"[0-9a-f]{40}", prov.get("cells_commit", prov["commit"]))
    assert prov["command"].startswith(f"rsvm-conic reproduce {name} ") and "--quick" not in prov["command"]
    assert prov["wall_seconds"] > 0 and prov["cores"] >= 1


def test_table1_full_run_is_stored_and_renders():
    from rsvm_conic.problems._reproduction import VERDICTS
    from rsvm_conic.problems.bhadra2010_table1 import (
        FULL,
        LAWS,
        METHODS,
        METRICS,
        n_datasets,
        paper_claims,
        plot_figures,
        render,
        verdict_counts,
    )

    agg = _load("bhadra2010-table1")
    _check_provenance(agg["provenance"], "bhadra2010-table1")
    assert list(agg["blocks"]) == list(FULL["regimes"])
    md, rows = render(agg, agg["title"])
    assert len(rows) == 2 * len(LAWS) * len(METRICS) * len(METHODS)
    for block, blk in agg["blocks"].items():
        assert blk["datasets"] == list(range(n_datasets(FULL, block)))  # the full run's data sets, all of them
        c = verdict_counts(agg, block)
        assert sum(c[v] for v in VERDICTS) == c["cells"] == 63
        assert f"**{c['reproduced']} reproduced** (of which {c['tie']} tie the nominal SVM)" in md
        for e in blk["cells"].values():
            assert len(e["values"]) == len(blk["datasets"])
    # every figure averages every data set of its block
    for block, by_kind in agg["figures"].items():
        for by_cons in by_kind.values():
            for d in by_cons.values():
                for law in d.values():
                    assert all(len(v) == len(agg["blocks"][block]["datasets"]) for v in law["over_x"].values())
                    assert all(np.isfinite([x for x in v if x is not None]).all() for v in law["mean"].values())
    assert {c["verdict"] for c in paper_claims(agg)} <= set(VERDICTS)
    assert len(plot_figures(agg, Path(__import__("tempfile").mkdtemp()))) == 3


def test_readings_run_is_stored_and_renders():
    from rsvm_conic.problems.bhadra2010_readings import FULL, effect_table, figure_effect, reference_block
    from rsvm_conic.problems.bhadra2010_table1 import READINGS, n_datasets

    rd = _load("bhadra2010-readings")
    _check_provenance(rd["provenance"], "bhadra2010-readings")
    table = effect_table(rd)
    assert table.count("\n") == 2 + len(rd["blocks"])
    for block, blk in rd["blocks"].items():
        assert blk["datasets"] == list(range(n_datasets(FULL, blk["regime"])))
        assert blk["reading"] == "base" or blk["reading"] in READINGS
        if reference_block(rd, block) is None:
            assert blk["reading"] == "base"
    assert "test-noise" in figure_effect(rd)


def test_table4_2_full_run_is_stored_with_its_claims():
    from rsvm_conic.problems.dakdouki2019_table4_2 import DATASETS_FULL, claims_table

    t4 = _load("dakdouki2019-table4-2")
    _check_provenance(t4["provenance"], "dakdouki2019-table4-2")
    assert {k.split("/")[0] for k in t4["variance"]} == set(DATASETS_FULL)  # the full run's six data sets
    missed = [c for c in t4["claims"] if c["verdict"] == "not reproduced"]
    table = claims_table(t4["claims"])
    assert all(c["claim"] in table for c in missed) and table.count("\n") == 2 + len(missed)
    assert "Claims measured and not reproduced" in t4["markdown"]
