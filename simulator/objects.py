"""Kubernetes objects the simulator feeds to the engine: nodes, pods, PodGroups, queues.

Why: every input format (the Alibaba trace, the project's CSV, the cluster
YAML) ends up as the same plain manifests the live scheduler reads, built in
one place so that a pod from a trace and a pod from a manifest look alike to
the engine.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any, Final

from crds.gpusharing import FRACTION, GPU_GROUP_LABEL, GPU_RESOURCE
from crds.meta import ObjectMeta
from crds.names import DEFAULT_SCHEDULER_NAME, POD_GROUP_ANNOTATION, QUEUE_LABEL
from crds.podgroup import PodGroup, PodGroupSpec
from crds.quantities import parse_quantity
from crds.queue import Queue, QueueResource, QueueResources, QueueSpec

GPU_MODEL_LABEL: Final = "nvidia.com/gpu.product"
POOL_LABEL: Final = "simulate.podmuster.io/pool"


def rfc3339(seconds: float) -> str:
    """Simulated seconds as an RFC 3339 timestamp (simulated time 0 is the Unix epoch)."""
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node(
    name: str,
    *,
    cpu_milli: int,
    memory_mib: int,
    gpus: int,
    labels: dict[str, str] | None = None,
    pods: int = 110,
    ephemeral_storage_mib: int | None = None,
) -> dict[str, Any]:
    allocatable: dict[str, str] = {
        "cpu": f"{cpu_milli}m",
        "memory": f"{memory_mib}Mi",
        "pods": str(pods),
    }
    if ephemeral_storage_mib is not None:
        allocatable["ephemeral-storage"] = f"{ephemeral_storage_mib}Mi"
    if gpus:
        allocatable[GPU_RESOURCE] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "status": {"allocatable": allocatable},
    }


def gpu_request(gpus: float) -> tuple[int, str | None]:
    """(whole GPUs for ``nvidia.com/gpu``, ``gpu-fraction`` annotation) for a per-pod GPU ask.

    A fraction below one GPU is a shared-GPU pod: no ``nvidia.com/gpu``
    request, the ``gpu-fraction`` annotation instead (docs/cli.md §1).
    """
    if 0 < gpus < 1:
        return 0, f"{gpus:g}"
    return int(gpus), None


def pod(
    namespace: str,
    name: str,
    *,
    pod_group: str,
    queue: str,
    priority_class: str,
    cpu_milli: int,
    memory_mib: int,
    gpus: float,
    created: float,
    node_affinity: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A pending pod of our scheduler, already patched by the podgrouper."""
    whole, fraction = gpu_request(gpus)
    requests: dict[str, str] = {}
    if cpu_milli:
        requests["cpu"] = f"{cpu_milli}m"
    if memory_mib:
        requests["memory"] = f"{memory_mib}Mi"
    resources: dict[str, Any] = {"requests": requests}
    if whole:
        requests[GPU_RESOURCE] = str(whole)
        resources["limits"] = {GPU_RESOURCE: str(whole)}
    annotations = {POD_GROUP_ANNOTATION: pod_group}
    if fraction is not None:
        annotations[FRACTION] = fraction
    spec: dict[str, Any] = {
        "schedulerName": DEFAULT_SCHEDULER_NAME,
        "priorityClassName": priority_class,
        "containers": [{"name": "main", "resources": resources}],
    }
    if node_affinity:
        spec["affinity"] = {"nodeAffinity": node_affinity}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"{namespace}/{name}",
            "creationTimestamp": rfc3339(created),
            "labels": {QUEUE_LABEL: queue},
            "annotations": annotations,
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def pod_group(
    namespace: str,
    name: str,
    *,
    queue: str,
    priority_class: str,
    min_member: int,
    created: float,
) -> dict[str, Any]:
    return PodGroup(
        metadata=ObjectMeta(
            name=name,
            namespace=namespace,
            uid=f"{namespace}/{name}-pg",
            creation_timestamp=rfc3339(created),
        ),
        spec=PodGroupSpec(min_member=min_member, queue=queue, priority_class_name=priority_class),
    ).to_manifest()


def queue(
    name: str,
    *,
    parent: str | None = None,
    gpu_quota: float = 0,
    gpu_limit: float = -1,
    over_quota_weight: float = 1,
    priority: int | None = None,
) -> dict[str, Any]:
    unlimited = QueueResource(quota=-1, limit=-1, over_quota_weight=over_quota_weight)
    resources = QueueResources(
        gpu=QueueResource(quota=gpu_quota, limit=gpu_limit, over_quota_weight=over_quota_weight),
        cpu=unlimited,
        memory=unlimited,
    )
    spec = QueueSpec(parent_queue=parent or None, priority=priority, resources=resources)
    return Queue(metadata=ObjectMeta(name=name), spec=spec).to_manifest()


def missing_queue(name: str, known: Collection[str]) -> str | None:
    """Why ``name`` (a team, a queue's parent, a sweep's queue) names no queue of ``known``,
    or None when it names one. Every file that names a queue says so in these words."""
    if name in known:
        return None
    return f"no queue {name!r} in the cluster; known: {', '.join(sorted(known)) or 'none'}"


def node_gpus(manifest: dict[str, Any]) -> float:
    """Whole GPUs a Node manifest offers (``status.allocatable``, ``nvidia.com/gpu``)."""
    raw = ((manifest.get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE)
    if raw is None:
        return 0.0
    return float(parse_quantity(str(raw)))


def bound(
    manifest: dict[str, Any], node: str, now: float, gpu_groups: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The pod once bound and started on ``node`` (a shallow copy; the pending one is kept).

    A shared-GPU pod gets its group label(s), as the binder writes them
    (docs/cli.md §1): ``runai-gpu-group=<first>``, and one
    ``runai-gpu-group/<id>`` per device when it has several.
    """
    metadata = manifest["metadata"]
    if gpu_groups:
        labels = dict(metadata.get("labels") or {})
        labels[GPU_GROUP_LABEL] = gpu_groups[0]
        if len(gpu_groups) > 1:
            labels.update({f"{GPU_GROUP_LABEL}/{group}": group for group in gpu_groups})
        metadata = {**metadata, "labels": labels}
    return {
        **manifest,
        "metadata": metadata,
        "spec": {**manifest["spec"], "nodeName": node},
        "status": {"phase": "Running", "startTime": rfc3339(now)},
    }
