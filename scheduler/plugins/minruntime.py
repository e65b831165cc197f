"""Minimum runtime: a job that started recently is not disrupted yet (docs/semantics.md §5.7).

Why: without it a freshly started job can be preempted or reclaimed in the
next cycle and nothing makes progress. A victim is protected while
``now < last start + min runtime``; the runtime comes from the queues
(``preemptMinRuntime`` / ``reclaimMinRuntime``) or the scheduler defaults. For
preempt the walk starts at the victim's leaf queue; for reclaim (KAI's default
``lca`` method) it starts one level below the lowest common ancestor of the
two queues, or is the victim's top-level queue when they share none. A
protected gang is no victim at all; a protected elastic job (a pod set running
more pods than its ``minMember``) may still lose those extra pods, never a
whole subgroup (checked on the scenario).
"""

from __future__ import annotations

from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import ACTIVE_USED
from scheduler.api.queues import QueueTree
from scheduler.config import SchedulerConfig
from scheduler.framework import extension_points as ep
from scheduler.framework.session import Session

_FIELDS = {"preempt": "preempt_min_runtime", "reclaim": "reclaim_min_runtime"}
_KEYS = {"preempt": "preemptMinRuntime", "reclaim": "reclaimMinRuntime"}


def _walk(tree: QueueTree, start: str, field: str) -> tuple[float, str] | None:
    current: str | None = start
    while current is not None:
        value = getattr(tree.queues[current], field)
        if value is not None:
            return float(value), current
        current = tree.queues[current].parent
    return None


def runtime_source(
    tree: QueueTree,
    action: str,
    preemptor: PodGroupInfo,
    victim: PodGroupInfo,
    config: SchedulerConfig,
) -> tuple[float, str | None]:
    """The minimum runtime protecting ``victim`` against ``preemptor`` for ``action``, and
    the queue that sets it (None: the scheduler default)."""
    if victim.queue not in tree.queues:
        return 0.0, None
    default = (
        config.default_preempt_min_runtime_s
        if action == "preempt"
        else config.default_reclaim_min_runtime_s
    )
    if action == "preempt":
        return _walk(tree, victim.queue, _FIELDS[action]) or (default, None)
    top_level = tree.path_to_root(victim.queue)[-1]
    pair = (
        tree.lca_children(preemptor.queue, victim.queue) if preemptor.queue in tree.queues else None
    )
    if preemptor.queue not in tree.queues or (pair is not None and pair[1] == top_level):
        # different top-level queues: only the victim's top-level queue counts, no walk
        top = tree.queues[top_level].reclaim_min_runtime
        return (default, None) if top is None else (float(top), top_level)
    start = pair[1] if pair is not None else victim.queue
    return _walk(tree, start, _FIELDS[action]) or (default, None)


def min_runtime(
    tree: QueueTree,
    action: str,
    preemptor: PodGroupInfo,
    victim: PodGroupInfo,
    config: SchedulerConfig,
) -> float:
    """The minimum runtime protecting ``victim`` against ``preemptor`` for ``action``."""
    return runtime_source(tree, action, preemptor, victim, config)[0]


def _duration(seconds: float) -> str:
    """``seconds`` as a Go-style duration: 1h, 10m, 1h30m, 45s."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{v}{u}" for v, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if v]
    return "".join(parts) or "0s"


def protection(session: Session, action: str, preemptor: PodGroupInfo, victim: PodGroupInfo) -> str:
    """Why ``victim`` may not be disrupted now: the minimum runtime and where it is set."""
    runtime, queue = runtime_source(
        session.snapshot.queues, action, preemptor, victim, session.config
    )
    key = _KEYS.get(action, "minRuntime")
    where = f"of queue {queue}" if queue is not None else "the scheduler's default"
    return f"job {victim.key} is within its minimum runtime ({key} {_duration(runtime)} {where})"


def is_protected(
    session: Session, action: str, preemptor: PodGroupInfo, victim: PodGroupInfo
) -> bool:
    if victim.last_start is None:
        return False
    runtime = min_runtime(session.snapshot.queues, action, preemptor, victim, session.config)
    return _within(session.snapshot.now, victim.last_start, runtime)


def _within(now: float, last_start: float, runtime: float) -> bool:
    """A victim that last started at ``last_start`` is still within ``runtime`` at ``now``."""
    return now < last_start + runtime


_ELASTIC = "minruntime.elastic"


def _is_elastic(job: PodGroupInfo) -> bool:
    """Some pod set runs more pods than its own minimum: a pod could go from it.

    KAI's notion for minimum runtime: only pods above a pod set's ``minMember`` are
    extras. A subgroup that ``minSubGroup`` leaves optional is not: a protected job
    keeps all of its subgroups (docs/semantics.md §5.7).
    """
    return any(pod_set.active_used() > pod_set.min_available for pod_set in job.pod_sets)


def _keeps_minimums(job: PodGroupInfo, gone: set[int]) -> bool:
    """Every pod set losing pods in ``gone`` keeps at least its own minimum running."""
    for pod_set in job.pod_sets:
        kept = lost = 0
        for pod in pod_set.pods:
            if pod.status in ACTIVE_USED:
                if id(pod) in gone:
                    lost += 1
                else:
                    kept += 1
        if lost and kept < pod_set.min_available:
            return False
    return True


class MinRuntimePlugin:
    """Registers the victim filter and the elastic-victim scenario check."""

    name = "minruntime"

    def __init__(self, config: SchedulerConfig) -> None:
        self.config = config

    def on_session_open(self, session: Session) -> None:
        # (action, preemptor's queue, victim's queue) -> the runtime: what min_runtime reads
        runtimes: dict[tuple[str, str, str], float] = {}
        tree, now = session.snapshot.queues, session.snapshot.now

        def victim_filter(action: str, preemptor: PodGroupInfo, victim: PodGroupInfo) -> bool:
            # Cheapest test first: a job that never started is never protected, and
            # counting an elastic victim's pods is the expensive part (kept per victim
            # until one of its pods changes status: asked for every preemptor).
            if action == "consolidation" or victim.last_start is None:
                return True
            if session.job_memo(_ELASTIC, victim, lambda: _is_elastic(victim)):
                return True
            key = (action, preemptor.queue, victim.queue)
            runtime = runtimes.get(key)
            if runtime is None:
                runtime = runtimes[key] = min_runtime(
                    tree, action, preemptor, victim, session.config
                )
            return not _within(now, victim.last_start, runtime)

        def validator(scenario: ep.Scenario) -> str | None:
            if scenario.action == "consolidation":
                return None
            # An elastic victim appears once per chunk (each surplus pod, then the core):
            # its minimum is checked against everything the scenario takes from it.
            taken: dict[str, tuple[PodGroupInfo, set[int]]] = {}
            for victim, evicted in scenario.victims:
                entry = taken.setdefault(victim.key, (victim, set()))
                entry[1].update(id(pod) for pod in evicted)
            for victim, gone in taken.values():
                if not is_protected(session, scenario.action, scenario.preemptor, victim):
                    continue
                if not _keeps_minimums(victim, gone):
                    return f"job {victim.key} is within its minimum runtime"

            return None

        session.add_victim_filter(
            victim_filter,
            lambda action, preemptor, victim: protection(session, action, preemptor, victim),
        )
        session.add_scenario_validator(validator)
