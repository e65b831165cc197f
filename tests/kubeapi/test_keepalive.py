"""KeepAlivePool against a raw in-process HTTP/1.1 server: connections reused, bodies by
Content-Length, chunks or end of stream, a path prefix kept, an idle connection closed by
the server sent again once on a new one, and failures raised as KeepAliveError."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from kubeapi.keepalive import KeepAliveError, KeepAlivePool

Handler = Callable[[str, asyncio.StreamWriter], Awaitable[bool]]
"""(request line, writer) -> keep the connection open."""


def serve(handler: Handler, scenario: Callable[[KeepAlivePool, list[int]], Awaitable[Any]]) -> Any:
    """Run ``scenario`` against a server calling ``handler`` per request; the list it
    gets holds, per request, the number of the connection it came on."""
    requests: list[int] = []

    async def main() -> Any:
        connections = 0
        open_writers: list[asyncio.StreamWriter] = []

        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal connections
            connections += 1
            open_writers.append(writer)
            number = connections
            while True:
                try:
                    line = (await reader.readline()).decode().rstrip("\r\n")
                except ConnectionError:
                    break
                if not line:
                    break
                length = 0
                while (header := (await reader.readline()).decode().rstrip("\r\n")) != "":
                    if header.lower().startswith("content-length:"):
                        length = int(header.split(":", 1)[1])
                await reader.readexactly(length)
                requests.append(number)
                if not await handler(line, writer):
                    break
            writer.close()

        server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = KeepAlivePool(f"http://127.0.0.1:{port}/prefix", False, 5.0)
        try:
            return await scenario(pool, requests)
        finally:
            await pool.close()
            server.close()
            for writer in open_writers:
                writer.close()
            await asyncio.sleep(0.01)

    return asyncio.run(main())


def reply(writer: asyncio.StreamWriter, status: str, body: bytes, *headers: str) -> None:
    head = [f"HTTP/1.1 {status}", *headers]
    if not any(h.lower().startswith("transfer-encoding") for h in headers):
        head.append(f"Content-Length: {len(body)}")
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)


def test_connections_are_reused_and_the_prefix_kept() -> None:
    lines: list[str] = []

    async def handler(line: str, writer: asyncio.StreamWriter) -> bool:
        lines.append(line)
        reply(writer, "201 Created", b'{"kind":"Status"}')
        return True

    async def scenario(pool: KeepAlivePool, requests: list[int]) -> Any:
        return [await pool.request("POST", f"/api/v1/p{i}", {"A": "b"}, b"{}") for i in range(3)]

    replies = serve(handler, scenario)
    assert replies == [(201, "Created", b'{"kind":"Status"}')] * 3
    assert lines == [f"POST /prefix/api/v1/p{i} HTTP/1.1" for i in range(3)]


def test_one_connection_per_request_in_flight_then_reused() -> None:
    async def handler(line: str, writer: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(0.01)
        reply(writer, "200 OK", b"{}")
        return True

    async def scenario(pool: KeepAlivePool, requests: list[int]) -> list[int]:
        await asyncio.gather(*(pool.request("POST", "/x", {}, b"") for _ in range(3)))
        await asyncio.gather(*(pool.request("POST", "/x", {}, b"") for _ in range(3)))
        return requests

    requests = serve(handler, scenario)
    assert sorted(requests[:3]) == [1, 2, 3]
    assert sorted(requests[3:]) == [1, 2, 3]


def test_chunked_and_end_of_stream_bodies() -> None:
    async def handler(line: str, writer: asyncio.StreamWriter) -> bool:
        if line.startswith("POST /prefix/chunked"):
            chunks = b"4\r\nabcd\r\n3;ext=1\r\nefg\r\n0\r\nTrailer: x\r\n\r\n"
            reply(writer, "200 OK", chunks, "Transfer-Encoding: chunked")
            return True
        writer.write(b"HTTP/1.0 200 OK\r\n\r\nuntil the end")
        return False

    async def scenario(pool: KeepAlivePool, requests: list[int]) -> Any:
        chunked = await pool.request("POST", "/chunked", {}, b"")
        eof = await pool.request("POST", "/eof", {}, b"")
        again = await pool.request("POST", "/chunked", {}, b"")
        return chunked, eof, again, requests

    chunked, eof, again, requests = serve(handler, scenario)
    assert chunked == (200, "OK", b"abcdefg") == again
    assert eof == (200, "OK", b"until the end")
    assert requests == [1, 1, 2]  # the end-of-stream reply closed the first connection


def test_connection_close_is_honoured_and_errors_are_returned_as_replies() -> None:
    async def handler(line: str, writer: asyncio.StreamWriter) -> bool:
        reply(writer, "409 Conflict", b'{"message":"taken"}', "Connection: close")
        return False

    async def scenario(pool: KeepAlivePool, requests: list[int]) -> Any:
        first = await pool.request("POST", "/x", {}, b"")
        await pool.request("POST", "/x", {}, b"")
        return first, requests

    first, requests = serve(handler, scenario)
    assert first == (409, "Conflict", b'{"message":"taken"}')
    assert requests == [1, 2]


def test_an_idle_connection_closed_by_the_server_is_replaced_once() -> None:
    async def handler(line: str, writer: asyncio.StreamWriter) -> bool:
        reply(writer, "200 OK", b"{}")
        return not line.startswith("POST /prefix/last")  # then close, without saying so

    async def scenario(pool: KeepAlivePool, requests: list[int]) -> Any:
        await pool.request("POST", "/last", {}, b"")
        await asyncio.sleep(0.05)  # the server has closed the idle connection
        second = await pool.request("POST", "/x", {}, b"")
        return second, requests

    second, requests = serve(handler, scenario)
    assert second == (200, "OK", b"{}")
    assert requests == [1, 2]


def test_a_connection_dropped_mid_reply_or_garbage_raises() -> None:
    async def handler(line: str, writer: asyncio.StreamWriter) -> bool:
        if "garbage" in line:
            writer.write(b"SMTP ready\r\n\r\n")
        else:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        return False

    async def scenario(pool: KeepAlivePool, requests: list[int]) -> None:
        for path in ("/garbage", "/short"):
            with pytest.raises(KeepAliveError):
                await pool.request("POST", path, {}, b"")

    serve(handler, scenario)


def test_nothing_listening_raises() -> None:
    async def main() -> None:
        pool = KeepAlivePool("http://127.0.0.1:9", False, 1.0)
        with pytest.raises(KeepAliveError):
            await pool.request("POST", "/x", {}, b"")

    asyncio.run(main())


def test_a_server_that_is_not_http_is_refused() -> None:
    with pytest.raises(ValueError, match="not an http"):
        KeepAlivePool("unix:///run/api.sock", False, 1.0)
