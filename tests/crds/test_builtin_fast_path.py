"""The compiled fast path of the strict check answers as the reference table walk does.

Why: :func:`crds.builtin.check` asks a predicate compiled per object type (Python source
written from the field table) whether an object is valid, and only walks the table
(:func:`crds.builtin.reference_check`) to word a problem. If the two drifted, an object the
API server refuses would pass without a word, or a valid one would be refused. So on every
field of every object type each built-in kind reaches, with values of every JSON type and
the odd types YAML and callers give (dates, subclasses, tuples), and on random valid
objects drawn from the table and then mutated (unknown keys, wrong types, nulls, nested lists
and maps), both must give the same answer, and the predicate must say yes exactly when the
walk finds nothing.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import generate
from crds import builtin
from tests.crds.test_builtin_schemas import _POD


class _Str(str):
    pass


class _Int(int):
    pass


_ODD: list[Any] = [
    dt.date(2026, 1, 1),
    dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    _Str("a"),
    _Int(3),
    (1, "a"),
    OrderedDict(a="b"),
    b"x",
    {1: "a"},
]
"""Values of types the predicates leave to the reference walk."""

_VALUES: list[Any] = [
    None,
    "s",
    "",
    0,
    -7,
    1.5,
    True,
    False,
    {},
    {"a": "b"},
    {"a": None},
    {"a": {"b": 1}},
    [],
    [None],
    ["s"],
    [{"a": 1}],
    [[1]],
    *_ODD,
]
"""What is put in each field: every JSON type, nested, and the odd ones."""


def _agree(obj: Mapping[str, Any]) -> None:
    reference = builtin.reference_check(obj)
    assert builtin.check(obj) == reference, obj
    predicate = builtin._predicates().get(f"{obj.get('apiVersion')}/{obj.get('kind')}")
    if predicate is not None and type(obj) is dict:
        assert predicate(obj) == (reference is None), (obj, reference)


def _kind_of(kind: Any, key: Any) -> Any:
    """The kind of ``kind``'s child ``key`` (None when the table has none)."""
    if isinstance(kind, builtin._Object):
        return kind.fields.get(key)
    if isinstance(kind, builtin._List):
        return kind.item
    if isinstance(kind, builtin._Map):
        return kind.value
    return None


def _placed(kind: Any, value: Any) -> Any:
    """A value of container ``kind`` holding ``value`` one level down (an item, a map value)."""
    return [value] if isinstance(kind, builtin._List) else {"k": value}


def _fields_of_every_type(root: Any) -> Iterator[tuple[Any, list[tuple[Any, Any]]]]:
    """Each object type ``root`` reaches, with the shortest way from the root to it: the
    (container kind, key) steps, a key None for a list item or map value."""
    seen: set[int] = set()
    todo: list[tuple[Any, list[tuple[Any, Any]]]] = [(root, [])]
    while todo:
        kind, steps = todo.pop(0)
        if isinstance(kind, builtin._Object):
            if id(kind) in seen:
                continue
            seen.add(id(kind))
            yield kind, steps
            todo += [(sub, [*steps, (kind, field)]) for field, sub in kind.fields.items()]
        elif isinstance(kind, builtin._List | builtin._Map):
            todo.append((_kind_of(kind, None), [*steps, (kind, None)]))


def _built(key: str, steps: list[tuple[Any, Any]], last: dict[str, Any]) -> dict[str, Any]:
    """The object of kind ``key`` whose innermost object, at the end of ``steps``, is ``last``."""
    value: Any = last
    for container, field in reversed(steps):
        value = (
            {field: value} if isinstance(container, builtin._Object) else _placed(container, value)
        )
    api_version, _, kind = key.rpartition("/")
    return {"apiVersion": api_version, "kind": kind, **value}


@pytest.mark.parametrize("key", sorted(builtin.kinds()))
def test_every_field_of_every_type_with_every_type_of_value(key: str) -> None:
    root = builtin._loaded()[0][key]
    for kind, steps in _fields_of_every_type(root):
        _agree(_built(key, steps, {}))
        _agree(_built(key, steps, {"unknownField": 1}))
        for field, sub in kind.fields.items():
            values = _VALUES
            if isinstance(sub, builtin._List | builtin._Map):  # each value as an item too
                values = [*_VALUES, *(_placed(sub, value) for value in _VALUES)]
            for value in values:
                _agree(_built(key, steps, {field: value}))


def test_the_root_itself() -> None:
    _agree({**_POD, "bogus": None})
    _agree(MappingProxyType(_POD))  # a mapping that is no dict: the walk says so
    _agree(OrderedDict(_POD))
    with_int_key: dict[Any, Any] = {**_POD, 1: "x"}
    _agree(with_int_key)
    _agree({"apiVersion": "scheduling.k8s.io", "kind": "v1/PriorityClass", "value": "x"})
    _agree({"apiVersion": ["v1"], "kind": "Pod"})


# Random objects -----------------------------------------------------------------------------

_text = st.text(alphabet="abcAB.-/0", max_size=6)
_anything = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False)
    | _text
    | st.sampled_from(_ODD),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_SCALAR_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "s": _text,
    "i": st.integers(-(2**40), 2**40),
    "n": st.integers() | st.floats(allow_nan=False),
    "b": st.booleans(),
    "q": _text | st.integers() | st.floats(allow_nan=False),
    "is": st.integers() | _text,
    "t": _text | st.datetimes(timezones=st.just(dt.UTC)) | st.dates(),
    "x": _anything,
}


def _valid(data: st.DataObject, kind: Any, depth: int) -> Any:
    """A value the table accepts as ``kind``: a few fields, items or keys, ``depth`` deep."""
    if data.draw(st.integers(0, 9)) == 0:
        return None
    if isinstance(kind, str):
        return data.draw(_SCALAR_VALUES[kind])
    if depth <= 0:
        return [] if isinstance(kind, builtin._List) else {}
    if isinstance(kind, builtin._Object):
        fields = data.draw(st.lists(st.sampled_from(sorted(kind.fields)), max_size=4, unique=True))
        return {field: _valid(data, kind.fields[field], depth - 1) for field in fields}
    size = data.draw(st.integers(0, 2))
    items = [_valid(data, _kind_of(kind, None), depth - 1) for _ in range(size)]
    if isinstance(kind, builtin._List):
        return items
    return {data.draw(_text): item for item in items}


def _mutated(data: st.DataObject, value: Any, kind: Any, depth: int) -> Any:
    """``value`` with one change somewhere in it (a copy where changed)."""
    children: list[Any] = []
    if isinstance(value, dict):
        children = list(value)
    elif isinstance(value, list):
        children = list(range(len(value)))
    if children and depth > 0 and data.draw(st.integers(0, 3)) > 0:
        key = data.draw(st.sampled_from(children))
        changed = copy.copy(value)
        changed[key] = _mutated(data, value[key], _kind_of(kind, key), depth - 1)
        return changed
    how = data.draw(
        st.sampled_from(["replace", "null", "valid", "wrap", "unknown", "known", "drop", "add"])
    )
    if how == "replace":
        return data.draw(_anything)
    if how == "null":
        return None
    if how == "valid" and kind is not None:
        return _valid(data, kind, 3)
    if how == "wrap":
        return data.draw(st.sampled_from([[value], {"k": value}, [None, value]]))
    if isinstance(value, dict):
        changed = dict(value)
        if how == "unknown":
            changed[data.draw(_text | st.sampled_from([1, "Name", "metadata", "spec"]))] = (
                data.draw(_anything)
            )
        elif how == "known" and isinstance(kind, builtin._Object):
            field = data.draw(st.sampled_from(sorted(kind.fields)))
            changed[field] = data.draw(_anything | st.just(_valid(data, kind.fields[field], 2)))
        elif how == "drop" and changed:
            del changed[data.draw(st.sampled_from(list(changed)))]
        return changed
    if isinstance(value, list) and how == "add":
        return [*value, data.draw(_anything)]
    return data.draw(_anything)


def _bases() -> list[dict[str, Any]]:
    objects = generate.cluster(4, 40, 10, anti_affinity=0.3, zone_spread=0.3)
    pods = [o for o in objects if o["kind"] == "Pod"]
    node = next(o for o in objects if o["kind"] == "Node")
    return [_POD, node, *pods[-12:]]


_BASES = _bases()


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_mutations_of_valid_objects_get_the_same_answer(data: st.DataObject) -> None:
    roots = builtin._loaded()[0]
    if data.draw(st.booleans()):
        obj = copy.deepcopy(data.draw(st.sampled_from(_BASES)))
    else:
        key = data.draw(st.sampled_from(sorted(roots)))
        api_version, _, kind = key.rpartition("/")
        obj = {**(_valid(data, roots[key], 5) or {}), "apiVersion": api_version, "kind": kind}
    root = roots[f"{obj['apiVersion']}/{obj['kind']}"]
    _agree(obj)
    for _ in range(data.draw(st.integers(1, 6))):
        changed = _mutated(data, obj, root, 8)
        if isinstance(changed, dict):
            obj = changed
            _agree(obj)
