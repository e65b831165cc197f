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

    A surplus pod is taken from the pod set furthest above its minimum, last
    in task order; once no pod set is above its minimum, all remaining active
    pods go together (the gang cannot run partly).
    """
    remaining = {
        id(pod_set): [
            p for p in session.pods_in_task_order(pod_set) if p.status in ACTIVE_ALLOCATED
        ]
        for pod_set in job.pod_sets
    }
    while True:
        surplus = [
            (len(remaining[id(ps)]) - ps.min_available, ps.name, ps)
            for ps in job.pod_sets
            if len(remaining[id(ps)]) > ps.min_available
        ]
        if surplus:
            _, _, pod_set = max(surplus, key=lambda item: (item[0], item[1]))
            yield job, [remaining[id(pod_set)].pop()]
            continue
        rest = [pod for ps in job.pod_sets for pod in remaining[id(ps)]]
        if rest:
            yield job, rest
        return
