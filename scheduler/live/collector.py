"""The cyclic garbage collector in a long-running scheduler: frozen between cycles.

Why: the cache holds about a million container objects at 100,000 pods (pods, pod
groups, their pod sets and lists), none of them garbage, and a pass of the
collector over them costs 0.3-0.6 s. The cycle runs with the collector paused
(:func:`crds.documents.gc_paused`); left to its thresholds, the collector then
walks the cache's younger generations at some later allocation, often at the end
of a cycle, which is where a scheduler can least afford it. So, between cycles,
:meth:`Collector.settle` collects what is not frozen (what the last cycle and
the watch events left: cheap) and freezes what survives (``gc.freeze``), so the
collector's passes stay proportional to what changed, not to the cache. The live
loop keeps the collector paused from a cycle's snapshot to its settle: the
young objects the cycle leaves are walked once, by the settle, not also by an
automatic pass as the cycle's own pause ends.

What a frozen object costs: it is still freed by reference counting the moment
nothing refers to it (a replaced pod, a re-derived pod group); only a frozen
object that later becomes part of an unreachable reference cycle would stay.
Every ``full_every`` settles the freeze is lifted for one full collection, which
frees any such cycles, so memory stays bounded in a long run
(``tests/scheduler/live/test_collector.py``; docs/benchmarks.md, fifth round).
"""

from __future__ import annotations

import gc

FULL_EVERY = 100
"""Settles between full collections of everything (about 100 s at a 1 s period)."""


class Collector:
    """Freeze after the informers' first sync; settle between cycles."""

    def __init__(self, full_every: int = FULL_EVERY) -> None:
        if full_every < 1:
            raise ValueError(f"full_every must be at least 1, got {full_every}")
        self.full_every = full_every
        self.settles = 0

    def start(self) -> None:
        """Move everything alive (the listed cache) out of the collector's sight."""
        gc.freeze()

    def settle(self) -> None:
        """Collect what is not frozen (all of it every ``full_every`` calls), then freeze
        what survived."""
        self.settles += 1
        if self.settles % self.full_every == 0:
            gc.unfreeze()
        gc.collect()
        gc.freeze()

    def stop(self) -> None:
        """Give the frozen objects back to the collector (the process goes on without us)."""
        gc.unfreeze()
