"""The flags of ``podmuster run controllers``, parsed without importing the client.

Why: ``podmuster`` builds every subcommand's parser at start-up; the
controllers' modules (and aiohttp) load only when they actually run.
"""

from __future__ import annotations

import argparse
from typing import Any

from kubeapi import ratelimit

__all__ = ["add_common_arguments", "add_leader_arguments", "add_metrics_argument", "add_parser"]

DEFAULT_METRICS_PORT = 8082


def add_common_arguments(parser: argparse.ArgumentParser, metrics_port: int) -> None:
    """The flags every live component shares."""
    parser.add_argument("--kubeconfig", default="", help="kubeconfig file (default: the usual)")
    parser.add_argument("--context", default="", help="kubeconfig context (default: current)")
    ratelimit.add_arguments(parser)
    add_leader_arguments(parser)
    add_metrics_argument(parser, metrics_port)
    parser.add_argument("--log-format", choices=("plain", "json"), default="plain")
    parser.add_argument("--log-level", choices=("debug", "info", "warning"), default="info")


def add_leader_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--leader-elect`` and ``--leader-elect-namespace``."""
    parser.add_argument(
        "--leader-elect",
        action="store_true",
        help="hold a Lease so only one replica acts (standbys wait)",
    )
    parser.add_argument(
        "--leader-elect-namespace", default="", help="namespace of the Lease (default: own)"
    )


def add_metrics_argument(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, metrics_port: int
) -> None:
    """``--metrics-port`` with this component's default."""
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=metrics_port,
        help="port of /metrics and /healthz (0: any free port, -1: off)",
    )


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``controllers`` to a ``run`` subcommand's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "controllers",
        help="run the status controllers: PodGroup and Queue status, queue metrics",
        description="Write PodGroup status.resourcesStatus and Queue status (childQueues, "
        "allocated, allocatedNonPreemptible, requested) and export kai_queue_* metrics. "
        "Lease: podmuster-controllers.",
    )
    add_common_arguments(parser, DEFAULT_METRICS_PORT)
    parser.add_argument(
        "--debounce", type=float, default=0.5, help="seconds to gather changes before a patch"
    )
    parser.set_defaults(handler=run_controllers)
    return parser


def run_controllers(args: argparse.Namespace) -> int:
    from kubeapi.protocol import KubeController
    from scheduler.controllers import runtime
    from scheduler.controllers.reconciler import StatusControllers

    async def body(api: KubeController) -> None:
        await StatusControllers(api, debounce=args.debounce).run()

    return runtime.run("controllers", body, args)
