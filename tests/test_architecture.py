"""The rooms of docs/ARCHITECTURE.md import only the rooms below them (checked on the source, with ast)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ALLOWED = {
    "exceptions": set(),
    "_jit": set(),
    "_threads": set(),
    "_validation": {"_jit", "_threads", "exceptions"},
    "metrics": set(),
    "uncertainty": {"_threads", "_validation"},
    "kernels": {"_validation"},
    "datasets": {"_validation", "exceptions"},
    "certify": {"_validation", "uncertainty", "exceptions"},
    "solvers": {"_jit", "_threads", "_validation", "uncertainty", "kernels", "certify", "exceptions"},
    "evaluation": {"_validation", "uncertainty", "kernels", "certify", "solvers"},
    "formulations": {"_validation", "uncertainty", "kernels", "certify", "solvers", "exceptions"},
    "estimators": {
        "_validation",
        "uncertainty",
        "kernels",
        "datasets",
        "certify",
        "solvers",
        "formulations",
        "exceptions",
    },
    "runner": {"formulations", "certify", "solvers", "exceptions", "__init__"},
    "plotting": {"uncertainty"},
    "cli": {"runner", "problems", "datasets", "exceptions", "__init__"},
    "__init__": {"estimators"},
    "problems": {
        "_validation",
        "uncertainty",
        "kernels",
        "datasets",
        "metrics",
        "certify",
        "solvers",
        "evaluation",
        "formulations",
        "estimators",
        "runner",
        "plotting",
        "exceptions",
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


def test_no_solver_imports_a_formulation():
    """Numerical methods take arrays and operators, never a model: no module under solvers/ imports formulations
    (nor the rooms above it), whatever the ALLOWED table says."""
    above = {"formulations", "estimators", "runner", "cli", "problems"}
    bad = [
        f"{path.relative_to(ROOT)} imports {target}"
        for path, rel, package in _modules()
        if rel[0] == "solvers"
        for target in set(_imports(path, package)) & above
    ]
    assert not bad, "solvers must not import formulations or the rooms above them:\n" + "\n".join(sorted(bad))


#: import cycles still present (sets of modules, dotted under rsvm_conic): the interior point's files, which
#: issue 39 merges into one engine; any other cycle fails
KNOWN_CYCLES: list = []


def _module_graph():
    """``{module: modules it imports}`` over rsvm_conic (dotted, without the package prefix; function-level imports
    included: a cycle through a lazy import is still a cycle of the design)."""
    mods = {}
    for path in (ROOT / "rsvm_conic").rglob("*.py"):
        parts = list(path.relative_to(ROOT / "rsvm_conic").with_suffix("").parts)
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in mods.items():
        package = list(path.relative_to(ROOT / "rsvm_conic").parts[:-1])
        out = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1] + (node.module.split(".") if node.module else [])
                elif node.module and node.module.split(".")[0] == "rsvm_conic":
                    base = node.module.split(".")[1:]
                else:
                    continue
                for alias in node.names:
                    full = ".".join(base + [alias.name])
                    out.add(full if full in mods else ".".join(base))
            elif isinstance(node, ast.Import):
                out.update(a.name.split(".", 1)[1] for a in node.names if a.name.startswith("rsvm_conic."))
        graph[name] = {m for m in out if m in mods and m != name}
    return graph


def _cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

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
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    new = [sorted(c) for c in _cycles(_module_graph()) if c not in KNOWN_CYCLES]
    assert not new, f"import cycles in rsvm_conic: {new}"


def test_certify_imports_only_validation_uncertainty_and_exceptions():
    """The certificate's room stands on its own: a solver, formulation or estimator can use it, never the reverse."""
    bad = [
        f"{m} imports {t}"
        for m, targets in _module_graph().items()
        if m.startswith("certify")
        for t in targets
        if t.split(".")[0] not in {"certify", "_validation", "uncertainty", "exceptions"}
    ]
    assert not bad, bad


def _calls(tree, name):
    """Lines where ``name(...)`` is called (a bare name or an attribute)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if called == name:
                yield node.lineno


def test_one_fallback_chain():
    """``first_certified`` runs only inside ``Formulation.solve("auto")``: estimators never build their own chain."""
    callers = {
        f"{path.relative_to(ROOT)}:{line}"
        for path in (ROOT / "rsvm_conic").rglob("*.py")
        if path.parent.name != "certify"
        for line in _calls(ast.parse(path.read_text(encoding="utf-8")), "first_certified")
    }
    assert len(callers) == 1 and next(iter(callers)).startswith("rsvm_conic/formulations/base.py"), callers


def test_solver_stats_is_assembled_in_one_place():
    """Every estimator stores ``solver_stats_`` as ``certify.contract.solver_stats`` builds it."""
    bad = []
    for path in (ROOT / "rsvm_conic" / "estimators").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Attribute) and t.attr == "solver_stats_" for t in node.targets
            ):
                value = node.value
                if not (isinstance(value, ast.Call) and getattr(value.func, "id", None) == "solver_stats"):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bad, bad


#: formulations whose iterative methods live in solvers/ (they keep builders, routes and certified solutions)
LOOP_FREE_FORMULATIONS = ("kernel_robust.py", "safe.py")


def _iterative_loops(path: Path):
    """Line numbers of ``while`` loops and ``for`` loops over ``range(...)`` (an iteration count) in a file."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        counted = isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and getattr(node.iter.func, "id", "")
        if isinstance(node, ast.While) or counted == "range":
            yield node.lineno


def test_loop_free_formulations_hold_no_iterative_method():
    bad = [
        f"rsvm_conic/formulations/{name}:{line}"
        for name in LOOP_FREE_FORMULATIONS
        for line in _iterative_loops(ROOT / "rsvm_conic" / "formulations" / name)
    ]
    assert not bad, "iterative loops belong in solvers/ (docs/ARCHITECTURE.md):\n" + "\n".join(bad)


def test_the_interior_point_imports_no_other_solver_but_its_exceptions_and_certificates():
    """``solvers/ipm/`` is one room inside ``solvers/``: it imports its own modules and rooms outside ``solvers/``
    (``certify``, ``exceptions``, ...), never another algorithm's module."""
    bad = []
    for name, targets in _module_graph().items():
        if name.startswith("rsvm_conic.solvers.ipm"):
            for t in targets:
                inside = t.startswith("rsvm_conic.solvers.ipm") or not t.startswith("rsvm_conic.solvers")
                if not inside and t.rsplit(".", 1)[1] not in ():
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


def test_the_interior_point_has_one_main_loop():
    """The interior point's iteration exists once (``solvers/ipm/engine.py: interior_point``), for arrays in memory
    and Dask row blocks alike: the stopping test, the centring and step rules and the refinement rule are each used
    by exactly one function of the package (the row-block route is an operator that loop drives)."""
    users: dict = {}
    for path in sorted((ROOT / "rsvm_conic").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for name in ("StoppingTest", "Refinement", "centring", "damped_step"):
                    if any(True for _ in _calls(fn, name)):
                        users.setdefault(name, set()).add(f"{path.relative_to(ROOT).as_posix()}:{fn.name}")
    loop = "rsvm_conic/solvers/ipm/engine.py:interior_point"
    want = {
        "StoppingTest": {loop},
        "Refinement": {"rsvm_conic/solvers/ipm/engine.py:refine_direction"},
        "centring": {loop},
        "damped_step": {loop},
    }
    assert users == want, users
