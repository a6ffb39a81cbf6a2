"""The README is short and runs: its example executes, its docs command is the one CI builds with."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_example_runs(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(blocks) == 1 and len(blocks[0].strip().splitlines()) <= 10
    proc = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_readme_docs_command_is_what_ci_builds_with():
    cmds = [line for line in README.splitlines() if line.startswith('pip install -e ".[docs]"')]
    assert len(cmds) == 1 and "sphinx -W" in cmds[0] and "docs docs/_build/html" in cmds[0]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "grep -m1 -E '^pip install -e \"\\.\\[docs\\]\"' README.md" in ci


def test_readme_is_short_and_the_detail_lives_in_the_docs():
    assert len(README.splitlines()) <= 120
    for heading in ("## What it is", "## Example", "## Documentation", "## How to cite", "## References"):
        assert heading in README
