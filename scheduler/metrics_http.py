"""A tiny HTTP server for ``/metrics`` (Prometheus text format), ``/healthz`` and ``/readyz``.

Why this module exists: every live component (scheduler, binder, controllers)
must be scrapeable, and one GET handler does not justify a web framework. It
runs on asyncio streams inside the component's event loop and stops with it.

``/healthz`` is liveness: 200 while the process serves at all.  ``/readyz`` is
readiness: 200 while no check of :data:`READINESS` fails, else 503 with one line per
failing check.  Informers register "not listed yet" until their first list is in, and
a leader-elected component registers a check that fails once it lost its lease; a
standby waiting for the lease is ready (as kube-scheduler's standbys are), so a rolling
update is not held up by replicas that are, by design, not leading.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable
from typing import Final

__all__ = ["CONTENT_TYPE", "READINESS", "MetricsServer", "Readiness", "respond", "start_for"]

log = logging.getLogger("podmuster.metrics")

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"


Check = Callable[[], str | None]
"""A readiness check: None while fine, else why the component is not ready."""


class Readiness:
    """The checks ``/readyz`` runs; see the module docstring."""

    def __init__(self) -> None:
        self._checks: dict[int, tuple[str, Check]] = {}
        self._ids = itertools.count()

    def add(self, name: str, check: Check) -> int:
        """Register ``check``; returns the token :meth:`remove` takes."""
        token = next(self._ids)
        self._checks[token] = (name, check)
        return token

    def waiting(self, name: str, reason: str) -> int:
        """A check that fails with ``reason`` until :meth:`remove` (e.g. a first list)."""
        return self.add(name, lambda: reason)

    def remove(self, token: int) -> None:
        self._checks.pop(token, None)

    def failing(self) -> list[str]:
        """``name: reason`` of every failing check, sorted."""
        found = ((name, check()) for name, check in list(self._checks.values()))
        return sorted(f"{name}: {reason}" for name, reason in found if reason is not None)


READINESS: Final = Readiness()
"""The process's checks (one process, one ``/readyz``; ``podmuster run all`` shares it)."""


def respond(
    request_line: str, render: Callable[[], str], readiness: Readiness = READINESS
) -> tuple[int, str, bytes]:
    """Status, content type and body for one request line (``GET /metrics HTTP/1.1``)."""
    parts = request_line.split()
    if len(parts) < 2 or parts[0] not in ("GET", "HEAD"):
        return 405, "text/plain", b"method not allowed\n"
    path = parts[1].split("?", 1)[0]
    if path == "/metrics":
        body = render().encode()
        return 200, CONTENT_TYPE, b"" if parts[0] == "HEAD" else body
    if path == "/healthz":
        return 200, "text/plain", b"ok\n"
    if path == "/readyz":
        failing = readiness.failing()
        if failing:
            return 503, "text/plain", "".join(f"{line}\n" for line in failing).encode()
        return 200, "text/plain", b"ok\n"
    return 404, "text/plain", b"not found\n"


_REASONS: Final = {
    200: "OK",
    404: "Not Found",
    405: "Method Not Allowed",
    503: "Service Unavailable",
}


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
