"""The flags of ``podmuster run node-scale-adjuster``, parsed without importing the client.

Why: ``podmuster`` builds every subcommand's parser at start-up; the adjuster's
modules (and aiohttp) load only when it runs. ``podmuster run all
--cluster-autoscaling`` takes the same adjuster flags through
:func:`add_adjuster_arguments` and :func:`settings_from`.
"""

from __future__ import annotations

import argparse
from typing import Any

from liveprocess.flags import add_common_arguments
from scheduler.config import ConfigError
from scheduler.scale_adjuster.deciding import Settings

__all__ = ["add_adjuster_arguments", "add_parser", "settings_from"]

DEFAULT_METRICS_PORT = 8083
DEFAULTS = Settings()


def add_adjuster_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The scaling-pod flags (without ``--scheduler-name``, which callers add or share)."""
    parser.add_argument(
        "--scaling-pod-namespace",
        default=DEFAULTS.namespace,
        help="namespace of the scaling pods (must exist)",
    )
    parser.add_argument(
        "--scaling-pod-image", default=DEFAULTS.image, help="image of the scaling pods"
    )
    parser.add_argument(
        "--gpu-memory-to-fraction-ratio",
        type=float,
        default=DEFAULTS.gpu_memory_to_fraction_ratio,
        help="GPU share a gpu-memory pod counts per device",
    )
    parser.add_argument(
        "--scale-cool-down-seconds",
        type=float,
        default=DEFAULTS.cool_down,
        help="no new scaling pods for this long after one is deleted",
    )


def settings_from(args: argparse.Namespace) -> Settings:
    """Validated settings; a bad value raises ConfigError naming the flag."""
    ratio = float(args.gpu_memory_to_fraction_ratio)
    if not 0 < ratio <= 1:
        raise ConfigError(f"--gpu-memory-to-fraction-ratio: must be in (0, 1], got {ratio:g}")
    if args.scale_cool_down_seconds < 0:
        raise ConfigError("--scale-cool-down-seconds: must be >= 0")
    if not args.scaling_pod_namespace:
        raise ConfigError("--scaling-pod-namespace: must not be empty")
    return Settings(
        scheduler_name=args.scheduler_name,
        namespace=args.scaling_pod_namespace,
        gpu_memory_to_fraction_ratio=ratio,
        cool_down=float(args.scale_cool_down_seconds),
        image=args.scaling_pod_image,
    )


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``node-scale-adjuster`` to a ``run`` subcommand's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "node-scale-adjuster",
        help="run the node-scale-adjuster: whole-GPU scaling pods for pending GPU-sharing pods",
        description="For pods with gpu-fraction/gpu-memory that the scheduler marked "
        "Unschedulable, create whole-GPU scaling pods (default scheduler, "
        "PodScheduled=False) so cluster-autoscaler or Karpenter add GPU nodes; delete "
        "them when no longer needed. Lease: podmuster-node-scale-adjuster.",
    )
    add_common_arguments(parser, metrics_port=DEFAULT_METRICS_PORT)
    parser.add_argument("--scheduler-name", default=DEFAULTS.scheduler_name)
    add_adjuster_arguments(parser)
    parser.add_argument(
        "--debounce",
        type=float,
        default=1.0,
        help="seconds to gather pod changes (a reconcile reads every pod)",
    )
    parser.set_defaults(handler=run_adjuster)
    return parser


def run_adjuster(args: argparse.Namespace) -> int:
    import sys

    try:
        settings = settings_from(args)
        if args.debounce < 0:
            raise ConfigError("--debounce: must be >= 0")
    except ConfigError as exc:
        print(f"podmuster run node-scale-adjuster: {exc}", file=sys.stderr)
        return 2

    from kubeapi.protocol import KubeController
    from scheduler.component import runtime
    from scheduler.scale_adjuster.reconciler import ScaleAdjuster

    async def body(api: KubeController) -> None:
        await ScaleAdjuster(api, settings, debounce=args.debounce).run()

    return runtime.run("node-scale-adjuster", body, args)
