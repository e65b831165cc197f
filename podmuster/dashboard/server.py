"""The dashboard's process: informers, a Starlette app, uvicorn, one event loop.

Why this module exists: the web side kept apart from what it shows
(:mod:`podmuster.cluster_view`) and from the flags; pages are rendered on the server
(jinja2), ``/api/state`` serves the same document as JSON, and the page refreshes
itself by fetching ``/fragment`` every ``--refresh`` seconds (a few lines of inline
script; no build step). ``/healthz`` says whether the informers have listed everything.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from collections.abc import Iterator

import jinja2
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from crds.errors import InputError
from kubeapi import ratelimit
from kubeapi.credentials import CredentialsError
from kubeapi.credentials import load as load_credentials
from kubeapi.http import KubeHttp
from liveprocess import flags as common
from liveprocess import logs
from liveprocess import serving as liveserving
from podmuster.cluster_view import amount
from podmuster.cluster_watch import ClusterWatch
from scheduler.cache import pools
from scheduler.component import process
from scheduler.config import ConfigError
from scheduler.live.main import config_from

log = logging.getLogger("podmuster.dashboard")

VIEW_MAX_AGE = 0.5
"""Seconds a view is served again to other requests (many open pages, one snapshot)."""

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("podmuster.dashboard", "templates"),
    autoescape=jinja2.select_autoescape(["html", "j2"]),
    undefined=jinja2.StrictUndefined,
)


_ENV.filters["amount"] = amount


def render(template: str, watch: ClusterWatch, refresh: float) -> str:
    state = watch.view(VIEW_MAX_AGE).as_dict() if watch.synced else None
    return _ENV.get_template(template).render(
        state=state, refresh_ms=int(refresh * 1000), resources=("gpu", "cpu", "memory")
    )


def app(watch: ClusterWatch, refresh: float) -> Starlette:
    """The web app over ``watch`` (read-only; every route renders the current state)."""

    async def page(request: Request) -> Response:
        return HTMLResponse(render("page.html.j2", watch, refresh))

    async def fragment(request: Request) -> Response:
        return HTMLResponse(render("content.html.j2", watch, refresh))

    async def state(request: Request) -> Response:
        if not watch.synced:
            return JSONResponse({"synced": False}, status_code=503)
        return JSONResponse({"synced": True, **watch.view(VIEW_MAX_AGE).as_dict()})

    async def healthz(request: Request) -> Response:
        ok = watch.synced
        return PlainTextResponse("ok" if ok else "syncing", status_code=200 if ok else 503)

    async def no_icon(request: Request) -> Response:
        return Response(status_code=204)  # browsers ask; a 404 would be a console error

    return Starlette(
        routes=[
            Route("/", page),
            Route("/favicon.ico", no_icon),
            Route("/fragment", fragment),
            Route("/api/state", state),
            Route("/healthz", healthz),
        ]
    )


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: the process's handlers stop it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def main(args: argparse.Namespace) -> int:
    try:
        config = config_from(args)
        creds = load_credentials(args.kubeconfig, args.context)
        rate_limit = ratelimit.from_arguments(args)
    except (ConfigError, CredentialsError, InputError, ratelimit.RateLimitError) as exc:
        print(f"podmuster run dashboard: {exc}", file=sys.stderr)
        return 2
    if args.refresh <= 0:
        print("podmuster run dashboard: --refresh: must be > 0", file=sys.stderr)
        return 2
    logs.configure_from(args)
    if args.leader_elect:
        log.info("--leader-elect: the dashboard only reads, on every replica; no Lease is taken")

    async def serve() -> int:
        stop = asyncio.Event()
        process.install_signal_handlers(stop)
        api = KubeHttp(creds, component="podmuster-dashboard", rate_limit=rate_limit)
        watch = ClusterWatch(api, config, pool=pools.from_arguments(args))
        server = _Server(
            uvicorn.Config(
                app(watch, args.refresh),
                host=args.address,
                port=args.port,
                log_config=None,
                access_log=False,
            )
        )
        endpoints = liveserving.start(
            liveserving.new_registry(), args.metrics_port, common.health_port(args)
        )
        syncing = liveserving.READINESS.add(
            "dashboard informers", lambda: None if watch.synced else "informers not synced yet"
        )
        watching = asyncio.create_task(watch.run(), name="dashboard informers")
        serving = asyncio.create_task(server.serve(), name="dashboard server")
        log.info("dashboard on http://%s:%d/", args.address, args.port)
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({watching, serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
        server.should_exit = True
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
        await serving
        stopped.cancel()
        liveserving.READINESS.remove(syncing)
        await endpoints.stop()
        await api.close()
        return 0 if stop.is_set() else 1

    return asyncio.run(serve())
