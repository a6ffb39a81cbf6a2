"""Sphinx helpers of the rsvm-conic site.

``.. rsvm-backends:: rsvm_conic.formulations.robust.RobustProblem`` renders the class's ``BACKENDS`` table (route
name -> what it is and its certificate), read from the code at build time so the page cannot drift from it.

The API reference's autodoc / napoleon settings (:data:`API_EXTENSIONS`, :data:`API_CONFIG`) and its hooks live
here, so that ``docs/conf.py`` and ``tests/test_docs_api.py`` (which builds the estimators page) use the same ones:

* every estimator page shows ``fit``, ``predict``, ``decision_function`` and ``score`` (:data:`ESTIMATOR_METHODS`),
  also where they are inherited (``:inherited-members:`` on ``docs/api/estimators.md``) or have no docstring of
  their own; other members inherited from scikit-learn or Python (``get_params``, ``set_*_request``, an
  exception's ``with_traceback``) are left out;
* fitted attributes keep their trailing underscore (``coef_``: napoleon escapes it when
  ``strip_signature_backslash`` is on; without it reStructuredText reads ``coef_`` as a link to "coef"), and a
  numpydoc entry naming several attributes (``coef_, intercept_ : ...``) becomes one entry per attribute;
* scikit-learn's own docstrings (``score``, ``predict``) cite its glossary and user guide, which this site does not
  have: those references are rendered as plain text.
"""

from __future__ import annotations

import importlib
import re

from docutils import nodes
from docutils.parsers.rst import Directive


def _import(path: str):
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


class BackendsTable(Directive):
    required_arguments = 1

    def run(self):
        cls = _import(self.arguments[0])
        table = nodes.table()
        group = nodes.tgroup(cols=2)
        table += group
        group += nodes.colspec(colwidth=1)
        group += nodes.colspec(colwidth=4)
        head = nodes.thead()
        group += head
        row = nodes.row()
        for title in ("backend", "method; certificate"):
            row += nodes.entry("", nodes.paragraph(text=title))
        head += row
        body = nodes.tbody()
        group += body
        for name, text in cls.BACKENDS.items():
            row = nodes.row()
            row += nodes.entry("", nodes.paragraph("", "", nodes.literal(text=name)))
            row += nodes.entry("", nodes.paragraph(text=text))
            body += row
        caption = f"{cls.__name__}.BACKENDS (read from the code at build time; the first is tried first by 'auto')"
        return [nodes.paragraph(text=caption), table]


#: the extensions the API reference needs
API_EXTENSIONS = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
#: the API reference's settings
API_CONFIG = {
    "autodoc_default_options": {"members": True, "member-order": "bysource", "show-inheritance": True},
    "autodoc_typehints": "none",
    "autodoc_inherit_docstrings": False,  # scikit-learn's inherited docstrings cite its own glossary
    "napoleon_google_docstring": False,
    "napoleon_numpy_docstring": True,
    "napoleon_use_rtype": False,
    "napoleon_use_ivar": True,
    "strip_signature_backslash": True,  # napoleon then escapes a trailing underscore: coef_, not a link "coef"
}
#: the methods every estimator page shows, inherited or not, with or without a docstring of their own
ESTIMATOR_METHODS = frozenset({"fit", "predict", "decision_function", "score", "predict_proba"})


def _defined_in(obj) -> str:
    """The module that defines a function or method descriptor ('' for other objects)."""
    owner = getattr(obj, "__objclass__", None)
    if owner is not None:
        return getattr(owner, "__module__", None) or ""
    return (getattr(obj, "__module__", None) or "") if callable(obj) else ""


def skip_member(app, what, name, obj, skip, options):
    """``autodoc-skip-member``: keep :data:`ESTIMATOR_METHODS`; skip scikit-learn's generated ``set_*_request``
    methods and other callables defined outside the package (inherited plumbing)."""
    if what not in ("class", "exception"):
        return None
    if name.startswith("set_") and name.endswith("_request"):
        return True
    if name in ESTIMATOR_METHODS:
        return False
    module = _defined_in(obj)
    if module and not module.startswith("rsvm_conic"):
        return True
    return None


_ROLE = re.compile(r":(ref|term|class|func|meth|attr|mod|obj):`([^`<]*?)\s*(?:<[^>`]*>)?`")


def _plain_role(match) -> str:
    text = match.group(2).strip().lstrip("~")
    if match.group(1) in ("ref", "term"):
        return text
    return f"``{text.rsplit('.', 1)[-1] if match.group(2).strip().startswith('~') else text}``"


def process_docstring(app, what, name, obj, options, lines):
    """``autodoc-process-docstring``, before napoleon: one Attributes entry per attribute name; scikit-learn's
    cross-references as plain text."""
    if _defined_in(obj).startswith("sklearn"):
        lines[:] = [_ROLE.sub(_plain_role, line) for line in lines]
    out, in_attributes = [], False
    for i, line in enumerate(lines):
        underline = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if line.strip() and set(underline) == {"-"} and not line.startswith(" "):
            in_attributes = line.strip() == "Attributes"
        elif in_attributes and line and not line[0].isspace() and "," in line.split(" : ")[0]:
            names, sep, rest = line.partition(" : ")
            if not sep and names.rstrip().endswith(":"):
                names, rest = names.rstrip()[:-1], ""
            entries = [n.strip() for n in names.split(",") if n.strip()]
            if all(re.fullmatch(r"\w+", n) for n in entries):
                desc = _description(lines, i)
                for n in entries[:-1]:
                    out += [f"{n} : {rest}".rstrip(), *desc]
                out.append(f"{entries[-1]} : {rest}".rstrip())
                continue
        out.append(line)
    lines[:] = out


def _description(lines, i) -> list[str]:
    """The indented description lines that follow entry ``i``."""
    desc = []
    for line in lines[i + 1 :]:
        if line and not line[0].isspace():
            break
        desc.append(line)
    while desc and not desc[-1].strip():
        desc.pop()
    return desc


def setup(app):
    app.add_directive("rsvm-backends", BackendsTable)
    app.connect("autodoc-skip-member", skip_member)
    app.connect("autodoc-process-docstring", process_docstring, priority=400)  # napoleon's runs at 500
    return {"parallel_read_safe": True, "parallel_write_safe": True}
