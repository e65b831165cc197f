"""``podmuster demo``: the whole engine on an embedded, simulated cluster (docs/cli.md §4).

Why: it is the first thing a newcomer runs. It needs no Kubernetes: the
cluster, the workload manifests (grouped by the real adapters) and the clock
live in ``podmuster.demo``; this module
only parses the options and picks the output form.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from podmuster import output


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the scheduler on an embedded simulated cluster",
        description="Schedule sample workloads on a simulated GPU cluster and explain the result.",
    )
    parser.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="default text"
    )
    parser.add_argument("--no-color", action="store_true", help="plain text without colors")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # Imported here: every podmuster command builds this parser, only demo needs the story.
    from podmuster.demo import render
    from podmuster.demo.timeline import simulate

    result = simulate()
    if args.output == "json":
        output.write(render.summary(result), "json")
        return 0
    color = not args.no_color and sys.stdout.isatty()
    sys.stdout.write(render.text(result, color=color))
    return 0
