"""An in-memory :class:`~kubeapi.protocol.KubeController` for tests: :class:`FakeKube`
(and :class:`FakeClock`, for the clocks the rate limiter and leader election take).

Why this module exists: components built on :mod:`kubeapi` (the scheduler's informers,
its commit step, leader election, the binder) need an API server in unit tests that
keeps resourceVersions, serves list-then-watch with a history that can be compacted
(410 Gone), honours uid and resourceVersion preconditions, and fails on demand.  It
mirrors the real server's behaviour where our code depends on it, nothing more.
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from kubeapi import errors, objects
from kubeapi.objects import Object, ObjectRef
from kubeapi.protocol import Annotations, Listing, PageHandler, WatchEvent

Key = tuple[str, str, str, str]
"""(apiVersion, kind, namespace, name)."""


class FakeClock:
    """A clock that stands still until a test moves ``now``."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def key_of(ref: ObjectRef) -> Key:
    return (ref.api_version, ref.kind, ref.namespace, ref.name)


def merge(target: Any, patch: Any, *, strategic: bool = False) -> Any:
    """RFC 7386 merge; with ``strategic``, lists of dicts merge by ``type`` (else ``name``),
    and an item ``{"name": ..., "$patch": "delete"}`` removes its namesake."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for name, value in patch.items():
        if value is None:
            result.pop(name, None)
        elif strategic and isinstance(value, list) and isinstance(result.get(name), list):
            key = "type" if all("type" in item for item in [*result[name], *value]) else "name"
            merged = {str(item.get(key)): item for item in result[name]}
            for item in value:
                if item.get("$patch") == "delete":
                    merged.pop(str(item.get(key)), None)
                else:
                    merged[str(item.get(key))] = merge(merged.get(str(item.get(key))), item)
            result[name] = list(merged.values())
        else:
            result[name] = merge(result.get(name), value, strategic=strategic)
    return result


class FakeKube:
    """Objects keyed by (apiVersion, kind, namespace, name); see the module docstring.

    ``calls`` records (verb, ref); :meth:`fail` queues an error for a verb; ``events``
    holds created core/v1 Events; :meth:`compact` drops watch history (old versions
    then raise GoneError); :meth:`end_watches` ends the open watch streams.
    """

    def __init__(self) -> None:
        self.objects: dict[Key, Object] = {}
        self.events: list[Object] = []
        self.calls: list[tuple[str, ObjectRef]] = []
        self.version = 0
        self.history: list[tuple[int, str, Key, Object]] = []
        self.compacted = 0
        self._failures: list[tuple[str, str, errors.ApiError]] = []
        self._changed = asyncio.Event()
        self._generation = 0
        self._open = 0
        self._end_next = False

    # --- test controls --------------------------------------------------------------
    def fail(self, verb: str, error: errors.ApiError, kind: str = "") -> None:
        """The next ``verb`` call (of ``kind``, if given) raises ``error``."""
        self._failures.append((verb, kind, error))

    def add(self, obj: Mapping[str, Any]) -> Object:
        """Store ``obj`` as if created (uid, resourceVersion, creation time filled in)."""
        return self._put("ADDED", ObjectRef.of(obj), dict(copy.deepcopy(obj)))

    def remove(self, api_version: str, kind: str, namespace: str, name: str) -> None:
        stored = self.objects.pop((api_version, kind, namespace, name))
        self._record("DELETED", (api_version, kind, namespace, name), stored)

    def compact(self) -> None:
        """Forget the watch history: resuming from any older version raises GoneError."""
        self.compacted = self.version
        self.history.clear()

    def end_watches(self) -> None:
        """End every open watch stream once it has caught up (as the server does at
        ``timeoutSeconds``); with none open, the next watch opened ends that way."""
        self._generation += 1
        if not self._open:
            self._end_next = True
        self._wake()

    def stored(self, api_version: str, kind: str, namespace: str, name: str) -> Object | None:
        return self.objects.get((api_version, kind, namespace, name))

    def of_kind(self, kind: str) -> list[Object]:
        return [obj for key, obj in sorted(self.objects.items()) if key[1] == kind]

    # --- internals ------------------------------------------------------------------
    def _call(self, verb: str, ref: ObjectRef) -> None:
        self.calls.append((verb, ref))
        for index, (want_verb, want_kind, error) in enumerate(self._failures):
            if want_verb == verb and want_kind in ("", ref.kind):
                del self._failures[index]
                raise error

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _record(self, event_type: str, key: Key, obj: Object) -> None:
        self.version += 1
        if event_type == "DELETED":
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = str(self.version)
        self.history.append((self.version, event_type, key, copy.deepcopy(obj)))
        self._wake()

    def _put(self, event_type: str, ref: ObjectRef, obj: Object) -> Object:
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{uuid.uuid4().hex[:5]}"
            ref = ObjectRef.of(obj)
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", objects.timestamp())
        self.version += 1
        meta["resourceVersion"] = str(self.version)
        self.version -= 1  # _record advances it again, to the same number
        self.objects[key_of(ref)] = obj
        self._record(event_type, key_of(ref), obj)
        return copy.deepcopy(obj)

    def _existing(self, ref: ObjectRef) -> Object:
        found = self.objects.get(key_of(ref))
        if found is None:
            raise errors.NotFoundError(ref, "not found", 404)
        return found

    # --- KubeReader -----------------------------------------------------------------
    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> Object:
        ref = ObjectRef(api_version, kind, namespace, name)
        self._call("get", ref)
        return copy.deepcopy(self._existing(ref))

    async def get_metadata(self, api_version: str, kind: str, namespace: str, name: str) -> Object:
        obj = await self.get(api_version, kind, namespace, name)
        return {"apiVersion": api_version, "kind": kind, "metadata": obj["metadata"]}

    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str,
        labels: Mapping[str, str] | None = None,
        fields: Mapping[str, str] | None = None,
    ) -> list[Object]:
        self._call("list", ObjectRef(api_version, kind, namespace, ""))
        wanted = dict(labels or {})
        return [
            copy.deepcopy(obj)
            for (version, k, ns, _), obj in sorted(self.objects.items())
            if (version, k) == (api_version, kind)
            and (not namespace or ns == namespace)
            and wanted.items() <= (obj["metadata"].get("labels") or {}).items()
            and objects.fields_match(obj, fields or {})
        ]

    # --- KubeWriter -----------------------------------------------------------------
    async def create(self, obj: Mapping[str, Any]) -> Object:
        ref = ObjectRef.of(obj)
        self._call("create", ref)
        if ref.kind == "Event":
            self.events.append(copy.deepcopy(dict(obj)))
            return dict(obj)
        if ref.name and key_of(ref) in self.objects:
            raise errors.ConflictError(ref, "already exists", 409)
        return self._put("ADDED", ref, dict(copy.deepcopy(obj)))

    async def replace(self, obj: Mapping[str, Any]) -> Object:
        ref = ObjectRef.of(obj)
        self._call("replace", ref)
        current = self._existing(ref)
        wanted = (obj.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != current["metadata"]["resourceVersion"]:
            raise errors.ConflictError(ref, "the object has been modified", 409)
        body = dict(copy.deepcopy(obj))
        body["metadata"]["uid"] = current["metadata"]["uid"]
        return self._put("MODIFIED", ref, body)

    async def merge_patch(
        self, api_version: str, kind: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> Object:
        return await self.patch(api_version, kind, namespace, name, patch)

    async def create_event(
        self, involved: Mapping[str, Any], event_type: str, reason: str, message: str
    ) -> None:
        await self.create(objects.event_body(involved, event_type, reason, message))

    # --- KubeWatcher ----------------------------------------------------------------
    async def list_all(
        self,
        api_version: str,
        kind: str,
        namespace: str = "",
        on_page: PageHandler | None = None,
        *,
        fields: Mapping[str, str] | None = None,
    ) -> Listing:
        items = await self.list(api_version, kind, namespace, fields=fields)
        if on_page is not None:
            on_page(items)
        return Listing(items, str(self.version))

    async def watch(
        self,
        api_version: str,
        kind: str,
        resource_version: str,
        namespace: str = "",
        timeout_seconds: int = 300,
    ) -> AsyncIterator[WatchEvent]:
        ref = ObjectRef(api_version, kind, namespace, "")
        self._call("watch", ref)
        seen = int(resource_version or 0)
        if seen < self.compacted:
            raise errors.GoneError(ref, f"too old resource version: {seen}", 410)
        generation = self._generation - 1 if self._end_next else self._generation
        self._end_next = False
        self._open += 1
        try:
            while True:
                changed = self._changed
                for version, event_type, key, obj in list(self.history):
                    wanted = key[:2] == (api_version, kind) and namespace in ("", key[2])
                    if version > seen and wanted:
                        yield WatchEvent(event_type, copy.deepcopy(obj))
                    seen = max(seen, version)
                if generation != self._generation:
                    return
                await changed.wait()
        finally:
            self._open -= 1

    # --- KubeController -------------------------------------------------------------
    async def patch(
        self,
        api_version: str,
        kind: str,
        namespace: str,
        name: str,
        patch: Mapping[str, Any],
        *,
        subresource: str = "",
        strategic: bool = False,
    ) -> Object:
        ref = ObjectRef(api_version, kind, namespace, name)
        self._call(f"patch/{subresource}" if subresource else "patch", ref)
        current = self._existing(ref)
        wanted_uid = (patch.get("metadata") or {}).get("uid")
        if wanted_uid and current["metadata"]["uid"] != wanted_uid:
            raise errors.ConflictError(ref, "Precondition failed: UID in precondition", 409)
        if subresource == "status":
            patch = {"status": patch.get("status")} if "status" in patch else {}
        body = merge(current, patch, strategic=strategic)
        return self._put("MODIFIED", ref, body)

    async def delete(
        self, api_version: str, kind: str, namespace: str, name: str, *, uid: str = ""
    ) -> None:
        ref = ObjectRef(api_version, kind, namespace, name)
        self._call("delete", ref)
        current = self._existing(ref)
        if uid and current["metadata"]["uid"] != uid:
            raise errors.ConflictError(ref, "Precondition failed: UID in precondition", 409)
        self.remove(api_version, kind, namespace, name)

    async def bind(
        self, namespace: str, pod: str, node: str, *, uid: str = "", annotations: Annotations = None
    ) -> None:
        ref = ObjectRef("v1", "Pod", namespace, pod)
        self._call("bind", ref)
        current = self._existing(ref)
        if current.get("spec", {}).get("nodeName"):
            raise errors.ConflictError(ref, "pod is already assigned to a node", 409)
        body = merge(current, {"spec": {"nodeName": node}})
        if annotations:  # the API server copies a Binding's annotations onto the pod
            body = merge(body, {"metadata": {"annotations": dict(annotations)}})
        self._put("MODIFIED", ref, body)
