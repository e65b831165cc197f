"""The flags every ``podmuster run`` component takes, defined once.

Why this module exists: a platform team configures every component the same way (one
Helm value for the log level reaches all of them), so each common flag has one name,
one meaning and one help text here, and every component's parser gets them from
:func:`add_common_arguments` (``docs/cli.md`` §6). Parsing imports nothing heavy.

Old spellings stay accepted: ``--leader-elect-namespace`` (now
``--leader-elect-lease-namespace``) and the podgrouper's ``--log-format full`` (now
``plain``).
"""

from __future__ import annotations

import argparse
from typing import Final

from kubeapi import ratelimit

__all__ = [
    "LOG_FORMATS",
    "LOG_LEVELS",
    "add_common_arguments",
    "health_port",
    "lease_name",
    "lease_namespace",
]

LOG_FORMATS: Final = ("plain", "json")
LOG_LEVELS: Final = ("debug", "info", "warning", "error")
_OLD_LOG_FORMATS: Final = {"full": "plain"}
"""kopf's ``full`` format, the podgrouper's old default: the same fields as ``plain``."""


def _log_format(text: str) -> str:
    value = _OLD_LOG_FORMATS.get(text, text)
    if value not in LOG_FORMATS:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {text!r} (choose from {', '.join(LOG_FORMATS)})"
        )
    return value


def add_common_arguments(parser: argparse.ArgumentParser, *, metrics_port: int) -> None:
    """The common flags, in one argument group; ``metrics_port`` is this component's
    default ``--metrics-port`` (the only default that differs between components)."""
    group = parser.add_argument_group("common to every podmuster run component")
    group.add_argument(
        "--kubeconfig",
        default="",
        help="kubeconfig file (default: $KUBECONFIG, else the pod's service account when "
        "in a cluster, else ~/.kube/config)",
    )
    group.add_argument("--context", default="", help="kubeconfig context (default: current)")
    ratelimit.add_arguments(group)
    group.add_argument(
        "--leader-elect",
        action="store_true",
        help="hold a coordination.k8s.io Lease so only one replica acts; standbys wait "
        "and take over when it is released or expires",
    )
    group.add_argument(
        "--leader-elect-lease-name",
        default="",
        help="name of the Lease (default: podmuster-COMPONENT; the scheduler's "
        "podmuster-scheduler-POOL with --node-pool)",
    )
    group.add_argument(
        "--leader-elect-lease-namespace",
        "--leader-elect-namespace",
        dest="leader_elect_namespace",
        default="",
        help="namespace of the Lease (default: the kubeconfig's namespace, in a pod its "
        "own; --leader-elect-namespace is the old name)",
    )
    group.add_argument(
        "--metrics-port",
        type=int,
        default=metrics_port,
        help="port of /metrics (and of /healthz and /readyz unless --health-port is "
        "given); 0: any free port, -1: off (default: %(default)s)",
    )
    group.add_argument(
        "--health-port",
        type=int,
        default=None,
        help="serve /healthz and /readyz on this port instead, without /metrics "
        "(default: on the metrics port; -1: off)",
    )
    group.add_argument(
        "--log-level", choices=LOG_LEVELS, default="info", help="log verbosity (default: info)"
    )
    group.add_argument(
        "--log-format",
        type=_log_format,
        default="plain",
        metavar="{plain,json}",
        help="plain text, or one JSON object a line (default: plain)",
    )


def health_port(args: argparse.Namespace) -> int | None:
    """The port of a separate health server, or None for health beside ``/metrics``."""
    port: int | None = getattr(args, "health_port", None)
    if port is None or port == args.metrics_port:
        return None
    return port


def lease_name(args: argparse.Namespace, default: str) -> str:
    """``--leader-elect-lease-name``, else the component's ``default``."""
    return str(getattr(args, "leader_elect_lease_name", "") or default)


def lease_namespace(args: argparse.Namespace, own: str) -> str:
    """``--leader-elect-lease-namespace``, else ``own`` (the kubeconfig's), else default."""
    return str(getattr(args, "leader_elect_namespace", "") or own or "default")
