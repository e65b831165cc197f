"""Turn raw Kubernetes objects into a ClusterSnapshot (a pure conversion).

Why: the offline CLI, the simulator and the live scheduler's cache all start
from the same objects; one pure function from objects to snapshot keeps their
decisions identical. Bad objects raise ``crds.errors.InputError`` naming the object and
the field; callers decide whether that stops them (the CLI) or is reported
while the rest is served (the live scheduler, ``strict=False``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crds import errors
from crds.documents import SourcedObject
from crds.errors import InputError
from scheduler.api.nodes import NodeMeta, NodeTable
from scheduler.api.podgroups import PodGroupInfo, PodSetInfo
from scheduler.api.pods import ACTIVE_USED, PodInfo, PodStatus
from scheduler.api.queues import QueueTree
from scheduler.api.resources import QUEUE_COLUMNS, ResourceSpace, widen
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.cache import parsing, queue_tree
from scheduler.cache.parsing import FieldError

DEFAULT_PRIORITY = 50
NON_PREEMPTIBLE_FROM = 100
# PriorityClasses the chart installs; assumed present when a snapshot does not list them.
BUILTIN_PRIORITY_CLASSES = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
POD_GROUP_ANNOTATION = "pod-group-name"
SUBGROUP_LABEL = "kai.scheduler/subgroup-name"
TASK_PRIORITY_LABEL = "kai.scheduler/task-priority"
LAST_START_ANNOTATION = "kai.scheduler/last-start-timestamp"
STALE_ANNOTATION = "kai.scheduler/stale-podgroup-timestamp"
DEFAULT_POD_SET = "default"


def object_error(raw: SourcedObject, field: str, message: str) -> InputError:
    """The one-line input error for a bad field of ``raw``."""
    return errors.object_error(raw.source, raw.obj, field, message)


@dataclass(slots=True)
class SnapshotResult:
    snapshot: ClusterSnapshot
    errors: list[InputError] = field(default_factory=list)
    ignored_kinds: set[str] = field(default_factory=set)
    ungrouped_pods: list[PodInfo] = field(default_factory=list)


_KINDS = {"Node", "Pod", "PodGroup", "Queue", "BindRequest", "PriorityClass", "Topology"}


def _meta(body: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = body.get("metadata") or {}
    return meta if isinstance(meta, Mapping) else {}


def _creation(body: Mapping[str, Any]) -> float:
    raw = _meta(body).get("creationTimestamp")
    return parsing.timestamp(raw, "metadata.creationTimestamp") if raw is not None else 0.0


def _uid(body: Mapping[str, Any]) -> str:
    meta = _meta(body)
    return str(meta.get("uid") or f"{meta.get('namespace', '')}/{meta.get('name', '')}")


class _Builder:
    def __init__(self, scheduler_name: str, now: float, strict: bool) -> None:
        self.scheduler_name = scheduler_name
        self.now = now
        self.strict = strict
        self.space = ResourceSpace()
        self.result_errors: list[InputError] = []

    def guard(self, raw: SourcedObject, fn: Any) -> Any:
        try:
            return fn()
        except FieldError as exc:
            error = object_error(raw, exc.field, exc.message)
            if self.strict:
                raise error from None
            self.result_errors.append(error)
            return None

    def node(self, body: Mapping[str, Any]) -> tuple[NodeMeta, Any]:
        meta = _meta(body)
        spec = body.get("spec") or {}
        status = body.get("status") or {}
        allocatable = parsing.resource_list(
            status.get("allocatable"), "status.allocatable", self.space, default_pods=110
        )
        ready = True
        for condition in status.get("conditions") or ():
            if isinstance(condition, Mapping) and condition.get("type") == "Ready":
                ready = condition.get("status") == "True"
        taints = spec.get("taints") or ()
        if not isinstance(taints, list | tuple):
            raise FieldError("spec.taints", "expected a list")
        return (
            NodeMeta(
                name=str(meta.get("name")),
                labels=dict(meta.get("labels") or {}),
                taints=tuple(t for t in taints if isinstance(t, Mapping)),
                unschedulable=bool(spec.get("unschedulable", False)),
                ready=ready,
            ),
            allocatable,
        )

    def pod(
        self, body: Mapping[str, Any], binds: Mapping[str, str], node_index: Mapping[str, int]
    ) -> PodInfo | None:
        meta = _meta(body)
        spec = body.get("spec") or {}
        status = body.get("status") or {}
        if not isinstance(spec, Mapping):
            raise FieldError("spec", "expected a map")
        phase = status.get("phase", "Pending") if isinstance(status, Mapping) else "Pending"
        namespace = str(meta.get("namespace") or "default")
        name = str(meta.get("name"))
        node_name = spec.get("nodeName") or ""
        if phase in ("Succeeded", "Failed"):
            pod_status = PodStatus.SUCCEEDED if phase == "Succeeded" else PodStatus.FAILED
        elif meta.get("deletionTimestamp") and node_name:
            pod_status = PodStatus.RELEASING
        elif phase == "Running":
            pod_status = PodStatus.RUNNING
        elif node_name:
            pod_status = PodStatus.BOUND
        elif f"{namespace}/{name}" in binds:
            pod_status = PodStatus.BINDING
            node_name = binds[f"{namespace}/{name}"]
        elif spec.get("schedulingGates"):
            pod_status = PodStatus.GATED
        else:
            pod_status = PodStatus.PENDING
        request = parsing.pod_request(spec, self.space)
        labels = dict(meta.get("labels") or {})
        task_priority = None
        if TASK_PRIORITY_LABEL in labels:
            try:
                task_priority = int(labels[TASK_PRIORITY_LABEL])
            except ValueError:
                task_priority = None
        affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
        required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        tolerations = tuple(spec.get("tolerations") or ())
        selector = dict(spec.get("nodeSelector") or {})
        pod = PodInfo(
            namespace=namespace,
            name=name,
            uid=_uid(body),
            creation=_creation(body),
            request=request,
            status=pod_status,
            node=node_index.get(str(node_name), -1) if node_name else -1,
            labels=labels,
            annotations=dict(meta.get("annotations") or {}),
            node_selector=selector,
            node_affinity=required,
            tolerations=tolerations,
            is_ours=spec.get("schedulerName") == self.scheduler_name,
            task_priority=task_priority,
        )
        if selector or required or tolerations:
            pod.constraint_key = repr((sorted(selector.items()), required, tolerations))
        return pod


def _priority_classes(raws: Iterable[SourcedObject]) -> tuple[dict[str, int], int]:
    classes = dict(BUILTIN_PRIORITY_CLASSES)
    default = DEFAULT_PRIORITY
    for raw in raws:
        value = raw.obj.get("value")
        if isinstance(value, int) and not isinstance(value, bool):
            classes[str(_meta(raw.obj).get("name"))] = value
            if raw.obj.get("globalDefault"):
                default = value
        else:
            raise object_error(raw, "value", f"expected an integer, got {value!r}")
    return classes, default


def build_snapshot(
    objects: Iterable[SourcedObject],
    *,
    scheduler_name: str = "kai-scheduler",
    now: float = 0.0,
    strict: bool = True,
) -> SnapshotResult:
    """Build the engine's snapshot from raw objects (kinds per cli-contract §1)."""
    builder = _Builder(scheduler_name, now, strict)
    by_kind: dict[str, list[SourcedObject]] = {kind: [] for kind in _KINDS}
    ignored: set[str] = set()
    for raw in objects:
        kind = str(raw.obj.get("kind", ""))
        if kind in by_kind:
            by_kind[kind].append(raw)
        else:
            ignored.add(kind)

    node_rows = []
    for raw in by_kind["Node"]:
        row = builder.guard(raw, lambda raw=raw: builder.node(raw.obj))
        if row is not None:
            node_rows.append(row)
    node_rows.sort(key=lambda row: row[0].name)

    binds: dict[str, str] = {}
    for raw in by_kind["BindRequest"]:
        spec = raw.obj.get("spec") or {}
        status = raw.obj.get("status") or {}
        limit = spec.get("backoffLimit")
        failed = status.get("phase") == "Failed" and (
            limit is None or int(status.get("failedAttempts") or 0) >= int(limit)
        )
        pod_name = spec.get("podName") or _meta(raw.obj).get("name")
        if not failed and spec.get("selectedNode"):
            binds[f"{_meta(raw.obj).get('namespace') or 'default'}/{pod_name}"] = str(
                spec["selectedNode"]
            )

    node_index = {row[0].name: i for i, row in enumerate(node_rows)}
    pods: list[PodInfo] = []
    for raw in by_kind["Pod"]:
        pod = builder.guard(raw, lambda raw=raw: builder.pod(raw.obj, binds, node_index))
        if pod is not None:
            pods.append(pod)

    width = builder.space.width
    allocatable = (
        np.stack([widen(row[1], width) for row in node_rows])
        if node_rows
        else np.zeros((0, width), dtype=np.int64)
    )
    nodes = NodeTable([row[0] for row in node_rows], allocatable)
    for pod in pods:
        pod.request = widen(pod.request, width)
        if pod.node >= 0 and pod.status in ACTIVE_USED:
            if pod.status == PodStatus.RELEASING:
                nodes.idle[pod.node] -= pod.request
                nodes.releasing[pod.node] += pod.request
            else:
                nodes.idle[pod.node] -= pod.request

    classes, default_priority = _priority_classes(by_kind["PriorityClass"])

    queue_infos = []
    for raw in by_kind["Queue"]:
        info = builder.guard(
            raw,
            lambda raw=raw: queue_tree.queue_info(raw.obj, _creation(raw.obj), _uid(raw.obj)),
        )
        if info is not None:
            queue_infos.append(info)
    tree = queue_tree.build_tree(queue_infos)

    jobs, problems, ungrouped = _jobs(
        builder, by_kind["PodGroup"], pods, classes, default_priority, tree
    )

    ready_rows = (
        nodes.allocatable[[m.ready for m in nodes.meta]] if len(nodes) else nodes.allocatable
    )
    total = ready_rows.sum(axis=0).astype(np.float64) if len(ready_rows) else np.zeros(width)
    for pod in pods:
        if not pod.is_ours and pod.status in ACTIVE_USED:
            total = total - pod.request
    snapshot = ClusterSnapshot(
        space=builder.space,
        nodes=nodes,
        pods=pods,
        jobs=jobs,
        queues=tree,
        total=np.maximum(total[list(QUEUE_COLUMNS)], 0.0) if width else np.zeros(3),
        priority_classes=classes,
        now=now,
        job_problems=problems,
    )
    return SnapshotResult(snapshot, builder.result_errors, ignored, ungrouped)


def _jobs(
    builder: _Builder,
    raws: list[SourcedObject],
    pods: list[PodInfo],
    classes: Mapping[str, int],
    default_priority: int,
    tree: QueueTree,
) -> tuple[dict[str, PodGroupInfo], dict[str, list[str]], list[PodInfo]]:
    jobs: dict[str, PodGroupInfo] = {}
    problems: dict[str, list[str]] = {}
    for raw in raws:
        job = builder.guard(raw, lambda raw=raw: _pod_group(raw.obj, classes, default_priority))
        if job is not None:
            jobs[job.key] = job
            reason = _queue_problem(job.queue, tree)
            if reason:
                problems.setdefault(job.key, []).append(reason)
    ungrouped = []
    for pod in pods:
        if not pod.is_ours:
            continue
        group = pod.annotations.get(POD_GROUP_ANNOTATION)
        job = jobs.get(f"{pod.namespace}/{group}") if group else None
        if job is None:
            ungrouped.append(pod)
            continue
        wanted = pod.labels.get(SUBGROUP_LABEL, DEFAULT_POD_SET)
        for pod_set in job.pod_sets:
            if pod_set.name == wanted:
                pod_set.pods.append(pod)
                pod.job = job.key
                pod.pod_set = pod_set.name
                break
    return jobs, problems, ungrouped


def _queue_problem(queue: str, tree: QueueTree) -> str | None:
    if not queue:
        return "QueueDoesNotExist: the PodGroup names no queue (spec.queue is empty)"
    if queue in tree.dropped:
        return f"QueueDoesNotExist: queue {queue!r} is not usable: {tree.dropped[queue]}"
    if queue not in tree.queues:
        return f"QueueDoesNotExist: queue {queue!r} does not exist"
    if not tree.queues[queue].is_leaf:
        return f"queue {queue!r} is not a leaf queue; only leaf queues accept jobs"
    return None


def _pod_group(
    body: Mapping[str, Any], classes: Mapping[str, int], default_priority: int
) -> PodGroupInfo:
    meta = _meta(body)
    spec = body.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise FieldError("spec", "expected a map")
    class_name = str(spec.get("priorityClassName") or "")
    priority = classes.get(class_name, default_priority)
    preemptibility = spec.get("preemptibility")
    if preemptibility not in (None, "", "preemptible", "non-preemptible"):
        raise FieldError(
            "spec.preemptibility",
            f"must be 'preemptible' or 'non-preemptible', got {preemptibility!r}",
        )
    preemptible = (
        preemptibility == "preemptible" if preemptibility else priority < NON_PREEMPTIBLE_FROM
    )
    pod_sets = _pod_sets(spec)
    annotations = meta.get("annotations") or {}
    last_start = annotations.get(LAST_START_ANNOTATION)
    stale = annotations.get(STALE_ANNOTATION)
    topology = (spec.get("topologyConstraint") or {}).get("topology") or ""
    return PodGroupInfo(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name")),
        uid=_uid(body),
        queue=str(spec.get("queue") or ""),
        priority=priority,
        preemptible=preemptible,
        creation=_creation(body),
        pod_sets=pod_sets,
        priority_class=class_name,
        last_start=parsing.timestamp(last_start, f"metadata.annotations[{LAST_START_ANNOTATION}]")
        if last_start
        else None,
        stale_since=parsing.timestamp(stale, f"metadata.annotations[{STALE_ANNOTATION}]")
        if stale
        else None,
        topology=str(topology),
    )


def _int_field(raw: Any, field: str) -> int:
    if raw is None:
        return 0
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise FieldError(field, f"expected an integer, got {raw!r}")
    if raw < 0:
        raise FieldError(field, f"must not be negative, got {raw}")
    return raw


def _pod_sets(spec: Mapping[str, Any]) -> list[PodSetInfo]:
    subgroups = spec.get("subGroups") or []
    if not isinstance(subgroups, list):
        raise FieldError("spec.subGroups", "expected a list")
    if not subgroups:
        min_member = _int_field(spec.get("minMember"), "spec.minMember")
        return [PodSetInfo(DEFAULT_POD_SET, max(min_member, 1))]
    names = set()
    parents = set()
    for i, sub in enumerate(subgroups):
        if not isinstance(sub, Mapping) or not sub.get("name"):
            raise FieldError(f"spec.subGroups[{i}].name", "is required")
        if sub["name"] in names:
            raise FieldError(f"spec.subGroups[{i}].name", f"duplicate subgroup {sub['name']!r}")
        names.add(sub["name"])
        if sub.get("parent"):
            parents.add(str(sub["parent"]).lower())
    for i, sub in enumerate(subgroups):
        parent = sub.get("parent")
        if parent and str(parent).lower() not in {n.lower() for n in names}:
            raise FieldError(f"spec.subGroups[{i}].parent", f"no subgroup named {parent!r}")
    return [
        PodSetInfo(
            str(sub["name"]),
            max(_int_field(sub.get("minMember"), f"spec.subGroups[{i}].minMember"), 1),
        )
        for i, sub in enumerate(subgroups)
        if str(sub["name"]).lower() not in parents
    ]
