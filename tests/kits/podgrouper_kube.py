"""An in-memory Kubernetes API for tests: :class:`FakeKube` (public test kit).

Why this module exists: the podgrouper is tested at the level of our own narrow
interface (:mod:`podgrouper.kube`), not by mocking HTTP.  ``FakeKube`` implements both
protocols over a dict keyed by apiVersion/kind/namespace/name, assigns uids and
resourceVersions like the API server, enforces resourceVersion on replace, records
every call and Event, and can be told to fail given calls with any
:class:`~podgrouper.kube.ApiError` — Forbidden owners, a Conflict on write, a 503.
"""

from __future__ import annotations

import copy
import itertools
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubeapi.errors import ApiError, ConflictError, NotFoundError
from kubeapi.objects import Object, ObjectRef, fields_match
from podgrouper import kube
from tests.kits.fake_kube import key_of, merge

Key = tuple[str, str, str, str]


@dataclass
class _Failure:
    verb: str
    ref: ObjectRef
    error: ApiError
    times: int | None


_key = key_of


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: mappings merge, ``None`` deletes, the rest replaces."""
    return merge(target, patch)


class FakeKube:
    """A :class:`~podgrouper.kube.Kube` kept in memory."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = ()) -> None:
        self.objects: dict[Key, Object] = {}
        self.events: list[Object] = []
        self.calls: list[tuple[str, ObjectRef]] = []
        self._failures: list[_Failure] = []
        self._versions = itertools.count(1)
        for obj in objects:
            self.add(obj)

    # --- setting up -------------------------------------------------------------

    def add(self, obj: Mapping[str, Any]) -> Object:
        """Store ``obj`` as is (no conflict check); uid and resourceVersion are filled in."""
        stored = copy.deepcopy(dict(obj))
        meta = stored.setdefault("metadata", {})
        ref = ObjectRef.of(stored)
        meta.setdefault("uid", str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(_key(ref)))))
        meta["resourceVersion"] = str(next(self._versions))
        self.objects[_key(ref)] = stored
        return copy.deepcopy(stored)

    def fail(
        self,
        verb: str,
        kind: str,
        namespace: str,
        name: str,
        error: type[ApiError] | ApiError,
        *,
        api_version: str = "*",
        times: int | None = None,
    ) -> None:
        """Make ``verb`` (get, get_metadata, list, create, replace, merge_patch, event) on
        that object raise ``error``; ``times`` limits how often (``None``: always)."""
        ref = ObjectRef(api_version, kind, namespace, name)
        if isinstance(error, type):
            error = error(ref, f"injected {error.__name__}")
        self._failures.append(_Failure(verb, ref, error, times))

    def stored(self, api_version: str, kind: str, namespace: str, name: str) -> Object | None:
        """The stored object (a copy), without recording a call."""
        obj = self.objects.get((api_version, kind, namespace, name))
        return copy.deepcopy(obj) if obj is not None else None

    def count(self, verb: str, kind: str | None = None) -> int:
        """How many calls of ``verb`` (on ``kind``) were made."""
        return sum(1 for v, ref in self.calls if v == verb and kind in (None, ref.kind))

    def events_for(self, kind: str, name: str) -> list[Object]:
        """The recorded Events about the object ``kind``/``name``."""
        return [
            e
            for e in self.events
            if (e["involvedObject"]["kind"], e["involvedObject"]["name"]) == (kind, name)
        ]

    # --- the protocols ----------------------------------------------------------

    def _call(self, verb: str, ref: ObjectRef) -> None:
        self.calls.append((verb, ref))
        for failure in self._failures:
            want = failure.ref
            if failure.verb != verb or (want.kind, want.namespace, want.name) != (
                ref.kind,
                ref.namespace,
                ref.name,
            ):
                continue
            if want.api_version not in ("*", ref.api_version):
                continue
            if failure.times is not None:
                if failure.times <= 0:
                    continue
                failure.times -= 1
            raise failure.error

    def _existing(self, ref: ObjectRef) -> Object:
        # a cluster-scoped object (stored without namespace) is found from any namespace,
        # as the real client drops the namespace for cluster-scoped kinds
        obj = self.objects.get(_key(ref)) or self.objects.get(
            (ref.api_version, ref.kind, "", ref.name)
        )
        if obj is None:
            raise NotFoundError(ref, "not found", 404)
        return obj

    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> Object:
        ref = ObjectRef(api_version, kind, namespace, name)
        self._call("get", ref)
        return copy.deepcopy(self._existing(ref))

    async def get_metadata(self, api_version: str, kind: str, namespace: str, name: str) -> Object:
        ref = ObjectRef(api_version, kind, namespace, name)
        self._call("get_metadata", ref)
        obj = self._existing(ref)
        return {"apiVersion": api_version, "kind": kind, "metadata": copy.deepcopy(obj["metadata"])}

    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str,
        labels: Mapping[str, str] | None = None,
        fields: Mapping[str, str] | None = None,
    ) -> list[Object]:
        self._call("list", ObjectRef(api_version, kind, namespace, ""))
        found = []
        for (av, k, ns, _), obj in sorted(self.objects.items()):
            if (av, k) != (api_version, kind) or (namespace and ns != namespace):
                continue
            have = obj["metadata"].get("labels") or {}
            if all(
                have.get(key) == value for key, value in (labels or {}).items()
            ) and fields_match(obj, fields or {}):
                found.append(copy.deepcopy(obj))
        return found

    async def create(self, obj: Mapping[str, Any]) -> Object:
        ref = ObjectRef.of(obj)
        self._call("create", ref)
        if _key(ref) in self.objects:
            raise ConflictError(ref, "already exists", 409)
        return self.add(obj)

    async def replace(self, obj: Mapping[str, Any]) -> Object:
        ref = ObjectRef.of(obj)
        self._call("replace", ref)
        old = self._existing(ref)
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version and version != old["metadata"]["resourceVersion"]:
            raise ConflictError(ref, "the object has been modified", 409)
        new = copy.deepcopy(dict(obj))
        new["metadata"]["uid"] = old["metadata"]["uid"]
        return self.add(new)

    async def merge_patch(
        self, api_version: str, kind: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> Object:
        ref = ObjectRef(api_version, kind, namespace, name)
        self._call("merge_patch", ref)
        result: Object = merge_patch(self._existing(ref), patch)
        return self.add(result)

    async def create_event(
        self, involved: Mapping[str, Any], event_type: str, reason: str, message: str
    ) -> None:
        self._call("event", ObjectRef.of(involved))
        self.events.append(kube.event_body(involved, event_type, reason, message))
