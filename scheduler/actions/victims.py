"""Victim candidates and the pods taken from each, in KAI's order (docs/semantics.md §5.2).

Why: reclaim, preempt and consolidation differ in who may be a victim, not in
how victims are taken. KAI's victim queue: the session's ranking picks the
leaf queue (most over-served first, level by level), the leaf gives its
worst-placed job (reverse job order: lowest priority, above-minimum elastic
jobs before gangs at their minimum, newest first), and that job gives one
chunk: a surplus pod while it has one, else its core gang whole. What the job
still runs goes back into its leaf, ranked again on those pods: an elastic
job that has come down to its minimum waits behind the other jobs' surplus.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

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
    return reverse_job_order_by(jobs, session.job_keys(jobs))


def reverse_job_order_by(
    jobs: Sequence[PodGroupInfo], keys: Sequence[tuple[Any, ...]]
) -> list[PodGroupInfo]:
    """:func:`reverse_job_order` with each job's order key given (``keys[i]`` is ``jobs[i]``'s)."""
    # the indexes sorted by a C-level key: stable like sorting the jobs themselves
    return [jobs[i] for i in sorted(range(len(keys)), key=keys.__getitem__, reverse=True)]


class _Last:
    """A job order key read backwards: the job allocate would try last pops first."""

    __slots__ = ("key",)

    def __init__(self, key: tuple[Any, ...]) -> None:
        self.key = key

    def __lt__(self, other: _Last) -> bool:
        return other.key < self.key


_Entry = tuple[_Last, int, PodGroupInfo, dict[str, list[PodInfo]], Iterator[list[PodInfo]]]


class _Leaf:
    """One leaf queue's victims: its candidates in reverse job order, merged with the
    jobs that gave a chunk and still run pods (queued again under their new key)."""

    def __init__(self, session: Session, jobs: Iterable[PodGroupInfo]) -> None:
        self.session = session
        self.fresh = iter(jobs)
        self.seq = itertools.count()
        self.again: list[_Entry] = []
        self.next_fresh: _Entry | None = None
        self._advance()

    def _advance(self) -> None:
        job = next(self.fresh, None)
        if job is None:
            self.next_fresh = None
            return
        remaining = _active_in_task_order(self.session, job)
        chunks = job.eviction_chunks(remaining)
        self.next_fresh = (_Last(self.session.job_key(job)), next(self.seq), job, remaining, chunks)

    def _head(self) -> _Entry | None:
        fresh = self.next_fresh
        if not self.again:
            return fresh
        if fresh is None or self.again[0][:2] < fresh[:2]:
            return self.again[0]
        return fresh

    def head(self) -> tuple[PodGroupInfo, list[PodInfo]] | None:
        """The next victim job and the pods it still runs."""
        entry = self._head()
        if entry is None:
            return None
        return entry[2], [pod for pods in entry[3].values() for pod in pods]

    def pop(self) -> tuple[PodGroupInfo, list[PodInfo]] | None:
        """The next chunk of the next victim job (None if that job has nothing to give)."""
        entry = self._head()
        assert entry is not None
        if entry is self.next_fresh:
            self._advance()
        else:
            heapq.heappop(self.again)
        _, order, job, remaining, chunks = entry
        chunk = next(chunks, None)
        if chunk is None:
            return None
        if any(remaining.values()):
            key = _Last(self.session.partial_job_key(job, remaining))
            heapq.heappush(self.again, (key, order, job, remaining, chunks))
        return job, chunk


def victim_chunks(
    session: Session, by_queue: Mapping[str, Iterable[PodGroupInfo]]
) -> Iterator[tuple[PodGroupInfo, list[PodInfo]]]:
    """KAI's victim queue over the candidates of each leaf queue: chunk after chunk.

    Each leaf's candidates come in reverse job order (:func:`reverse_job_order`,
    read lazily). The session's victim ranker chooses the leaf (told every chunk
    taken); the leaf's last job in job order gives its next chunk
    (:meth:`PodGroupInfo.eviction_chunks`); the pods it still runs are queued
    again under the job order key they now give (:meth:`Session.partial_job_key`).
    """
    leaves = {name: _Leaf(session, jobs) for name, jobs in by_queue.items()}
    leaves = {name: leaf for name, leaf in leaves.items() if leaf.head() is not None}
    ranker = session.victim_ranker() if len(leaves) > 1 else None
    while leaves:
        if ranker is None:
            name = next(iter(leaves))
        else:
            heads = {n: leaf.head() for n, leaf in leaves.items()}
            name = ranker.pick({n: h for n, h in heads.items() if h is not None})
        leaf = leaves[name]
        taken = leaf.pop()
        if leaf.head() is None:
            del leaves[name]
        if taken is None:
            continue
        if ranker is not None:
            ranker.took(name, taken[1])
        yield taken


def _active_in_task_order(session: Session, job: PodGroupInfo) -> dict[str, list[PodInfo]]:
    """Each pod set's active-allocated pods in task order (the one to go first last)."""
    return {
        pod_set.name: [
            p for p in session.pods_in_task_order(pod_set) if p.status in ACTIVE_ALLOCATED
        ]
        for pod_set in job.pod_sets
    }
