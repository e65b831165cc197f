"""Small requests over keep-alive HTTP/1.1 connections: the pod-binding hot path.

Why this module exists: a scheduler binding 10,000 pods sends 10,000 tiny POSTs. Through
aiohttp each costs about half a millisecond of CPU (request and response objects, URL
parsing, hooks), more than the scheduler spends deciding the pod; on a machine shared
with the API server that CPU is what limits the bind rate. Here a request is one
pre-formatted write, then a read of the status line, the headers and a Content-Length or
chunked body, on a connection kept open for the next request. It serves only calls with
a small body and a small reply, whose failures the caller reports rather than retries;
every other call stays on aiohttp.

A connection is used by one request at a time (no pipelining); the pool holds as many as
were ever in use at once, so concurrency is the caller's to bound. A request that finds
its idle connection closed by the server before any reply is sent again once on a new
connection (the server never saw it); any other failure raises :class:`KeepAliveError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Mapping
from urllib.parse import urlsplit

__all__ = ["KeepAliveError", "KeepAlivePool", "Reply"]

Reply = tuple[int, str, bytes]
"""(status, reason, body)."""

_Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]
_NO_BODY = frozenset({204, 304})


class KeepAliveError(Exception):
    """The connection failed or the reply was not HTTP/1.1 we understand."""


class _Stale(Exception):
    """A reused connection was closed before the reply started: safe to send again."""


class KeepAlivePool:
    """Keep-alive connections to ``server`` (``https://host:port[/prefix]`` or http)."""

    def __init__(self, server: str, tls: ssl.SSLContext | bool, timeout: float) -> None:
        url = urlsplit(server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"server {server!r}: not an http(s) URL")
        self._host = url.hostname
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._prefix = url.path.rstrip("/")
        self._host_header = url.netloc
        self._tls: ssl.SSLContext | None = None
        if url.scheme == "https":
            self._tls = tls if isinstance(tls, ssl.SSLContext) else _unverified()
        self._timeout = timeout
        self._idle: list[_Connection] = []

    async def request(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> Reply:
        lines = [f"{method} {self._prefix}{path} HTTP/1.1", f"Host: {self._host_header}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines.append(f"Content-Length: {len(body)}")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        try:
            async with asyncio.timeout(self._timeout):
                while self._idle:
                    conn = self._idle.pop()
                    if conn[0].at_eof():  # closed by the server while idle
                        conn[1].close()
                        continue
                    try:
                        return await self._exchange(conn, data, reused=True)
                    except _Stale:
                        break
                return await self._exchange(await self._connect(), data, reused=False)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError, _Stale) as exc:
            raise KeepAliveError(f"{method} {path}: {exc!r}") from exc

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for _, writer in idle:
            writer.close()
        for _, writer in idle:
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _connect(self) -> _Connection:
        hostname = self._host if self._tls is not None else None
        return await asyncio.open_connection(
            self._host, self._port, ssl=self._tls, server_hostname=hostname
        )

    async def _exchange(self, conn: _Connection, data: bytes, *, reused: bool) -> Reply:
        reader, writer = conn
        try:
            writer.write(data)
            try:
                status_line = await reader.readline()
            except ConnectionError as exc:
                if reused:
                    raise _Stale(repr(exc)) from exc
                raise
            if not status_line:
                raise _Stale("closed before the reply") if reused else ConnectionResetError()
            version, _, rest = status_line.decode("latin-1").rstrip("\r\n").partition(" ")
            code, _, reason = rest.partition(" ")
            if not version.startswith("HTTP/1.") or not code.isdigit():
                raise ValueError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
            status = int(code)
            length, chunked, keep = await _headers(reader, version == "HTTP/1.1")
            if status in _NO_BODY or 100 <= status < 200:
                body = b""
            elif chunked:
                body = await _chunked(reader)
            elif length is not None:
                body = await reader.readexactly(length)
            else:  # delimited by the end of the connection
                body, keep = await reader.read(), False
        except BaseException:
            writer.close()
            raise
        if keep:
            self._idle.append(conn)
        else:
            writer.close()
        return status, reason, body


async def _headers(reader: asyncio.StreamReader, http11: bool) -> tuple[int | None, bool, bool]:
    """(Content-Length, chunked, keep the connection) from the reply's headers."""
    length: int | None = None
    chunked = False
    keep = http11
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n"):
            return length, chunked, keep
        if not line:
            raise asyncio.IncompleteReadError(b"", None)
        name, _, value = line.decode("latin-1").partition(":")
        name, value = name.strip().lower(), value.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "transfer-encoding":
            chunked = "chunked" in value
        elif name == "connection":
            keep = "close" not in value if http11 else "keep-alive" in value


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        size = int((await reader.readline()).split(b";", 1)[0].strip(), 16)
        if size == 0:
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)


def _unverified() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context
