"""KubeHttp against an in-process HTTP server: built-in and discovered resource paths
(discovery cached), cluster-scoped kinds, metadata-only reads, label selectors, merge
patch content type, bearer token, Event bodies, and the error mapping (404, 403, 409, 422,
503, connection refused)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from kubeapi import credentials
from kubeapi import errors as kube
from kubeapi import http as kubehttp

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
DISCOVERY = {
    "resources": [
        {"name": "rayclusters", "kind": "RayCluster", "namespaced": True},
        {"name": "rayclusters/status", "kind": "RayCluster", "namespaced": True},
    ]
}


class Recorder:
    def __init__(self, replies: dict[str, tuple[int, Any]]) -> None:
        self.replies = replies
        self.seen: list[dict[str, Any]] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.seen.append(
            {
                "method": request.method,
                "path": request.path,
                "query": dict(request.query),
                "headers": dict(request.headers),
                "body": json.loads(body) if body else None,
            }
        )
        status, payload = self.replies.get(f"{request.method} {request.path}", (200, {}))
        return web.json_response(payload, status=status)


def serve(
    replies: dict[str, tuple[int, Any]],
    scenario: Callable[[kubehttp.KubeHttp], Awaitable[Any]],
    token: str = "",
) -> tuple[Any, Recorder]:
    recorder = Recorder(replies)

    async def main() -> Any:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", recorder.handle)
        server = TestServer(app)
        await server.start_server()
        client = kubehttp.KubeHttp(
            credentials.Credentials(server=str(server.make_url("")).rstrip("/"), token=token)
        )
        try:
            return await scenario(client)
        finally:
            await client.close()
            await server.close()

    return asyncio.run(main()), recorder


def test_builtin_paths_metadata_reads_and_token() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"}}
    meta, rec = serve(
        {"GET /apis/apps/v1/namespaces/ns/replicasets/rs": (200, {"metadata": {"uid": "u1"}})},
        lambda c: c.get_metadata("apps/v1", "ReplicaSet", "ns", "rs"),
        token="secret",
    )
    assert meta == {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"uid": "u1"}}
    assert "PartialObjectMetadata" in rec.seen[0]["headers"]["Accept"]
    assert rec.seen[0]["headers"]["Authorization"] == "Bearer secret"
    got, rec = serve(
        {"GET /api/v1/namespaces/ns/pods/p": (200, pod)}, lambda c: c.get("v1", "Pod", "ns", "p")
    )
    assert got == pod
    _, rec = serve({}, lambda c: c.get("v1", "Namespace", "", "ns"))
    assert rec.seen[0]["path"] == "/api/v1/namespaces/ns"


def test_discovery_is_used_once_for_other_kinds() -> None:
    async def twice(client: kubehttp.KubeHttp) -> None:
        await client.get("ray.io/v1", "RayCluster", "ns", "a")
        await client.get("ray.io/v1", "RayCluster", "ns", "b")

    _, rec = serve({"GET /apis/ray.io/v1": (200, DISCOVERY)}, twice)
    assert [s["path"] for s in rec.seen] == [
        "/apis/ray.io/v1",
        "/apis/ray.io/v1/namespaces/ns/rayclusters/a",
        "/apis/ray.io/v1/namespaces/ns/rayclusters/b",
    ]


def test_unknown_kind_is_not_found() -> None:
    with pytest.raises(kube.NotFoundError, match=r"ray\.io/v1 RayThing"):
        serve(
            {"GET /apis/ray.io/v1": (200, DISCOVERY)},
            lambda c: c.get("ray.io/v1", "RayThing", "ns", "x"),
        )


def test_list_with_labels_fills_kind() -> None:
    items, rec = serve(
        {"GET /api/v1/namespaces/ns/pods": (200, {"items": [{"metadata": {"name": "a"}}]})},
        lambda c: c.list("v1", "Pod", "ns", {"b": "2", "a": "1"}),
    )
    assert items == [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}}]
    assert rec.seen[0]["query"] == {"labelSelector": "a=1,b=2"}


def test_writes() -> None:
    group = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "ns"},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
    }

    async def writes(client: kubehttp.KubeHttp) -> None:
        await client.create(group)
        await client.replace(group)
        await client.merge_patch("v1", "Pod", "ns", "p", {"metadata": {"labels": {"a": "b"}}})
        await client.create_event(pod, "Warning", "PodGrouperWarning", "broken")

    _, rec = serve({}, writes)
    assert [(s["method"], s["path"]) for s in rec.seen] == [
        ("POST", "/apis/scheduling.run.ai/v2alpha2/namespaces/ns/podgroups"),
        ("PUT", "/apis/scheduling.run.ai/v2alpha2/namespaces/ns/podgroups/pg"),
        ("PATCH", "/api/v1/namespaces/ns/pods/p"),
        ("POST", "/api/v1/namespaces/ns/events"),
    ]
    assert rec.seen[2]["headers"]["Content-Type"] == "application/merge-patch+json"
    event = rec.seen[3]["body"]
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "p",
        "namespace": "ns",
        "uid": "u",
    }
    assert (event["type"], event["reason"], event["message"]) == (
        "Warning",
        "PodGrouperWarning",
        "broken",
    )


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (404, kube.NotFoundError),
        (403, kube.ForbiddenError),
        (409, kube.ConflictError),
        (422, kube.ApiError),
        (503, kube.TransientError),
        (429, kube.TransientError),
    ],
)
def test_error_mapping(status: int, error: type[kube.ApiError]) -> None:
    replies = {"GET /api/v1/namespaces/ns/pods/p": (status, {"message": "says the server"})}
    with pytest.raises(error, match=r"Pod ns/p: says the server") as caught:
        serve(replies, lambda c: c.get("v1", "Pod", "ns", "p"))
    assert type(caught.value) is error
    assert caught.value.status == status


def test_connection_failure_is_transient() -> None:
    async def scenario() -> None:
        client = kubehttp.KubeHttp(credentials.Credentials(server="http://127.0.0.1:9"), 2.0)
        try:
            await client.get("v1", "Pod", "ns", "p")
        finally:
            await client.close()

    with pytest.raises(kube.TransientError, match="Pod ns/p"):
        asyncio.run(scenario())
