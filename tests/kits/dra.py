"""A test kit for Dynamic Resource Allocation: DeviceClasses, ResourceSlices, claims, pods.

Why: the DRA scenarios, properties and the binder tests need the same raw
``resource.k8s.io/v1`` objects; building them here keeps each test a short picture.
Devices are ``(name, attributes)`` pairs; an attribute name without a domain belongs
to the slice's driver, as in Kubernetes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tests.kits.worlds import NAMESPACE, Obj, job

API = "resource.k8s.io/v1"
GPU_DRIVER = "gpu.example.com"
GPU_CLASS = "gpu.example.com"


def device_class(name: str = GPU_CLASS, *expressions: str) -> Obj:
    """A DeviceClass; without expressions it selects the driver named like the class."""
    exprs = expressions or (f'device.driver == "{name}"',)
    return {
        "apiVersion": API,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": e}} for e in exprs]},
    }


def _attribute(value: Any) -> Obj:
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": str(value)}


def resource_slice(
    node: str | None,
    *devices: tuple[str, Mapping[str, Any]] | str,
    driver: str = GPU_DRIVER,
    pool: str | None = None,
    name: str | None = None,
    capacity: Mapping[str, str] | None = None,
    all_nodes: bool = False,
) -> Obj:
    """A ResourceSlice of ``node`` (or ``all_nodes``); a bare device name has no attributes."""
    items = []
    for device in devices:
        device_name, attrs = (device, {}) if isinstance(device, str) else device
        body: Obj = {
            "name": device_name,
            "attributes": {k: _attribute(v) for k, v in attrs.items()},
        }
        if capacity:
            body["capacity"] = {k: {"value": v} for k, v in capacity.items()}
        items.append(body)
    pool_name = pool or node or "shared"
    spec: Obj = {
        "driver": driver,
        "pool": {"name": pool_name, "generation": 1, "resourceSliceCount": 1},
        "devices": items,
    }
    if all_nodes:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node
    return {
        "apiVersion": API,
        "kind": "ResourceSlice",
        "metadata": {"name": name or f"{pool_name}-{driver}"},
        "spec": spec,
    }


def request(
    name: str = "gpu",
    device_class: str = GPU_CLASS,
    count: int | None = 1,
    *selectors: str,
    mode: str | None = None,
) -> Obj:
    exactly: Obj = {"deviceClassName": device_class}
    if mode is not None:
        exactly["allocationMode"] = mode
    if count is not None and mode != "All":
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": exactly}


def first_available(name: str, *alternatives: tuple[str, str, int]) -> Obj:
    """A request served by the first of ``(name, device class, count)`` that fits."""
    return {
        "name": name,
        "firstAvailable": [
            {"name": sub, "deviceClassName": device_class, "count": count}
            for sub, device_class, count in alternatives
        ],
    }


def claim(
    name: str,
    *requests: Obj,
    allocated: Sequence[tuple[str, str, str, str]] | None = None,
    node: str | None = None,
    namespace: str = NAMESPACE,
    reserved_for: Sequence[str] = (),
    constraints: Sequence[Obj] = (),
) -> Obj:
    """A ResourceClaim; ``allocated``: ``(request, driver, pool, device)`` results on ``node``,
    reserved for the pods of uids ``reserved_for``."""
    body: Obj = {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-claim-{name}"},
        "spec": {"devices": {"requests": list(requests) or [request()]}},
    }
    if constraints:
        body["spec"]["devices"]["constraints"] = [dict(c) for c in constraints]
    if allocated is not None:
        allocation: Obj = {
            "devices": {
                "results": [
                    {"request": r, "driver": d, "pool": p, "device": v} for r, d, p, v in allocated
                ]
            }
        }
        if node is not None:
            term = {"key": "metadata.name", "operator": "In", "values": [node]}
            allocation["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [term]}]}
        body["status"] = {"allocation": allocation}
        if reserved_for:
            body["status"]["reservedFor"] = [
                {"resource": "pods", "name": uid.rpartition("/")[2], "uid": uid}
                for uid in reserved_for
            ]
    return body


def with_resource_claims(objects: list[Obj], *claims: Sequence[str]) -> list[Obj]:
    """``objects`` (a ``job``) with the i-th pod using the ResourceClaims ``claims[i]``."""
    pods = [obj for obj in objects if obj["kind"] == "Pod"]
    for pod, names in zip(pods, claims, strict=True):
        pod["spec"]["resourceClaims"] = [
            {"name": f"c{i}", "resourceClaimName": claim} for i, claim in enumerate(names)
        ]
    return objects


def dra_job(name: str, queue: str, *claims: Sequence[str], **kwargs: Any) -> list[Obj]:
    """A gang ``job`` of ``len(claims)`` pods, pod i using the claims ``claims[i]``."""
    return with_resource_claims(job(name, queue, len(claims), **kwargs), *claims)


def template_job(
    name: str, queue: str, generated: Sequence[str | None], **kwargs: Any
) -> list[Obj]:
    """A gang whose pod i uses a claim template; ``generated[i]`` is the claim the
    ResourceClaim controller made for it (None: not made yet)."""
    objects = job(name, queue, len(generated), **kwargs)
    pods = [obj for obj in objects if obj["kind"] == "Pod"]
    for pod, made in zip(pods, generated, strict=True):
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "tpl"}]
        if made is not None:
            pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": made}]
    return objects
