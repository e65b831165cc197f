"""The names of KAI's contract on ordinary objects: labels, annotations and defaults, once.

Why this module exists: the podgrouper writes these names, the scheduler, the binder,
the controllers, the webhooks, the simulator and the demo read them, and a name
spelt twice is a name that can drift. Every component imports them from here; the
GPU-sharing names (``gpu-fraction``, ``runai-gpu-group``, ...) live beside them in
:mod:`crds.gpusharing`. The API group/version/kind of each KAI kind stays with its
model (:mod:`crds.podgroup` and the others); :data:`KINDS` names them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

__all__ = [
    "ADMISSION_GATE",
    "ADMISSION_GATE_ANNOTATION",
    "APP_LABEL",
    "BATCH_MIN_MEMBER_ANNOTATION",
    "BUILTIN_PRIORITY_CLASSES",
    "CORE_KINDS",
    "CREATED_BY_LABEL",
    "DEFAULT_QUEUE",
    "DEFAULT_SCHEDULER_NAME",
    "KINDS",
    "LAST_EVICTION_ANNOTATION",
    "LAST_START_ANNOTATION",
    "NAMESPACE_NAME_LABEL",
    "NODE_POOL_LABEL",
    "NO_PROVISIONER",
    "NUMA_PLACEMENT_OBSERVED_ANNOTATION",
    "NUMA_PLACEMENT_PREDICTED_ANNOTATION",
    "POD_GROUP_ANNOTATION",
    "PREEMPTIBILITY_LABEL",
    "PREEMPTION_DELAY_ANNOTATION",
    "PRIORITY_CLASS_LABEL",
    "QUEUE_LABEL",
    "SCALE_UP_HINT_ANNOTATION",
    "SCALING_APP",
    "SCALING_NAMESPACE",
    "SEGMENT_PREFERRED_ANNOTATION",
    "SEGMENT_REQUIRED_ANNOTATION",
    "SEGMENT_SIZE_ANNOTATION",
    "SELECTED_NODE_ANNOTATION",
    "SKIP_PODGROUPER_ANNOTATION",
    "STALENESS_GRACE_PERIOD_ANNOTATION",
    "STALE_ANNOTATION",
    "SUBGROUP_LABEL",
    "TASK_PRIORITY_LABEL",
    "TOPOLOGY_ANNOTATION",
    "TOPOLOGY_PREFERRED_ANNOTATION",
    "TOPOLOGY_REQUIRED_ANNOTATION",
    "TOP_OWNER_METADATA_ANNOTATION",
    "UNSCHEDULABLE_POD_NAMESPACE_LABEL",
    "UNSCHEDULABLE_POD_NAME_LABEL",
    "GroupKind",
    "group_kind",
]

GroupKind = tuple[str, str]
"""``(api group, kind)``: how an object's type is told apart (``""`` for the core group)."""

DEFAULT_SCHEDULER_NAME: Final = "kai-scheduler"
"""``spec.schedulerName`` of the pods podmuster schedules, unless configured otherwise."""

# --- what the podgrouper writes and the scheduler reads --------------------------------
POD_GROUP_ANNOTATION: Final = "pod-group-name"
"""On a pod: the name of its PodGroup (same namespace)."""
SUBGROUP_LABEL: Final = "kai.scheduler/subgroup-name"
"""On a pod: the pod set (leaf subgroup) of its PodGroup it belongs to."""
QUEUE_LABEL: Final = "kai.scheduler/queue"
"""On a workload, a pod or a PodGroup: the Queue the work is charged to."""
DEFAULT_QUEUE: Final = "default-queue"
"""The queue of work whose workload names none."""
NODE_POOL_LABEL: Final = "kai.scheduler/node-pool"
"""On a PodGroup and on nodes: the node pool (scheduling shard) it belongs to."""
PRIORITY_CLASS_LABEL: Final = "priorityClassName"
"""On a workload or pod: the PriorityClass its PodGroup gets (KAI's label, not the spec field)."""
PREEMPTIBILITY_LABEL: Final = "kai.scheduler/preemptibility"
"""On a workload or pod: ``preemptible`` or ``non-preemptible``, overriding the priority's rule."""
TASK_PRIORITY_LABEL: Final = "kai.scheduler/task-priority"
"""On a pod: its order within its gang (higher first)."""
TOP_OWNER_METADATA_ANNOTATION: Final = "kai.scheduler/top-owner-metadata"
"""On a pod: the top owner's identity, as the podgrouper resolved it."""
SKIP_PODGROUPER_ANNOTATION: Final = "kai.scheduler/skip-podgrouper"
"""On a pod or any of its owners, ``"true"``: the podgrouper leaves the pod alone (the user
writes its PodGroup and sets ``pod-group-name`` themselves)."""
BATCH_MIN_MEMBER_ANNOTATION: Final = "kai.scheduler/batch-min-member"
"""On a Job: its PodGroup's minMember; on a JobSet: the root minSubGroup; on a JobSet's
replicatedJob template: each replica's subgroup minMember."""
PREEMPTION_DELAY_ANNOTATION: Final = "kai.scheduler/preemption-delay"
"""On a workload or pod: its PodGroup's ``spec.preemptionDelay`` (Go duration, >= 0)."""
STALENESS_GRACE_PERIOD_ANNOTATION: Final = "kai.scheduler/staleness-grace-period"
"""On a workload or pod: its PodGroup's ``spec.stalenessGracePeriod`` (Go duration)."""

# --- queue admission through scheduling gates (docs/semantics.md §5.11) ------------------
ADMISSION_GATE: Final = "kai.scheduler/queue-admission"
"""A pod's ``spec.schedulingGates`` entry: held until its queue can admit its whole gang."""
ADMISSION_GATE_ANNOTATION: Final = "kai.scheduler/admission-gate"
"""On a Queue: ``"true"`` holds new pods of the queue and its descendants behind the gate."""

# --- topology ----------------------------------------------------------------------------
TOPOLOGY_ANNOTATION: Final = "kai.scheduler/topology"
TOPOLOGY_REQUIRED_ANNOTATION: Final = "kai.scheduler/topology-required-placement"
TOPOLOGY_PREFERRED_ANNOTATION: Final = "kai.scheduler/topology-preferred-placement"
SEGMENT_SIZE_ANNOTATION: Final = "kai.scheduler/segment-size"
SEGMENT_REQUIRED_ANNOTATION: Final = "kai.scheduler/segment-topology-required-placement"
SEGMENT_PREFERRED_ANNOTATION: Final = "kai.scheduler/segment-topology-preferred-placement"

# --- NUMA placement records (KAI v0.17), JSON lists of {zone, amount} ----------------------
NUMA_PLACEMENT_OBSERVED_ANNOTATION: Final = "kai.scheduler/numa-placement-observed"
"""On a pod: the NUMA zones the kubelet gave it, as a node-local exporter observed them."""
NUMA_PLACEMENT_PREDICTED_ANNOTATION: Final = "kai.scheduler/numa-placement-predicted"
"""On a pod: the NUMA zones a scheduler predicted for it when binding."""

# --- what the scheduler writes -------------------------------------------------------------
LAST_START_ANNOTATION: Final = "kai.scheduler/last-start-timestamp"
"""On a PodGroup: when its gang last started (minimum runtime counts from it)."""
LAST_EVICTION_ANNOTATION: Final = "kai.scheduler/last-eviction-timestamp"
"""On a PodGroup: when the scheduler last evicted a pod of it (preemption delay counts from it)."""
STALE_ANNOTATION: Final = "kai.scheduler/stale-podgroup-timestamp"
"""On a PodGroup: since when it has run below its gang size."""
SCALE_UP_HINT_ANNOTATION: Final = "kai.scheduler/scale-up-hint"
"""On a PodGroup: the nodes it needs that the cluster does not have."""

# --- what marks the objects our components create in users' namespaces -------------------
CREATED_BY_LABEL: Final = "podmuster.io/created-by"
"""On an object a component creates at run time outside the chart (a BindRequest, a
GPU-sharing ConfigMap): the component's name. The chart's cleanup hook deletes what
carries it after ``helm uninstall`` (docs/install.md#uninstall); nothing else does."""

# --- what the node-scale-adjuster writes on its stand-in pods ----------------------------
SCALING_NAMESPACE: Final = "kai-scale-adjust"
"""Where the node-scale-adjuster creates its stand-in pods."""
APP_LABEL: Final = "app"
"""The label that marks KAI's utility pods: a scaling pod (:data:`SCALING_APP`) or a GPU
reservation pod (``crds.gpusharing.RESERVATION_APP``), in whatever namespace they run."""
SCALING_APP: Final = "scaling-pod"
UNSCHEDULABLE_POD_NAME_LABEL: Final = "kai.scheduler/unschedulable-pod-name"
UNSCHEDULABLE_POD_NAMESPACE_LABEL: Final = "kai.scheduler/unschedulable-pod-namespace"

# --- priorities --------------------------------------------------------------------------
BUILTIN_PRIORITY_CLASSES: Final = MappingProxyType(
    {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
)
"""The PriorityClasses the chart installs; assumed present where a snapshot lists none."""

# --- volume binding (Kubernetes' names, read and written by the scheduler and the binder) ---
SELECTED_NODE_ANNOTATION: Final = "volume.kubernetes.io/selected-node"
"""On a PersistentVolumeClaim: the node a dynamically provisioned volume must be reachable from."""
NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"
"""A StorageClass provisioner that provisions nothing: only pre-created PVs serve its claims."""

# --- inter-pod affinity (Kubernetes' names, read by the scheduler) -------------------------
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
"""On every Namespace (set by the API server): its name, for namespace selectors."""


# --- the KAI kinds, by group and kind ------------------------------------------------------
KINDS: Final = MappingProxyType(
    {
        "PodGroup": ("scheduling.run.ai", "PodGroup"),
        "Queue": ("scheduling.run.ai", "Queue"),
        "BindRequest": ("scheduling.run.ai", "BindRequest"),
        "Topology": ("kai.scheduler", "Topology"),
    }
)
"""KAI's kinds as :data:`GroupKind`: a ``PodGroup`` of another group is not KAI's."""

CORE_KINDS: Final = MappingProxyType(
    {
        "Node": ("", "Node"),
        "Pod": ("", "Pod"),
        "PriorityClass": ("scheduling.k8s.io", "PriorityClass"),
        "PersistentVolumeClaim": ("", "PersistentVolumeClaim"),
        "PersistentVolume": ("", "PersistentVolume"),
        "StorageClass": ("storage.k8s.io", "StorageClass"),
        "Namespace": ("", "Namespace"),
        "NodeResourceTopology": ("topology.node.k8s.io", "NodeResourceTopology"),
        "ResourceClaim": ("resource.k8s.io", "ResourceClaim"),
        "ResourceSlice": ("resource.k8s.io", "ResourceSlice"),
        "DeviceClass": ("resource.k8s.io", "DeviceClass"),
    }
)
"""The Kubernetes kinds the scheduler reads besides KAI's, as :data:`GroupKind`."""


def group_kind(body: Mapping[str, Any], *, assumed: GroupKind | None = None) -> GroupKind:
    """``(group, kind)`` of an object from its ``apiVersion`` and ``kind``.

    ``apiVersion: v1`` is the core group ``""``. An object without ``apiVersion``
    (a short hand-written snapshot) takes the group of ``assumed`` when its kind
    matches, else the core group.
    """
    kind = body.get("kind")
    kind = kind if isinstance(kind, str) else ""
    api_version = body.get("apiVersion")
    if not isinstance(api_version, str) or not api_version:
        if assumed is not None and assumed[1] == kind:
            return assumed
        return ("", kind)
    group, slash, _version = api_version.rpartition("/")
    return (group if slash else "", kind)
