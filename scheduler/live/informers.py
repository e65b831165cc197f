"""The kinds the engine reads, listed and watched into one :class:`ClusterCache`.

Why this module exists: the cache parses each object once, on upsert, so the live
scheduler must feed it every change exactly as KAI's informers feed its cache.  The
list-then-watch loop is :func:`kubeapi.informer.list_and_watch` (resume, 410 relist,
back-off); this module is what the scheduler does with it: pages parsed as they arrive,
what disappeared meanwhile deleted after a relist, sync tracked per kind.  One kind failing
never stops the others, and a bad object never stops its kind: the cache keeps the
error (``strict=False``) and :attr:`Informers.invalid` queues it to be reported as a
Warning Event on the object.  The latest raw object per key is kept for the commit step
(uids for preconditions, involved objects for Events, current conditions).

While the loop writes a cycle's decisions, :meth:`Informers.deferred` holds every change
(watch events and our own writes alike) and applies them when the writes are done: the
next cycle needs them, the writes in flight do not, and parsing a pod into the cache
costs about as much CPU as sending its binding (one process, one core). Only the newest
held change per object is kept (by resourceVersion: an older copy, such as our own write
racing its watch event, never replaces a newer one or a deletion), so each object is
parsed once however often it changed meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from crds.documents import SourcedObject, gc_paused
from crds.errors import InputError, object_error
from kubeapi.backoff import Backoff
from kubeapi.errors import ApiError, NotFoundError
from kubeapi.informer import list_and_watch
from kubeapi.objects import Object
from kubeapi.protocol import KubeWatcher, Listing
from scheduler.cache.cluster_cache import ClusterCache
from scheduler.cache.pools import NodePool
from scheduler.cache.reading import key_of

log = logging.getLogger("podmuster.scheduler.informers")

WATCHED: tuple[tuple[str, str], ...] = (
    ("v1", "Node"),
    ("v1", "Pod"),
    ("scheduling.run.ai/v2alpha2", "PodGroup"),
    ("scheduling.run.ai/v2", "Queue"),
    ("scheduling.run.ai/v1alpha2", "BindRequest"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("kai.scheduler/v1alpha1", "Topology"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "PersistentVolume"),
    ("storage.k8s.io/v1", "StorageClass"),
    ("v1", "Namespace"),
    ("resource.k8s.io/v1", "ResourceClaim"),
    ("resource.k8s.io/v1", "ResourceSlice"),
    ("resource.k8s.io/v1", "DeviceClass"),
)
"""(apiVersion, kind) of everything the engine reads."""

NUMA_WATCHED: tuple[tuple[str, str], ...] = (
    ("topology.node.k8s.io/v1alpha2", "NodeResourceTopology"),
)
"""Read only with NUMA-aware placement on: the CRD is not ours and often not installed."""

OPTIONAL: frozenset[str] = frozenset({"ResourceClaim", "ResourceSlice", "DeviceClass"})
"""Kinds an API server may not serve (``resource.k8s.io/v1`` before Kubernetes 1.34): while
not served they count as synced and empty, and are looked for again every
:data:`OPTIONAL_RETRY_SECONDS`, so an older cluster is scheduled as before."""
OPTIONAL_RETRY_SECONDS = 300.0

SOURCE = "apiserver"


class Informers:
    """Keeps ``cache`` equal to the cluster; :meth:`run` until cancelled."""

    def __init__(
        self,
        api: KubeWatcher,
        cache: ClusterCache,
        *,
        watched: tuple[tuple[str, str], ...] = WATCHED,
        backoff: Backoff | None = None,
        watch_timeout: int = 300,
        pool: NodePool | None = None,
    ) -> None:
        self.api = api
        self.pool = pool or NodePool()
        self.cache = cache
        self.watched = watched
        self.objects: dict[str, dict[str, Object]] = {kind: {} for _, kind in watched}
        self.invalid: list[tuple[Object, InputError]] = []
        self.relists: dict[str, int] = {kind: 0 for _, kind in watched}
        self._synced = {kind: asyncio.Event() for _, kind in watched}
        self._backoff = backoff or Backoff()
        self._watch_timeout = watch_timeout
        self._reported: dict[tuple[str, str], str] = {}
        # (kind, key) -> the newest change held while deferred (None: applied at once)
        self._held: dict[tuple[str, str], tuple[str, Object]] | None = None
        # told of every change as it arrives, deferred or not (the direct binds' room check)
        self.listeners: list[Callable[[str, Mapping[str, Any]], None]] = []

    @property
    def synced(self) -> bool:
        return all(event.is_set() for event in self._synced.values())

    def unsynced(self) -> list[str]:
        """The kinds not listed yet (a missing CRD, no RBAC: they stay here)."""
        return [kind for kind, event in self._synced.items() if not event.is_set()]

    async def wait_synced(self) -> None:
        await asyncio.gather(*(event.wait() for event in self._synced.values()))

    def note_dropped_queues(self, dropped: Mapping[str, str]) -> None:
        """Queues the snapshot left out of the tree (a missing parent, a parent cycle).

        Each is queued for one Warning ``InvalidObject`` Event on the Queue itself and
        logged, once per distinct reason: a broken queue nobody submits to is otherwise
        invisible (its PodGroups say ``QueueDoesNotExist``, the Queue said nothing).
        """
        tree_key = "Queue/tree"
        for kind_key in [k for k in self._reported if k[0] == tree_key and k[1] not in dropped]:
            del self._reported[kind_key]
        queues = self.objects.get("Queue", {})  # keyed by name (cluster scoped)
        errors = self.cache.errors
        for name, reason in sorted(dropped.items()):
            obj = queues.get(name)
            if obj is None or self._reported.get((tree_key, name)) == reason:
                continue
            if ("Queue", name) in errors:  # unreadable: reported with its own field already
                continue
            self._reported[(tree_key, name)] = reason
            error = object_error(SOURCE, obj, "spec.parentQueue", f"queue not usable: {reason}")
            log.warning("queue %s not usable: %s", name, reason, extra={"queue": name})
            self.invalid.append((dict(obj), error))

    async def run(self) -> None:
        """One task per kind, until cancelled."""
        async with asyncio.TaskGroup() as group:
            for api_version, kind in self.watched:
                group.create_task(self.run_kind(api_version, kind), name=f"informer {kind}")

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Hold every change :meth:`observe` gets until the block ends, then apply them."""
        if self._held is not None:
            raise RuntimeError("Informers.deferred() is not reentrant")
        self._held = {}
        try:
            yield
        finally:
            held, self._held = self._held, None
            with gc_paused():  # thousands of fresh, acyclic records
                for (kind, key), (event_type, obj) in held.items():
                    self._apply(kind, key, event_type, obj)

    @property
    def held(self) -> int:
        """Changes waiting for the end of :meth:`deferred` (0 outside it)."""
        return len(self._held) if self._held is not None else 0

    def observe(self, event_type: str, obj: Mapping[str, Any]) -> None:
        """Apply one change (a watch event, or our own write seen before its event)."""
        kind = str(obj.get("kind") or "")
        if kind not in self.objects:
            return
        for listener in self.listeners:
            listener(event_type, obj)
        key = key_of(obj)
        if not self.pool.holds(obj):
            if key in self.objects[kind] or (kind, key) in (self._held or {}):
                event_type = "DELETED"  # relabelled out of our pool: gone for us
            else:
                return
        if self._held is None:
            self._apply(kind, key, event_type, obj)
            return
        held = self._held.get((kind, key))
        if held is not None and _version(held[1]) > _version(obj) > 0:
            return  # an older copy than the change already held (a deletion included)
        self._held[(kind, key)] = (event_type, dict(obj))

    def _apply(self, kind: str, key: str, event_type: str, obj: Mapping[str, Any]) -> None:
        store = self.objects[kind]
        if event_type == "DELETED":
            store.pop(key, None)
            self.cache.delete(kind, key)
            self._reported.pop((kind, key), None)
            return
        current = store.get(key)
        if current is not None and _version(current) > _version(obj) > 0:
            return  # an older copy (our write raced its own watch event)
        store[key] = dict(obj)
        self.cache.upsert(SourcedObject(dict(obj), SOURCE, 0))
        error = self.cache.errors.get((kind, key))
        if error is None:
            self._reported.pop((kind, key), None)
        elif self._reported.get((kind, key)) != str(error):
            self._reported[(kind, key)] = str(error)
            self.invalid.append((dict(obj), error))

    async def run_kind(self, api_version: str, kind: str) -> None:
        """List, then watch, forever (:func:`~kubeapi.informer.list_and_watch`)."""
        if kind in OPTIONAL:
            await self._until_served(api_version, kind)
        await list_and_watch(
            self.api,
            api_version,
            kind,
            _KindFeed(self, kind),
            backoff=self._backoff.fresh(),
            watch_timeout=self._watch_timeout,
        )

    async def _until_served(self, api_version: str, kind: str) -> None:
        """Return once the server serves ``kind``; meanwhile the kind is synced and empty."""
        while True:
            try:
                await self.api.list_all(api_version, kind)
                return
            except NotFoundError:
                if not self._synced[kind].is_set():
                    log.info("%s %s is not served: read as empty", api_version, kind)
                self._synced[kind].set()
            except ApiError:
                return  # another failure: list_and_watch retries and reports it
            await asyncio.sleep(OPTIONAL_RETRY_SECONDS)

    def _observe_page(self, items: list[Object]) -> None:
        """A page of a list, parsed while the next page is on its way."""
        for obj in items:
            self.observe("MODIFIED", obj)

    def _listed(self, kind: str, listing: Listing) -> None:
        """A complete list: delete what it lacks (held changes included); ``kind`` synced."""
        self.relists[kind] += 1
        present = {key_of(obj) for obj in listing.items}
        known = dict(self.objects[kind])
        for (held_kind, key), (event_type, obj) in (self._held or {}).items():
            if held_kind == kind and event_type != "DELETED":
                known[key] = obj  # added while deferred: not in the store yet
        for gone in [key for key in known if key not in present]:
            self.observe("DELETED", known[gone])
        self._synced[kind].set()
        log.info(
            "listed %d %s objects at version %s", len(listing.items), kind, listing.resource_version
        )


class _KindFeed:
    """One kind's :class:`~kubeapi.informer.Handler`: everything goes to :class:`Informers`."""

    def __init__(self, informers: Informers, kind: str) -> None:
        self.informers, self.kind = informers, kind

    def page(self, items: list[Object]) -> None:
        self.informers._observe_page(items)

    def listed(self, listing: Listing) -> None:
        self.informers._listed(self.kind, listing)

    def event(self, event_type: str, obj: Object) -> None:
        self.informers.observe(event_type, obj)


def _version(obj: Mapping[str, Any]) -> int:
    raw = (obj.get("metadata") or {}).get("resourceVersion") or 0
    try:
        return int(raw)
    except (TypeError, ValueError):
        return 0
