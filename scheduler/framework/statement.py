"""A transaction over the session: allocate, pipeline, evict; checkpoint, rollback, commit.

Why: every tentative placement (a gang's tasks, a victim scenario) must be
undone exactly when it fails. The Statement logs each operation with the
amounts it moved, so rollback restores node and queue accounting exactly and
nothing is ever deep-copied. Only ``commit`` turns operations into decisions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from scheduler.api.gpu_sharing import ShareUndo
from scheduler.api.pods import ACTIVE_USED, PodInfo, PodStatus
from scheduler.api.resources import Vector
from scheduler.framework import gang, gpu_placement

if TYPE_CHECKING:
    from scheduler.framework.session import Session


@dataclass(slots=True)
class _Op:
    kind: str  # "allocate" | "pipeline" | "evict"
    pod: PodInfo
    prev_status: PodStatus
    prev_node: int
    from_idle: Vector | None
    from_releasing: Vector | None
    action: str = ""
    for_job: str | None = None
    shared: ShareUndo | None = None  # what a fractional-GPU pod moved in shared groups


class Statement:
    """One job's (or one scenario's) tentative changes."""

    __slots__ = ("_ops", "_session")

    def __init__(self, session: Session) -> None:
        self._session = session
        self._ops: list[_Op] = []

    def allocate(self, pod: PodInfo, node: int) -> None:
        """Place ``pod`` on ``node``'s idle resources; it binds when committed."""
        nodes = self._session.snapshot.nodes
        shared = (
            gpu_placement.join(self._session, pod, node, pipelined=False)
            if pod.gpu_share is not None
            else None
        )
        take = pod.request
        nodes.idle[:, node] -= take
        nodes.free[:, node] -= take
        self._session.note_node_change(node)
        self._ops.append(_Op("allocate", pod, pod.status, pod.node, take, None, shared=shared))
        self._session.open_ops += 1
        self._set_status(pod, PodStatus.ALLOCATED)
        pod.node = node
        self._session.fire_allocate(pod)

    def pipeline(self, pod: PodInfo, node: int) -> None:
        """Reserve ``pod`` on ``node``'s releasing resources (then idle); no bind this cycle."""
        nodes = self._session.snapshot.nodes
        shared = (
            gpu_placement.join(self._session, pod, node, pipelined=True)
            if pod.gpu_share is not None
            else None
        )
        releasing = np.maximum(nodes.releasing[:, node], 0)
        from_releasing = np.minimum(pod.request, releasing)
        from_idle = pod.request - from_releasing
        nodes.releasing[:, node] -= from_releasing
        nodes.releasing_changed()
        nodes.idle[:, node] -= from_idle
        nodes.free[:, node] -= pod.request
        self._session.note_node_change(node)
        self._ops.append(
            _Op("pipeline", pod, pod.status, pod.node, from_idle, from_releasing, shared=shared)
        )
        self._session.open_ops += 1
        self._set_status(pod, PodStatus.PIPELINED)
        pod.node = node
        self._session.fire_allocate(pod)

    def evict(self, pod: PodInfo, action: str, for_job: str | None = None) -> None:
        """Mark ``pod`` Releasing: its resources become releasing on its node."""
        nodes = self._session.snapshot.nodes
        was_using = pod.status in ACTIVE_USED and pod.status != PodStatus.RELEASING
        if was_using and pod.node >= 0:
            nodes.releasing[:, pod.node] += pod.request
            nodes.free[:, pod.node] += pod.request
            nodes.releasing_changed()
            self._session.note_node_change(pod.node)
        op = _Op("evict", pod, pod.status, pod.node, None, None, action, for_job)
        if was_using and pod.node >= 0 and pod.gpu_share is not None:
            op.shared = gpu_placement.release(self._session, pod)
        self._ops.append(op)
        self._session.open_ops += 1
        self._set_status(pod, PodStatus.RELEASING)
        if was_using:
            self._session.fire_deallocate(pod)

    def _set_status(self, pod: PodInfo, status: PodStatus) -> None:
        pod.status = status
        self._session.status_changed(pod)

    def checkpoint(self) -> int:
        return len(self._ops)

    def _undo(self, op: _Op) -> None:
        nodes = self._session.snapshot.nodes
        pod = op.pod
        if op.kind == "evict":
            was_using = op.prev_status in ACTIVE_USED and op.prev_status != PodStatus.RELEASING
            if was_using and op.prev_node >= 0:
                nodes.releasing[:, op.prev_node] -= pod.request
                nodes.free[:, op.prev_node] -= pod.request
                nodes.releasing_changed()
                self._session.note_node_change(op.prev_node)
            if op.shared is not None:
                gpu_placement.undo(self._session, pod, op.shared)
            self._set_status(pod, op.prev_status)
            pod.node = op.prev_node
            if was_using:
                self._session.fire_allocate(pod)
            return
        self._session.fire_deallocate(pod)
        if op.shared is not None:
            gpu_placement.undo(self._session, pod, op.shared)
        self._session.note_node_change(pod.node)
        if op.from_idle is not None:
            nodes.idle[:, pod.node] += op.from_idle
            nodes.free[:, pod.node] += op.from_idle
        if op.from_releasing is not None:
            nodes.releasing[:, pod.node] += op.from_releasing
            nodes.free[:, pod.node] += op.from_releasing
            nodes.releasing_changed()
        self._set_status(pod, op.prev_status)
        pod.node = op.prev_node

    def rollback(self, token: int) -> None:
        """Undo every operation after ``token``, newest first; accounting is restored exactly."""
        while len(self._ops) > token:
            self._undo(self._ops.pop())
            self._session.open_ops -= 1

    def discard(self) -> None:
        self.rollback(0)

    def _pipeline_gangs_below_minimum(self) -> None:
        """Turn every allocation of a job that would start partly pipelined into a pipelined one.

        A job whose pod set holds a pipelined pod with fewer other active
        pods than its minimum (``gang.needs_pipelining``) binds nothing: all
        its allocations in this statement become pipelined reservations on
        the same nodes. Pods beyond a satisfied minimum (elastic extras) may
        wait alone, as in KAI. Run at every commit, so no action can bind
        part of a gang.
        """
        jobs = self._session.snapshot.jobs
        allocated_jobs = {op.pod.job for op in self._ops if op.kind == "allocate"}
        for key in sorted(k for k in allocated_jobs if k is not None):
            if gang.needs_pipelining(jobs[key]):
                self._convert_to_pipelined(key)

    def _convert_to_pipelined(self, job_key: str) -> None:
        allocations = [op for op in self._ops if op.kind == "allocate" and op.pod.job == job_key]
        targets = [(op.pod, op.pod.node) for op in allocations]
        for op in reversed(allocations):
            self._undo(op)
            self._ops.remove(op)
            self._session.open_ops -= 1
        for pod, node in targets:
            self.pipeline(pod, node)

    def kept_victims(self) -> set[int]:
        """Pods evicted here and then re-placed where they run: they simply stay.

        A fractional pod stays only if it is back on its own shared devices too.
        """
        evicted_from = {
            id(op.pod): (op.prev_node, op.shared.prev_groups if op.shared else ())
            for op in self._ops
            if op.kind == "evict"
        }
        return {
            id(op.pod)
            for op in self._ops
            if op.kind == "pipeline"
            and evicted_from.get(id(op.pod), (-2, ())) == (op.pod.node, op.pod.gpu_groups)
        }

    def commit(self) -> None:
        """Hand the surviving operations to the session as decisions.

        A victim evicted and re-placed on the node it runs on (a simulation found
        it can stay) is neither evicted nor pipelined: it keeps running. A gang
        that would start partly pipelined is pipelined whole first.
        """
        self._pipeline_gangs_below_minimum()
        kept = self.kept_victims()
        restore = {
            id(op.pod): op.prev_status
            for op in self._ops
            if op.kind == "evict" and id(op.pod) in kept
        }
        for op in self._ops:
            if id(op.pod) in kept:
                if op.kind == "pipeline":
                    self._set_status(op.pod, restore[id(op.pod)])
                    if op.pod.gpu_share is not None:
                        gpu_placement.settle_kept(self._session, op.pod)
                continue
            if op.kind == "allocate":
                self._set_status(op.pod, PodStatus.BINDING)
                self._session.decisions.binds.append((op.pod, op.pod.node))
            elif op.kind == "pipeline":
                self._session.decisions.pipelined.append((op.pod, op.pod.node))
            else:
                decisions = self._session.decisions
                decisions.evictions.append((op.pod, op.action, op.for_job))
                if id(op.pod) not in decisions.evicted_from:
                    groups = op.shared.prev_groups if op.shared is not None else ()
                    decisions.evicted_from[id(op.pod)] = (op.prev_status, op.prev_node, groups)
        self._session.open_ops -= len(self._ops)
        self._session.commits += 1
        self._ops = []

    @property
    def operations(self) -> int:
        return len(self._ops)

    def pipelined_pods(self) -> list[PodInfo]:
        return [op.pod for op in self._ops if op.kind == "pipeline"]
