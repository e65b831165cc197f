"""Recording a snapshot's allocation into the built-in usage history.

Why this module exists: the live scheduler and the simulator both keep the
built-in record the same way: at a snapshot's time, each queue's allocation
(its subtree's allocated pods, as the proportion plugin counts it) and the
fair-share capacity, in KAI units; the record then answers ``usage(now)``,
which goes into the next snapshot (``ClusterSnapshot.queue_usage``).
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.api.snapshot import ClusterSnapshot
from scheduler.plugins.proportion.plugin import capacity, queue_allocation
from scheduler.usage.history import UsageHistory
from scheduler.usage.window import Vector


def _vector(values: Sequence[float]) -> Vector:
    gpu, cpu, memory = values
    return (float(gpu), float(cpu), float(memory))


def record_snapshot(history: UsageHistory, snapshot: ClusterSnapshot) -> None:
    """Note what each queue holds at ``snapshot.now`` (held until the next record)."""
    allocation = {name: _vector(v) for name, v in queue_allocation(snapshot).items()}
    history.record(snapshot.now, allocation, _vector(capacity(snapshot)))
