"""Metrics of one simulation run: waits, completion times, allocation, fairness, disruption.

Why: a what-if run is judged by a few numbers per run and per queue. They are
accumulated while the simulation runs (time-weighted integrals of piecewise
constant quantities, no per-instant copies of the cluster) and kept as time
series for the report's plots. Definitions are in docs/simulate.md:

* wait: first start (all pods running) minus arrival; JCT: completion minus
  arrival, restarts included; makespan: end of the run minus first arrival;
* GPU allocation ratio: allocated GPUs over cluster GPUs, time-weighted over
  the run (fractions count as their fraction);
* fragmentation: idle GPUs on nodes whose idle GPUs cannot hold one pod of the
  head-of-queue job (the oldest pending GPU job), over cluster GPUs,
  time-weighted (zero while nothing is pending);
* fair share of a queue: the engine's fair share from the latest cycle while
  the queue has pending pods, its allocation otherwise (a queue that asks for
  nothing more is at its fair share; a queue whose pods wait for their first
  cycle has no fair share computed yet); deviation: time-weighted sum over
  queues of |allocated - fair share| over cluster GPUs (per queue: in GPUs);
* Jain's index over queues of x = time-integral of allocation over
  time-integral of fair share (1 = every queue got the same fraction of its
  fair share).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.cycle import CycleResult
from simulator import inventory
from simulator.reasons import root_cause

if TYPE_CHECKING:
    from simulator.events import JobRun, Simulation

DISRUPTIONS = {
    "preempt": "preemptions",
    "reclaim": "reclaims",
    "consolidation": "consolidation_moves",
    "stalegangeviction": "stale_gang_evictions",
}
# The same actions as counted on one job in ``job_results`` (times it suffered each).
JOB_DISRUPTIONS = {
    "preempt": "preempted",
    "reclaim": "reclaimed",
    "consolidation": "moved",
    "stalegangeviction": "stale_gang_evicted",
}


def summary(values: list[float]) -> dict[str, float | None]:
    """mean, p50 and p95 (linear interpolation), or nulls for no values."""
    if not values:
        return {"mean": None, "p50": None, "p95": None}
    array = np.asarray(values, dtype=np.float64)
    return {
        "mean": _round(float(array.mean())),
        "p50": _round(float(np.percentile(array, 50))),
        "p95": _round(float(np.percentile(array, 95))),
    }


def never_started(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``job_results`` entries of the jobs that never started, in arrival order.

    Why: the table and the report both single these jobs out (with the
    engine's last reason), and must agree on which they are.
    """
    return [
        entry
        for entry in figures.get("job_results", ())
        if entry["start_s"] is None and entry.get("state") != NOT_ARRIVED
    ]


COMPLETED, RUNNING, LOST, WAITING, NOT_ARRIVED = (
    "completed",
    "running",
    "lost",
    "waiting",
    "not arrived",
)
"""A job's ``state`` at the end of the run (``job_results``): completed; running (its
gang's minimum runs); lost (an evicted bare Pod, gone); waiting (pending, never started
or waiting to start again); not arrived (a run stopped before its arrival)."""


def _state(run: JobRun, now: float) -> str:
    """The job's :data:`COMPLETED` ... :data:`NOT_ARRIVED` state at ``now``, the run's end."""
    if run.end is not None:
        return COMPLETED
    if run.lost:
        return LOST
    if run.start is not None:
        return RUNNING
    return NOT_ARRIVED if run.job.arrival > now else WAITING


def _workload(pod_group: dict[str, Any]) -> str | None:
    """ "Kind namespace/name" of the workload that owns a PodGroup, None for a trace row.

    Why: the podgrouper names a workload's PodGroup ``pg-<name>-<hash>-<uid>``;
    a person looks for the RayJob or PyTorchJob they submitted.
    """
    metadata = pod_group.get("metadata") or {}
    for owner in metadata.get("ownerReferences") or ():
        return f"{owner.get('kind')} {metadata.get('namespace')}/{owner.get('name')}"
    return None


def _by_count(counts: dict[str, int]) -> dict[str, int]:
    """Most frequent first; equal counts keep their first-seen order."""
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def _round(value: float, digits: int = 6) -> float:
    return round(value, digits)


def jain(values: list[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n * sum x^2); None for no values."""
    if not values:
        return None
    total = sum(values)
    squares = sum(v * v for v in values)
    if squares == 0:
        return 1.0
    return total * total / (len(values) * squares)


@dataclass(slots=True)
class QueueSeries:
    allocated: list[float] = field(default_factory=list)
    fair_share: list[float] = field(default_factory=list)


@dataclass(slots=True)
class Series:
    """Piecewise-constant time series: value i holds from times[i] to times[i + 1]."""

    times: list[float] = field(default_factory=list)
    allocated: list[float] = field(default_factory=list)
    capacity: list[float] = field(default_factory=list)
    fragmented: list[float] = field(default_factory=list)
    queues: dict[str, QueueSeries] = field(default_factory=dict)


@dataclass(slots=True)
class RunMetrics:
    """The figures of one run (``to_dict`` is the JSON) and the series for plots."""

    figures: dict[str, Any]
    series: Series
    waits: dict[str, list[float]]  # queue -> waits ("" = all)

    def to_dict(self) -> dict[str, Any]:
        return self.figures


@dataclass(slots=True)
class _QueueTotals:
    allocated_s: float = 0.0
    fair_s: float = 0.0
    deviation_s: float = 0.0
    disruptions: dict[str, int] = field(default_factory=dict)
    lost_gpu_s: float = 0.0


class Recorder:
    """Accumulates the metrics while a :class:`Simulation` runs."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.start: float | None = None
        self.last = 0.0
        self.allocated: dict[str, float] = {}
        self.pending: dict[str, int] = {}
        self.fair_share: dict[str, float] = {}
        self.queues: dict[str, _QueueTotals] = {}
        self.allocated_s = 0.0
        self.capacity_s = 0.0
        self.fragmented_s = 0.0
        self.deviation_s = 0.0
        self.disruptions: dict[str, int] = {}
        self.lost_gpu_s = 0.0
        # per job: the root cause of its waiting now and since when (from the cycle that
        # first gave it), and the seconds it has waited for each cause so far
        self._cause_now: dict[str, tuple[str, float]] = {}
        self.cause_seconds: dict[str, dict[str, float]] = {}
        # per job (PodGroup key): disruptions by JOB_DISRUPTIONS name, nodes at its last
        # start, and the engine's reasons from the last cycle it was pending in
        self.job_disruptions: dict[str, dict[str, int]] = {}
        self.job_nodes: dict[str, int] = {}
        self.last_reasons: dict[str, tuple[str, ...]] = {}
        self._fragmented: float | None = None
        self.series = Series()

    def begin(self, queue_names: list[str]) -> None:
        jobs = self.sim.runs
        self.start = min((run.job.arrival for run in jobs), default=0.0)
        self.last = self.start
        for name in sorted({*queue_names, *(run.job.queue for run in jobs)}):
            self._queue(name)

    def _queue(self, name: str) -> _QueueTotals:
        totals = self.queues.get(name)
        if totals is None:
            totals = self.queues[name] = _QueueTotals()
            self.allocated[name] = 0.0
            self.pending[name] = 0
            self.series.queues[name] = QueueSeries()
        return totals

    # --- state the simulation reports -------------------------------------------------
    def changed(self) -> None:
        self._fragmented = None

    def allocation(self, queue: str, delta: float) -> None:
        self.allocated[queue] = self.allocated.get(queue, 0.0) + delta
        self._fragmented = None

    def arrived(self, run: JobRun) -> None:
        self._queue(run.job.queue)
        self._fragmented = None

    def pods_pending(self, queue: str, delta: int) -> None:
        """Count pending pods; a queue that starts waiting has no known fair share yet."""
        if self.pending[queue] == 0 and delta > 0:
            self.fair_share.pop(queue, None)
        self.pending[queue] += delta

    def started(self, run: JobRun) -> None:
        """Note how many nodes the job runs on now that it runs (its gang's minimum, or all
        its pods)."""
        self.job_nodes[run.job.key] = len(set(run.running.values()))
        self.last_reasons.pop(run.job.key, None)  # only a job that never starts needs them
        self._cause_ends(run.job.key, self.sim.now)

    def _cause_ends(self, job: str, now: float) -> None:
        """The job stops waiting for its current root cause (it started, or the run ended)."""
        current = self._cause_now.pop(job, None)
        if current is not None:
            cause, since = current
            seconds = self.cause_seconds.setdefault(job, {})
            seconds[cause] = seconds.get(cause, 0.0) + (now - since)

    def completed(self, run: JobRun) -> None:
        self._fragmented = None

    def disrupted(self, run: JobRun, action: str, moved: bool, *, restarts: bool = True) -> None:
        """Count a disruption; with ``restarts`` (not an elastic job that keeps its minimum
        running) the GPU time it had run is lost."""
        name = DISRUPTIONS.get(action, action)
        totals = self._queue(run.job.queue)
        self.disruptions[name] = self.disruptions.get(name, 0) + 1
        per_job = self.job_disruptions.setdefault(run.job.key, {})
        job_name = JOB_DISRUPTIONS.get(action, action)
        per_job[job_name] = per_job.get(job_name, 0) + 1
        totals.disruptions[name] = totals.disruptions.get(name, 0) + 1
        if run.start is not None and restarts:
            lost = (self.sim.now - run.start) * run.job.gpus
            self.lost_gpu_s += lost
            totals.lost_gpu_s += lost

    def cycle(self, result: CycleResult) -> None:
        for summary_ in result.queues:
            if summary_.name in self.queues:
                self.fair_share[summary_.name] = summary_.fair_share[0]
        for outcome in result.pod_groups:
            if outcome.outcome != "pending":
                continue
            current = self._cause_now.get(outcome.pod_group)
            if current is not None and self.last_reasons.get(outcome.pod_group) == outcome.reasons:
                continue  # the same sentences as last cycle: the same cause, still running
            run = self.sim.groups.get(outcome.pod_group)
            if run is not None and run.start is not None:
                continue  # an elastic job runs at its minimum: its extra pods wait, it does not
            self.last_reasons[outcome.pod_group] = outcome.reasons
            cause = root_cause(outcome.reasons)
            if current is None or current[0] != cause:
                self._cause_ends(outcome.pod_group, self.sim.now)
                self._cause_now[outcome.pod_group] = (cause, self.sim.now)
                self.cause_seconds.setdefault(outcome.pod_group, {}).setdefault(cause, 0.0)

    def waited_for(self, job: str) -> str | None:
        """The root cause a job waited for longest (the first on a tie), None if never pending.

        Why: a pending-reasons histogram counts each job once, by what held it
        up most; a job that waited 30 s for a node and then 1 s for a GPU
        waited for the node.
        """
        seconds = self.cause_seconds.get(job)
        if not seconds:
            return None
        return max(seconds, key=lambda cause: seconds[cause])

    # --- integration ----------------------------------------------------------------
    def _fragmented_now(self) -> float:
        if self._fragmented is None:
            self._fragmented = self._compute_fragmented()
        return self._fragmented

    def _compute_fragmented(self) -> float:
        request = self.sim.head_of_queue_gpus()
        if request <= 0:
            return 0.0
        idle = self.sim.capacity - self.sim.used
        stuck = (idle > 1e-9) & (idle < request - 1e-9)
        return float(idle[stuck].sum())

    def advance(self, now: float) -> None:
        """Integrate the current state from the last instant up to ``now``."""
        if self.start is None or now <= self.last:
            return
        dt = now - self.last
        capacity = float(self.sim.capacity.sum())
        allocated = sum(self.allocated.values())
        fragmented = self._fragmented_now()
        self.allocated_s += allocated * dt
        self.capacity_s += capacity * dt
        self.fragmented_s += fragmented * dt
        series = self.series
        series.times.append(self.last)
        series.allocated.append(allocated)
        series.capacity.append(capacity)
        series.fragmented.append(fragmented)
        deviation = 0.0
        for name, totals in self.queues.items():
            queue_allocated = self.allocated[name]
            fair = (
                self.fair_share.get(name, queue_allocated)
                if self.pending[name]
                else queue_allocated
            )
            totals.allocated_s += queue_allocated * dt
            totals.fair_s += fair * dt
            gap = abs(queue_allocated - fair)
            totals.deviation_s += gap * dt
            deviation += gap
            queue_series = series.queues[name]
            queue_series.allocated.append(queue_allocated)
            queue_series.fair_share.append(fair)
        self.deviation_s += deviation * dt
        self.last = now

    # --- results --------------------------------------------------------------------
    def finish(self) -> RunMetrics:
        sim = self.sim
        end = self.last
        start = self.start if self.start is not None else 0.0
        self.series.times.append(end)
        for job in list(self._cause_now):
            self._cause_ends(job, end)
        reasons: dict[str, dict[str, int]] = {"": {}}  # queue ("" = all) -> root cause -> jobs
        for run in sim.runs:
            cause = self.waited_for(run.job.key)
            if cause is not None:
                for key in ("", run.job.queue):
                    per_queue = reasons.setdefault(key, {})
                    per_queue[cause] = per_queue.get(cause, 0) + 1
        waits: dict[str, list[float]] = {"": []}
        jcts: dict[str, list[float]] = {"": []}
        counts: dict[str, list[int]] = {name: [0, 0] for name in self.queues}
        last_end: dict[str, float] = {}
        for run in sim.runs:
            queue = run.job.queue
            counts[queue][0] += 1
            if run.first_start is not None:
                wait = run.first_start - run.job.arrival
                waits[""].append(wait)
                waits.setdefault(queue, []).append(wait)
            if run.end is not None:
                counts[queue][1] += 1
                jct = run.end - run.job.arrival
                jcts[""].append(jct)
                jcts.setdefault(queue, []).append(jct)
                last_end[queue] = max(last_end.get(queue, run.end), run.end)
        ratios = {
            name: totals.allocated_s / totals.fair_s
            for name, totals in self.queues.items()
            if totals.fair_s > 0
        }
        jain_index = jain(list(ratios.values()))
        figures: dict[str, Any] = {
            "jobs": len(sim.runs),
            "completed": len(jcts[""]),
            "started": len(waits[""]),
            "arrived": sum(1 for run in sim.runs if run.job.arrival <= sim.now),
            "skipped": dict(sorted(sim.scenario.skipped.items())),
            "wait_time_s": summary(waits[""]),
            "jct_s": summary(jcts[""]),
            "makespan_s": _round(end - start),
            "gpu_allocation_ratio": _round(self.allocated_s / self.capacity_s)
            if self.capacity_s
            else 0.0,
            "fragmentation": _round(self.fragmented_s / self.capacity_s)
            if self.capacity_s
            else 0.0,
            "fair_share_deviation": _round(self.deviation_s / self.capacity_s)
            if self.capacity_s
            else 0.0,
            "jain_index": None if jain_index is None else _round(jain_index),
        }
        for name in DISRUPTIONS.values():
            figures[name] = self.disruptions.get(name, 0)
        figures["gpu_hours_lost"] = _round(self.lost_gpu_s / 3600.0)
        figures["pending_reasons"] = _by_count(reasons[""])
        figures["cycles"] = sim.cycles
        figures["engine_seconds"] = _round(sim.engine_seconds, 3)
        figures["snapshot_seconds"] = _round(sim.snapshot_seconds, 3)
        figures["simulated_seconds"] = _round(end - start)
        if sim.autoscaler.pools:
            figures["autoscaler"] = {
                "scale_ups": sim.autoscaler.scale_ups,
                "scale_downs": sim.autoscaler.scale_downs,
            }
        duration = end - start
        queues: dict[str, Any] = {}
        for name, totals in self.queues.items():
            queue_figures: dict[str, Any] = {
                "jobs": counts[name][0],
                "completed": counts[name][1],
                "wait_time_s": summary(waits.get(name, [])),
                "jct_s": summary(jcts.get(name, [])),
                "makespan_s": _round(last_end[name] - start) if name in last_end else None,
                "gpu_allocation_ratio": _round(totals.allocated_s / self.capacity_s)
                if self.capacity_s
                else 0.0,
                "allocated_gpus_mean": _round(totals.allocated_s / duration) if duration else 0.0,
                "fair_share_gpus_mean": _round(totals.fair_s / duration) if duration else 0.0,
                "fair_share_deviation": _round(totals.deviation_s / duration) if duration else 0.0,
            }
            for key in DISRUPTIONS.values():
                queue_figures[key] = totals.disruptions.get(key, 0)
            queue_figures["gpu_hours_lost"] = _round(totals.lost_gpu_s / 3600.0)
            queue_figures["pending_reasons"] = _by_count(reasons.get(name, {}))
            queues[name] = queue_figures
        figures["queues"] = queues
        figures["job_results"] = [self._job_result(run) for run in sim.runs]
        figures["cluster"] = inventory.describe(sim.scenario)
        return RunMetrics(figures, self.series, waits)

    def _job_result(self, run: JobRun) -> dict[str, Any]:
        """One job's line in ``job_results``: when it ran, where, what disrupted it, or why not.

        Why: the run's figures say how many jobs never ran, not which ones or
        why; one such job can skew a queue's fairness figures, and the person
        reading them needs its name and the engine's last explanation.
        """
        job = run.job
        started = run.first_start
        disruptions = self.job_disruptions.get(job.key, {})
        result: dict[str, Any] = {
            "name": job.key,
            "workload": job.workload or _workload(job.pod_group),
            "queue": job.queue,
            "gpus": _round(job.gpus),
            "arrival_s": _round(job.arrival),
            "start_s": None if started is None else _round(started),
            "end_s": None if run.end is None else _round(run.end),
            "wait_s": None if started is None else _round(started - job.arrival),
            "nodes": self.job_nodes.get(job.key, 0),
            "state": _state(run, self.sim.now),
        }
        for name in JOB_DISRUPTIONS.values():
            result[name] = disruptions.get(name, 0)
        result["waited_for"] = self.waited_for(job.key)
        result["last_reasons"] = (
            list(self.last_reasons.get(job.key, ())) if started is None else None
        )
        return result
