"""The package boundary: problems/ is installed as rsvm_conic.problems, never as a top-level ``problems``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _declared_packages():
    try:
        import tomllib
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        pytest.skip("tomllib needs Python >= 3.11")
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return cfg["packages"], cfg["package-dir"]


def test_declared_packages_are_every_package_directory():
    packages, package_dir = _declared_packages()
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "rsvm_conic").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert package_dir == {"rsvm_conic.problems": "problems"}
    assert set(packages) == on_disk | {"rsvm_conic.problems"}, "update [tool.setuptools] packages in pyproject.toml"
    assert not any(p == "problems" or p.startswith("problems.") for p in packages)


def test_problems_is_a_subpackage():
    from rsvm_conic import problems

    assert problems.__name__ == "rsvm_conic.problems"
    assert Path(problems.__file__).resolve().parent == ROOT / "problems"
    assert "bhadra2010-table1" in problems.registry("REPRODUCTIONS")


def test_a_folder_called_problems_on_the_path_does_not_shadow_it(tmp_path):
    """A user's own problems/ package (or the PyPI project of that name) cannot break the CLI."""
    decoy = tmp_path / "problems"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise ImportError('this is not rsvm-conic')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "rsvm_conic.cli", "list"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "bhadra2010-table1" in proc.stdout
