"""Start-up: ``import rsvm_conic``, ``rsvm-conic --help`` and ``rsvm-conic list`` load no solver, plotting or
cluster module and no problem module (checked on the module list ``python -X importtime`` prints, not on
times); the estimators are exported lazily (PEP 562); ``rsvm-conic list`` reads a static catalogue that
matches the problem modules."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import rsvm_conic
from rsvm_conic import problems

ROOT = Path(__file__).resolve().parents[1]

#: loaded when first used, never at start-up
HEAVY = ("cvxpy", "numba", "matplotlib", "dask", "distributed", "zarr", "clarabel", "scs", "scipy.stats")


def _loaded(*args: str) -> set[str]:
    """Every module a fresh ``python -X importtime ARGS`` imports."""
    res = subprocess.run(
        [sys.executable, "-X", "importtime", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]
    mods = {m.group(1) for m in re.finditer(r"^import time:\s+\d+\s+\|\s+\d+\s+\|\s*(\S+)\s*$", res.stderr, re.M)}
    assert "rsvm_conic" in mods or "rsvm_conic.cli" in mods, res.stderr[-3000:]
    return mods


def _heavy(mods: set[str], extra=()) -> list[str]:
    prefixes = (*HEAVY, *extra)
    return sorted(m for m in mods if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_import_loads_no_solver_no_sklearn():
    mods = _loaded("-c", "import rsvm_conic")
    assert _heavy(mods, ("sklearn", "rsvm_conic.estimators", "rsvm_conic.problems")) == []


@pytest.mark.parametrize("args", [["--help"], ["list"], ["check", "--help"], ["--version"]])
def test_cli_start_parses_before_importing(args):
    mods = _loaded("-m", "rsvm_conic.cli", *args)
    # `list` reads the static catalogue: rsvm_conic.problems itself, none of its modules
    problem_modules = sorted(m for m in mods if m.startswith("rsvm_conic.problems."))
    assert _heavy(mods, ("numpy", "scipy", "sklearn", "rsvm_conic.estimators", "rsvm_conic.runner")) == []
    assert problem_modules == []


def test_an_estimator_import_loads_no_cvxpy_numba_matplotlib_dask():
    """scikit-learn itself loads scipy.stats and sklearn.model_selection (``import sklearn.svm`` does too);
    CVXPY is imported when a conic route builds its model, numba at a compiled function's first call."""
    mods = _loaded("-c", "from rsvm_conic import " + ", ".join(rsvm_conic._ESTIMATORS))
    assert [m for m in _heavy(mods, ("rsvm_conic.problems",)) if not m.startswith("scipy.stats")] == []


def test_the_estimator_exports_are_the_estimators():
    from rsvm_conic import estimators

    assert list(rsvm_conic._ESTIMATORS) == estimators.__all__
    assert rsvm_conic.__all__ == [*estimators.__all__, "__version__"]
    assert set(rsvm_conic.__all__) <= set(dir(rsvm_conic))
    for name in estimators.__all__:
        assert getattr(rsvm_conic, name) is getattr(estimators, name)
    namespace: dict = {}
    exec("from rsvm_conic import *", namespace)
    assert set(rsvm_conic.__all__) <= set(namespace)
    with pytest.raises(AttributeError, match="no attribute 'RobustSVm'"):
        rsvm_conic.RobustSVm  # noqa: B018


def test_catalogue_matches_the_problem_modules():
    """The static table ``rsvm-conic list`` prints is the modules' dicts: same kinds, names, modules; an entry
    that carries a description (an instance, a grid) has the same one."""
    live = {}
    for module in problems._modules():
        for kind in problems.KINDS:
            for name, entry in getattr(module, kind, {}).items():
                assert (kind, name) not in live, f"{kind} {name} is defined twice"
                live[kind, name] = (module.__name__.rsplit(".", 1)[1], getattr(entry, "description", None))
    table = {(e.kind, e.name): e for e in problems.CATALOGUE}
    assert len(table) == len(problems.CATALOGUE), "an entry is listed twice"
    assert sorted(table) == sorted(live), "add the new entry to problems.CATALOGUE (or remove the old one)"
    for key, (module, description) in live.items():
        entry = table[key]
        assert entry.module == module, key
        assert entry.description and "\n" not in entry.description, key
        if description is not None:
            assert entry.description == description, f"{key}: update problems.CATALOGUE's description"
        assert set(entry.extras) <= set(problems.EXTRAS), key


def test_get_imports_only_the_entrys_module():
    code = (
        "import sys\nfrom rsvm_conic import problems\nproblems.get('INSTANCES', 'robust-small')\n"
        "print(sorted(m for m in sys.modules if m.startswith('rsvm_conic.problems.')))"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip() == "['rsvm_conic.problems.linear_robust']"
    with pytest.raises(KeyError, match="no instance named 'no-such'; available: .*robust-small"):
        problems.get("INSTANCES", "no-such")
