"""``podmuster schedule``: run scheduling cycles on a snapshot offline (docs/cli.md §2).

Why: this is how a KAI or podmuster user asks "what would the scheduler do
with this cluster, and why is my job pending" without touching a cluster.
With ``--rounds N`` it also answers "and then?": cycle after cycle, each
one's decisions carried out by ``scheduler.rounds`` before the next.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence, Set
from datetime import UTC, datetime
from typing import Any

from crds.documents import load_documents
from crds.errors import InputError, shown
from crds.meta import rfc3339_seconds
from crds.names import POD_GROUP_ANNOTATION
from podmuster import output
from podmuster.implicit_groups import add_implicit_pod_groups
from scheduler.api.pods import PodInfo, PodStatus
from scheduler.api.resources import GPU_UNIT
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.cache import pools
from scheduler.cache.reading import key_of
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import ConfigError, SchedulerConfig, load_config, read_file
from scheduler.cycle import Bind, CycleResult, PodGroupOutcome
from scheduler.rounds import Round, play
from scheduler.usage.given import parse_given_usage


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "schedule",
        help="run scheduling cycles on a cluster snapshot, offline",
        description="Run scheduling cycles on a snapshot and print what the scheduler decided.",
    )
    parser.add_argument(
        "snapshot", nargs="+", help="YAML/JSON files with cluster objects; - for stdin"
    )
    parser.add_argument("--actions", help="comma-separated actions to run, in order")
    parser.add_argument("--config", help="scheduler configuration file (YAML)")
    parser.add_argument("--now", help="the clock, RFC 3339 (default: now)")
    parser.add_argument(
        "--usage",
        metavar="FILE",
        help="queue usage for time-based fair share (YAML: usage: {QUEUE: {gpu: U, ...}}, "
        "U a share of the cluster over the window; default: none)",
    )
    parser.add_argument("--scheduler-name", default=None, help="default kai-scheduler")
    parser.add_argument(
        "--rounds",
        metavar="N",
        help="run N cycles, applying each cycle's decisions before the next (default 1)",
    )
    parser.add_argument(
        "--explain", action="store_true", help="add reasons for every pending group"
    )
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    pools.add_arguments(parser)
    parser.set_defaults(handler=run)


def read_config(path: str) -> SchedulerConfig:
    """A scheduler configuration file; ``ConfigError`` names the key (the caller the file)."""
    return load_config(read_file(path))


def read_usage(path: str) -> dict[str, tuple[float, float, float]]:
    """A ``--usage`` file (:mod:`scheduler.usage.given`); ``ValueError`` names the entry."""
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: invalid YAML: {exc}") from None
    return parse_given_usage(data, path)


def _config(args: argparse.Namespace) -> SchedulerConfig:
    """The configuration to run; ``ConfigError`` names the file or the flag at fault."""
    config = SchedulerConfig()
    if args.config:
        try:
            config = read_config(args.config)
        except ConfigError as exc:
            raise ConfigError(f"{args.config}: {exc}") from None
    if args.actions is not None:  # "" too: an empty list is an error, not the default
        config = config.with_actions(args.actions, "--actions")
    if args.scheduler_name:
        from dataclasses import replace

        config = replace(config, scheduler_name=args.scheduler_name)
    return config


def _now(raw: str | None) -> float:
    if raw is None:
        return datetime.now(tz=UTC).timestamp()
    try:
        return rfc3339_seconds(raw)
    except ValueError:
        raise InputError(f"invalid RFC 3339 time {raw!r}", field="--now") from None


def _rounds(raw: str | None) -> int | None:
    if raw is None:
        return None
    try:
        rounds = int(raw)
    except ValueError:
        rounds = 0
    if rounds < 1:
        raise InputError(
            f"must be a whole number of at least 1, got {shown(raw)}", field="--rounds"
        )
    return rounds


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def queue_units(values: tuple[float, float, float]) -> dict[str, float]:
    """Queue units, as in a Queue's spec: GPU devices, CPU millicores, memory MB (10^6 bytes)."""
    gpu, cpu, memory = values
    return {"gpu": gpu, "cpu": cpu, "memory": memory if memory == -1 else memory / 1e6}


def _pod_group(outcome: PodGroupOutcome, explain: bool) -> dict[str, Any]:
    """One ``podGroups`` entry; ``scaleUpHint`` only for a gang pending for lack of room."""
    entry: dict[str, Any] = {
        "podGroup": outcome.pod_group,
        "queue": outcome.queue,
        "outcome": outcome.outcome,
        "reasons": list(outcome.reasons)
        if (explain or outcome.outcome in ("pending", "held"))
        else [],
    }
    if outcome.scale_up_hint is not None:
        entry["scaleUpHint"] = outcome.scale_up_hint.as_dict()
    return entry


def _bind(bind: Bind) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "pod": bind.pod,
        "node": bind.node,
        "gpuGroups": list(bind.gpu_groups),
        "gpuPortion": bind.gpu_portion / GPU_UNIT if bind.gpu_groups else None,
    }
    if bind.resource_claims:  # DRA: the devices chosen, as the BindRequest carries them
        entry["resourceClaims"] = [
            {"name": name, "allocation": allocation} for name, allocation in bind.resource_claims
        ]
    return entry


def render(result: CycleResult, explain: bool) -> dict[str, Any]:
    """The docs/cli.md §2 document for one cycle (``queues`` added with ``--explain``)."""
    document: dict[str, Any] = {
        "binds": [_bind(b) for b in result.binds],
        "pipelined": [{"pod": b.pod, "node": b.node} for b in result.pipelined],
        "evictions": [
            {"pod": e.pod, "action": e.action, "for": e.for_job} for e in result.evictions
        ],
        "podGroups": [_pod_group(g, explain) for g in result.pod_groups],
    }
    if result.ungated:
        document["ungated"] = list(result.ungated)
    if explain:
        document["queues"] = [
            {
                "queue": q.name,
                "parent": q.parent,
                "deserved": queue_units(q.deserved),
                "fairShare": queue_units(q.fair_share),
                "allocated": queue_units(q.allocated),
                "requested": queue_units(q.requested),
                "limit": queue_units(q.limit),
            }
            for q in result.queues
        ]
    return document


def _state(status: PodStatus) -> str:
    return status.name.capitalize()


def pod_states(snapshot: ClusterSnapshot, deleted: set[str]) -> list[dict[str, Any]]:
    """Every pod of our scheduler: its group, state and node; evicted pods as ``Deleted``."""
    rows = {
        pod.key: {
            "pod": pod.key,
            "podGroup": pod.job,
            "state": _state(pod.status),
            "node": snapshot.nodes.names[pod.node] if pod.node >= 0 else None,
        }
        for pod in snapshot.pods
        if pod.is_ours
    }
    for key in deleted - rows.keys():
        rows[key] = {"pod": key, "podGroup": None, "state": "Deleted", "node": None}
    return [rows[key] for key in sorted(rows)]


def render_rounds(rounds: list[Round], final: ClusterSnapshot, explain: bool) -> dict[str, Any]:
    """The ``--rounds`` document: each cycle's output under ``rounds``, then the pods' states."""
    deleted: set[str] = set()
    groups: dict[str, str] = {}
    documents = []
    for played in rounds:
        for pod in played.built.snapshot.pods:
            if pod.job:
                groups[pod.key] = pod.job
        re_placed = {b.pod for b in played.result.pipelined}
        deleted |= {e.pod for e in played.result.evictions} - re_placed
        documents.append(
            {"round": played.number, "time": _rfc3339(played.now)} | render(played.result, explain)
        )
    pods = pod_states(final, deleted)
    for row in pods:
        if row["state"] == "Deleted":
            row["podGroup"] = groups.get(row["pod"])
    return {"rounds": documents, "pods": pods}


def run(args: argparse.Namespace) -> int:
    try:
        config = _config(args)
    except ConfigError as exc:
        print(f"podmuster: {exc}", file=sys.stderr)
        return 2
    try:
        usage = read_usage(args.usage) if args.usage else None
    except ValueError as exc:
        print(f"podmuster: {exc}", file=sys.stderr)
        return 2
    rounds = _rounds(args.rounds)
    now = _now(args.now)
    problems: list[InputError] = []  # objects that cannot be read: reported, left out
    objects = load_documents(args.snapshot, stdin=sys.stdin, problems=problems)
    objects = add_implicit_pod_groups(objects, config.scheduler_name)
    pool = pools.from_arguments(args)
    objects = [sourced for sourced in objects if pool.holds(sourced.obj)]
    played = list(
        play(
            objects,
            config,
            now=now,
            rounds=rounds or 1,
            explain=args.explain,
            strict=False,
            usage=usage,
        )
    )
    first = played[0]
    for kind in sorted(k for k in first.built.ignored_kinds if k):
        print(f"podmuster: warning: ignoring objects of kind {kind}", file=sys.stderr)
    given = {
        key_of(o.obj)
        for o in objects
        if o.obj.get("kind") == "PodGroup" and isinstance(o.obj.get("metadata"), dict)
    } | {  # refused while loading: their own lines name them
        problem.obj.removeprefix("PodGroup ")
        for problem in problems
        if problem.obj and problem.obj.startswith("PodGroup ")
    }
    for line in missing_group_warnings(first.built.ungrouped_pods, given):
        print(f"podmuster: warning: {line}", file=sys.stderr)
    bad_input = report_bad_objects([*problems, *first.built.errors])
    if rounds is None:
        output.write(render(first.result, args.explain), args.output)
        return bad_input
    last = played[-1]
    final = build_snapshot(
        last.objects,
        scheduler_name=config.scheduler_name,
        now=last.now,
        strict=False,
        stuck_after=config.stuck_in_releasing_s,
    )
    output.write(render_rounds(played, final.snapshot, args.explain), args.output)
    return bad_input


_MISSING_GROUPS_SHOWN = 10


def missing_group_warnings(ungrouped: Sequence[PodInfo], given: Set[str]) -> list[str]:
    """One line per PodGroup that pods of ours name but the input does not hold (a
    PodGroup ``given`` but refused has its own error line).

    Such pods wait, as in a live cluster, and no outcome mentions them. The usual cause is
    a dump taken with ``kubectl get podgroups`` on Kubernetes 1.37, which lists the
    upstream ``scheduling.k8s.io`` PodGroups, not KAI's.
    """
    counts: dict[str, int] = {}
    for pod in ungrouped:
        name = pod.annotations.get(POD_GROUP_ANNOTATION)
        key = f"{pod.namespace}/{name}"
        if name and key not in given:
            counts[key] = counts.get(key, 0) + 1
    lines = [
        f"PodGroup {key} is not in the input: its {count} pod(s) wait for it and get no "
        "outcome (on Kubernetes 1.37 `kubectl get podgroups` lists scheduling.k8s.io's; "
        "ask for podgroups.scheduling.run.ai)"
        for key, count in sorted(counts.items())[:_MISSING_GROUPS_SHOWN]
    ]
    if len(counts) > _MISSING_GROUPS_SHOWN:
        lines.append(f"{len(counts) - _MISSING_GROUPS_SHOWN} more PodGroups are not in the input")
    return lines


def report_bad_objects(problems: Sequence[InputError]) -> int:
    """One stderr line per object left out (docs/cli.md "Bad input"); the exit status: 2 or 0."""
    for problem in problems:
        print(f"podmuster: {problem}", file=sys.stderr)
    return 2 if problems else 0


def main(argv: Sequence[str]) -> int:  # pragma: no cover - convenience for debugging
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(argv)
    handler: Any = args.handler
    return int(handler(args))
