"""Gang shapes: when a failed allocation answers for another pending gang in the same cycle.

Why: in a contended cluster allocate tries every waiting gang every cycle, and
most of them look alike (the same per-pod requests and node constraints in the
same queue). Between two commits nothing in the session changes: a failed
try is discarded whole. So a gang whose shape equals one that failed since the
last commit would meet exactly the same nodes, queue accounting and
problems, and fails with the same reason; allocate reuses that answer instead
of searching again (KAI's disruptive actions skip gangs by scheduling
signature in the same spirit; here the shape is compared exactly, so the
decision and the reason are the ones the search would give).

A shape is only defined where placement depends on nothing but the shape:
no plugin constrains placements dynamically in this session (inter-pod
affinity or topology spread anywhere in the cluster, since another pod's term
could match this gang's labels; volumes; DRA claims; NUMA alignment), no
nominated node, no topology constraint and no subgroup tree (one task choice).
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import PodInfo
from scheduler.framework.session import Session

Shape = tuple[object, ...]


def shapes_apply(session: Session) -> bool:
    """No plugin constrains placements dynamically (they register only when some pod
    in the cluster needs it: affinity or spread terms, volumes, DRA claims, NUMA)."""
    return not session.dynamic_constraints


def allocation_shape(job: PodGroupInfo, tasks: Sequence[PodInfo]) -> Shape | None:
    """What decides where ``tasks`` of ``job`` can go, or None when more than that does."""
    if job.topology_tree is not None or job.shape is not None:
        return None
    parts: list[object] = [job.queue, job.preemptible]
    for task in tasks:
        if task.nominated_node or task.claims or task.resource_claims or task.numa is not None:
            return None
        parts.append(
            (task.constraint_key, task.request.tobytes(), tuple(task.quota), task.gpu_share)
        )
    return tuple(parts)


class Failure:
    """Why a gang of some shape failed, to be said for each same-shaped gang after it.

    Placement fails at the same position in every gang of a shape; a reason naming the
    pod there (``pod <namespace>/<name>: ...``) names each gang's own pod instead. The
    position is found once, when the failure is recorded: a backlog refuses hundreds of
    same-shaped gangs with it every cycle.
    """

    __slots__ = ("_at", "_named", "_size", "reason")

    def __init__(self, reason: str, tasks: Sequence[PodInfo]) -> None:
        """``tasks``: the failed gang's, in the order placement met them."""
        self.reason = reason
        self._size = len(tasks)
        self._at: int | None = None
        self._named = ""
        for at, task in enumerate(tasks):
            named = f"pod {task.key}: "
            if named in reason:
                self._at, self._named = at, named
                break

    def said_for(self, tasks: Sequence[PodInfo]) -> str:
        """The reason as the search would give it for same-shaped ``tasks``."""
        if len(tasks) != self._size:
            raise ValueError(f"a gang of {len(tasks)} tasks is not of a {self._size}-task shape")
        if self._at is None:
            return self.reason
        return self.reason.replace(self._named, f"pod {tasks[self._at].key}: ", 1)
