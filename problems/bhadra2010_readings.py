"""[BBBB10] Table 1 under the readings Sec. 5.1 leaves open: their effect on the verdicts.

``rsvm-conic reproduce bhadra2010-readings [--quick] [--out DIR]``: the Table 1 protocol of
:mod:`.bhadra2010_table1` (same data sets, grid, methods and verdict rule) on fewer data sets, once in the main
run's reading and once in each alternative, paired (the same seeds, so the same points); ``readings.md`` /
``readings.json`` beside ``results.jsonl`` hold the effect table and every block's verdict table.

The readings (each a cell key; :data:`.bhadra2010_table1.READINGS`):

* ``symmetric``: the noise drawn symmetric, ``Z_ij = Z_ji`` (the paper writes ``l_ij = l_ji``; the main run draws
  all ``n^2`` entries independently, which Lemma 1 and Thm 2 assume), with the paper's ``beta``;
* ``symmetric-beta``: the same noise with the ``beta`` for which the bounds hold under symmetric noise
  (off-diagonal entries doubled, :func:`rsvm_conic.uncertainty.kernel_matrix.symmetric_noise_beta`);
* ``random-l``: Sec. 5.1 first multiplies the noise "by a random ``l_ij``", then "chose ``l_ij = 0.25 K_ij``"; the
  main run reads the second, this the first: ``l_ij = l_ji = 0.25 |K_ij| u_ij``, ``u_ij ~ U(0, 1)`` per data set;
* ``qn-multistart``: RSVM_QN with 3 random starts at every grid point besides the warm start (the paper uses
  "multiple starting points"; the main run none, for its time budget);
* ``test-noise``: Figs. 1-2's test noise bounded by ``kappa l_ij`` as the paper writes (ours is ``kappa l_ij Z``
  with ``|Z| <= 0.5`` for the finite-support laws, i.e. half of it); it changes the figures' claims only;
* the paper regime's neighbours (:data:`.bhadra2010_table1.REGIME_VARIANTS`): points x 10 and x 100 instead of
  x sqrt(1000) (the C grid x 100 and x 10^4 instead of x 1000), and centres (2, 2) instead of (1, 1).

Full run: the full grid and data size on the main run's first 5 data sets in the default reading and its first 4
in the paper regime and its neighbours; ``--quick``: the quick protocol (2 data sets of 60 points, a 2 x 2 grid)
on the default reading only, too few data sets for any verdict (:data:`._reproduction.MIN_DATASETS`).

``rsvm-conic reproduce bhadra2010-readings-medium --n-jobs 1``: the full grid and data size on the main run's
first 3 data sets (:data:`MEDIUM`), every reading once: the table readings and Figs. 1-2 with the test-noise
reading in the default reading, the paper regime with its neighbours, then RSVM_QN's multi-start (its cells cost
about 10x the others, so they run last); the paper regime under the noise readings and with the multi-start is the
full run's.  Three data sets give a verdict where the cell's spread over data sets is below about 2 points (half-width
``t_{0.975, 2} sd / sqrt(3) = 2.48 sd`` within the 5-point window): most of the default reading's cells, few of
the paper regime's RobustErr cells.  The effect of a reading is measured beside the verdicts as the shift of each
cell, paired by data set against the main reading.
"""

from __future__ import annotations

import json

import numpy as np

from rsvm_conic.runner import GridExperiment

from . import bhadra2010_table1 as t1
from ._reproduction import SHORT, VERDICTS, provenance

#: Data sets per block in the full run: the main run's first 5 in the default reading, its first 4 in the paper
#: regime and its neighbours (whose cells cost about 3x more).
READING_DATASETS = 5
READING_PAPER_DATASETS = 4
FULL = dict(t1.FULL, n_datasets=READING_DATASETS, paper_datasets=READING_PAPER_DATASETS)
QUICK = dict(t1.QUICK, regimes=("default",))
#: The medium run: the full grid and data size on 3 data sets per block (the fewest that get a verdict).
MEDIUM = dict(t1.FULL, n_datasets=3, paper_datasets=3)
TABLE_READINGS = ("symmetric", "symmetric-beta", "random-l", "qn-multistart")
#: What the effect tables' columns mean (printed with them, after :data:`.bhadra2010_table1.ABBREVIATIONS`).
EFFECT_LEGEND = (
    "Columns: R (tie) / N / I = the block's cells reproduced (of which tie the nominal SVM) / not reproduced / "
    "inconclusive, of 63; SVM NE, RE = the nominal SVM's NomErr and RobustErr accuracy (%) per noise law; cells "
    "moved = the mean over cells of the absolute paired shift of the cell's mean (reading minus reference, on the "
    "same data sets), and the largest shift; verdicts changed = the cells whose verdict (or tie) differs from the "
    "reference block's. Figures' claims: per construction the panels x methods whose claim (the SVM's RobustErr "
    "grows faster than the method's) is reproduced / not reproduced / inconclusive, with the SVM's minus the "
    "method's RobustErr (points) in brackets."
)


def reading_cells(cfg: dict, variants: bool) -> list[dict]:
    """Every block's cells, cheapest first (so that an interrupted run holds whole blocks): regime by regime (the
    default reading first) the main reading, each table reading but ``qn-multistart``, Figs. 1-2 in the main reading
    and with the test-noise reading; then (``variants``) the paper regime's neighbours; then ``qn-multistart``
    (each of its grid points runs RSVM_QN from 3 more starts: about 10x the cost of a main-reading cell)."""
    cells = []
    for regime in cfg["regimes"]:
        rc = dict(cfg, regimes=(regime,))
        cells += t1.table_cells(rc, {"reading": "base"})
        cells += t1.figure_cells(rc, {"reading": "base"}, kinds=("fig1", "fig2"))
        for name in TABLE_READINGS[:-1]:
            cells += t1.table_cells(rc, {"reading": name, **t1.READINGS[name]})
        cells += t1.figure_cells(rc, {"reading": "test-noise", **t1.READINGS["test-noise"]}, kinds=("fig1", "fig2"))
    if variants:
        cells += t1.table_cells(dict(cfg, regimes=tuple(t1.REGIME_VARIANTS)), {"reading": "base"})
    for regime in cfg["regimes"]:
        cells += t1.table_cells(
            dict(cfg, regimes=(regime,)), {"reading": "qn-multistart", **t1.READINGS["qn-multistart"]}
        )
    return cells


def cells(quick: bool) -> list[dict]:
    return reading_cells(QUICK, variants=False) if quick else reading_cells(FULL, variants=True)


def medium_cells(quick: bool) -> list[dict]:
    """The medium run's cells (``quick``: the quick run's), block by block so that an interrupted run holds whole
    blocks: the paper regime and the default reading in the main reading, the default reading's table readings but
    ``qn-multistart``, its Figs. 1-2 in the main and the test-noise reading, the paper regime's neighbours (their
    large effective ``C`` makes a cell cost about 3x a default one), then the default reading's ``qn-multistart``
    (about 10x)."""
    if quick:
        return cells(True)
    default = dict(MEDIUM, regimes=("default",))
    out = t1.table_cells(dict(MEDIUM, regimes=("paper",)), {"reading": "base"})
    out += t1.table_cells(default, {"reading": "base"})
    for name in TABLE_READINGS[:-1]:
        out += t1.table_cells(default, {"reading": name, **t1.READINGS[name]})
    out += t1.figure_cells(default, {"reading": "base"}, kinds=("fig1", "fig2"))
    out += t1.figure_cells(default, {"reading": "test-noise", **t1.READINGS["test-noise"]}, kinds=("fig1", "fig2"))
    for regime in ("paper-c22", "paper-s100", "paper-s10000"):  # the centres first, then the scale
        out += t1.table_cells(dict(MEDIUM, regimes=(regime,)), {"reading": "base"})
    return out + t1.table_cells(default, {"reading": "qn-multistart", **t1.READINGS["qn-multistart"]})


def reference_block(agg: dict, block: str) -> str | None:
    """The block a block is compared with: the main reading of the same regime (the paper regime for its
    neighbours); ``None`` for a main-reading block of the main regimes."""
    blk = agg["blocks"][block]
    reading, regime = blk["reading"], blk["regime"]
    if reading == "base":
        return "base: paper" if regime in t1.REGIME_VARIANTS and "base: paper" in agg["blocks"] else None
    ref = f"base: {regime}"
    return ref if ref in agg["blocks"] else None


def _name(law, metric, m) -> str:
    return f"{t1.LAW_TITLES[law]} {metric} {t1.METHOD_TITLES[m]}"


def effect(agg: dict, block: str, ref: str) -> dict:
    """What a reading changes against its reference block, cell by cell on the same data sets.

    ``changed``: the cells whose verdict (or, for a reproduced cell, tie flag) differs, as ``"name: R -> N"``;
    ``mean_abs_shift`` and ``largest`` (name, shift): the mean paired difference of each cell's per-data-set
    values (reading minus reference), averaged in absolute value, and the largest.
    """
    blk, rb = agg["blocks"][block], agg["blocks"][ref]
    changed, shifts = [], {}
    for law in t1.LAWS:
        for metric in t1.METRICS:
            for m in t1.METHODS:
                key = f"{law}/{metric}/{m}"
                if key not in blk["cells"] or key not in rb["cells"]:
                    continue
                v, w = t1.judge(blk, law, metric, m), t1.judge(rb, law, metric, m)
                a = dict(zip(blk["datasets"], t1._values(blk, law, metric, m)))  # paired by data set
                b = dict(zip(rb["datasets"], t1._values(rb, law, metric, m)))
                d = [a[k] - b[k] for k in a if k in b and np.isfinite(a[k]) and np.isfinite(b[k])]
                if d:
                    shifts[_name(law, metric, m)] = float(np.mean(d))
                tag = lambda x: SHORT[x.verdict] + (" tie" if x.tie and x.verdict == "reproduced" else "")  # noqa: E731
                if tag(v) != tag(w):
                    changed.append(f"{_name(law, metric, m)}: {tag(w)} -> {tag(v)}")
    largest = max(shifts.items(), key=lambda kv: abs(kv[1])) if shifts else (None, float("nan"))
    return {
        "changed": changed,
        "mean_abs_shift": float(np.mean(np.abs(list(shifts.values())))) if shifts else float("nan"),
        "largest": largest,
    }


def effect_table(agg: dict) -> str:
    """The closing table: per block its verdict counts, the nominal SVM's NomErr / RobustErr accuracy per law,
    and against its reference block the verdicts that changed and the mean / largest shift of the cells."""
    lines = [
        "| reading | regime | data sets | R (tie) / N / I | SVM NE, RE (uniform; Gaussian; beta) | cells moved: mean "
        "abs. shift, largest | verdicts changed against the reference (same data sets) |",
        "|---|---|---|---|---|---|---|",
    ]
    for block, blk in agg["blocks"].items():
        c = t1.verdict_counts(agg, block)
        svm = "; ".join(
            f"{t1.judge(blk, law, 'NE', 'svm').mean:.1f}, {t1.judge(blk, law, 'RE', 'svm').mean:.1f}"
            for law in t1.LAWS
            if f"{law}/NE/svm" in blk["cells"]
        )
        ref = reference_block(agg, block)
        if ref is None:
            moved, changed = "(reference)", "-"
        else:
            e = effect(agg, block, ref)
            name, shift = e["largest"]
            moved = f"{e['mean_abs_shift']:.2f}, {shift:+.2f} ({name}) against {ref}"
            shown = e["changed"][:8]
            more = len(e["changed"]) - len(shown)
            changed = f"{len(e['changed'])}: " + "; ".join(shown) + (f"; and {more} more" if more > 0 else "")
            if not e["changed"]:
                changed = "none"
        lines.append(
            f"| {t1.READING_TITLES.get(blk['reading'], blk['reading'])} | {t1.REGIME_TITLES[blk['regime']]} "
            f"| {len(blk['datasets'])} | {c['reproduced']} ({c['tie']}) / {c['not reproduced']} / "
            f"{c['inconclusive']} | {svm} | {moved} | {changed} |"
        )
    return "\n".join(lines) + "\n"


def figure_effect(agg: dict) -> str:
    """The test-noise reading's effect on the figures' claims: counts per block and construction, and the claims
    whose verdict changed."""
    rows = t1.figure_claims(agg)
    if not rows:
        return ""
    by = {(r["block"], r["construction"], r["fig"], r["law"], r["method"]): r for r in rows}
    lines = [
        "| figures' claims | construction | R / N / I | verdicts changed against the main reading |",
        "|---|---|---|---|",
    ]
    for block, cons in dict.fromkeys((r["block"], r["construction"]) for r in rows):
        mine = [r for r in rows if (r["block"], r["construction"]) == (block, cons)]
        counts = " / ".join(str(sum(r["verdict"] == v for r in mine)) for v in VERDICTS)
        reading, _, regime = block.partition(": ")
        changed = "(reference)"
        if reading != "base":
            diff = []
            for r in mine:
                b = by.get((f"base: {regime}", cons, r["fig"], r["law"], r["method"]))
                if b is not None and b["verdict"] != r["verdict"]:
                    diff.append(
                        f"{r['fig']} {r['law']} {t1.METHOD_TITLES[r['method']]}: {SHORT[b['verdict']]} "
                        f"({b['svm_minus_method']:+.1f}) -> {SHORT[r['verdict']]} ({r['svm_minus_method']:+.1f})"
                    )
            changed = f"{len(diff)}: " + "; ".join(diff) if diff else "none"
        lines.append(f"| {block} | {t1.CONSTRUCTIONS[cons]} | {counts} | {changed} |")
    return "\n".join(lines) + "\n"


def render(agg: dict, title: str) -> str:
    """``readings.md``: the effect tables, then every block's verdict table."""
    table_md, _ = t1.render_table(agg, title)
    head, _, blocks = table_md.partition("\n## ")
    return (
        head
        + "\n## Effect of each reading on the verdicts\n\n"
        + EFFECT_LEGEND
        + "\n\n"
        + effect_table(agg)
        + "\n### Figs. 1-2's claims under the test-noise reading\n\n"
        + figure_effect(agg)
        + "\n"
        + t1.render_figure_claims(agg)
        + "\n## "
        + blocks
    )


def report(run) -> tuple[str, bool]:
    """``readings.md`` and ``readings.json`` (the aggregate the documentation stores and renders); on stdout the
    effect tables with their abbreviations."""
    table = [(c, r) for c, r in zip(run.cells, run.results) if "kind" not in c]
    figs = [(c, r) for c, r in zip(run.cells, run.results) if "kind" in c]
    agg = t1.aggregate([c for c, _ in table], [r for _, r in table])
    agg.update(t1.figure_aggregate([c for c, _ in figs], [r for _, r in figs]))
    medium = run.name.endswith("-medium") and not run.quick
    cfg = QUICK if run.quick else MEDIUM if medium else FULL
    agg["title"] = "[BBBB10] Table 1 under alternative readings" + (
        f" (--quick: {cfg['n_datasets']} data sets of {2 * cfg['n_per_class']} points)"
        if run.quick
        else f" (medium: {cfg['n_datasets']} data sets per block)"
        if medium
        else ""
    )
    agg["provenance"] = provenance(run.name, run.quick, run.out, run.n_jobs, run.elapsed())
    md = render(agg, agg["title"])
    (run.out / "readings.md").write_text(md)
    (run.out / "readings.json").write_text(json.dumps(agg, indent=1, default=str))
    summary = f"# {agg['title']}\n\n{t1.ABBREVIATIONS}\n{EFFECT_LEGEND}\n\n" + effect_table(agg)
    return summary + "\n" + figure_effect(agg) + f"\nEvery block's verdict table: {run.out / 'readings.md'}\n", True


EXPERIMENT = GridExperiment(
    "bhadra2010-readings",
    "[BBBB10] Table 1 under the readings Sec. 5.1 leaves open (symmetric noise, random multiplier, QN multi-start, "
    "the figures' test noise, the paper regime's neighbours)",
    cells,
    t1.run_cell,
    report,
    version="2",  # 2: Table 1's cells at its version 5
    result_fields=t1.result_fields,
)
MEDIUM_EXPERIMENT = GridExperiment(
    "bhadra2010-readings-medium",
    "[BBBB10] Table 1 under the readings Sec. 5.1 leaves open, on 3 data sets per block (about an hour on one worker)",
    medium_cells,
    t1.run_cell,
    report,
    version="2",
    result_fields=t1.result_fields,
)
REPRODUCTIONS = {"bhadra2010-readings": EXPERIMENT, "bhadra2010-readings-medium": MEDIUM_EXPERIMENT}


def _block_of(cell: dict) -> tuple:
    return cell["reading"], cell["regime"], "figures" if "kind" in cell else "table"


def report_complete_blocks(out, experiment: GridExperiment = MEDIUM_EXPERIMENT, n_jobs: int = 1) -> tuple[str, int]:
    """The report of an interrupted (or running) run of ``experiment`` in ``out``, from its complete blocks.

    A block (a reading in a regime, its table or its figures) enters when every one of its cells is stored, so no
    block is judged on fewer data sets than the run gives it; ``readings.md`` / ``readings.json`` are written in
    ``out`` as by a finished run, and their provenance notes the cells stored and the blocks left out.

    Returns
    -------
    tuple of (str, int)
        The report's summary and the number of cells it covers.
    """
    from pathlib import Path

    from rsvm_conic.runner.grid import GridRun

    store = experiment.store(out)
    cells = experiment.cells(False)
    stored = {i: store.get(c) for i, c in enumerate(cells)}
    blocks = {}
    for i, c in enumerate(cells):
        blocks.setdefault(_block_of(c), []).append(i)
    complete = [b for b, idx in blocks.items() if all(stored[i] is not None for i in idx)]
    keep = [i for b in complete for i in blocks[b]]
    run = GridRun(
        experiment.name, Path(out), False, n_jobs, "loky", [cells[i] for i in keep], [stored[i] for i in keep]
    )
    summary, _ = report(run)
    left = [f"{r}: {g} ({k})" for (r, g, k) in blocks if (r, g, k) not in complete]
    n_stored = sum(v is not None for v in stored.values())
    data = json.loads((run.out / "readings.json").read_text())
    data["provenance"]["note"] = (
        f"Interrupted run: {n_stored} of {len(cells)} cells stored; this report covers the {len(keep)} cells of its "
        f"{len(complete)} complete blocks" + (f"; left out (incomplete): {', '.join(left)}" if left else "")
    )
    (run.out / "readings.json").write_text(json.dumps(data, indent=1, default=str))
    return summary, len(keep)
