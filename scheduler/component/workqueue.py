"""A keyed, delayed, de-duplicating work queue for reconcilers.

Why this module exists: a controller hears many watch events for one object
(or one queue tree) and must reconcile it once, later, and never twice at the
same time; the binder must also retry a key after a back-off. This is the
asyncio equivalent of client-go's rate-limited work queue, with only what the
binder and the status controllers need: ``add(key, delay)`` keeps the earliest
due time, ``get()`` waits for a due key not being processed, ``done(key)``
releases it (re-adding it if it was added meanwhile).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["WorkQueue"]

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._due: dict[K, float] = {}
        self._heap: list[tuple[float, int, K]] = []
        self._seq = 0
        self._active: set[K] = set()
        self._again: dict[K, float] = {}
        self._changed = asyncio.Event()

    def __len__(self) -> int:
        return len(self._due) + len(self._again)

    def add(self, key: K, delay: float = 0.0) -> None:
        """Process ``key`` in ``delay`` seconds, or earlier if already due earlier."""
        at = self._clock() + max(delay, 0.0)
        if key in self._active:
            self._again[key] = min(at, self._again.get(key, at))
            return
        if key in self._due and self._due[key] <= at:
            return
        self._due[key] = at
        self._seq += 1
        heapq.heappush(self._heap, (at, self._seq, key))
        self._changed.set()

    def _pop_due(self) -> tuple[K | None, float | None]:
        while self._heap:
            at, _, key = self._heap[0]
            if self._due.get(key) != at:
                heapq.heappop(self._heap)  # superseded entry
                continue
            wait = at - self._clock()
            if wait > 0:
                return None, wait
            heapq.heappop(self._heap)
            del self._due[key]
            self._active.add(key)
            return key, None
        return None, None

    async def get(self) -> K:
        """The next due key; it stays reserved until :meth:`done`."""
        while True:
            key, wait = self._pop_due()
            if key is not None:
                return key
            self._changed.clear()
            if wait is None:
                await self._changed.wait()
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), wait)

    def done(self, key: K) -> None:
        self._active.discard(key)
        at = self._again.pop(key, None)
        if at is not None:
            self.add(key, at - self._clock())
