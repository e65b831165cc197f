"""KubeHttp's controller calls against an in-process server: paged list with its
resourceVersion, watch streams (split chunks, bookmarks, 410 as an ERROR event and as an
HTTP status), status/strategic patches, delete with a uid precondition, pod binding."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from kubeapi import credentials, errors, transport
from kubeapi.http import KubeHttp
from kubeapi.protocol import WatchEvent

Route = Callable[[web.Request], Awaitable[web.StreamResponse]]


def run(route: Route, scenario: Callable[[KubeHttp], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", route)
        server = TestServer(app)
        await server.start_server()
        client = KubeHttp(credentials.Credentials(server=str(server.make_url("")).rstrip("/")))
        try:
            return await scenario(client)
        finally:
            await client.close()
            await server.close()

    return asyncio.run(main())


def test_list_all_follows_continue_tokens_and_keeps_the_first_version() -> None:
    seen: list[dict[str, str]] = []

    async def route(request: web.Request) -> web.StreamResponse:
        seen.append(dict(request.query))
        if "continue" not in request.query:
            meta = {"resourceVersion": "7", "continue": "next"}
            return web.json_response({"metadata": meta, "items": [{"metadata": {"name": "a"}}]})
        meta = {"resourceVersion": "7"}
        return web.json_response({"metadata": meta, "items": [{"metadata": {"name": "b"}}]})

    listing = run(route, lambda c: c.list_all("v1", "Node"))
    assert listing.resource_version == "7"
    assert [i["metadata"]["name"] for i in listing.items] == ["a", "b"]
    assert listing.items[0]["kind"] == "Node"
    assert seen == [{"limit": "500"}, {"limit": "500", "continue": "next"}]


def test_list_all_with_fields_selects_on_every_page_and_keeps_the_first_version() -> None:
    """A field-selected list (one node's pods): the selector goes with each page, since a
    continue token is valid only for the query it came from."""
    seen: list[dict[str, str]] = []

    async def route(request: web.Request) -> web.StreamResponse:
        seen.append(dict(request.query))
        token = {"continue": "next"} if "continue" not in request.query else {}
        meta = {"resourceVersion": "9", **token}
        return web.json_response({"metadata": meta, "items": [{"metadata": {"name": "a"}}]})

    listing = run(route, lambda c: c.list_all("v1", "Pod", fields={"spec.nodeName": "n1"}))
    assert listing.resource_version == "9"
    assert len(listing.items) == 2
    selected = {"limit": "500", "fieldSelector": "spec.nodeName=n1"}
    assert seen == [selected, {**selected, "continue": "next"}]


def test_list_all_hands_each_page_over_once_the_next_one_is_sent() -> None:
    sent: list[str] = []  # the continue token of each request, when its headers went out
    handed: list[tuple[list[str], list[str]]] = []  # (page's names, requests sent by then)

    async def route(request: web.Request) -> web.StreamResponse:
        page = request.query.get("continue", "p1")
        following = {"p1": "p2", "p2": "p3"}.get(page)
        meta = {"resourceVersion": "7", **({"continue": following} if following else {})}
        items = [{"metadata": {"name": f"{page}-{i}"}} for i in range(2)]
        return web.json_response({"metadata": meta, "items": items})

    async def headers_sent(_: Any, __: Any, params: aiohttp.TraceRequestHeadersSentParams) -> None:
        sent.append(params.url.query.get("continue", "p1"))

    async def scenario(client: KubeHttp) -> Any:
        trace = aiohttp.TraceConfig()
        trace.on_request_headers_sent.append(headers_sent)
        client._session = aiohttp.ClientSession(trace_configs=[trace])

        def on_page(items: list[dict[str, Any]]) -> None:
            handed.append(([i["metadata"]["name"] for i in items], list(sent)))

        return await client.list_all("v1", "Pod", on_page=on_page)

    listing = run(route, scenario)
    assert [names for names, _ in handed] == [["p1-0", "p1-1"], ["p2-0", "p2-1"], ["p3-0", "p3-1"]]
    assert [at for _, at in handed] == [["p1", "p2"], ["p1", "p2", "p3"], ["p1", "p2", "p3"]]
    assert len(listing.items) == 6
    assert listing.items[0]["kind"] == "Pod"


def test_watch_reads_lines_across_chunks_and_passes_bookmarks() -> None:
    records = [
        {"type": "ADDED", "object": {"metadata": {"name": "n1", "resourceVersion": "8"}}},
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}},
    ]
    seen: list[dict[str, str]] = []

    async def route(request: web.Request) -> web.StreamResponse:
        seen.append(dict(request.query))
        response = web.StreamResponse()
        await response.prepare(request)
        data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
        for start in range(0, len(data), 7):
            await response.write(data[start : start + 7])
        await response.write_eof()
        return response

    async def scenario(client: KubeHttp) -> list[WatchEvent]:
        return [e async for e in client.watch("v1", "Node", "7", timeout_seconds=5)]

    events = run(route, scenario)
    assert [(e.type, e.resource_version) for e in events] == [("ADDED", "8"), ("BOOKMARK", "9")]
    assert events[0].object["kind"] == "Node"
    assert seen[0] == {
        "watch": "1",
        "resourceVersion": "7",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "5",
    }


@pytest.mark.parametrize("as_status", [True, False])
def test_watch_too_old_raises_gone(as_status: bool) -> None:
    gone = {"kind": "Status", "code": 410, "message": "too old resource version: 1 (5)"}

    async def route(request: web.Request) -> web.StreamResponse:
        if as_status:
            return web.json_response(gone, status=410)
        return web.Response(body=json.dumps({"type": "ERROR", "object": gone}).encode() + b"\n")

    async def scenario(client: KubeHttp) -> None:
        async for _ in client.watch("scheduling.run.ai/v2", "Queue", "1"):
            pass

    with pytest.raises(errors.GoneError, match=r"Queue.*too old"):
        run(route, scenario)


def test_patch_delete_and_bind_requests() -> None:
    seen: list[tuple[str, str, str, Any]] = []

    async def route(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        content = request.headers.get("Content-Type", "")
        seen.append((request.method, request.path, content, json.loads(body) if body else None))
        return web.json_response({})

    async def scenario(client: KubeHttp) -> None:
        status = {"status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}}
        await client.patch("v1", "Pod", "ns", "p", status, subresource="status", strategic=True)
        await client.delete("v1", "Pod", "ns", "p", uid="u1")
        await client.bind("ns", "p", "node-1", uid="u1", annotations={"a": "b"})

    run(route, scenario)
    assert seen[0][:3] == (
        "PATCH",
        "/api/v1/namespaces/ns/pods/p/status",
        "application/strategic-merge-patch+json",
    )
    assert seen[1][:2] == ("DELETE", "/api/v1/namespaces/ns/pods/p")
    assert seen[1][3]["preconditions"] == {"uid": "u1"}
    assert seen[2][1] == "/api/v1/namespaces/ns/pods/p/binding"
    assert seen[2][3]["target"] == {"apiVersion": "v1", "kind": "Node", "name": "node-1"}
    assert seen[2][3]["metadata"]["uid"] == "u1"
    assert seen[2][3]["metadata"]["annotations"] == {"a": "b"}  # copied onto the pod


def test_lease_and_crd_paths_need_no_discovery() -> None:
    assert transport.BUILTIN[("coordination.k8s.io/v1", "Lease")] == ("leases", True)
    assert transport.BUILTIN[("scheduling.run.ai/v2", "Queue")] == ("queues", False)
