"""The gallery's comparison page: its script at the quick size, run through the page's own code cells."""

from __future__ import annotations

import functools
import re
import types
from pathlib import Path

import numpy as np

PAGE = Path(__file__).resolve().parents[1] / "docs" / "gallery" / "robust_comparison.md"


def test_the_page_runs_its_script_and_shows_a_complete_table_and_figure(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rsvm_conic.problems import gallery_robustness

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(gallery_robustness, "compare", functools.partial(gallery_robustness.compare, quick=True))
    shown = []  # IPython's display, as the docs build runs the page (IPython comes with the docs extra)
    namespace = {"display": shown.append, "Markdown": lambda text: types.SimpleNamespace(data=text)}
    for cell in re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", PAGE.read_text(), re.S):
        cell = cell.replace("from IPython.display import Markdown, display\n", "")
        exec(compile(cell, str(PAGE), "exec"), namespace)
    result = namespace["result"]
    names = [r["model"] for r in result["rows"]]
    assert names == ["nominal SVM", "worst-case robust SVM", "chance-constrained SVM", "Wasserstein SVM"]
    for r in result["rows"]:
        assert len(r["noise"]) == len(result["noise_levels"]) and len(r["drift"]) == len(result["drifts"])
        assert all(0.0 <= a <= 1.0 for a in r["noise"] + r["drift"]) and r["gap_rel"] <= 1e-6
        assert r["noise"][0] == r["drift"][0]  # both start from the clean test sample
    assert result["rows"][0]["noise"][0] > 0.7  # the nominal SVM beats the majority class (0.65) on clean data
    table = gallery_robustness.table(result)
    assert table.count("\n") == len(names) + 1 and all(name in table for name in names)
    assert shown and shown[0] == types.SimpleNamespace(data=table)
    fig = namespace["fig"]
    suptitle = fig.get_suptitle() if hasattr(fig, "get_suptitle") else fig._suptitle.get_text()  # matplotlib < 3.8
    assert suptitle and len(fig.axes) == 2
    for ax in fig.axes:
        assert ax.get_title() and ax.get_xlabel() and len(ax.lines) == len(names)
    assert fig.axes[0].get_ylabel() and fig.axes[1].get_legend() is not None
    path = namespace["path"]
    assert np.linalg.norm(path.coefs[0, 0]) <= np.sqrt(2 * path.gaps_abs[0, 0])  # the path starts at w = 0
    plt.close("all")
