"""A test kit for the scheduling engine: object builders, scenarios and a checker.

Why: scheduling rules are best pinned down as small cluster pictures with the
expected decisions next to them (KAI's own tests work this way, docs/semantics.md
§9.2). The builders produce the raw Kubernetes dicts the snapshot builder reads,
so a scenario exercises the same path as ``podmuster schedule``; ``check``
prints a readable diff when the engine decides otherwise.

Conventions (close to KAI's test data, §9.2):

- nodes have 20 CPU and 20G memory unless stated; a pod asks for 1 CPU and 1G
  memory unless stated;
- queues default to GPU quota 0, GPU over-quota weight 0, GPU limit -1, and
  CPU/memory quota and limit -1 (memory in MB = 10^6 bytes);
- objects get creation timestamps in listed order, one minute apart, older
  first (an explicit ``creationTimestamp`` is kept), so ties are deterministic;
- ``job`` builds a PodGroup plus its pods, the usual unit of a scenario; like
  KAI's test jobs its gang minimum defaults to the number of pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from crds.bindrequest import API_VERSION as BINDREQUEST_API_VERSION
from crds.documents import SourcedObject
from crds.names import (
    ADMISSION_GATE,
    ADMISSION_GATE_ANNOTATION,
    DEFAULT_SCHEDULER_NAME,
    POD_GROUP_ANNOTATION,
    SUBGROUP_LABEL,
)
from crds.podgroup import API_VERSION as PODGROUP_API_VERSION
from crds.queue import API_VERSION as QUEUE_API_VERSION
from crds.topology import API_VERSION as TOPOLOGY_API_VERSION
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult, run_cycle

Obj = dict[str, Any]
Item = Obj | Sequence[Obj]

NAMESPACE = "default"
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
NOW = EPOCH + timedelta(days=1)
ALLOCATE_ONLY = SchedulerConfig(actions=("allocate",))
POD_STATES = (
    "Pending",
    "Gated",
    "AdmissionGated",
    "Running",
    "Releasing",
    "Bound",
    "Binding",
    "Succeeded",
    "Failed",
)


def timestamp(minutes: float) -> str:
    """An RFC 3339 time ``minutes`` after the kit's epoch."""
    return (EPOCH + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _metadata(name: str, namespace: str | None = None, **extra: Any) -> Obj:
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta.update({k: v for k, v in extra.items() if v})
    return meta


def node(
    name: str,
    *,
    gpus: float = 0,
    cpu: str = "20",
    memory: str = "20G",
    pods: int | None = None,
    gpu_resource: str = "nvidia.com/gpu",
    extended: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    unschedulable: bool = False,
    ready: bool = True,
) -> Obj:
    """A Node with allocatable CPU, memory, GPUs and any extended resources."""
    allocatable: Obj = {"cpu": cpu, "memory": memory}
    if gpus:
        allocatable[gpu_resource] = f"{gpus:g}"
    if pods is not None:
        allocatable["pods"] = str(pods)
    allocatable.update(extended or {})
    spec: Obj = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _metadata(name, labels=dict(labels or {})),
        "spec": spec,
        "status": {
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def taint(key: str, effect: str = "NoSchedule", value: str | None = None) -> Obj:
    """A node taint."""
    out: Obj = {"key": key, "effect": effect}
    if value is not None:
        out["value"] = value
    return out


def queue(
    name: str,
    parent: str | None = None,
    *,
    gpu_quota: float = 0,
    gpu_limit: float = -1,
    gpu_weight: float = 0,
    cpu_quota: float = -1,
    cpu_limit: float = -1,
    cpu_weight: float = 0,
    memory_quota: float = -1,
    memory_limit: float = -1,
    memory_weight: float = 0,
    priority: int | None = None,
    admission_gate: bool = False,
) -> Obj:
    """A Queue; CPU in millicores, memory in MB (10^6 bytes), -1 = unlimited."""
    spec: Obj = {
        "resources": {
            "gpu": {"quota": gpu_quota, "limit": gpu_limit, "overQuotaWeight": gpu_weight},
            "cpu": {"quota": cpu_quota, "limit": cpu_limit, "overQuotaWeight": cpu_weight},
            "memory": {
                "quota": memory_quota,
                "limit": memory_limit,
                "overQuotaWeight": memory_weight,
            },
        }
    }
    if parent:
        spec["parentQueue"] = parent
    if priority is not None:
        spec["priority"] = priority
    meta = _metadata(name)
    if admission_gate:
        meta["annotations"] = {ADMISSION_GATE_ANNOTATION: "true"}
    return {"apiVersion": QUEUE_API_VERSION, "kind": "Queue", "metadata": meta, "spec": spec}


def topology(name: str, *levels: str) -> Obj:
    """A Topology CR with node-label ``levels``, coarsest first."""
    return {
        "apiVersion": TOPOLOGY_API_VERSION,
        "kind": "Topology",
        "metadata": _metadata(name),
        "spec": {"levels": [{"nodeLabel": level} for level in levels]},
    }


def topology_constraint(
    name: str, *, required: str | None = None, preferred: str | None = None
) -> Obj:
    """A ``topologyConstraint`` map for ``pod_group(topology=...)`` or a raw subgroup."""
    out: Obj = {"topology": name}
    if required is not None:
        out["requiredTopologyLevel"] = required
    if preferred is not None:
        out["preferredTopologyLevel"] = preferred
    return out


def pod_group(
    name: str,
    queue: str,
    *,
    min_member: int | None = 1,
    priority_class: str | None = None,
    preemptibility: str | None = None,
    sub_groups: Sequence[tuple[str, int] | Mapping[str, Any]] = (),
    namespace: str = NAMESPACE,
    topology: Mapping[str, Any] | None = None,
) -> Obj:
    """A PodGroup; ``sub_groups`` as ``(name, minMember)`` pairs or raw subgroup maps."""
    spec: Obj = {"queue": queue}
    if topology is not None:
        spec["topologyConstraint"] = dict(topology)
    if min_member is not None:
        spec["minMember"] = min_member
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if preemptibility is not None:
        spec["preemptibility"] = preemptibility
    if sub_groups:
        spec["subGroups"] = [
            {"name": sub[0], "minMember": sub[1]} if isinstance(sub, tuple) else dict(sub)
            for sub in sub_groups
        ]
    return {
        "apiVersion": PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": _metadata(name, namespace),
        "spec": spec,
    }


def bind_request(pod_name: str, node_name: str, *, namespace: str = NAMESPACE) -> Obj:
    """The BindRequest the scheduler writes for a pod it placed on ``node_name``."""
    return {
        "apiVersion": BINDREQUEST_API_VERSION,
        "kind": "BindRequest",
        "metadata": _metadata(pod_name, namespace, labels={"selected-node": node_name}),
        "spec": {"podName": pod_name, "selectedNode": node_name},
    }


def pod(
    name: str,
    group: str | None = None,
    *,
    gpus: float = 0,
    cpu: str | None = "1",
    memory: str | None = "1G",
    state: str = "Pending",
    node: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    sub_group: str | None = None,
    namespace: str = NAMESPACE,
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    gpu_resource: str = "nvidia.com/gpu",
    extended: Mapping[str, str] | None = None,
    limits_only: bool = False,
    init_containers: Sequence[Mapping[str, str]] = (),
    overhead: Mapping[str, str] | None = None,
) -> list[Obj]:
    """A pod in a given state; a list because ``Binding`` adds its BindRequest.

    States: Pending, Gated (someone's scheduling gate), AdmissionGated (ours), Running / Bound / Releasing
    (on ``node``; Releasing = deletionTimestamp set), Binding (a BindRequest to
    ``node``), Succeeded / Failed. ``limits_only`` writes the request as limits,
    which Kubernetes copies to requests.
    """
    if state not in POD_STATES:
        raise ValueError(f"unknown pod state {state!r}; known: {', '.join(POD_STATES)}")
    if state in ("Running", "Bound", "Releasing", "Binding") and not node:
        raise ValueError(f"pod {name}: state {state} needs a node")
    resources: Obj = {}
    if cpu is not None:
        resources["cpu"] = cpu
    if memory is not None:
        resources["memory"] = memory
    if gpus:
        resources[gpu_resource] = f"{gpus:g}"
    resources.update(extended or {})
    pod_labels = dict(labels or {})
    if sub_group is not None:
        pod_labels[SUBGROUP_LABEL] = sub_group
    pod_annotations = dict(annotations or {})
    if group is not None:
        pod_annotations[POD_GROUP_ANNOTATION] = group
    spec: Obj = {
        "schedulerName": scheduler_name,
        "containers": [
            {
                "name": "main",
                "resources": {"limits" if limits_only else "requests": resources},
            }
        ],
    }
    if init_containers:
        spec["initContainers"] = [
            {"name": f"init-{i}", "resources": {"requests": dict(request)}}
            for i, request in enumerate(init_containers)
        ]
    if overhead:
        spec["overhead"] = dict(overhead)
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity:
        spec["affinity"] = dict(affinity)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if state == "Gated":
        spec["schedulingGates"] = [{"name": "example.com/wait"}]
    if state == "AdmissionGated":  # held by podmuster's queue admission gate
        spec["schedulingGates"] = [{"name": ADMISSION_GATE}]
    if node and state not in ("Binding", "Pending", "Gated", "AdmissionGated"):
        spec["nodeName"] = node
    phase = {"Running": "Running", "Releasing": "Running", "Succeeded": "Succeeded"}.get(
        state, "Failed" if state == "Failed" else "Pending"
    )
    meta = _metadata(name, namespace, labels=pod_labels, annotations=pod_annotations)
    if state == "Releasing":
        meta["deletionTimestamp"] = NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
    body: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase},
    }
    if state == "Binding":
        assert node is not None
        return [body, bind_request(name, node, namespace=namespace)]
    return [body]


def job(
    name: str,
    queue: str,
    tasks: int = 1,
    *,
    gpus: float = 0,
    cpu: str | None = "1",
    memory: str | None = "1G",
    states: Sequence[str] | None = None,
    nodes: Sequence[str | None] | None = None,
    min_member: int | None = None,
    priority_class: str | None = None,
    preemptibility: str | None = None,
    namespace: str = NAMESPACE,
    topology: Mapping[str, Any] | None = None,
    **pod_args: Any,
) -> list[Obj]:
    """A PodGroup and ``tasks`` pods ``<name>-<i>``; gang minimum defaults to ``tasks``.

    ``states`` and ``nodes`` give each pod's state and node (default: all
    Pending); other keyword arguments go to every ``pod``.
    """
    group = pod_group(
        name,
        queue,
        min_member=tasks if min_member is None else min_member,
        priority_class=priority_class,
        preemptibility=preemptibility,
        namespace=namespace,
        topology=topology,
    )
    out = [group]
    for i in range(tasks):
        state = states[i] if states is not None else "Pending"
        where = nodes[i] if nodes is not None else None
        out.extend(
            pod(
                f"{name}-{i}",
                name,
                gpus=gpus,
                cpu=cpu,
                memory=memory,
                state=state,
                node=where,
                namespace=namespace,
                **pod_args,
            )
        )
    return out


def flatten(items: Iterable[Item]) -> list[Obj]:
    """Objects in listed order; nested lists (``pod``, ``job``) are spliced in."""
    out: list[Obj] = []
    for item in items:
        if isinstance(item, Mapping):
            out.append(item)
        else:
            out.extend(item)
    return out


def stamp(objects: Sequence[Obj]) -> list[Obj]:
    """Copies with creation timestamps one minute apart in listed order (kept if set)."""
    out = []
    for i, obj in enumerate(objects):
        meta = dict(obj.get("metadata") or {})
        meta.setdefault("creationTimestamp", timestamp(i))
        out.append({**obj, "metadata": meta})
    return out


@dataclass(frozen=True)
class Scenario:
    """A cluster picture and the decisions one allocate cycle must make on it.

    ``binds`` and ``pipelined`` map pod → node and must match exactly; ``pending``
    lists the pod groups whose outcome must be ``pending`` (exactly these);
    ``reasons`` maps a pod group to substrings that must all appear in its reasons.
    Pod and group names without ``/`` are in the ``default`` namespace.
    """

    name: str
    objects: Sequence[Item]
    binds: Mapping[str, str] = field(default_factory=dict)
    pipelined: Mapping[str, str] = field(default_factory=dict)
    pending: Sequence[str] = ()
    reasons: Mapping[str, Sequence[str]] = field(default_factory=dict)
    config: SchedulerConfig = ALLOCATE_ONLY
    explain: bool = False

    def __str__(self) -> str:
        return self.name


def queue_path(parents: Mapping[str, str | None], leaf: str) -> list[str]:
    """``leaf`` and its ancestors up to the top-level queue, leaf first (``parents``: name ->
    parent name or None), for checks that walk a queue tree as the quota rules do."""
    out: list[str] = []
    current: str | None = leaf
    while current is not None:
        out.append(current)
        current = parents[current]
    return out


def _key(name: str) -> str:
    return name if "/" in name else f"{NAMESPACE}/{name}"


def sourced(objects: Iterable[Item], source: str = "scenario") -> list[SourcedObject]:
    """Stamped objects wrapped as the loader would hand them to the snapshot builder."""
    return [SourcedObject(obj, source, i) for i, obj in enumerate(stamp(flatten(objects)))]


def run_objects(
    objects: Iterable[Item],
    config: SchedulerConfig = ALLOCATE_ONLY,
    *,
    explain: bool = False,
) -> CycleResult:
    """One cycle over the objects, as ``podmuster schedule`` would run it."""
    built = build_snapshot(
        sourced(objects),
        scheduler_name=config.scheduler_name,
        now=NOW.timestamp(),
        stuck_after=config.stuck_in_releasing_s,
    )
    return run_cycle(built.snapshot, config, explain=explain)


def run_scenario(scenario: Scenario) -> CycleResult:
    """One cycle over the scenario's objects with its configuration."""
    return run_objects(scenario.objects, scenario.config, explain=scenario.explain)


def _diff_map(label: str, expected: Mapping[str, str], actual: Mapping[str, str]) -> list[str]:
    lines = []
    for pod_key in sorted(set(expected) | set(actual)):
        want, got = expected.get(pod_key), actual.get(pod_key)
        if want != got:
            lines.append(f"  {label} {pod_key}: expected {want or '-'}, got {got or '-'}")
    return lines


def describe_result(result: CycleResult) -> str:
    """A compact, readable rendering of a cycle's decisions."""
    lines = ["binds:"]
    lines += [f"  {b.pod} -> {b.node}" for b in result.binds]
    lines.append("pipelined:")
    lines += [f"  {b.pod} -> {b.node}" for b in result.pipelined]
    lines.append("pod groups:")
    for outcome in result.pod_groups:
        lines.append(f"  {outcome.pod_group} [{outcome.queue}] {outcome.outcome}")
        lines += [f"      {reason}" for reason in outcome.reasons]
    return "\n".join(lines)


def conflicting_decisions(objects: Iterable[Item], result: CycleResult) -> list[str]:
    """Every way ``result`` says two things about one pod (none: one final decision each).

    A pod is listed at most once per list and is never both bound and
    pipelined, nor bound and evicted. Evicted and pipelined means moved, so
    only a pod that held a node before the cycle (``spec.nodeName`` or a
    BindRequest) may be both; likewise only such a pod may be evicted, and
    only a pod that held none may be bound.
    """
    held: set[str] = set()
    for obj in flatten(objects):
        meta = obj.get("metadata", {})
        key = f"{meta.get('namespace', NAMESPACE)}/{meta.get('name')}"
        if obj.get("kind") == "Pod" and obj.get("spec", {}).get("nodeName"):
            held.add(key)
        elif obj.get("kind") == "BindRequest":
            held.add(f"{meta.get('namespace', NAMESPACE)}/{obj['spec']['podName']}")
    lines: list[str] = []
    lists = {
        "bind": [b.pod for b in result.binds],
        "pipelined": [b.pod for b in result.pipelined],
        "eviction": [e.pod for e in result.evictions],
    }
    for label, keys in lists.items():
        lines += [
            f"{label} of {k} listed twice" for k in sorted({k for k in keys if keys.count(k) > 1})
        ]
    binds, pipelined, evicted = (set(keys) for keys in lists.values())
    lines += [f"{k} both bound and pipelined" for k in sorted(binds & pipelined)]
    lines += [f"{k} both bound and evicted" for k in sorted(binds & evicted)]
    lines += [f"{k} bound though it held a node" for k in sorted(binds & held)]
    lines += [f"{k} evicted though it held no node" for k in sorted(evicted - held)]
    lines += [
        f"{k} pipelined and evicted without a move" for k in sorted(pipelined & evicted - held)
    ]
    return lines


def mismatches(scenario: Scenario, result: CycleResult) -> list[str]:
    """Every difference between the scenario's expectations and ``result``."""
    lines = _diff_map(
        "bind",
        {_key(p): n for p, n in scenario.binds.items()},
        {b.pod: b.node for b in result.binds},
    )
    lines += _diff_map(
        "pipelined",
        {_key(p): n for p, n in scenario.pipelined.items()},
        {b.pod: b.node for b in result.pipelined},
    )
    outcomes = {o.pod_group: o for o in result.pod_groups}
    want_pending = {_key(g) for g in scenario.pending}
    got_pending = {k for k, o in outcomes.items() if o.outcome == "pending"}
    for group in sorted(want_pending - got_pending):
        got = outcomes[group].outcome if group in outcomes else "not considered"
        lines.append(f"  pending {group}: expected pending, got {got}")
    for group in sorted(got_pending - want_pending):
        lines.append(f"  pending {group}: unexpectedly pending")
    for group, substrings in scenario.reasons.items():
        outcome = outcomes.get(_key(group))
        text = " | ".join(outcome.reasons) if outcome else ""
        for substring in substrings:
            if substring not in text:
                lines.append(f"  reason {_key(group)}: {substring!r} not in {text or '(none)'}")
    return lines


def check(scenario: Scenario) -> CycleResult:
    """Run the scenario and assert its expectations, printing a readable diff on failure."""
    result = run_scenario(scenario)
    problems = mismatches(scenario, result)
    if problems:
        report = "\n".join(
            [f"scenario {scenario.name!r} differs:", *problems, "", describe_result(result)]
        )
        print(report)
        raise AssertionError(report)
    return result


__all__ = [
    "ALLOCATE_ONLY",
    "NOW",
    "Scenario",
    "bind_request",
    "check",
    "conflicting_decisions",
    "describe_result",
    "flatten",
    "job",
    "mismatches",
    "node",
    "pod",
    "pod_group",
    "queue",
    "queue_path",
    "run_objects",
    "run_scenario",
    "sourced",
    "stamp",
    "taint",
    "timestamp",
    "topology",
    "topology_constraint",
]
