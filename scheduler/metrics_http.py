"""A tiny HTTP server for ``/metrics`` (Prometheus text format) and ``/healthz``.

Why this module exists: every live component (scheduler, binder, controllers)
must be scrapeable, and one GET handler does not justify a web framework. It
runs on asyncio streams inside the component's event loop and stops with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Final

__all__ = ["CONTENT_TYPE", "MetricsServer", "respond", "start_for"]

log = logging.getLogger("podmuster.metrics")

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"


def respond(request_line: str, render: Callable[[], str]) -> tuple[int, str, bytes]:
    """Status, content type and body for one request line (``GET /metrics HTTP/1.1``)."""
    parts = request_line.split()
    if len(parts) < 2 or parts[0] not in ("GET", "HEAD"):
        return 405, "text/plain", b"method not allowed\n"
    path = parts[1].split("?", 1)[0]
    if path == "/metrics":
        body = render().encode()
        return 200, CONTENT_TYPE, b"" if parts[0] == "HEAD" else body
    if path in ("/healthz", "/readyz"):
        return 200, "text/plain", b"ok\n"
    return 404, "text/plain", b"not found\n"


_REASONS: Final = {200: "OK", 404: "Not Found", 405: "Method Not Allowed"}


class MetricsServer:
    """Serves ``render()`` on ``host:port``; ``port=0`` picks a free port (see ``.port``)."""

    def __init__(self, render: Callable[[], str], port: int, host: str = "0.0.0.0") -> None:
        self._render = render
        self._host = host
        self.port = port
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self._host, self.port)
        sockets = self._server.sockets
        if sockets:
            self.port = int(sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            while True:  # skip the headers; a GET has no body
                header = await asyncio.wait_for(reader.readline(), 10)
                if header in (b"\r\n", b"\n", b""):
                    break
            status, ctype, body = respond(line, self._render)
            head = (
                f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\n"
                f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n"
            )
            writer.write(head.encode() + body)
            await writer.drain()
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


async def start_for(render: Callable[[], str], port: int) -> MetricsServer:
    """A started server on ``port`` (0: any free port); ``-1`` or a busy port: none.

    A component keeps working without its endpoint: the port problem is logged.
    """
    server = MetricsServer(render, port)
    if port < 0:
        return server
    try:
        await server.start()
    except OSError as exc:
        log.error("metrics endpoint on port %d: %s", port, exc)
        return server
    log.info("metrics on port %d", server.port)
    return server
