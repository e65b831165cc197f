"""One kind kept in an in-memory store, with a callback per changed object.

Why this module exists: the binder, the status controllers and the node-scale-adjuster
react to changes of a few kinds. The list-then-watch loop is
:func:`kubeapi.informer.list_and_watch` (the scheduler's informers use it too); this is
what these components do with it: :class:`Store` keeps the latest object per key, and
the owner hears which objects changed (after a relist, every key that differs).
Until its first list is in, a watch makes ``/readyz`` fail (:data:`READINESS`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any

from kubeapi.backoff import Backoff
from kubeapi.informer import list_and_watch
from kubeapi.objects import Object
from kubeapi.protocol import KubeWatcher, Listing
from liveprocess.serving import READINESS, Readiness

__all__ = ["Store", "key_of", "run_together", "watch_kind"]

Key = tuple[str, str]
"""(namespace, name); namespace is empty for cluster-scoped kinds."""


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class Store:
    """The latest object of each key, as seen by the watch."""

    def __init__(self) -> None:
        self.objects: dict[Key, Object] = {}

    def replace(self, items: Iterable[Object]) -> set[Key]:
        """A relist: returns every key that was or is present (all may have changed)."""
        old = set(self.objects)
        self.objects = {key_of(obj): obj for obj in items}
        return old | set(self.objects)

    def apply(self, event_type: str, obj: Object) -> Object | None:
        """Apply one watch event; returns the previous object of that key."""
        key = key_of(obj)
        previous = self.objects.get(key)
        if event_type == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = obj
        return previous

    def values(self) -> list[Object]:
        return list(self.objects.values())


OnChange = Callable[[Object | None, Object | None], None]
"""Called with (old, new); new is None on delete, old None on add."""


async def watch_kind(
    api: KubeWatcher,
    api_version: str,
    kind: str,
    store: Store,
    on_change: OnChange,
    *,
    synced: asyncio.Event | None = None,
    backoff: Backoff | None = None,
    readiness: Readiness = READINESS,
) -> None:
    """Keep ``store`` current and call ``on_change``; runs until cancelled."""
    listed = synced if synced is not None else asyncio.Event()
    token = readiness.add(f"{kind} informer", lambda: None if listed.is_set() else "not listed")
    try:
        feed = _StoreFeed(store, on_change, listed)
        await list_and_watch(api, api_version, kind, feed, backoff=backoff)
    finally:
        readiness.remove(token)


class _StoreFeed:
    """A :class:`~kubeapi.informer.Handler` into a :class:`Store` and its owner."""

    def __init__(self, store: Store, on_change: OnChange, synced: asyncio.Event) -> None:
        self.store, self.on_change, self.synced = store, on_change, synced

    def page(self, items: list[Object]) -> None:
        pass  # the store is replaced whole once the list is complete

    def listed(self, listing: Listing) -> None:
        before = dict(self.store.objects)
        self.store.replace(listing.items)
        for key in set(before) | set(self.store.objects):
            old, new = before.get(key), self.store.objects.get(key)
            if old is not new:
                self.on_change(old, new)
        self.synced.set()

    def event(self, event_type: str, obj: Object) -> None:
        old = self.store.apply(event_type, obj)
        self.on_change(old, None if event_type == "DELETED" else obj)


async def run_together(*work: Coroutine[Any, Any, None]) -> None:
    """Run watches and workers until one fails or the caller is cancelled; then stop all."""
    tasks = [asyncio.create_task(w) for w in work]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
