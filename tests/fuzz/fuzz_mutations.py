"""Mutations of valid manifests, for the fuzz tests of the offline commands (tests/fuzz).

Why: the command-line contract (docs/cli.md "Bad input") promises one clear stderr
line per broken object, no traceback, and every other object still served, for input
nobody here wrote. These strategies turn a known-good manifest into the kinds of
broken ones users produce: a field deleted, a value of the wrong type or out of range,
a bad quantity, a name of 10,000 characters, an object given twice, a kind or
apiVersion in the wrong case.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

FIXTURES = Path(__file__).parent / "fixtures"

PathKey = str | int
FieldPath = tuple[PathKey, ...]

BAD_VALUES: tuple[Any, ...] = (
    None,
    "",
    "abc",
    "12",
    "1.5.3Gi",
    "-1Gi",
    "1e400",
    "∞ 名前 é\u0000",
    "x" * 10_000,
    "kai-scheduler",
    0,
    -1,
    -3,
    1.5,
    True,
    10**30,
    -(10**30),
    2**31 - 1,
    2**63,
    float("inf"),
    float("nan"),
    [],
    [1, "two"],
    {},
    {"a": {"b": 1}},
)
"""Values put where a field was: each wrong for most fields, right for a few."""


NOT_STRING_MAPS: tuple[Any, ...] = (
    [],
    ["kai.scheduler/queue=team-a", "b"],
    "",
    "kai.scheduler/queue: team-a",
    3,
    1.5,
    True,
    {"k": 1},
    {"k": True},
    {"k": ["v"]},
)
"""What users put where labels or annotations (maps of strings) belong: a list of
``key=value`` pairs, the map written as one string, a number, a value that is no string."""

METADATA_MAPS: tuple[str, ...] = ("labels", "annotations")


def load(name: str) -> list[dict[str, Any]]:
    """The documents of fixture file ``name``."""
    return [d for d in yaml.safe_load_all((FIXTURES / name).read_text()) if d is not None]


def identity(obj: Any) -> tuple[str, str, str]:
    """``(kind, namespace, name)`` of a manifest, as far as it has them."""
    if not isinstance(obj, dict):
        return ("", "", "")
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return (str(obj.get("kind", "")), str(meta.get("namespace", "")), str(meta.get("name", "")))


def field_paths(value: Any, prefix: FieldPath = ()) -> Iterator[FieldPath]:
    """Every path to a value inside ``value`` (maps by key, lists by index), parents first."""
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, child in items:
        path = (*prefix, key)
        yield path
        yield from field_paths(child, path)


def dotted(path: FieldPath) -> str:
    """``spec.containers[0].image`` for ``("spec", "containers", 0, "image")``."""
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text


@dataclass(frozen=True)
class Mutation:
    """What was done to which document: ``op`` is delete, replace, duplicate or case."""

    index: int
    op: str
    path: FieldPath = ()
    value: Any = None

    def apply(self, docs: list[Any]) -> list[Any]:
        """A copy of ``docs`` with this mutation made."""
        result = copy.deepcopy(docs)
        if self.op == "duplicate":
            result.insert(self.index + 1, copy.deepcopy(result[self.index]))
            return result
        if self.op == "whole":
            result[self.index] = self.value
            return result
        parent = result[self.index]
        for key in self.path[:-1]:
            parent = parent[key]
        last = self.path[-1]
        if self.op == "delete":
            del parent[last]
        else:
            parent[last] = self.value
        return result

    def touches_identity(self) -> bool:
        """Whether the mutation may change which object this is (name, namespace, group)."""
        if self.op in ("duplicate", "whole", "case"):
            return True
        return self.path[:1] in (("kind",), ("apiVersion",)) or self.path[:2] in (
            ("metadata", "name"),
            ("metadata", "namespace"),
            ("metadata", "annotations"),
            ("metadata", "labels"),
            ("metadata",),
        )


def _case_variants(doc: dict[str, Any]) -> list[tuple[FieldPath, str]]:
    variants: list[tuple[FieldPath, str]] = []
    for key in ("kind", "apiVersion"):
        value = doc.get(key)
        if isinstance(value, str):
            for changed in (value.lower(), value.upper(), value.swapcase()):
                if changed != value:
                    variants.append(((key,), changed))
    return variants


@st.composite
def mutations(draw: st.DrawFn, docs: list[dict[str, Any]]) -> Mutation:
    """One mutation of one of ``docs``."""
    index = draw(st.integers(0, len(docs) - 1))
    doc = docs[index]
    op = draw(
        st.sampled_from(("delete", "replace", "replace", "replace", "duplicate", "case", "whole"))
    )
    if op == "duplicate":
        return Mutation(index, op)
    if op == "whole":
        return Mutation(index, op, value=draw(st.sampled_from((None, "text", 3, [doc], []))))
    if op == "case":
        path, value = draw(st.sampled_from(_case_variants(doc)))
        return Mutation(index, "replace", path, value)
    paths = list(field_paths(doc))
    path = draw(st.sampled_from(paths))
    if op == "delete":
        return Mutation(index, op, path)
    return Mutation(index, op, path, draw(st.sampled_from(BAD_VALUES)))


def metadata_map_targets(docs: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """``(document index, "labels" or "annotations")`` for every document: each kind's
    two maps, so every kind a command reads is covered, not only those drawn."""
    return [(index, field) for index in range(len(docs)) for field in METADATA_MAPS]


@st.composite
def not_a_string_map(draw: st.DrawFn, index: int, field: str) -> Mutation:
    """``metadata.<field>`` of document ``index`` replaced by a value that is no map of strings."""
    return Mutation(index, "replace", ("metadata", field), draw(st.sampled_from(NOT_STRING_MAPS)))


def value_at(doc: Any, path: FieldPath) -> Any:
    """The value at ``path`` of ``doc``."""
    for key in path:
        doc = doc[key]
    return doc


def template_map_targets(docs: list[dict[str, Any]]) -> list[tuple[int, FieldPath, str]]:
    """``(document index, path of a template, "labels" or "annotations")`` for every pod or
    Job template (a map with a ``spec`` under a key ``template``) of every document."""
    return [
        (index, path, field)
        for index, doc in enumerate(docs)
        for path in field_paths(doc)
        if path[-1] == "template"
        and isinstance(value_at(doc, path), dict)
        and "spec" in value_at(doc, path)
        for field in METADATA_MAPS
    ]


@st.composite
def template_not_a_string_map(
    draw: st.DrawFn, index: int, template: FieldPath, field: str
) -> Mutation:
    """The template's ``metadata`` replaced by one whose ``<field>`` is no map of strings."""
    bad = {field: draw(st.sampled_from(NOT_STRING_MAPS))}
    return Mutation(index, "replace", (*template, "metadata"), bad)


def names_object_and_field(err: str, source: str, doc: dict[str, Any], field: str) -> bool:
    """Whether an error line of ``err`` names ``doc`` (``Kind namespace/name``) and its
    ``metadata.<field>`` (the map itself, or the key whose value is not a string)."""
    kind, namespace, name = identity(doc)
    who = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
    prefix = f"podmuster: {source}: {who}: metadata.{field}"
    return any(line.startswith((f"{prefix}: ", f"{prefix}[")) for line in err.splitlines())
