"""Report helpers shared by the paper reproductions: a mean over data sets with its spread, the verdict rule
of a table cell against a paper's number, and the provenance of a stored run.

The verdict rule (:func:`cell_verdict`), for a cell measured on ``n`` data sets (per-data-set values ``v``):

* the spread of the mean is the half-width of its 95% confidence interval over data sets,
  ``h = t_{0.975, n-1} sd(v) / sqrt(n)`` (Student's t; ``h = inf`` for ``n < 2``);
* **inconclusive** when ``h > tol``: the mean is not known to within the window, so whether it lies within
  ``tol`` of the paper's number cannot be told; also when fewer than :data:`MIN_DATASETS` data sets measured
  the cell (two equal values give ``h = 0``, which says nothing about the spread);
* otherwise **reproduced** when ``|mean - paper| <= tol``, else **not reproduced**;
* with the nominal column's values on the same data sets, the cell **ties** the nominal column when the
  mean of the paired differences is within ``tol``: at the verdict's own resolution the column cannot be told
  from the nominal one, so a "reproduced" there shows no effect of the method.
"""

from __future__ import annotations

import math
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

VERDICTS = ("reproduced", "not reproduced", "inconclusive")
#: The fewest data sets on which a verdict is given.
MIN_DATASETS = 3
SHORT = {"reproduced": "R", "not reproduced": "N", "inconclusive": "I"}


def mean_sd(values) -> tuple[float, float, int]:
    """``(mean, sd, n)`` of the finite values (sample sd, ddof 1; ``nan`` for fewer than two values).

    Parameters
    ----------
    values : array-like
        The values (non-finite ones are left out).

    Returns
    -------
    mean, sd : float
    n : int
        The number of finite values.
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan, 0
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else math.nan, int(v.size)


def half_width(values, level: float = 0.95) -> float:
    """Half-width of the ``level`` confidence interval of the mean of the finite ``values`` (Student's t).

    Parameters
    ----------
    values : array_like
        One value per data set; non-finite entries are left out.
    level : float, default=0.95
        Two-sided confidence level.

    Returns
    -------
    float
        ``t_{(1 + level) / 2, n - 1} sd / sqrt(n)``; ``inf`` when fewer than two values are finite.
    """
    from scipy.stats import t

    _, sd, n = mean_sd(values)
    if n < 2:
        return math.inf
    return float(t.ppf(0.5 + level / 2.0, n - 1) * sd / math.sqrt(n))


def datasets_needed(sd: float, tol: float, level: float = 0.95, n_max: int = 10_000) -> int:
    """The fewest data sets ``n`` (at least 2) whose ``level`` half-width ``t sd / sqrt(n)`` is at most ``tol``.

    Parameters
    ----------
    sd : float
        The spread over data sets.
    tol : float
        The half-width wanted.
    level : float, default 0.95
        Confidence level.
    n_max : int, default 10000
        Returned when even that many do not suffice (or ``sd`` is not finite).

    Returns
    -------
    int
    """
    from scipy.stats import t

    if not math.isfinite(sd):
        return n_max
    n = max(2, math.ceil((1.96 * sd / tol) ** 2))  # the normal approximation, then up to Student's t
    while n < n_max and t.ppf(0.5 + level / 2.0, n - 1) * sd / math.sqrt(n) > tol:
        n += 1
    return n


@dataclass(frozen=True)
class CellVerdict:
    """One table cell measured over data sets, judged against the paper's number (see :func:`cell_verdict`).

    Attributes
    ----------
    mean, sd : float
        Over the data sets.
    n : int
        Number of data sets.
    half_width : float
        Half-width of the mean's 95% confidence interval.
    paper : float
        The paper's number.
    verdict : str
        One of :data:`VERDICTS`.
    tie : bool or None
        Whether the cell ties with the nominal column (None for the nominal column itself).
    nominal_diff : float or None
        The mean paired difference to the nominal column.
    """

    mean: float
    sd: float
    n: int
    half_width: float
    paper: float
    verdict: str
    tie: bool | None = None
    nominal_diff: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def cell_verdict(values, paper: float, tol: float, nominal=None) -> CellVerdict:
    """The verdict of one cell from its per-data-set values (the rule is in the module docstring).

    Parameters
    ----------
    values : array_like of shape (n_datasets,)
        The cell's value on each data set (the mean over that data set's folds); non-finite entries (a data set
        on which no value was certified) are left out.
    paper : float
        The paper's number for the cell.
    tol : float
        The window: the largest ``|mean - paper|`` that counts as reproduced, and the largest half-width of the
        mean's 95% confidence interval for which a verdict is given at all.
    nominal : array_like of shape (n_datasets,), optional
        The nominal column's values on the same data sets (paired by position).  ``None`` for the nominal
        column itself (``tie`` is then ``None``).

    Returns
    -------
    CellVerdict
        ``mean``, ``sd``, ``n``, ``half_width``, ``paper``, ``verdict`` (one of :data:`VERDICTS`), ``tie`` and
        ``nominal_diff`` (the mean paired difference to the nominal column).
    """
    v = np.asarray(values, dtype=np.float64)
    mean, sd, n = mean_sd(v)
    h = half_width(v)
    if n < MIN_DATASETS or h > tol:
        verdict = "inconclusive"
    elif abs(mean - paper) <= tol:
        verdict = "reproduced"
    else:
        verdict = "not reproduced"
    tie = diff = None
    if nominal is not None:
        w = np.asarray(nominal, dtype=np.float64)
        if w.shape != v.shape:
            raise ValueError(f"nominal must pair with values (shape {v.shape}); got shape {w.shape}.")
        both = np.isfinite(v) & np.isfinite(w)
        if both.any():
            diff = float(np.mean(v[both] - w[both]))
            tie = bool(abs(diff) <= tol)
    return CellVerdict(mean, sd, n, h, float(paper), verdict, tie, diff)


def claim_verdict(differences, tol: float) -> tuple[str, float, float, int]:
    """Verdict of a claim "A exceeds B" from paired per-data-set differences ``A - B``.

    Reproduced when the 95% interval of the mean difference lies above 0 (on at least :data:`MIN_DATASETS` data
    sets); not reproduced when it lies below 0, or when it is no wider than ``tol`` (at that resolution no
    advantage is shown); otherwise inconclusive (too wide to tell).

    Parameters
    ----------
    differences : array-like
        ``A - B`` per data set (non-finite entries left out).
    tol : float
        The resolution.

    Returns
    -------
    verdict : str
        ``"reproduced"``, ``"not reproduced"`` or ``"inconclusive"``.
    mean, half_width : float
        The mean difference and its interval's half-width.
    n : int
        Number of data sets.
    """
    mean, _, n = mean_sd(differences)
    h = half_width(differences)
    if n < MIN_DATASETS:
        return "inconclusive", mean, h, n
    if mean - h > 0:
        return "reproduced", mean, h, n
    return ("not reproduced" if mean + h < 0 or h <= tol else "inconclusive"), mean, h, n


def fmt_pm(mean: float, sd: float, n: int, digits: int = 2) -> str:
    """``mean ± sd (n)``; the sd is left out for one data set, and ``-`` is shown for none.

    Parameters
    ----------
    mean, sd : float
    n : int
    digits : int, default 2
        Decimals.

    Returns
    -------
    str
    """
    if n == 0:
        return "-"
    sd_txt = f" ± {sd:.{digits}f}" if math.isfinite(sd) else ""
    return f"{mean:.{digits}f}{sd_txt} ({n})"


def provenance(name: str, quick: bool, out, n_jobs, wall_seconds: float) -> dict:
    """The commit, command and machine of a run, stored beside its tables.

    ``commit`` is the ``HEAD`` of the source tree's git repository (``None`` outside one) and ``dirty`` says
    whether tracked files differed from it when the report was written.

    Parameters
    ----------
    name : str
        The reproduction.
    quick : bool
        Whether the reduced grid ran.
    out : path-like
        The output folder.
    n_jobs : int
        Worker processes.
    wall_seconds : float
        The run's wall time.

    Returns
    -------
    dict
        ``command``, ``commit``, ``dirty``, ``package_version``, ``date``, ``wall_seconds``, ``cores``,
        ``load_average_1min_at_report``, ``python``.
    """
    import os
    import platform

    from rsvm_conic import __version__

    src = Path(__file__).resolve().parent
    commit, dirty = None, None
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=src,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout
        dirty = bool(status.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {
        "command": f"rsvm-conic reproduce {name}{' --quick' if quick else ''} --out {out} --n-jobs {n_jobs}",
        "commit": commit,
        "dirty": dirty,
        "package_version": __version__,
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "wall_seconds": round(float(wall_seconds), 1),
        "cores": os.cpu_count(),
        "load_average_1min_at_report": None if load is None else round(load, 2),
        "python": platform.python_version(),
    }


def provenance_markdown(prov: dict) -> str:
    """One line on where stored results come from: command, commit, date, wall time, machine load.

    ``cells_commit`` (optional): the commit whose code computed the cells when the report was written later, at
    ``commit``, from the same resumed results (the experiment's version unchanged, so no cell recomputed).

    Parameters
    ----------
    prov : dict
        A :func:`provenance` record (possibly with ``cells_commit``, ``cells_wall_seconds`` and ``note``).

    Returns
    -------
    str
        Markdown.
    """
    commit = (prov.get("commit") or "unknown")[:10] + (" (with uncommitted changes)" if prov.get("dirty") else "")
    load = prov.get("load_average_1min_at_report")
    cells = prov.get("cells_commit")
    where = f"cells computed at commit `{cells[:10]}`, report written at `{commit}`" if cells else f"commit `{commit}`"
    return (
        f"Stored run: `{prov['command']}`, {where}, {prov['date']}, {prov['wall_seconds'] / 60:.1f} min wall on "
        f"{prov['cores']} cores"
        + (f" (load average {load:g} when the report was written)" if load else "")
        + (f". {prov['note']}" if prov.get("note") else "")
    )


def store(
    src, dest, cells_commit: str | None = None, cells_wall_seconds: float | None = None, note: str | None = None
) -> dict:
    """Copy a run's report JSON (with its ``provenance``) to ``dest`` for the documentation.

    When the report was written again later from the same resumed results (no cell recomputed), pass the commit
    whose code computed the cells and the wall time of that run: they replace the re-render's wall time, and
    :func:`provenance_markdown` names both commits.

    Parameters
    ----------
    src, dest : path-like
        The run's report JSON and where to copy it.
    cells_commit : str, optional
        The commit that computed the cells.
    cells_wall_seconds : float, optional
        That run's wall time.
    note : str, optional
        A sentence printed after the provenance (e.g. the machine's load while the cells ran).

    Returns
    -------
    dict
        The stored record.
    """
    import json

    data = json.loads(Path(src).read_text())
    prov = data["provenance"]
    if cells_commit is not None:
        prov["cells_commit"] = cells_commit
    if cells_wall_seconds is not None:
        prov["report_wall_seconds"] = prov["wall_seconds"]
        prov["wall_seconds"] = round(float(cells_wall_seconds), 1)
    if note is not None:
        prov["note"] = note
    Path(dest).parent.mkdir(parents=True, exist_ok=True)
    Path(dest).write_text(json.dumps(data, indent=1, default=str) + "\n")
    return data
