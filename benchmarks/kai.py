"""KAI's own benchmarks run on podmuster: decisions (binds, evictions, pipelined pods) and times.

Why: KAI's scheduler benchmarks each action on fixed topologies
(:mod:`benchmarks.kai_topologies`). Running podmuster on them answers two
questions at once: does it decide what KAI decides, and how long does it take.
Each case runs one KAI action (or KAI's five default actions in turn, "cycle")
on a fresh snapshot. Beside podmuster's counts the table shows what KAI decides
on the same topology: measured from KAI v0.17.0 where we ran it ("KAI"), from the
assertion KAI's benchmark itself makes (ReclaimLargeJobs: the job's pods all
pipelined, ``pods x 8`` 1-GPU victims releasing), or worked out by hand from
KAI's rules where neither exists ("rule"). A case whose decisions differ from
the expected ones is marked ``DIFFERS`` and makes the run exit 1; the known,
documented difference (consolidation alone on "mixed", docs/benchmarks.md) is
marked ``differs (documented)``.

Run: ``python -m benchmarks.kai [--cases NAME ...] [--large-nodes 100 500 1000]
[--repeat 1] [--unbounded] [--json FILE]`` (``make bench-kai``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from benchmarks import kai_topologies as topo
from crds.documents import SourcedObject, gc_paused
from scheduler.cache.cluster_cache import ClusterCache
from scheduler.config import ACTIONS, SchedulerConfig
from scheduler.cycle import run_cycle

Counts = tuple[int, int, int]  # binds, evictions, pipelined pods


@dataclass(frozen=True)
class Case:
    """One KAI benchmark: its topology, the actions run, and what KAI decides on it."""

    name: str
    build: Callable[[], topo.Topology]
    actions: tuple[str, ...]
    expected: Counts
    source: str  # "KAI" (measured), "KAI assert" (its benchmark's own check) or "rule"
    documented_difference: bool = False


def unbounded(config: SchedulerConfig) -> SchedulerConfig:
    """The disruption search without any of its limits (for comparisons, not for production)."""
    return replace(
        config,
        max_victim_chunks=None,
        max_simulations_per_action=None,
        max_action_search_s=None,
        max_job_search_s=None,
    )


def _large(nodes: int, divisor: int) -> Case:
    tasks = nodes // divisor
    victims = tasks * topo.LARGE_JOB_GPUS_PER_TASK
    return Case(
        f"ReclaimLargeJobs_{nodes}Node",
        partial(topo.large_job, nodes, tasks),
        ("reclaim",),
        (0, victims, tasks),
        "KAI assert",
    )


# KAI's 'mixed' consolidation at 100, 500 and 1,000 nodes (five jobs a node), measured on
# KAI v0.17.0: every pending 1-GPU job pipelined, and two pods more.
_KAI_CONSOLIDATION = {100: 252, 500: 1252, 1000: 2502}


def cases(large_nodes: list[int], divisor: int) -> list[Case]:
    """KAI's benchmark cases at KAI's sizes, then consolidation and ReclaimLargeJobs larger."""
    out = [
        Case("Allocate_Small", lambda: topo.pending(10, 50), ("allocate",), (50, 0, 0), "rule"),
        Case("Allocate_Medium", lambda: topo.pending(50, 200), ("allocate",), (200, 0, 0), "rule"),
        Case("Allocate_Large", lambda: topo.pending(100, 500), ("allocate",), (500, 0, 0), "rule"),
        Case("Reclaim_Small", lambda: topo.running(10, 50), ("reclaim",), (0, 0, 0), "rule"),
        Case("Reclaim_Medium", lambda: topo.running(50, 200), ("reclaim",), (0, 0, 0), "rule"),
        Case("Preempt_Small", lambda: topo.mixed(10, 50), ("preempt",), (0, 0, 0), "rule"),
        Case("Preempt_Medium", lambda: topo.mixed(50, 200), ("preempt",), (0, 0, 0), "rule"),
        Case("FullCycle_Small", lambda: topo.mixed(10, 50), ACTIONS, (25, 0, 0), "rule"),
        Case("FullCycle_Medium", lambda: topo.mixed(50, 200), ACTIONS, (100, 0, 0), "rule"),
        Case("FullCycle_Large", lambda: topo.mixed(100, 500), ACTIONS, (250, 0, 0), "rule"),
        Case(
            "ManyQueues_Medium",
            lambda: topo.many_queues(50, 200, 20),
            ("allocate",),
            (200, 0, 0),
            "rule",
        ),
        Case(
            "GangScheduling_Medium",
            lambda: topo.gangs(50, 100, 4),
            ("allocate",),
            (400, 0, 0),
            "rule",
        ),
    ]
    for nodes in (10, 50, *large_nodes):
        jobs = 5 * nodes if nodes in _KAI_CONSOLIDATION else {10: 50, 50: 200}.get(nodes, 5 * nodes)
        kai = _KAI_CONSOLIDATION.get(nodes)
        out.append(
            Case(
                f"Consolidation_{nodes}Node",
                partial(topo.mixed, nodes, jobs),
                ("consolidation",),
                (0, 0, kai if kai is not None else jobs // 2),
                "KAI" if kai is not None else "rule",
                documented_difference=True,
            )
        )
    out += [_large(nodes, divisor) for nodes in (10, 50, *large_nodes)]
    return out


def build(topology: topo.Topology) -> ClusterCache:
    cache = ClusterCache()
    cache.upsert_all(SourcedObject(o, "kai-bench", i) for i, o in enumerate(topology.objects))
    cache.snapshot()  # the cold snapshot links pod groups once, as a live scheduler's first cycle
    return cache


def measure(case: Case, repeat: int, config: SchedulerConfig) -> dict[str, Any]:
    """Best-of-``repeat`` time of snapshot + the case's actions, and the decision counts."""
    cache = build(case.build())
    best = float("inf")
    counts: Counts = (0, 0, 0)
    action_ms: dict[str, float] = {}
    for _ in range(repeat):
        with gc_paused():
            t0 = time.perf_counter()
            result = run_cycle(cache.snapshot().snapshot, config.with_actions(case.actions))
            elapsed = time.perf_counter() - t0
        counts = (len(result.binds), len(result.evictions), len(result.pipelined))
        if elapsed < best:
            best, action_ms = elapsed, dict(result.action_ms)
    if counts == case.expected:
        verdict = "same"
    elif case.documented_difference:
        verdict = "differs (documented)"
    else:
        verdict = "DIFFERS"
    return {
        "case": case.name,
        "binds": counts[0],
        "evictions": counts[1],
        "pipelined": counts[2],
        "expected": list(case.expected),
        "source": case.source,
        "verdict": verdict,
        "cycle_s": best,
        "action_ms": action_ms,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--cases", nargs="+", help="run only cases whose name contains one of these"
    )
    parser.add_argument("--large-nodes", type=int, nargs="+", default=[100, 500, 1000])
    parser.add_argument(
        "--large-job-divisor",
        type=int,
        default=2,
        help="ReclaimLargeJobs' pending pods are nodes / this (KAI v0.17.0: 2)",
    )
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--unbounded", action="store_true", help="lift the search's limits")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    config = unbounded(SchedulerConfig()) if args.unbounded else SchedulerConfig()
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"{os.cpu_count()} cores, load average {load}", flush=True)
    print(
        f"{'case':<30} {'binds':>6} {'evict':>6} {'pipel':>6}   expected (source)"
        f"{'':<14} {'seconds':>8}  verdict",
        flush=True,
    )
    rows = []
    for case in cases(args.large_nodes, args.large_job_divisor):
        if args.cases and not any(c in case.name for c in args.cases):
            continue
        row = measure(case, args.repeat, config)
        rows.append(row)
        expected = "/".join(str(v) for v in row["expected"]) + f" ({row['source']})"
        print(
            f"{row['case']:<30} {row['binds']:>6} {row['evictions']:>6} {row['pipelined']:>6}"
            f"   {expected:<31} {row['cycle_s']:>8.3f}  {row['verdict']}",
            flush=True,
        )
    print(
        "\nbinds/evictions/pipelined pods; seconds = snapshot + the case's actions"
        f" (best of {args.repeat})"
    )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=2)
    return 1 if any(r["verdict"] == "DIFFERS" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
