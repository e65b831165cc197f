"""Topologies, topology constraints and the domain tree built from node labels (§2.5, §5.8).

Why: topology-aware placement asks, for every constrained gang, "which racks
(zones, blocks) could hold these pods, and how full is each". A Topology names
node-label levels from the coarsest to the finest; a node's label values spell
its path through the tree (nodes missing any level label are outside it). The
tree is pure and depends only on node labels, so it is built once per node
table and cached on it; each level is one domain index per node, and per-domain
free capacity is a handful of ``bincount`` calls over the node arrays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from scheduler.api.nodes import NodeTable

IntArray = npt.NDArray[np.intp]
Mask = npt.NDArray[np.bool_]

ROOT = -1
"""Level index of the tree's root: every node inside the topology."""


@dataclass(frozen=True, slots=True)
class TopologyInfo:
    """A Topology CR: its name and node-label levels, coarsest first.

    ``aliases`` maps each level alias (KAI v0.17) to its node-label key; a
    constraint may name a level either way (:meth:`resolve`).
    """

    name: str
    levels: tuple[str, ...]
    aliases: Mapping[str, str] = field(default_factory=dict)

    def resolve(self, level: str) -> str:
        """The node-label key ``level`` names: an alias's label, else ``level`` itself."""
        return self.aliases.get(level, level)


@dataclass(frozen=True, slots=True)
class TopologyConstraintInfo:
    """``topologyConstraint`` of a PodGroup or subgroup with a non-empty ``topology``."""

    topology: str
    required: str = ""
    preferred: str = ""

    def describe(self) -> str:
        parts = [f"topology {self.topology}"]
        if self.required:
            parts.append(f"required level {self.required}")
        if self.preferred:
            parts.append(f"preferred level {self.preferred}")
        return ", ".join(parts)


@dataclass(frozen=True, slots=True)
class TopologyTree:
    """The constraints of one PodGroup: on the whole group (the root) and per subgroup.

    Subgroup names are lowercased, as KAI looks parents up; ``parents`` maps a
    subgroup to its parent ("" = the root). Only PodGroups with at least one
    constraint carry a tree, so unconstrained jobs skip topology entirely.
    """

    root: TopologyConstraintInfo | None
    constraints: Mapping[str, TopologyConstraintInfo]
    parents: Mapping[str, str]

    def chain(self, pod_set: str) -> list[str]:
        """Subgroup names from the root's child down to ``pod_set`` (a leaf)."""
        out: list[str] = []
        name = pod_set.lower()
        seen: set[str] = set()
        while name and name not in seen:
            seen.add(name)
            out.append(name)
            name = self.parents.get(name, "")
        out.reverse()
        return out

    def constraint_of(self, group: str) -> TopologyConstraintInfo | None:
        """The constraint of subgroup ``group``, or of the whole PodGroup for ""."""
        return self.root if not group else self.constraints.get(group)


class DomainLevel:
    """One level of a domain tree: the domain of every node, and each domain's id and parent."""

    __slots__ = ("ids", "label", "of_node", "parent")

    def __init__(self, label: str, of_node: IntArray, ids: list[str], parent: IntArray) -> None:
        self.label = label
        self.of_node = of_node  # domain index per node, -1 outside the topology
        self.ids = ids  # domain ids ("zone-a/rack-1"), ascending: index order is id order
        self.parent = parent  # index of each domain's parent one level up (-1: the root)

    def __len__(self) -> int:
        return len(self.ids)


class DomainTree:
    """Domains of one Topology over one node table (root → levels → nodes)."""

    __slots__ = ("inside", "levels", "topology")

    def __init__(self, topology: TopologyInfo, inside: Mask, levels: list[DomainLevel]) -> None:
        self.topology = topology
        self.inside = inside  # nodes carrying every level label
        self.levels = levels

    def level_index(self, label: str) -> int | None:
        """Index of the level named by ``label`` (its node-label key or its alias)."""
        label = self.topology.resolve(label)
        for i, level in enumerate(self.levels):
            if level.label == label:
                return i
        return None

    def domain_mask(self, level: int, domain: int) -> Mask:
        if level == ROOT:
            return self.inside
        mask: Mask = self.levels[level].of_node == domain
        return mask

    def domain_id(self, level: int, domain: int) -> str:
        return "(all nodes)" if level == ROOT else self.levels[level].ids[domain]

    def domains_of(self, level: int, nodes: Sequence[int]) -> set[int]:
        """The domains at ``level`` holding the given node indices (outside nodes ignored)."""
        if level == ROOT:
            return {0}
        of_node = self.levels[level].of_node
        return {int(of_node[n]) for n in nodes if of_node[n] >= 0}

    def per_domain(
        self, level: int, values: npt.NDArray[np.float64], mask: Mask
    ) -> npt.NDArray[np.float64]:
        """Sums of ``values`` (shape (rows, nodes)) per domain at ``level`` over ``mask``'s nodes.

        Returns shape (rows, domains); the root is one domain.
        """
        if level == ROOT:
            summed: npt.NDArray[np.float64] = values[:, mask].sum(axis=1)[:, None]
            return summed
        of_node = self.levels[level].of_node
        selected = mask & (of_node >= 0)
        index = of_node[selected]
        width = len(self.levels[level])
        rows = values[:, selected]
        return np.stack([np.bincount(index, weights=row, minlength=width) for row in rows])


def build_domain_tree(nodes: NodeTable, topology: TopologyInfo) -> DomainTree:
    """The domain tree of ``topology`` over ``nodes``, cached on the node table.

    A node table is rebuilt whenever a node changes, so the cache is keyed on the
    node set; within and across cycles with the same nodes the tree is reused.
    The key holds the aliases too: the tree resolves them, and they may be edited.
    """
    key = ("topology", topology.levels, tuple(sorted(topology.aliases.items())))
    cached = nodes.derived.get(key)
    if isinstance(cached, DomainTree):
        return cached
    count = len(nodes)
    paths: list[tuple[str, ...] | None] = []
    for meta in nodes.meta:
        values = tuple(meta.labels.get(label) for label in topology.levels)
        paths.append(None if any(v is None for v in values) else values)  # type: ignore[arg-type]
    inside = np.array([p is not None for p in paths], dtype=bool)
    levels: list[DomainLevel] = []
    previous: dict[tuple[str, ...], int] = {}
    for depth, label in enumerate(topology.levels):
        keys = sorted({p[: depth + 1] for p in paths if p is not None})
        index = {k: i for i, k in enumerate(keys)}
        of_node = np.full(count, -1, dtype=np.intp)
        for n, path in enumerate(paths):
            if path is not None:
                of_node[n] = index[path[: depth + 1]]
        parent = np.array([previous.get(k[:-1], -1) for k in keys], dtype=np.intp)
        levels.append(DomainLevel(label, of_node, ["/".join(k) for k in keys], parent))
        previous = index
    tree = DomainTree(topology, inside, levels)
    nodes.derived[key] = tree
    return tree
