"""Command line: ``rsvm-conic list | check NAME | reproduce NAME | bench NAME``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _cmd_list(args) -> int:
    import problems

    for kind, title in (("INSTANCES", "check"), ("REPRODUCTIONS", "reproduce"), ("BENCHMARKS", "bench")):
        reg = problems.registry(kind)
        print(f"{title}:")
        for name in sorted(reg):
            entry = reg[name]
            doc = getattr(entry, "description", None) or (entry.__doc__ or "").strip().splitlines()[0:1]
            doc = doc if isinstance(doc, str) else (doc[0] if doc else "")
            print(f"  {name:<32} {doc}")
    return 0


def _cmd_check(args) -> int:
    import problems
    from .runner import check_instance, format_reports

    try:
        instance = problems.get("INSTANCES", args.name)
    except KeyError as exc:
        print(exc.args[0], file=sys.stderr)
        return 2
    backends = tuple(args.backends.split(",")) if args.backends else None
    print(f"{instance.name}: {instance.description}")
    reports, ok = check_instance(instance, backends)
    print(format_reports(reports))
    verdict = "AGREE" if ok else "DISAGREE"
    print(f"\n{verdict}: every backend within relative objective gap {instance.rtol:g} of the best"
          if ok else f"\n{verdict}: some backend failed or is more than {instance.rtol:g} from the best")
    return 0 if ok else 1


def _cmd_reproduce(args) -> int:
    import problems

    try:
        fn = problems.get("REPRODUCTIONS", args.name)
    except KeyError as exc:
        print(exc.args[0], file=sys.stderr)
        return 2
    out = Path(args.out or Path("results") / args.name)
    out.mkdir(parents=True, exist_ok=True)
    return int(fn(quick=args.quick, out=out) or 0)


def _cmd_bench(args) -> int:
    import problems

    try:
        fn = problems.get("BENCHMARKS", args.name)
    except KeyError as exc:
        print(exc.args[0], file=sys.stderr)
        return 2
    return int(fn(quick=args.quick) or 0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rsvm-conic", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="list named problems")
    p.set_defaults(fn=_cmd_list)
    p = sub.add_parser("check", help="solve a named instance with every backend and compare")
    p.add_argument("name")
    p.add_argument("--backends", help="comma-separated subset of backends")
    p.set_defaults(fn=_cmd_check)
    p = sub.add_parser("reproduce", help="reproduce a paper table/figure")
    p.add_argument("name")
    p.add_argument("--quick", action="store_true", help="reduced grid for a fast check")
    p.add_argument("--out", help="output directory (default results/NAME)")
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
