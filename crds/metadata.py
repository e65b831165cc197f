"""Labels, annotations and node selectors of raw objects: maps of strings, read one way.

Why this module exists: the API server refuses an object whose ``metadata.labels`` or
``metadata.annotations`` is not a map of strings, so such an object only ever comes
from a file. Read as empty, a list there (``labels: [kai.scheduler/queue=a]``) would
lose a queue label, a pod-group annotation or a node label without a word. Every
reader of these fields (the document loader, the scheduler's snapshot reader, the
grouping adapters, the simulator) goes through :func:`string_map`, so the same wrong
shape is the same error everywhere: an :class:`~crds.errors.InputError` whose
``field`` names the field, which each layer turns into its own error type.

No pydantic here: the document loader imports this at start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from crds.errors import InputError, shown

__all__ = [
    "METADATA_MAPS",
    "check_metadata_maps",
    "checked_map",
    "metadata_map",
    "metadata_of",
    "string_map",
]

METADATA_MAPS: Final = ("labels", "annotations")
"""The ``metadata`` fields that are maps of strings on every kind."""

_MAP: Final = (dict, Mapping)  # dict first: a decoded object passes at C speed


def checked_map(raw: Any, field: str) -> Mapping[str, str]:
    """``raw`` itself when it is a map of strings (unset is empty), else an error at ``field``.

    A number or a boolean where a string belongs is an error, as the API server makes it.
    """
    if raw is None:
        return {}
    if not isinstance(raw, _MAP):
        raise InputError(f"expected a map of strings, got {shown(raw)}", field=field)
    for key, value in raw.items():
        if type(value) is not str or type(key) is not str:
            raise InputError(f"expected a string, got {shown(value)}", field=f"{field}[{key}]")
    return raw


def string_map(raw: Any, field: str) -> dict[str, str]:
    """Labels, annotations or a node selector as a new dict (see :func:`checked_map`)."""
    return dict(checked_map(raw, field))


def metadata_map(obj: Mapping[str, Any], key: str) -> Mapping[str, str]:
    """``metadata.<key>`` of ``obj`` (unset is empty); ``metadata`` itself not a map is an
    error at ``metadata``, ``<key>`` not a map of strings one at ``metadata.<key>``."""
    return checked_map(metadata_of(obj).get(key), f"metadata.{key}")


def metadata_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``metadata`` of ``obj`` (unset is empty); any other type than a map is an error."""
    meta = obj.get("metadata")
    if meta is None:
        return {}
    if not isinstance(meta, _MAP):
        raise InputError(f"expected a map, got {shown(meta)}", field="metadata")
    return meta


def check_metadata_maps(obj: Mapping[str, Any]) -> None:
    """Raise the error of the first of :data:`METADATA_MAPS` that is not a map of strings."""
    for key in METADATA_MAPS:
        metadata_map(obj, key)
