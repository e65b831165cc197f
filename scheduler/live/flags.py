"""The flags of ``podmuster run scheduler``, parsed without importing aiohttp.

Why: ``podmuster`` builds every subcommand's parser at start-up; the live scheduler's
modules (the client, the informers) load only in :func:`run_scheduler`.
"""

from __future__ import annotations

import argparse
from typing import Any

from liveprocess.flags import add_common_arguments
from scheduler.cache import pools

DEFAULT_METRICS_PORT = 8080


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``scheduler`` to a ``run`` subcommand's subparsers (``handler=run_scheduler``)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "scheduler",
        help="run the scheduler: BindRequests for pending pod groups, every period",
        description="Watch the cluster and schedule pod groups (KAI scheduler).",
    )
    add_common_arguments(parser, metrics_port=DEFAULT_METRICS_PORT)
    parser.add_argument(
        "--scheduler-name",
        default=None,
        help="pods to schedule (default: the --config file's schedulerName, else kai-scheduler)",
    )
    pools.add_arguments(parser)
    add_cycle_arguments(parser)
    add_bind_arguments(parser)
    parser.set_defaults(handler=run_scheduler)
    return parser


def add_cycle_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The scheduling cycle's flags, shared with ``podmuster run all``."""
    parser.add_argument("--config", default="", help="scheduler configuration file (YAML)")
    parser.add_argument(
        "--schedule-period", type=float, default=1.0, help="seconds between cycles (default 1)"
    )
    parser.add_argument(
        "--bind-backoff-limit", type=int, default=3, help="BindRequest spec.backoffLimit"
    )
    parser.add_argument(
        "--usage-prometheus-url",
        default="",
        help="read queue usage for time-based fair share from this Prometheus (KAI's "
        "queries; the --config file's usageDBConfig.usageParams apply; default: the "
        "file's usageDBConfig, else no usage)",
    )


def add_bind_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """How binds are written (``--direct-bind``)."""
    parser.add_argument(
        "--direct-bind",
        action="store_true",
        help="bind pods that need nothing of the binder (no GPU sharing, volume or DRA "
        "claims) through pods/binding: one API call per pod instead of a BindRequest, "
        "the binder's binding and its status (default off: every bind is a BindRequest, "
        "as KAI does)",
    )


def run_scheduler(args: argparse.Namespace) -> int:
    """Start the live scheduler (imports the client and the engine only now)."""
    from scheduler.live import main  # aiohttp loads only for the live scheduler

    return main.main(args)
