"""``podmuster schedule``: run scheduling cycles on a snapshot offline (cli-contract §2).

Why: this is how a KAI or podmuster user asks "what would the scheduler do
with this cluster, and why is my job pending" without touching a cluster.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import yaml

from crds.documents import load_documents
from crds.errors import InputError
from podmuster import output
from podmuster.implicit_groups import add_implicit_pod_groups
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import ConfigError, SchedulerConfig, load_config, validate_actions
from scheduler.cycle import CycleResult, run_cycle


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
    parser.add_argument("--scheduler-name", default=None, help="default kai-scheduler")
    parser.add_argument(
        "--explain", action="store_true", help="add reasons for every pending group"
    )
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    parser.set_defaults(handler=run)


def _config(args: argparse.Namespace) -> SchedulerConfig:
    config = SchedulerConfig()
    if args.config:
        try:
            with open(args.config, encoding="utf-8") as handle:
                data = yaml.safe_load(handle) or {}
        except OSError as exc:
            raise ConfigError(f"cannot read: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"invalid YAML: {exc}") from None
        config = load_config(data)
    if args.actions:
        config = config.with_actions(validate_actions(args.actions, "--actions"))
    if args.scheduler_name:
        from dataclasses import replace

        config = replace(config, scheduler_name=args.scheduler_name)
    return config


def _now(raw: str | None) -> float:
    if raw is None:
        return datetime.now(tz=UTC).timestamp()
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InputError(f"invalid RFC 3339 time {raw!r}", field="--now") from None


def _triple(values: tuple[float, float, float]) -> dict[str, float]:
    """Queue units, as in a Queue's spec: GPU devices, CPU millicores, memory MB (10^6 bytes)."""
    gpu, cpu, memory = values
    return {"gpu": gpu, "cpu": cpu, "memory": memory if memory == -1 else memory / 1e6}


def render(result: CycleResult, explain: bool) -> dict[str, Any]:
    """The cli-contract §2 document for one cycle (``queues`` added with ``--explain``)."""
    document = {
        "binds": [
            {"pod": b.pod, "node": b.node, "gpuGroups": [], "gpuPortion": None}
            for b in result.binds
        ],
        "pipelined": [{"pod": b.pod, "node": b.node} for b in result.pipelined],
        "evictions": [
            {"pod": e.pod, "action": e.action, "for": e.for_job} for e in result.evictions
        ],
        "podGroups": [
            {
                "podGroup": g.pod_group,
                "queue": g.queue,
                "outcome": g.outcome,
                "reasons": list(g.reasons) if (explain or g.outcome == "pending") else [],
            }
            for g in result.pod_groups
        ],
    }
    if explain:
        document["queues"] = [
            {
                "queue": q.name,
                "parent": q.parent,
                "deserved": _triple(q.deserved),
                "fairShare": _triple(q.fair_share),
                "allocated": _triple(q.allocated),
                "requested": _triple(q.requested),
                "limit": _triple(q.limit),
            }
            for q in result.queues
        ]
    return document


def run(args: argparse.Namespace) -> int:
    config_path = args.config or "--config"
    try:
        config = _config(args)
    except ConfigError as exc:
        print(f"podmuster: {config_path}: {exc}", file=sys.stderr)
        return 2
    objects = load_documents(args.snapshot, stdin=sys.stdin)
    objects = add_implicit_pod_groups(objects, config.scheduler_name)
    built = build_snapshot(objects, scheduler_name=config.scheduler_name, now=_now(args.now))
    for kind in sorted(k for k in built.ignored_kinds if k):
        print(f"podmuster: warning: ignoring objects of kind {kind}", file=sys.stderr)
    result = run_cycle(built.snapshot, config, explain=args.explain)
    if result.skipped_actions and args.actions:
        skipped = ", ".join(result.skipped_actions)
        print(
            f"podmuster: warning: not available in this version, skipped: {skipped}",
            file=sys.stderr,
        )
    output.write(render(result, args.explain), args.output)
    return 0


def main(argv: Sequence[str]) -> int:  # pragma: no cover - convenience for debugging
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(argv)
    handler: Any = args.handler
    return int(handler(args))
