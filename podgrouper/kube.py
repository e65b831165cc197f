"""The narrow Kubernetes API the podgrouper uses, and its error tree.

Why this module exists: the podgrouper reads a handful of objects (owners, related
objects, PriorityClasses, a ConfigMap, namespaces) and writes three things (PodGroups,
a pod patch, Events).  Naming exactly that surface as two small async protocols lets the
grouping path run against :class:`podgrouper.testing.FakeKube` in tests and against
:mod:`podgrouper.kubehttp` (aiohttp) in a cluster, and keeps the HTTP library's
exceptions from leaking: every implementation raises the errors below, with the
original error chained as the cause.

Error tree::

    ApiError                 any failed API call; names the object (Kind ns/name)
    ├── NotFoundError        404
    ├── ForbiddenError       403 (RBAC); the owner walk stops at the last reachable owner
    ├── ConflictError        409 (stale resourceVersion, AlreadyExists); retryable
    └── TransientError       5xx, 429, timeouts, connection failures; retryable
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

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


class ApiError(Exception):
    """An API call failed; ``ref`` is the object (or collection) it was about."""

    retryable = False

    def __init__(self, ref: ObjectRef | str, message: str, status: int = 0) -> None:
        self.ref = ref
        self.status = status
        self.message = message
        super().__init__(f"{ref}: {message}" + (f" (HTTP {status})" if status else ""))


class NotFoundError(ApiError):
    """The object does not exist."""


class ForbiddenError(ApiError):
    """RBAC does not allow the call."""


class ConflictError(ApiError):
    """A write lost a race (stale resourceVersion) or the object already exists."""

    retryable = True


class TransientError(ApiError):
    """The server or the network failed in a way that may pass: retry with back-off."""

    retryable = True


def error_for_status(ref: ObjectRef | str, status: int, message: str) -> ApiError:
    """The error class for an HTTP ``status``."""
    if status == 404:
        return NotFoundError(ref, message, status)
    if status == 403:
        return ForbiddenError(ref, message, status)
    if status == 409:
        return ConflictError(ref, message, status)
    if status == 429 or status >= 500:
        return TransientError(ref, message, status)
    return ApiError(ref, message, status)


class KubeReader(Protocol):
    """Reads objects; ``namespace`` is empty for cluster-scoped kinds."""

    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> Object:
        """The whole object; raises :class:`NotFoundError` when it does not exist."""
        ...

    async def get_metadata(self, api_version: str, kind: str, namespace: str, name: str) -> Object:
        """apiVersion, kind and metadata only (the owner walk reads nothing else)."""
        ...

    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str,
        labels: Mapping[str, str] | None = None,
    ) -> list[Object]:
        """Objects of a kind in ``namespace`` (all namespaces if empty) whose labels
        include ``labels``."""
        ...


class KubeWriter(Protocol):
    """Writes objects; every method returns the object as stored."""

    async def create(self, obj: Mapping[str, Any]) -> Object:
        """Create ``obj``; :class:`ConflictError` when it exists."""
        ...

    async def replace(self, obj: Mapping[str, Any]) -> Object:
        """Replace ``obj`` (PUT); ``metadata.resourceVersion`` guards against races."""
        ...

    async def merge_patch(
        self, api_version: str, kind: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> Object:
        """Apply a JSON merge patch (RFC 7386)."""
        ...

    async def create_event(
        self, involved: Mapping[str, Any], event_type: str, reason: str, message: str
    ) -> None:
        """Record a core/v1 Event about ``involved``."""
        ...


class Kube(KubeReader, KubeWriter, Protocol):
    """Both halves, as the reconcile needs them."""


EVENT_SOURCE = "podgrouper"


def event_body(
    involved: Mapping[str, Any],
    event_type: str,
    reason: str,
    message: str,
    now: datetime.datetime | None = None,
) -> Object:
    """A core/v1 Event about ``involved``, in the pod's (or object's) namespace."""
    ref = ObjectRef.of(involved)
    meta = involved.get("metadata") or {}
    stamp = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
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
        "source": {"component": EVENT_SOURCE},
        "reportingComponent": EVENT_SOURCE,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
