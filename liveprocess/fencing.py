"""Writes fenced by leadership: a client that refuses to write once the lease may be lost.

Why this module exists: a leader-elected component must write nothing after another
replica may have taken over (a replica paused past its lease, or cut off from the API
server, resumes with a cycle's decisions in hand).  Checking the lease in every
component's write paths would be scattered and easy to miss; wrapping the client once
checks it before *every* write, reads and watches passing through untouched.  A refused
write raises :class:`NotLeaderError`, an :class:`~kubeapi.ApiError`, so each component's
existing error handling counts it as a failed write and moves on; the component stops
soon after, when :meth:`~liveprocess.leader.LeaderElector.hold` returns.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from kubeapi.errors import ApiError
from kubeapi.objects import Object
from kubeapi.protocol import Annotations, KubeController, Listing, PageHandler, WatchEvent

__all__ = ["FencedWrites", "NotLeaderError"]


class NotLeaderError(ApiError):
    """A write was refused: this replica may no longer hold the lease."""


class FencedWrites:
    """``api`` with every write preceded by ``leading()``; see the module docstring."""

    def __init__(self, api: KubeController, leading: Callable[[], bool]) -> None:
        self.api = api
        self.leading = leading

    def _check(self, what: str) -> None:
        if not self.leading():
            raise NotLeaderError(what, "not written: the lease may have been lost")

    # --- reads and watches: passed through -----------------------------------------
    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> Object:
        return await self.api.get(api_version, kind, namespace, name)

    async def get_metadata(self, api_version: str, kind: str, namespace: str, name: str) -> Object:
        return await self.api.get_metadata(api_version, kind, namespace, name)

    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str,
        labels: Mapping[str, str] | None = None,
        fields: Mapping[str, str] | None = None,
    ) -> list[Object]:
        return await self.api.list(api_version, kind, namespace, labels, fields)

    async def list_all(
        self,
        api_version: str,
        kind: str,
        namespace: str = "",
        on_page: PageHandler | None = None,
        *,
        fields: Mapping[str, str] | None = None,
    ) -> Listing:
        return await self.api.list_all(api_version, kind, namespace, on_page, fields=fields)

    def watch(
        self,
        api_version: str,
        kind: str,
        resource_version: str,
        namespace: str = "",
        timeout_seconds: int = 300,
    ) -> AsyncIterator[WatchEvent]:
        return self.api.watch(api_version, kind, resource_version, namespace, timeout_seconds)

    # --- writes: fenced -------------------------------------------------------------
    async def create(self, obj: Mapping[str, Any]) -> Object:
        self._check(f"create {obj.get('kind')} {_name(obj)}")
        return await self.api.create(obj)

    async def replace(self, obj: Mapping[str, Any]) -> Object:
        self._check(f"replace {obj.get('kind')} {_name(obj)}")
        return await self.api.replace(obj)

    async def merge_patch(
        self, api_version: str, kind: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> Object:
        self._check(f"patch {kind} {namespace}/{name}")
        return await self.api.merge_patch(api_version, kind, namespace, name, patch)

    async def create_event(
        self, involved: Mapping[str, Any], event_type: str, reason: str, message: str
    ) -> None:
        self._check(f"{reason} Event on {involved.get('kind')} {_name(involved)}")
        await self.api.create_event(involved, event_type, reason, message)

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
        self._check(f"patch {kind} {namespace}/{name}")
        return await self.api.patch(
            api_version, kind, namespace, name, patch, subresource=subresource, strategic=strategic
        )

    async def delete(
        self, api_version: str, kind: str, namespace: str, name: str, *, uid: str = ""
    ) -> None:
        self._check(f"delete {kind} {namespace}/{name}")
        await self.api.delete(api_version, kind, namespace, name, uid=uid)

    async def bind(
        self, namespace: str, pod: str, node: str, *, uid: str = "", annotations: Annotations = None
    ) -> None:
        self._check(f"bind Pod {namespace}/{pod}")
        await self.api.bind(namespace, pod, node, uid=uid, annotations=annotations)


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace, name = meta.get("namespace") or "", meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else str(name)
