"""``/metrics`` (by ``prometheus_client``), ``/healthz`` and ``/readyz`` of a component.

Why this module exists: every ``podmuster run`` component must be scrapeable and
probeable the same way. ``prometheus_client`` renders the registry (its WSGI app, so
content negotiation and OpenMetrics come with it); the health endpoints sit beside it on
the same port, or alone on ``--health-port``. The server runs in a daemon thread of
``prometheus_client``'s threading WSGI server, so a scrape never waits for, or delays,
the component's event loop.

``/healthz`` is liveness: 200 while the process serves at all. ``/readyz`` is
readiness: 200 while no check of :data:`READINESS` fails, else 503 with one line per
failing check. Informers register "not listed yet" until their first list is in, the
podgrouper "not started" until kopf runs, and a leader-elected component registers a
check that fails once it lost its lease; a standby waiting for the lease is ready (as
kube-scheduler's standbys are), so a rolling update is not held up by replicas that are,
by design, not leading.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any, Final
from wsgiref.simple_server import WSGIRequestHandler, make_server

import prometheus_client
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import ThreadingWSGIServer

__all__ = ["READINESS", "Endpoints", "Readiness", "app", "new_registry", "start"]

log = logging.getLogger("podmuster.metrics")

Check = Callable[[], str | None]
"""A readiness check: None while fine, else why the component is not ready."""

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
App = Callable[[Environ, StartResponse], Iterable[bytes]]


prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]
"""No ``*_created`` series beside each counter and histogram: KAI exports none."""


def new_registry() -> CollectorRegistry:
    """A registry with the standard ``process_*`` and ``python_*`` collectors on it (every
    component's ``/metrics`` has them; each test can have its own registry)."""
    registry = CollectorRegistry()
    prometheus_client.ProcessCollector(registry=registry)
    prometheus_client.PlatformCollector(registry=registry)
    prometheus_client.GCCollector(registry=registry)
    return registry


class Readiness:
    """The checks ``/readyz`` runs; see the module docstring. Thread-safe."""

    def __init__(self) -> None:
        self._checks: dict[int, tuple[str, Check]] = {}
        self._ids = itertools.count()
        self._lock = threading.Lock()

    def add(self, name: str, check: Check) -> int:
        """Register ``check``; returns the token :meth:`remove` takes."""
        with self._lock:
            token = next(self._ids)
            self._checks[token] = (name, check)
        return token

    def waiting(self, name: str, reason: str) -> int:
        """A check that fails with ``reason`` until :meth:`remove` (e.g. a first list)."""
        return self.add(name, lambda: reason)

    def remove(self, token: int) -> None:
        with self._lock:
            self._checks.pop(token, None)

    def failing(self) -> list[str]:
        """``name: reason`` of every failing check, sorted."""
        with self._lock:
            checks = list(self._checks.values())
        found = ((name, check()) for name, check in checks)
        return sorted(f"{name}: {reason}" for name, reason in found if reason is not None)


READINESS: Final = Readiness()
"""The process's checks (one process, one ``/readyz``; ``podmuster run all`` shares it)."""


def _text(start: StartResponse, status: str, body: str) -> list[bytes]:
    data = body.encode()
    start(
        status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data)))]
    )
    return [data]


def app(registry: CollectorRegistry | None, readiness: Readiness = READINESS) -> App:
    """The WSGI app: ``/healthz``, ``/readyz`` and, with a registry, ``/metrics``."""
    metrics = prometheus_client.make_wsgi_app(registry) if registry is not None else None

    def serve(environ: Environ, start: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            return _text(start, "405 Method Not Allowed", "method not allowed\n")
        if path == "/healthz":
            return _text(start, "200 OK", "ok\n")
        if path == "/readyz":
            failing = readiness.failing()
            if failing:
                return _text(start, "503 Service Unavailable", "".join(f"{f}\n" for f in failing))
            return _text(start, "200 OK", "ok\n")
        if path == "/metrics" and metrics is not None:
            return metrics(environ, start)  # type: ignore[no-any-return]
        return _text(start, "404 Not Found", "not found\n")

    return serve


class _Quiet(WSGIRequestHandler):
    """No access log line per scrape or probe."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server:
    """One listening WSGI server in a daemon thread."""

    def __init__(self, application: App, port: int, host: str) -> None:
        self._httpd = make_server(
            host, port, application, ThreadingWSGIServer, handler_class=_Quiet
        )
        self.port = int(self._httpd.server_port)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class Endpoints:
    """A component's started servers; ``port``/``health_port`` are the bound ports
    (None: not served)."""

    def __init__(self) -> None:
        self._servers: list[_Server] = []
        self.port: int | None = None
        self.health_port: int | None = None

    def _open(self, application: App, port: int, host: str, what: str) -> int | None:
        if port < 0:
            return None
        try:
            server = _Server(application, port, host)
        except OSError as exc:  # a busy port: the component keeps working without it
            log.error("%s endpoint on port %d: %s", what, port, exc)
            return None
        self._servers.append(server)
        log.info("%s on port %d", what, server.port)
        return server.port

    async def stop(self) -> None:
        servers, self._servers = self._servers, []
        for server in servers:
            await asyncio.to_thread(server.stop)


def start(
    registry: CollectorRegistry,
    metrics_port: int,
    health_port: int | None = None,
    *,
    readiness: Readiness = READINESS,
    host: str = "0.0.0.0",
) -> Endpoints:
    """Serve ``/metrics`` (with ``/healthz`` and ``/readyz`` when ``health_port`` is None)
    on ``metrics_port``, and the health endpoints alone on ``health_port`` if given.

    Port 0 picks a free port, -1 turns that server off; a busy port is logged and the
    component keeps running without it.
    """
    endpoints = Endpoints()
    if health_port is None:
        endpoints.port = endpoints._open(app(registry, readiness), metrics_port, host, "metrics")
        endpoints.health_port = endpoints.port
        return endpoints
    endpoints.port = endpoints._open(app(registry, readiness), metrics_port, host, "metrics")
    endpoints.health_port = endpoints._open(app(None, readiness), health_port, host, "health")
    return endpoints
