"""Kubernetes objects as decoded JSON, where they live, and the bodies we build often.

Why this module exists: every client of :mod:`kubeapi` names objects the same way
(:class:`ObjectRef`, printed ``Kind ns/name`` in errors and logs) and writes the same
few bodies (core/v1 Events, owner references); keeping them here means the podgrouper,
the scheduler and the binder agree on them without importing each other.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Object = dict[str, Any]
"""A Kubernetes object as decoded JSON."""


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """Where an object lives: apiVersion, kind, namespace (empty if cluster scoped), name."""

    api_version: str
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectRef:
        meta = obj.get("metadata") or {}
        return cls(
            str(obj.get("apiVersion", "")),
            str(obj.get("kind", "")),
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
        )

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The value a ``fieldSelector`` compares for the dotted ``path`` ('' when absent)."""
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return "" if value is None else str(value)


def fields_match(obj: Mapping[str, Any], fields: Mapping[str, str]) -> bool:
    """Whether ``obj`` passes the equality ``fieldSelector`` ``fields``."""
    return all(field_value(obj, path) == value for path, value in fields.items())


def timestamp(now: datetime.datetime | None = None) -> str:
    """RFC 3339 seconds, UTC, as the API server prints ``metav1.Time``."""
    return (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


def owner_reference(owner: Mapping[str, Any], *, controller: bool = False) -> Object:
    """An ``ownerReferences`` entry pointing at ``owner`` (needs its ``metadata.uid``)."""
    ref = ObjectRef.of(owner)
    meta = owner.get("metadata") or {}
    entry: Object = {
        "apiVersion": ref.api_version,
        "kind": ref.kind,
        "name": ref.name,
        "uid": str(meta.get("uid") or ""),
    }
    if controller:
        entry["controller"] = True
    return entry


def event_body(
    involved: Mapping[str, Any],
    event_type: str,
    reason: str,
    message: str,
    now: datetime.datetime | None = None,
    component: str = "podmuster",
) -> Object:
    """A core/v1 Event about ``involved``, in its namespace (``default`` if cluster scoped)."""
    ref = ObjectRef.of(involved)
    meta = involved.get("metadata") or {}
    stamp = timestamp(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "generateName": f"{ref.name or 'object'}.",
            "namespace": ref.namespace or "default",
        },
        "involvedObject": {
            "apiVersion": ref.api_version,
            "kind": ref.kind,
            "name": ref.name,
            "namespace": ref.namespace,
            "uid": str(meta.get("uid") or ""),
        },
        "type": event_type,
        "reason": reason,
        "message": message[:1024],
        "source": {"component": component},
        "reportingComponent": component,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
