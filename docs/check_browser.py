"""Look at the built site in a real headless browser: formulas typeset, figures loaded, screenshots taken.

    pip install -e ".[docs,docs-check]"        # playwright (its Python driver; no browser download)
    apt-get install chromium                   # or any Chromium/Chrome: --browser PATH
    python docs/check_browser.py [docs/_build/html] [--png-dir DIR]

The site is served from a local HTTP server (nothing outside this machine is contacted: MathJax is part of
the site) and three pages are opened in headless Chromium: the index, one user-guide page and one gallery
notebook.  On each page, after MathJax has finished, it checks that

* every ``math`` element Sphinx wrote holds a typeset MathJax ``mjx-container`` (no formula is left as TeX
  source), and no ``$...$`` / ``\\(...\\)`` delimiters remain in the visible text outside code;
* every ``<img>`` has loaded (``complete`` and a non-zero natural width);

and writes a full-page PNG screenshot of each.  Exit status 0 when every check passes; the findings are
printed as one line per page.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import shutil
import sys
import threading
from pathlib import Path

PAGES = ("index.html", "guide/robust.html", "gallery/00_tour.html")

_PROBE = """() => {
  const maths = Array.from(document.querySelectorAll('.math'));
  const untypeset = maths.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 80));
  const imgs = Array.from(document.querySelectorAll('img'));
  const broken = imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src'));
  const walker = document.createTreeWalker(document.querySelector('article') || document.body, NodeFilter.SHOW_TEXT);
  const raw = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.parentElement.closest('pre, code, script, style, mjx-container, .highlight, .cell_output')) continue;
    const t = n.textContent;
    if (/\\$[^$\\s][^$]*\\$/.test(t) || /\\\\\\(|\\\\\\[/.test(t)) raw.push(t.trim().slice(0, 80));
  }
  return {maths: maths.length, typeset: document.querySelectorAll('mjx-container').length,
          untypeset, images: imgs.length, broken, raw};
}"""


def find_browser(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def serve(root: Path):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def check(site: Path, png_dir: Path, browser: str, pages=PAGES) -> list[dict]:
    from playwright.sync_api import sync_playwright

    png_dir.mkdir(parents=True, exist_ok=True)
    server = serve(site)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    results = []
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=browser, args=["--no-sandbox"])
            page = b.new_page(viewport={"width": 1200, "height": 900})
            requests_outside = []
            page.on(
                "request",
                lambda r: (
                    None if r.url.startswith(base) or r.url.startswith("data:") else requests_outside.append(r.url)
                ),
            )
            for rel in pages:
                page.goto(base + rel, wait_until="load")
                # MathJax 3: wait until its startup promise (typesetting of the page) has resolved
                page.wait_for_function(
                    "() => window.MathJax === undefined || (window.MathJax.startup && window.MathJax.startup.promise)",
                    timeout=30000,
                )
                page.evaluate("() => window.MathJax && window.MathJax.startup ? window.MathJax.startup.promise : null")
                found = page.evaluate(_PROBE)
                png = png_dir / (rel.replace("/", "_").replace(".html", ".png"))
                page.screenshot(path=str(png), full_page=True)
                found.update(page=rel, png=str(png), outside_requests=list(requests_outside))
                requests_outside.clear()
                found["ok"] = not (found["untypeset"] or found["broken"] or found["raw"] or found["outside_requests"])
                results.append(found)
            b.close()
    finally:
        server.shutdown()
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", type=Path, default=Path(__file__).resolve().parent / "_build" / "html")
    parser.add_argument(
        "--png-dir", type=Path, default=None, help="where the screenshots go (default: SITE/../screenshots)"
    )
    parser.add_argument("--browser", default=None, help="Chromium executable (default: chromium on PATH)")
    args = parser.parse_args(argv)
    browser = find_browser(args.browser)
    if browser is None:
        print("no Chromium found (apt-get install chromium, or --browser PATH)", file=sys.stderr)
        return 2
    if not (args.site / "index.html").exists():
        print(
            f"no built site at {args.site} (build it first: python -m sphinx -b html docs docs/_build/html)",
            file=sys.stderr,
        )
        return 2
    results = check(args.site, args.png_dir or args.site.parent / "screenshots", browser)
    for r in results:
        print(
            f"{'ok  ' if r['ok'] else 'FAIL'} {r['page']}: {r['maths']} formulas, {r['typeset']} typeset by MathJax, "
            f"{len(r['untypeset'])} left as TeX; {r['images']} images, {len(r['broken'])} broken; "
            f"{len(r['raw'])} raw $...$ in text; requests outside the site: {len(r['outside_requests'])}; {r['png']}"
        )
        if not r["ok"]:
            print("     " + json.dumps({k: r[k] for k in ("untypeset", "broken", "raw", "outside_requests")})[:2000])
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
