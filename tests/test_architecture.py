"""The rooms of docs/ARCHITECTURE.md import only the rooms below them (checked on the source, with ast)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ALLOWED = {
    "_jit": set(),
    "_threads": set(),
    "_validation": {"_jit", "_threads"},
    "metrics": set(),
    "uncertainty": {"_threads", "_validation"},
    "kernels": {"_validation"},
    "datasets": {"_validation"},
    "solvers": {"_jit", "_threads", "_validation", "uncertainty", "kernels"},
    "evaluation": {"_validation", "uncertainty", "kernels", "solvers"},
    "formulations": {"_validation", "uncertainty", "kernels", "solvers"},
    "estimators": {"_validation", "uncertainty", "kernels", "datasets", "solvers", "formulations"},
    "runner": {"formulations", "solvers", "__init__"},
    "plotting": {"uncertainty"},
    "cli": {"runner", "problems", "datasets", "__init__"},
    "__init__": {"estimators"},
    "problems": {
        "_validation",
        "uncertainty",
        "kernels",
        "datasets",
        "metrics",
        "solvers",
        "evaluation",
        "formulations",
        "estimators",
        "runner",
        "plotting",
        "__init__",
    },
}


def _room(parts: tuple[str, ...]) -> str:
    """Room of a module given its dotted path inside rsvm_conic (problems/ is rsvm_conic.problems)."""
    head = parts[0]
    return head[:-3] if head.endswith(".py") else head


def _imports(path: Path, package: tuple[str, ...]):
    """Rooms of rsvm_conic that a file imports (absolute and relative imports, including in functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = list(base) + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "rsvm_conic":
                target = node.module.split(".")[1:]
            else:
                continue
            if not target:  # "from .. import x" at the top: x names a room (or __version__)
                for alias in node.names:
                    yield alias.name if alias.name != "__version__" else "__init__"
            else:
                yield target[0][:-3] if target[0].endswith(".py") else target[0]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "rsvm_conic" and len(parts) > 1:
                    yield parts[1]


def _modules():
    for path in sorted((ROOT / "rsvm_conic").rglob("*.py")):
        rel = path.relative_to(ROOT / "rsvm_conic").parts
        yield path, rel, rel[:-1]
    for path in sorted((ROOT / "problems").glob("*.py")):
        yield path, ("problems", path.name), ("problems",)


def test_rooms_import_only_the_rooms_below_them():
    bad = []
    for path, rel, package in _modules():
        src = _room(rel)
        assert src in ALLOWED, f"{path.relative_to(ROOT)} is in no room of docs/ARCHITECTURE.md"
        for target in set(_imports(path, package)):
            if target != src and target not in ALLOWED[src]:
                bad.append(f"{path.relative_to(ROOT)}: {src} imports {target}")
    assert not bad, "imports against docs/ARCHITECTURE.md:\n" + "\n".join(sorted(bad))


def test_every_room_is_documented():
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    for room in ALLOWED:
        if room != "__init__":
            assert f"`{room}" in doc, f"room {room} is missing from docs/ARCHITECTURE.md"
