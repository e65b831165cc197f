"""The domains of a topology key over the node table: which nodes share a label value.

Why here, below the plugins and the actions: inter-pod affinity and spread
(:mod:`scheduler.plugins.pod_affinity`) count pods per domain, and the scale-up hint
(:mod:`scheduler.actions.scale_hint`) keeps a gang's anti-affine pods one per domain;
both read the same domains, computed once per node table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scheduler.api.nodes import NodeTable
from scheduler.framework.node_memo import per_table

Counts = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Domains:
    """A topology key over the node table: each node's domain index (``size``: no label)."""

    of_node: npt.NDArray[np.intp]
    size: int  # number of domains; also the index of "no such label"
    has_key: npt.NDArray[np.bool_]
    identity: bool  # every node has the key and its own value: domain i is node i

    def per_node(self, counts: Counts) -> Counts:
        """Per-node counts summed per domain, read back per node (0 where the key is missing)."""
        if self.identity:
            return counts
        summed = np.bincount(self.of_node, weights=counts, minlength=self.size + 1)
        summed[self.size] = 0
        result: Counts = summed.astype(np.int64)[self.of_node]
        return result


def domains(nodes: NodeTable, key: str) -> Domains:
    """The domains of ``key``, computed once per node table."""

    def compute() -> Domains:
        index: dict[str, int] = {}
        of_node = np.empty(len(nodes), dtype=np.intp)
        values = [meta.labels.get(key) for meta in nodes.meta]
        for i, value in enumerate(values):
            of_node[i] = -1 if value is None else index.setdefault(value, len(index))
        size = len(index)
        has_key = of_node >= 0
        of_node[~has_key] = size
        identity = size == len(nodes) and bool(has_key.all())
        return Domains(of_node, size, has_key, identity)

    return per_table(nodes, f"domains:{key}", compute)
