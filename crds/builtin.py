"""Strict field validation of Kubernetes' own kinds (Pod, Node, PriorityClass, Job, ...).

Why: the command-line contract checks every object on input as the API server checks it
with strict field validation. KAI's kinds go through their pydantic models; the built-in
kinds we read are checked here against the API server's own field table
(``builtin_schemas.json``, written by :mod:`crds.builtin_gen` from the OpenAPI document of
the Kubernetes release the project is tested on). A misspelt ``spec.unschedulabel`` or
``priorityClasName`` would otherwise be dropped without a word and change the decision.

What is checked, as strict decoding does: an unknown field; a value of the wrong JSON type
(a string for an integer, a number for a string, a list for an object); ``null`` is accepted
anywhere, as the API server accepts it. Values (quantities, names, enums) are left to the
readers that use them, which name the field too.

The table is loaded once, on the first check, and turned into nested Python objects so a
check is a few C-level operations per field (a key-set comparison per object).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any, Final

from crds.errors import shown

__all__ = ["check", "kinds"]

_TABLE: Final = Path(__file__).resolve().parent / "builtin_schemas.json"


class _Object:
    """An object type: its fields' names (a set, for one subset test) and types."""

    __slots__ = ("allowed", "fast", "fields")

    def __init__(self) -> None:
        self.allowed: frozenset[str] = frozenset()
        self.fields: dict[str, Any] = {}
        self.fast: dict[str, tuple[type, ...]] = {}  # scalar field -> the types passed at once


class _List:
    __slots__ = ("item",)

    def __init__(self, item: Any) -> None:
        self.item = item


class _Map:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


# scalar codes -> (accepted Python types, what the error calls it)
_SCALARS: Final[dict[str, tuple[tuple[type, ...], str]]] = {
    "s": ((str,), "a string"),
    "i": ((int,), "an integer"),
    "n": ((int, float), "a number"),
    "b": ((bool,), "true or false"),
    "q": ((str, int, float), "a quantity (a string or a number)"),
    "is": ((int, str), "an integer or a string"),
    "t": ((str, date), "an RFC 3339 date-time string"),
}
_ANY: Final = "x"
_FAST: Final[dict[str, tuple[type, ...]]] = {
    **{code: (*accepted, type(None)) for code, (accepted, _) in _SCALARS.items()},
    _ANY: (str, int, float, bool, dict, list, type(None)),
}
"""The exact types a field of each scalar code takes without a closer look (the common case
costs one dictionary look-up and one tuple test; anything else goes to :func:`_problem`)."""


@functools.cache
def _loaded() -> tuple[dict[str, Any], str]:
    """``apiVersion/Kind`` -> its root type, and the Kubernetes release of the table."""
    raw = json.loads(_TABLE.read_text())
    definitions: dict[str, Any] = raw["definitions"]
    built: dict[str, Any] = {}

    def resolve(code: Any) -> Any:
        if isinstance(code, str):
            if code.startswith("#"):
                return definition(code[1:])
            return code
        if isinstance(code, list):
            return _List(resolve(code[1])) if code[0] == "l" else _Map(resolve(code[1]))
        return code

    def definition(name: str) -> Any:
        found = built.get(name)
        if found is not None:
            return found
        code = definitions[name]
        if not isinstance(code, dict):
            built[name] = resolved = resolve(code)
            return resolved
        target = built[name] = _Object()  # registered first: definitions refer to themselves
        target.fields = {field: resolve(sub) for field, sub in code.items()}
        target.allowed = frozenset(target.fields)
        target.fast = {
            field: _FAST[sub] for field, sub in target.fields.items() if isinstance(sub, str)
        }
        return target

    roots = {kind: definition(name) for kind, name in raw["kinds"].items()}
    return roots, str(raw["kubernetes"])


def kinds() -> frozenset[str]:
    """The ``apiVersion/Kind`` of every built-in kind checked here."""
    return frozenset(_loaded()[0])


def check(obj: Mapping[str, Any]) -> tuple[list[str | int], str] | None:
    """The first field of ``obj`` the API server's strict decoding would refuse, as
    ``(path, message)``, or None (also for a kind this module does not know)."""
    roots, release = _loaded()
    root = roots.get(f"{obj.get('apiVersion')}/{obj.get('kind')}")
    if root is None:
        return None
    found = _problem(obj, root)
    if found is None:
        return None
    message, path = found
    if message == _UNKNOWN:
        message = f"unknown field (not in the Kubernetes {release} API)"
    return path[::-1], message


_UNKNOWN: Final = "unknown field"


def _problem(value: Any, kind: Any) -> tuple[str, list[str | int]] | None:
    """``(message, reversed path)`` of the first problem of ``value`` as ``kind``, or None."""
    if value is None or kind == _ANY:
        return None
    if isinstance(kind, str):
        accepted, called = _SCALARS[kind]
        if type(value) in accepted or (isinstance(value, accepted) and type(value) is not bool):
            return None
        return f"expected {called}, got {shown(value)}", []
    if isinstance(kind, _Object):
        if not isinstance(value, dict):
            return f"expected a map, got {shown(value)}", []
        if not value.keys() <= kind.allowed:
            return _UNKNOWN, [min(str(key) for key in value.keys() - kind.allowed)]
        fields, fast = kind.fields, kind.fast
        for key, sub in value.items():
            passed = fast.get(key)
            if passed is not None and type(sub) in passed:
                continue
            found = _problem(sub, fields[key])
            if found is not None:
                found[1].append(key)
                return found
        return None
    if isinstance(kind, _List):
        if not isinstance(value, list):
            return f"expected a list, got {shown(value)}", []
        item = kind.item
        for index, sub in enumerate(value):
            found = _problem(sub, item)
            if found is not None:
                found[1].append(index)
                return found
        return None
    inner = kind.value
    if not isinstance(value, dict):
        called = "a map of strings" if inner == "s" else "a map"
        return f"expected {called}, got {shown(value)}", []
    for key, sub in value.items():
        found = _problem(sub, inner)
        if found is not None:
            # a resource list's key reads as a field (requests.cpu), as the pod reader names
            # it; any other map's key is bracketed (labels[a.b/c]), as the metadata checks do
            found[1].append(str(key) if inner == "q" else f"[{key}]")
            return found
    return None
