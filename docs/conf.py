"""Sphinx configuration of the rsvm-conic documentation site.

Build (offline: the data sets are vendored, MathJax is copied from an installed package)::

    pip install -e ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

The research notebooks (``notebooks/*.py``, jupytext percent format) are converted to ``.ipynb`` files
under ``docs/gallery/`` at the start of every build and executed by myst-nb, so every figure is drawn by the
code at build time; each user-guide page is a MyST text notebook executed the same way.
``RSVM_DOCS_EXECUTE=off`` skips the execution (a quick look at the text; figures are missing then).
"""

from __future__ import annotations

import os
import shutil
import sys
from importlib import resources
from pathlib import Path

import jupytext

import rsvm_conic

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "rsvm-conic"
author = "rsvm-conic contributors"
copyright = "rsvm-conic contributors (BSD-3-Clause)"
release = version = rsvm_conic.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "rsvm_docs",
]
exclude_patterns = ["_build", "ARCHITECTURE.md", "**.ipynb_checkpoints", "jupyter_execute"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}

# --- the gallery: the research notebooks, converted here and executed by myst-nb -----------------------
GALLERY = DOCS / "gallery"
GALLERY.mkdir(exist_ok=True)
for _src in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py")):
    _dst = GALLERY / (_src.stem + ".ipynb")
    _nb = jupytext.read(_src, fmt="py:percent")
    _nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    _text = jupytext.writes(_nb, fmt="ipynb")
    if not _dst.exists() or _dst.read_text() != _text:  # keep the mtime when unchanged
        _dst.write_text(_text)

# --- execution ------------------------------------------------------------------------------------------
# "force": every page is executed at every build; nothing is cached between builds.
nb_execution_mode = os.environ.get("RSVM_DOCS_EXECUTE", "force")
nb_execution_timeout = 600
nb_execution_raise_on_error = True  # a notebook that raises fails the build
nb_execution_in_temp = True  # the notebooks write figures and reproduction folders into a temporary folder
nb_execution_show_tb = True
nb_merge_streams = True
nb_render_markdown_format = "gfm"  # tables written by the reproductions (display(Markdown(...)))
os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
os.environ.setdefault("OMP_NUM_THREADS", "1")
# tqdm.auto warns in a kernel without ipywidgets ("IProgress not found"); the progress bars are off anyway
os.environ.setdefault("PYTHONWARNINGS", "ignore:IProgress not found")
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# --- API reference --------------------------------------------------------------------------------------
# the settings and hooks live in docs/_ext/rsvm_docs.py (tests/test_docs_api.py builds the estimators page with them)
from rsvm_docs import API_CONFIG  # noqa: E402

globals().update(API_CONFIG)

# --- HTML -----------------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"rsvm-conic {release}"
html_static_path = []

# MathJax 3, served from the site itself (no CDN): the tex-svg component draws glyphs as SVG paths, so no
# web font is fetched either.  It comes from the PyPI package django-static-mathjax (static files only).
_MATHJAX = resources.files("mathjax") / "static" / "mathjax" / "es5"
_MJ_DST = DOCS / "_build" / "_mathjax" / "mathjax"
if not (_MJ_DST / "tex-svg.js").exists():
    shutil.copytree(str(_MATHJAX), _MJ_DST, dirs_exist_ok=True)
html_static_path.append(str(_MJ_DST.parent))
mathjax_path = "mathjax/tex-svg.js"
mathjax3_config = {"svg": {"fontCache": "global"}}
