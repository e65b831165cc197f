"""Nodes as one table of arrays: allocatable, idle and releasing per resource column.

Why: placement asks "which nodes fit this request, and how full is each" for
every task; a row per node and a column per resource answers that with one
vectorised expression over all nodes. Node order is name order, so "first
best node" is "lowest name", KAI's tie-break, for free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.api.resources import GPU


@dataclass(frozen=True, slots=True)
class NodeMeta:
    """What predicates read about one node besides its resources."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, Any], ...]
    unschedulable: bool
    ready: bool


class NodeTable:
    """All nodes of a snapshot; ``idle`` and ``releasing`` change during a cycle."""

    __slots__ = ("allocatable", "idle", "index", "meta", "names", "releasing", "schedulable")

    def __init__(self, meta: Sequence[NodeMeta], allocatable: npt.NDArray[np.int64]) -> None:
        self.meta = list(meta)
        self.names = [m.name for m in self.meta]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.allocatable = allocatable
        self.idle = allocatable.copy()
        self.releasing = np.zeros_like(allocatable)
        self.schedulable = np.array(
            [m.ready and not m.unschedulable for m in self.meta], dtype=bool
        )

    def __len__(self) -> int:
        return len(self.names)

    def widen(self, width: int) -> None:
        """Add zero columns for extended resources first seen on pods."""
        extra = width - self.allocatable.shape[1]
        if extra <= 0:
            return
        pad = np.zeros((len(self.names), extra), dtype=np.int64)
        self.allocatable = np.hstack([self.allocatable, pad])
        self.idle = np.hstack([self.idle, pad])
        self.releasing = np.hstack([self.releasing, pad])

    def has_gpus(self) -> npt.NDArray[np.bool_]:
        return self.allocatable[:, GPU] > 0
