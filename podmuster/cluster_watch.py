"""The cluster as the scheduler sees it, kept current by watches: the dashboard's source.

Why this module exists: the dashboard and ``kubectl podmuster`` must read exactly what
the scheduler reads, parsed the same way, so they run the scheduler's own informers
(:class:`scheduler.live.informers.Informers` into a :class:`ClusterCache`) plus one
more watch for the scheduler's ``Evict`` Events; :meth:`ClusterWatch.view` turns the
current state into a :class:`~podmuster.cluster_view.ClusterView`.  Everything runs in
one event loop: the view is taken between two watch events, never during one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from kubeapi.informer import list_and_watch
from kubeapi.objects import Object
from kubeapi.protocol import KubeWatcher, Listing
from podmuster import cluster_view
from scheduler.cache.cluster_cache import ClusterCache
from scheduler.cache.pools import NodePool
from scheduler.config import SchedulerConfig
from scheduler.cycle import queue_shares
from scheduler.live.informers import Informers

__all__ = ["ClusterWatch", "EvictionEvents"]


class EvictionEvents:
    """The scheduler's ``Evict`` Events on PodGroups, by uid (a :class:`Handler`)."""

    def __init__(self, keep: int = 200) -> None:
        self.keep = keep
        self.events: dict[str, Object] = {}
        self.synced = asyncio.Event()

    def page(self, items: list[Object]) -> None:
        for item in items:
            self.event("ADDED", item)

    def listed(self, listing: Listing) -> None:
        present = {_uid(item) for item in listing.items}
        for gone in [uid for uid in self.events if uid not in present]:
            del self.events[gone]
        self.synced.set()

    def event(self, event_type: str, obj: Object) -> None:
        if not cluster_view.is_eviction(obj):
            return
        if event_type == "DELETED":
            self.events.pop(_uid(obj), None)
            return
        self.events[_uid(obj)] = obj
        if len(self.events) > self.keep:
            oldest = sorted(
                self.events, key=lambda u: cluster_view.eviction_of(self.events[u])["time"]
            )
            for uid in oldest[: len(self.events) - self.keep]:
                del self.events[uid]


class ClusterWatch:
    """The scheduler's informers plus the eviction Events; :meth:`run` until cancelled."""

    def __init__(
        self,
        api: KubeWatcher,
        config: SchedulerConfig,
        *,
        evictions: bool = True,
        pool: NodePool | None = None,
    ) -> None:
        """``evictions=False``: no Event watch (``kubectl podmuster`` shows none); ``pool``:
        the node pool whose scheduler's view this is (default: the default pool)."""
        self.api = api
        self.watch_events = evictions
        self.config = config
        self.cache = ClusterCache(config.scheduler_name, strict=False)
        self.informers = Informers(api, self.cache, pool=pool)
        self.evictions = EvictionEvents()
        if not evictions:
            self.evictions.synced.set()
        self._last: tuple[float, cluster_view.ClusterView] | None = None

    @property
    def synced(self) -> bool:
        return self.informers.synced and self.evictions.synced.is_set()

    async def wait_synced(self) -> None:
        await asyncio.gather(self.informers.wait_synced(), self.evictions.synced.wait())

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self.informers.run(), name="informers")
            if self.watch_events:
                group.create_task(
                    list_and_watch(self.api, "v1", "Event", self.evictions), name="informer Event"
                )

    def view(self, max_age: float = 0.0) -> cluster_view.ClusterView:
        """The current state as the dashboard shows it.

        With ``max_age`` a view taken less than that many seconds ago is served again:
        many open pages cost one snapshot and one fair-share division per ``max_age``.
        """
        now = time.monotonic()
        if self._last is not None and now - self._last[0] < max_age:
            return self._last[1]
        snapshot = self.cache.snapshot(time.time(), self.config.stuck_in_releasing_s).snapshot
        objects: Mapping[str, Mapping[str, Any]] = self.informers.objects
        view = cluster_view.build(
            snapshot,
            queue_shares(snapshot, self.config),
            objects["Queue"].values(),
            objects["PodGroup"],
            objects["Pod"].values(),
            self.evictions.events.values(),
            objects["BindRequest"].values(),
        )
        self._last = (now, view)
        return view

    def explain(self, key: str) -> dict[str, Any] | None:
        """One PodGroup (``namespace/name``) as the dashboard shows a waiting one, or None."""
        objects = self.informers.objects
        raw = objects["PodGroup"].get(key)
        if raw is None:
            return None
        snapshot = self.cache.snapshot(time.time(), self.config.stuck_in_releasing_s).snapshot
        rows = cluster_view.queue_rows(
            queue_shares(snapshot, self.config), objects["Queue"].values()
        )
        return cluster_view.pending_entry(
            key,
            raw,
            snapshot.jobs.get(key),
            {row["queue"]: row for row in rows},
            cluster_view.pod_conditions(objects["Pod"].values()),
            cluster_view.bind_failures(objects["BindRequest"].values(), objects["Pod"].values()),
        )


def _uid(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
