"""The live scheduler's collector: frozen between cycles, and no garbage kept for good.

Why: freezing what survives each cycle keeps the collector's passes off the cache,
but a frozen object that becomes part of an unreachable reference cycle is not
collected while frozen; the periodic full collection must free it, or a long run
would leak.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest
from live_objects import api_with, until

from scheduler.config import SchedulerConfig
from scheduler.live import loop
from scheduler.live.collector import Collector
from tests.kits import worlds as st


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture(autouse=True)
def _thawed() -> Iterator[None]:
    yield
    gc.unfreeze()


def _cycle_held() -> tuple[list[_Node], weakref.ref[_Node]]:
    """A two-object reference cycle, held by a list (as the cache holds its records)."""
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return [a], weakref.ref(a)


def test_a_frozen_cycle_dropped_is_freed_by_the_next_full_collection() -> None:
    collector = Collector(full_every=5)
    holder, alive = _cycle_held()
    collector.settle()  # the cycle survives this settle: frozen
    assert gc.get_freeze_count() > 0
    holder.clear()  # now unreachable, but frozen: no ordinary collection sees it
    for _ in range(3):
        collector.settle()
        assert alive() is not None
    collector.settle()  # the fifth settle thaws everything for one full collection
    assert alive() is None


def test_without_the_full_collection_a_frozen_cycle_would_stay() -> None:
    """What the periodic full collection is for: freezing alone keeps dead cycles."""
    collector = Collector(full_every=1_000_000)
    holder, alive = _cycle_held()
    collector.settle()
    holder.clear()
    for _ in range(10):
        collector.settle()
    assert alive() is not None


def test_an_acyclic_frozen_object_is_freed_when_dropped() -> None:
    """A replaced pod or re-derived pod group goes at once: reference counting still works."""
    collector = Collector(full_every=1_000_000)
    holder = [_Node()]
    alive = weakref.ref(holder[0])
    collector.settle()
    holder.clear()
    assert alive() is None


def test_young_cycles_are_collected_at_every_settle() -> None:
    collector = Collector(full_every=1_000_000)
    collector.start()
    holder, alive = _cycle_held()
    holder.clear()  # garbage before any settle froze it
    collector.settle()
    assert alive() is None


def test_full_every_must_be_positive() -> None:
    with pytest.raises(ValueError, match="full_every"):
        Collector(full_every=0)


def test_the_loop_settles_between_cycles_with_the_collector_paused_until_then(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ``freeze_after_sync`` (the process), each cycle ends with a settle, reached
    with the collector still paused (the cycle's objects are walked once, by it)."""
    paused_at_settle: list[bool] = []
    settle = Collector.settle

    def watched(self: Collector) -> None:
        paused_at_settle.append(not gc.isenabled())
        settle(self)

    monkeypatch.setattr(Collector, "settle", watched)
    fake = api_with(
        [st.node("n1", gpus=1), st.queue("q1", gpu_quota=1), *st.job("a", "q1", gpus=1)]
    )

    async def main() -> None:
        stop = asyncio.Event()
        options = loop.Options(SchedulerConfig(), 0.01, direct_bind=True, freeze_after_sync=True)
        running = asyncio.create_task(loop.run(fake, options, stop))
        await until(lambda: len(paused_at_settle) >= 2)
        stop.set()
        await asyncio.wait_for(running, 2)

    asyncio.run(main())
    assert paused_at_settle[:2] == [True, True]
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0
    pod = fake.stored("v1", "Pod", "default", "a-0")
    assert pod is not None
    assert pod["spec"]["nodeName"] == "n1"
