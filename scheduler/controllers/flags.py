"""The flags of ``podmuster run controllers``, parsed without importing the client.

Why: ``podmuster`` builds every subcommand's parser at start-up; the
controllers' modules (and aiohttp) load only when they actually run.
"""

from __future__ import annotations

import argparse
from typing import Any

from liveprocess.flags import add_common_arguments

__all__ = ["add_parser"]

DEFAULT_METRICS_PORT = 8082


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``controllers`` to a ``run`` subcommand's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "controllers",
        help="run the status controllers: PodGroup and Queue status, queue metrics",
        description="Write PodGroup status.resourcesStatus and Queue status (childQueues, "
        "allocated, allocatedNonPreemptible, requested) and export kai_queue_* metrics. "
        "Lease: podmuster-controllers.",
    )
    add_common_arguments(parser, metrics_port=DEFAULT_METRICS_PORT)
    parser.add_argument(
        "--debounce", type=float, default=0.5, help="seconds to gather changes before a patch"
    )
    parser.set_defaults(handler=run_controllers)
    return parser


def run_controllers(args: argparse.Namespace) -> int:
    from kubeapi.protocol import KubeController
    from scheduler.component import runtime
    from scheduler.controllers.reconciler import StatusControllers

    async def body(api: KubeController) -> None:
        await StatusControllers(api, debounce=args.debounce).run()

    return runtime.run("controllers", body, args)
