"""``kubectl podmuster``: why a job waits, the queue tree, allocation by queue.

Why this module exists: ``kubectl`` runs any ``kubectl-<name>`` executable on PATH as
``kubectl <name>``; this is ours (the ``kubectl-podmuster`` console script). It lists the
cluster once through the same informers the dashboard and the scheduler use
(:class:`~podmuster.cluster_watch.ClusterWatch`) and prints, in the scheduler's own
words, what the scheduler wrote: ``explain`` a pod or PodGroup (its
``schedulingConditions`` reasons, scale-up hint, its pods' ``PodScheduled`` messages,
the binder's reasons on its pods' failed BindRequests and its queue's numbers),
``queues`` (deserved, fair share, allocated, limit), ``top`` (what the queue controller
wrote in each ``Queue.status``). ``-o json`` prints the
same document the dashboard's ``/api/state`` serves.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from crds.errors import InputError
from crds.names import POD_GROUP_ANNOTATION
from kubeapi.credentials import Credentials, CredentialsError
from kubeapi.credentials import load as load_credentials
from kubeapi.errors import ApiError
from kubeapi.http import KubeHttp
from podmuster.cluster_view import RESOURCES, amount
from podmuster.cluster_watch import ClusterWatch
from podmuster.kubectl_plugin_parser import PROG, build_parser
from scheduler.cache import pools
from scheduler.config import ConfigError, SchedulerConfig
from scheduler.live.main import config_from

UNITS = {"gpu": "GPU", "cpu": "CPU (m)", "memory": "memory (MB)"}


class PluginError(Exception):
    """A one-line error for the user (exit code 1)."""


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # The informers log each failed list and retry; a one-shot command says it once.
    logging.getLogger("podmuster").setLevel(logging.WARNING if args.verbose else logging.ERROR)
    try:
        config = config_from(args)
        creds = load_credentials(args.kubeconfig, args.context)
        document, text = asyncio.run(_run(args, creds, config))
    except (ConfigError, CredentialsError, InputError, PluginError, ApiError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    try:
        print(json.dumps(document, indent=2) if args.output == "json" else text)
        sys.stdout.flush()
    except BrokenPipeError:  # piped into head: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
    return 0


async def _run(
    args: argparse.Namespace, creds: Credentials, config: SchedulerConfig
) -> tuple[Any, str]:
    namespace = args.namespace or creds.namespace
    api = KubeHttp(creds, component="kubectl-podmuster")
    watch = ClusterWatch(api, config, evictions=False, pool=pools.from_arguments(args))
    running = asyncio.create_task(watch.run())
    try:
        try:
            await asyncio.wait_for(watch.wait_synced(), args.timeout)
        except TimeoutError:
            missing = ", ".join(watch.informers.unsynced())
            raise PluginError(
                f"could not list {missing} within {args.timeout:g}s (-v shows why)"
            ) from None
        if args.command == "explain":
            return explain(watch, namespace, args.target)
        view = watch.view()
        if args.command == "queues":
            return view.queues, queues_text(view.queues)
        rows = top_rows(view.queues)
        return rows, top_text(rows)
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await running
        await api.close()


def resolve(watch: ClusterWatch, namespace: str, target: str) -> tuple[str, str]:
    """``(PodGroup key, what was asked for)``; a pod resolves to its PodGroup."""
    kind, _, name = target.rpartition("/")
    kind, _, api_group = kind.lower().partition(".")  # podgroup.scheduling.run.ai/NAME (-o name)
    if api_group and api_group != ("scheduling.run.ai" if kind.startswith("podgroup") else "v1"):
        raise PluginError(
            f"{target}: only pods and KAI's PodGroups (scheduling.run.ai) are explained"
        )
    objects = watch.informers.objects
    if kind not in ("", "pod", "pods", "po", "podgroup", "podgroups", "pg"):
        raise PluginError(f"{target}: the kind must be pod or podgroup")
    if kind in ("", "podgroup", "podgroups", "pg") and f"{namespace}/{name}" in objects["PodGroup"]:
        return f"{namespace}/{name}", f"PodGroup {namespace}/{name}"
    pod = objects["Pod"].get(f"{namespace}/{name}")
    if pod is None or kind in ("podgroup", "podgroups", "pg"):
        what = {"": "pod or podgroup"}.get(kind, kind)
        raise PluginError(f'{what} "{name}" not found in namespace "{namespace}"')
    group = ((pod.get("metadata") or {}).get("annotations") or {}).get(POD_GROUP_ANNOTATION)
    if not group:
        raise PluginError(
            f"pod {namespace}/{name} has no PodGroup yet (no {POD_GROUP_ANNOTATION} annotation): "
            "is the podgrouper running, and is the pod's schedulerName the scheduler's?"
        )
    return f"{namespace}/{group}", f"Pod {namespace}/{name} (PodGroup {namespace}/{group})"


def explain(watch: ClusterWatch, namespace: str, target: str) -> tuple[Any, str]:
    key, what = resolve(watch, namespace, target)
    entry = watch.explain(key)
    if entry is None:  # resolve found it; gone meanwhile
        raise PluginError(f"PodGroup {key} not found")
    return entry, explain_text(what, entry)


def explain_text(what: str, entry: Mapping[str, Any]) -> str:
    state = "waiting" if entry["waiting"] else "not waiting"
    lines = [
        f"{what}: {state}, {entry['allocated']}/{entry['pods']} pods allocated"
        + (f" (minMember {entry['minMember']})" if entry.get("minMember") is not None else ""),
        f"Queue: {entry['queue']}",
    ]
    if entry["reasons"]:
        lines.append("Why (the scheduler's reasons):" if entry["waiting"] else "Last reasons:")
        lines += [
            f"  {r['reason']}: {r['detail']}"
            + (f" [node pool {r['nodePool']}]" if r["nodePool"] not in ("", "default") else "")
            for r in entry["reasons"]
        ]
    elif entry["waiting"] and entry.get("bindFailures"):
        lines.append("Why: the scheduler placed its pods, but binding them failed (below)")
    elif entry["waiting"] and entry["podMessages"]:
        # a pod whose BindRequest the API server refused says so on its own condition
        lines.append("Why: the group has no scheduling condition; its pods say (below)")
    elif entry["waiting"]:
        lines.append("Why: the scheduler has not considered it yet (no scheduling condition)")
    if entry.get("bindFailures"):
        lines.append("Binding failed (the binder's reasons, from the BindRequests):")
        lines += [
            f"  pod {f['pod']} on node {f['node']}: {f['reason']} "
            + (
                f"(attempt {f['attempts']}; no retry left, the scheduler places it again)"
                if f["final"]
                else f"(attempt {f['attempts']}; the binder retries)"
            )
            for f in entry["bindFailures"]
        ]
    hint = entry.get("scaleUpHint")
    if hint:
        lines.append(f"Scale-up hint: {json.dumps(hint, sort_keys=True)}")
    if entry["podMessages"]:
        lines.append("Pods say (PodScheduled=False):")
        lines += [f"  {message}" for message in entry["podMessages"]]
    numbers = entry.get("queueNumbers")
    if numbers:
        lines.append(f"Queue {entry['queue']}:")
        lines += _table(
            ["", "deserved", "fair share", "allocated", "requested", "limit"],
            [[UNITS[r], *(amount(numbers[c][r]) for c in list(numbers))] for r in RESOURCES],
            indent="  ",
        )
    return "\n".join(lines)


def queues_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """A line per queue, children indented; a cell per resource: deserved/fair/alloc/limit."""
    columns = ("deserved", "fairShare", "allocated", "limit")
    header = ["QUEUE"] + [f"{UNITS[r]} (deserved / fair / alloc / limit)" for r in RESOURCES]
    body = [
        ["  " * row["depth"] + row["queue"]]
        + [" / ".join(amount(row[c][r]) for c in columns) for r in RESOURCES]
        for row in rows
    ]
    return "\n".join([*_table(header, body), *_problems(rows)])


def _problems(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """A line for each queue the scheduler does not use, saying why."""
    return [f"{row['queue']}: {row['problem']}" for row in rows if row.get("problem")]


def top_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per queue: what the queue controller wrote (``status``), beside its fair share."""
    return [
        {
            "queue": row["queue"],
            "parent": row["parent"],
            "allocated": row["status"]["allocated"],
            "allocatedNonPreemptible": row["status"]["allocatedNonPreemptible"],
            "requested": row["status"]["requested"],
            "fairShare": row["fairShare"],
            **({"problem": row["problem"]} if row.get("problem") else {}),
        }
        for row in rows
    ]


def top_text(rows: Sequence[Mapping[str, Any]]) -> str:
    header = ["QUEUE", "ALLOCATED", "NON-PREEMPTIBLE", "REQUESTED", "FAIR SHARE (GPU)"]
    body = [
        [
            row["queue"],
            _resources(row["allocated"]),
            _resources(row["allocatedNonPreemptible"]),
            _resources(row["requested"]),
            amount(row["fairShare"]["gpu"]),
        ]
        for row in rows
    ]
    return "\n".join([*_table(header, body), *_problems(rows)])


def _resources(values: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(values.items())) or "-"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return [
        indent + "  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(r)).rstrip()
        for r in [header, *rows]
    ]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
