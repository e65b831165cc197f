"""Simulated time for the demo: arrivals, grouping, one scheduling cycle per event, completions.

Why: the scheduler is a pure function of the cluster's objects, so the demo
drives it the way a live cluster would. At each event time finished workloads
release their GPUs, new workload manifests arrive and go through the
podgrouper's adapters (``podgrouping``), the autoscaler may grow a Ray worker
group, then the whole object set is turned into a snapshot and one real cycle
runs; bound pods become Running on their node. Nothing is scripted about the
outcome: how workloads are grouped and who starts or waits is whatever the
adapters and the engine decide.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from crds.documents import SourcedObject
from integrations.updates import POD_GROUP_ANNOTATION
from podmuster.demo import cluster, podgrouping, reasons
from podmuster.demo.podgrouping import PodGroupView
from podmuster.demo.story import RESCALES, Rescale, Workload, workloads
from scheduler.api.pods import ACTIVE_USED
from scheduler.api.resources import GPU, GPU_UNIT
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult, run_cycle
from scheduler.framework.session import Session
from scheduler.plugins.proportion.plugin import STATE_KEY, ProportionPlugin

MAX_MINUTES = 120


@dataclass(frozen=True, slots=True)
class QueueRow:
    name: str
    parent: str | None
    deserved: float
    limit: float  # -1: none
    weight: float
    fair_share: float
    allocated: float
    requested: float


@dataclass(frozen=True, slots=True)
class GroupedEvent:
    """What the podgrouper made of an arriving (or rescaled) workload."""

    workload: str
    kind: str
    namespace: str
    pod_groups: tuple[PodGroupView, ...]
    rescale: tuple[str, int, int] | None = None  # (worker group, old replicas, new replicas)
    new_pods: int = 0


@dataclass(frozen=True, slots=True)
class Started:
    workload: str
    pods: int
    gpus: int
    nodes: tuple[str, ...]
    extras: int  # pods beyond their PodGroup's minMember (elastic), placed one per pop
    grew: bool  # the workload was already running: only elastic extras joined


@dataclass(frozen=True, slots=True)
class Waiting:
    workload: str
    code: str
    plain: str
    detail: str


@dataclass(slots=True)
class Step:
    minute: int
    arrived: list[str] = field(default_factory=list)
    grouped: list[GroupedEvent] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    started: list[Started] = field(default_factory=list)
    waiting: list[Waiting] = field(default_factory=list)
    gpus_in_use: dict[str, int] = field(default_factory=dict)
    queues: list[QueueRow] = field(default_factory=list)
    skipped_actions: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Progress:
    workload: Workload
    started_at: int | None = None
    finished_at: int | None = None
    wait_codes: list[str] = field(default_factory=list)
    last_wait: Waiting | None = None
    pod_groups: dict[str, PodGroupView] = field(default_factory=dict)  # latest, by ns/name

    @property
    def priority(self) -> str:
        return next((v.priority for v in self.pod_groups.values()), "")


@dataclass(slots=True)
class DemoRun:
    steps: list[Step]
    workloads: list[Progress]


def _snapshot(objects: Sequence[dict[str, Any]], minute: int) -> ClusterSnapshot:
    sourced = [SourcedObject(obj, "demo", i) for i, obj in enumerate(objects)]
    now = cluster.parse_stamp(cluster.stamp(minute))
    return build_snapshot(sourced, scheduler_name=cluster.SCHEDULER_NAME, now=now).snapshot


def queue_rows(snapshot: ClusterSnapshot, config: SchedulerConfig) -> list[QueueRow]:
    """Fair share, allocated and requested GPUs per queue, as the proportion plugin sees them."""
    session = Session(snapshot, config)
    ProportionPlugin(k_value=config.k_value).on_session_open(session)
    states = session.plugin_state[STATE_KEY]
    rows = []
    for spec in cluster.QUEUES:
        state = states[spec.name]

        def gpus(vector: Any) -> float:
            value = float(vector[0])
            return value if value < 0 else value / GPU_UNIT

        rows.append(
            QueueRow(
                spec.name,
                spec.parent,
                gpus(state.deserved),
                gpus(state.limit),
                float(state.info.over_quota_weight[0]),
                gpus(state.fair_share),
                gpus(state.allocated),
                gpus(state.request),
            )
        )
    return rows


def _gpus(pod: dict[str, Any]) -> int:
    return sum(
        int(c.get("resources", {}).get("requests", {}).get("nvidia.com/gpu", "0"))
        for c in pod["spec"]["containers"]
    )


def _group_of(pod: dict[str, Any]) -> str:
    meta = pod["metadata"]
    return f"{meta['namespace']}/{meta['annotations'][POD_GROUP_ANNOTATION]}"


class Simulation:
    """The object set and the clock; ``run`` steps from event to event."""

    def __init__(
        self, story: Sequence[Workload], rescales: Sequence[Rescale], config: SchedulerConfig
    ) -> None:
        self.config = config
        self.infrastructure = cluster.infrastructure()
        self.progress = {w.name: Progress(w) for w in story}
        self.rescales = list(rescales)
        self.manifests: dict[str, dict[str, Any]] = {}  # workload -> current manifest
        self.pod_groups: dict[str, dict[str, Any]] = {}  # ns/name -> PodGroup
        self.pods: dict[str, dict[str, Any]] = {}  # ns/name -> pod
        self.owner: dict[str, str] = {}  # pod or PodGroup ns/name -> workload
        self.steps: list[Step] = []

    def objects(self) -> list[dict[str, Any]]:
        return [*self.infrastructure, *self.pod_groups.values(), *self.pods.values()]

    def next_event(self, after: int) -> int | None:
        times = [r.minute for r in self.rescales if r.minute > after]
        for item in self.progress.values():
            w = item.workload
            if w.arrives > after:
                times.append(w.arrives)
            if item.started_at is not None and item.finished_at is None and w.runs_for:
                times.append(item.started_at + w.runs_for)
        return min(times) if times else None

    def run(self) -> DemoRun:
        minute: int | None = 0
        while minute is not None and minute <= MAX_MINUTES:
            self.step(minute)
            minute = self.next_event(minute)
        return DemoRun(self.steps, list(self.progress.values()))

    def step(self, minute: int) -> None:
        step = Step(minute)
        for item in self.progress.values():
            w = item.workload
            end = (
                None if item.started_at is None or not w.runs_for else item.started_at + w.runs_for
            )
            if end is not None and item.finished_at is None and end <= minute:
                item.finished_at = minute
                step.finished.append(w.name)
                for key, pod in self.pods.items():
                    if self.owner[key] == w.name:
                        pod["status"]["phase"] = "Succeeded"
            if w.arrives == minute:
                step.arrived.append(w.name)
                step.grouped.append(self._group(item, w.manifest, minute))
        for rescale in self.rescales:
            if rescale.minute == minute and rescale.workload in self.manifests:
                scaled, old = rescale.apply(self.manifests[rescale.workload])
                event = self._group(self.progress[rescale.workload], scaled, minute)
                change = (rescale.group, old, rescale.replicas)
                step.grouped.append(dataclasses.replace(event, rescale=change))
        result = run_cycle(_snapshot(self.objects(), minute), self.config, explain=True)
        step.skipped_actions = list(result.skipped_actions)
        self._apply(step, result, minute)
        after = _snapshot(self.objects(), minute)
        step.queues = queue_rows(after, self.config)
        step.gpus_in_use = {name: 0 for name in cluster.NODES}
        for info in after.pods:
            if info.node >= 0 and info.job and info.status in ACTIVE_USED:
                step.gpus_in_use[after.nodes.names[info.node]] += int(info.request[GPU]) // GPU_UNIT
        self._waiting(step, result)
        self.steps.append(step)

    def _group(self, item: Progress, manifest: dict[str, Any], minute: int) -> GroupedEvent:
        """Run the adapters on ``manifest`` and add what they made to the cluster."""
        w = item.workload
        grouped = podgrouping.group(manifest, minute, self.pod_groups, self.pods)
        self.manifests[w.name] = manifest
        for pod_group in grouped.pod_groups:
            self.pod_groups[podgrouping.key(pod_group)] = pod_group
            self.owner[podgrouping.key(pod_group)] = w.name
        for pod in grouped.new_pods:
            self.pods[podgrouping.key(pod)] = pod
            self.owner[podgrouping.key(pod)] = w.name
        for view in grouped.views:
            item.pod_groups[view.key] = view
        return GroupedEvent(w.name, w.kind, w.namespace, grouped.views, None, len(grouped.new_pods))

    def _apply(self, step: Step, result: CycleResult, minute: int) -> None:
        running_before = {
            key: _group_of(pod)
            for key, pod in self.pods.items()
            if pod["status"]["phase"] == "Running"
        }
        placed: dict[str, list[dict[str, Any]]] = {}
        for bind in result.binds:
            pod = self.pods[bind.pod]
            pod["spec"]["nodeName"] = bind.node
            pod["status"]["phase"] = "Running"
            placed.setdefault(self.owner[bind.pod], []).append(pod)
        for name in self.progress:
            pods = placed.get(name)
            if not pods:
                continue
            item = self.progress[name]
            grew = item.started_at is not None
            if item.started_at is None:
                item.started_at = minute
            extras = 0
            for group_key in sorted({_group_of(p) for p in pods}):
                new = sum(1 for p in pods if _group_of(p) == group_key)
                before = sum(1 for g in running_before.values() if g == group_key)
                minimum = item.pod_groups[group_key].min_member
                extras += new - max(0, minimum - before)
            nodes = tuple(sorted({p["spec"]["nodeName"] for p in pods}))
            gpus = sum(_gpus(p) for p in pods)
            step.started.append(Started(name, len(pods), gpus, nodes, extras, grew))

    def _waiting(self, step: Step, result: CycleResult) -> None:
        rows = {row.name: row for row in step.queues}
        seen: set[str] = set()
        for outcome in result.pod_groups:
            if outcome.outcome != "pending" or not outcome.reasons:
                continue
            workload = self.owner[outcome.pod_group]
            if workload in seen:
                continue
            seen.add(workload)
            item = self.progress[workload]
            view = item.pod_groups[outcome.pod_group]
            pending = [
                pod
                for key, pod in self.pods.items()
                if _group_of(pod) == outcome.pod_group and pod["status"]["phase"] == "Pending"
            ]
            ask = reasons.Ask(
                view.queue, view.priority, sum(_gpus(p) for p in pending), view.min_member > 1
            )
            code, plain = reasons.explain(outcome.reasons[0], ask, rows)
            waiting = Waiting(workload, code, plain, outcome.reasons[0])
            step.waiting.append(waiting)
            if code not in item.wait_codes:
                item.wait_codes.append(code)
            item.last_wait = waiting


def simulate(config: SchedulerConfig | None = None) -> DemoRun:
    """Run the story from minute 0 until nothing more happens."""
    return Simulation(workloads(), RESCALES, config or SchedulerConfig()).run()
