"""The real :class:`~podgrouper.kube.Kube`: the Kubernetes REST API over aiohttp.

Why this module exists: the podgrouper needs a dozen calls, not a client library; a
small implementation over aiohttp (already required by kopf) adds no dependency and
maps every failure onto :mod:`podgrouper.kube`'s error tree (the aiohttp error is
chained).  Resource paths come from a built-in table for the kinds the podgrouper
always touches and from API discovery (``/apis/<group>/<version>``, cached) for
workload kinds.  Owners are read as ``PartialObjectMetadata``.
"""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp

from podgrouper import credentials, kube

_BUILTIN: dict[tuple[str, str], tuple[str, bool]] = {
    ("v1", "Pod"): ("pods", True),
    ("v1", "Namespace"): ("namespaces", False),
    ("v1", "ConfigMap"): ("configmaps", True),
    ("v1", "Event"): ("events", True),
    ("scheduling.k8s.io/v1", "PriorityClass"): ("priorityclasses", False),
    ("scheduling.run.ai/v2alpha2", "PodGroup"): ("podgroups", True),
    ("apps/v1", "ReplicaSet"): ("replicasets", True),
    ("apps/v1", "Deployment"): ("deployments", True),
    ("apps/v1", "StatefulSet"): ("statefulsets", True),
    ("batch/v1", "Job"): ("jobs", True),
    ("batch/v1", "CronJob"): ("cronjobs", True),
}
"""(apiVersion, kind) → (plural, namespaced) for the kinds needing no discovery."""

METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"


def ssl_context(creds: credentials.Credentials) -> ssl.SSLContext | bool:
    """TLS settings: the CA (file or data), a client certificate, or no verification."""
    if creds.insecure:
        return False
    ca_data = base64.b64decode(creds.ca_data).decode() if creds.ca_data else None
    context = ssl.create_default_context(cafile=creds.ca_path or None, cadata=ca_data)
    if creds.certificate_path or creds.certificate_data:
        with tempfile.TemporaryDirectory() as tmp:
            cert = _as_file(creds.certificate_path, creds.certificate_data, Path(tmp) / "c")
            key = _as_file(creds.key_path, creds.key_data, Path(tmp) / "k")
            context.load_cert_chain(cert, key or None)
    return context


def _as_file(path: str, data: str, scratch: Path) -> str:
    if path or not data:
        return path
    scratch.write_bytes(base64.b64decode(data))
    return str(scratch)


class KubeHttp:
    """:class:`~podgrouper.kube.Kube` over one aiohttp session (made on first use)."""

    def __init__(self, creds: credentials.Credentials, timeout: float = 30.0) -> None:
        self._creds = creds
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        self._resources = dict(_BUILTIN)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(ssl=ssl_context(self._creds))
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout)
        return self._session

    async def _request(
        self,
        method: str,
        path: str,
        ref: kube.ObjectRef | str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
        accept: str = "application/json",
        content_type: str = "application/json",
    ) -> kube.Object:
        headers = {"Accept": accept}
        token = self._creds.bearer_token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if body is not None:
            headers["Content-Type"] = content_type
        data = json.dumps(body).encode() if body is not None else None
        try:
            async with self._client().request(
                method, self._creds.server + path, data=data, params=params, headers=headers
            ) as response:
                raw = await response.read()
                status, reason = response.status, str(response.reason or "")
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise kube.TransientError(ref, f"{method} {path}: {exc!r}") from exc
        try:
            payload = json.loads(raw) if raw else {}
        except ValueError as exc:
            if status >= 400:
                raise kube.error_for_status(ref, status, reason) from exc
            raise kube.TransientError(ref, f"{method} {path}: not JSON", status) from exc
        if status >= 400:
            message = payload.get("message") if isinstance(payload, dict) else None
            raise kube.error_for_status(ref, status, str(message or reason))
        return payload if isinstance(payload, dict) else {}

    async def _resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        known = self._resources.get((api_version, kind))
        if known is not None:
            return known
        base = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        listing = await self._request("GET", base, f"API {api_version}")
        for resource in listing.get("resources") or []:
            name = str(resource.get("name") or "")
            if "/" not in name:
                entry = (name, bool(resource.get("namespaced")))
                self._resources.setdefault((api_version, str(resource.get("kind"))), entry)
        found = self._resources.get((api_version, kind))
        if found is None:
            raise kube.NotFoundError(f"{api_version} {kind}", "the API server serves no such kind")
        return found

    async def path(self, api_version: str, kind: str, namespace: str, name: str = "") -> str:
        """The REST path of an object (or of the collection when ``name`` is empty)."""
        plural, namespaced = await self._resource(api_version, kind)
        root = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        scope = f"/namespaces/{namespace}" if namespaced and namespace else ""
        return f"{root}{scope}/{plural}" + (f"/{name}" if name else "")

    async def get(self, api_version: str, kind: str, namespace: str, name: str) -> kube.Object:
        ref = kube.ObjectRef(api_version, kind, namespace, name)
        return await self._request("GET", await self.path(api_version, kind, namespace, name), ref)

    async def get_metadata(
        self, api_version: str, kind: str, namespace: str, name: str
    ) -> kube.Object:
        ref = kube.ObjectRef(api_version, kind, namespace, name)
        path = await self.path(api_version, kind, namespace, name)
        partial = await self._request("GET", path, ref, accept=METADATA_ONLY)
        return {"apiVersion": api_version, "kind": kind, "metadata": partial.get("metadata", {})}

    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str,
        labels: Mapping[str, str] | None = None,
    ) -> list[kube.Object]:
        ref = kube.ObjectRef(api_version, kind, namespace, "")
        selector = ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items()))
        listing = await self._request(
            "GET",
            await self.path(api_version, kind, namespace),
            ref,
            params={"labelSelector": selector} if selector else None,
        )
        items = listing.get("items") or []
        return [{"apiVersion": api_version, "kind": kind, **item} for item in items]

    async def create(self, obj: Mapping[str, Any]) -> kube.Object:
        ref = kube.ObjectRef.of(obj)
        path = await self.path(ref.api_version, ref.kind, ref.namespace)
        return await self._request("POST", path, ref, body=obj)

    async def replace(self, obj: Mapping[str, Any]) -> kube.Object:
        ref = kube.ObjectRef.of(obj)
        path = await self.path(ref.api_version, ref.kind, ref.namespace, ref.name)
        return await self._request("PUT", path, ref, body=obj)

    async def merge_patch(
        self, api_version: str, kind: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> kube.Object:
        ref = kube.ObjectRef(api_version, kind, namespace, name)
        path = await self.path(api_version, kind, namespace, name)
        return await self._request(
            "PATCH", path, ref, body=patch, content_type="application/merge-patch+json"
        )

    async def create_event(
        self, involved: Mapping[str, Any], event_type: str, reason: str, message: str
    ) -> None:
        await self.create(kube.event_body(involved, event_type, reason, message))
