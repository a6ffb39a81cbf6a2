"""Every research notebook round-trips through jupytext: .py (percent) -> notebook -> .py gives the same file.

So the ``.py`` files are exactly what Jupyter (via jupytext) shows and saves back: no cell is lost, merged or
re-typed on the way.  Needs jupytext (the ``[notebooks]`` or ``[docs]`` extra); skipped without it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext", reason="jupytext is in the [notebooks] and [docs] extras")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
# jupytext stamps its own format and program version into the header when it writes; those two lines are
# the only ones allowed to differ
_STAMP = re.compile(r"^#\s+(format_version|jupytext_version):.*\n", re.M)


def _unstamped(text: str) -> str:
    return _STAMP.sub("", text)


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 5


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_round_trips_through_jupytext(path, tmp_path):
    text = path.read_text(encoding="utf-8")
    nb = jupytext.reads(text, fmt="py:percent")
    assert any(c.cell_type == "markdown" for c in nb.cells) and any(c.cell_type == "code" for c in nb.cells)
    # through the .ipynb format on disk, as Jupyter would store it
    ipynb = tmp_path / (path.stem + ".ipynb")
    jupytext.write(nb, ipynb, fmt="ipynb")
    back = jupytext.writes(jupytext.read(ipynb), fmt="py:percent")
    assert _unstamped(back) == _unstamped(text), f"{path.name} changes on a jupytext round trip"


def test_build_script_converts_without_executing(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("nb_build", ROOT / "notebooks" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--out", str(tmp_path), "--no-execute", "00_tour"]) == 0
    import nbformat

    nb = nbformat.read(tmp_path / "00_tour.ipynb", as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
