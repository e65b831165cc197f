"""The flags every live component takes, parsed without importing the client.

Why this module exists: the scheduler, binder, controllers and scale adjuster share the
client, leader-election, metrics and logging flags; one definition keeps their names
and defaults the same everywhere (``docs/cli.md`` §6).
"""

from __future__ import annotations

import argparse

from kubeapi import ratelimit


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
