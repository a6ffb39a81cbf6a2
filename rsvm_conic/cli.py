"""Command line: ``rsvm-conic list | check NAME | run NAME | reproduce NAME | bench NAME``.

A user error (a bad option, an unwritable --out, an unreachable scheduler, a results store that
another run is writing or that cannot be written -- a full disk, a directory in place of
``results.jsonl`` or its lock --, a damaged ``--data`` store, an entry whose optional extra is not installed:
``rsvm-conic: NAME needs the dask extra: pip install "rsvm-conic[dask]"``) is one line on stderr starting with
``rsvm-conic:`` and exit code 2; any other exception is a bug and keeps its traceback.  SIGINT
(Ctrl-C, exit code 130) and SIGTERM (exit code 143) stop a run the same way: one line, finished
cells kept, the lock released, worker processes gone; a second SIGTERM ends the process at once.
"""

from __future__ import annotations

import argparse
import errno
import signal
import sys
import tempfile
import warnings
from pathlib import Path

from . import __version__


class UserError(Exception):
    """A mistake in the command line or its surroundings: reported in one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own errors: one line too
        raise UserError(f"{message} (see {self.prog} --help)")


def _needs_extra(name: str, extra: str) -> UserError:
    return UserError(f'{name} needs the {extra} extra: pip install "rsvm-conic[{extra}]"')


def _lookup(kind: str, name: str):
    """The registry entry ``name`` of ``kind``; UserError naming the available ones if there is none, or the
    extra to install if the entry needs one that is missing."""
    from . import problems

    entry = problems.catalogue(kind).get(name)
    for extra in problems.missing_extras(entry) if entry is not None else ():
        raise _needs_extra(name, extra)
    try:
        return problems.get(kind, name)
    except KeyError as exc:
        raise UserError(exc.args[0]) from None


def _cmd_list(args) -> int:
    """Every entry from the static catalogue: names, one line each, the extras an entry needs (no problem module
    is imported)."""
    from . import problems

    for kind, title in (
        ("INSTANCES", "check"),
        ("GRIDS", "run"),
        ("REPRODUCTIONS", "reproduce"),
        ("BENCHMARKS", "bench"),
    ):
        print(f"{title}:")
        for name, entry in sorted(problems.catalogue(kind).items()):
            needs = f" [needs: {', '.join(entry.extras)}]" if entry.extras else ""
            print(f"  {name:<32} {entry.description}{needs}")
    return 0


def _cmd_check(args) -> int:
    from .runner import check_instance, format_reports

    instance = _lookup("INSTANCES", args.name)
    if args.data:
        if not hasattr(instance, "with_data"):
            raise UserError(
                f"{args.name} takes no --data (instances that do: robust-outofcore, robust-outofcore-sample)"
            )
        instance = instance.with_data(_data_path(args.data))
    backends = None if args.backends is None else tuple(b.strip() for b in args.backends.split(","))
    allowed = instance.backends
    bad = [b for b in backends or () if not b or (allowed and b not in allowed)]
    if bad:
        raise UserError(
            f"unknown backend {', '.join(map(repr, bad))} for {instance.name}; --backends takes a "
            f"comma-separated subset of: {', '.join(allowed) if allowed else 'its backends'}"
        )
    reports, ok = check_instance(instance, backends)
    print(format_reports(reports, f"{instance.name}: {instance.description}"))
    certified = [r.backend for r in reports if r.status == "optimal"]
    others = [f"{r.backend} ({r.status})" for r in reports if r.status != "optimal"]
    print(f"\ncertified optimal: {', '.join(certified) or 'none'}; not certified: {', '.join(others) or 'none'}")
    values = "".join(f", |{key} - reference's| <= {tol:g}" for key, tol in instance.value_atol.items())
    print(
        f"{'AGREE' if ok else 'DISAGREE'}: "
        + (
            f"every backend's objective within {instance.rtol:g} (relative, 'above best') of the best{values}"
            if ok
            else f"some backend failed or its objective is more than {instance.rtol:g} above the best{values}"
        )
    )
    return 0 if ok else 1


def _out_dir(args) -> Path:
    """``--out`` (default results/NAME, results/NAME-quick with --quick), created; UserError unless it is a
    directory we can write in."""
    if args.out is not None and not args.out.strip():
        raise UserError("--out is empty; give an output directory (or leave out --out for results/NAME)")
    out = Path(args.out or Path("results") / (args.name + "-quick" * args.quick))
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is an existing file, not a directory; give a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=out).close()
    except OSError as exc:
        raise UserError(
            f"cannot write to the output directory {out} ({exc.strerror or exc}); choose another with --out"
        ) from None
    return out


def _grid_options(args) -> dict:
    """Options for GridExperiment.run, validated; for ``--backend dask`` the scheduler is contacted once
    (5 s) so that a wrong address fails fast."""
    if args.n_jobs is not None and args.n_jobs < 1 and args.n_jobs != -1:
        raise UserError(
            f"--n-jobs must be a positive number of worker processes, or -1 for one per CPU core; got {args.n_jobs}"
        )
    if args.backend == "dask" and not args.scheduler:
        raise UserError("--backend dask needs --scheduler ADDRESS (e.g. tcp://127.0.0.1:8786)")
    if args.scheduler and args.backend != "dask":
        raise UserError("--scheduler is only used with --backend dask; add --backend dask or drop --scheduler")
    if args.backend == "dask":
        from .runner.grid import connect_scheduler

        try:
            connect_scheduler(args.scheduler, timeout=5).close()
        except ImportError as exc:
            raise UserError(str(exc)) from None
    return {"n_jobs": args.n_jobs, "backend": args.backend, "scheduler": args.scheduler}


def _data_path(path) -> Path:
    """``--data``: an existing chunked store (rsvm_conic.datasets.zarr_store), its description and every
    chunk file checked (no data read)."""
    from .datasets.zarr_store import META, check_dataset
    from .exceptions import DatasetError

    path = Path(path)
    if not (path / META).is_file():
        raise UserError(
            f"--data {path} is not a data set store ({META} not found); write one with "
            "rsvm_conic.datasets.zarr_store.write_dataset or make_classification_store"
        )
    try:
        check_dataset(path)
    except (DatasetError, ImportError) as exc:
        raise UserError(f"--data {path}: {exc}") from None
    return path


def _cmd_grid(args) -> int:
    """``run NAME`` (a grid of GRIDS) and ``reproduce NAME`` (a GridExperiment of REPRODUCTIONS): one path."""
    experiment = _lookup("GRIDS" if args.command == "run" else "REPRODUCTIONS", args.name)
    opts = _grid_options(args)
    if getattr(args, "data", None):
        if not experiment.takes_data:
            raise UserError(f"{args.name} takes no --data (grids that do: robust-outofcore)")
        opts["data"] = _data_path(args.data)
    out = _out_dir(args)
    try:
        run = experiment.run(out, quick=args.quick, fresh=args.fresh, progress=not args.no_progress, **opts)
    except OSError as exc:  # the report's tables and figures (the results store raises StoreError)
        if exc.errno not in _ENVIRONMENT_ERRNOS:
            raise
        raise UserError(_cannot_write(exc, out)) from None
    print(run.summary)
    print(f"results: {out / 'results.jsonl'}")
    return 0 if run.ok else 1


#: OSErrors that come from the machine (space, permissions, a directory in a file's place), not from a bug
_ENVIRONMENT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.EISDIR}


def _cannot_write(exc: OSError, out: Path) -> str:
    name = exc.filename or out
    if exc.errno == errno.EISDIR:
        return f"{name} is a directory; move it away or use another --out"
    fix = (
        "free some space and run the same command again (finished cells are kept), or use another --out"
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
        else "use another --out"
    )
    return f"cannot write {name} ({exc.strerror or exc}); {fix}"


def _cmd_bench(args) -> int:
    fn = _lookup("BENCHMARKS", args.name)
    return int(fn(quick=args.quick) or 0)


def _add_grid_args(p):
    p.add_argument("name")
    p.add_argument("--quick", action="store_true", help="reduced grid for a fast check")
    p.add_argument(
        "--out",
        help="output directory (default results/NAME, results/NAME-quick with --quick); "
        "results.jsonl and the tables/figures live there",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="start over (old results are renamed, not deleted); without it, results are resumed: "
        "cells already in results.jsonl are not recomputed",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--backend",
        choices=("loky", "dask"),
        default="loky",
        help="where cells run: local processes (loky) or an existing Dask cluster",
    )
    p.add_argument("--scheduler", help="Dask scheduler address, with --backend dask")
    p.add_argument(
        "--n-jobs",
        type=int,
        default=None,
        metavar="N",
        help="local worker processes (loky), a positive number or -1 for one per CPU core; default: 1 "
        "with --quick, else min(2, cores)",
    )
    p.set_defaults(fn=_cmd_grid)


def build_parser() -> argparse.ArgumentParser:
    """The ``rsvm-conic`` argument parser, with one sub-command per action.

    Returns
    -------
    argparse.ArgumentParser
        The parser; each sub-command sets ``fn``, the function that runs it.
    """
    parser = _Parser(prog="rsvm-conic", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="list named problems")
    p.set_defaults(fn=_cmd_list)
    p = sub.add_parser("check", help="solve a named instance with every backend and compare")
    p.add_argument("name")
    p.add_argument("--backends", help="comma-separated subset of backends")
    p.add_argument("--data", metavar="PATH", help="a chunked data set store (Zarr), for instances that take one")
    p.set_defaults(fn=_cmd_check)
    p = sub.add_parser("run", help="run a named grid (resumable; parallel via loky or Dask)")
    _add_grid_args(p)
    p.add_argument(
        "--data",
        metavar="PATH",
        help="a chunked data set store (Zarr) larger than memory, for grids that take one "
        "(robust-outofcore: its fits run on the store's row blocks, on --scheduler)",
    )
    p = sub.add_parser(
        "reproduce", help="reproduce a paper table/figure (a grid: resumable; parallel via loky or Dask)"
    )
    _add_grid_args(p)
    p = sub.add_parser("bench", help="run a benchmark and print measured ratios")
    p.add_argument("name")
    p.add_argument("--quick", action="store_true", help="smaller sizes")
    p.set_defaults(fn=_cmd_bench)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None, _default=warnings.showwarning):
    from .exceptions import StoreWarning

    if issubclass(category, StoreWarning):  # about the user's results: one plain line
        print(f"rsvm-conic: warning: {message}", file=sys.stderr if file is None else file)
    else:
        _default(message, category, filename, lineno, file, line)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the main thread is, so that a run stops the way Ctrl-C stops it."""


def _on_sigterm(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise _Terminated


def main(argv=None) -> int:
    """Run the ``rsvm-conic`` command.

    User errors (bad arguments, a missing optional extra, a locked or damaged results store or data store, an
    unreachable scheduler) print one line to stderr and return 2, with no traceback.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 on success, 2 for a user error, 130 / 143 when interrupted / terminated.
    """
    try:
        previous, installed = signal.signal(signal.SIGTERM, _on_sigterm), True
    except ValueError:  # not the main thread: signals stay as they are
        previous, installed = None, False
    args = None
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            args = build_parser().parse_args(argv)
            return args.fn(args)
    except UserError as exc:
        msg = str(exc)
    except ImportError as exc:  # an optional extra that is not installed (e.g. matplotlib for a figure)
        from . import problems

        extra = problems.extra_of(exc.name)
        if extra is None:
            raise
        msg = str(_needs_extra(getattr(args, "name", None) or "this command", extra))
    except KeyboardInterrupt as exc:
        what, code = ("terminated", 143) if isinstance(exc, _Terminated) else ("interrupted", 130)
        print(f"rsvm-conic: {what} (finished grid cells are kept; the same command resumes)", file=sys.stderr)
        return code
    except RuntimeError as exc:  # a results store that is locked or cannot be written, an unreachable scheduler
        from .exceptions import SchedulerError, StoreError

        if not isinstance(exc, (SchedulerError, StoreError)):
            raise
        msg = str(exc)
    except ValueError as exc:  # a chunk of a --data store found missing or damaged during a pass
        from .exceptions import DatasetError

        if not isinstance(exc, DatasetError):
            raise
        msg = str(exc)
    finally:
        if installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
    print("rsvm-conic: " + " ".join(msg.split()), file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
