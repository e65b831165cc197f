"""The narrow async API our components program against, as protocols.

Why this module exists: the podgrouper, the scheduler and the binder each need a dozen
calls, not a client library.  Naming that surface as small protocols lets each component
run against an in-memory fake in tests (:mod:`tests.kits.fake_kube`) and against
:class:`kubeapi.http.KubeHttp` in a cluster, with no HTTP library type in its signature.

* :class:`KubeReader` / :class:`KubeWriter` (= :class:`Kube`): get, list, create,
  replace, merge patch, Events — what a reconciler needs.
* :class:`KubeWatcher`: a consistent list with its ``resourceVersion`` and a watch
  stream from it — what an informer needs.
* :class:`KubeController`: all of the above plus patch with a subresource (``status``)
  and a strategic-merge option, delete (with a uid precondition) and the
  ``pods/{name}/binding`` subresource.

Every method raises :mod:`kubeapi.errors` only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubeapi.objects import Object


@dataclass(frozen=True, slots=True)
class Listing:
    """A complete list of a kind and the ``resourceVersion`` to watch from."""

    items: list[Object]
    resource_version: str


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """``type`` is ADDED, MODIFIED, DELETED or BOOKMARK (ERROR events are raised)."""

    type: str
    object: Object

    @property
    def resource_version(self) -> str:
        return str((self.object.get("metadata") or {}).get("resourceVersion") or "")


class KubeReader(Protocol):
    """Reads objects; ``namespace`` is empty for cluster-scoped kinds."""

    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> Object:
        """The whole object; raises :class:`~kubeapi.errors.NotFoundError` when absent."""
        ...

    async def get_metadata(self, api_version: str, kind: str, namespace: str, name: str) -> Object:
        """apiVersion, kind and metadata only."""
        ...

    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str,
        labels: Mapping[str, str] | None = None,
        fields: Mapping[str, str] | None = None,
    ) -> list[Object]:
        """Objects of a kind in ``namespace`` (all namespaces if empty) whose labels
        include ``labels`` and whose fields (dotted paths, as a ``fieldSelector``, e.g.
        ``spec.nodeName``) equal ``fields``."""
        ...


class KubeWriter(Protocol):
    """Writes objects; every method returns the object as stored."""

    async def create(self, obj: Mapping[str, Any]) -> Object:
        """Create ``obj``; :class:`~kubeapi.errors.ConflictError` when it exists."""
        ...

    async def replace(self, obj: Mapping[str, Any]) -> Object:
        """Replace ``obj`` (PUT); ``metadata.resourceVersion`` guards against races."""
        ...

    async def merge_patch(
        self, api_version: str, kind: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> Object:
        """Apply a JSON merge patch (RFC 7386)."""
        ...

    async def create_event(
        self, involved: Mapping[str, Any], event_type: str, reason: str, message: str
    ) -> None:
        """Record a core/v1 Event about ``involved``."""
        ...


class Kube(KubeReader, KubeWriter, Protocol):
    """Both halves, as a reconciler needs them."""


PageHandler = Callable[[list[Object]], None]
"""Called with each page of a list as it arrives."""
Annotations = Mapping[str, str] | None
"""Annotations a Binding carries; the API server copies them onto the pod it binds."""


class KubeWatcher(Protocol):
    """List-then-watch, as an informer needs it."""

    async def list_all(
        self,
        api_version: str,
        kind: str,
        namespace: str = "",
        on_page: PageHandler | None = None,
        *,
        fields: Mapping[str, str] | None = None,
    ) -> Listing:
        """Every object of a kind (paged by the server) and the list's resourceVersion;
        :class:`~kubeapi.errors.GoneError` if a page's continue token expired.
        ``on_page`` gets each page's objects as it arrives (the next page may be in
        flight meanwhile), so a caller can work on them before the list is complete.
        With ``fields`` (as :meth:`KubeReader.list`), only the objects whose fields equal
        them: a consistent read of part of a kind, with the revision it was made at."""
        ...

    def watch(
        self,
        api_version: str,
        kind: str,
        resource_version: str,
        namespace: str = "",
        timeout_seconds: int = 300,
    ) -> AsyncIterator[WatchEvent]:
        """Changes after ``resource_version`` (bookmarks included) until the server
        ends the stream; :class:`~kubeapi.errors.GoneError` when it is too old."""
        ...


class KubeController(Kube, KubeWatcher, Protocol):
    """What a controller writes besides plain objects."""

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
        """Merge patch (strategic merge for built-in kinds if ``strategic``), on the
        object or on a subresource such as ``status``."""
        ...

    async def delete(
        self, api_version: str, kind: str, namespace: str, name: str, *, uid: str = ""
    ) -> None:
        """Delete an object; with ``uid`` only that incarnation (else ConflictError)."""
        ...

    async def bind(
        self, namespace: str, pod: str, node: str, *, uid: str = "", annotations: Annotations = None
    ) -> None:
        """POST a core/v1 Binding to ``pods/{pod}/binding``; the API server copies the
        Binding's ``annotations`` onto the pod in the same write."""
        ...
