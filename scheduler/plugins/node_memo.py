"""Per-node-table memos for plugin set-up work that only depends on the nodes.

Why: the cluster cache keeps one node table until a node changes, but plugins
are opened every cycle; a Python loop over every node's labels or taints at
session open costs about a millisecond at 1,500 nodes. That is nothing for a
live loop running once a second, and most of the cost of a simulation running
thousands of cycles. A memo is kept for the last table seen (and its
allocatable array, which widening replaces), per key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from scheduler.api.nodes import NodeTable

T = TypeVar("T")

_MEMOS: dict[str, tuple[NodeTable, Any, Any]] = {}


def per_table(nodes: NodeTable, key: str, compute: Callable[[], T]) -> T:
    """``compute()`` for this node table, computed once while the table stays the same."""
    memo = _MEMOS.get(key)
    if memo is not None and memo[0] is nodes and memo[1] is nodes.allocatable:
        value: T = memo[2]
        return value
    value = compute()
    _MEMOS[key] = (nodes, nodes.allocatable, value)
    return value
