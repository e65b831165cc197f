"""Readers from one raw object to the engine's record of it: nodes, pods, pod groups, bind requests.

Why: the cluster cache ingests objects one at a time (from files or from
watch events) and must parse each exactly once; these pure functions do that
and raise ``FieldError`` naming the bad field, never anything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crds import bindrequest, durations, podgroup, rules
from crds.errors import shown
from crds.meta import strict_rfc3339_seconds
from crds.names import (
    LAST_EVICTION_ANNOTATION,
    LAST_START_ANNOTATION,
    SCALE_UP_HINT_ANNOTATION,
    STALE_ANNOTATION,
    TASK_PRIORITY_LABEL,
)
from scheduler.api import gpu_sharing
from scheduler.api.gpu_sharing import GpuShare
from scheduler.api.nodes import NodeMeta
from scheduler.api.podgroups import PodGroupInfo, PodSetInfo, SubGroupNode
from scheduler.api.pods import PodInfo, PodStatus
from scheduler.api.resources import GPU, GPU_UNIT, ResourceSpace, Vector
from scheduler.api.topology import TopologyTree
from scheduler.cache import numa_reading, parsing
from scheduler.cache.affinity_reading import read_pod_affinity, read_spread
from scheduler.cache.parsing import MAP, FieldError, validated
from scheduler.cache.topologies import read_topology_tree
from scheduler.cache.volume_reading import pod_claims

DEFAULT_POD_SET = podgroup.DEFAULT_SUBGROUP


def meta_of(body: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = body.get("metadata") or {}
    return meta if isinstance(meta, MAP) else {}


def creation_of(body: Mapping[str, Any]) -> float:
    return _creation(meta_of(body))


def _creation(meta: Mapping[str, Any]) -> float:
    raw = meta.get("creationTimestamp")
    return parsing.timestamp(raw, "metadata.creationTimestamp") if raw is not None else 0.0


def uid_of(body: Mapping[str, Any]) -> str:
    return _uid(meta_of(body))


def _uid(meta: Mapping[str, Any]) -> str:
    return str(meta.get("uid") or f"{meta.get('namespace', '')}/{meta.get('name', '')}")


def key_of(body: Mapping[str, Any]) -> str:
    """``namespace/name`` for namespaced kinds, ``name`` otherwise."""
    meta = meta_of(body)
    kind = body.get("kind")
    if kind in ("Pod", "PodGroup", "BindRequest", "PersistentVolumeClaim", "ResourceClaim"):
        return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
    return str(meta.get("name"))


def read_node(body: Mapping[str, Any], space: ResourceSpace) -> tuple[NodeMeta, Vector]:
    meta = meta_of(body)
    spec = parsing.field_map(body.get("spec"), "spec")
    status = parsing.field_map(body.get("status"), "status")
    allocatable = parsing.resource_list(
        status.get("allocatable"), "status.allocatable", space, default_pods=110
    )
    conditions = status.get("conditions") or ()
    if not isinstance(conditions, list | tuple):
        raise FieldError("status.conditions", f"expected a list, got {shown(conditions)}")
    ready = conditions_pass(conditions)
    taints = parsing.map_list(spec.get("taints"), "spec.taints")
    return (
        NodeMeta(
            name=str(meta.get("name")),
            labels=parsing.string_map(meta.get("labels"), "metadata.labels"),
            taints=tuple(taints),
            unschedulable=_flag(spec.get("unschedulable"), "spec.unschedulable"),
            ready=ready,
        ),
        allocatable,
    )


# Conditions that must be False for a node to take pods, and the one that must be True.
_MUST_BE_FALSE = frozenset({"MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"})
_MUST_BE_TRUE = "Ready"


def conditions_pass(conditions: list[Any] | tuple[Any, ...]) -> bool:
    """KAI's node condition check, cordon aside: every ``Ready`` condition is ``True`` and
    every memory, disk or PID pressure or ``NetworkUnavailable`` condition is ``False``
    ("Unknown" fails). A condition the node does not report passes: a node without
    conditions is ready. Other condition types are not read."""
    for condition in conditions:
        if not isinstance(condition, MAP):
            continue
        kind, status = condition.get("type"), condition.get("status")
        if kind == _MUST_BE_TRUE:
            if status != "True":
                return False
        elif isinstance(kind, str) and kind in _MUST_BE_FALSE and status != "False":
            return False
    return True


def _flag(raw: Any, field: str) -> bool:
    """A boolean field: unset is false; ``"false"`` (a string) is an error, not true."""
    if raw is None:
        return False
    if not isinstance(raw, bool):
        raise FieldError(field, f"expected true or false, got {shown(raw)}")
    return raw


def _base_status(meta: Mapping[str, Any], spec: Mapping[str, Any], phase: str) -> PodStatus:
    node_name = spec.get("nodeName")
    if phase == "Succeeded":
        return PodStatus.SUCCEEDED
    if phase == "Failed":
        return PodStatus.FAILED
    if meta.get("deletionTimestamp") and node_name:
        return PodStatus.RELEASING
    if phase == "Running":
        return PodStatus.RUNNING
    if node_name:
        return PodStatus.BOUND
    if spec.get("schedulingGates"):
        return PodStatus.GATED
    return PodStatus.PENDING


def read_pod(
    body: Mapping[str, Any],
    space: ResourceSpace,
    scheduler_name: str,
    requests: parsing.RequestMemo | None = None,
) -> PodInfo:
    """A pod with its API-server state; BindRequests are applied later by the cache.

    ``requests``: the caller's memo of pod requests for ``space`` (:func:`parsing.pod_request`).
    """
    meta = meta_of(body)
    spec = body.get("spec") or {}
    status = body.get("status") or {}
    if not isinstance(spec, MAP):
        raise FieldError("spec", "expected a map")
    phase = str(status.get("phase", "Pending")) if isinstance(status, MAP) else "Pending"
    labels = parsing.string_map(meta.get("labels"), "metadata.labels")
    task_priority = None
    if TASK_PRIORITY_LABEL in labels:
        try:
            task_priority = int(labels[TASK_PRIORITY_LABEL])
        except ValueError:
            task_priority = None
    affinity = parsing.field_map(spec.get("affinity"), "spec.affinity")
    node_affinity = parsing.field_map(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity")
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    tolerations = tuple(parsing.map_list(spec.get("tolerations"), "spec.tolerations"))
    selector = parsing.string_map(spec.get("nodeSelector"), "spec.nodeSelector")
    base = _base_status(meta, spec, phase)
    pod = PodInfo(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name")),
        uid=_uid(meta),
        creation=_creation(meta),
        request=parsing.pod_request(spec, space, requests),
        status=base,
        labels=labels,
        annotations=parsing.string_map(meta.get("annotations"), "metadata.annotations"),
        node_selector=selector,
        node_affinity=required,
        tolerations=tolerations,
        is_ours=spec.get("schedulerName") == scheduler_name,
        task_priority=task_priority,
    )
    pod.node_name = str(spec.get("nodeName") or "")
    if base == PodStatus.RELEASING and phase == "Running":  # KAI: only a Running pod gets stuck
        pod.releasing_since = parsing.timestamp(
            meta.get("deletionTimestamp"), "metadata.deletionTimestamp"
        )
    pod.admission_gated = base == PodStatus.GATED and rules.pod_admission_gated(spec)
    if isinstance(status, MAP):
        pod.nominated_node = str(status.get("nominatedNodeName") or "")
    _read_pod_placement_rules(pod, spec)
    if pod.is_ours and spec.get("volumes"):  # another scheduler's claims are not ours to bind
        pod.claims = pod_claims(spec, pod.name)
    if selector or required or tolerations:
        pod.constraint_key = repr((sorted(selector.items()), required, tolerations))
    _read_gpu_kind(pod, spec, space)
    numa_reading.defer_numa_request(pod, spec, status if isinstance(status, MAP) else {})
    return pod


def _read_pod_placement_rules(pod: PodInfo, spec: Mapping[str, Any]) -> None:
    """Inter-pod affinity and topology spread: strict for our pods, lenient for others.

    Another scheduler's pod counts for its labels and its anti-affinity toward
    ours; a term the API server would have refused is dropped rather than
    leaving the pod, and the room it holds, out of the snapshot.
    """
    if not spec.get("affinity") and not spec.get("topologySpreadConstraints"):
        return
    try:
        pod.pod_affinity = read_pod_affinity(spec, pod.namespace, pod.labels)
    except FieldError:
        if pod.is_ours:
            raise
    if not pod.is_ours:
        return  # spread constrains only the pod being placed
    pod.spread = read_spread(spec, pod.labels)


def read_gpu_share(annotations: Mapping[str, str], spec: Mapping[str, Any]) -> GpuShare | None:
    """The pod's fractional GPU request from its annotations (:func:`crds.rules.shared_gpu`).

    A shared request may not be combined with a whole-GPU resource
    (:func:`crds.rules.whole_gpu_conflicts`, the webhook's rule); a fraction is kept in
    thousandths (:func:`crds.rules.fraction_units`).

    A pod already on a node is read as earlier releases admitted it (``bound`` in
    :func:`crds.rules.shared_gpu`, and a whole-GPU key next to the share, both counted):
    a pod the cache cannot read is not counted at all, so refusing it would hand its GPU
    to another pod.
    """
    bound = bool(spec.get("nodeName"))
    try:
        shared = rules.shared_gpu(annotations, bound=bound)
        if shared is None:
            return None
        for conflict in () if bound else rules.whole_gpu_conflicts(spec, annotations):
            raise conflict
    except rules.RuleError as exc:
        raise FieldError(exc.field, exc.message) from None
    portion = 0 if shared.fraction is None else rules.fraction_units(shared.fraction)
    return GpuShare(portion, shared.memory_mib, shared.devices, shared.container)


def _read_gpu_kind(pod: PodInfo, spec: Mapping[str, Any], space: ResourceSpace) -> None:
    """Shared GPU and MIG requests: share record, quota and a constraint key of their kind.

    The node filters for GPU kinds (MIG strategy, memory label) depend on the
    kind, and the session caches filter results per constraint key.
    """
    # only our pods' annotations are ours to read: another scheduler's pod counts what it requests
    share = read_gpu_share(pod.annotations, spec) if pod.is_ours else None
    if share is not None:
        pod.gpu_share = share
        pod.uses_gpu = True
        pod.quota[0] = float(share.devices * share.portion)
        pod.constraint_key = (gpu_sharing.SHARED_KIND, share.by_memory, pod.constraint_key)
        return
    mig_gpus = 0
    extended = pod.request[GPU + 1 :]
    for column in extended.nonzero()[0] if extended.shape[0] else ():
        slices = gpu_sharing.mig_slice_gpus(space.names[int(column) + GPU + 1])
        mig_gpus += slices * int(pod.request[int(column) + GPU + 1])
    if mig_gpus:
        pod.uses_gpu = True
        pod.quota[0] += float(mig_gpus * GPU_UNIT)
        pod.constraint_key = (gpu_sharing.MIG_KIND, pod.constraint_key)
    elif pod.uses_gpu:
        pod.constraint_key = (gpu_sharing.WHOLE_KIND, pod.constraint_key)


def bind_request_pod_key(body: Mapping[str, Any]) -> str:
    """``namespace/name`` of the pod a BindRequest binds (``spec.podName``, else its own name)."""
    meta = meta_of(body)
    pod_name = (body.get("spec") or {}).get("podName") or meta.get("name")
    return f"{meta.get('namespace') or 'default'}/{pod_name}"


def bind_request_gpu_groups(body: Mapping[str, Any]) -> tuple[str, ...]:
    """The shared GPU groups a BindRequest selected (``spec.selectedGPUGroups``)."""
    groups = (body.get("spec") or {}).get("selectedGPUGroups") or ()
    if not isinstance(groups, list | tuple):
        raise FieldError("spec.selectedGPUGroups", "expected a list of group ids")
    return tuple(str(g) for g in groups if g)


def read_bind_request(body: Mapping[str, Any]) -> tuple[str, str] | None:
    """(pod key, selected node) for a BindRequest that has not finally failed, else None."""
    request = validated(bindrequest.BindRequest, body)
    spec = body.get("spec") or {}
    try:
        failed = rules.bind_request_finally_failed(spec, body.get("status") or {})
    except rules.RuleError as exc:
        raise FieldError(exc.field, exc.message) from None
    node = request.spec.selected_node
    if failed or not node:
        return None
    return bind_request_pod_key(body), node


def read_priority_class(body: Mapping[str, Any]) -> tuple[str, int, bool]:
    value = body.get("value")
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError("value", f"expected an integer, got {shown(value)}")
    return str(meta_of(body).get("name")), value, bool(body.get("globalDefault"))


@dataclass(slots=True)
class PodGroupRecord:
    """A PodGroup as read; priority is resolved against PriorityClasses at snapshot time."""

    namespace: str
    name: str
    uid: str
    queue: str
    priority_class: str
    preemptibility: str
    creation: float
    pod_sets: tuple[tuple[str, int], ...]
    last_start: float | None
    stale_since: float | None
    topology: str
    scale_up_hint: str = ""
    topology_tree: TopologyTree | None = None
    shape: SubGroupNode | None = None
    last_eviction: float | None = None
    preemption_delay: float | None = None
    staleness_grace: float | None = None
    notes: tuple[str, ...] = ()  # what was ignored on reading, shown with the group's notes

    def info(self, classes: Mapping[str, int], default_priority: int) -> PodGroupInfo:
        priority = rules.priority_of(self.priority_class, classes, default_priority)
        preemptible = rules.is_preemptible(self.preemptibility, priority)
        return PodGroupInfo(
            namespace=self.namespace,
            name=self.name,
            uid=self.uid,
            queue=self.queue,
            priority=priority,
            preemptible=preemptible,
            creation=self.creation,
            pod_sets=[PodSetInfo(name, minimum) for name, minimum in self.pod_sets],
            priority_class=self.priority_class,
            last_start=self.last_start,
            stale_since=self.stale_since,
            topology=self.topology,
            scale_up_hint=self.scale_up_hint,
            topology_tree=self.topology_tree,
            shape=self.shape,
            last_eviction=self.last_eviction,
            preemption_delay=self.preemption_delay,
            staleness_grace=self.staleness_grace,
        )


def _pod_sets(spec: podgroup.PodGroupSpec) -> tuple[tuple[str, int], ...]:
    """Leaf sub-groups with minAvailable minMember; the implicit ``default`` set without.

    The subgroups must form a tree and use minMember/minSubGroup as KAI allows
    (:func:`crds.podgroup.min_definition_problems`), except what KAI's scheduler
    reads anyway (:data:`crds.podgroup.SCHEDULER_READS_ANYWAY`: a leaf without
    ``minMember`` needs 0 pods, a mid-level subgroup's ``minMember`` is ignored).
    """
    subgroups = spec.sub_groups or []
    for field, message in podgroup.subgroup_problems(spec)[:1] if subgroups else ():
        raise FieldError(field, message)
    for field, message, kind in podgroup.min_definition_problems(spec):
        if kind not in podgroup.SCHEDULER_READS_ANYWAY:
            raise FieldError(field, message)
    if not subgroups:
        return ((DEFAULT_POD_SET, spec.default_min_available()),)
    parents = {sub.parent.lower() for sub in subgroups if sub.parent}
    return tuple(
        (sub.name, sub.min_available()) for sub in subgroups if sub.name.lower() not in parents
    )


def _shape(spec: podgroup.PodGroupSpec) -> SubGroupNode | None:
    """The subgroup tree (checked by :func:`_pod_sets` first); None for the plain gang."""
    subgroups = spec.sub_groups or []
    if not subgroups:
        return None
    children: dict[str, list[podgroup.SubGroup]] = {}
    for sub in subgroups:
        children.setdefault(sub.parent.lower() if sub.parent else "", []).append(sub)

    def node(name: str, min_sub_group: int | None) -> SubGroupNode:
        members = tuple(
            node(sub.name.lower(), sub.min_sub_group) if sub.name.lower() in children else sub.name
            for sub in children.get(name, ())
        )
        return SubGroupNode(name, min_sub_group, members)

    return node("", spec.min_sub_group)


def _seconds(text: str | None, field: str) -> float | None:
    if text is None:
        return None
    try:
        return durations.seconds(text)
    except ValueError as exc:
        raise FieldError(field, str(exc)) from None


def read_pod_group(body: Mapping[str, Any]) -> PodGroupRecord:
    """A PodGroup checked by its model (:class:`crds.podgroup.PodGroup`), as the engine record."""
    group = validated(podgroup.PodGroup, body)
    meta = group.metadata
    spec = group.spec
    annotations = meta.annotations or {}
    notes: list[str] = []
    last_start = _stamp(annotations, LAST_START_ANNOTATION, notes)
    stale = _stamp(annotations, STALE_ANNOTATION, notes)
    evicted = _stamp(annotations, LAST_EVICTION_ANNOTATION, notes)
    topology_tree = (
        read_topology_tree(body.get("spec") or {})
        if spec.topology_constraint or any(s.topology_constraint for s in spec.sub_groups or ())
        else None
    )
    topology = topology_tree.root.topology if topology_tree and topology_tree.root else ""
    created = meta.creation_timestamp
    return PodGroupRecord(
        namespace=meta.namespace or "default",
        name=meta.name,
        uid=meta.uid or f"{meta.namespace or ''}/{meta.name}",
        queue=spec.queue or "",
        priority_class=spec.priority_class_name or "",
        preemptibility=spec.preemptibility or "",
        creation=parsing.timestamp(created, "metadata.creationTimestamp") if created else 0.0,
        pod_sets=_pod_sets(spec),
        last_start=last_start,
        stale_since=stale,
        scale_up_hint=annotations.get(SCALE_UP_HINT_ANNOTATION) or "",
        topology=topology,
        topology_tree=topology_tree,
        shape=_shape(spec),
        last_eviction=evicted,
        preemption_delay=_seconds(spec.preemption_delay, "spec.preemptionDelay"),
        staleness_grace=_seconds(spec.staleness_grace_period, "spec.stalenessGracePeriod"),
        notes=tuple(notes),
    )


def _stamp(annotations: Mapping[str, str], name: str, notes: list[str]) -> float | None:
    """A timestamp annotation the scheduler writes, or None when absent or unreadable.

    A value that is not a full RFC 3339 date-time is ignored, with a note on the
    PodGroup, as KAI's scheduler ignores it (it leaves the time unset): the group is
    still scheduled, and the scheduler's next stamp replaces the value.
    """
    raw = annotations.get(name)
    if not raw:
        return None
    try:
        return strict_rfc3339_seconds(raw)
    except ValueError:
        notes.append(
            f"IgnoredAnnotation: metadata.annotations[{name}]: {shown(raw)} is not an RFC 3339 "
            "date-time (such as 2026-01-02T15:04:05Z); it is ignored"
        )
        return None
