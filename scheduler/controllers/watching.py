"""List-then-watch one kind into an in-memory store, forever.

Why this module exists: the binder and the status controllers react to
changes of a few kinds. Each needs the same loop: list, watch from the list's
``resourceVersion``, resume after the server ends a stream, list again when
the version is too old (410 Gone), back off on transient errors, and tell the
owner which objects changed. :class:`Store` keeps the latest object per key.
Until its first list is in, a watch makes ``/readyz`` fail (:data:`READINESS`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any

from kubeapi import ApiError, GoneError, KubeWatcher, Object
from scheduler.metrics_http import READINESS, Readiness

__all__ = ["Store", "key_of", "run_together", "watch_kind"]

log = logging.getLogger("podmuster.watch")

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
    retry_seconds: float = 1.0,
    readiness: Readiness = READINESS,
) -> None:
    """Keep ``store`` current and call ``on_change``; runs until cancelled."""
    listed = synced if synced is not None else asyncio.Event()
    token = readiness.add(f"{kind} informer", lambda: None if listed.is_set() else "not listed")
    try:
        await _watch(api, api_version, kind, store, on_change, listed, retry_seconds)
    finally:
        readiness.remove(token)


async def _watch(
    api: KubeWatcher,
    api_version: str,
    kind: str,
    store: Store,
    on_change: OnChange,
    synced: asyncio.Event,
    retry_seconds: float,
) -> None:
    version = ""
    while True:
        try:
            if not version:
                listing = await api.list_all(api_version, kind)
                before = dict(store.objects)
                store.replace(listing.items)
                for key in set(before) | set(store.objects):
                    old, new = before.get(key), store.objects.get(key)
                    if old is not new:
                        on_change(old, new)
                version = listing.resource_version
                synced.set()
            async for event in api.watch(api_version, kind, version):
                if event.resource_version:
                    version = event.resource_version
                if event.type == "BOOKMARK":
                    continue
                old = store.apply(event.type, event.object)
                on_change(old, None if event.type == "DELETED" else event.object)
        except GoneError:
            version = ""  # too old: list again
        except ApiError as exc:
            log.warning("watch %s: %s", kind, exc)
            await asyncio.sleep(retry_seconds)


async def run_together(*work: Coroutine[Any, Any, None]) -> None:
    """Run watches and workers until one fails or the caller is cancelled; then stop all."""
    tasks = [asyncio.create_task(w) for w in work]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
