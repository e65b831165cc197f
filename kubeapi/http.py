"""The real client: the Kubernetes REST API over aiohttp (:class:`KubeHttp`).

Why this module exists: our components need a few dozen calls, not a client library; a
small implementation over aiohttp (already required by kopf) adds no dependency and maps
every failure onto :mod:`kubeapi.errors` (the aiohttp error is chained).  Resource paths
come from a built-in table for the kinds we always touch and from API discovery
(``/apis/<group>/<version>``, cached) for the rest.  Watches are line-delimited JSON read
in chunks (no line-length limit); an ERROR event with code 410 raises GoneError.
A 401 with an exec-plugin credential forgets the credential and retries once; a plugin
client certificate that rotates gets a new session (a new TLS context).
With ``rate_limit`` every request (list pages and watch starts included) first waits
for a token of its :class:`~kubeapi.ratelimit.RateLimiter`, as client-go's clients do.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp

from kubeapi import credentials, errors, keepalive, objects, ratelimit, transport
from kubeapi.objects import Object, ObjectRef
from kubeapi.protocol import Annotations, Listing, PageHandler, WatchEvent

METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
PAGE = 500


class KubeHttp:
    """:class:`~kubeapi.protocol.KubeController` over one aiohttp session (made on first
    use); ``component`` names the Events' source; ``rate_limit`` (None: unlimited) is
    this client's QPS and burst."""

    def __init__(
        self,
        creds: credentials.Credentials,
        timeout: float = 30.0,
        component: str = "podmuster",
        rate_limit: ratelimit.RateLimit | None = None,
    ) -> None:
        self._creds = creds
        self.limiter = ratelimit.RateLimiter(rate_limit) if rate_limit is not None else None
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        self._resources = dict(transport.BUILTIN)
        self._keepalive: keepalive.KeepAlivePool | None = None
        self._cert = ""
        self._retired: list[aiohttp.ClientSession] = []
        self._retired_pools: list[keepalive.KeepAlivePool] = []
        self.component = component

    async def close(self) -> None:
        for session in self._retired:
            await session.close()
        for pool in self._retired_pools:
            await pool.close()
        self._retired.clear()
        self._retired_pools.clear()
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._keepalive is not None:
            await self._keepalive.close()
            self._keepalive = None

    def _client(self) -> aiohttp.ClientSession:
        try:
            cert = self._creds.client_certificate_pem()[0]
        except credentials.CredentialsError as exc:
            raise errors.TransientError("credentials", str(exc)) from exc
        if cert != self._cert:  # an exec plugin rotated its client certificate
            self._cert = cert
            # The old connections may still carry requests; they are closed in close().
            if self._session is not None:
                self._retired.append(self._session)
                self._session = None
            if self._keepalive is not None:
                self._retired_pools.append(self._keepalive)
                self._keepalive = None
        if self._session is None:
            connector = aiohttp.TCPConnector(ssl=transport.ssl_context(self._creds))
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout)
        return self._session

    def _headers(self, accept: str, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": accept}
        try:
            token = self._creds.bearer_token()
        except credentials.CredentialsError as exc:
            # An exec plugin that fails later (it ran at start-up) may recover: retry.
            raise errors.TransientError("credentials", str(exc)) from exc
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if content_type is not None:
            headers["Content-Type"] = content_type
        return headers

    async def _request(
        self,
        method: str,
        path: str,
        ref: ObjectRef | str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
        accept: str = "application/json",
        content_type: str = "application/json",
    ) -> Object:
        request = (method, path, ref, body, params, accept, content_type)
        status, reason, raw = await self._send(*request)
        if status == 401 and self._creds.invalidate():
            status, reason, raw = await self._send(*request)
        return transport.decode(ref, f"{method} {path}", status, reason, raw)

    async def _send(
        self,
        method: str,
        path: str,
        ref: ObjectRef | str,
        body: Mapping[str, Any] | None,
        params: Mapping[str, str] | None,
        accept: str,
        content_type: str,
    ) -> tuple[int, str, bytes]:
        headers = self._headers(accept, content_type if body is not None else None)
        data = json.dumps(body).encode() if body is not None else None
        if self.limiter is not None:
            await self.limiter.wait()
        try:
            async with self._client().request(
                method, self._creds.server + path, data=data, params=params, headers=headers
            ) as response:
                raw = await response.read()
                status, reason = response.status, str(response.reason or "")
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise errors.TransientError(ref, f"{method} {path}: {exc!r}") from exc
        return status, reason, raw

    async def _resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        known = self._resources.get((api_version, kind))
        if known is not None:
            return known
        listing = await self._request("GET", transport.root(api_version), f"API {api_version}")
        for resource in listing.get("resources") or []:
            name = str(resource.get("name") or "")
            if "/" not in name:
                entry = (name, bool(resource.get("namespaced")))
                self._resources.setdefault((api_version, str(resource.get("kind"))), entry)
        found = self._resources.get((api_version, kind))
        if found is None:
            where = f"{api_version} {kind}"
            raise errors.NotFoundError(where, "the API server serves no such kind")
        return found

    async def path(self, api_version: str, kind: str, namespace: str, name: str = "") -> str:
        """The REST path of an object (or of the collection when ``name`` is empty)."""
        plural, namespaced = await self._resource(api_version, kind)
        scope = f"/namespaces/{namespace}" if namespaced and namespace else ""
        return f"{transport.root(api_version)}{scope}/{plural}" + (f"/{name}" if name else "")

    # --- KubeReader -----------------------------------------------------------------
    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> Object:
        ref = ObjectRef(api_version, kind, namespace, name)
        return await self._request("GET", await self.path(api_version, kind, namespace, name), ref)

    async def get_metadata(self, api_version: str, kind: str, namespace: str, name: str) -> Object:
        ref = ObjectRef(api_version, kind, namespace, name)
        path = await self.path(api_version, kind, namespace, name)
        partial = await self._request("GET", path, ref, accept=METADATA_ONLY)
        return {"apiVersion": api_version, "kind": kind, "metadata": partial.get("metadata", {})}

    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str,
        labels: Mapping[str, str] | None = None,
        fields: Mapping[str, str] | None = None,
    ) -> list[Object]:
        ref = ObjectRef(api_version, kind, namespace, "")
        params = _selectors(labels, fields)
        listing = await self._request(
            "GET", await self.path(api_version, kind, namespace), ref, params=params or None
        )
        items = listing.get("items") or []
        return [{"apiVersion": api_version, "kind": kind, **item} for item in items]

    # --- KubeWriter -----------------------------------------------------------------
    async def create(self, obj: Mapping[str, Any]) -> Object:
        ref = ObjectRef.of(obj)
        path = await self.path(ref.api_version, ref.kind, ref.namespace)
        return await self._request("POST", path, ref, body=obj)

    async def replace(self, obj: Mapping[str, Any]) -> Object:
        ref = ObjectRef.of(obj)
        path = await self.path(ref.api_version, ref.kind, ref.namespace, ref.name)
        return await self._request("PUT", path, ref, body=obj)

    async def merge_patch(
        self, api_version: str, kind: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> Object:
        return await self.patch(api_version, kind, namespace, name, patch)

    async def create_event(
        self, involved: Mapping[str, Any], event_type: str, reason: str, message: str
    ) -> None:
        body = objects.event_body(involved, event_type, reason, message, component=self.component)
        await self.create(body)

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
        ref = ObjectRef(api_version, kind, namespace, "")
        path = await self.path(api_version, kind, namespace)
        items: list[Object] = []
        version = ""
        first = {"limit": str(PAGE), **_selectors(None, fields)}
        # The next page is requested before this one is handed to ``on_page``: the
        # server prepares it while the caller parses this one.
        fetch = asyncio.ensure_future(self._request("GET", path, ref, params=first))
        try:
            while True:
                page = await fetch
                meta = page.get("metadata") or {}
                version = version or str(meta.get("resourceVersion") or "")
                token = str(meta.get("continue") or "")
                if token:  # the same query with the token (its revision, its place)
                    params = {**first, "continue": token}
                    fetch = asyncio.ensure_future(self._request("GET", path, ref, params=params))
                    await asyncio.sleep(0)  # one turn of the loop sends it
                page_items = [
                    {"apiVersion": api_version, "kind": kind, **i} for i in page.get("items") or []
                ]
                items.extend(page_items)
                if on_page is not None:
                    on_page(page_items)
                if not token:
                    return Listing(items, version)
        finally:
            fetch.cancel()

    async def watch(
        self,
        api_version: str,
        kind: str,
        resource_version: str,
        namespace: str = "",
        timeout_seconds: int = 300,
    ) -> AsyncIterator[WatchEvent]:
        ref = ObjectRef(api_version, kind, namespace, "")
        path = await self.path(api_version, kind, namespace)
        params = {
            "watch": "1",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        timeout = aiohttp.ClientTimeout(total=None, sock_read=timeout_seconds + 30)
        url = self._creds.server + path
        if self.limiter is not None:
            await self.limiter.wait()
        try:
            async with self._client().get(
                url, params=params, headers=self._headers("application/json", None), timeout=timeout
            ) as response:
                if response.status >= 400:
                    if response.status == 401:
                        self._creds.invalidate()  # the caller's next watch gets a new one
                    raw = await response.read()
                    transport.decode(ref, f"WATCH {path}", response.status, "", raw)
                async for line in transport.lines(response.content.iter_any()):
                    yield transport.watch_event(ref, api_version, kind, line)
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise errors.TransientError(ref, f"WATCH {path}: {exc!r}") from exc

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
        path = await self.path(api_version, kind, namespace, name)
        path += f"/{subresource}" if subresource else ""
        kind_of_patch = STRATEGIC if strategic else MERGE
        return await self._request("PATCH", path, ref, body=patch, content_type=kind_of_patch)

    async def delete(
        self, api_version: str, kind: str, namespace: str, name: str, *, uid: str = ""
    ) -> None:
        ref = ObjectRef(api_version, kind, namespace, name)
        path = await self.path(api_version, kind, namespace, name)
        body = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}  # type: ignore[assignment]
        await self._request("DELETE", path, ref, body=body)

    async def bind(
        self, namespace: str, pod: str, node: str, *, uid: str = "", annotations: Annotations = None
    ) -> None:
        ref = ObjectRef("v1", "Pod", namespace, pod)
        meta: Object = {"name": pod, "namespace": namespace}
        if uid:
            meta["uid"] = uid
        if annotations:
            meta["annotations"] = dict(annotations)
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        path = await self.path("v1", "Pod", namespace, pod) + "/binding"
        await self._small_request("POST", path, ref, body)

    async def _small_request(
        self, method: str, path: str, ref: ObjectRef, body: Mapping[str, Any]
    ) -> Object:
        """A call with a small body and reply, on :mod:`kubeapi.keepalive` connections."""
        status, reason, raw = await self._small_send(method, path, ref, body)
        if status == 401 and self._creds.invalidate():
            status, reason, raw = await self._small_send(method, path, ref, body)
        return transport.decode(ref, f"{method} {path}", status, reason, raw)

    async def _small_send(
        self, method: str, path: str, ref: ObjectRef, body: Mapping[str, Any]
    ) -> tuple[int, str, bytes]:
        self._client()  # rotates the connections when the client certificate changed
        if self._keepalive is None:
            tls = transport.ssl_context(self._creds)
            self._keepalive = keepalive.KeepAlivePool(
                self._creds.server, tls, self._timeout.total or 30.0
            )
        headers = self._headers("application/json", "application/json")
        data = json.dumps(body, separators=(",", ":")).encode()
        if self.limiter is not None:
            await self.limiter.wait()
        try:
            status, reason, raw = await self._keepalive.request(method, path, headers, data)
        except keepalive.KeepAliveError as exc:
            raise errors.TransientError(ref, str(exc)) from exc
        return status, reason, raw


def _selectors(
    labels: Mapping[str, str] | None, fields: Mapping[str, str] | None
) -> dict[str, str]:
    """The ``labelSelector`` and ``fieldSelector`` query parameters (equality only)."""
    return {
        name: ",".join(f"{k}={v}" for k, v in sorted(wanted.items()))
        for name, wanted in (("labelSelector", labels), ("fieldSelector", fields))
        if wanted
    }
