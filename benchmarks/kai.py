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

KAI's own Go code runs beside it in the same invocation when Go is installed
(``--kai-go auto``, the default): :mod:`benchmarks.kai_go` builds KAI v0.17.0's
action tests with ``benchmarks/kai_go/podmuster_sizes_test.go`` added (KAI's own
topology helpers at our sizes, decisions counted after the run), from the git
repository in ``KAI_GIT`` (a local clone or mirror; default: GitHub), and the
table shows KAI's time, podmuster's time, their ratio and both sides' counts.
Both times are snapshot (KAI: its session build) plus the action(s), wall clock.

Run: ``python -m benchmarks.kai [--cases NAME ...] [--large-nodes 100 500 1000]
[--repeat 1] [--unbounded] [--kai-go auto|on|off] [--json FILE]`` (``make bench-kai``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from benchmarks import kai_go
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
    # KAI's Go benchmark of the same case: (action, topology kind, nodes, jobs); None: not run
    go: kai_go.GoCase | None = None


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


_BUILD: dict[str, Callable[[int, int], topo.Topology]] = {
    "pending": topo.pending,
    "running": topo.running,
    "mixed": topo.mixed,
    "manyqueues": lambda nodes, jobs: topo.many_queues(nodes, jobs, 20),
    "gangs": lambda nodes, jobs: topo.gangs(nodes, jobs, 4),
}
_ACTIONS: dict[str, tuple[str, ...]] = {
    "allocate": ("allocate",),
    "reclaim": ("reclaim",),
    "preempt": ("preempt",),
    "consolidation": ("consolidation",),
    "cycle": ACTIONS,
}


def _case(
    name: str, action: str, kind: str, nodes: int, jobs: int, expected: Counts, **kw: Any
) -> Case:
    """A case of KAI's action benchmark file: podmuster's run and KAI's Go run of it."""
    return Case(
        name,
        partial(_BUILD[kind], nodes, jobs),
        _ACTIONS[action],
        expected,
        kw.pop("source", "rule"),
        go=kai_go.GoCase(name, action, kind, nodes, jobs),
        **kw,
    )


# KAI's action benchmarks: (name, action, topology kind); their expected decisions follow
_KAI_ACTIONS = (
    ("Allocate", "allocate", "pending"),
    ("Reclaim", "reclaim", "running"),
    ("Preempt", "preempt", "mixed"),
    ("FullCycle", "cycle", "mixed"),
)


def _expected(action: str, jobs: int) -> Counts:
    """Every pending job bound (all fit); on "mixed" half the jobs are pending; no disruption."""
    return {"allocate": (jobs, 0, 0), "cycle": (jobs // 2, 0, 0)}.get(action, (0, 0, 0))


def _sized(suffix: str, nodes: int, jobs: int, only: tuple[str, ...] = ()) -> list[Case]:
    """KAI's single-action and full-cycle benchmarks at one size (``only``: these names)."""
    return [
        _case(f"{title}_{suffix}", action, kind, nodes, jobs, _expected(action, jobs))
        for title, action, kind in _KAI_ACTIONS
        if not only or title in only
    ]


def cases(large_nodes: list[int], divisor: int) -> list[Case]:
    """KAI's benchmark cases at KAI's sizes, then each action (five jobs a node),
    consolidation and ReclaimLargeJobs at ``large_nodes``."""
    out = [
        *_sized("Small", 10, 50),
        *_sized("Medium", 50, 200),
        *_sized("Large", 100, 500, only=("Allocate", "FullCycle")),
        _case("ManyQueues_Medium", "allocate", "manyqueues", 50, 200, (200, 0, 0)),
        _case("GangScheduling_Medium", "allocate", "gangs", 50, 100, (400, 0, 0)),
    ]
    for nodes in large_nodes:
        out += _sized(f"{nodes}Node", nodes, 5 * nodes)
    for nodes in (10, 50, *large_nodes):
        jobs = 5 * nodes if nodes in _KAI_CONSOLIDATION else {10: 50, 50: 200}.get(nodes, 5 * nodes)
        kai = _KAI_CONSOLIDATION.get(nodes)
        out.append(
            _case(
                f"Consolidation_{nodes}Node",
                "consolidation",
                "mixed",
                nodes,
                jobs,
                (0, 0, kai if kai is not None else jobs // 2),
                source="KAI" if kai is not None else "rule",
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
    best_cpu = float("inf")
    for _ in range(repeat):
        with gc_paused():
            t0, cpu0 = time.perf_counter(), time.process_time()
            result = run_cycle(cache.snapshot().snapshot, config.with_actions(case.actions))
            elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        counts = (len(result.binds), len(result.evictions), len(result.pipelined))
        best_cpu = min(best_cpu, cpu)
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
        "cpu_s": best_cpu,
        "action_ms": action_ms,
    }


def _kai_side(
    rows: list[dict[str, Any]], selected: list[Case], mode: str, timeout_s: float, max_nodes: int
) -> None:
    """Run KAI's Go benchmark for each selected case and put its time and counts in the rows."""
    if mode == "off":
        return
    why = kai_go.unavailable()
    binary = None
    if why is None:
        try:
            binary = kai_go.build()
        except (OSError, subprocess.CalledProcessError) as exc:
            why = f"build failed: {exc}"
    if binary is None:
        print(f"KAI's Go benchmark not run: {why}", flush=True)
        if mode == "on":
            raise SystemExit(2)
        return
    for case, row in zip(selected, rows, strict=True):
        if case.go is None or case.go.nodes > max_nodes:
            continue
        outcome = kai_go.run(binary, case.go, timeout_s)
        if isinstance(outcome, str):
            row["kai_note"] = outcome
            print(f"{case.name:<30} KAI: {outcome}", flush=True)
            continue
        row["kai_s"] = outcome.seconds
        row["kai_cpu_s"] = outcome.cpu_seconds
        row["kai_counts"] = [outcome.binds, outcome.evicted, outcome.pipelined]
        row["ratio"] = outcome.seconds / max(row["cycle_s"], 1e-9)
        row["cpu_ratio"] = outcome.cpu_seconds / max(row["cpu_s"], 1e-9)
        print(
            f"{case.name:<30} KAI {outcome.seconds:9.3f} s (CPU {outcome.cpu_seconds:.3f} s)"
            f"  podmuster {row['cycle_s']:7.3f} s (CPU {row['cpu_s']:.3f} s)"
            f"  ratio {row['ratio']:.1f} (CPU {row['cpu_ratio']:.1f})",
            flush=True,
        )


def _judge(case: Case, row: dict[str, Any]) -> None:
    """Same, documented difference, or DIFFERS: against KAI's run where it ran, else expected."""
    counts = [row["binds"], row["evictions"], row["pipelined"]]
    reference = row.get("kai_counts", list(case.expected))
    if counts == reference:
        row["verdict"] = "same"
    elif case.documented_difference:
        row["verdict"] = "differs (documented)"
    else:
        row["verdict"] = "DIFFERS"


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
    parser.add_argument(
        "--kai-go",
        choices=("auto", "on", "off"),
        default="auto",
        help="run KAI's Go benchmark beside podmuster (auto: when Go is installed)",
    )
    parser.add_argument(
        "--kai-timeout", type=float, default=1800.0, help="seconds allowed per KAI run"
    )
    parser.add_argument(
        "--kai-max-nodes",
        type=int,
        default=1000,
        help="run KAI's side only for cases of at most this many nodes",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    config = unbounded(SchedulerConfig()) if args.unbounded else SchedulerConfig()
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"{os.cpu_count()} cores, load average {load}", flush=True)
    selected = [
        case
        for case in cases(args.large_nodes, args.large_job_divisor)
        if not args.cases or any(c in case.name for c in args.cases)
    ]
    rows = []
    for case in selected:
        row = measure(case, args.repeat, config)
        rows.append(row)
        print(f"{case.name:<30} podmuster {row['cycle_s']:7.3f} s", flush=True)
    _kai_side(rows, selected, args.kai_go, args.kai_timeout, args.kai_max_nodes)
    for case, row in zip(selected, rows, strict=True):
        _judge(case, row)
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"\nload average at the end {load}")
    print(
        f"{'case':<26} {'podmuster b/e/p':>15} {'KAI b/e/p':>15} {'KAI s (CPU)':>17}"
        f" {'podmuster s (CPU)':>17} {'ratio (CPU)':>13}  verdict"
    )
    for row in rows:
        ours = "/".join(str(row[k]) for k in ("binds", "evictions", "pipelined"))
        mine = f"{row['cycle_s']:.3f} ({row['cpu_s']:.3f})"
        if "kai_counts" in row:
            theirs = "/".join(str(v) for v in row["kai_counts"])
            kai_s = f"{row['kai_s']:.3f} ({row['kai_cpu_s']:.3f})"
            ratio = f"{row['ratio']:.1f} ({row['cpu_ratio']:.1f})"
        else:
            theirs = "/".join(str(v) for v in row["expected"]) + f" ({row['source']})"
            kai_s, ratio = row.get("kai_note", "-"), "-"
        print(
            f"{row['case']:<26} {ours:>15} {theirs:>15} {kai_s:>17} {mine:>17} {ratio:>13}"
            f"  {row['verdict']}"
        )
    print(
        "\nb/e/p = binds/evictions/pipelined pods; KAI's counts are its Go run's where it ran,"
        " else the expected ones (source); seconds = snapshot (KAI: session build) + the"
        " case's actions, wall clock, and the process's CPU time in brackets (KAI: every"
        f" thread); podmuster best of {args.repeat}, KAI one run; ratio = KAI / podmuster"
    )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=2)
    return 1 if any(r["verdict"] == "DIFFERS" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
