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
