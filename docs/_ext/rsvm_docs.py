"""Sphinx helpers of the rsvm-conic site.

``.. rsvm-backends:: rsvm_conic.formulations.robust.RobustSVM`` renders the class's ``BACKENDS`` table (route
name -> what it is and its certificate), read from the code at build time so the page cannot drift from it.
"""

from __future__ import annotations

import importlib

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


def setup(app):
    app.add_directive("rsvm-backends", BackendsTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
