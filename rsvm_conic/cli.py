"""Command line: ``rsvm-conic list | check NAME | run NAME | reproduce NAME | bench NAME``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _summary(entry) -> str:
    """One line describing a registry entry: its description, docstring, or its module's docstring."""
    doc = getattr(entry, "description", None) or (entry.__doc__ or "").strip()
    if not doc:
        doc = (sys.modules.get(getattr(entry, "__module__", ""), None).__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


def _lookup(kind: str, name: str):
    """The registry entry ``name`` of ``kind``, or None after printing why (unknown name, close matches)."""
    import problems

    try:
        return problems.get(kind, name)
    except KeyError as exc:
        print(exc.args[0], file=sys.stderr)
        return None


def _cmd_list(args) -> int:
    import problems

    for kind, title in (("INSTANCES", "check"), ("GRIDS", "run"), ("REPRODUCTIONS", "reproduce"),
                        ("BENCHMARKS", "bench")):
        reg = problems.registry(kind)
        print(f"{title}:")
        for name in sorted(reg):
            entry = reg[name]
            print(f"  {name:<32} {_summary(entry)}")
    return 0


def _cmd_check(args) -> int:
    from .runner import check_instance, format_reports

    instance = _lookup("INSTANCES", args.name)
    if instance is None:
        return 2
    backends = tuple(args.backends.split(",")) if args.backends else None
    print(f"{instance.name}: {instance.description}")
    reports, ok = check_instance(instance, backends)
    print(format_reports(reports))
    verdict = "AGREE" if ok else "DISAGREE"
    print(f"\n{verdict}: every backend within relative objective gap {instance.rtol:g} of the best"
          if ok else f"\n{verdict}: some backend failed or is more than {instance.rtol:g} from the best")
    return 0 if ok else 1


def _grid_options(args) -> dict:
    if args.backend == "dask" and not args.scheduler:
        raise SystemExit("rsvm-conic: --backend dask needs --scheduler ADDRESS (e.g. tcp://127.0.0.1:8786)")
    opts = {"backend": args.backend, "scheduler": args.scheduler}
    if args.n_jobs is not None:  # otherwise each grid / reproduction keeps its own default
        opts["n_jobs"] = args.n_jobs
    return opts


def _cmd_run(args) -> int:
    grid = _lookup("GRIDS", args.name)
    if grid is None:
        return 2
    out = Path(args.out or Path("results") / args.name)
    _, summary = grid.run(out, quick=args.quick, fresh=args.fresh, progress=not args.no_progress,
                          **_grid_options(args))
    print(summary)
    print(f"results: {out / 'results.jsonl'}")
    return 0


def _cmd_reproduce(args) -> int:
    import inspect

    fn = _lookup("REPRODUCTIONS", args.name)
    if fn is None:
        return 2
    out = Path(args.out or Path("results") / args.name)
    out.mkdir(parents=True, exist_ok=True)
    accepted = inspect.signature(fn).parameters
    opts = {k: v for k, v in _grid_options(args).items() if k in accepted}
    if args.backend != "loky" and "backend" not in accepted:
        print(f"rsvm-conic: {args.name} does not support --backend {args.backend}", file=sys.stderr)
        return 2
    return int(fn(quick=args.quick, out=out, **opts) or 0)


def _cmd_bench(args) -> int:
    fn = _lookup("BENCHMARKS", args.name)
    if fn is None:
        return 2
    return int(fn(quick=args.quick) or 0)


def _add_grid_args(p):
    p.add_argument("--backend", choices=("loky", "dask"), default="loky",
                   help="where cells run: local processes (loky) or an existing Dask cluster")
    p.add_argument("--scheduler", help="Dask scheduler address, with --backend dask")
    p.add_argument("--n-jobs", type=int, default=None,
                   help="local worker processes (loky); default: the grid's own choice (min(2, cores) for the "
                        "full Bhadra and Dakdouki reproductions, else 1)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rsvm-conic", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="list named problems")
    p.set_defaults(fn=_cmd_list)
    p = sub.add_parser("check", help="solve a named instance with every backend and compare")
    p.add_argument("name")
    p.add_argument("--backends", help="comma-separated subset of backends")
    p.set_defaults(fn=_cmd_check)
    p = sub.add_parser("run", help="run a named grid (resumable; parallel via loky or Dask)")
    p.add_argument("name")
    p.add_argument("--quick", action="store_true", help="reduced grid")
    p.add_argument("--out", help="output directory (default results/NAME); results.jsonl lives there")
    p.add_argument("--resume", action="store_true",
                   help="skip cells already in results.jsonl (this is the default; the flag documents intent)")
    p.add_argument("--fresh", action="store_true", help="start over (old results are renamed, not deleted)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_grid_args(p)
    p.set_defaults(fn=_cmd_run)
    p = sub.add_parser("reproduce", help="reproduce a paper table/figure")
    p.add_argument("name")
    p.add_argument("--quick", action="store_true", help="reduced grid for a fast check")
    p.add_argument("--out", help="output directory (default results/NAME)")
    _add_grid_args(p)
    p.set_defaults(fn=_cmd_reproduce)
    p = sub.add_parser("bench", help="run a benchmark and print measured ratios")
    p.add_argument("name")
    p.add_argument("--quick", action="store_true", help="smaller sizes")
    p.set_defaults(fn=_cmd_bench)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
