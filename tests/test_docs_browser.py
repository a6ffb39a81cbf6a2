"""The built documentation site, seen by a real headless browser (docs/check_browser.py).

Skipped, with the reason, unless a site has been built (``python -m sphinx -b html docs docs/_build/html``),
a Chromium is installed and playwright (the ``[docs-check]`` extra) is importable: building the site executes
every notebook (minutes), so the default test run does not build it.  ``.ci/run``'s docs leg builds the site
and runs the same check.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "docs" / "_build" / "html"


def _load_checker():
    spec = importlib.util.spec_from_file_location("check_browser", ROOT / "docs" / "check_browser.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_built_site_renders_math_and_images_in_chromium(tmp_path):
    if not (SITE / "index.html").exists():
        pytest.skip("no built site at docs/_build/html (python -m sphinx -b html docs docs/_build/html)")
    built = (SITE / "index.html").stat().st_mtime
    sources = [*(ROOT / "docs").glob("**/*.md"), *(ROOT / "notebooks").glob("[0-9][0-9]_*.py")]
    stale = [p for p in sources if "_build" not in p.parts and p.stat().st_mtime > built]
    if stale:
        pytest.skip(f"the built site is older than {stale[0].relative_to(ROOT)}: rebuild it to check it")
    pytest.importorskip("playwright", reason="playwright is in the [docs-check] extra")
    checker = _load_checker()
    browser = checker.find_browser(None)
    if browser is None:
        pytest.skip("no Chromium installed (apt-get install chromium)")
    results = checker.check(SITE, tmp_path, browser)
    assert len(results) == len(checker.PAGES)
    for r in results:
        assert r["maths"] > 0 and r["typeset"] > 0, r["page"]
        assert not r["untypeset"] and not r["raw"], (r["page"], r["untypeset"], r["raw"])
        assert not r["broken"], (r["page"], r["broken"])
        assert not r["outside_requests"], (r["page"], r["outside_requests"])
        assert Path(r["png"]).stat().st_size > 10_000
    assert any(r["images"] > 0 for r in results if r["page"] != "index.html")
