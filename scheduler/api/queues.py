"""Queues and the queue tree, with quota, limit and weight in engine units.

Why: the fair-share division, the queue order and the capacity checks all
walk the same tree; resolving parents, children and the leaf-to-root path once
per snapshot keeps those walks cheap. Amounts are per queue resource
(``resources.QUEUE_RESOURCES``: GPU in thousandths, CPU in millicores, memory
in bytes); ``UNLIMITED`` (-1) keeps KAI's meaning.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

UNLIMITED = -1.0
QueueVector = npt.NDArray[np.float64]


@dataclass(slots=True)
class QueueInfo:
    """One queue: its settings (fixed for the cycle) and its children."""

    name: str
    parent: str | None
    priority: int
    creation: float
    uid: str
    deserved: QueueVector
    limit: QueueVector
    over_quota_weight: QueueVector
    children: list[str] = field(default_factory=list)
    display_name: str = ""
    preempt_min_runtime: float | None = None
    reclaim_min_runtime: float | None = None
    # the kai.scheduler/admission-gate annotation: its new pods wait for room (§5.11)
    admission_gate: bool = False

    @property
    def is_leaf(self) -> bool:
        return not self.children


@dataclass(slots=True)
class QueueTree:
    """The queues that survived orphan removal, plus what was dropped and why."""

    queues: dict[str, QueueInfo]
    roots: list[str]
    dropped: dict[str, str]  # queue name -> reason (orphan, cycle)

    def lca_children(self, a: str, b: str) -> tuple[str, str] | None:
        """The first queues that differ on the paths from the top to ``a`` and ``b``.

        They are the children of the lowest common ancestor (or two top-level
        queues); None when one queue is an ancestor of the other.
        """
        path_a = list(reversed(self.path_to_root(a)))
        path_b = list(reversed(self.path_to_root(b)))
        depth = 0
        while depth < min(len(path_a), len(path_b)) and path_a[depth] == path_b[depth]:
            depth += 1
        if depth >= len(path_a) or depth >= len(path_b):
            return None
        return path_a[depth], path_b[depth]

    def path_to_root(self, name: str) -> list[str]:
        """The queue itself first, then its ancestors up to the top level."""
        path = []
        current: str | None = name
        while current is not None:
            path.append(current)
            current = self.queues[current].parent
        return path
