"""The keyed, delayed, de-duplicating work queue of the binder and the controllers."""

from __future__ import annotations

import asyncio

from scheduler.component.workqueue import WorkQueue


def test_workqueue_dedups_delays_and_requeues_while_active() -> None:
    async def main() -> list[str]:
        q: WorkQueue[str] = WorkQueue()
        q.add("x", 0.05)
        q.add("x", 0.0)  # earlier wins
        q.add("y", 0.02)
        got = [await q.get()]
        q.add("x")  # while active: runs again after done
        got.append(await q.get())
        q.done("x")
        got.append(await asyncio.wait_for(q.get(), 1))
        q.done("x")
        q.done("y")
        assert len(q) == 0
        return got

    assert asyncio.run(main()) == ["x", "y", "x"]
