"""Simulated time for the demo: arrivals, grouping, scheduling cycles per event, completions.

Why: the scheduler is a pure function of the cluster's objects, so the demo
drives it the way a live cluster would. At each event time finished workloads
release their GPUs, new workload manifests arrive and go through the
podgrouper's adapters (``podgrouping``), the autoscaler may grow a Ray worker
group, then cycles run one second apart until one decides nothing. Each
cycle's decisions are carried out by ``scheduler.rounds.apply_result``, as
``podmuster schedule --rounds`` does: bound pods run, evicted pods are gone,
pipelined pods pend again. The workloads' controllers then re-create the pods
that were evicted outright (a moved pod is re-created by ``apply_result``).
Nothing is scripted about the outcome: how workloads are grouped and who
starts, waits or is evicted is whatever the adapters and the engine decide.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from crds.documents import SourcedObject
from crds.gpusharing import FRACTION, GPU_GROUP_LABEL, NUM_DEVICES
from crds.names import DEFAULT_SCHEDULER_NAME, POD_GROUP_ANNOTATION
from podmuster.demo import cluster, podgrouping, reasons
from podmuster.demo.cluster import Cluster
from podmuster.demo.podgrouping import PodGroupView
from podmuster.demo.story import RESCALES, SCENES, Rescale, Scene, Workload, workloads
from scheduler.api.resources import GPU_UNIT
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult, run_cycle
from scheduler.framework.session import Session
from scheduler.plugins.proportion.plugin import STATE_KEY, ProportionPlugin
from scheduler.rounds import ROUND_SECONDS, apply_result, made_decisions

MAX_MINUTES = 120
MAX_CYCLES = 5  # per event time; a story that needs more is not converging


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
    gpus: float
    nodes: tuple[str, ...]
    extras: int  # pods beyond their PodGroup's minMember (elastic), placed one per pop
    grew: bool  # the workload was already running: only elastic extras joined
    cycle: int = 1
    moved: bool = False  # restarts on another node after consolidation moved it
    # fractional pods: the workloads already on the shared GPU(s) it joined; empty when
    # it opened a shared GPU of its own (see ``opened_shared``)
    shares_with: tuple[str, ...] = ()
    opened_shared: bool = False


@dataclass(frozen=True, slots=True)
class Evicted:
    """Pods of one workload that one action evicted in one cycle."""

    workload: str
    pods: int
    gpus: float
    nodes: tuple[str, ...]
    action: str
    for_workload: str | None
    moved_to: tuple[str, ...]  # where moved pods restart; empty: evicted outright
    minute: int
    cycle: int


@dataclass(frozen=True, slots=True)
class Pipelined:
    """Pods of one workload placed on GPUs still being freed: reserved, not bound."""

    workload: str
    pods: int
    nodes: tuple[str, ...]
    cycle: int


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
    evicted: list[Evicted] = field(default_factory=list)
    pipelined: list[Pipelined] = field(default_factory=list)
    cycles: int = 1  # cycles that decided something (at least 1)
    waiting: list[Waiting] = field(default_factory=list)
    # GPU devices held per node: whole GPUs plus one per shared GPU group
    gpus_in_use: dict[str, int] = field(default_factory=dict)
    gpus_before: dict[str, int] = field(default_factory=dict)  # before the first cycle
    queues: list[QueueRow] = field(default_factory=list)


@dataclass(slots=True)
class Progress:
    workload: Workload
    started_at: int | None = None
    finished_at: int | None = None
    wait_codes: list[str] = field(default_factory=list)
    last_wait: Waiting | None = None
    pod_groups: dict[str, PodGroupView] = field(default_factory=dict)  # latest, by ns/name
    evictions: list[Evicted] = field(default_factory=list)

    @property
    def priority(self) -> str:
        return next((v.priority for v in self.pod_groups.values()), "")


@dataclass(slots=True)
class DemoRun:
    steps: list[Step]
    workloads: list[Progress]
    cluster: Cluster = cluster.MAIN
    scenes: list[SceneRun] = field(default_factory=list)


@dataclass(slots=True)
class SceneRun:
    scene: Scene
    run: DemoRun


def _sourced(objects: Sequence[dict[str, Any]]) -> list[SourcedObject]:
    return [SourcedObject(obj, "demo", i) for i, obj in enumerate(objects)]


def _snapshot(objects: Sequence[SourcedObject], now: float) -> ClusterSnapshot:
    return build_snapshot(objects, scheduler_name=DEFAULT_SCHEDULER_NAME, now=now).snapshot


def queue_rows(
    snapshot: ClusterSnapshot, config: SchedulerConfig, where: Cluster = cluster.MAIN
) -> list[QueueRow]:
    """Fair share, allocated and requested GPUs per queue, as the proportion plugin sees them."""
    session = Session(snapshot, config)
    ProportionPlugin(k_value=config.k_value).on_session_open(session)
    states = session.plugin_state[STATE_KEY]
    rows = []
    for spec in where.queues:
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


def _gpus(pod: dict[str, Any]) -> float:
    """Whole GPUs the pod's containers request, plus its share of GPUs (``gpu-fraction``)."""
    whole = sum(
        int(c.get("resources", {}).get("requests", {}).get("nvidia.com/gpu", "0"))
        for c in pod["spec"]["containers"]
    )
    annotations = pod["metadata"].get("annotations") or {}
    fraction = annotations.get(FRACTION)
    if not fraction:
        return whole
    return whole + float(fraction) * int(annotations.get(NUM_DEVICES, "1"))


def _group_of(pod: dict[str, Any]) -> str:
    meta = pod["metadata"]
    return f"{meta['namespace']}/{meta['annotations'][POD_GROUP_ANNOTATION]}"


class Simulation:
    """The object set and the clock; ``run`` steps from event to event."""

    def __init__(
        self,
        story: Sequence[Workload],
        rescales: Sequence[Rescale],
        config: SchedulerConfig,
        where: Cluster = cluster.MAIN,
    ) -> None:
        self.config = config
        self.cluster = where
        self.infrastructure = cluster.infrastructure(where)
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
        return DemoRun(self.steps, list(self.progress.values()), self.cluster)

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
                        self.pods[key] = {**pod, "status": {**pod["status"], "phase": "Succeeded"}}
            if w.arrives == minute:
                step.arrived.append(w.name)
                step.grouped.append(self._group(item, w.manifest, minute))
        for rescale in self.rescales:
            if rescale.minute == minute and rescale.workload in self.manifests:
                scaled, old = rescale.apply(self.manifests[rescale.workload])
                event = self._group(self.progress[rescale.workload], scaled, minute)
                change = (rescale.group, old, rescale.replicas)
                step.grouped.append(dataclasses.replace(event, rescale=change))
        step.gpus_before = self._devices_held()
        start = cluster.parse_stamp(cluster.stamp(minute))
        for cycle in range(1, MAX_CYCLES + 1):
            now = start + (cycle - 1) * ROUND_SECONDS
            objects = _sourced(self.objects())
            result = run_cycle(_snapshot(objects, now), self.config, explain=True)
            if not made_decisions(result):
                break
            step.cycles = cycle
            self._apply(step, result, minute, cycle)
            self._carry_out(objects, result, now)
        after = _snapshot(_sourced(self.objects()), now)
        step.queues = queue_rows(after, self.config, self.cluster)
        step.gpus_in_use = self._devices_held()
        self._waiting(step, result)
        self.steps.append(step)

    def _workloads_on_gpu_groups(self) -> dict[str, set[str]]:
        """Shared GPU group -> the workloads whose running pods use it."""
        found: dict[str, set[str]] = {}
        for key, pod in self.pods.items():
            group = (pod["metadata"].get("labels") or {}).get(GPU_GROUP_LABEL)
            if group and pod["status"]["phase"] == "Running":
                found.setdefault(group, set()).add(self.owner[key])
        return found

    def _devices_held(self) -> dict[str, int]:
        """GPU devices in use per node: whole GPUs, plus each shared GPU group once."""
        whole = dict.fromkeys(self.cluster.nodes, 0)
        shares: dict[tuple[str, str], float] = {}
        for key, pod in self.pods.items():
            node = pod["spec"].get("nodeName")
            if pod["status"]["phase"] != "Running" or not node:
                continue
            labels = pod["metadata"].get("labels") or {}
            if FRACTION in (pod["metadata"].get("annotations") or {}):
                group = labels.get(GPU_GROUP_LABEL, key)  # unlabelled: a device of its own
                shares[(node, group)] = shares.get((node, group), 0.0) + _gpus(pod)
            else:
                whole[node] += int(_gpus(pod))
        for node, _ in shares:
            whole[node] += 1
        return whole

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

    def _carry_out(self, objects: list[SourcedObject], result: CycleResult, now: float) -> None:
        """The cycle's decisions happen; controllers re-create the pods evicted outright."""
        after = apply_result(objects, result, now)
        pods = {podgrouping.key(o.obj): o.obj for o in after if o.kind == "Pod"}
        for eviction in result.evictions:
            key = eviction.pod
            item = self.progress[self.owner[key]]
            if key not in pods and item.finished_at is None:
                old = self.pods[key]
                spec = {k: v for k, v in old["spec"].items() if k != "nodeName"}
                pods[key] = {**old, "spec": spec, "status": {"phase": "Pending"}}
        self.pods = {key: pods[key] for key in self.pods if key in pods}
        self.pod_groups = {podgrouping.key(o.obj): o.obj for o in after if o.kind == "PodGroup"}

    def _apply(self, step: Step, result: CycleResult, minute: int, cycle: int) -> None:
        """Record what the cycle decided, per workload, before it is carried out."""
        running_before = {
            key: _group_of(pod)
            for key, pod in self.pods.items()
            if pod["status"]["phase"] == "Running"
        }
        self._evictions(step, result, cycle)
        placed: dict[str, list[dict[str, Any]]] = {}
        nodes_of: dict[str, set[str]] = {}
        on_group = self._workloads_on_gpu_groups()
        shares: dict[str, tuple[tuple[str, ...], bool]] = {}
        for bind in result.binds:
            pod = self.pods[bind.pod]
            owner = self.owner[bind.pod]
            placed.setdefault(owner, []).append(pod)
            nodes_of.setdefault(owner, set()).add(bind.node)
            if bind.gpu_groups:
                others = sorted({w for g in bind.gpu_groups for w in on_group.get(g, ())} - {owner})
                shares[owner] = (tuple(others), not others)
                for group in bind.gpu_groups:
                    on_group.setdefault(group, set()).add(owner)
        for name in self.progress:
            pods = placed.get(name)
            if not pods:
                continue
            item = self.progress[name]
            moved = any(e.workload == name and e.moved_to for e in step.evicted)
            grew = item.started_at is not None and not moved
            if item.started_at is None:
                item.started_at = minute
            extras = 0
            for group_key in sorted({_group_of(p) for p in pods}):
                new = sum(1 for p in pods if _group_of(p) == group_key)
                before = sum(1 for g in running_before.values() if g == group_key)
                minimum = item.pod_groups[group_key].min_member
                extras += new - max(0, minimum - before)
            nodes = tuple(sorted(nodes_of[name]))
            gpus = sum(_gpus(p) for p in pods)
            shares_with, opened = shares.get(name, ((), False))
            step.started.append(
                Started(
                    name, len(pods), gpus, nodes, extras, grew, cycle, moved, shares_with, opened
                )
            )

    def _evictions(self, step: Step, result: CycleResult, cycle: int) -> None:
        moved_to = {b.pod: b.node for b in result.pipelined}
        evicted: dict[tuple[str, str, str | None], list[str]] = {}
        for eviction in result.evictions:
            for_workload = self.owner.get(eviction.for_job) if eviction.for_job else None
            where = (self.owner[eviction.pod], eviction.action, for_workload)
            evicted.setdefault(where, []).append(eviction.pod)
        for (workload, action, for_workload), keys in evicted.items():
            pods = [self.pods[k] for k in keys]
            record = Evicted(
                workload,
                len(pods),
                sum(_gpus(p) for p in pods),
                tuple(sorted({p["spec"].get("nodeName", "") for p in pods})),
                action,
                for_workload,
                tuple(sorted({moved_to[k] for k in keys if k in moved_to})),
                step.minute,
                cycle,
            )
            step.evicted.append(record)
            item = self.progress[workload]
            item.evictions.append(record)
            still_running = any(
                pod["status"]["phase"] == "Running" and key not in keys
                for key, pod in self.pods.items()
                if self.owner[key] == workload
            )
            if not record.moved_to and not still_running:
                item.started_at = None  # stopped: it starts again from the beginning
        reserved: dict[str, list[str]] = {}
        for bind in result.pipelined:
            if bind.pod not in {e.pod for e in result.evictions}:
                reserved.setdefault(self.owner[bind.pod], []).append(bind.node)
        for workload, nodes in reserved.items():
            step.pipelined.append(Pipelined(workload, len(nodes), tuple(sorted(set(nodes))), cycle))

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


def run_scene(scene: Scene, config: SchedulerConfig | None = None) -> DemoRun:
    """One "making room" scene on its own cluster, from minute 0 until nothing more happens."""
    return Simulation(scene.workloads(), (), config or SchedulerConfig(), scene.cluster).run()


def simulate(config: SchedulerConfig | None = None, *, scenes: bool = True) -> DemoRun:
    """Run the story from minute 0 until nothing more happens, then the scenes."""
    run = Simulation(workloads(), RESCALES, config or SchedulerConfig()).run()
    if scenes:
        run.scenes = [SceneRun(scene, run_scene(scene, config)) for scene in SCENES]
    return run
