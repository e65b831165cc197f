"""``podmuster group``: the PodGroups the podgrouper would create for workloads (docs/cli.md §3).

Why: Ray, Kubeflow and Argo users never write PodGroups; this answers "what
will podmuster make of my workload" offline, from the same adapters the live
podgrouper uses. Every workload given is grouped, whatever its schedulerName.
A workload that cannot be grouped is reported on stderr (one line naming the
file, the object and the problem) while the others are still printed; the
exit code is then 2. What was grouped but not fully understood (a kind whose pods
cannot be made offline, a decision taken at run time) gets one ``warning`` line, so
the user knows which part of the output is a guess; warnings alone leave the exit
code 0.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from crds.documents import load_documents
from crds.errors import InputError
from crds.names import DEFAULT_QUEUE, QUEUE_LABEL
from podmuster import output


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "group",
        help="show the PodGroups the podgrouper would create for workloads, offline",
        description="Show the PodGroups the podgrouper would create for workloads.",
    )
    parser.add_argument("files", nargs="+", help="workload manifests (YAML/JSON); - for stdin")
    parser.add_argument("--pods", action="store_true", help="also print every pod's assignment")
    parser.add_argument("--queue-label-key", default=QUEUE_LABEL)
    parser.add_argument("--default-queue", default=DEFAULT_QUEUE)
    parser.add_argument(
        "--no-knative-gang",
        action="store_true",
        help="group Knative pods one by one (KAI's gangScheduleKnative=false)",
    )
    parser.add_argument(
        "--reproduce-kai-bugs",
        action="store_true",
        help="follow KAI where its behaviour is a documented bug (docs/integrations.md)",
    )
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # Imported here: every podmuster command builds this parser, only group needs the adapters.
    from integrations.base import GroupingSettings
    from integrations.grouping import detail, group_workloads
    from podgrouper import adapters

    problems: list[InputError] = []  # objects that cannot be read: reported, left out
    sourced = load_documents(args.files, stdin=sys.stdin, problems=problems)
    for problem in problems:
        print(f"podmuster: {problem}", file=sys.stderr)
    settings = GroupingSettings(
        queue_label_key=args.queue_label_key,
        default_queue=args.default_queue,
        knative_gang_schedule=not args.no_knative_gang,
        reproduce_kai_bugs=args.reproduce_kai_bugs,
    )
    try:
        # the built-in adapters plus those from podmuster.adapters entry points
        groupers = adapters.build_registry(settings)
    except adapters.AdapterError as exc:
        print(f"podmuster: {exc}", file=sys.stderr)
        return 2
    result = group_workloads([item.obj for item in sourced], settings=settings, groupers=groupers)
    sources = {item.describe(): item.source for item in sourced}
    for item in sourced:  # adapters report namespace-less objects in "default"
        if not item.namespace:
            sources.setdefault(f"{item.kind} default/{item.name}", item.source)
    for label, reports in (("", result.errors), ("warning: ", result.warnings)):
        for report in reports:
            source = sources.get(report.object)
            prefix = f"{source}: " if source else ""
            message = detail(report)
            print(f"podmuster: {label}{prefix}{report.object}: {message}", file=sys.stderr)
    document = result.to_list()
    if args.pods:
        if args.output == "json":
            document = {**document, "pods": result.assignment_dicts()}
            output.write(document, "json")
        else:
            output.write_all([document, {"pods": result.assignment_dicts()}])
    else:
        output.write(document, args.output)
    return 2 if result.errors or problems else 0
