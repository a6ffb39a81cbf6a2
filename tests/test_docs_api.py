"""The API reference documents what a user calls: every public estimator's page shows ``fit`` (the only place the
uncertainty is passed) with every parameter of its signature, ``predict`` / ``decision_function`` / ``score``, and
every fitted attribute of its docstring's Attributes section with its trailing underscore (``coef_``, not a bold
"coef").

The estimators page (``docs/api/estimators.md``, its reStructuredText blocks) is built by Sphinx's text builder with
the site's own autodoc / napoleon settings and hooks (``docs/_ext/rsvm_docs.py``, which ``docs/conf.py`` reads), in
a temporary folder (a few seconds; nothing is executed).  Skipped without Sphinx (the ``[docs]`` extra).
"""

from __future__ import annotations

import inspect
import io
import re
import sys
from pathlib import Path

import pytest
from test_docstrings import sections

import rsvm_conic.estimators as estimators

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "api" / "estimators.md"
ESTIMATORS = [getattr(estimators, name) for name in estimators.__all__]
#: what a user calls on a fitted estimator (each shown where the class has it)
METHODS = ("fit", "predict", "decision_function", "score", "predict_proba")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``(text of the built page, warnings)``."""
    pytest.importorskip("sphinx", reason="Sphinx is in the [docs] extra")
    from sphinx.application import Sphinx

    src = tmp_path_factory.mktemp("api_src")
    out = tmp_path_factory.mktemp("api_out")
    blocks = re.findall(r"```\{eval-rst\}\n(.*?)```", PAGE.read_text(), re.S)
    assert blocks, f"{PAGE} has no reStructuredText block"
    (src / "index.rst").write_text("Estimators\n==========\n\n" + "\n".join(blocks))
    ext = ROOT / "docs" / "_ext"
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ext)!r})\n"
        "from rsvm_docs import API_CONFIG, API_EXTENSIONS\n"
        "globals().update(API_CONFIG)\n"
        "extensions = [*API_EXTENSIONS, 'rsvm_docs']\n"
    )
    warnings = io.StringIO()
    try:
        Sphinx(str(src), str(src), str(out), str(out / ".doctrees"), "text", status=None, warning=warnings).build()
    finally:
        sys.modules.pop("rsvm_docs", None)
        if str(ext) in sys.path:
            sys.path.remove(str(ext))
    return (out / "index.txt").read_text(), warnings.getvalue()


def _section(text: str, cls) -> str:
    """The part of the built page that documents ``cls`` (its header, then the indented lines under it)."""
    header = re.search(rf"^class {re.escape(cls.__module__)}\.{cls.__name__}\(.*$", text, re.M)
    assert header, f"{cls.__name__} is not documented on {PAGE.name}"
    rest = text[header.end() :]
    end = re.search(r"^\S", rest, re.M)
    return header.group(0) + (rest[: end.start()] if end else rest)


def _parameters(func) -> list[str]:
    return [
        p.name
        for p in inspect.signature(func).parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def test_the_page_builds_without_warnings(built):
    assert not built[1], built[1]


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_estimator_page_shows_fit_with_its_parameters_and_the_prediction_methods(built, cls):
    section = _section(built[0], cls)
    for method in METHODS:
        if not hasattr(cls, method):
            continue
        signature = re.search(rf"^   {method}\((.*)\)\s*$", section, re.M)
        assert signature, f"{cls.__name__}.{method} is not shown"
        # the named parameters (a catch-all **keywords, which names the replacement of a refused one, aside)
        shown = [p.split("=")[0] for p in signature.group(1).split(", ") if p.strip("*/") and not p.startswith("*")]
        assert shown == _parameters(getattr(cls, method)), (cls.__name__, method, signature.group(0))


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_fitted_attribute_is_shown_with_its_underscore(built, cls):
    section = _section(built[0], cls)
    documented = sections(inspect.getdoc(cls)).get("Attributes", [])
    assert documented, f"{cls.__name__} documents no Attributes"
    missing = [name for name in documented if f"**{name}**" not in section]
    assert not missing, f"{cls.__name__}: {missing} not shown as written (e.g. **coef** for coef_)"


USER_FACING = [ROOT / "rsvm_conic", ROOT / "docs"]
#: project-tracker numbers mean nothing to a user
TRACKER = re.compile(r"\b(?:issue|round)[ -]?#?[0-9]+", re.I)


def test_no_issue_or_round_numbers_in_user_facing_text():
    offending = []
    for base in USER_FACING:
        for path in sorted(base.rglob("*")):
            if path.suffix not in (".py", ".md", ".rst") or "_build" in path.parts:
                continue
            for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if TRACKER.search(line):
                    offending.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()}")
    assert not offending, "\n".join(offending)


PAGES = [ROOT / "docs" / "quickstart.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]


def _figure_problems() -> list[str]:
    """What the open figures lack (a title, axis labels, a legend), axes by axes; closes them."""
    import matplotlib.pyplot as plt

    problems = []
    for number in plt.get_fignums():
        fig = plt.figure(number)
        for ax in fig.axes:
            if not (ax.has_data() or ax.images) or not ax.axison or ax.get_label() == "<colorbar>":
                continue  # an empty axes, a panel showing a figure drawn elsewhere (imshow, axis off), a colour bar
            checks = {
                "title": ax.get_title() or fig.get_suptitle(),
                "x label": ax.get_xlabel(),
                "y label": ax.get_ylabel(),
                "legend": ax.get_legend() or fig.legends,
            }
            missing = [what for what, present in checks.items() if not present]
            if missing:
                problems.append(f"figure {ax.get_title()!r} has no {', '.join(missing)}")
    plt.close("all")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_every_page_runs_and_every_figure_has_a_title_axis_labels_and_a_legend(page, tmp_path, monkeypatch):
    """The page's code cells, run in order as the docs build runs them (Agg backend, a temporary folder); the
    quickstart and each guide page take seconds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(plt, "show", lambda *args, **kwargs: None)
    cells = re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", page.read_text(), re.S)
    namespace, problems = {}, []
    for cell in cells:
        exec(compile(cell, str(page), "exec"), namespace)
        problems += _figure_problems()
    assert not problems, f"{page.name}: " + "; ".join(problems)


@pytest.mark.parametrize(
    "page", [p for p in PAGES if p.parent.name == "guide" and p.stem != "index"], ids=lambda p: p.stem
)
def test_every_guide_page_starts_with_the_estimator(page):
    """A user calls an estimator: each guide page shows that call (its first code cell) before the formulation."""
    text = page.read_text()
    headings = re.findall(r"^## (.*)$", text, re.M)
    assert headings and headings[0] == "The estimator", f"{page.name}: first section is {headings[:1]}"
    first_cell = re.search(r"```\{code-cell\}[^\n]*\n(.*?)```", text, re.S)
    assert first_cell and re.search(r"\b\w+SVC\(", first_cell.group(1)) and ".fit(" in first_cell.group(1), page.name


NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_gallery_figure_has_a_title_axis_labels_and_a_legend(path, tmp_path, monkeypatch):
    """The gallery's notebooks (tests/test_notebooks.py runs them too), each figure checked when it is shown."""
    import runpy

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    problems = []
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(plt, "show", lambda *args, **kwargs: problems.extend(_figure_problems()))
    runpy.run_path(str(path), run_name="__main__")
    problems += _figure_problems()
    assert not problems, f"{path.name}: " + "; ".join(problems)
