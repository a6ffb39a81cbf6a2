"""Execute every research notebook (jupytext percent .py files) top to bottom.

Each notebook runs as a plain Python script in a fresh process (Agg backend, temporary
working directory so its figures land there), importing the installed package as a user does
(``from rsvm_conic import problems``; the repository root is not put on the path).  A notebook that
raises, or that runs past its time limit, fails the test.  The notebooks contain their own brute-force assertions
(closed forms vs sampling, Monte Carlo), so running them is a test of what they claim.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
TIMEOUT_S = 120


def test_notebooks_are_found():
    assert any(p.name == "00_tour.py" for p in NOTEBOOKS)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path, tmp_path):
    text = path.read_text()
    assert "# %%" in text, f"{path.name} is not in jupytext percent format"
    env = {**os.environ, "MPLBACKEND": "Agg"}
    try:
        proc = subprocess.run(
            [sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{path.name} did not finish within {TIMEOUT_S} s")
    assert proc.returncode == 0, f"{path.name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    pngs = list(tmp_path.glob("*.png"))
    assert pngs, f"{path.name} saved no figure"
    assert all(p.stat().st_size > 1000 for p in pngs)


def test_plotting_ellipse_points_lie_on_the_ellipse():
    import numpy as np

    from rsvm_conic.plotting import ellipse_points

    rng = np.random.default_rng(0)
    B = rng.standard_normal((2, 2))
    Sigma = B @ B.T + 0.1 * np.eye(2)
    c, r = np.array([1.0, -2.0]), 0.7
    P = ellipse_points(c, Sigma, r, n_points=50)
    quad = np.einsum("ij,jk,ik->i", P - c, np.linalg.inv(Sigma), P - c)  # (x-c)' Sigma^-1 (x-c) = r^2
    np.testing.assert_allclose(quad, r**2, rtol=1e-10)


def test_plotting_rejects_bad_shapes():
    import numpy as np

    from rsvm_conic.plotting import ellipse_points, plot_decision_boundary

    with pytest.raises(ValueError, match="2x2"):
        ellipse_points([0, 0], np.eye(3))
    with pytest.raises(ValueError, match="radius"):
        ellipse_points([0, 0], np.eye(2), radius=-1)
    with pytest.raises(ValueError, match="shape"):
        plot_decision_boundary(None, lambda P: P[:, 0], np.zeros((5, 3)))
