"""``podmuster run all``: the podgrouper, scheduler, binder and controllers in one process
(and the node-scale-adjuster with ``--cluster-autoscaling``).

Why this module exists: one event loop runs the four components side by side, each
with its own client (so one component's burst of writes does not queue behind
another's), one ``/metrics`` endpoint and, with ``--leader-elect``, one Lease
(``podmuster-all``) guarding all of them: every component's writes are fenced by it
(:mod:`liveprocess.fencing`). Shutdown is graceful: SIGTERM sets one
stop event; the scheduler finishes its cycle, kopf stops its watches, the binder and
the controllers are cancelled, the Lease is released and the clients closed. If any
component ends on its own (a bug, a lost Lease), the others are stopped and the
process exits 1 so a supervisor restarts it whole.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Coroutine
from typing import Any

from kubeapi import ratelimit
from kubeapi.http import KubeHttp
from kubeapi.protocol import KubeController
from liveprocess import flags, logs, serving
from liveprocess.fencing import FencedWrites
from liveprocess.leader import LeaderElector, identity
from podgrouper import cli as podgrouper_cli
from scheduler.binder.flags import reservation_settings, volume_timeout, workers
from scheduler.binder.reconciler import Binder
from scheduler.cache.pools import NodePool
from scheduler.component import process
from scheduler.config import ConfigError
from scheduler.controllers.reconciler import StatusControllers
from scheduler.live import loop
from scheduler.live.main import config_from
from scheduler.metrics import METRICS
from scheduler.scale_adjuster.deciding import Settings
from scheduler.scale_adjuster.flags import settings_from
from scheduler.scale_adjuster.reconciler import ScaleAdjuster

__all__ = ["main", "serve"]

log = logging.getLogger("podmuster")

GRACE_SECONDS = 10.0
"""How long the scheduler and kopf get to stop cleanly after the stop event."""

CLIENTS = ("scheduler", "binder", "controllers")
"""The components with a client of ours (kopf, in the podgrouper, has its own)."""


def main(args: argparse.Namespace) -> int:
    """Validate every flag before connecting (exit 2 with one line), then serve."""
    try:
        if args.schedule_period <= 0:
            raise ConfigError("--schedule-period: must be > 0")
        if args.debounce < 0:
            raise ConfigError("--debounce: must be >= 0")
        config = config_from(args)
        # The podgrouper groups the pods the scheduler schedules: the file's name, if any.
        args = argparse.Namespace(**{**vars(args), "scheduler_name": config.scheduler_name})
        scaling = settings_from(args) if args.cluster_autoscaling else None
        try:
            workers(args.binder_workers, "--binder-workers")
            reservation_settings(args)  # validated now; used by _run_components
            volume_timeout(args)
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        limit = ratelimit.from_arguments(args)
        prepared = podgrouper_cli.prepare(args)
    except (ConfigError, ratelimit.RateLimitError, *podgrouper_cli.CONFIG_ERRORS) as exc:
        print(f"podmuster run all: {exc}", file=sys.stderr)
        return 2
    logs.configure_from(args)
    options = loop.Options(
        config=config,
        schedule_period=args.schedule_period,
        backoff_limit=args.bind_backoff_limit,
        direct_bind=args.direct_bind,
        # The default pool, by the podgrouper's node-pool label: one key for both.
        pool=NodePool(None, args.nodepool_label_key),
    )
    return asyncio.run(serve(args, options, prepared, limit, scaling))


async def serve(
    args: argparse.Namespace,
    options: loop.Options,
    prepared: podgrouper_cli.Prepared,
    limit: ratelimit.RateLimit | None,
    scaling: Settings | None = None,
) -> int:
    """Run the four components (five with ``scaling``) until SIGTERM (0) or until one of
    them ends (1)."""
    stop = asyncio.Event()
    process.install_signal_handlers(stop)
    creds = prepared.creds  # the podgrouper's, loaded once by prepare()
    # Each client its own bucket of ``limit``, as in separate pods.
    names = (*CLIENTS, "node-scale-adjuster") if scaling is not None else CLIENTS
    clients = {
        name: KubeHttp(creds, component=f"podmuster-{name}", rate_limit=limit) for name in names
    }
    server = serving.start(METRICS.registry, args.metrics_port, flags.health_port(args))
    elector: LeaderElector | None = None
    check: int | None = None
    code = 0
    try:
        if args.leader_elect:
            elector = LeaderElector(
                clients["controllers"],
                flags.lease_namespace(args, creds.namespace),
                identity(),
                name=flags.lease_name(args, "podmuster-all"),
            )
            check = serving.READINESS.add("leader election", elector.readiness)
            if not await elector.acquire(stop):
                return 0
        code = await _run_components(
            args, options, prepared, clients, stop, elector, scaling, limit
        )
    finally:
        if elector is not None:
            await elector.release()
        if check is not None:
            serving.READINESS.remove(check)
        await server.stop()
        for client in clients.values():
            await client.close()
        log.info("stopped", extra={"component": "all"})
    return code


async def _run_components(
    args: argparse.Namespace,
    options: loop.Options,
    prepared: podgrouper_cli.Prepared,
    clients: dict[str, KubeHttp],
    stop: asyncio.Event,
    elector: LeaderElector | None,
    scaling: Settings | None,
    limit: ratelimit.RateLimit | None = None,
) -> int:
    kopf_ready = asyncio.Event()
    writers: dict[str, KubeController] = dict(clients)
    if elector is not None:
        writers = {name: FencedWrites(client, elector.leading) for name, client in clients.items()}
    work: dict[str, Coroutine[Any, Any, Any]] = {
        "scheduler": loop.run(writers["scheduler"], options, stop),
        "binder": Binder(
            writers["binder"],
            workers=args.binder_workers,
            reservations=reservation_settings(args),
            volume_timeout=volume_timeout(args),
        ).run(),
        "controllers": StatusControllers(writers["controllers"], debounce=args.debounce).run(),
        "podgrouper": podgrouper_cli.operate(
            args,
            prepared,
            stop,
            kopf_ready,
            limit=limit,
            fence=None if elector is None else elector.leading,
        ),
    }
    if scaling is not None:
        adjuster = ScaleAdjuster(writers["node-scale-adjuster"], scaling)
        work["node-scale-adjuster"] = adjuster.run()
    if elector is not None:
        work["lease"] = elector.hold(stop)
    tasks = {asyncio.create_task(coro, name=name) for name, coro in work.items()}
    stopping = asyncio.create_task(stop.wait(), name="stop")
    # kopf installs its own SIGTERM handler when it starts; put ours back so one
    # signal stops every component through the same event (kopf watches it too).
    kopf_check = serving.READINESS.waiting("podgrouper", "kopf not started")
    reinstall = asyncio.create_task(_kopf_started(kopf_ready, stop, kopf_check))
    log.info("started", extra={"component": "all", "components": sorted(work)})
    done, _ = await asyncio.wait({*tasks, stopping}, return_when=asyncio.FIRST_COMPLETED)
    code = 0
    if not stop.is_set():
        code = 1
        for task in done:
            if task.cancelled() or task.exception() is None:
                log.error("%s ended; stopping every component", task.get_name())
            else:
                log.error("%s failed", task.get_name(), exc_info=task.exception())
        stop.set()
    reinstall.cancel()
    serving.READINESS.remove(kopf_check)
    await _stop(tasks)
    return code


async def _kopf_started(ready: asyncio.Event, stop: asyncio.Event, check: int) -> None:
    """Once kopf runs: the podgrouper is ready, and our signal handlers are back."""
    await ready.wait()
    serving.READINESS.remove(check)  # kopf has started: the podgrouper is ready
    process.install_signal_handlers(stop)


async def _stop(tasks: set[asyncio.Task[Any]]) -> None:
    """Give the components that stop on the event time to finish; cancel the rest."""
    graceful = {t for t in tasks if t.get_name() in ("scheduler", "podgrouper", "lease")}
    for task in tasks - graceful:
        task.cancel()
    if graceful:
        await asyncio.wait(graceful, timeout=GRACE_SECONDS)
    for task in tasks:
        task.cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for task, result in zip(tasks, results, strict=True):
        if isinstance(result, Exception):
            log.error("%s failed while stopping", task.get_name(), exc_info=result)
