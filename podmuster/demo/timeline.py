"""Simulated time for the demo: arrivals, one scheduling cycle per event, completions.

Why: the scheduler is a pure function of the cluster's objects, so the demo
drives it the way a live cluster would. At each event time finished workloads
release their GPUs, new workloads arrive, the whole object set is turned into
a snapshot and one real cycle runs; bound pods then become Running on their
node. Nothing is scripted about the outcome: who starts and who waits is
whatever the engine decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from crds.documents import SourcedObject
from podmuster.demo import cluster, reasons
from podmuster.demo.cluster import Workload
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
class Started:
    workload: str
    pods: int
    gpus: int
    nodes: tuple[str, ...]
    extras: int  # pods beyond the gang minimum (elastic), placed one per pop


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


def _workload_of(obj: dict[str, Any]) -> str:
    return str(obj["metadata"].get("labels", {}).get("app.kubernetes.io/name", ""))


class Simulation:
    """The object set and the clock; ``run`` steps from event to event."""

    def __init__(self, workloads: Sequence[Workload], config: SchedulerConfig) -> None:
        self.config = config
        self.objects: list[dict[str, Any]] = cluster.infrastructure()
        self.progress = {w.name: Progress(w) for w in workloads}
        self.pods: dict[str, dict[str, Any]] = {}
        self.steps: list[Step] = []

    def next_event(self, after: int) -> int | None:
        times = []
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
                for pod in self.pods.values():
                    if _workload_of(pod) == w.name:
                        pod["status"]["phase"] = "Succeeded"
            if w.arrives == minute:
                step.arrived.append(w.name)
                for obj in cluster.workload_objects(w):
                    self.objects.append(obj)
                    if obj["kind"] == "Pod":
                        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
                        self.pods[key] = obj
        result = run_cycle(_snapshot(self.objects, minute), self.config, explain=True)
        step.skipped_actions = list(result.skipped_actions)
        self._apply(step, result, minute)
        after = _snapshot(self.objects, minute)
        step.queues = queue_rows(after, self.config)
        step.gpus_in_use = {name: 0 for name in cluster.NODES}
        for info in after.pods:
            if info.node >= 0 and info.job and info.status in ACTIVE_USED:
                step.gpus_in_use[after.nodes.names[info.node]] += int(info.request[GPU]) // GPU_UNIT
        self._waiting(step, result)
        self.steps.append(step)

    def _apply(self, step: Step, result: CycleResult, minute: int) -> None:
        by_workload: dict[str, list[tuple[dict[str, Any], str]]] = {}
        for bind in result.binds:
            pod = self.pods[bind.pod]
            pod["spec"]["nodeName"] = bind.node
            pod["status"]["phase"] = "Running"
            by_workload.setdefault(_workload_of(pod), []).append((pod, bind.node))
        for name, placed in sorted(by_workload.items(), key=lambda kv: _order(self, kv[0])):
            item = self.progress[name]
            if item.started_at is None:
                item.started_at = minute
            gang = sum(r.min_member or r.replicas for r in item.workload.roles)
            gpus = sum(_gpus(pod) for pod, _ in placed)
            nodes = tuple(sorted({node for _, node in placed}))
            extras = max(0, len(placed) - gang) if not item.workload.group_per_pod else 0
            step.started.append(Started(name, len(placed), gpus, nodes, extras))

    def _waiting(self, step: Step, result: CycleResult) -> None:
        rows = {row.name: row for row in step.queues}
        seen: set[str] = set()
        for outcome in result.pod_groups:
            if outcome.outcome != "pending" or not outcome.reasons:
                continue
            name = outcome.pod_group.split("/", 1)[1].removeprefix("pg-")
            workload = next((w for w in self.progress if name.startswith(w)), name)
            if workload in seen:
                continue
            seen.add(workload)
            item = self.progress[workload]
            code, plain = reasons.explain(outcome.reasons[0], item.workload, rows)
            waiting = Waiting(workload, code, plain, outcome.reasons[0])
            step.waiting.append(waiting)
            if code not in item.wait_codes:
                item.wait_codes.append(code)
            item.last_wait = waiting


def _gpus(pod: dict[str, Any]) -> int:
    requests = pod["spec"]["containers"][0]["resources"]["requests"]
    return int(requests.get("nvidia.com/gpu", "0"))


def _order(sim: Simulation, name: str) -> int:
    return list(sim.progress).index(name)


def simulate(config: SchedulerConfig | None = None) -> DemoRun:
    """Run the embedded cluster's story from minute 0 until nothing more happens."""
    return Simulation(cluster.WORKLOADS, config or SchedulerConfig()).run()
