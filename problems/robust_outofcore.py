"""Exact robust SVMs on data larger than memory: the interior point on Dask row blocks.

* ``rsvm-conic check robust-outofcore`` (grouped ellipsoids, one per class) and
  ``robust-outofcore-sample`` (one diagonal ellipsoid per sample): the same robust SVM solved by the
  in-memory interior point (``ipm``) and on the row blocks of a Dask array of the same data (``ipm_dask``,
  4 chunks, on the current Dask scheduler); they must agree to 1e-8 in objective, both certified.
  ``--data PATH`` checks a store (:mod:`rsvm_conic.datasets.zarr_store`) that fits in memory instead
  (first 80 % of its rows to train, the rest to test).
* ``rsvm-conic run robust-outofcore [--quick] [--data PATH] [--backend dask --scheduler ADDR]``: robust
  SVMs over a grid of C fitted on a store (default: a synthetic one written to OUT/data.zarr,
  20 000 x 10 with --quick, 10^6 x 50 otherwise); the cells run one after another in this process and
  each fit's passes run on the cluster at ADDR (``--backend dask``) or on Dask's local threads.
* ``rsvm-conic bench robust-outofcore [--quick]``: writes a synthetic store larger than the combined
  memory limit of the workers of a ``LocalCluster`` (default 12 000 000 x 50 = 4.5 GiB, 4 workers x
  1 GiB; ``--quick``: 200 000 x 20, 2 workers), fits ``RobustSVC`` on it and prints the time, the
  passes over the data, the peak memory of the workers and the certified gap.  Environment variables
  override the sizes: ``RSVM_OUTOFCORE_SAMPLES``, ``..._FEATURES``, ``..._WORKERS``, ``..._MEMORY``
  (per worker, e.g. ``1GiB``), ``..._DIR`` (where the store goes; default a temporary directory),
  ``..._KEEP=1`` (keep the store), ``..._SCHEDULER`` (an existing cluster instead of a LocalCluster).
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from rsvm_conic.datasets.synthetic import make_uncertain_classification, train_test_split_arrays
from rsvm_conic.formulations.base import Formulation
from rsvm_conic.formulations.robust import RobustProblem
from rsvm_conic.runner import GridExperiment, Number, ProblemInstance, Record, Text
from rsvm_conic.uncertainty.sets import UncertaintySet

CHUNKS = 4  # row chunks of the Dask side of the check instances
#: a pass's task holds its block of X, the block read from the store and a few block-sized temporaries (the
#: scaled rows of the Gram matrix, X w, the per-sample state): 64 MiB chunks on 512 MiB workers pause
#: them and get one killed; a chunk of at most 1/16 of a worker's memory keeps them below the
#: pause threshold (80 %) beside the ~150 MiB a worker process holds idle
CHUNK_FRACTION = 16


class DaskVsMemory(Formulation):
    """One robust SVM twice: the in-memory interior point (``ipm``) and the same data as a Dask array, solved
    on its row blocks (``ipm_dask``).  Objective and predictions are the in-memory formulation's."""

    name = "robust-outofcore"
    BACKENDS = {
        "ipm": "structured interior point, data in memory",
        "ipm_dask": "the same interior point on the row blocks of a Dask array (current scheduler)",
    }

    def __init__(self, memory: RobustProblem, chunked: RobustProblem):
        self.memory, self.chunked = memory, chunked

    def _solve_ipm(self, **options):
        return self.memory.solve("ipm", **options)

    def _solve_ipm_dask(self, **options):
        sol = self.chunked.solve("ipm", **options)
        sol.backend = "ipm_dask"
        return sol

    def objective(self, solution) -> float:
        return self.memory.objective(solution)

    def decision_function(self, solution, data):
        return self.memory.decision_function(solution, data)


def _pair(X, y, unc_args, C, chunk_rows):
    """The in-memory formulation and the Dask one (numpy data split into row chunks)."""
    import dask.array as da

    def dask_arg(v):
        return (
            da.from_array(v, chunks=(chunk_rows,) + v.shape[1:])
            if isinstance(v, np.ndarray) and v.shape[0] == X.shape[0]
            else v
        )

    memory = RobustProblem(X, y, UncertaintySet(**unc_args), C=C)
    chunked = RobustProblem(
        dask_arg(X), dask_arg(y), UncertaintySet(**{k: dask_arg(v) for k, v in unc_args.items()}), C=C
    )
    return DaskVsMemory(memory, chunked)


def _grouped():
    X, y, Sigma, groups = make_uncertain_classification(25000, 20, separation=2.0, noise_scale=0.3, random_state=3)
    (Xtr, ytr, gtr), (Xte, yte, _) = train_test_split_arrays([X, y, groups], 0.2, random_state=3)
    f = _pair(Xtr, ytr, {"Sigma": Sigma, "groups": gtr, "radius": 0.5}, 1.0, -(-Xtr.shape[0] // CHUNKS))
    return f, Xte, yte


def _per_sample():
    rng = np.random.default_rng(4)
    X, y, _, _ = make_uncertain_classification(6000, 10, separation=2.0, noise_scale=0.3, random_state=4)
    var = rng.uniform(0.01, 0.2, X.shape)
    (Xtr, ytr, vtr), (Xte, yte, _) = train_test_split_arrays([X, y, var], 0.2, random_state=4)
    f = _pair(Xtr, ytr, {"Sigma": vtr, "groups": "sample", "radius": 1.0}, 1.0, -(-Xtr.shape[0] // CHUNKS))
    return f, Xte, yte


def _from_store(path):
    """A check instance from a store that fits in memory: its first 80 % of rows train, the rest test."""
    from rsvm_conic._validation import check_dask_binary_labels
    from rsvm_conic.datasets.zarr_store import open_dataset

    ds = open_dataset(path)
    L = ds.X.shape[0]
    cut = int(0.8 * L)
    y_pm, _ = check_dask_binary_labels(ds.y, ds.X)
    unc = {"sample_scale" if k == "sample_radius" else k: v for k, v in ds.uncertainty().items()}
    chunked_unc = {k: (v[:cut] if k != "Sigma" else v) for k, v in unc.items()}
    memory_unc = {k: np.asarray(v) for k, v in chunked_unc.items()}
    Xtr = ds.X[:cut]
    f = DaskVsMemory(
        RobustProblem(np.asarray(Xtr), np.asarray(y_pm[:cut]), UncertaintySet(**memory_unc, radius=0.5)),
        RobustProblem(Xtr, y_pm[:cut], UncertaintySet(**chunked_unc, radius=0.5)),
    )
    return f, np.asarray(ds.X[cut:]), np.asarray(y_pm[cut:])


class StoreInstance(ProblemInstance):
    """A check instance that ``--data PATH`` can point at a store (:meth:`with_data`)."""

    def with_data(self, path) -> ProblemInstance:
        return ProblemInstance(
            self.name,
            f"{self.description}; data: store {path}",
            functools.partial(_from_store, str(path)),
            self.backends,
            self.backend_options,
            self.rtol,
        )


INSTANCES = {
    "robust-outofcore": StoreInstance(
        "robust-outofcore",
        "robust SVM (grouped ellipsoids, L=20000 train, n=20): in-memory interior point vs the same on Dask row blocks",
        _grouped,
        ("ipm", "ipm_dask"),
        rtol=1e-8,
    ),
    "robust-outofcore-sample": StoreInstance(
        "robust-outofcore-sample",
        "robust SVM (one diagonal ellipsoid per sample, L=4800 train, n=10): in-memory "
        "interior point vs the same on Dask row blocks",
        _per_sample,
        ("ipm", "ipm_dask"),
        rtol=1e-8,
    ),
}


# ----------------------------------------------------------------------------------------------- grid
def _cells(quick: bool, data: str, meta: dict) -> list[dict]:
    store = {k: meta.get(k) for k in ("n_samples", "n_features", "chunk_rows", "source", "random_state")}
    return [dict(C=C, radius=0.5, data=data, store=store) for C in ([1.0] if quick else [0.1, 1.0, 10.0])]


def run_cell(cell: dict) -> dict:
    """One out-of-core fit on the store ``cell["data"]`` (its passes on the current Dask scheduler)."""
    from rsvm_conic.estimators import RobustSVC
    from rsvm_conic.solvers.ipm.row_blocks import RowBlocks

    passes = RowBlocks.data_passes
    t0 = time.perf_counter()
    est = RobustSVC(C=cell["C"], radius=cell["radius"]).fit(cell["data"])
    stats = est.solver_stats_
    return {
        "objective": float(est.objective_),
        "gap_rel": float(stats["gap_rel"]),
        "status": stats["status"],
        "iterations": int(stats["iterations"]),
        "passes": RowBlocks.data_passes - passes,
        "fit_time": time.perf_counter() - t0,
    }


#: What run_cell returns.
RESULT_FIELDS = Record(
    {
        "objective": Number(0),
        "gap_rel": Number(),
        "status": Text(),
        "iterations": Number(0, integer=True),
        "passes": Number(0, integer=True),
        "fit_time": Number(0),
    }
)


def report(run) -> tuple[str, bool]:
    """``summary.md`` in ``run.out``: one row per C; the run passes when every fit is certified optimal."""
    records = run.records
    lines = [
        "| C | radius | objective | certified gap | iterations | passes | fit time [s] |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['C']:g} | {r['radius']:g} | {r['objective']:.10g} | {r['gap_rel']:.2e} | {r['iterations']} | "
        f"{r['passes']} | {r['fit_time']:.1f} |"
        for r in records
    ]
    text = "\n".join(lines)
    (Path(run.out) / "summary.md").write_text(text + "\n")
    return text, all(r["status"] == "optimal" for r in records)


class StoreGrid(GridExperiment):
    """A grid whose cells fit on one store (``data``): run one after another in this process, each fit's
    passes on the Dask cluster at ``scheduler`` (``backend="dask"``) or on Dask's local threads.  Without
    ``data``, a synthetic store is written to ``OUT/data.zarr`` (20 000 x 10 with ``quick``, else 10^6 x 50)."""

    takes_data = True

    def __init__(self, name, description, version="1"):
        super().__init__(name, description, None, run_cell, report, version, result_fields=RESULT_FIELDS)

    def run(
        self,
        out,
        *,
        quick=False,
        n_jobs=None,
        backend="loky",
        scheduler=None,
        progress=True,
        fresh=False,
        wait=0.0,
        select=None,
        data=None,
    ):
        from rsvm_conic.datasets.zarr_store import make_classification_store, open_dataset

        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        client = None
        if backend == "dask":
            from rsvm_conic.runner import connect_scheduler

            client = connect_scheduler(scheduler)  # the default scheduler of the fits while it is open
        try:
            if data is None:
                data = out / "data.zarr"
                try:
                    open_dataset(data)
                except (FileNotFoundError, ValueError):
                    make_classification_store(data, *((20_000, 10) if quick else (1_000_000, 50)), overwrite=True)
            meta = open_dataset(data).meta
            grid = GridExperiment(
                self.name,
                self.description,
                functools.partial(_cells, data=str(Path(data).resolve()), meta=meta),
                self.fn,
                self.report,
                self.version,
                result_fields=self.result_fields,
            )
            return grid.run(out, quick=quick, n_jobs=1, progress=progress, fresh=fresh, wait=wait, select=select)
        finally:
            if client is not None:
                client.close()


GRIDS = {
    "robust-outofcore": StoreGrid(
        "robust-outofcore",
        "robust SVMs over C fitted on a chunked store "
        "(Zarr) on Dask row blocks; --data PATH, default a synthetic store",
    )
}


# ----------------------------------------------------------------------------------------------- benchmark
def _rss():
    import psutil

    return psutil.Process().memory_info().rss


class _PeakMemory:
    """Samples every worker's resident memory every ``interval`` seconds in a thread; keeps the peaks."""

    def __init__(self, client, interval=0.5):
        self.client, self.interval, self.peak = client, interval, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                for worker, rss in self.client.run(_rss).items():
                    self.peak[worker] = max(self.peak.get(worker, 0), rss)
            except Exception:  # noqa: BLE001 - a worker that just left; the next sample sees the others
                pass
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _gib(b) -> str:
    return f"{b / 2**30:.2f} GiB" if b >= 2**30 else f"{b / 2**20:.0f} MiB"


def benchmark(
    n_samples: int,
    n_features: int,
    *,
    workers: int = 4,
    memory_limit="1GiB",
    chunk_rows=None,
    directory=None,
    keep: bool = False,
    scheduler=None,
    processes: bool = True,
    C: float = 1.0,
    radius: float = 0.5,
    print_fn=print,
) -> dict:
    """Write a synthetic store (two classes, one noise ellipsoid per class) block by block, fit
    ``RobustSVC(C, radius)`` on it on a LocalCluster of ``workers`` single-threaded workers of
    ``memory_limit`` each (or on the cluster at ``scheduler``), print and return the figures.  Chunks:
    ``chunk_rows`` rows (default about 64 MiB of X, at most 1/16 of a worker's memory, at least 4 chunks
    per worker).  The store is removed afterwards unless ``keep``."""
    from distributed import Client, LocalCluster

    from rsvm_conic.datasets.zarr_store import default_chunk_rows, make_classification_store, open_dataset
    from rsvm_conic.estimators import RobustSVC
    from rsvm_conic.solvers.ipm.row_blocks import RowBlocks

    if chunk_rows is None:  # about 64 MiB of X per chunk, at most 1/16 of a worker's memory, >= 4 chunks per worker
        chunk_rows = min(default_chunk_rows(n_features), -(-int(n_samples) // (4 * workers)))
        if memory_limit and not scheduler:
            from dask.utils import parse_bytes

            limit = parse_bytes(memory_limit) if isinstance(memory_limit, str) else int(memory_limit)
            chunk_rows = min(chunk_rows, default_chunk_rows(n_features, limit // CHUNK_FRACTION))
    base = Path(tempfile.mkdtemp(prefix="rsvm-outofcore-", dir=directory))
    path = base / "data.zarr"
    cluster = None
    if scheduler:
        from rsvm_conic.runner import connect_scheduler

        client = connect_scheduler(scheduler)
    else:
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=processes,
            memory_limit=memory_limit,
            dashboard_address=":0",
        )
        client = Client(cluster)
    try:
        info = client.scheduler_info()["workers"]
        limits = [w.get("memory_limit") or 0 for w in info.values()]
        t0 = time.perf_counter()
        make_classification_store(path, n_samples, n_features, chunk_rows=chunk_rows, overwrite=True)
        t_write = time.perf_counter() - t0
        ds = open_dataset(path)
        before = set(client.scheduler_info()["workers"])
        passes = RowBlocks.data_passes
        with _PeakMemory(client) as mem:
            t0 = time.perf_counter()
            est = RobustSVC(C=C, radius=radius).fit(path)
            t_fit = time.perf_counter() - t0
        stats = est.solver_stats_
        after = set(client.scheduler_info()["workers"])
        fig = {
            "n_samples": int(n_samples),
            "n_features": int(n_features),
            "data_bytes": ds.nbytes,
            "chunks": ds.X.numblocks[0],
            "chunk_rows": ds.meta["chunk_rows"],
            "workers": len(info),
            "memory_limit": sum(limits),
            "write_time": t_write,
            "fit_time": t_fit,
            "iterations": int(stats["iterations"]),
            "passes": RowBlocks.data_passes - passes,
            "ipm_passes": int(stats["passes"]),
            "max_fetched_bytes": int(stats["max_fetched_bytes"]),
            "peak_worker_memory": max(mem.peak.values(), default=0),
            "workers_lost": len(before - after),
            "gap_rel": float(stats["gap_rel"]),
            "status": stats["status"],
            "objective": float(est.objective_),
        }
        print_fn(f"robust-outofcore: RobustSVC(C={C:g}, radius={radius:g}), one noise ellipsoid per class")
        print_fn(
            f"data: {n_samples:,} x {n_features} float64 = {_gib(fig['data_bytes'])} on disk, "
            f"{fig['chunks']} chunks of {fig['chunk_rows']:,} rows, written in {t_write:.1f} s"
        )
        if fig["memory_limit"]:
            print_fn(
                f"workers: {fig['workers']} x 1 thread, memory limit {_gib(fig['memory_limit'] / len(limits))} "
                f"each, {_gib(fig['memory_limit'])} in all: data / combined limit = "
                f"{fig['data_bytes'] / fig['memory_limit']:.2f}"
            )
        print_fn(
            f"fit: {t_fit:.1f} s, {fig['iterations']} iterations, {fig['passes']} passes over the data "
            f"({fig['ipm_passes']} interior point, {fig['passes'] - fig['ipm_passes']} certificate and checks), "
            f"{t_fit / max(fig['passes'], 1):.2f} s per pass"
        )
        print_fn(
            f"peak worker memory: {_gib(fig['peak_worker_memory'])}; workers lost: {fig['workers_lost']}; "
            f"largest result of a pass on the client: {fig['max_fetched_bytes']:,} bytes"
        )
        print_fn(
            f"certified relative gap {fig['gap_rel']:.2e} (status {fig['status']}), objective {fig['objective']:.10g}"
        )
        return fig
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
        if keep:
            print_fn(f"store kept at {path}")
        else:
            shutil.rmtree(base, ignore_errors=True)


def run(quick: bool = False) -> int:
    """A robust SVM on a store larger than the workers' combined memory (LocalCluster): time, passes over the
    data, peak worker memory, certified gap (sizes: module docstring; environment overrides)."""
    env = os.environ.get
    default = (200_000, 20, 2, "1GiB") if quick else (12_000_000, 50, 4, "1GiB")
    benchmark(
        int(env("RSVM_OUTOFCORE_SAMPLES", default[0])),
        int(env("RSVM_OUTOFCORE_FEATURES", default[1])),
        workers=int(env("RSVM_OUTOFCORE_WORKERS", default[2])),
        memory_limit=env("RSVM_OUTOFCORE_MEMORY", default[3]),
        directory=env("RSVM_OUTOFCORE_DIR"),
        keep=env("RSVM_OUTOFCORE_KEEP", "") not in ("", "0"),
        scheduler=env("RSVM_OUTOFCORE_SCHEDULER"),
    )
    return 0


def store_checks(quick: bool = False, repeats: int = 7, print_fn=print) -> dict:
    """What checking every chunk costs: passes over a store's X read with the CRC-32C check
    (:func:`~rsvm_conic.datasets.zarr_store.open_dataset`) and without it (``dask.array.from_zarr``, the same
    chunks), interleaved and timed side by side in this run (median of ``repeats``), on Dask's threaded
    scheduler: a bare pass (sum of the rows), a Gram pass (X'X, the interior point's heaviest reduction),
    and ``RobustSVC`` fits on the store's arrays (3 each, interleaved, on 100 000 x 20).  Also the open-time
    check (metadata, every chunk file's size).  Passes: 400 000 x 50 in chunks of 50 000 rows (``quick``:
    100 000 x 20 in chunks of 12 500)."""
    import dask.array as da

    from rsvm_conic.datasets.zarr_store import check_dataset, make_classification_store, open_dataset
    from rsvm_conic.estimators import RobustSVC

    def both(path):
        ds = open_dataset(path)
        raw = tuple(da.from_zarr(str(path / name)) for name in ("X", "y", "groups"))
        return ds, {"checked": (ds.X, ds.y, ds.groups), "unchecked": raw}

    def timed(fn, sides, times, label, rounds):
        for _ in range(rounds):  # interleaved: both sides see the same load
            for side, arrays in sides.items():
                t0 = time.perf_counter()
                fn(*arrays)
                times.setdefault((label, side), []).append(time.perf_counter() - t0)

    L, n = (100_000, 20) if quick else (400_000, 50)
    base = Path(tempfile.mkdtemp(prefix="rsvm-store-checks-"))
    try:
        path = make_classification_store(base / "passes.zarr", L, n, chunk_rows=L // 8)
        ds, sides = both(path)
        times = {}
        work = {
            "bare pass (row sums)": lambda X, y, g: X.sum(axis=0).compute(),
            "Gram pass (X'X)": lambda X, y, g: (X.T @ X).compute(),
        }
        for label, fn in work.items():
            timed(fn, sides, times, label, repeats)
        small = make_classification_store(base / "fits.zarr", 100_000, 20, chunk_rows=12_500)
        fit_ds, fit_sides = both(small)
        objectives = {}

        def fit(X, y, g):
            est = RobustSVC(C=1.0, radius=0.5).fit(X, y, Sigma=fit_ds.Sigma, sigma_index=g)
            objectives.setdefault("checked" if X is fit_ds.X else "unchecked", set()).add(est.objective_)

        timed(fit, fit_sides, times, "RobustSVC fit", 3)
        t0 = time.perf_counter()
        for _ in range(repeats):
            check_dataset(path)
        t_check = (time.perf_counter() - t0) / repeats
        print_fn(
            f"store-checks: {L:,} x {n} float64 ({_gib(ds.nbytes)}), {ds.X.numblocks[0]} chunks of {L // 8:,} rows, "
            f"Dask threaded scheduler; medians, interleaved (the machine's load applies to both sides)"
        )
        out = {"check_dataset": t_check}
        for label in (*work, "RobustSVC fit"):
            a, b = (float(np.median(times[label, side])) for side in sides)
            out[label] = a / b
            unit, scale = ("s", 1.0) if label == "RobustSVC fit" else ("ms", 1e3)
            print_fn(
                f"  {label:<22} checked {a * scale:8.2f} {unit}, unchecked {b * scale:8.2f} {unit}: ratio {a / b:.2f} "
                f"({len(times[label, 'checked'])} each)"
            )
        print_fn(f"  fits: the same objective checked and unchecked: {len(set.union(*objectives.values())) == 1}")
        files = 3 * ds.X.numblocks[0] + 1
        print_fn(f"  open-time check (metadata, {files} chunk files' sizes): {t_check * 1e3:.1f} ms")
        return out
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run_store_checks(quick: bool = False) -> int:
    """What checking every chunk of a store costs: checked vs unchecked passes and fits, side by side."""
    store_checks(quick)
    return 0


BENCHMARKS = {"robust-outofcore": run, "store-checks": run_store_checks}
