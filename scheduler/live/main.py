"""``podmuster run scheduler``: flags → credentials, configuration, client → the loop.

Why this module exists: the start-up a process needs (validate flags and the config
file before connecting, log set-up, signal handlers, closing the client) kept apart
from the loop so the loop can be started in-process by tests with a fake API.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys

from kubeapi import ratelimit
from kubeapi.credentials import CredentialsError
from kubeapi.credentials import load as load_credentials
from kubeapi.http import KubeHttp
from liveprocess import flags, logs, serving
from scheduler.cache import pools
from scheduler.component import process
from scheduler.config import ConfigError, SchedulerConfig, load_config, read_file
from scheduler.live import loop
from scheduler.metrics import METRICS
from scheduler.usage.params import UsageDBConfig


def config_from(args: argparse.Namespace) -> SchedulerConfig:
    """The ``--config`` file's configuration, with ``--scheduler-name`` when given.

    The flag wins only when given: left out (None), or at its built-in default in
    ``podmuster run all`` (whose flag, the podgrouper's, always has a value), the file's
    ``schedulerName`` stays.
    """
    config, data = SchedulerConfig(), None
    if args.config:
        try:
            data = read_file(args.config)
            config = load_config(data)
        except ConfigError as exc:
            raise ConfigError(f"{args.config}: {exc}") from exc
    flag = getattr(args, "scheduler_name", None)
    in_file = isinstance(data, dict) and "schedulerName" in data
    if flag and not (in_file and flag == SchedulerConfig().scheduler_name):
        config = dataclasses.replace(config, scheduler_name=flag)
    url = getattr(args, "usage_prometheus_url", "")
    if url:
        usage = config.usage_db or UsageDBConfig()
        config = dataclasses.replace(
            config,
            usage_db=dataclasses.replace(usage, client_type="prometheus", connection_string=url),
        )
    usage_db = config.usage_db
    if (
        usage_db is not None
        and usage_db.client_type == "prometheus"
        and not usage_db.connection_string.startswith(("http://", "https://"))
    ):
        raise ConfigError(
            "usageDBConfig.connectionString: a prometheus client needs an http(s) URL "
            "(or --usage-prometheus-url)"
        )
    return config


def main(args: argparse.Namespace) -> int:
    try:
        config = config_from(args)
        creds = load_credentials(args.kubeconfig, args.context)
        rate_limit = ratelimit.from_arguments(args)
    except (ConfigError, CredentialsError, ratelimit.RateLimitError) as exc:
        print(f"podmuster run scheduler: {exc}", file=sys.stderr)
        return 2
    if args.schedule_period <= 0:
        print("podmuster run scheduler: --schedule-period: must be > 0", file=sys.stderr)
        return 2
    logs.configure_from(args)
    options = loop.Options(
        config=config,
        schedule_period=args.schedule_period,
        leader_elect=args.leader_elect,
        lease_namespace=flags.lease_namespace(args, creds.namespace),
        lease_name=args.leader_elect_lease_name,
        backoff_limit=args.bind_backoff_limit,
        direct_bind=args.direct_bind,
        pool=pools.from_arguments(args),
        freeze_after_sync=True,
    )

    async def serve() -> int:
        stop = asyncio.Event()
        process.install_signal_handlers(stop)
        api = KubeHttp(creds, component="podmuster-scheduler", rate_limit=rate_limit)
        server = serving.start(METRICS.registry, args.metrics_port, flags.health_port(args))
        try:
            return await loop.run(api, options, stop)
        finally:
            await server.stop()
            await api.close()

    return asyncio.run(serve())
