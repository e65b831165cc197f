"""The flags of ``podmuster run binder``, parsed without importing the client.

Why: ``podmuster`` builds every subcommand's parser at start-up; the binder's
modules (and aiohttp) load only when the binder actually runs. The GPU reservation
flags are shared with ``podmuster run all`` (:func:`add_reservation_arguments`).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING, Any

from crds.gpusharing import RESERVATION_NAMESPACE
from crds.names import DEFAULT_SCHEDULER_NAME
from liveprocess.flags import add_common_arguments

if TYPE_CHECKING:
    from scheduler.binder.sharing import Settings

__all__ = [
    "add_parser",
    "add_reservation_arguments",
    "add_volume_arguments",
    "reservation_settings",
    "scheduler_name",
    "volume_timeout",
]

DEFAULT_METRICS_PORT = 8081

_LABEL_VALUE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
"""A Kubernetes label value (the name goes on reservation pods), not empty."""


def scheduler_name(name: str, flag: str = "--scheduler-name") -> str:
    """The scheduler name the binder serves (ValueError: empty or not a label value)."""
    if not _LABEL_VALUE.fullmatch(name):
        raise ValueError(
            f"{flag}: {name!r} must be a label value (1-63 letters, digits, '-', '_', '.'; "
            "starting and ending with a letter or digit): reservation pods carry it"
        )
    return name


def add_reservation_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The flags of fractional-GPU reservation pods (KAI's names where KAI has one)."""
    parser.add_argument(
        "--resource-reservation-namespace",
        default=RESERVATION_NAMESPACE,
        help="namespace of the GPU reservation pods (default: kai-resource-reservation)",
    )
    parser.add_argument(
        "--resource-reservation-image",
        default="",
        help="image of the reservation pods; it must write its GPU's UUID on its own pod "
        "(annotation run.ai/reserve_for_gpu_index), as KAI's resource-reservation image does",
    )
    parser.add_argument(
        "--resource-reservation-runtime-class",
        default="",
        help="runtimeClassName of the reservation pods (default: none, as KAI's; set it "
        "when GPU containers need a class, e.g. nvidia)",
    )
    parser.add_argument(
        "--resource-reservation-allocation-timeout",
        type=float,
        default=40.0,
        help="seconds a reservation pod may take to report its GPU before the "
        "BindRequest fails (default: 40)",
    )
    parser.add_argument(
        "--cdi-enabled",
        action="store_true",
        help="name a sharing pod's GPUs as CDI devices (k8s.device-plugin.nvidia.com/gpu="
        "<uuid>) in NVIDIA_VISIBLE_DEVICES, for a container toolkit in CDI mode",
    )
    parser.add_argument(
        "--resource-reservation-grace",
        type=float,
        default=20.0,
        help="seconds an unused reservation pod, or a sharing pod whose reservation pod "
        "is gone, is kept before the sync deletes it (default: 20)",
    )


def add_volume_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The flag of volume binding (scheduler.binder.volumes)."""
    parser.add_argument(
        "--volume-bind-timeout",
        type=float,
        default=600.0,
        help="seconds a pod's PersistentVolumeClaims may take to bind before its "
        "BindRequest fails and the claims' reservations are released (default: 600, "
        "as kube-scheduler's bind timeout)",
    )


def workers(count: int, flag: str = "--workers") -> int:
    """The binder's concurrent BindRequests, as given by ``flag`` (ValueError: below 1,
    a binder that would bind nothing)."""
    if count < 1:
        raise ValueError(f"{flag}: must be >= 1")
    return count


def volume_timeout(args: argparse.Namespace) -> float:
    """``--volume-bind-timeout`` (ValueError: not > 0)."""
    timeout = float(getattr(args, "volume_bind_timeout", 600.0))
    if timeout <= 0:
        raise ValueError("--volume-bind-timeout: must be > 0")
    return timeout


def reservation_settings(args: argparse.Namespace) -> Settings:
    """The :class:`~scheduler.binder.sharing.Settings` of the flags (ValueError: a bad one)."""
    from scheduler.binder.sharing import DEFAULT_IMAGE, Settings

    if args.resource_reservation_allocation_timeout <= 0:
        raise ValueError("--resource-reservation-allocation-timeout: must be > 0")
    if args.resource_reservation_grace < 0:
        raise ValueError("--resource-reservation-grace: must be >= 0")
    if not args.resource_reservation_namespace:
        raise ValueError("--resource-reservation-namespace: must not be empty")
    name = scheduler_name(getattr(args, "scheduler_name", DEFAULT_SCHEDULER_NAME))
    return Settings(
        namespace=args.resource_reservation_namespace,
        image=args.resource_reservation_image or DEFAULT_IMAGE,
        runtime_class=args.resource_reservation_runtime_class,
        timeout=args.resource_reservation_allocation_timeout,
        grace=args.resource_reservation_grace,
        cdi=args.cdi_enabled,
        scheduler_name=name,
    )


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``binder`` to a ``run`` subcommand's subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "binder",
        help="run the binder: bind pods as the scheduler's BindRequests say",
        description="Watch BindRequests, bind their pods, report in their status "
        "(phase, reason, failedAttempts). Fractional-GPU pods first get a reservation "
        "pod per GPU group. Only the pods of --scheduler-name are handled. "
        "Lease: podmuster-binder.",
    )
    add_common_arguments(parser, metrics_port=DEFAULT_METRICS_PORT)
    parser.add_argument(
        "--scheduler-name",
        default=DEFAULT_SCHEDULER_NAME,
        help="bind only the BindRequests of pods with this spec.schedulerName, and sync "
        "only its sharing pods and its own reservation pods (default: kai-scheduler)",
    )
    parser.add_argument("--workers", type=int, default=8, help="concurrent BindRequests")
    add_reservation_arguments(parser)
    add_volume_arguments(parser)
    parser.set_defaults(handler=run_binder)
    return parser


def run_binder(args: argparse.Namespace) -> int:
    try:
        count = workers(args.workers)
        settings = reservation_settings(args)
        timeout = volume_timeout(args)
    except ValueError as exc:
        print(f"podmuster run binder: {exc}", file=sys.stderr)
        return 2

    from kubeapi.protocol import KubeController
    from scheduler.binder.reconciler import Binder
    from scheduler.component import runtime

    async def body(api: KubeController) -> None:
        await Binder(api, workers=count, reservations=settings, volume_timeout=timeout).run()

    return runtime.run("binder", body, args)
