"""Node scores: availability, resource type, and bin-pack or spread placement (§5.3, §5.6).

Why: KAI ranks feasible nodes by summed scores in strict tiers: +100 when the
task fits on idle resources (no waiting), +10 for a CPU-only task on a
CPU-only node, then 0..9 for bin-packing (fuller first) or 0..1 for spreading
(emptier first), separately for GPU and CPU-only tasks. Ties go to the lowest
node name (the node table is in name order and argmax takes the first).
"""

from __future__ import annotations

import numpy as np

from scheduler.api.resources import CPU, GPU
from scheduler.framework import extension_points as ep
from scheduler.framework.session import Session

AVAILABILITY = 100.0
RESOURCE_TYPE = 10.0
MAX_HIGH_DENSITY = 9.0
GPU_COUNT_LABEL = "nvidia.com/gpu.count"


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
        gpu_capacity = capacity[:, GPU].copy()
        for i, meta in enumerate(nodes.meta):
            label = meta.labels.get(GPU_COUNT_LABEL)
            if label and label.isdigit():
                gpu_capacity[i] = float(label) * 1000
        has_resource = {GPU: capacity[:, GPU] > 0, CPU: capacity[:, CPU] > 0}
        capacity_of = {GPU: gpu_capacity, CPU: capacity[:, CPU]}

        def availability(context: ep.TaskContext) -> ep.Scores:
            return context.fits_idle.astype(np.float64) * AVAILABILITY

        def resource_type(context: ep.TaskContext) -> ep.Scores | None:
            if context.pod.uses_gpu:
                return None
            return cpu_only_nodes.astype(np.float64) * RESOURCE_TYPE

        def placement(context: ep.TaskContext) -> ep.Scores:
            column = GPU if context.pod.uses_gpu else CPU
            strategy = self.gpu_strategy if column == GPU else self.cpu_strategy
            free = (nodes.idle[:, column] + nodes.releasing[:, column]).astype(np.float64)
            present = has_resource[column]
            if strategy == "spread":
                cap = capacity_of[column]
                with np.errstate(divide="ignore", invalid="ignore"):
                    score = np.where(cap > 0, free / np.where(cap > 0, cap, 1.0), 0.0)
                return np.clip(score, 0.0, 1.0)
            if not present.any():
                return np.zeros(len(free))
            considered = free[present]
            low, high = float(considered.min()), float(considered.max())
            if high <= 0:
                return np.zeros(len(free))
            if low == high:
                return np.where(present, MAX_HIGH_DENSITY, 0.0)
            score = MAX_HIGH_DENSITY * (1.0 - (free - low) / (high - low))
            return np.where(present, score, 0.0)

        session.add_node_scorer(availability)
        session.add_node_scorer(resource_type)
        session.add_node_scorer(placement)
