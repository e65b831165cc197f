"""NUMA-aware placement: predict the kubelet Topology Manager's admission (KAI v0.16/v0.17).

Why: a node whose kubelet runs ``single-numa-node`` or ``restricted`` rejects a pod it
cannot align on its NUMA zones after the scheduler bound it; the pod then fails with
``TopologyAffinityError``. This plugin filters such nodes out and, for every NUMA-relevant
pod, prefers nodes where it spans fewer zones (``100 / span``, KAI's NUMA tier), the
rule itself being :mod:`scheduler.api.numa`.

Zones are charged as the cycle places pods, like node accounting: the session holds one
copy of each NUMA node's ``available`` array (only nodes with a NodeResourceTopology,
zones x columns), a placement subtracts the zones it was predicted to use and a
deallocation (rollback, eviction) gives them back. Pods placed before the cycle are
already counted in the published ``available``; those carrying a placement record
(``kai.scheduler/numa-placement-observed``, else ``-predicted``) give back exactly those
zones when evicted in the session, others give back nothing (as in KAI: a zone is never
guessed). The plugin is opt-in (``plugins.numa.enabled``, as in KAI); when no node
publishes a NodeResourceTopology, nothing is registered and placements pay nothing.

A pod is NUMA-relevant when it is Guaranteed (CPU, memory and hugepages align) or asks
for a device some node reports per zone (devices align for every QoS class).
"""

from __future__ import annotations

import logging

import numpy as np
import numpy.typing as npt

from scheduler.api.numa import (
    NUMA_SCORE,
    NumaNode,
    NumaPolicy,
    NumaRequest,
    NumaScope,
    Placement,
    charge,
    solve,
    span,
)
from scheduler.api.pods import ACTIVE_USED, PodInfo, PodStatus
from scheduler.api.resources import widen
from scheduler.cache import numa_reading
from scheduler.cache.parsing import FieldError
from scheduler.framework import extension_points as ep
from scheduler.framework.session import Session

log = logging.getLogger("podmuster.scheduler.numa")

NOT_ALIGNED = "node(s) cannot NUMA-align the pod's resources under their Topology Manager policy"


class NumaPlugin:
    """Registers the NUMA filter and score and follows placements into the zones."""

    name = "numa"

    def __init__(self, ignore: tuple[str, ...] = ()) -> None:
        self.ignore = ignore  # resources published per zone that the kubelet does not align

    def on_session_open(self, session: Session) -> None:
        snapshot = session.snapshot
        if not snapshot.numa:
            return
        nodes = snapshot.nodes
        width = snapshot.space.width
        ledger: dict[int, NumaNode] = {}
        ignored = {snapshot.space.find(name) for name in self.ignore} - {None}
        for name, published in snapshot.numa.items():
            index = nodes.index.get(name)
            if index is None:
                continue  # a NodeResourceTopology of a node that is gone
            copy = published.session_copy()
            copy.widen(width)
            if ignored:
                copy.aware = tuple(c for c in copy.aware if c not in ignored)
            ledger[index] = copy
        if not ledger:
            return
        count = len(nodes)
        max_zones = max(len(n) for n in ledger.values())
        filters = any(n.policy.filters for n in ledger.values())
        devices = {c for n in ledger.values() if n.policy.scored for c in n.aware} - {
            c for n in ledger.values() for c in n.gated
        }
        fast = _OneZoneNodes(ledger, max_zones, width)
        placements: dict[str, tuple[int, Placement]] = {}  # pod uid -> (node, zones)
        released: dict[str, tuple[int, Placement]] = {}  # evicted this session

        space = snapshot.space

        def wants(pod: PodInfo) -> bool:
            request = numa_reading.numa_request_of(pod, space)
            if request is None:
                return False
            if request.guaranteed:
                return True
            vector = request.pod
            return any(c < vector.shape[0] and vector[c] > 0 for c in devices)

        def constrain(pod: PodInfo) -> ep.DynamicConstraint | None:
            if pod.numa_source is None and pod.numa is None:
                return None  # cheaply: most pods
            request = numa_reading.numa_request_of(pod, space)
            if request is None or not wants(pod):
                return None
            mask = np.ones(count, dtype=bool)
            score = np.full(count, NUMA_SCORE / max_zones)
            fast.judge(request, mask, score)
            for index, node in fast.others:
                if not node.concerns(request):
                    score[index] = NUMA_SCORE / len(node)  # unmanaged: assume full spread
                    continue
                placement = solve(node, request)
                if placement is None:
                    score[index] = 0.0
                    if node.policy.filters:
                        mask[index] = False
                    continue
                score[index] = NUMA_SCORE / span(placement)
            return ep.DynamicConstraint(parts=[(mask, NOT_ALIGNED)] if filters else (), score=score)

        def on_allocate(pod: PodInfo) -> None:
            node = ledger.get(pod.node)
            if node is None:
                return
            request = numa_reading.numa_request_of(pod, space)
            if request is None or not node.concerns(request):
                return
            earlier = released.pop(pod.uid, None)
            if earlier is not None and earlier[0] == pod.node:
                placement = earlier[1]  # an eviction undone: the same zones again
            else:
                placement = solve(node, request) or {}
            charge(node, placement, 1)
            placements[pod.uid] = (pod.node, placement)

        def on_deallocate(pod: PodInfo) -> None:
            record = placements.pop(pod.uid, None)
            if record is None:
                return
            charge(ledger[record[0]], record[1], -1)
            if pod.status == PodStatus.RELEASING:
                released[pod.uid] = record

        for pod in snapshot.pods:  # pods placed earlier: their recorded zones, not charged
            if (
                pod.node in ledger
                and pod.status in ACTIVE_USED
                and numa_reading.numa_request_of(pod, space) is not None
            ):
                recorded = _recorded(pod, ledger[pod.node], session)
                if recorded is not None:
                    placements[pod.uid] = (pod.node, recorded)

        session.add_dynamic_constraint(constrain)
        session.add_event_handlers(on_allocate, on_deallocate)


class _OneZoneNodes:
    """The single-numa-node, pod-scope nodes judged for a pod in one vectorised test.

    Their ``available`` arrays become views into one (nodes, zones, columns) array, so
    charging a node (in place) is seen here; padding zones hold nothing. A pod aligns on
    such a node when some zone holds every aligned request: ``100`` then, else filtered.
    """

    def __init__(self, ledger: dict[int, NumaNode], zones: int, width: int) -> None:
        chosen = [
            (i, n)
            for i, n in ledger.items()
            if n.policy == NumaPolicy.SINGLE_NUMA_NODE and n.scope == NumaScope.POD
        ]
        taken = {i for i, _ in chosen}
        self.others = [(i, n) for i, n in ledger.items() if i not in taken]
        self.index = np.array([i for i, _ in chosen], dtype=np.intp)
        self.zones = np.array([len(n) for _, n in chosen], dtype=np.float64)
        self.available = np.zeros((len(chosen), zones, width), dtype=np.int64)
        self.aligned = np.zeros((len(chosen), width), dtype=bool)
        self.devices = np.zeros((len(chosen), width), dtype=bool)
        for k, (_, node) in enumerate(chosen):
            self.available[k, : len(node)] = node.available
            node.available = self.available[k, : len(node)]
            self.aligned[k, list(node.aware)] = True
            self.devices[k, [c for c in node.aware if c not in node.gated]] = True

    def judge(self, request: NumaRequest, mask: ep.Mask, score: npt.NDArray[np.float64]) -> None:
        if not len(self.index):
            return
        width = self.available.shape[2]
        need = widen(request.pod, width) if request.pod.shape[0] < width else request.pod[:width]
        aligned = self.aligned if request.guaranteed else self.devices
        relevant: ep.Mask = np.logical_and(aligned, need > 0)
        holds: ep.Mask = np.logical_or(self.available >= need, ~relevant[:, None, :])
        fits: ep.Mask = np.any(np.all(holds, axis=2), axis=1)
        concerned: ep.Mask = np.logical_or(relevant.any(axis=1), request.guaranteed)
        score[self.index] = np.where(
            concerned, np.where(fits, NUMA_SCORE, 0.0), NUMA_SCORE / self.zones
        )
        mask[self.index] = ~concerned | fits


def _recorded(pod: PodInfo, node: NumaNode, session: Session) -> Placement | None:
    """The zones a placement record names, or None (no record, a zone the node lacks)."""
    try:
        record = numa_reading.placement_record(pod.annotations, session.snapshot.space)
    except FieldError as exc:
        log.warning("pod %s: ignoring its NUMA placement record: %s: %s", pod.key, exc.field, exc)
        return None
    if record is None:
        return None
    width = node.available.shape[1]
    placement: Placement = {}
    for zone_id, amounts in record[1]:
        if zone_id not in node.zone_ids:
            return None  # a partial record would give back too little: treat as unknown
        vector = np.zeros(width, dtype=np.int64)
        vector[: min(width, amounts.shape[0])] = amounts[:width]
        placement[node.zone_ids.index(zone_id)] = vector
    return placement


__all__ = ["NOT_ALIGNED", "NumaPlugin"]
