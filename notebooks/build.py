"""Write real Jupyter notebooks, with their outputs, from the jupytext sources in this folder.

    pip install -e ".[notebooks]"
    python notebooks/build.py [--out DIR] [--no-execute] [NAME ...]

Each ``NN_*.py`` (jupytext percent format) is converted to ``NN_*.ipynb`` (next to it, or in ``--out``) and
executed top to bottom with a Python kernel (nbclient) in a temporary working folder, so the figures and the
reproductions' output folders the notebooks write do not land in the repository.  The ``.ipynb`` files are
ignored by git: the ``.py`` files are the source.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def build(path: Path, out_dir: Path, execute: bool = True, timeout: int = 600) -> Path:
    import jupytext
    import nbformat

    nb = jupytext.read(path, fmt="py:percent")
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if execute:
        from nbclient import NotebookClient

        with tempfile.TemporaryDirectory() as cwd:
            NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": cwd}}).execute()
    target = out_dir / (path.stem + ".ipynb")
    nbformat.write(nb, target)
    return target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook stems or file names (default: all)")
    parser.add_argument("--out", type=Path, default=HERE, help="output folder (default: notebooks/)")
    parser.add_argument("--no-execute", action="store_true", help="convert only, without outputs")
    args = parser.parse_args(argv)
    paths = sorted(HERE.glob("[0-9][0-9]_*.py"))
    if args.names:
        wanted = {Path(n).stem for n in args.names}
        unknown = wanted - {p.stem for p in paths}
        if unknown:
            parser.error(f"no such notebook: {', '.join(sorted(unknown))}")
        paths = [p for p in paths if p.stem in wanted]
    args.out.mkdir(parents=True, exist_ok=True)
    for path in paths:
        t0 = time.perf_counter()
        target = build(path, args.out, execute=not args.no_execute)
        print(f"{target}  ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
