"""The flags of ``podmuster run dashboard``, parsed without importing the web server.

Why: ``podmuster`` builds every subcommand's parser at start-up; Starlette, uvicorn and
the client load only in :func:`run_dashboard`.
"""

from __future__ import annotations

import argparse
from typing import Any

from liveprocess import flags as common
from scheduler.cache import pools


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``dashboard`` to a ``run`` subcommand's subparsers (``handler=run_dashboard``)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "dashboard",
        help="serve a web page: queues and shares, waiting gangs and why, evictions",
        description="Serve a read-only web dashboard of the scheduler's queues, waiting "
        "pod groups (with the scheduler's reasons and scale-up hints) and recent evictions.",
    )
    parser.add_argument(
        "--config", default="", help="the scheduler's configuration file (YAML), for its shares"
    )
    parser.add_argument(
        "--scheduler-name",
        default=None,
        help="pods to show (default: the --config file's schedulerName, else kai-scheduler)",
    )
    pools.add_arguments(parser, pools.SHOW_POOL_HELP)  # this node pool's scheduler's view
    parser.add_argument("--address", default="0.0.0.0", help="address to listen on")
    parser.add_argument("--port", type=int, default=8090, help="port to listen on (default 8090)")
    parser.add_argument(
        "--refresh", type=float, default=2.0, help="seconds between page refreshes (default 2)"
    )
    common.add_common_arguments(parser, metrics_port=-1)
    parser.set_defaults(handler=run_dashboard)
    return parser


def run_dashboard(args: argparse.Namespace) -> int:
    """Start the dashboard (imports the client and the web server only now)."""
    from podmuster.dashboard import server

    return server.main(args)
