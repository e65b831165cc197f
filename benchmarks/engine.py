"""Engine benchmark: snapshot build, fair share, allocate and placement rate at scale.

Wall-clock figures suffer when other processes share the two cores; the
``*_cpu_s`` figures count this process's CPU time only.

Run: ``python -m benchmarks.engine [--sizes 1000x20000x5000,5000x100000x20000] [--repeat 3]``
(``make bench``). Targets from issue 2, on a 2-core machine: at 5,000 nodes /
100,000 pods one allocate cycle <= 2 s including the snapshot, and >= 20,000
placement decisions per second; ``podmuster schedule`` on a 1,000-node /
20,000-pod JSON snapshot <= 3 s as a whole process (issue 20: <= 2 s wall; printed
for ``--actions allocate`` and for the default five actions, wall and CPU). Issue 15: with
``--anti-affinity 0.2`` (a fifth of the pending pods, whole gangs, anti-affine to
their own gang per hostname) allocate stays within 1.5x of the plain run's.
``--zone-spread`` adds gangs spread over zones, and ``--label-every-pod`` gives
every pod its job's label, as real clusters have them, not only pods with rules.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from benchmarks import generate
from crds.documents import SourcedObject, gc_paused
from scheduler.actions.allocate import AllocateAction
from scheduler.cache.cluster_cache import ClusterCache
from scheduler.config import SchedulerConfig
from scheduler.cycle import open_session, run_cycle
from scheduler.live.collector import Collector


def _cycle(cache: ClusterCache) -> dict[str, float]:
    """The steps of ``run_cycle`` timed one by one (the GC paused as run_cycle pauses it)."""
    with gc_paused():
        return _timed_cycle(cache)


def _timed_cycle(cache: ClusterCache) -> dict[str, float]:
    t0 = time.perf_counter()
    snapshot = cache.snapshot().snapshot
    t1 = time.perf_counter()
    config = SchedulerConfig(actions=("allocate",))
    session = open_session(snapshot, config)
    t2 = time.perf_counter()
    calls = 0
    original = session.place

    def counting_place(pod, *, pipeline_only=False):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return original(pod, pipeline_only=pipeline_only)

    session.place = counting_place  # type: ignore[method-assign]
    cpu0 = time.process_time()
    AllocateAction().execute(session)
    t3 = time.perf_counter()
    allocate_cpu = time.process_time() - cpu0
    return {
        "snapshot_s": t1 - t0,
        "fair_share_s": t2 - t1,
        "allocate_s": t3 - t2,
        "cycle_s": t3 - t0,
        "placed_pods": len(session.decisions.binds) + len(session.decisions.pipelined),
        "placement_decisions": calls,
        "decisions_per_s": calls / (t3 - t2) if t3 > t2 else 0.0,
        "allocate_cpu_s": allocate_cpu,
        "decisions_per_cpu_s": calls / allocate_cpu if allocate_cpu > 0 else 0.0,
        "groups_left_pending": sum(1 for j in snapshot.jobs.values() if j.has_pending()),
    }


def measure(nodes: int, pods: int, pending: int, **rules: Any) -> dict[str, float]:
    """Ingest once (parse every object), then one cold and one steady-state allocate cycle,
    then KAI's five actions.

    The collector is handled as the live scheduler handles it (:mod:`scheduler.live.collector`):
    frozen after the ingest (the informers' first sync), settled between cycles (the first
    settle, after the cold cycle, freezes the pod groups it derived: ``first_settle_cpu_s``;
    then ``settle_cpu_s`` after an allocate cycle); the five-action cycle runs with the
    collector paused until its settle, ``five_action_settle_cpu_s``, which walks what the
    cycle left (the live scheduler spends it after the commit, before the next cycle).
    ``rules``: :func:`generate.cluster`'s ``anti_affinity``, ``zone_spread`` and
    ``label_every_pod``.
    """
    objects = generate.cluster(nodes, pods, pending, **rules)
    sourced = [SourcedObject(o, "bench", i) for i, o in enumerate(objects)]
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    cache = ClusterCache()
    cache.upsert_all(sourced)
    ingest_cpu = time.process_time() - cpu0
    ingest = time.perf_counter() - t0
    collector = Collector()
    collector.start()
    try:
        cold = _cycle(cache)  # links pod groups and builds the node table
        cpu0 = time.process_time()
        collector.settle()  # freezes the pod groups the first snapshot derived
        first_settle_cpu = time.process_time() - cpu0
        steady = _cycle(cache)  # what every later cycle of a running scheduler pays
        cpu0 = time.process_time()
        collector.settle()
        settle_cpu = time.process_time() - cpu0
        result = {
            "ingest_s": ingest,
            "ingest_cpu_s": ingest_cpu,
            "cold_snapshot_s": cold["snapshot_s"],
        }
        result.update(steady)
        with gc_paused():  # from the snapshot to the settle, as the live loop (its commit aside)
            start, cpu0 = time.perf_counter(), time.process_time()
            run_cycle(cache.snapshot().snapshot, SchedulerConfig())  # KAI's five actions
            result["five_action_cycle_s"] = time.perf_counter() - start
            result["five_action_cpu_s"] = time.process_time() - cpu0
            cpu0 = time.process_time()
            collector.settle()
            result["five_action_settle_cpu_s"] = time.process_time() - cpu0
        result["first_settle_cpu_s"] = first_settle_cpu
        result["settle_cpu_s"] = settle_cpu
    finally:
        collector.stop()
    return result


CLI_ACTIONS = {"allocate": ["--actions", "allocate"], "five actions": []}
"""The whole-process runs: allocate alone, and KAI's five actions (the default)."""


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cli_command(path: str, actions: list[str]) -> list[str]:
    """``podmuster schedule PATH [--actions ...] -o json`` as the installed script runs it."""
    return [
        sys.executable,
        "-c",
        "from podmuster.cli import entry; entry()",
        "schedule",
        path,
        *actions,
        "--now",
        "2026-01-02T00:00:00Z",
        "-o",
        "json",
    ]


def cli_run(
    nodes: int, pods: int, pending: int, repeat: int = 3, **rules: Any
) -> dict[str, tuple[float, float]]:
    """Median (wall s, CPU s) of ``repeat`` whole ``podmuster schedule`` processes per action set.

    CPU is the child's user + system time. One untimed run first, with bytecode writing
    allowed (``PYTHONDONTWRITEBYTECODE`` unset): an installed podmuster has its modules
    compiled, and a process that compiles them (about 0.15 s) measures the environment.
    """
    objects = generate.cluster(nodes, pods, pending, **rules)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"apiVersion": "v1", "kind": "List", "items": objects}, handle)
        path = handle.name
    out: dict[str, tuple[float, float]] = {}
    try:
        for name, actions in CLI_ACTIONS.items():
            command = cli_command(path, actions)
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
            walls, cpus = [], []
            for _ in range(repeat):
                start, cpu0 = time.perf_counter(), _child_cpu()
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
                walls.append(time.perf_counter() - start)
                cpus.append(_child_cpu() - cpu0)
            out[name] = (statistics.median(walls), statistics.median(cpus))
    finally:
        os.unlink(path)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000x20000x5000,5000x100000x20000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-cli", action="store_true")
    parser.add_argument(
        "--anti-affinity",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="share of pending pods (whole gangs) anti-affine to their gang per hostname",
    )
    parser.add_argument(
        "--zone-spread",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="share of pending pods (other gangs) spread over zones, hard or preferred",
    )
    parser.add_argument(
        "--label-every-pod",
        action="store_true",
        help="every pod labelled app=<its PodGroup>, not only those with rules",
    )
    args = parser.parse_args()
    rules = {
        "anti_affinity": args.anti_affinity,
        "zone_spread": args.zone_spread,
        "label_every_pod": args.label_every_pod,
    }
    print("load average " + ", ".join(f"{v:.1f}" for v in os.getloadavg()), flush=True)
    for size in args.sizes.split(","):
        nodes, pods, pending = (int(x) for x in size.split("x"))
        runs = [measure(nodes, pods, pending, **rules) for _ in range(args.repeat)]
        share = f", {args.anti_affinity:.0%} anti-affine" if args.anti_affinity else ""
        share += f", {args.zone_spread:.0%} zone-spread" if args.zone_spread else ""
        share += ", every pod labelled" if args.label_every_pod else ""
        print(f"{nodes} nodes / {pods} pods ({pending} pending{share}), median of {args.repeat}:")
        for key in runs[0]:
            value = statistics.median(r[key] for r in runs)
            print(
                f"  {key:22s} {value:12.3f}" if isinstance(value, float) else f"  {key:22s} {value}"
            )
    print("load average " + ", ".join(f"{v:.1f}" for v in os.getloadavg()), flush=True)
    if not args.no_cli:
        processes = cli_run(1000, 20000, 5000, args.repeat, **rules)
        print(
            "podmuster schedule, 1000 nodes / 20000 pods JSON, whole process, "
            f"median of {args.repeat}:"
        )
        for name, (wall, cpu) in processes.items():
            print(f"  {name:22s} {wall:8.3f} s wall {cpu:8.3f} s CPU")
        print("load average " + ", ".join(f"{v:.1f}" for v in os.getloadavg()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
