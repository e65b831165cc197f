"""Victim candidates and the pods taken from each, in KAI's order (docs/semantics.md §5.2).

Why: reclaim, preempt and consolidation differ in who may be a victim, not in
how victims are taken: the worst-placed job first (reverse job order: lowest
priority, above-minimum elastic jobs before gangs at their minimum, newest
first), and from an elastic job one surplus pod at a time before its core gang,
which goes whole.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import ACTIVE_ALLOCATED, ALIVE, PodInfo
from scheduler.framework.session import Session


def is_disruptable(job: PodGroupInfo) -> bool:
    """Preemptible, with at least one active-allocated pod and one alive pod."""
    if not job.preemptible:
        return False
    active = alive = False
    for pod_set in job.pod_sets:  # one pass, no list: called per candidate and preemptor
        for pod in pod_set.pods:
            status = pod.status
            active = active or status in ACTIVE_ALLOCATED
            alive = alive or status in ALIVE
            if active and alive:
                return True
    return False


def reverse_job_order(session: Session, jobs: Sequence[PodGroupInfo]) -> list[PodGroupInfo]:
    """Victim order within a queue: the job allocate would try last goes first."""
    return sorted(jobs, key=session.job_key, reverse=True)


def iter_chunks(
    session: Session, job: PodGroupInfo
) -> Iterator[tuple[PodGroupInfo, list[PodInfo]]]:
    """The pods to evict from ``job``, chunk by chunk: surplus pods one at a time, then the rest.

    The chunks follow the group's requirement (:meth:`PodGroupInfo.eviction_chunks`):
    a pod goes alone only if the group still meets it without that pod, last in
    task order first; an optional subgroup goes whole; the core goes together.
    """
    remaining = {
        pod_set.name: [
            p for p in session.pods_in_task_order(pod_set) if p.status in ACTIVE_ALLOCATED
        ]
        for pod_set in job.pod_sets
    }
    for chunk in job.eviction_chunks(remaining):
        yield job, chunk
