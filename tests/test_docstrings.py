"""Every public estimator and problem builder documents its parameters (numpydoc ``Parameters``) and every
estimator its fitted attributes (numpydoc ``Attributes``), and the documented names match the signature."""

import inspect
import re

import pytest

import rsvm_conic
import rsvm_conic.estimators as estimators
import rsvm_conic.formulations as formulations

_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_][\w]*(?:\s*,\s*\*{0,2}[A-Za-z_][\w]*)*)\s*(?::|$)")


def sections(doc: str) -> dict:
    """numpydoc sections of a dedented docstring: title -> names documented at column 0."""
    lines = doc.splitlines()
    out, title = {}, None
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        underlined = set(nxt.strip()) == {"-"} and len(nxt.strip()) >= len(line.strip())
        if line.strip() and underlined and not line[:1].isspace():
            title = line.strip()
            out[title] = []
            continue
        if title is None or set(line.strip()) == {"-"} or not line or line[:1].isspace():
            continue
        m = _ENTRY.match(line)
        if m:
            out[title] += [name.strip().lstrip("*") for name in m.group(1).split(",")]
    return out


def _documented_params(obj):
    target = obj.__init__ if inspect.isclass(obj) else obj
    return [
        p.name
        for p in inspect.signature(target).parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


ESTIMATORS = [getattr(estimators, name) for name in estimators.__all__]
BUILDERS = [getattr(formulations, name) for name in formulations.__all__ if name not in ("Formulation", "Solution")]


def test_sections_parser():
    doc = (
        "Title.\n\nParameters\n----------\nX, y : array\n    data.\nC : float\n\n"
        "Attributes\n----------\ncoef_ : array\n"
    )
    assert sections(doc) == {"Parameters": ["X", "y", "C"], "Attributes": ["coef_"]}


def _documenting_class(obj):
    """A builder function documents its parameters on the class it returns (one home); a class on itself."""
    if inspect.isclass(obj):
        return obj
    returned = inspect.signature(obj).return_annotation
    cls = getattr(formulations, returned, None) if isinstance(returned, str) else returned
    assert inspect.isclass(cls), f"builder {obj.__name__} must annotate the formulation class it returns"
    assert f":class:`{cls.__name__}`" in (inspect.getdoc(obj) or ""), (
        f"{obj.__name__}'s docstring must point to :class:`{cls.__name__}` for its parameters"
    )
    return cls


@pytest.mark.parametrize("obj", ESTIMATORS + BUILDERS, ids=lambda o: o.__name__)
def test_parameters_documented(obj):
    cls = _documenting_class(obj)
    documented = sections(inspect.getdoc(cls) or "").get("Parameters")
    assert documented is not None, f"{cls.__name__} has no numpydoc 'Parameters' section"
    expected = _documented_params(obj)
    missing = [p for p in expected if p not in documented]
    assert not missing, f"{obj.__name__}: parameters not documented: {missing}"
    if cls is obj:
        target = obj.__init__ if inspect.isclass(obj) else obj
        star = [
            p.name for p in inspect.signature(target).parameters.values() if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        extra = [p for p in documented if p not in expected + star]
        assert not extra, f"{obj.__name__}: documented but not in the signature: {extra}"


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda o: o.__name__)
def test_estimator_attributes_documented(est):
    attrs = sections(inspect.getdoc(est) or "").get("Attributes")
    assert attrs, f"{est.__name__} has no numpydoc 'Attributes' section"
    assert all(a.endswith("_") for a in attrs), f"{est.__name__}: fitted attributes end with '_': {attrs}"
    assert "classes_" in attrs, f"{est.__name__}: document classes_ among the fitted attributes"


@pytest.mark.parametrize("name", __import__("rsvm_conic.solvers.multiclass", fromlist=["x"]).__all__)
def test_multiclass_solvers_document_their_parameters(name):
    """The Weston-Watkins solvers' public functions have numpydoc Parameters and Returns matching the signature."""
    import rsvm_conic.solvers.multiclass as ww

    fn = getattr(ww, name)
    fn = getattr(fn, "py_func", fn)  # a compiled epoch documents its Python function
    doc = sections(inspect.getdoc(fn) or "")
    assert "Returns" in doc, f"{name} has no numpydoc 'Returns' section"
    assert doc.get("Parameters") == _documented_params(fn), f"{name}: Parameters differ from the signature"


def test_every_estimator_importable_from_the_package():
    for name in estimators.__all__:
        assert getattr(rsvm_conic, name) is getattr(estimators, name)
    assert set(estimators.__all__) <= set(rsvm_conic.__all__)


def test_one_version_string():
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("rsvm-conic")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        pytest.skip("rsvm-conic is not installed")
    assert installed == rsvm_conic.__version__


# Every public function and class of these rooms has numpydoc sections: ``Parameters`` naming each of its
# parameters (when it takes any) and ``Returns`` (``Yields`` for a generator) when it returns a value.  A room is
# a package (its modules, private ones included, are walked) or a module.  A compiled (numba) function documents
# its Python function; its numpy twin is documented there too (one home), and has the same signature
# (``test_numpy_twins_share_their_compiled_signature``).  ``formulations`` leaves out hyperbolic.py,
# whose numpydoc sections are still to be written.
NUMPYDOC_ROOMS = {
    "uncertainty": "rsvm_conic.uncertainty",
    "kernels": "rsvm_conic.kernels",
    "datasets": "rsvm_conic.datasets",
    "runner": "rsvm_conic.runner",
    "evaluation": "rsvm_conic.evaluation",
    "estimators": "rsvm_conic.estimators",
    "metrics": "rsvm_conic.metrics",
    "plotting": "rsvm_conic.plotting",
    "cli": "rsvm_conic.cli",
    "_validation": "rsvm_conic._validation",
    "_threads": "rsvm_conic._threads",
    "_jit": "rsvm_conic._jit",
    "package": "rsvm_conic",
    "problems": ("rsvm_conic.problems", "rsvm_conic.problems._reproduction", "rsvm_conic.problems._bench"),
    "solvers": "rsvm_conic.solvers",
    "certify": "rsvm_conic.certify",
    "formulations": tuple(
        f"rsvm_conic.formulations.{name}"
        for name in ("base", "_linear", "chance", "feature_robust", "kernel_robust", "multiclass_ww", "nominal")
        + ("robust", "safe", "hyperbolic")
    )
    + ("rsvm_conic.formulations",),
}


def _room_modules(spec):
    import importlib
    import pkgutil

    names = spec if isinstance(spec, tuple) else (spec,)
    for name in names:
        mod = importlib.import_module(name)
        yield mod
        if isinstance(spec, str) and name != "rsvm_conic" and hasattr(mod, "__path__"):
            for info in pkgutil.walk_packages(mod.__path__, name + "."):
                yield importlib.import_module(info.name)


def _compiled_twins(spec):
    """``{id(numpy twin): compiled function}`` of the room's compiled functions that have a numpy twin."""
    from rsvm_conic import _jit

    _room_modules(spec)  # imported, so their compiled functions are registered
    # from the registry, not the modules' names: once a module has run compiled code its names are numba's
    # dispatchers, which keep no twin (the test then depended on which tests ran before it)
    return {id(obj.numpy): obj for obj in _jit._ALL if obj.numpy is not None}


def public_objects(spec):
    """(qualified name, object) of every public function and class defined in the room's modules: a compiled
    function as its Python function; a numpy twin not (its compiled function documents both)."""
    from rsvm_conic._jit import Compiled

    twins = _compiled_twins(spec)
    for mod in _room_modules(spec):
        for name, obj in vars(mod).items():
            obj = obj.py_func if isinstance(obj, Compiled) else obj
            if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)) or id(obj) in twins:
                continue
            if getattr(obj, "__module__", None) == mod.__name__:
                yield f"{mod.__name__}.{name}", obj


def _named_params(obj):
    """The parameters a caller names: the signature's, without ``self``, ``*args`` and ``**kwargs``."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):  # a class whose constructor has no inspectable signature
        return []
    return [p.name for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _returns(func):
    """``"Yields"`` for a generator, ``"Returns"`` if the function's own body returns a value, else None."""
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError):
        return None
    node = tree.body[0]
    todo, found = list(node.body), None
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(n, (ast.Yield, ast.YieldFrom)):
            return "Yields"
        if isinstance(n, ast.Return) and n.value is not None:
            if not (isinstance(n.value, ast.Constant) and n.value.value is None):
                found = "Returns"
        todo.extend(ast.iter_child_nodes(n))
    return found


def numpydoc_problems(qualname, obj):
    """What ``obj``'s docstring lacks, as messages (empty when its numpydoc sections are complete)."""
    doc = sections(inspect.getdoc(obj) or "")
    out = []
    params = _named_params(obj)
    if params:
        documented = doc.get("Parameters", []) + (doc.get("Attributes", []) if inspect.isclass(obj) else [])
        if "Parameters" not in doc and not (inspect.isclass(obj) and "Attributes" in doc):
            out.append(f"{qualname}: no 'Parameters' section")
        elif missing := [p for p in params if p not in documented]:
            out.append(f"{qualname}: parameters not documented: {missing}")
    if inspect.isfunction(obj):
        kind = _returns(obj)
        if kind and kind not in doc:
            out.append(f"{qualname}: returns a value but has no '{kind}' section")
    return out


def test_numpydoc_check_catches_a_bare_docstring():
    def bare(x, *, scale=1.0):
        """Scaled x."""
        return scale * x

    def documented(x, *, scale=1.0):
        """Scaled x.

        Parameters
        ----------
        x, scale : float
            The value and its factor.

        Returns
        -------
        float
        """
        return scale * x

    def gen(n):
        """Counts.

        Parameters
        ----------
        n : int
        """
        yield from range(n)

    assert numpydoc_problems("bare", bare) == [
        "bare: no 'Parameters' section",
        "bare: returns a value but has no 'Returns' section",
    ]
    assert numpydoc_problems("documented", documented) == []
    assert numpydoc_problems("gen", gen) == ["gen: returns a value but has no 'Yields' section"]


@pytest.mark.parametrize("room", sorted(NUMPYDOC_ROOMS))
def test_public_api_has_numpydoc_sections(room):
    problems = [msg for q, obj in public_objects(NUMPYDOC_ROOMS[room]) for msg in numpydoc_problems(q, obj)]
    assert not problems, f"{len(problems)} numpydoc gaps in room {room}:\n" + "\n".join(problems)


@pytest.mark.parametrize("room", sorted(NUMPYDOC_ROOMS))
def test_numpy_twins_share_their_compiled_signature(room):
    """A numpy twin is documented by its compiled function: the same parameters, and a docstring naming it."""
    twins = _compiled_twins(NUMPYDOC_ROOMS[room])
    for compiled in twins.values():
        twin, name = compiled.numpy, compiled.py_func.__name__
        assert inspect.signature(twin) == inspect.signature(compiled.py_func), f"{name}: the twins' signatures differ"
        assert f":func:`.{compiled.py_func.__module__.rsplit('.', 1)[1]}.{name}`" in (inspect.getdoc(twin) or ""), (
            f"{twin.__module__}.{name}'s docstring must point to its compiled twin"
        )
