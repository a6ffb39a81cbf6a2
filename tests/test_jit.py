"""The compiled functions (``rsvm_conic._jit.jit``): numba is imported on first use, not at ``import rsvm_conic``,
and the package imports and fits when numba can cache nowhere (a read-only installation, an unwritable home)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str, env: dict, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_import_loads_no_numba(tmp_path):
    proc = _python(
        """
        import sys
        import rsvm_conic
        print(sorted({m.split(".")[0] for m in sys.modules} & {"numba", "dask", "matplotlib"}))
        """,
        {**os.environ},
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "[]"


def test_compiled_functions_call_each_other_and_pickle(tmp_path, monkeypatch):
    """A module's compiled functions are bound to numba's dispatchers together at the first call, so that one
    calls another (also one imported from another compiled module); the wrapper pickles by reference."""
    (tmp_path / "jit_mod_a.py").write_text(
        "from rsvm_conic._jit import jit\n\n\n@jit(inline='always')\ndef twice(x):\n    return 2.0 * x\n"
    )
    (tmp_path / "jit_mod_b.py").write_text(
        "from rsvm_conic._jit import jit\n\nfrom jit_mod_a import twice\n\n\n"
        "@jit()\ndef plus_one(x):\n    return x + 1.0\n\n\n"
        "@jit()\ndef both(x):\n    return plus_one(twice(x))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import jit_mod_a
    import jit_mod_b

    from rsvm_conic._jit import Compiled

    wrapper = jit_mod_b.both
    assert isinstance(wrapper, Compiled) and wrapper.dispatcher is None and "numba" not in repr(type(wrapper))
    assert wrapper(3.0) == 7.0
    for mod, name in ((jit_mod_b, "both"), (jit_mod_b, "plus_one"), (jit_mod_b, "twice"), (jit_mod_a, "twice")):
        assert not isinstance(getattr(mod, name), Compiled), f"{mod.__name__}.{name} was not bound to numba"
    assert wrapper(np.float64(0.5)) == 2.0
    assert pickle.loads(pickle.dumps(wrapper))(1.0) == 3.0
    with pytest.raises(TypeError, match="cache"):
        from rsvm_conic._jit import jit

        jit(cache=True)


def _unusable(path: Path) -> Path:
    """A path under a regular file: no directory can be created there, whoever runs (root ignores chmod)."""
    blocker = path / "not_a_directory"
    blocker.write_text("")
    return blocker / "cache"


def _read_only_install(tmp_path: Path) -> Path:
    """A copy of the package where no ``__pycache__`` can be made: each package directory holds a regular
    file named ``__pycache__`` (so numba's in-tree cache fails even for root), and every directory is read-only."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "rsvm_conic", site / "rsvm_conic", ignore=shutil.ignore_patterns("__pycache__"))
    for d in [site, *(p for p in site.rglob("*") if p.is_dir())]:
        (d / "__pycache__").write_text("")
    for d in [site, *(p for p in site.rglob("*") if p.is_dir())]:
        d.chmod(d.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return site


def _restore_write(site: Path) -> None:
    for d in [site, *(p for p in site.rglob("*") if p.is_dir())]:
        d.chmod(d.stat().st_mode | stat.S_IWUSR)


def _no_cache_env(tmp_path: Path, site: Path, numba_cache_dir: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "PYTHONPYCACHEPREFIX"))}
    home = _unusable(tmp_path)
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1")
    if numba_cache_dir == "unwritable":
        env["NUMBA_CACHE_DIR"] = str(home / "numba")
    return env


_PRELUDE = """
    import json, warnings
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        import rsvm_conic
        import numpy as np
        out = {"file": rsvm_conic.__file__}
"""
_EPILOGUE = """
    out["cache_warnings"] = [str(w.message) for w in caught if "cannot cache" in str(w.message)]
    print(json.dumps(out))
"""


def _run_without_cache(tmp_path, numba_cache_dir, body):
    site = _read_only_install(tmp_path)
    try:
        code = textwrap.dedent(_PRELUDE) + textwrap.indent(textwrap.dedent(body), "    ") + textwrap.dedent(_EPILOGUE)
        proc = _python(code, _no_cache_env(tmp_path, site, numba_cache_dir), tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        assert out["file"].startswith(str(site)), out["file"]  # the read-only copy ran, not the checkout
        assert not any(p.name.endswith((".nbi", ".nbc")) for p in tmp_path.rglob("*")), "numba cached somewhere"
        (warning,) = out["cache_warnings"]  # one per process
        assert "NUMBA_CACHE_DIR" in warning
        return out
    finally:
        _restore_write(site)


@pytest.mark.parametrize("numba_cache_dir", ["unset", pytest.param("unwritable", marks=pytest.mark.slow)])
def test_imports_and_compiles_when_numba_can_cache_nowhere(tmp_path, numba_cache_dir):
    out = _run_without_cache(
        tmp_path,
        numba_cache_dir,
        """
        from rsvm_conic._validation import check_symmetric_psd
        from rsvm_conic.solvers.ipm.cone_loops import ninf
        S = np.array([[2.0, 1.0], [1.0, 2.0]])
        out["symmetric"] = check_symmetric_psd(S).tolist() == S.tolist()
        out["ninf"] = float(ninf(np.array([1.0, -3.0, 2.0, 0.5])))
        """,
    )
    assert out["symmetric"] and out["ninf"] == 3.0


@pytest.mark.slow
@pytest.mark.parametrize("numba_cache_dir", ["unset", "unwritable"])
def test_estimators_with_compiled_code_fit_when_numba_can_cache_nowhere(tmp_path, numba_cache_dir):
    out = _run_without_cache(
        tmp_path,
        numba_cache_dir,
        """
        from rsvm_conic import KernelRobustSVC, RobustSVC, WestonWatkinsSVC
        rng = np.random.default_rng(0)
        X = rng.standard_normal((60, 3))
        y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
        est = RobustSVC(radius=0.1, solver="ipm").fit(X, y, Sigma=0.1 * np.eye(3))
        out["robust"] = (est.solver_stats_["route"], est.score(X, y))
        ww = WestonWatkinsSVC(solver="cd", n_components=20, random_state=0).fit(X, np.arange(60) % 3)
        out["ww"] = (ww.solver_, bool(np.all(np.isfinite(ww.decision_function(X)))))
        K = np.exp(-0.5 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
        kr = KernelRobustSVC(method="socp").fit(K, y, sigma2=np.full_like(K, 1e-3))
        out["kernel"] = (kr.solver_stats_["route"], kr.score(K, y))
        """,
    )
    assert out["robust"][0] == "ipm" and out["robust"][1] > 0.9
    assert out["ww"] == ["cd", True]
    assert out["kernel"][1] > 0.9
