"""The flags of ``podmuster run binder``, parsed without importing the client.

Why: ``podmuster`` builds every subcommand's parser at start-up; the binder's
modules (and aiohttp) load only when the binder actually runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from scheduler.controllers.flags import add_common_arguments

__all__ = ["add_parser"]

DEFAULT_METRICS_PORT = 8081


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``binder`` to a ``run`` subcommand's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "binder",
        help="run the binder: bind pods as the scheduler's BindRequests say",
        description="Watch BindRequests, bind their pods, report in their status "
        "(phase, reason, failedAttempts). Lease: podmuster-binder.",
    )
    add_common_arguments(parser, DEFAULT_METRICS_PORT)
    parser.add_argument("--workers", type=int, default=8, help="concurrent BindRequests")
    parser.set_defaults(handler=run_binder)
    return parser


def run_binder(args: argparse.Namespace) -> int:
    from kubeapi import KubeController
    from scheduler.binder.reconciler import Binder
    from scheduler.controllers import runtime

    async def body(api: KubeController) -> None:
        await Binder(api, workers=args.workers).run()

    return runtime.run("binder", body, args)
