"""The rooms of docs/ARCHITECTURE.md import only the rooms below them (checked on the source, with ast)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ALLOWED = {
    "_jit": set(),
    "_threads": set(),
    "_validation": {"_jit"},
    "metrics": set(),
    "uncertainty": {"_validation"},
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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_graph() -> dict:
    """Module -> the package's modules it imports (at the top or inside functions), from the source."""
    paths = {_module_name(p): p for p in (ROOT / "rsvm_conic").rglob("*.py")}
    graph = {}
    for name, path in paths.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                target = base + (node.module.split(".") if node.module else [])
                for alias in node.names:
                    full = ".".join(target + [alias.name])
                    edges.add(full if full in paths else ".".join(target))
            elif isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names)
        graph[name] = {t for t in edges if t in paths and t != name}
    return graph


def _cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


#: import cycles still to be broken (the certificate's home); every other cycle fails the test below
CYCLES_TO_BREAK = [["rsvm_conic.solvers.rsvm_socp", "rsvm_conic.solvers.svm_dual"]]


def test_no_import_cycle():
    """No two modules of the package import each other, directly or through others (imports inside functions
    count: a lazy import is still a dependency)."""
    cycles = [c for c in _cycles(_module_graph()) if c not in CYCLES_TO_BREAK]
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_cycle_finder_sees_a_lazy_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_interior_point_imports_no_other_solver_but_its_exceptions_and_certificates():
    """``solvers/ipm/`` is one room inside ``solvers/``: it imports its own modules, ``conic`` (SolverError),
    ``contract`` and ``certificates`` (the dual set's root finder), never another algorithm's module."""
    bad = []
    for name, targets in _module_graph().items():
        if name.startswith("rsvm_conic.solvers.ipm"):
            for t in targets:
                inside = t.startswith("rsvm_conic.solvers.ipm") or not t.startswith("rsvm_conic.solvers")
                if not inside and t.rsplit(".", 1)[1] not in ("conic", "contract", "certificates"):
                    bad.append(f"{name} imports {t}")
    assert not bad, "\n".join(bad)


def test_solvers_never_receive_a_formulation():
    """Numerical methods take arrays and operators: no function under ``solvers/`` has a parameter named
    ``formulation`` (or reads a name of that name), so none can call back into a model."""
    bad = []
    for path in sorted((ROOT / "rsvm_conic" / "solvers").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                if any(a.arg in ("formulation", "model") for a in args):
                    bad.append(f"{path.relative_to(ROOT)}: {node.name} takes a formulation")
            elif isinstance(node, ast.Name) and node.id == "formulation":
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno} reads a formulation")
    assert not bad, "\n".join(bad)


def test_no_dask_in_formulations():
    """Formulations hold the mathematics; where the samples live (in memory or on Dask row blocks) is the
    layout object's business (:mod:`rsvm_conic.solvers.samples`)."""
    bad = [
        f"{path.relative_to(ROOT)}:{i}"
        for path in sorted((ROOT / "rsvm_conic" / "formulations").rglob("*.py"))
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "dask" in line.lower()
    ]
    assert not bad, "dask in formulations/:\n" + "\n".join(bad)
