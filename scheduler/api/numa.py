"""NUMA zones of a node and the kubelet Topology Manager's alignment rule (KAI v0.16/v0.17).

Why: on a node whose kubelet runs the Topology Manager with ``single-numa-node`` or
``restricted``, a pod whose CPU, memory and devices cannot be aligned on NUMA zones is
rejected at admission (``TopologyAffinityError``) after the scheduler bound it. The engine
predicts that decision from the node's published NodeResourceTopology so such a node is
never chosen, and prefers nodes where a pod spans fewer zones under ``best-effort``.

Everything here is pure: a node's zones are integer arrays (zones x resource columns, the
engine's units), a pod's NUMA request a few vectors; :func:`solve` decides whether a request
aligns and where it would be drawn. The session keeps one small mutable ``available`` array
per NUMA node and charges placements into it (:mod:`scheduler.plugins.numa`).

The rule, as the kubelet applies it and KAI models it:

- ``single-numa-node``: every request must fit inside one zone, the lowest that holds it;
- ``restricted``: each requested resource has a preferred width, the fewest zones whose
  *allocatable* holds it; all preferred widths must agree, and some set of that many zones
  (lowest first) must hold every resource in *available*;
- ``best-effort``: never rejects; zones are taken greedily (most of the unmet demand first)
  and the number taken is the span the score uses;
- ``none`` (or no NodeResourceTopology): not modelled.

Pod scope aligns the whole pod once; container scope aligns each app container and native
sidecar in turn against a shared ledger, and each ordinary init container on its own.
CPU, memory and hugepages align only for Guaranteed pods, and CPU only in whole cores per
container (the CPU Manager's static policy); devices align for every QoS class.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import numpy.typing as npt

from scheduler.api.resources import Vector, widen

Zones = npt.NDArray[np.int64]  # shape (zones, columns)

NUMA_SCORE = 100
"""KAI's NUMA score tier: a node scores ``NUMA_SCORE / span``."""


class NumaPolicy(enum.IntEnum):
    """The kubelet Topology Manager policy a node reports."""

    NONE = 0
    BEST_EFFORT = 1
    RESTRICTED = 2
    SINGLE_NUMA_NODE = 3

    @property
    def filters(self) -> bool:
        """The kubelet rejects pods it cannot align (the engine filters such nodes)."""
        return self in (NumaPolicy.RESTRICTED, NumaPolicy.SINGLE_NUMA_NODE)

    @property
    def scored(self) -> bool:
        """Placements are predicted, charged to the zones and scored by span."""
        return self != NumaPolicy.NONE


class NumaScope(enum.IntEnum):
    """The kubelet Topology Manager scope: align each container, or the pod once."""

    CONTAINER = 0
    POD = 1


@dataclass(frozen=True, slots=True)
class NumaRequest:
    """What the kubelet aligns for one pod, in engine columns.

    ``pod`` is the whole pod (pod scope); ``concurrent`` the app containers and native
    sidecars, ``serial`` the ordinary init containers (container scope). CPU counts only
    whole cores of a Guaranteed pod's containers.
    """

    guaranteed: bool
    pod: Vector
    concurrent: tuple[Vector, ...]
    serial: tuple[Vector, ...]

    def units(self, scope: NumaScope) -> tuple[tuple[Vector, ...], tuple[Vector, ...]]:
        """The concurrent and serial requests aligned under ``scope``."""
        if scope == NumaScope.POD:
            return (self.pod,), ()
        return self.concurrent, self.serial


class NumaNode:
    """One node's NUMA zones, ordered by NUMA-node id (the kubelet's preference order).

    ``allocatable`` never changes; ``available`` is what the session charges and credits.
    ``aware`` are the columns the node reports per zone; ``gated`` those of them that
    align only for Guaranteed pods (cpu, memory, hugepages).
    """

    __slots__ = (
        "allocatable",
        "available",
        "aware",
        "gated",
        "name",
        "policy",
        "prefix",
        "scope",
        "zone_ids",
    )

    def __init__(
        self,
        name: str,
        policy: NumaPolicy,
        scope: NumaScope,
        zone_ids: Sequence[str],
        allocatable: Zones,
        available: Zones,
        aware: Sequence[int],
        gated: Sequence[int],
    ) -> None:
        self.name = name
        self.policy = policy
        self.scope = scope
        self.zone_ids = tuple(zone_ids)
        self.allocatable = allocatable
        self.available = available
        self.aware = tuple(aware)
        self.gated = frozenset(gated)
        # per aware column: sums of the k largest zone allocatables (k = 1..zones)
        self.prefix = {c: np.cumsum(np.sort(allocatable[:, c])[::-1]).tolist() for c in self.aware}

    def __len__(self) -> int:
        return len(self.zone_ids)

    def widen(self, width: int) -> None:
        """Pad the zone arrays after later extended-resource columns were added."""
        if self.allocatable.shape[1] < width:
            pad = np.zeros((len(self), width - self.allocatable.shape[1]), dtype=np.int64)
            self.allocatable = np.hstack([self.allocatable, pad])
            self.available = np.hstack([self.available, pad])

    def session_copy(self) -> NumaNode:
        """The same node with its own ``available`` to charge during one session."""
        copy = NumaNode.__new__(NumaNode)
        for slot in NumaNode.__slots__:
            setattr(copy, slot, getattr(self, slot))
        copy.available = self.available.copy()
        return copy

    def aligned_columns(self, request: NumaRequest) -> tuple[int, ...]:
        """The columns the kubelet aligns for this pod here (devices only if not Guaranteed)."""
        if request.guaranteed:
            return self.aware
        return tuple(c for c in self.aware if c not in self.gated)

    def concerns(self, request: NumaRequest) -> bool:
        """Whether the kubelet aligns anything of this pod here (Guaranteed, or a device)."""
        if not self.policy.scored:
            return False
        if request.guaranteed:
            return True
        return any(_at(request.pod, c) > 0 for c in self.aligned_columns(request))


Placement = dict[int, Vector]
"""Zone index -> amounts drawn there (full-width vectors)."""


def _at(vector: Vector, column: int) -> int:
    return int(vector[column]) if column < vector.shape[0] else 0


def solve(node: NumaNode, request: NumaRequest) -> Placement | None:
    """Where the kubelet would draw ``request`` on ``node``, or None when it would reject it.

    Under best-effort None means the request does not fit even across all zones.
    """
    columns = node.aligned_columns(request)
    concurrent, serial = request.units(node.scope)
    width = node.available.shape[1]
    available = node.available.astype(np.int64, copy=True)
    placement: Placement = {}
    for unit in concurrent:
        need = widen(unit, width) if unit.shape[0] < width else unit[:width]
        mask = _mask(node, columns, need, available)
        if mask is None:
            return None
        _draw(columns, mask, need, available, placement, width)
    for unit in serial:  # each init container alone, against what the pod leaves
        need = widen(unit, width) if unit.shape[0] < width else unit[:width]
        if _mask(node, columns, need, node.available) is None:
            return None
    return placement


def span(placement: Placement) -> int:
    """Zones a placement uses (at least 1: a pod needing nothing aligned is local)."""
    return max(1, sum(1 for amounts in placement.values() if amounts.any()))


def _mask(
    node: NumaNode, columns: Sequence[int], need: Vector, available: Zones
) -> list[int] | None:
    wanted = [c for c in columns if need[c] > 0]
    if not wanted:
        return []
    zones = len(node)
    if node.policy == NumaPolicy.BEST_EFFORT:
        return _greedy(wanted, need, available)
    if node.policy == NumaPolicy.SINGLE_NUMA_NODE:
        width = 1
    else:  # restricted: every resource's preferred width must agree
        widths = {_preferred_width(node.prefix[c], int(need[c])) for c in wanted}
        if len(widths) != 1 or None in widths:
            return None
        width = widths.pop() or 0
    for mask in _masks(zones, width):
        if all(int(available[list(mask), c].sum()) >= need[c] for c in wanted):
            return list(mask)
    return None


def _masks(zones: int, width: int) -> Iterator[tuple[int, ...]]:
    """Zone sets of ``width`` zones, lowest first (the kubelet's tie-break)."""
    return combinations(range(zones), width)


def _preferred_width(prefix: Sequence[int], need: int) -> int | None:
    for k, total in enumerate(prefix):
        if total >= need:
            return k + 1
    return None


def _greedy(wanted: Sequence[int], need: Vector, available: Zones) -> list[int] | None:
    remaining = {c: int(need[c]) for c in wanted}
    used: list[int] = []
    while any(r > 0 for r in remaining.values()):
        best, best_cover = -1, 0
        for z in range(available.shape[0]):
            if z in used:
                continue
            cover = sum(min(r, int(available[z, c])) for c, r in remaining.items() if r > 0)
            if cover > best_cover:
                best, best_cover = z, cover
        if best < 0:
            return None
        used.append(best)
        for c in remaining:
            remaining[c] -= int(available[best, c])
    return sorted(used)


def _draw(
    columns: Sequence[int],
    mask: Sequence[int],
    need: Vector,
    available: Zones,
    placement: Placement,
    width: int,
) -> None:
    """Take ``need`` from the mask's zones, lowest first, into ``placement``."""
    for c in columns:
        remaining = int(need[c])
        for z in mask:
            if remaining <= 0:
                break
            take = min(remaining, max(int(available[z, c]), 0))
            if take <= 0:
                continue
            available[z, c] -= take
            amounts = placement.get(z)
            if amounts is None:
                amounts = placement[z] = np.zeros(width, dtype=np.int64)
            amounts[c] += take
            remaining -= take


def charge(node: NumaNode, placement: Placement, sign: int) -> None:
    """Subtract (``sign`` 1) or give back (-1) a placement from the node's available."""
    width = node.available.shape[1]
    for z, amounts in placement.items():
        node.available[z] -= sign * widen(amounts, width)


__all__ = [
    "NUMA_SCORE",
    "NumaNode",
    "NumaPolicy",
    "NumaRequest",
    "NumaScope",
    "Placement",
    "charge",
    "solve",
    "span",
]
