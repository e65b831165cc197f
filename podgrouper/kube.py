"""The narrow Kubernetes API the podgrouper uses, and its error tree (from :mod:`kubeapi`).

Why this module exists: the podgrouper reads a handful of objects (owners, related
objects, PriorityClasses, a ConfigMap, namespaces) and writes three things (PodGroups,
a pod patch, Events) through :class:`KubeReader`/:class:`KubeWriter`.  Those protocols
and the error tree now live in the shared :mod:`kubeapi` package; this module keeps the
podgrouper's names for them and its Event source (``podgrouper``).

Error tree (see :mod:`kubeapi.errors`)::

    ApiError                 any failed API call; names the object (Kind ns/name)
    ├── NotFoundError        404
    ├── ForbiddenError       403 (RBAC); the owner walk stops at the last reachable owner
    ├── ConflictError        409 (stale resourceVersion, AlreadyExists); retryable
    ├── GoneError            410 (watches only)
    └── TransientError       5xx, 429, timeouts, connection failures; retryable
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from kubeapi import objects
from kubeapi.errors import (
    ApiError,
    ConflictError,
    ForbiddenError,
    GoneError,
    NotFoundError,
    TransientError,
    error_for_status,
)
from kubeapi.objects import Object, ObjectRef
from kubeapi.protocol import Kube, KubeReader, KubeWriter

__all__ = [
    "EVENT_SOURCE",
    "ApiError",
    "ConflictError",
    "ForbiddenError",
    "GoneError",
    "Kube",
    "KubeReader",
    "KubeWriter",
    "NotFoundError",
    "Object",
    "ObjectRef",
    "TransientError",
    "error_for_status",
    "event_body",
]

EVENT_SOURCE = "podgrouper"


def event_body(
    involved: Mapping[str, Any],
    event_type: str,
    reason: str,
    message: str,
    now: datetime.datetime | None = None,
) -> Object:
    """A core/v1 Event about ``involved`` from the podgrouper."""
    return objects.event_body(involved, event_type, reason, message, now, EVENT_SOURCE)
