"""User-facing text cites the papers by reference (authors, year, section), never internal file numbers.

Users do not have the project's internal folder of source papers, so the package, README, problem
scripts and notebooks must say e.g. "[CJ20, eq. 4]" (keys of the README's References), not an internal file number or
path.  The tests directory itself is not scanned (this file holds the pattern).
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATTERN = re.compile(r"file 00[0-9]|shared/seeds|\.\./shared")
SCANNED = ["rsvm_conic", "problems", "notebooks", "README.md", "pyproject.toml", "docs"]
SUFFIXES = {".py", ".md", ".rst", ".txt", ".toml", ".cfg", ".ipynb", ".json", ".yml", ".yaml"}


def _files():
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            yield path
        elif path.is_dir():
            yield from (
                p
                for p in sorted(path.rglob("*"))
                if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts
            )


def test_no_internal_file_references():
    offending = []
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            if PATTERN.search(line):
                offending.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()}")
    assert not offending, "cite papers by reference (authors, year, section), not internal files:\n" + "\n".join(
        offending
    )


KEY = re.compile(r"\[([A-Z][A-Za-z]*[0-9]{2})[\],]")


def test_every_cited_key_is_in_the_references():
    """Every ``[KEY]`` / ``[KEY, eq. n]`` cited anywhere is defined in the README's References section."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    refs = readme[readme.index("## References") :]
    defined = set(re.findall(r"\*\*\[([A-Za-z]+[0-9]{2})\]\*\*", refs))
    assert {"CJ20", "BBBB10", "RR07", "ElD19", "CGT19"} <= defined
    cited = {}
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for key in KEY.findall(text):
            cited.setdefault(key, str(path.relative_to(ROOT)))
    undefined = {k: v for k, v in cited.items() if k not in defined}
    assert not undefined, f"cited but not in the README's References: {undefined}"
    assert {"CJ20", "BBBB10", "ElD19"} <= set(cited)
