"""The declared fields of a grid cell's result, checked on every record the results store reuses.

A :class:`~rsvm_conic.runner.GridExperiment` declares what its cell function returns
(``result_fields``): a :class:`Record` of named fields, each a :class:`Number` (with its range, whether
it is an integer and whether NaN is a legitimate value), :class:`Text`, :class:`Flag`, or a container of
them (:class:`ListOf`, :class:`MapOf`, :class:`Maybe` for ``None``, :class:`OneOf` for alternatives).
The results store checks each stored record of the experiment against it: a record that fails (a
``null`` result, a list, a missing field, a string where a number belongs, NaN or a value out of range)
is set aside with the damaged lines and its cell recomputed, so a report never reads it; a freshly
computed result that fails is not stored.

Checks run on the JSON form of a result (what the store holds): numbers are ``int`` or ``float``
(``bool`` is not a number), objects have string keys.
"""

from __future__ import annotations

import json
import math
from typing import Callable, Mapping, Union

__all__ = ["Field", "Flag", "ListOf", "MapOf", "Maybe", "Number", "OneOf", "Record", "Text", "result_problem"]


def _show(value) -> str:
    """A short rendering of a JSON value for a message (NaN as NaN)."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if value is None:
        return "null"
    text = json.dumps(value, default=str, allow_nan=True)
    return text if len(text) <= 60 else text[:57] + "..."


class Field:
    """One declared value: :meth:`problem` says what is wrong with a value, or returns None."""

    def problem(self, value, where: str) -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _wrong(self, value, where: str) -> str:
        return f"{where} is {_show(value)}, expected {self.describe()}"

    def _object_problem(self, value, where: str, required, checks, expected: str = "") -> str | None:
        """The first problem of an object: not a dict, a missing ``required`` key (``expected`` appended), or the
        first of ``checks(value)`` (``(key, Field)`` pairs) whose value fails."""
        if not isinstance(value, dict):
            return self._wrong(value, where)
        missing = [k for k in required if k not in value]
        if missing:
            return f"{where} has no {', '.join(map(repr, missing))}{expected}"
        for key, field in checks(value):
            why = field.problem(value[key], f"{where}[{key!r}]")
            if why is not None:
                return why
        return None


class Number(Field):
    """A finite number in ``[lo, hi]`` (an ``int`` with ``integer=True``); NaN only with ``nan=True``.

    Parameters
    ----------
    lo, hi : float
        Inclusive bounds (default: none).
    integer : bool
        Require an integer (a JSON number without a fraction).
    nan : bool
        Accept NaN (a value the cell leaves undefined on purpose, e.g. an uncertified grid point).
    """

    def __init__(self, lo: float = -math.inf, hi: float = math.inf, *, integer: bool = False, nan: bool = False):
        self.lo, self.hi, self.integer, self.nan = float(lo), float(hi), bool(integer), bool(nan)

    def describe(self) -> str:
        what = "an integer" if self.integer else "a finite number"
        if self.lo > -math.inf and self.hi < math.inf:
            what += f" in [{self.lo:g}, {self.hi:g}]"
        elif self.lo > -math.inf:
            what += f" >= {self.lo:g}"
        elif self.hi < math.inf:
            what += f" <= {self.hi:g}"
        return what + (" or NaN" if self.nan else "")

    def problem(self, value, where: str) -> str | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return self._wrong(value, where)
        if isinstance(value, float):
            if math.isnan(value):
                return None if self.nan else self._wrong(value, where)
            if math.isinf(value) or self.integer:
                return self._wrong(value, where)
        return None if self.lo <= value <= self.hi else self._wrong(value, where)


class Text(Field):
    """A string, one of ``choices`` when any are given.

    Parameters
    ----------
    *choices : str
        The accepted values (default: any string).
    """

    def __init__(self, *choices: str):
        self.choices = tuple(choices)

    def describe(self) -> str:
        return f"one of {', '.join(map(repr, self.choices))}" if self.choices else "a string"

    def problem(self, value, where: str) -> str | None:
        ok = isinstance(value, str) and (not self.choices or value in self.choices)
        return None if ok else self._wrong(value, where)


class Flag(Field):
    """``true`` or ``false``."""

    def describe(self) -> str:
        return "true or false"

    def problem(self, value, where: str) -> str | None:
        return None if isinstance(value, bool) else self._wrong(value, where)


class Maybe(Field):
    """``null`` or a value matching ``field``.

    Parameters
    ----------
    field : Field
        What a value that is not ``null`` must be.
    """

    def __init__(self, field: Field):
        self.field = field

    def describe(self) -> str:
        return f"null or {self.field.describe()}"

    def problem(self, value, where: str) -> str | None:
        return None if value is None else self.field.problem(value, where)


class OneOf(Field):
    """A value matching at least one of ``fields``.

    Parameters
    ----------
    *fields : Field
        The alternatives.
    """

    def __init__(self, *fields: Field):
        self.fields = fields

    def describe(self) -> str:
        return " or ".join(f.describe() for f in self.fields)

    def problem(self, value, where: str) -> str | None:
        if any(f.problem(value, where) is None for f in self.fields):
            return None
        return self._wrong(value, where)


class ListOf(Field):
    """A list whose every item matches ``item`` (of ``length`` items when given).

    Parameters
    ----------
    item : Field
        What every item must be.
    length : int, optional
        The required number of items.
    """

    def __init__(self, item: Field, length: int | None = None):
        self.item, self.length = item, length

    def describe(self) -> str:
        n = f"{self.length} " if self.length is not None else ""
        return f"a list of {n}items, each {self.item.describe()}"

    def problem(self, value, where: str) -> str | None:
        if not isinstance(value, list):
            return self._wrong(value, where)
        if self.length is not None and len(value) != self.length:
            return f"{where} has {len(value)} items, expected {self.length}"
        for k, v in enumerate(value):
            why = self.item.problem(v, f"{where}[{k}]")
            if why is not None:
                return why
        return None


class MapOf(Field):
    """An object whose every value matches ``value``; the ``keys`` given must be present.

    Parameters
    ----------
    value : Field
        What every value must be.
    keys : iterable of str, optional
        Keys that must be present (others are accepted too).
    """

    def __init__(self, value: Field, keys=()):
        self.value, self.keys = value, tuple(keys)

    def describe(self) -> str:
        need = f" with the keys {', '.join(self.keys)}" if self.keys else ""
        return f"an object{need} whose values are each {self.value.describe()}"

    def problem(self, value, where: str) -> str | None:
        return self._object_problem(value, where, self.keys, lambda v: ((k, self.value) for k in v))


class Record(Field):
    """An object with named fields: every one of ``fields`` present and valid; each of ``optional``
    valid when present; other keys are accepted unchecked.

    Parameters
    ----------
    fields : dict of str to Field
        The required fields.
    optional : dict of str to Field, optional
        Fields a result may leave out.
    """

    def __init__(self, fields: Mapping[str, Field], optional: Mapping[str, Field] | None = None):
        self.fields, self.optional = dict(fields), dict(optional or {})

    def describe(self) -> str:
        return f"an object with the fields {', '.join(self.fields)}" if self.fields else "an object"

    def problem(self, value, where: str) -> str | None:
        def checks(v):
            return (*self.fields.items(), *((k, f) for k, f in self.optional.items() if k in v))

        return self._object_problem(value, where, self.fields, checks, f" (expected {self.describe()})")


#: What a GridExperiment declares: one Record for every cell, or a function of the cell giving it.
ResultFields = Union[Record, Callable[[dict], Field]]


def result_problem(result, cell: dict, fields: ResultFields | None) -> str | None:
    """What is wrong with a cell's stored ``result`` against the declared ``fields``.

    With no declaration a result must still be a JSON object (a cell function returns a dict).

    Parameters
    ----------
    result : object
        The stored result (decoded JSON).
    cell : dict
        The cell, for declarations that depend on it.
    fields : Record, callable or None
        The experiment's declared result fields, or a function of the cell giving them.

    Returns
    -------
    str or None
        A one-line description of the first problem, or None when the result passes.
    """
    if fields is None:
        return None if isinstance(result, dict) else f"result is {_show(result)}, expected an object"
    spec = fields if isinstance(fields, Field) else fields(cell)
    return spec.problem(result, "result")
