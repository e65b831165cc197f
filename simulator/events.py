"""The discrete-event loop: arrivals, scheduling cycles, decisions carried out, completions.

Why: a what-if answer is only worth having if it comes from the live
scheduler's own code. This loop keeps one :class:`ClusterCache` up to date
incrementally, exactly as the live informers do (a pod is upserted when it
arrives, upserted again when bound, deleted when it completes or is evicted),
and calls :func:`scheduler.cycle.run_cycle` on the cache's snapshot.

Rules of simulated time (docs/simulate.md):

* cycles run on ticks, every ``period`` seconds (default 1 s), and only when
  something changed since the last cycle and some pod is pending; a cycle
  with nothing pending is skipped. A cycle is a pure function of the cluster
  and the clock, so one that ran on an unchanged cluster would decide what
  the last one did; only the time-based rules below change with the clock
  alone. Pipelined pods change nothing either (nothing is persisted for
  them, as in KAI): a cycle whose only decisions are pipelined pods is not
  carried out, and the next cycle waits for a change. ``every_tick=True``
  runs a cycle on every tick while a pod is pending instead: the reference
  the tests hold the fast path to (the same starts, ends and binds);
* a cycle's decisions take effect one period after the cycle started (the
  cycle, the binder and the kubelet take that long); the next cycle can run
  at that same tick and sees them;
* a job runs for its duration from the moment its gang's minimum runs (a gang
  starts together), then its pods and PodGroup are deleted;
* an evicted pod of a controller-owned workload (every trace row, Jobs,
  PyTorchJobs, ...) is re-created pending under the same name, as its
  controller would re-create it; the job's work restarts from zero and the
  GPU time it had run is counted as lost. An evicted bare Pod is gone: its job
  never completes;
* time-based rules (minimum runtime, stale-gang grace) wake the loop when they
  can next change their answer (:mod:`simulator.timers`): a cycle runs at the
  first tick after a victim's minimum runtime ends or a stale gang's grace
  period runs out, if some pod is still pending;
* with a ``usageDBConfig`` (time-based fair share) queue usage changes with
  the clock too: allocation is recorded whenever time advances, each cycle
  gets the usage as input, and a cycle runs every ``fetchInterval`` while a
  pod is pending.

A run can be stopped early (SIGINT, SIGTERM in ``podmuster simulate``): the
loop reads a :class:`~simulator.progress.StopFlag` between events and ends
there, and the figures of the run so far are computed as at a normal end,
marked ``partial`` (docs/simulate.md, "Progress and interruption").
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crds.documents import SourcedObject, gc_paused
from crds.errors import InputError
from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.queues import QueueTree
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.cache.cluster_cache import ClusterCache
from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult, run_cycle
from scheduler.usage.history import UsageHistory
from scheduler.usage.recording import record_snapshot
from simulator import objects, timers
from simulator.autoscale import Autoscaler
from simulator.metrics import Recorder, RunMetrics
from simulator.model import Scenario, SimJob
from simulator.progress import Progress, StopFlag

# Events at the same instant happen in this order: what frees resources first.
_COMPLETE, _APPLY, _ARRIVE, _NODE, _WAKE, _CYCLE = range(6)


@dataclass(slots=True)
class JobRun:
    """A job's life in the simulation."""

    job: SimJob
    pending: set[str] = field(default_factory=set)
    running: dict[str, int] = field(default_factory=dict)  # pod key -> node index
    start: float | None = None  # when the current attempt started (its gang's minimum running)
    first_start: float | None = None
    end: float | None = None
    epoch: int = 0  # bumped on every disruption: a stale completion event is ignored
    lost: bool = False  # a bare pod was evicted; the job cannot complete
    # the PodGroup as the engine read it, from the first cycle that bound one of its pods:
    # which pod set each pod is in, and the gang rule over them (elastic jobs run at their
    # minimum; docs/simulate.md)
    gang: PodGroupInfo | None = None

    def gang_running(self) -> bool:
        """Whether the pods running meet the gang's requirement (all pods without a gang
        read yet): the job runs, and its duration counts, from then on."""
        if self.gang is None:
            return not self.pending
        running = self.running
        return self.gang.requirement_met(lambda ps: sum(1 for p in ps.pods if p.key in running))


def changes_cluster(result: CycleResult) -> bool:
    """Whether carrying out the cycle's decisions changes what the next cycle sees.

    Binds, evictions and PodGroup annotations do; pipelined pods alone do not
    (they stay pending, and nothing is persisted for them).
    """
    return bool(result.binds or result.evictions or result.annotations)


class Simulation:
    """One replay of a scenario under one scheduler configuration."""

    def __init__(
        self,
        scenario: Scenario,
        config: SchedulerConfig,
        *,
        period: float = 1.0,
        progress: Progress | None = None,
        stop: StopFlag | None = None,
        every_tick: bool = False,
    ) -> None:
        if period <= 0:
            raise ValueError("the scheduling period must be positive")
        self.scenario = scenario
        self.config = config
        self.period = period
        self.progress = progress
        self.stop = stop
        self.partial = False  # stopped by ``stop`` before the end
        self.every_tick = every_tick  # the slow reference path (module docstring)
        self.cache = ClusterCache(config.scheduler_name, strict=True)
        self.node_index: dict[str, int] = {}
        self.node_names: list[str] = []
        self.node_pool: list[str | None] = []
        self.capacity = np.zeros(0, dtype=np.float64)
        self.used = np.zeros(0, dtype=np.float64)
        self.node_pods: list[int] = []
        self.empty_since: list[float | None] = []
        self.pod_job: dict[str, JobRun] = {}
        self.pod_gpu: dict[str, float] = {}
        self.pod_manifest: dict[str, dict[str, Any]] = {}
        self.runs: list[JobRun] = []
        self.groups: dict[str, JobRun] = {}
        self.pending_pods = 0
        self.finished = 0  # jobs completed or lost: the run ends when all are
        self._waiting_gpu_jobs: list[tuple[float, int, JobRun]] = []
        self.dirty = False
        self.in_flight = False
        self.cycle_at: float | None = None
        self.now = 0.0
        self._events: list[tuple[float, int, int, Any]] = []
        self._seq = itertools.count()
        self.recorder = Recorder(self)
        self.autoscaler = Autoscaler(self, scenario.pools)
        self.engine_seconds = 0.0
        self.snapshot_seconds = 0.0
        self.cycles = 0
        self._wakes: set[float] = set()  # pending wake-up instants (simulator.timers)
        self._runtimes: tuple[QueueTree, tuple[float, ...]] | None = None
        # time-based fair share: with a usageDBConfig, queue usage is recorded as the run
        # goes (whatever its clientType) and fed to every cycle (docs/simulate.md)
        self.usage: UsageHistory | None = None
        self._usage_wake = -math.inf
        if config.usage_db is not None:
            self.usage = UsageHistory(config.usage_db.params)

    # --- events -----------------------------------------------------------------------
    def push(self, at: float, kind: int, payload: Any = None) -> None:
        heapq.heappush(self._events, (at, kind, next(self._seq), payload))

    def push_node_event(self, at: float, action: Callable[[], None]) -> None:
        self.push(at, _NODE, action)

    # --- nodes ------------------------------------------------------------------------
    def add_node(self, manifest: dict[str, Any], pool: str | None = None) -> None:
        name = str(manifest["metadata"]["name"])
        if name in self.node_index:
            raise InputError(f"duplicate node {name!r}", source=self.scenario.source or None)
        self.recorder.advance(self.now)
        self.cache.upsert(SourcedObject(manifest, self.scenario.source or "<cluster>", 0))
        self.node_index[name] = len(self.node_names)
        self.node_names.append(name)
        self.node_pool.append(pool)
        self.capacity = np.append(self.capacity, objects.node_gpus(manifest))
        self.used = np.append(self.used, 0.0)
        self.node_pods.append(0)
        self.empty_since.append(self.now)
        self.dirty = True
        self.recorder.changed()
        if pool is not None:
            self.autoscaler.node_emptied(len(self.node_names) - 1)

    def remove_node(self, name: str) -> None:
        """Take an empty node out (scale-down); its row stays, with no capacity."""
        index = self.node_index.pop(name)
        self.recorder.advance(self.now)
        self.cache.delete("Node", name)
        self.capacity[index] = 0.0
        self.node_pool[index] = None
        self.recorder.changed()

    def head_of_queue_gpus(self) -> float:
        """GPUs one pod of the oldest pending GPU job asks for (0 when none is pending)."""
        heap = self._waiting_gpu_jobs
        while heap and not heap[0][2].pending:
            heapq.heappop(heap)
        if not heap:
            return 0.0
        run = heap[0][2]
        return max(self.pod_gpu[pod] for pod in run.pending)

    def _waiting(self, run: JobRun) -> None:
        if run.job.gpus > 0:
            heapq.heappush(self._waiting_gpu_jobs, (run.job.arrival, next(self._seq), run))

    # --- pods and jobs ------------------------------------------------------------------
    def _upsert(self, manifest: dict[str, Any], source: str) -> None:
        self.cache.upsert(SourcedObject(manifest, source, 0))

    def _pending(self, run: JobRun, pod: str) -> None:
        run.pending.add(pod)
        self.pending_pods += 1
        self.recorder.pods_pending(run.job.queue, 1)

    def _arrive(self, run: JobRun) -> None:
        job = run.job
        self._upsert(job.pod_group, job.origin)
        self.recorder.arrived(run)
        for manifest, gpus in zip(job.pods, job.pod_gpus, strict=True):
            key = f"{manifest['metadata']['namespace']}/{manifest['metadata']['name']}"
            if key in self.pod_job:
                raise InputError(f"two jobs have a pod named {key!r}", obj=job.origin or None)
            self.pod_job[key] = run
            self.pod_gpu[key] = gpus
            self.pod_manifest[key] = manifest
            self._upsert(manifest, job.origin)
            self._pending(run, key)
        self._waiting(run)
        self.dirty = True

    def _place(self, run: JobRun, pod: str, node: int) -> None:
        run.running[pod] = node
        gpus = self.pod_gpu[pod]
        self.used[node] += gpus
        self.node_pods[node] += 1
        self.empty_since[node] = None
        self.recorder.allocation(run.job.queue, gpus)

    def _free(self, run: JobRun, pod: str) -> None:
        node = run.running.pop(pod)
        gpus = self.pod_gpu[pod]
        self.used[node] -= gpus
        self.node_pods[node] -= 1
        self.recorder.allocation(run.job.queue, -gpus)
        self.cache.delete("Pod", pod)
        if self.node_pods[node] == 0:
            self.empty_since[node] = self.now
            self.autoscaler.node_emptied(node)

    def _complete(self, run: JobRun, epoch: int) -> None:
        if epoch != run.epoch or run.end is not None:
            return
        for pod in list(run.running):
            self._free(run, pod)
        for pod in run.pending:  # an elastic job's pods beyond its minimum that never ran
            self.cache.delete("Pod", pod)
            self.pending_pods -= 1
            self.recorder.pods_pending(run.job.queue, -1)
        run.pending.clear()
        run.gang = None
        self.cache.delete("PodGroup", run.job.key)
        run.end = self.now
        self.finished += 1
        self.recorder.completed(run)
        self.dirty = True

    def _apply(self, result: CycleResult) -> None:
        """Carry out a cycle's decisions (see the module docstring for the rules)."""
        self.in_flight = False
        moved = {bind.pod for bind in result.pipelined}
        disrupted: dict[str, tuple[JobRun, str, bool]] = {}
        for eviction in result.evictions:
            run = self.pod_job.get(eviction.pod)
            if run is None or eviction.pod not in run.running:
                continue  # completed while the decision was on its way
            self._free(run, eviction.pod)
            if run.job.recreate:
                self._upsert(self.pod_manifest[eviction.pod], run.job.origin)
                self._pending(run, eviction.pod)
            elif not run.lost:
                run.lost = True
                self.finished += 1
            disrupted.setdefault(run.job.key, (run, eviction.action, eviction.pod in moved))
        for run, action, was_moved in disrupted.values():
            # an elastic job shrunk to no less than its minimum runs on, its work kept
            runs_on = run.start is not None and not run.lost and run.gang_running()
            self.recorder.disrupted(run, action, was_moved, restarts=not runs_on)
            if runs_on:
                continue
            run.start = None
            run.epoch += 1
            if run.pending:
                self._waiting(run)
        placed: dict[str, JobRun] = {}
        for bind in result.binds:
            run = self.pod_job.get(bind.pod)
            if run is None or bind.pod not in run.pending:
                continue
            bound = objects.bound(self.pod_manifest[bind.pod], bind.node, self.now, bind.gpu_groups)
            self._upsert(bound, run.job.origin)
            run.pending.discard(bind.pod)
            self.pending_pods -= 1
            self.recorder.pods_pending(run.job.queue, -1)
            self._place(run, bind.pod, self.node_index[bind.node])
            placed[run.job.key] = run
        for key, changes in result.annotations.items():
            self._annotate(key, changes)
        for run in placed.values():
            if run.start is not None or run.lost or not run.gang_running():
                continue
            run.start = self.now
            if run.first_start is None:
                run.first_start = self.now
            self.recorder.started(run)
            if math.isfinite(run.job.duration):
                self.push(self.now + run.job.duration, _COMPLETE, (run, run.epoch))
        self.dirty = True
        self.recorder.changed()

    def _annotate(self, key: str, changes: dict[str, str | None]) -> None:
        """Persist the cycle's PodGroup annotations (last start, stale since), as KAI does."""
        run = self.groups.get(key)
        if run is None or run.end is not None:
            return
        body = run.job.pod_group
        annotations = dict(body["metadata"].get("annotations") or {})
        for name, value in changes.items():
            if value is None:
                annotations.pop(name, None)
            else:
                annotations[name] = value
        run.job.pod_group = {**body, "metadata": {**body["metadata"], "annotations": annotations}}
        self._upsert(run.job.pod_group, run.job.origin)

    # --- cycles -------------------------------------------------------------------------
    def _cycle(self) -> None:
        self.cycle_at = None
        if self.pending_pods == 0 or self.in_flight or not (self.dirty or self.every_tick):
            return
        self.dirty = False
        started = time.perf_counter()
        built = self.cache.snapshot(self.now, self.config.stuck_in_releasing_s)
        if self.usage is not None:
            built.snapshot.queue_usage = self.usage.refreshed_usage(self.now)
            self._arm_usage_refresh()
        middle = time.perf_counter()
        result = run_cycle(built.snapshot, self.config)
        self.snapshot_seconds += middle - started
        self.engine_seconds += time.perf_counter() - middle
        self.cycles += 1
        self._arm_wake(built.snapshot, result)
        self._read_gangs(built.snapshot, result)
        self.recorder.cycle(result)
        self.autoscaler.after_cycle(result)
        if changes_cluster(result):
            self.in_flight = True
            self.push(self.now + self.period, _APPLY, result)
        elif self.every_tick:
            self.cycle_at = self.now + self.period
            self.push(self.cycle_at, _CYCLE)

    def _read_gangs(self, snapshot: ClusterSnapshot, result: CycleResult) -> None:
        """Keep, for each job a bind of this cycle starts, its PodGroup as the engine read it
        (:attr:`JobRun.gang`); only the first bind of a job looks it up."""
        for bind in result.binds:
            run = self.pod_job.get(bind.pod)
            if run is not None and run.gang is None:
                run.gang = snapshot.jobs.get(run.job.key)

    def _arm_wake(self, snapshot: ClusterSnapshot, result: CycleResult) -> None:
        """Wake the loop when a minimum runtime or a stale gang's grace period ends."""
        if self._runtimes is None or self._runtimes[0] is not snapshot.queues:
            self._runtimes = (snapshot.queues, timers.min_runtimes(snapshot.queues, self.config))
        at = timers.next_rule_change(snapshot, self.config, result.annotations, self._runtimes[1])
        if math.isfinite(at) and at not in self._wakes:
            self._wakes.add(at)
            self.push(at, _WAKE)

    def _arm_usage_refresh(self) -> None:
        """Cycle again one ``fetchInterval`` on: usage, hence fair shares, change with time."""
        assert self.config.usage_db is not None
        if self._usage_wake > self.now:
            return  # one refresh pending at a time
        at = self.now + self.config.usage_db.params.fetch_interval_s
        self._usage_wake = at
        if at not in self._wakes:
            self._wakes.add(at)
            self.push(at, _WAKE)

    def _record_usage(self) -> None:
        """Note what each queue holds from now until the next instant something happens."""
        if self.usage is not None:
            record_snapshot(self.usage, self.cache.snapshot(self.now).snapshot)

    def _wake(self) -> None:
        self._wakes.discard(self.now)
        self.dirty = True

    def _maybe_schedule_cycle(self) -> None:
        if self.pending_pods == 0 or self.in_flight or self.cycle_at is not None:
            return
        if not (self.dirty or self.every_tick):
            return
        tick = math.ceil(self.now / self.period - 1e-9) * self.period
        self.cycle_at = max(tick, self.now)
        self.push(self.cycle_at, _CYCLE)

    # --- the loop -----------------------------------------------------------------------
    def run(self) -> RunMetrics:
        scenario = self.scenario
        source = scenario.source or "<cluster>"
        with gc_paused():
            for manifest in [*scenario.priority_classes, *scenario.queues, *scenario.topologies]:
                self._upsert(manifest, source)
            for manifest in scenario.nodes:
                self.add_node(manifest)
            self.autoscaler.start()
            for job in sorted(scenario.jobs, key=lambda j: (j.arrival, j.key)):
                if job.key in self.groups:
                    raise InputError(
                        f"two jobs share the PodGroup {job.key!r}", obj=job.origin or None
                    )
                run = JobRun(job)
                self.runs.append(run)
                self.groups[job.key] = run
                self.push(job.arrival, _ARRIVE, run)
            self.recorder.begin([str(q["metadata"]["name"]) for q in scenario.queues])
        # The collector runs between cycles (run_cycle pauses it inside): each cycle's
        # session is a reference cycle, and thousands of them would pile up otherwise.
        self._loop()
        metrics = self.recorder.finish()
        metrics.figures["partial"] = self.partial
        return metrics

    def _loop(self) -> None:
        events = self._events
        stop = self.stop
        progress = self.progress
        total = len(self.runs)
        while events:
            if stop is not None and stop.is_set():
                self.partial = True
                break
            at, kind, _, payload = heapq.heappop(events)
            if at > self.now:
                self._record_usage()
                self.recorder.advance(at)
                self.now = at
            if kind == _COMPLETE:
                self._complete(*payload)
            elif kind == _APPLY:
                self._apply(payload)
            elif kind == _ARRIVE:
                self._arrive(payload)
            elif kind == _NODE:
                payload()
            elif kind == _WAKE:
                self._wake()
            else:
                self._cycle()
            if not events or events[0][0] > self.now:
                if self.finished == len(self.runs):
                    break  # left: only autoscaler timers
                self._maybe_schedule_cycle()
            if progress is not None:
                progress.update(self.now, self.finished, total)
        self.recorder.advance(self.now)
