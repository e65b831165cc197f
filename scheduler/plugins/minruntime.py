"""Minimum runtime: a job that started recently is not disrupted yet (docs/semantics.md §5.7).

Why: without it a freshly started job can be preempted or reclaimed in the
next cycle and nothing makes progress. A victim is protected while
``now < last start + min runtime``; the runtime comes from the queues
(``preemptMinRuntime`` / ``reclaimMinRuntime``) or the scheduler defaults. For
preempt the walk starts at the victim's leaf queue; for reclaim (KAI's default
``lca`` method) it starts one level below the lowest common ancestor of the
two queues, or is the victim's top-level queue when they share none. A
protected gang is no victim at all; a protected elastic job may still lose
pods above its minimum (checked on the scenario).
"""

from __future__ import annotations

from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import ACTIVE_USED
from scheduler.api.queues import QueueTree
from scheduler.config import SchedulerConfig
from scheduler.framework import extension_points as ep
from scheduler.framework.session import Session


def _walk(tree: QueueTree, start: str, field: str) -> float | None:
    current: str | None = start
    while current is not None:
        value = getattr(tree.queues[current], field)
        if value is not None:
            return float(value)
        current = tree.queues[current].parent
    return None


def min_runtime(
    tree: QueueTree,
    action: str,
    preemptor: PodGroupInfo,
    victim: PodGroupInfo,
    config: SchedulerConfig,
) -> float:
    """The minimum runtime protecting ``victim`` against ``preemptor`` for ``action``."""
    if victim.queue not in tree.queues:
        return 0.0
    if action == "preempt":
        found = _walk(tree, victim.queue, "preempt_min_runtime")
        return config.default_preempt_min_runtime_s if found is None else found
    top_level = tree.path_to_root(victim.queue)[-1]
    pair = (
        tree.lca_children(preemptor.queue, victim.queue) if preemptor.queue in tree.queues else None
    )
    if preemptor.queue not in tree.queues or (pair is not None and pair[1] == top_level):
        # different top-level queues: only the victim's top-level queue counts, no walk
        top = tree.queues[top_level].reclaim_min_runtime
        return config.default_reclaim_min_runtime_s if top is None else float(top)
    start = pair[1] if pair is not None else victim.queue
    found = _walk(tree, start, "reclaim_min_runtime")
    return config.default_reclaim_min_runtime_s if found is None else found


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
    """Running above its requirement: some pod or optional subgroup could go."""
    return job.has_surplus({pod_set.name: pod_set.active_used() for pod_set in job.pod_sets})


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
                kept = {
                    pod_set.name: sum(
                        1
                        for pod in pod_set.pods
                        if pod.status in ACTIVE_USED and id(pod) not in gone
                    )
                    for pod_set in victim.pod_sets
                }
                if not victim.counts_meet(kept):
                    return f"job {victim.key} is within its minimum runtime"

            return None

        session.add_victim_filter(victim_filter)
        session.add_scenario_validator(validator)
