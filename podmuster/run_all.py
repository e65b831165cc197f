"""The flags of ``podmuster run all``, parsed without importing kopf or the client.

Why: small clusters and the end-to-end tests want every component (podgrouper,
scheduler, binder, status controllers) in one process with one set of flags. The
flags are the common ones (:mod:`liveprocess.flags`; ``--kube-api-qps`` applies to
each component's client alone), the podgrouper's (KAI names) and the scheduler's, the
binder's and the controllers' own; the components load only in :func:`run_all`.
"""

from __future__ import annotations

import argparse
from typing import Any

from liveprocess.flags import add_common_arguments
from podgrouper import flags as podgrouper_flags
from scheduler.binder.flags import add_reservation_arguments, add_volume_arguments
from scheduler.live.flags import add_bind_arguments, add_cycle_arguments
from scheduler.scale_adjuster.flags import add_adjuster_arguments

__all__ = ["add_parser"]

DEFAULT_METRICS_PORT = 8080


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``all`` to a ``run`` subcommand's subparsers (``handler=run_all``)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "all",
        help="run every component in one process (podgrouper, scheduler, binder, controllers)",
        description="Run the podgrouper, the scheduler, the binder and the status "
        "controllers in one process, for small clusters and tests. Lease: podmuster-all.",
    )
    add_common_arguments(parser, metrics_port=DEFAULT_METRICS_PORT)
    podgrouper_flags.add_arguments(parser)
    live = parser.add_argument_group("scheduler, binder and controllers")
    add_cycle_arguments(live)
    add_bind_arguments(live)
    live.add_argument("--binder-workers", type=int, default=8, help="concurrent BindRequests")
    add_reservation_arguments(live)
    add_volume_arguments(live)
    live.add_argument(
        "--debounce", type=float, default=0.5, help="controllers: seconds to gather changes"
    )
    scaling = parser.add_argument_group("node-scale-adjuster (with --cluster-autoscaling)")
    scaling.add_argument(
        "--cluster-autoscaling",
        action="store_true",
        help="also run the node-scale-adjuster (scaling pods for pending GPU-sharing pods)",
    )
    add_adjuster_arguments(scaling)
    parser.set_defaults(handler=run_all)
    return parser


def run_all(args: argparse.Namespace) -> int:
    """Start every component (imports kopf, aiohttp and the engine only now)."""
    from podmuster import all_in_one

    return all_in_one.main(args)
