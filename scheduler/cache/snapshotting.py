"""Build a ClusterSnapshot from raw objects in one call (offline commands and tests).

Why: the offline CLI, the simulator and the tests have all their objects at
once; this wraps ``ClusterCache`` so they use exactly the code path the live
scheduler uses, without managing a cache themselves.
"""

from __future__ import annotations

from collections.abc import Iterable

from crds.documents import SourcedObject
from crds.names import DEFAULT_SCHEDULER_NAME
from scheduler.cache.cluster_cache import ClusterCache, SnapshotResult
from scheduler.config import STUCK_IN_RELEASING_S


def build_snapshot(
    objects: Iterable[SourcedObject],
    *,
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    now: float = 0.0,
    strict: bool = True,
    stuck_after: float = STUCK_IN_RELEASING_S,
) -> SnapshotResult:
    """The engine's snapshot of ``objects`` (kinds per docs/cli.md §1); ``stuck_after``:
    the configuration's ``stuckInReleasingThreshold`` in seconds."""
    cache = ClusterCache(scheduler_name, strict=strict)
    cache.upsert_all(objects)
    return cache.snapshot(now, stuck_after)


__all__ = ["SnapshotResult", "build_snapshot"]
