"""Pods as the engine sees them: a status, a request vector, a node, a pod set.

Why: one small mutable record per pod; the Statement moves pods between
statuses during a cycle and undoes those moves on rollback, so the record is
the only per-pod state and is never deep-copied.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from crds.gpusharing import RESERVATION_APP, is_reservation_labelled
from crds.names import APP_LABEL, SCALING_APP
from scheduler.api.affinity import PodAffinity, SpreadConstraint
from scheduler.api.gpu_sharing import GpuShare
from scheduler.api.numa import NumaRequest
from scheduler.api.resources import CPU, GPU, MEMORY, Vector


class PodStatus(enum.IntEnum):
    """KAI's pod status model (docs/semantics.md §1.3)."""

    PENDING = 0
    GATED = 1
    ALLOCATED = 2
    PIPELINED = 3
    BINDING = 4
    BOUND = 5
    RUNNING = 6
    RELEASING = 7
    SUCCEEDED = 8
    FAILED = 9


ALIVE = frozenset(
    {
        PodStatus.PENDING,
        PodStatus.GATED,
        PodStatus.ALLOCATED,
        PodStatus.PIPELINED,
        PodStatus.BINDING,
        PodStatus.BOUND,
        PodStatus.RUNNING,
    }
)
ACTIVE_ALLOCATED = frozenset(
    {
        PodStatus.ALLOCATED,
        PodStatus.PIPELINED,
        PodStatus.BINDING,
        PodStatus.BOUND,
        PodStatus.RUNNING,
    }
)
ACTIVE_USED = ACTIVE_ALLOCATED | {PodStatus.RELEASING}
UTILITY_APPS = frozenset({SCALING_APP, RESERVATION_APP})

# Statuses whose resources count to the queue's allocated amount.
COUNTS_TO_QUEUE = frozenset(
    {PodStatus.ALLOCATED, PodStatus.BINDING, PodStatus.BOUND, PodStatus.RUNNING}
)


class PodInfo:
    """One pod: identity, request, placement and scheduling constraints."""

    __slots__ = (
        "admission_gated",
        "annotations",
        "base_status",
        "claims",
        "constraint_key",
        "creation",
        "gpu_groups",
        "gpu_portion",
        "gpu_share",
        "is_ours",
        "job",
        "key",
        "labels",
        "name",
        "namespace",
        "node",
        "node_affinity",
        "node_name",
        "node_selector",
        "nominated_node",
        "numa",
        "numa_source",
        "pod_affinity",
        "pod_set",
        "quota",
        "releasing_since",
        "request",
        "resource_claims",
        "snapshot_status",
        "spread",
        "status",
        "stuck_releasing",
        "task_priority",
        "tolerations",
        "uid",
        "uses_gpu",
    )

    def __init__(
        self,
        *,
        namespace: str,
        name: str,
        uid: str,
        creation: float,
        request: Vector,
        status: PodStatus,
        node: int = -1,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        node_selector: Mapping[str, str] | None = None,
        node_affinity: Any = None,
        tolerations: tuple[Mapping[str, Any], ...] = (),
        is_ours: bool = True,
        task_priority: int | None = None,
    ) -> None:
        self.namespace = namespace
        self.name = name
        self.key = f"{namespace}/{name}"
        self.uid = uid
        self.creation = creation
        self.request = request
        self.status = status
        self.node = node
        self.labels: Mapping[str, str] = labels or {}
        self.annotations: Mapping[str, str] = annotations or {}
        self.node_selector: Mapping[str, str] = node_selector or {}
        self.node_affinity = node_affinity
        self.tolerations = tolerations
        self.is_ours = is_ours
        self.task_priority = task_priority
        self.uses_gpu = bool(request[GPU] > 0)
        # What counts toward the queue (GPU thousandths, CPU millicores, memory bytes):
        # the request, except for shared GPUs and MIG slices (set by the snapshot).
        self.quota = [float(request[GPU]), float(request[CPU]), float(request[MEMORY])]
        # Fractional GPU request (None for most pods), its groups and portion per device.
        self.gpu_share: GpuShare | None = None
        self.gpu_groups: tuple[str, ...] = ()
        self.gpu_portion = 0
        self.job: str | None = None
        self.pod_set: str | None = None
        self.constraint_key: object = None
        # What the API server says, before BindRequests and the session change it.
        self.base_status = status
        # The status the cache's last snapshot gave the pod (its job's carried answers
        # were formed at it); None before the first snapshot.
        self.snapshot_status: PodStatus | None = None
        self.node_name = ""
        self.nominated_node = ""  # status.nominatedNodeName
        # A Running pod being deleted: its deletionTimestamp (epoch seconds), else None.
        # Once older than the scheduler's stuckInReleasingThreshold the pod is "stuck":
        # still Releasing, but its room is held, not offered to pipelining (set per snapshot).
        self.releasing_since: float | None = None
        self.stuck_releasing = False
        self.claims: tuple[str, ...] = ()  # PersistentVolumeClaim names of its volumes
        # DRA: (spec.resourceClaims entry name, ResourceClaim name or "" not yet created)
        self.resource_claims: tuple[tuple[str, str], ...] = ()
        # Inter-pod affinity and topology spread (None / empty for most pods).
        self.pod_affinity: PodAffinity | None = None
        self.spread: tuple[SpreadConstraint, ...] = ()
        # Held by podmuster's queue admission gate (docs/semantics.md §5.11).
        self.admission_gated = False
        # What the kubelet's Topology Manager would align (None: nothing, most pods).
        self.numa: NumaRequest | None = None
        # (spec, status) kept to build ``numa`` when NUMA placement first asks
        self.numa_source: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None

    def __repr__(self) -> str:
        return f"PodInfo({self.key}, {self.status.name}, node={self.node})"


def frees_room(pod: PodInfo) -> bool:
    """The pod's resources are being released: room a pipelined pod may wait for.

    A pod stuck in Releasing (deleted longer ago than the scheduler's
    ``stuckInReleasingThreshold``) is still Releasing but holds its room as if
    it ran: nothing is pipelined behind it (docs/semantics.md §1.3).
    """
    return pod.status == PodStatus.RELEASING and not pod.stuck_releasing


def is_utility_pod(pod: PodInfo) -> bool:
    """A scaling pod or a GPU reservation pod: it holds node capacity for our own pods.

    Its usage is not foreign: subtracting it from the fair-share total would shrink
    every queue's share by the very room it keeps for them (docs/semantics.md §7).
    Known by its ``app`` label, as KAI's scheduler knows it, not by its namespace: the
    binder's and the scale adjuster's namespaces are settings.
    """
    return pod.labels.get(APP_LABEL) in UTILITY_APPS


def is_reservation_pod(pod: PodInfo) -> bool:
    """A GPU reservation pod (label ``app=kai-resource-reservation``, in any namespace)."""
    return is_reservation_labelled(pod.labels)
