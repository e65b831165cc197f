"""The flags of ``podmuster run podgrouper``, parsed without importing kopf.

Why: the ``podmuster`` command line builds every subcommand's parser at
start-up; keeping the flags here means ``podmuster schedule`` does not pay
for importing kopf and aiohttp (about a quarter of a second). The operator
itself lives in ``podgrouper.cli`` and is imported only when it runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from liveprocess.flags import add_common_arguments
from podgrouper import selectors, settings

DEFAULT_METRICS_PORT = 8084


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The podgrouper's own flags (KAI podgrouper flag names); the common ones
    (:func:`liveprocess.flags.add_common_arguments`) are added by the caller."""
    defaults = settings.PodGrouperSettings()
    cluster = parser.add_argument_group("cluster")
    cluster.add_argument(
        "--namespace",
        action="append",
        default=[],
        help="watch only this namespace (repeatable; glob patterns allowed; default: all)",
    )
    cluster.add_argument(
        "--peering",
        default="",
        help="kopf peering object name for one active replica (default: standalone; "
        "--leader-elect, a Lease, is the way every component shares)",
    )
    cluster.add_argument(
        "--liveness",
        default="",
        help="kopf's own liveness endpoint, e.g. http://0.0.0.0:8081/healthz (the common "
        "/healthz and /readyz are on --metrics-port)",
    )
    group = parser.add_argument_group("grouping")
    group.add_argument("--scheduler-name", default=defaults.scheduler_name)
    group.add_argument("--queue-label-key", default=defaults.queue_label_key)
    group.add_argument("--nodepool-label-key", default=defaults.nodepool_label_key)
    group.add_argument("--namespace-label-selector", default="", help="e.g. kai=enabled")
    group.add_argument("--pod-label-selector", default="", help="e.g. app in (a,b),!skip")
    group.add_argument("--default-priorities-configmap-name", default="")
    group.add_argument("--default-priorities-configmap-namespace", default="")
    group.add_argument(
        "--knative-gang-schedule",
        choices=("true", "false"),
        default="true",
        help="one PodGroup per Knative Revision (true) or per pod (false)",
    )
    group.add_argument(
        "--max-concurrent-reconciles", type=int, default=defaults.max_concurrent_reconciles
    )


def settings_from_args(args: argparse.Namespace) -> settings.PodGrouperSettings:
    """Validated settings; raises ``ValueError`` (incl. ``SelectorError``) naming the flag."""
    return settings.PodGrouperSettings(
        scheduler_name=args.scheduler_name,
        queue_label_key=args.queue_label_key,
        nodepool_label_key=args.nodepool_label_key,
        namespace_selector=_selector("--namespace-label-selector", args.namespace_label_selector),
        pod_selector=_selector("--pod-label-selector", args.pod_label_selector),
        default_priorities_configmap_name=args.default_priorities_configmap_name,
        default_priorities_configmap_namespace=args.default_priorities_configmap_namespace,
        knative_gang_schedule=args.knative_gang_schedule == "true",
        max_concurrent_reconciles=args.max_concurrent_reconciles,
    )


def _selector(flag: str, text: str) -> selectors.LabelSelector:
    try:
        return selectors.LabelSelector.parse(text)
    except selectors.SelectorError as exc:
        raise selectors.SelectorError(f"{flag}: {exc}") from exc


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``podgrouper`` to a ``run`` subcommand's subparsers (``handler=run``)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "podgrouper",
        help="run the podgrouper operator: PodGroups for pods of the KAI scheduler",
        description="Watch pods and write their PodGroups (KAI podgrouper).",
    )
    add_common_arguments(parser, metrics_port=DEFAULT_METRICS_PORT)
    add_arguments(parser)
    parser.set_defaults(handler=run_operator)
    return parser


def run_operator(args: argparse.Namespace) -> int:
    """Start the operator (imports kopf and aiohttp only now)."""
    from podgrouper import cli  # kopf and aiohttp load only for the live operator

    return cli.run(args)
