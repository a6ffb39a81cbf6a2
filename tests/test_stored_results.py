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
    from rsvm_conic.problems.bhadra2010_readings import (
        MEDIUM,
        effect_table,
        figure_effect,
        medium_cells,
        reference_block,
    )
    from rsvm_conic.problems.bhadra2010_table1 import READINGS, n_datasets

    rd = _load("bhadra2010-readings-medium")
    _check_provenance(rd["provenance"], "bhadra2010-readings-medium")
    assert "(medium: 3 data sets per block)" in rd["title"]  # the page labels it; it is not the full run
    table = effect_table(rd)
    assert table.count("\n") == 2 + len(rd["blocks"])
    for block, blk in rd["blocks"].items():
        assert blk["datasets"] == list(range(n_datasets(MEDIUM, blk["regime"])))  # every block complete
        assert blk["reading"] == "base" or blk["reading"] in READINGS
        if reference_block(rd, block) is None:
            assert blk["reading"] == "base" and blk["regime"] in ("default", "paper")
    # a block of the medium run is in the report whole, or named in the provenance as left out
    blocks = {f"{c['reading']}: {c['regime']}" for c in medium_cells(False) if "kind" not in c}
    left = [b for b in blocks if b not in rd["blocks"]]
    assert all(f"{b} (table)" in rd["provenance"].get("note", "") for b in left)
    assert {"base: default", "base: paper"} | {
        f"{r}: default" for r in ("symmetric", "symmetric-beta", "random-l")
    } <= (set(rd["blocks"]))
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


def _range(values) -> str:
    return f"{round(min(values))}-{round(max(values))}"  # the pages round to whole points


def test_numbers_written_on_the_pages_are_the_stored_runs():
    """The numbers the pages and the module docstring state in prose (not rendered from the runs) are the stored
    full run's: the default reading's nominal SVM NomErr accuracies against the paper's, and the spread of the
    paper regime's RobustErr cells over its data sets."""
    from rsvm_conic.problems import bhadra2010_table1 as bt

    agg = _load("bhadra2010-table1")
    page = (ROOT / "docs" / "reproductions.md").read_text()
    doc = " ".join(bt.__doc__.split())
    svm_ne = _range([bt.judge(agg["blocks"]["default"], law, "NE", "svm").mean for law in bt.LAWS])
    paper_ne = _range([bt.PAPER_TABLE1[(law, "NE")][-1] for law in bt.LAWS])
    assert f"NomErr accuracy {svm_ne}% against the paper's {paper_ne}%" in page
    assert f"NomErr accuracy of {svm_ne}%, against the paper's {paper_ne}%" in doc
    paper = agg["blocks"]["paper"]
    re_sd = _range([bt.judge(paper, law, "RE", m).sd for law in bt.LAWS for m in bt.METHODS])
    assert page.count(f"spread is {re_sd} points") + page.count(f"spread by {re_sd} points") == 2
    assert f"spread by {re_sd} points (sd over the stored full run's {len(paper['datasets'])} data sets)" in doc
    assert f"runs {len(paper['datasets'])}, which" in " ".join(page.split())


def _page_output(page: str, section: str) -> str:
    """What the code cells of ``section`` of a docs page show (its first cell, the set-up, run first), executed as
    the documentation build executes them, in ``docs/``, collecting what they display."""
    import contextlib
    import io
    import os

    shown = []
    ns = {"Markdown": lambda text: text, "Image": lambda **kw: None, "display": lambda *objs: shown.extend(objs)}
    text = (ROOT / "docs" / page).read_text()
    cells = re.findall(r"```\{code-cell\} python\n(?::tags:[^\n]*\n)?(.*?)```", text, re.S)
    start = text.index(section)
    end = text.find("\n## ", start + 1)
    mine = [c for c in cells if start < text.index(c) < (end if end > 0 else len(text))]
    out = io.StringIO()
    setup, n = re.subn(r"from IPython\.display import [^\n]*\n", "", cells[0])
    assert n == 1  # the page displays through IPython.display: the test supplies its names
    cwd = os.getcwd()
    try:
        os.chdir(ROOT / "docs")
        with contextlib.redirect_stdout(out):
            exec(setup, ns)
            for cell in mine:
                exec(cell, ns)
    finally:
        os.chdir(cwd)
    return out.getvalue() + "\n".join(x for x in shown if isinstance(x, str))


def test_not_reproduced_page_lists_every_not_reproduced_claim_of_the_full_runs():
    from rsvm_conic.problems import bhadra2010_table1 as bt

    agg = _load("bhadra2010-table1")
    shown = _page_output("not_reproduced.md", "## [BBBB10] Table 1 and its text")
    for c in bt.paper_claims(agg):
        if c["verdict"] == "not reproduced":
            assert f"| {c['block']} | {c['claim']} | {c['ours']} | not reproduced |" in shown
    for block, blk in agg["blocks"].items():
        n_not = bt.verdict_counts(agg, block)["not reproduced"]
        assert f"**{block}** ({len(blk['datasets'])} data sets): {n_not} cells not reproduced" in shown
        for law in bt.LAWS:
            for metric in bt.METRICS:
                for m in bt.METHODS:
                    if bt.judge(blk, law, metric, m).verdict == "not reproduced":
                        name = f"{bt.LAW_TITLES[law]} {metric} {bt.METHOD_TITLES[m]}:"
                        assert name in shown, (block, name)
    t4 = _load("dakdouki2019-table4-2")
    shown = _page_output("not_reproduced.md", "## [ElD19] Tables 4.2-4.4")
    missed = [c for c in t4["claims"] if c["verdict"] == "not reproduced"]
    assert f"{len(missed)} of {len(t4['claims'])} measured claims not reproduced" in shown
    for c in t4["claims"]:
        assert (f"| {c['claim']} |" in shown) == (c["verdict"] == "not reproduced"), c["claim"]


def test_reproductions_page_shows_the_stored_runs_with_their_provenance():
    from rsvm_conic.problems._reproduction import provenance_markdown
    from rsvm_conic.problems.bhadra2010_readings import effect_table

    rd = _load("bhadra2010-readings-medium")
    shown = _page_output("reproductions.md", "### The readings Sec. 5.1 leaves open")
    assert provenance_markdown(rd["provenance"]) in shown and effect_table(rd) in shown
    assert "ME = MajErr" in shown and "R (tie) / N / I = " in shown
    t4 = _load("dakdouki2019-table4-2")
    shown = _page_output("reproductions.md", "## [ElD19] Tables 4.2-4.4")
    assert provenance_markdown(t4["provenance"]) in shown and "WW-M-SVM, WW = " in shown
