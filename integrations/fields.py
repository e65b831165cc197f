"""Typed readers for nested fields of raw Kubernetes objects.

Why this module exists: every adapter reads CR fields out of plain mappings, and a
wrong type must become a :class:`~integrations.base.GroupingError` that names the
object and the field path, never a ``KeyError`` or a silent default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from crds import metadata as object_metadata
from crds.errors import InputError, describe_object, shown
from crds.meta import INT32_MAX
from integrations import base

_EMPTY: Mapping[str, Any] = {}


def metadata(obj: base.RawObject) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else _EMPTY


def checked_metadata(obj: base.RawObject) -> Mapping[str, Any]:
    """``metadata`` (empty when absent); not a map is a :class:`~integrations.base.GroupingError`
    naming the object as far as it can be named (by its kind)."""
    try:
        return object_metadata.metadata_of(obj)
    except InputError as exc:
        raise base.GroupingError(describe_object(obj), "metadata", exc.message) from None


def name(obj: base.RawObject) -> str:
    return str(metadata(obj).get("name") or "")


def namespace(obj: base.RawObject) -> str:
    return str(metadata(obj).get("namespace") or "")


def uid(obj: base.RawObject) -> str:
    return str(metadata(obj).get("uid") or "")


def _metadata_map(obj: base.RawObject, key: str) -> Mapping[str, str]:
    """``metadata.<key>`` (empty when absent), read by :func:`crds.metadata.metadata_map`.

    Not a map of strings, or ``metadata`` not a map, is an error naming the field: read
    as empty, a queue or priority label would be lost with no word, and the object
    grouped wrongly (the API server refuses such an object, so it is met only offline,
    in files)."""
    try:
        return object_metadata.metadata_map(obj, key)
    except InputError as exc:
        raise base.GroupingError(describe(obj), exc.field or "metadata", exc.message) from None


def labels(obj: base.RawObject) -> Mapping[str, str]:
    """The object's labels; not a map is a :class:`~integrations.base.GroupingError`."""
    return _metadata_map(obj, "labels")


def annotations_of(obj: base.RawObject) -> Mapping[str, str]:
    """The object's annotations; not a map is a :class:`~integrations.base.GroupingError`."""
    return _metadata_map(obj, "annotations")


def owner_references(obj: base.RawObject) -> Sequence[Mapping[str, Any]]:
    value = metadata(obj).get("ownerReferences")
    return [r for r in value if isinstance(r, Mapping)] if isinstance(value, list) else []


def describe(obj: base.RawObject) -> str:
    """``Kind namespace/name`` (or ``Kind name`` when cluster scoped)."""
    kind = str(obj.get("kind") or "object")
    ns = namespace(obj)
    return f"{kind} {ns}/{name(obj)}" if ns else f"{kind} {name(obj)}"


def owner_reference(obj: base.RawObject) -> base.OwnerReference:
    return base.OwnerReference(
        api_version=str(obj.get("apiVersion", "")),
        kind=str(obj.get("kind", "")),
        name=name(obj),
        uid=uid(obj),
    )


def get(obj: base.RawObject, path: str) -> Any:
    """The value at a dotted ``path`` or ``None``; a non-mapping on the way is ``None``."""
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, Mapping):
            return None
        current = current.get(part)
    return current


def get_mapping(
    obj: base.RawObject,
    path: str,
    *,
    within: Mapping[str, Any] | None = None,
    prefix: str = "",
) -> Mapping[str, Any]:
    """A mapping at ``path`` of ``within`` (default: ``obj``; empty when absent); any
    other type is an error naming ``obj`` and ``prefix`` + ``path``."""
    value = get(obj if within is None else within, path)
    if value is None:
        return _EMPTY
    if not isinstance(value, Mapping):
        raise base.GroupingError(
            describe(obj), f"{prefix}{path}", f"expected an object, got {shown(value)}"
        )
    return value


def get_string_map(
    obj: base.RawObject,
    path: str,
    *,
    within: Mapping[str, Any] | None = None,
    prefix: str = "",
) -> Mapping[str, str]:
    """Labels or annotations at ``path`` of ``within`` (default: ``obj``; empty when
    absent), read by :func:`crds.metadata.checked_map` as the object's own are: not a
    map of strings is an error naming ``obj`` and ``prefix`` + ``path``, or the key
    whose value is no string (``spec.template.metadata.labels[tier]``)."""
    field = f"{prefix}{path}"
    try:
        return object_metadata.checked_map(get(obj if within is None else within, path), field)
    except InputError as exc:
        raise base.GroupingError(describe(obj), exc.field or field, exc.message) from None


def get_list(
    obj: base.RawObject,
    path: str,
    *,
    within: Mapping[str, Any] | None = None,
    prefix: str = "",
) -> Sequence[Any]:
    """A list at ``path`` of ``within`` (default: ``obj``; empty when absent); any other
    type is an error naming ``obj`` and ``prefix`` + ``path``."""
    value = get(obj if within is None else within, path)
    if value is None:
        return ()
    if not isinstance(value, list):
        raise base.GroupingError(
            describe(obj), f"{prefix}{path}", f"expected a list, got {shown(value)}"
        )
    return value


def as_int(
    value: Any, *, obj: base.RawObject, path: str, minimum: int | None = 0, text: bool = False
) -> int:
    """``value`` as an integer.

    Booleans and non-integral numbers are errors; strings are errors too unless
    ``text`` (annotation values are strings, CR integer fields are not). The fields
    read this way are ``int32`` (replicas, counts, sizes): a larger value is an error, as
    the API server makes it.
    """
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif text and isinstance(value, str):
        number = parse_int(value)
    if number is None:
        raise base.GroupingError(describe(obj), path, f"expected an integer, got {shown(value)}")
    if minimum is not None and number < minimum:
        raise base.GroupingError(describe(obj), path, f"must be >= {minimum}, got {number}")
    if number > INT32_MAX:
        raise base.GroupingError(describe(obj), path, f"must be <= {INT32_MAX}, got {number}")
    return number


def get_int(
    obj: base.RawObject,
    path: str,
    default: int | None = None,
    *,
    minimum: int | None = 0,
    within: Mapping[str, Any] | None = None,
    prefix: str = "",
) -> int | None:
    """An integer at ``path`` of ``within`` (default: ``obj``), or ``default``.

    ``prefix`` is prepended to ``path`` in error messages when ``within`` is a
    nested part of ``obj``.
    """
    source = obj if within is None else within
    value = get(source, path)
    if value is None:
        return default
    return as_int(value, obj=obj, path=f"{prefix}{path}", minimum=minimum)


def counts_read(counts: Mapping[str, int]) -> str:
    """Counts by field path as an error names them: ``spec.a.replicas=2, spec.b.replicas=3``."""
    return ", ".join(f"{path}={number}" for path, number in counts.items())


def int32_total(obj: base.RawObject, total: int, read: str) -> int:
    """``total``, a PodGroup count (``minMember``) an adapter multiplies or adds up from
    counts of ``obj`` (``read`` names them); above int32 it is an error naming them: the
    API server refuses such a PodGroup (KAI's int32 arithmetic would wrap it around)."""
    if total > INT32_MAX:
        raise base.GroupingError(
            describe(obj),
            read,
            f"these counts, multiplied and added up, make {total}: more than {INT32_MAX},"
            " the most a PodGroup's minMember holds",
        )
    return total


MAX_SUBGROUPS: Final = 100_000
"""The most subgroups an adapter writes in one PodGroup. One per JobSet Job replica or
per PyTorchJob or LeaderWorkerSet segment, int32 counts could ask for billions (grouping would hang
and exhaust the memory), and a PodGroup of 100,000 subgroups is already megabytes, more
than the API server stores in one object."""


def subgroup_count(obj: base.RawObject, count: int, read: str) -> int:
    """``count``, the subgroups an adapter is about to make from counts of ``obj``
    (``read`` names them); more than :data:`MAX_SUBGROUPS` is an error naming them."""
    if count > MAX_SUBGROUPS:
        raise base.GroupingError(
            describe(obj),
            read,
            f"these counts make {count} subgroups: more than {MAX_SUBGROUPS}, the most"
            " podmuster writes in one PodGroup",
        )
    return count


def parse_int(text: str | None) -> int | None:
    """A decimal integer string, or ``None`` when it does not parse."""
    if text is None:
        return None
    try:
        return int(str(text).strip())
    except ValueError:
        return None
