"""Field readers shared by the snapshot builder: quantities, timestamps, requests.

Why: every raw object field the engine reads passes through one of these
functions, so a bad value always becomes the same kind of error naming the
field, and repeated quantity strings are parsed once.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final, TypeVar

import numpy as np
import pydantic

from crds import errors, quantities, rules
from crds import metadata as object_metadata
from crds.errors import shown
from crds.meta import rfc3339_seconds
from scheduler.api.resources import (
    CPU,
    GPU,
    GPU_RESOURCE_NAMES,
    MEMORY,
    PODS,
    ResourceSpace,
    Vector,
)


class FieldError(ValueError):
    """A bad value at a field path of the object being read."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


MAP: Final = (dict, Mapping)
"""``isinstance(raw, MAP)``: a mapping. ``dict`` first, so a decoded object passes at C speed
instead of through the ``Mapping`` ABC's check (a dozen checks per pod at ingest)."""


@functools.lru_cache(maxsize=65536)
def _milli(text: str) -> int:
    return quantities.milli_value(quantities.parse_quantity(text))


@functools.lru_cache(maxsize=65536)
def _whole(text: str) -> int:
    return quantities.value(quantities.parse_quantity(text))


MAX_AMOUNT: Final = 2**53
"""The largest quantity read, in engine units (CPU and GPU thousandths, bytes): beyond it
the engine's int64 sums over a cluster could overflow and its float shares lose exactness;
no real node or pod comes near (2^53 bytes is 8 PiB)."""


def amount(resource: str, raw: Any, field: str) -> int:
    """A quantity in engine units for one resource column (CPU milli, GPU thousandths)."""
    text = raw if isinstance(raw, str) else str(raw)
    try:
        if resource == "cpu" or resource in GPU_RESOURCE_NAMES:
            value = _milli(text)
        else:
            value = _whole(text)
    except (quantities.QuantityError, ValueError) as exc:
        raise FieldError(field, f"invalid quantity {raw!r}: {exc}") from None
    if value < 0:
        raise FieldError(field, f"negative quantity {raw!r}")
    if value > MAX_AMOUNT:
        raise FieldError(field, f"quantity {raw!r} is too large (at most 2^53 units)")
    return value


def resource_list(
    raw: Any, field: str, space: ResourceSpace, *, default_pods: int | None = None
) -> Vector:
    """A ResourceList mapping (``{cpu: 2, memory: 4Gi}``) as a vector."""
    vector = space.zeros()
    if raw is None:
        raw = {}
    if not isinstance(raw, MAP):
        raise FieldError(field, f"expected a map of resource quantities, got {type(raw).__name__}")
    for name, value in raw.items():
        column = space.column(str(name))
        if column >= vector.shape[0]:
            vector = np.concatenate([vector, np.zeros(column + 1 - vector.shape[0], np.int64)])
        vector[column] += amount(str(name), value, f"{field}.{name}")
    if default_pods is not None and "pods" not in raw:
        vector[PODS] = default_pods
    return vector


def _container_request(container: Mapping[str, Any], field: str, space: ResourceSpace) -> Vector:
    resources = container.get("resources") or {}
    if not isinstance(resources, MAP):
        raise FieldError(f"{field}.resources", "expected a map")
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    for part, value in (("requests", requests), ("limits", limits)):
        if not isinstance(value, MAP):
            raise FieldError(f"{field}.resources.{part}", f"expected a map, got {shown(value)}")
    merged = dict(limits)
    merged.update(requests)  # Kubernetes defaults a missing request to the limit
    source = f"{field}.resources.requests" if requests else f"{field}.resources.limits"
    return resource_list(merged, source, space)


def _grow(a: Vector, b: Vector) -> tuple[Vector, Vector]:
    width = max(a.shape[0], b.shape[0])
    if a.shape[0] < width:
        a = np.concatenate([a, np.zeros(width - a.shape[0], np.int64)])
    if b.shape[0] < width:
        b = np.concatenate([b, np.zeros(width - b.shape[0], np.int64)])
    return a, b


def _sum(a: Vector, b: Vector) -> Vector:
    if a.shape[0] != b.shape[0]:
        a, b = _grow(a, b)
    return a + b


def _max(a: Vector, b: Vector) -> Vector:
    if a.shape[0] != b.shape[0]:
        a, b = _grow(a, b)
    return np.maximum(a, b)


RequestMemo = dict[tuple[int, tuple[tuple[tuple[str, str], ...], ...]], Vector]
"""Pod requests already read, by the space's width and the containers' resources as written
(a width only grows, so a vector is never handed out narrower than the space)."""

_MEMO_MAX: Final = 4096


def _containers_key(spec: Mapping[str, Any]) -> tuple[tuple[tuple[str, str], ...], ...] | None:
    """The containers' requests and limits as written, when that alone decides the request.

    None (read the spec in full) for init containers, overhead, or anything not plain:
    a container or resource map that is not a dict, or a name or quantity that is not a
    string (``1`` and ``True`` are equal keys but not equal quantities).
    """
    if "initContainers" in spec or "overhead" in spec:
        return None
    containers = spec.get("containers")
    if type(containers) is not list:
        return None
    key: list[tuple[tuple[str, str], ...]] = []
    for container in containers:
        if type(container) is not dict:
            return None
        resources = container.get("resources")
        if resources is None:
            key.append(())
            key.append(())
            continue
        if type(resources) is not dict:
            return None
        for part in (resources.get("requests"), resources.get("limits")):
            if not part:
                key.append(())
            elif type(part) is dict:
                items = tuple(part.items())
                for name, value in items:
                    if type(value) is not str or type(name) is not str:
                        return None
                key.append(items)
            else:
                return None
    return tuple(key)


def pod_request(
    spec: Mapping[str, Any], space: ResourceSpace, memo: RequestMemo | None = None
) -> Vector:
    """What kube-scheduler counts for a pod (:func:`crds.rules.pod_request`), + 1 pod.

    With ``memo`` (kept by the caller for one ``space``), pods whose containers write the
    same requests and limits are read once: the pods of one workload usually do. The
    result is a copy, never shared.
    """
    if memo is None:
        return _pod_request(spec, space)
    containers = _containers_key(spec)
    if containers is None:
        return _pod_request(spec, space)
    key = (space.width, containers)
    known = memo.get(key)
    if known is None:
        known = _pod_request(spec, space)
        if len(memo) >= _MEMO_MAX:
            memo.clear()
        memo[key] = known  # under the width before: a new column's reader never asks again
    return known.copy()


def _containers(spec: Mapping[str, Any], field: str) -> list[Any]:
    """``spec.containers`` or ``spec.initContainers``: a list of maps (unset is empty)."""
    raw = spec.get(field) or []
    if not isinstance(raw, list):
        raise FieldError(f"spec.{field}", f"expected a list, got {shown(raw)}")
    for i, container in enumerate(raw):
        if not isinstance(container, MAP):
            raise FieldError(f"spec.{field}[{i}]", f"expected a map, got {shown(container)}")
    return raw


def _pod_request(spec: Mapping[str, Any], space: ResourceSpace) -> Vector:
    containers = [
        _container_request(c, f"spec.containers[{i}]", space)
        for i, c in enumerate(_containers(spec, "containers"))
    ]
    inits = (
        [
            (_container_request(c, f"spec.initContainers[{i}]", space), restartable)
            for i, (c, restartable) in enumerate(rules.init_containers_of(spec))
        ]
        if _containers(spec, "initContainers")
        else ()
    )
    overhead = spec.get("overhead")
    extra = resource_list(overhead, "spec.overhead", space) if overhead else None
    total = rules.pod_request(containers, inits, extra, add=_sum, maximum=_max, zero=space.zeros())
    total[PODS] = 1
    return total


def field_map(raw: Any, field: str) -> Mapping[str, Any]:
    """A map-valued field (unset is empty); anything else is an error naming ``field``."""
    if raw is None:
        return {}
    if not isinstance(raw, MAP):
        raise FieldError(field, f"expected a map, got {shown(raw)}")
    return raw


def field_string(raw: Any, field: str, default: str = "") -> str:
    """A string-valued field (unset is ``default``); anything else is an error."""
    if raw is None:
        return default
    if not isinstance(raw, str):
        raise FieldError(field, f"expected a string, got {shown(raw)}")
    return raw


def string_map(raw: Any, field: str) -> dict[str, str]:
    """Labels, annotations or a node selector: a map of strings (unset is empty), read by
    :func:`crds.metadata.string_map`; anything else is an error naming the field."""
    try:
        return object_metadata.string_map(raw, field)
    except errors.InputError as exc:
        raise FieldError(exc.field or field, exc.message) from None


def map_list(raw: Any, field: str) -> list[Mapping[str, Any]]:
    """A list of maps (taints, tolerations; unset is empty); anything else is an error."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise FieldError(field, f"expected a list, got {shown(raw)}")
    for i, item in enumerate(raw):
        if not isinstance(item, MAP):
            raise FieldError(f"{field}[{i}]", f"expected a map, got {shown(item)}")
    return raw


_Model = TypeVar("_Model", bound=pydantic.BaseModel)


def validated(
    model: type[_Model], body: Mapping[str, Any], context: Mapping[str, Any] | None = None
) -> _Model:
    """``body`` checked by its KAI model (unknown fields, types, ranges), else ``FieldError``.

    The KAI kinds (PodGroup, Queue, BindRequest, Topology) are read through their
    :mod:`crds` models, so the engine accepts exactly what the CRDs describe.
    ``context`` is pydantic's validation context, for the models that read one.
    """
    try:
        checked: _Model = model.__pydantic_validator__.validate_python(body, context=context)
    except pydantic.ValidationError as exc:
        field, message = errors.first_problem(exc)
        raise FieldError(field, message) from None
    return checked


def timestamp(raw: Any, field: str) -> float:
    """An RFC 3339 timestamp as seconds since the epoch."""
    if isinstance(raw, datetime):
        return raw.timestamp()
    if not isinstance(raw, str):
        raise FieldError(field, f"expected an RFC 3339 timestamp, got {shown(raw)}")
    try:
        return rfc3339_seconds(raw)
    except ValueError:
        raise FieldError(field, f"invalid RFC 3339 timestamp {raw!r}") from None


__all__ = [
    "CPU",
    "GPU",
    "MAP",
    "MEMORY",
    "FieldError",
    "amount",
    "map_list",
    "pod_request",
    "resource_list",
    "string_map",
    "timestamp",
    "validated",
]
