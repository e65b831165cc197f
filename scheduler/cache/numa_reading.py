"""Readers for NodeResourceTopology objects, pods' NUMA requests and NUMA placement records.

Why: the NUMA rule (:mod:`scheduler.api.numa`) needs each node's zones in engine units and
each pod's alignable requests; both are parsed once, when the object arrives. The node
side is the ``topology.node.k8s.io/v1alpha2`` NodeResourceTopology that NFD's topology
updater or the Resource Topology Exporter publishes per node (named after the node), read
as KAI reads it: only zones of type ``Node``; the policy and scope from the top-level
``attributes`` ``topologyManagerPolicy`` / ``topologyManagerScope``, else from the
deprecated ``topologyPolicies`` list; zones ordered by the number their name ends in.
A malformed object is a ``FieldError`` naming the field, so only that node's NUMA data is
left out (the node then counts as having none).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from crds import names, rules
from crds.errors import shown
from scheduler.api.numa import NumaNode, NumaPolicy, NumaRequest, NumaScope
from scheduler.api.pods import PodInfo
from scheduler.api.resources import CPU, PODS, ResourceSpace, Vector
from scheduler.cache import parsing
from scheduler.cache.parsing import MAP, FieldError

ZONE_TYPE_NODE: Final = "Node"

_POLICIES: Final = {
    "none": NumaPolicy.NONE,
    "best-effort": NumaPolicy.BEST_EFFORT,
    "restricted": NumaPolicy.RESTRICTED,
    "single-numa-node": NumaPolicy.SINGLE_NUMA_NODE,
}
_SCOPES: Final = {"container": NumaScope.CONTAINER, "pod": NumaScope.POD}
# the deprecated combined enum (policy and scope in one value)
_LEGACY: Final = {
    "SingleNUMANodePodLevel": (NumaPolicy.SINGLE_NUMA_NODE, NumaScope.POD),
    "SingleNUMANodeContainerLevel": (NumaPolicy.SINGLE_NUMA_NODE, NumaScope.CONTAINER),
    "RestrictedPodLevel": (NumaPolicy.RESTRICTED, NumaScope.POD),
    "RestrictedContainerLevel": (NumaPolicy.RESTRICTED, NumaScope.CONTAINER),
    "Restricted": (NumaPolicy.RESTRICTED, NumaScope.CONTAINER),
    "BestEffortPodLevel": (NumaPolicy.BEST_EFFORT, NumaScope.POD),
    "BestEffortContainerLevel": (NumaPolicy.BEST_EFFORT, NumaScope.CONTAINER),
    "BestEffort": (NumaPolicy.BEST_EFFORT, NumaScope.CONTAINER),
}
_TRAILING_NUMBER = re.compile(r"(\d+)$")


def _gated(name: str) -> bool:
    """Aligned only for Guaranteed pods: cpu (CPU Manager), memory and hugepages."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _list(raw: Any, field: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise FieldError(field, f"expected a list, got {type(raw).__name__}")
    return raw


def _text(raw: Any, field: str) -> str:
    if not isinstance(raw, str):
        raise FieldError(field, f"expected a string, got {shown(raw)}")
    return raw


def _policy_and_scope(body: Mapping[str, Any]) -> tuple[NumaPolicy, NumaScope]:
    policy = scope = ""
    for i, attr in enumerate(_list(body.get("attributes"), "attributes")):
        if not isinstance(attr, MAP):
            raise FieldError(f"attributes[{i}]", "expected a map with name and value")
        name = attr.get("name")
        if name == "topologyManagerPolicy":
            policy = _text(attr.get("value"), f"attributes[{i}].value")
        elif name == "topologyManagerScope":
            scope = _text(attr.get("value"), f"attributes[{i}].value")
    if policy:
        return _POLICIES.get(policy, NumaPolicy.NONE), _SCOPES.get(scope, NumaScope.CONTAINER)
    legacy = _list(body.get("topologyPolicies"), "topologyPolicies")
    if legacy:
        return _LEGACY.get(str(legacy[0]), (NumaPolicy.NONE, NumaScope.CONTAINER))
    return NumaPolicy.NONE, NumaScope.CONTAINER


def _zone_order(zone_id: str) -> tuple[int, int, str]:
    found = _TRAILING_NUMBER.search(zone_id)
    return (0, int(found.group(1)), zone_id) if found else (1, 0, zone_id)


def read_node_resource_topology(body: Mapping[str, Any], space: ResourceSpace) -> NumaNode | None:
    """A node's NUMA zones, or None when it reports no zone of type ``Node``."""
    meta = body.get("metadata")
    name = _text(meta.get("name") if isinstance(meta, MAP) else None, "metadata.name")
    policy, scope = _policy_and_scope(body)
    zones: list[tuple[str, dict[int, int], dict[int, int]]] = []
    reported: dict[int, str] = {}
    for i, zone in enumerate(_list(body.get("zones"), "zones")):
        field = f"zones[{i}]"
        if not isinstance(zone, MAP):
            raise FieldError(field, "expected a map with name, type and resources")
        if zone.get("type") != ZONE_TYPE_NODE:
            continue  # sockets, dies, ...: the kubelet aligns NUMA nodes only
        zone_id = _text(zone.get("name"), f"{field}.name")
        allocatable: dict[int, int] = {}
        available: dict[int, int] = {}
        for j, res in enumerate(_list(zone.get("resources"), f"{field}.resources")):
            where = f"{field}.resources[{j}]"
            if not isinstance(res, MAP):
                raise FieldError(where, "expected a map with name, allocatable and available")
            resource = _text(res.get("name"), f"{where}.name")
            column = space.column(resource)
            reported[column] = resource
            for key, into in (("allocatable", allocatable), ("available", available)):
                raw = res.get(key)
                if raw is None:
                    raise FieldError(f"{where}.{key}", "required")
                into[column] = parsing.amount(resource, raw, f"{where}.{key}")
        zones.append((zone_id, allocatable, available))
    if not zones:
        return None
    zones.sort(key=lambda z: _zone_order(z[0]))
    ids = [z[0] for z in zones]
    if len(set(ids)) != len(ids):
        raise FieldError("zones", f"zone names must be unique, got {ids}")
    width = space.width
    alloc = np.zeros((len(zones), width), dtype=np.int64)
    avail = np.zeros((len(zones), width), dtype=np.int64)
    for z, (_, allocatable, available) in enumerate(zones):
        for column, value in allocatable.items():
            alloc[z, column] = value
        for column, value in available.items():
            avail[z, column] = value
    aware = sorted(c for c in reported if c != PODS)
    gated = [c for c in aware if _gated(reported[c])]
    return NumaNode(name, policy, scope, ids, alloc, avail, aware, gated)


# --- pods -----------------------------------------------------------------------------------
def _quantities(container: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    resources = container.get("resources")
    raw = resources.get(key) if isinstance(resources, MAP) else None
    return raw if isinstance(raw, MAP) else {}


def _guaranteed_spec(containers: Sequence[Mapping[str, Any]]) -> bool:
    """Kubernetes' Guaranteed QoS: every container limits cpu and memory, requests equal."""
    if not containers:
        return False
    for container in containers:
        limits = _quantities(container, "limits")
        requests = _quantities(container, "requests")
        for resource in ("cpu", "memory"):
            if resource not in limits:
                return False
            raw_limit = limits[resource]
            raw_request = requests.get(resource, raw_limit)
            if raw_request == raw_limit:
                continue  # the same quantity written the same way (the usual case)
            limit = parsing.amount(resource, raw_limit, f"resources.limits.{resource}")
            request = parsing.amount(resource, raw_request, f"resources.requests.{resource}")
            if request != limit:
                return False
    return True


def pod_numa_request(
    spec: Mapping[str, Any], status: Mapping[str, Any], request: Vector, space: ResourceSpace
) -> NumaRequest | None:
    """What the kubelet would align for this pod, or None when nothing ever could be.

    A pod that is not Guaranteed and requests no device (GPU or other extended resource)
    is aligned by no policy, so it carries nothing and costs nothing later.
    """
    app = [c for c in spec.get("containers") or () if isinstance(c, MAP)]
    inits = [(c, r) for c, r in rules.init_containers_of(spec) if isinstance(c, MAP)]
    guaranteed = _guaranteed(spec, status)
    if not guaranteed and not _asks_devices(request):
        return None

    def unit(container: Mapping[str, Any], field: str) -> Vector:
        vector = parsing.resource_list(rules.container_resources(container), field, space)
        vector[CPU] = _whole_cores(int(vector[CPU])) if guaranteed else 0
        return vector

    concurrent: list[Vector] = []
    serial: list[Vector] = []
    for i, (container, restartable) in enumerate(inits):
        (concurrent if restartable else serial).append(
            unit(container, f"spec.initContainers[{i}].resources")
        )
    for i, container in enumerate(app):
        concurrent.append(unit(container, f"spec.containers[{i}].resources"))
    pod = request.copy()
    pod[CPU] = _pod_cpu(concurrent, serial, inits)
    pod[PODS] = 0
    return NumaRequest(guaranteed, pod, tuple(concurrent), tuple(serial))


def _guaranteed(spec: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    qos = status.get("qosClass")
    if isinstance(qos, str) and qos:
        return qos == "Guaranteed"
    containers = [c for c in spec.get("containers") or () if isinstance(c, MAP)]
    inits = [c for c, _ in rules.init_containers_of(spec) if isinstance(c, MAP)]
    return _guaranteed_spec([*containers, *inits])


def _asks_devices(request: Vector) -> bool:
    """A GPU or any extended resource (the columns after cpu, memory, pods)."""
    if request.shape[0] == PODS + 2:  # the GPU column only: a scalar, cheaper than a slice
        return bool(request[PODS + 1])
    return bool(request[PODS + 1 :].any())


def defer_numa_request(pod: PodInfo, spec: Mapping[str, Any], status: Mapping[str, Any]) -> None:
    """Keep what :func:`numa_request_of` needs, only for pods a policy could align.

    The request itself is built when NUMA placement first asks (most clusters never do),
    so reading a pod costs one QoS and one device test.
    """
    if _guaranteed(spec, status) or _asks_devices(pod.request):
        pod.numa_source = (spec, status)


def numa_request_of(pod: PodInfo, space: ResourceSpace) -> NumaRequest | None:
    """The pod's NUMA request, built once from what :func:`defer_numa_request` kept."""
    if pod.numa is None and pod.numa_source is not None:
        spec, status = pod.numa_source
        pod.numa = pod_numa_request(spec, status, pod.request, space)
        pod.numa_source = None
    return pod.numa


def _whole_cores(milli: int) -> int:
    """Exclusive CPUs only for whole cores (the CPU Manager's static policy)."""
    return milli if milli % 1000 == 0 else 0


def _pod_cpu(
    concurrent: Sequence[Vector],
    serial: Sequence[Vector],
    inits: Sequence[tuple[Mapping[str, Any], bool]],
) -> int:
    """Pod-scope exclusive CPUs: the larger of the long-running sum and the init peak."""
    sidecars = 0
    peak = 0
    serial_iter = iter(serial)
    sidecar_iter = iter(concurrent)
    for _, restartable in inits:
        if restartable:
            sidecars += int(next(sidecar_iter)[CPU])
        else:
            peak = max(peak, sidecars + int(next(serial_iter)[CPU]))
    running = sum(int(v[CPU]) for v in concurrent)
    return max(running, peak)


# --- placement records ----------------------------------------------------------------------
def placement_record(
    annotations: Mapping[str, str], space: ResourceSpace
) -> tuple[str, list[tuple[str, Vector]]] | None:
    """A pod's recorded NUMA zones ``(annotation, [(zone id, amounts)])``, observed first.

    Raises ``FieldError`` naming the annotation when a record is present but malformed.
    """
    for key in (
        names.NUMA_PLACEMENT_OBSERVED_ANNOTATION,
        names.NUMA_PLACEMENT_PREDICTED_ANNOTATION,
    ):
        raw = annotations.get(key)
        if not raw:
            continue
        field = f"metadata.annotations[{key}]"
        try:
            decoded = json.loads(raw)
        except ValueError as exc:
            raise FieldError(field, f"not JSON: {exc}") from None
        if not isinstance(decoded, list) or not decoded:
            raise FieldError(field, "expected a non-empty list of {zone, amount}")
        zones: list[tuple[str, Vector]] = []
        for i, entry in enumerate(decoded):
            if not isinstance(entry, dict) or not isinstance(entry.get("zone"), str):
                raise FieldError(f"{field}[{i}]", "expected a map with zone and amount")
            zones.append(
                (entry["zone"], _known_amounts(entry.get("amount"), f"{field}[{i}]", space))
            )
        return key, zones
    return None


def _known_amounts(raw: Any, field: str, space: ResourceSpace) -> Vector:
    """A record's amounts in the columns the space has (a resource no node has is dropped)."""
    if not isinstance(raw, MAP):
        raise FieldError(f"{field}.amount", "expected a map of resource quantities")
    vector = space.zeros()
    for name, value in raw.items():
        column = space.find(str(name))
        if column is not None:
            vector[column] += parsing.amount(str(name), value, f"{field}.amount.{name}")
    return vector


__all__ = [
    "ZONE_TYPE_NODE",
    "defer_numa_request",
    "numa_request_of",
    "placement_record",
    "pod_numa_request",
    "read_node_resource_topology",
]
