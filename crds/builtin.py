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

The table is loaded once, on the first check, and turned into nested Python objects
(:func:`_loaded`); :func:`reference_check` walks them, one generic step per value.

Why a second, compiled path: that walk cost about 7 us per pod, 0.15 s over the 36,691
objects of the 1,000-node / 20,000-pod snapshot, which pushed ``podmuster schedule`` on it
past its 2 s wall target (issue 20). Almost every object read is valid, so :func:`check`
first asks a yes/no predicate specialised per object type: Python source written for a type
at the first object that needs it (:class:`_Compiler`) and compiled once. It makes one pass
over an object's items, dispatching each on its value's exact type to a test that also
refuses an unknown field: a ``str`` value costs one set membership; a map or list field an
``if k == "field"`` with its check inline (a few object types deep) or one table look-up and
a call. Only when the predicate says no does the reference walk run, to find the first
problem and word it, so messages and field paths come from one place.

The predicate is exact, not merely safe: a value of a type it does not know by heart (a
``datetime`` from YAML, a ``str`` or ``dict`` subclass) is handed to the reference walk, so
an odd but valid object is not refused, only slower. tests/crds/test_builtin_fast_path.py
holds both to the same answer on every field of every type with every type of value, and
on random mutations of valid objects.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Mapping
from datetime import date
from pathlib import Path
from typing import Any, Final

from crds.errors import shown

__all__ = ["check", "kinds", "reference_check"]

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
    ``(path, message)``, or None (also for a kind this module does not know).

    The same answer as :func:`reference_check`, which only runs when the compiled
    predicate of the object's kind finds something wrong."""
    passes = (_PASSES or _predicates()).get(f"{obj.get('apiVersion')}/{obj.get('kind')}")
    if passes is None or (type(obj) is dict and passes(obj)):
        return None
    return reference_check(obj)


def reference_check(obj: Mapping[str, Any]) -> tuple[list[str | int], str] | None:
    """:func:`check` by the table walk alone: the first problem, its path and message."""
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


# The compiled predicates ------------------------------------------------------------------

Predicate = Callable[[Any], bool]


def _ok(value: Any, kind: Any) -> bool:
    """The reference answer for one value: what a predicate does with a value of a type it
    does not know by heart (a date, a subclass), so that it stays exact."""
    return _problem(value, kind) is None


def _yes(value: Any) -> bool:
    return True


_EXACT: Final[dict[str, frozenset[type]]] = {
    **{code: frozenset(accepted) for code, (accepted, _) in _SCALARS.items()},
    _ANY: frozenset({str, int, float, bool}),
}
"""The exact types (JSON's and YAML's) a field of each scalar code takes as they come; a value
of another type (null aside) goes to :func:`_ok`."""

_INLINE: Final = 8
"""An object type with at most this many fields that take a map or a list has their checks
inline, behind ``if k == "field"`` tests; one with more (PodSpec, Container) looks the
field's predicate up in a table and calls it."""

_DEPTH: Final = 4
"""How many object types deep one function inlines (deeper: a call)."""


class _Compiler:
    """Writes and compiles one predicate per object type, at the first object of that type.

    Every object type has a name ``o<N>`` in one namespace, bound at first to a stub that
    compiles the type's source, rebinds the name and every dispatch table holding the stub,
    and answers; so only the types of the objects seen are compiled (the Pod alone reaches
    135 types, the table 275; a snapshot's first Pod and first Node cost about 5 ms). A
    predicate takes a value whose exact type is the container its kind takes (a ``dict``
    for an object or a map, a ``list`` for a list) and says whether :func:`_problem` would
    find nothing in it.
    """

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {"_ok": _ok, "_yes": _yes}
        self.names: dict[int, str] = {}  # id(object type) -> its predicate's name
        self.kinds: dict[int, str] = {}  # id(kind) -> its name as a constant
        self.helpers: dict[str, str] = {}  # a list or map kind's shape -> its predicate's name
        self.stubs: dict[str, list[tuple[dict[str, Predicate], str]]] = {}  # -> tables with it
        self.lock = threading.RLock()
        self.serial = 0

    def constant(self, value: Any, prefix: str) -> str:
        """A new name for ``value`` (a set of fields, a table, a kind) in the namespace."""
        name = f"{prefix}{self.fresh()}"
        self.namespace[name] = value
        return name

    def kind_constant(self, kind: Any) -> str:
        name = self.kinds.get(id(kind))
        if name is None:
            name = self.kinds[id(kind)] = self.constant(kind, "K")
        return name

    def fresh(self) -> int:
        self.serial += 1
        return self.serial

    def predicate(self, kind: Any) -> Predicate:
        """The predicate of ``kind`` (an object, list or map kind, or ``x``)."""
        if kind == _ANY or (isinstance(kind, _List | _Map) and _inner(kind) == _ANY):
            return _yes
        name = self.object_name(kind) if isinstance(kind, _Object) else self.helper_name(kind)
        function: Predicate = self.namespace[name]
        return function

    def use(self, table: dict[str, Predicate], key: str, kind: Any) -> None:
        """``table[key] = predicate(kind)``, rebound when that predicate is compiled."""
        table[key] = function = self.predicate(kind)
        waiting = self.stubs.get(function.__name__)
        if waiting is not None:
            waiting.append((table, key))

    def object_name(self, kind: _Object) -> str:
        name = self.names.get(id(kind))
        if name is None:
            name = self.names[id(kind)] = f"o{len(self.names)}"
            self.lazy(name, lambda: self.object_block(kind, "d", 1, (kind,)))
        return name

    def helper_name(self, kind: _List | _Map) -> str:
        shape = _shape(kind)
        name = self.helpers.get(shape)
        if name is None:
            name = self.helpers[shape] = f"h{len(self.helpers)}"
            self.lazy(name, lambda: self.container_block(kind, "d", 1, ()))
        return name

    def lazy(self, name: str, body: Callable[[], list[str]]) -> None:
        """Bind ``name`` to a stub that compiles ``def name(d): body`` at its first call,
        then rebinds the name and every table holding the stub to the compiled function."""

        def stub(value: Any) -> bool:
            with self.lock:
                if name in self.stubs:  # not compiled by another thread meanwhile
                    self.run(name, body())
                    for table, key in self.stubs.pop(name):
                        table[key] = self.namespace[name]
                compiled: Predicate = self.namespace[name]
            return compiled(value)

        stub.__name__ = name
        self.namespace[name] = stub
        self.stubs[name] = []

    def run(self, name: str, body: list[str]) -> None:
        source = "\n".join([f"def {name}(d):", *_indent(body), "    return True", ""])
        exec(compile(source, f"<crds.builtin {name}>", "exec"), self.namespace)

    def object_block(
        self, kind: _Object, d: str, depth: int, stack: tuple[_Object, ...]
    ) -> list[str]:
        """Lines that return False unless the dict named ``d`` is a valid ``kind``.

        One pass over its items, each dispatched on its value's exact type to a test that
        also refuses an unknown field (every set and table holds known fields only), so the
        reference walk's key-set comparison is not needed here."""
        n = self.fresh()
        k, v, t = f"k{n}", f"v{n}", f"t{n}"
        scalars: dict[type, set[str]] = {str: set(), int: set(), bool: set(), float: set()}
        dicts: dict[str, Any] = {}
        lists: dict[str, Any] = {}
        for field, sub in kind.fields.items():
            if isinstance(sub, str):
                for scalar, fields in scalars.items():
                    if scalar in _EXACT[sub]:
                        fields.add(field)
            if sub == _ANY or isinstance(sub, _Object | _Map):
                dicts[field] = sub
            if sub == _ANY or isinstance(sub, _List):
                lists[field] = sub
        inline = len(dicts) + len(lists) <= _INLINE and depth < _DEPTH
        known = self.constant(kind.fields, "F")
        branches = [
            (f"{t} is str", self.member(k, scalars[str])),
            (f"{t} is dict", self.dispatch(dicts, k, v, inline, depth, stack)),
            (f"{t} is list", self.dispatch(lists, k, v, inline, depth, stack)),
            (f"{v} is None", self.member(k, set(kind.fields))),
            *((f"{t} is {s.__name__}", self.member(k, scalars[s])) for s in (int, bool, float)),
            (f"{k} not in {known} or not _ok({v}, {known}[{k}])", ["return False"]),
        ]
        lines = [f"for {k}, {v} in {d}.items():", f"    {t} = type({v})"]
        for index, (test, body) in enumerate(branches):
            lines += _indent([f"{'if' if index == 0 else 'elif'} {test}:", *_indent(body)])
        return lines

    def member(self, k: str, fields: set[str]) -> list[str]:
        if not fields:
            return ["return False"]
        return [f"if {k} not in {self.constant(frozenset(fields), 'S')}:", "    return False"]

    def dispatch(
        self,
        fields: dict[str, Any],
        k: str,
        v: str,
        inline: bool,
        depth: int,
        stack: tuple[_Object, ...],
    ) -> list[str]:
        """Lines that return False unless ``v`` (a dict or a list, as ``fields`` take) is
        valid as the field named ``k``."""
        if not fields:
            return ["return False"]
        if inline:
            lines: list[str] = []
            for index, (field, sub) in enumerate(fields.items()):
                lines.append(f"{'if' if index == 0 else 'elif'} {k} == {field!r}:")
                lines += _indent(self.container_block(sub, v, depth, stack) or ["pass"])
            return [*lines, "else:", "    return False"]
        table: dict[str, Predicate] = {}
        for field, sub in fields.items():
            self.use(table, field, sub)
        return [
            f"f = {self.constant(table, 'T')}.get({k})",
            f"if f is None or not f({v}):",
            "    return False",
        ]

    def container_block(
        self, kind: Any, v: str, depth: int, stack: tuple[_Object, ...]
    ) -> list[str]:
        """Lines that return False unless ``v`` (a dict or a list, as ``kind`` takes) is a
        valid ``kind``."""
        if kind == _ANY:
            return []
        if isinstance(kind, _Object):
            if kind in stack or depth + 1 >= _DEPTH:
                return [f"if not {self.object_name(kind)}({v}):", "    return False"]
            return self.object_block(kind, v, depth + 1, (*stack, kind))
        inner = _inner(kind)
        if inner == _ANY:
            return []
        x = f"x{self.fresh()}"
        loop = f"for {x} in {v}:" if isinstance(kind, _List) else f"for {x} in {v}.values():"
        return [loop, *_indent(self.item(inner, x, depth, stack))]

    def item(self, kind: Any, x: str, depth: int, stack: tuple[_Object, ...]) -> list[str]:
        """Lines that return False unless ``x`` (an item of a list or map) is a ``kind``."""
        where = self.kind_constant(kind)
        if isinstance(kind, str):
            exact = self.constant(frozenset({*_EXACT[kind], type(None)}), "E")
            return [f"if type({x}) not in {exact} and not _ok({x}, {where}):", "    return False"]
        container = "list" if isinstance(kind, _List) else "dict"
        return [
            f"if type({x}) is {container}:",
            *_indent(self.container_block(kind, x, depth, stack) or ["pass"]),
            f"elif {x} is not None and not _ok({x}, {where}):",
            "    return False",
        ]


def _indent(lines: list[str], levels: int = 1) -> list[str]:
    return ["    " * levels + line for line in lines]


def _inner(kind: _List | _Map) -> Any:
    return kind.item if isinstance(kind, _List) else kind.value


def _shape(kind: Any) -> str:
    """A kind's structure, to share one predicate between equal list and map kinds."""
    if isinstance(kind, _List):
        return f"l({_shape(kind.item)})"
    if isinstance(kind, _Map):
        return f"m({_shape(kind.value)})"
    if isinstance(kind, _Object):
        return f"#{id(kind)}"
    return str(kind)


_PASSES: dict[str, Predicate] = {}
""":func:`_predicates` once built, read by :func:`check` without a call (one per object)."""


@functools.cache
def _predicates() -> dict[str, Predicate]:
    """``apiVersion/Kind`` -> the compiled predicate of its root type (compiled lazily)."""
    global _PASSES
    compiler = _Compiler()
    roots: dict[str, Predicate] = {}
    for key, root in _loaded()[0].items():
        if isinstance(root, _Object):
            compiler.use(roots, key, root)
        else:
            roots[key] = functools.partial(_ok, kind=root)
    _PASSES = roots  # whole, or not at all, for a thread reading it meanwhile
    return roots
