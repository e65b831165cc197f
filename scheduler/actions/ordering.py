"""Jobs popped in hierarchical queue order, fairness re-evaluated after every pop.

Why: KAI's fairness is the order in which jobs are tried. At each level of the
queue tree the session's queue order picks the child whose best pending job
should go next; within a leaf the job order (a sort key) decides. Leaves are
heaps (built in one step), so a pop costs one comparison per sibling on the path
plus a heap pop; in a flat tree (no departments) only the leaves' heads are
compared, and a whole queue is drained from sorted leaves, merged by the session's
queue sort keys where it has them (:class:`~scheduler.framework.extension_points.QueueKeys`).
The disruptive actions pop every job before trying any; while the session's
committed state stays the same that order is the same too, so it is computed
once, or taken from allocate when allocate committed nothing
(:func:`popped_order`).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Any

from scheduler.actions.pending import eligible_jobs, leaf_entries
from scheduler.api.podgroups import PodGroupInfo
from scheduler.framework.extension_points import QueueKeys
from scheduler.framework.session import Session


class JobQueue:
    """Pending jobs by leaf queue; ``pop`` returns the job that should be tried next."""

    def __init__(
        self, session: Session, jobs: Iterable[PodGroupInfo], depth: int | None = None
    ) -> None:
        self._session = session
        self._tree = session.snapshot.queues
        self._heaps: dict[str, list[tuple[Any, int, PodGroupInfo]]] = {}
        self._counts: dict[str, int] = {}
        self._seq = itertools.count()
        self._depth = depth
        self._cache: dict[str, tuple[str | None, PodGroupInfo | None]] = {}
        self._paths: dict[str, list[str]] = {}  # queue -> its path to the root, asked per pop
        # every queue a top-level leaf (no departments): a pop compares the heaps' heads alone
        self._flat = all(self._tree.queues[root].is_leaf for root in self._tree.roots)
        # Every leaf's heap is built in one step: the same entries, hence the same pops,
        # as pushing the jobs one by one (keys are unique by their sequence number).
        job_key, seq = session.job_key, self._seq
        grouped: dict[str, list[tuple[Any, int, PodGroupInfo]]] = {}
        for job in jobs:
            grouped.setdefault(job.queue, []).append((job_key(job), next(seq), job))
        for queue, entries in grouped.items():
            if depth is not None and len(entries) > depth:
                entries = heapq.nsmallest(depth, entries)  # sorted: a heap already
            else:
                heapq.heapify(entries)
            self._heaps[queue] = entries
            for name in self._path(queue):
                self._counts[name] = self._counts.get(name, 0) + len(entries)

    @classmethod
    def pending(cls, session: Session, depth: int | None = None) -> JobQueue:
        """A queue of every eligible pending job (:func:`pending.eligible_jobs`): with memos
        on, from the session's sorted leaves (:func:`pending.leaf_entries`), which give the
        same entries, hence the same pops, as keying and ranking the jobs afresh."""
        if not session.memoise:
            return cls(session, eligible_jobs(session), depth)
        queue = cls(session, (), depth)
        leaves, next_rank = leaf_entries(session)
        queue._seq = itertools.count(next_rank)
        for leaf, entries in leaves.items():
            if depth is not None and len(entries) > depth:
                del entries[depth:]  # sorted: the nsmallest of the general path, a heap already
            queue._heaps[leaf] = entries
            for name in queue._path(leaf):
                queue._counts[name] = queue._counts.get(name, 0) + len(entries)
        return queue

    def _path(self, queue: str) -> list[str]:
        path = self._paths.get(queue)
        if path is None:
            path = self._paths[queue] = self._tree.path_to_root(queue)
        return path

    def push(self, job: PodGroupInfo) -> None:
        heap = self._heaps.setdefault(job.queue, [])
        heapq.heappush(heap, (self._session.job_key(job), next(self._seq), job))
        if self._depth is not None and len(heap) > self._depth:
            heap.remove(max(heap))
            heapq.heapify(heap)
            return
        for name in self._path(job.queue):
            self._counts[name] = self._counts.get(name, 0) + 1
            self._cache.pop(name, None)

    def __bool__(self) -> bool:
        return any(self._counts.get(root, 0) for root in self._tree.roots)

    def _best_child(self, candidates: list[str]) -> str:
        if len(candidates) == 1:
            return candidates[0]
        return self._session.best_queue([(name, self._best_job(name)) for name in candidates])

    def _best_job(self, queue: str) -> PodGroupInfo | None:
        """The job the subtree would give next; cached until something on its path changes."""
        if queue in self._cache:
            return self._cache[queue][1]
        info = self._tree.queues[queue]
        best: PodGroupInfo | None
        child: str | None = None
        if info.is_leaf:
            heap = self._heaps.get(queue)
            best = heap[0][2] if heap else None
        else:
            children = [c for c in info.children if self._counts.get(c, 0)]
            child = self._best_child(children) if children else None
            best = self._best_job(child) if child is not None else None
        self._cache[queue] = (child, best)
        return best

    def pop(self) -> PodGroupInfo | None:
        """The next job by queue order at every level, then job order in the leaf.

        Only the queues on the popped job's path are re-compared next time: an
        allocation changes the accounting of that path alone.
        """
        if self._flat:
            return self._pop_flat()
        candidates = [root for root in self._tree.roots if self._counts.get(root, 0)]
        if not candidates:
            return None
        queue = self._best_child(candidates)
        while not self._tree.queues[queue].is_leaf:
            self._best_job(queue)
            child = self._cache[queue][0]
            assert child is not None
            queue = child
        _, _, job = heapq.heappop(self._heaps[queue])
        for name in self._path(queue):
            self._counts[name] -= 1
            self._cache.pop(name, None)
        return job

    def _pop_flat(self) -> PodGroupInfo | None:
        """:meth:`pop` when every queue is a top-level leaf: the same comparison of the
        non-empty leaves' heads, without the per-level bookkeeping."""
        heaps = self._heaps
        heads: list[tuple[str, PodGroupInfo | None]] = [
            (root, heap[0][2]) for root in self._tree.roots if (heap := heaps.get(root))
        ]
        if not heads:
            return None
        queue = heads[0][0] if len(heads) == 1 else self._session.best_queue(heads)
        _, _, job = heapq.heappop(heaps[queue])
        self._counts[queue] -= 1
        return job

    def remaining(self) -> list[PodGroupInfo]:
        """The jobs not popped yet, in no particular order (the queue is left as it is)."""
        return [entry[2] for heap in self._heaps.values() for entry in heap]

    def drain(self) -> list[PodGroupInfo]:
        """Every job, in the order repeated :meth:`pop` calls give them (nothing pushed or
        committed in between). In a flat tree each leaf's order is sorted once and only
        the heads are compared per job."""
        if not self._flat:
            popped = []
            while (job := self.pop()) is not None:
                popped.append(job)
            return popped
        streams = {
            queue: [entry[2] for entry in sorted(heap)] for queue, heap in self._heaps.items()
        }
        self._heaps = {}
        self._counts = {}
        at = dict.fromkeys(streams, 0)
        live = [root for root in self._tree.roots if streams.get(root)]
        best = self._session.best_queue
        out: list[PodGroupInfo] = []
        keys = self._session.queue_keys
        if keys is not None and self._session.memoise and len(live) > 1:
            _merge(streams, at, live, keys, best, out)
        while len(live) > 1:
            queue = best([(name, streams[name][at[name]]) for name in live])
            stream, index = streams[queue], at[queue]
            out.append(stream[index])
            if index + 1 == len(stream):
                live.remove(queue)
            else:
                at[queue] = index + 1
        for name in live:
            out.extend(streams[name][at[name] :])
        return out


def _merge(
    streams: dict[str, list[PodGroupInfo]],
    at: dict[str, int],
    live: list[str],
    keys: QueueKeys,
    best: Callable[[list[tuple[str, PodGroupInfo | None]]], str],
    out: list[PodGroupInfo],
) -> None:
    """:meth:`JobQueue.drain`'s loop over a flat tree, with the leaves' heads in a heap by
    the session's queue sort keys: the head with the smallest key goes next, and the
    best-queue function is asked (with every live head, in root order, as the plain
    loop asks it) only when the next key may tie with it.

    Appends to ``out`` and advances ``at`` and ``live`` as the plain loop would; stops
    early, leaving the rest to that loop, when a key cannot be sorted (None) or one
    stream is left.
    """
    key_of, may_tie = keys.key, keys.may_tie
    rank = {name: index for index, name in enumerate(live)}
    heap: list[tuple[Any, int, str]] = []
    for name in live:
        key = key_of(name, streams[name][0])
        if key is None:
            return
        heap.append((key, rank[name], name))
    heapq.heapify(heap)
    while len(heap) > 1:
        top = heap[0]
        second = heap[1] if len(heap) == 2 or heap[1] < heap[2] else heap[2]
        if may_tie(top[0], second[0]):
            queue = best([(name, streams[name][at[name]]) for name in live])
            where = next(i for i, entry in enumerate(heap) if entry[2] == queue)
        else:
            queue, where = top[2], 0
        stream, index = streams[queue], at[queue] + 1
        out.append(stream[index - 1])
        at[queue] = index
        if index == len(stream):
            live.remove(queue)
            heap[where] = heap[-1]
            heap.pop()
            heapq.heapify(heap)
            continue
        key = key_of(queue, stream[index])
        if key is None:
            return
        if where == 0:
            heapq.heapreplace(heap, (key, rank[queue], queue))
        else:
            heap[where] = (key, rank[queue], queue)
            heapq.heapify(heap)


_ORDER = "ordering.popped"


def popped_order(session: Session, depth: int | None) -> list[PodGroupInfo]:
    """Every job :meth:`JobQueue.pending` pops, in order; reused while the session
    committed nothing new.

    Popping a whole queue changes nothing in the session, and the order depends
    only on the session's committed state (allocations, evictions:
    :meth:`Session.settled_version`) and the queue depth.
    """
    memo = session.settled_memo(_ORDER)
    if memo is not None and depth in memo:
        return list(memo[depth])
    popped = JobQueue.pending(session, depth).drain()
    if memo is not None:  # draining commits nothing: the state is the one the memo is for
        memo[depth] = popped
    return list(popped)


def remember_order(
    session: Session, depth: int | None, settled: int | None, popped: list[PodGroupInfo]
) -> None:
    """Record ``popped`` as the whole pop order at state version ``settled``: an action
    that popped every job and committed nothing on the way (then the order is the one
    a fresh queue pops) tells it here for :func:`popped_order`."""
    if settled is not None and settled == session.settled_version():
        memo = session.settled_memo(_ORDER)
        if memo is not None:
            memo[depth] = list(popped)
