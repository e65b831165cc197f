"""Scheduling signatures: skip a job no easier to place than one that already failed.

Why: in a cycle, many pending jobs are alike (replicas of one workload); once
one has failed to find victims, a job that needs at least as much, under the
same constraints, fails the same way and its search is wasted time. KAI v0.17
keeps, per signature (the pods' node selector, affinity, tolerations,
priority, spread and storage, without resources), the smallest job that
failed, and tries another job only if it is "easier" (MinimalJobRepresentatives).
Its "easier" compares the tasks' requests sorted, by the first task that
differs; podmuster skips a job only when it provably needs at least what the
failed one needed: as many tasks or more, each of the failed job's tasks
matched to one of its own that requests as much or more of every resource
(docs/semantics.md §5.2: KAI's rule also skips jobs that could start).
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import PodInfo

Signature = tuple[object, ...]
_Need = tuple[tuple[int, ...], str]  # a task's request and what must match exactly


def signature(job: PodGroupInfo, tasks: list[PodInfo]) -> Signature:
    """What must be equal for two jobs to compete for the same victims on the same nodes.

    The tasks' node constraints, inter-pod rules, storage and GPU kind, and the
    group's priority, preemptibility and topology constraint; not the requests.
    """
    per_task = sorted(
        {
            repr((t.constraint_key, t.pod_affinity, t.spread, t.claims, t.resource_claims))
            for t in tasks
        }
    )
    return (job.priority, job.preemptible, repr(job.topology_tree), *per_task)


def exact(job: PodGroupInfo, tasks: list[PodInfo]) -> tuple[object, ...]:
    """The signature and the requests: two jobs that place exactly alike."""
    return (*signature(job, tasks), *_needs(tasks))


def _needs(tasks: list[PodInfo]) -> list[_Need]:
    """Each task's request (largest first) with what cannot be compared by size."""
    needs = [(tuple(int(v) for v in t.request), repr((t.gpu_share, t.numa))) for t in tasks]
    return sorted(needs, reverse=True)


def _at_least(need: _Need, other: _Need) -> bool:
    return need[1] == other[1] and all(a >= b for a, b in zip(need[0], other[0], strict=True))


def _covers(harder: list[_Need], easier: list[_Need]) -> bool:
    """Every task of ``easier`` paired with its own task of ``harder`` asking as much or more.

    Greedy, largest first, each to the smallest task that suffices: exact for one
    resource; otherwise it may miss a pairing that exists (then the job is
    tried, which costs only time), never claims one that does not.
    """
    if len(harder) < len(easier):
        return False
    free = list(harder)
    for need in easier:
        for i in range(len(free) - 1, -1, -1):  # the smallest that suffices
            if _at_least(free[i], need):
                del free[i]
                break
        else:
            return False
    return True


@dataclass(slots=True)
class _Failed:
    needs: list[_Need]
    reason: str


class FailedJobs:
    """Per signature, the smallest job that failed in this action and why."""

    def __init__(self) -> None:
        self._smallest: dict[tuple[object, ...], _Failed] = {}

    def skip_reason(self, key: tuple[object, ...], tasks: list[PodInfo]) -> str | None:
        """Why to skip a job with these tasks: a no harder job of its signature failed."""
        failed = self._smallest.get(key)
        if failed is None or not _covers(_needs(tasks), failed.needs):
            return None
        return failed.reason

    def record(self, key: tuple[object, ...], tasks: list[PodInfo], reason: str) -> None:
        """A job failed: it becomes its signature's representative if it is no larger."""
        needs = _needs(tasks)
        failed = self._smallest.get(key)
        if failed is None or _covers(failed.needs, needs):
            self._smallest[key] = _Failed(needs, reason)
