"""Per-node-table memos for set-up work (plugins, hints) that only depends on the nodes.

Why: the cluster cache keeps one node table until a node changes, but plugins
are opened every cycle; a Python loop over every node's labels or taints at
session open costs about a millisecond at 1,500 nodes. That is nothing for a
live loop running once a second, and most of the cost of a simulation running
thousands of cycles. A memo lives in the table's ``derived`` store (so it goes
with the table), per key, and is recomputed when widening replaced the
table's allocatable array.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, cast

from scheduler.api.nodes import NodeTable

T = TypeVar("T")


def per_table(nodes: NodeTable, key: str, compute: Callable[[], T]) -> T:
    """``compute()`` for this node table, computed once while the table stays the same."""
    memo = nodes.derived.get(("plugin-memo", key))
    if isinstance(memo, tuple) and memo[0] is nodes.allocatable:
        return cast(T, memo[1])
    value = compute()
    nodes.derived[("plugin-memo", key)] = (nodes.allocatable, value)
    return value
