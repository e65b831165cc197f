"""The command line of ``kubectl podmuster``, apart from the command itself.

Why: kubectl completes the plugin's words by running ``kubectl_complete-podmuster``
(:mod:`podmuster.completion.kubectl`) on every Tab; it needs this parser, and not the
API client and informers :mod:`podmuster.kubectl_plugin` imports to run a command.
"""

from __future__ import annotations

import argparse

from podmuster import help_examples
from scheduler.cache import pools

PROG = "kubectl podmuster"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Why a pod group waits, the queue tree and allocation by queue, "
        "as the podmuster (KAI) scheduler sees them.",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-n", "--namespace", default="", help="namespace (default: context's)")
    common.add_argument("--kubeconfig", default="", help="kubeconfig file")
    common.add_argument("--context", default="", help="kubeconfig context")
    common.add_argument("-o", "--output", choices=("text", "json"), default="text")
    common.add_argument("--config", default="", help="the scheduler's configuration file")
    common.add_argument("--scheduler-name", default=None, help="default: kai-scheduler")
    common.add_argument(
        "--timeout", type=float, default=60.0, help="seconds to wait for the listing"
    )
    common.add_argument(
        "-v", "--verbose", action="store_true", help="log the client's warnings (retries)"
    )
    pools.add_arguments(common, pools.SHOW_POOL_HELP)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    explain = commands.add_parser(
        "explain", parents=[common], help="why a pod or PodGroup waits (the scheduler's reasons)"
    )
    explain.add_argument("target", metavar="POD|PODGROUP", help="NAME, pod/NAME or podgroup/NAME")
    commands.add_parser("queues", parents=[common], help="the queue tree with shares")
    commands.add_parser("top", parents=[common], help="allocation by queue (Queue status)")
    help_examples.attach(parser, help_examples.KUBECTL_PODMUSTER)
    return parser
