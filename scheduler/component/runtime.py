"""Process life of a live component: logs, credentials, metrics, leader election, SIGTERM.

Why this module exists: the binder, the status controllers and the scale adjuster
start and stop the same way. Structured logs (``--log-format json``: one JSON object a
line, with the ``extra`` fields), ``/metrics``, ``/healthz`` and ``/readyz``
(:mod:`liveprocess.serving`), an optional Lease so one replica acts
(:mod:`liveprocess.leader`, which the live scheduler uses too; the body's writes are
fenced by it,
:mod:`liveprocess.fencing`), a ``/readyz`` that fails once the lease is lost,
and a graceful shutdown: SIGTERM (or SIGINT) cancels the work, releases the Lease so a
standby takes over at once, and closes the client.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from kubeapi import ratelimit
from kubeapi.credentials import CredentialsError
from kubeapi.credentials import load as load_credentials
from kubeapi.protocol import KubeController
from liveprocess import flags, logs, serving
from liveprocess.fencing import FencedWrites
from liveprocess.leader import LeaderElector, identity
from scheduler.component.process import install_signal_handlers
from scheduler.metrics import METRICS

__all__ = ["run", "serve"]

log = logging.getLogger("podmuster")

Body = Callable[[KubeController], Coroutine[Any, Any, None]]


async def serve(component: str, body: Body, args: argparse.Namespace) -> int:
    """Run ``body`` until SIGTERM/SIGINT (0), lost leadership (1) or its own end."""
    from kubeapi.http import KubeHttp  # aiohttp loads only for a live component

    stop = asyncio.Event()
    install_signal_handlers(stop)
    creds = load_credentials(args.kubeconfig, args.context)
    rate_limit = ratelimit.from_arguments(args)
    api = KubeHttp(creds, component=f"podmuster-{component}", rate_limit=rate_limit)
    elector: LeaderElector | None = None
    check: int | None = None
    code = 0
    server = serving.start(METRICS.registry, args.metrics_port, flags.health_port(args))
    try:
        writer: KubeController = api
        if args.leader_elect:
            namespace = flags.lease_namespace(args, getattr(creds, "namespace", ""))
            name = flags.lease_name(args, f"podmuster-{component}")
            elector = LeaderElector(api, namespace, identity(), name=name)
            check = serving.READINESS.add("leader election", elector.readiness)
            if not await elector.acquire(stop):
                return 0
            writer = FencedWrites(api, elector.leading)
        log.info("started", extra={"component": component})
        tasks: set[asyncio.Task[Any]] = {asyncio.create_task(body(writer))}
        tasks.add(asyncio.create_task(stop.wait()))
        if elector is not None:
            tasks.add(asyncio.create_task(elector.hold(stop)))
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        if not stop.is_set():
            code = 1  # leadership lost or the body ended: let the supervisor restart us
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    log.error("%s failed", component, exc_info=task.exception())
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    finally:
        if elector is not None:
            await elector.release()
        if check is not None:
            serving.READINESS.remove(check)
        await server.stop()
        await api.close()
        log.info("stopped", extra={"component": component})
    return code


def run(component: str, body: Body, args: argparse.Namespace) -> int:
    logs.configure_from(args)
    try:
        return asyncio.run(serve(component, body, args))
    except (CredentialsError, ratelimit.RateLimitError) as exc:
        print(f"podmuster: {exc}", file=sys.stderr)
        return 2
