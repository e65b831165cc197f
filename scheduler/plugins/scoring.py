"""Node scores: nominated node, availability, resource type, bin-pack or spread (§5.3, §5.6).

Why: KAI ranks feasible nodes by summed scores in strict tiers: +1,000,000 for
the pod's ``status.nominatedNodeName``, +100 when the
task fits on idle resources (no waiting), +10 for a CPU-only task on a
CPU-only node, then 0..9 for bin-packing (fuller first) or 0..1 for spreading
(emptier first), separately for GPU and CPU-only tasks. Ties go to the lowest
node name (the node table is in name order and argmax takes the first).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scheduler.api.nodes import NodeTable
from scheduler.api.resources import CPU, GPU
from scheduler.framework import extension_points as ep
from scheduler.framework.node_memo import per_table
from scheduler.framework.session import Session

AVAILABILITY = 100.0
RESOURCE_TYPE = 10.0
NOMINATED_NODE = 1_000_000.0
MAX_HIGH_DENSITY = 9.0
GPU_COUNT_LABEL = "nvidia.com/gpu.count"


def binpack_score(
    free: npt.NDArray[np.int64], present: ep.Mask, all_present: bool
) -> ep.Scores | None:
    """``9 * (1 - (free - min)/(max - min))`` over nodes having the resource; 0 elsewhere (§5.6)."""
    considered = free if all_present else free[present]
    if considered.size == 0:
        return None
    low, high = float(considered.min()), float(considered.max())
    if high <= 0:
        return None
    if low == high:
        return np.where(present, MAX_HIGH_DENSITY, 0.0).astype(np.float64)
    score = ((high - free) * (MAX_HIGH_DENSITY / (high - low))).astype(np.float64, copy=False)
    return score if all_present else np.where(present, score, 0.0).astype(np.float64)


def spread_score(free: npt.NDArray[np.int64], capacity: ep.Scores) -> ep.Scores:
    """``free / capacity`` in [0, 1]; 0 for nodes without the resource (§5.6)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(capacity > 0, free / np.where(capacity > 0, capacity, 1.0), 0.0)
    clipped: ep.Scores = np.clip(score, 0.0, 1.0).astype(np.float64)
    return clipped


def _gpu_capacity(nodes: NodeTable, capacity: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """GPU capacity per node for spreading; a ``nvidia.com/gpu.count`` label wins."""
    gpu_capacity: npt.NDArray[np.float64] = capacity[GPU].copy()
    for i, meta in enumerate(nodes.meta):
        label = meta.labels.get(GPU_COUNT_LABEL)
        if label and label.isascii() and label.isdigit():  # not "²": float() refuses it
            gpu_capacity[i] = float(label) * 1000
    return gpu_capacity


class ScoringPlugin:
    """Registers nodeavailability, resourcetype and nodeplacement scores."""

    name = "scoring"

    def __init__(self, gpu_strategy: str = "binpack", cpu_strategy: str = "binpack") -> None:
        self.gpu_strategy = gpu_strategy
        self.cpu_strategy = cpu_strategy

    def on_session_open(self, session: Session) -> None:
        nodes = session.snapshot.nodes
        cpu_only_nodes = ~nodes.has_gpus()
        capacity = nodes.allocatable.astype(np.float64)
        gpu_capacity = per_table(nodes, "gpu-capacity", lambda: _gpu_capacity(nodes, capacity))
        has_resource = {GPU: capacity[GPU] > 0, CPU: capacity[CPU] > 0}
        capacity_of = {GPU: gpu_capacity, CPU: capacity[CPU]}

        availability_score = np.float64(AVAILABILITY)
        cpu_only_bonus = cpu_only_nodes.astype(np.float64) * RESOURCE_TYPE
        all_present = {column: bool(mask.all()) for column, mask in has_resource.items()}

        def availability(context: ep.TaskContext) -> ep.Scores | None:
            if not context.any_releasing:
                return None  # every feasible node fits on idle: a constant adds nothing
            return context.fits_idle * availability_score

        def resource_type(context: ep.TaskContext) -> ep.Scores | None:
            if context.pod.uses_gpu:
                return None
            return cpu_only_bonus if context.nodes is None else cpu_only_bonus[context.nodes]

        def placement(context: ep.TaskContext) -> ep.Scores | None:
            column = GPU if context.pod.uses_gpu else CPU
            strategy = self.gpu_strategy if column == GPU else self.cpu_strategy
            subset = context.nodes
            free = nodes.free[column] if subset is None else nodes.free[column, subset]
            if strategy == "spread":
                capacity = capacity_of[column]
                return spread_score(free, capacity if subset is None else capacity[subset])
            if subset is None:
                return binpack_score(free, has_resource[column], all_present[column])
            present = has_resource[column][subset]
            return binpack_score(free, present, all_present[column] or bool(present.all()))

        node_index = nodes.index

        def nominated(context: ep.TaskContext) -> ep.Scores | None:
            index = (
                node_index.get(context.pod.nominated_node) if context.pod.nominated_node else None
            )
            if index is None:
                return None
            if context.nodes is not None:
                return np.where(context.nodes == index, NOMINATED_NODE, 0.0)
            score = np.zeros(len(nodes), dtype=np.float64)
            score[index] = NOMINATED_NODE
            return score

        session.add_node_scorer(availability)
        session.add_node_scorer(nominated)
        session.add_node_scorer(resource_type)
        session.add_node_scorer(placement)
