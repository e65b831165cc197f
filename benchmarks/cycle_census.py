"""Where a simulation's cycles go: what woke each one, whether it changed anything, its CPU.

Why: the simulator already runs a cycle only when something changed (an
arrival, a completion, decisions carried out, a timer, a node), so the way to a
faster contended run is either cheaper cycles or fewer of them. This census
says which: it replays a trace in-process and counts the cycles by the events
that preceded them and by whether their decisions changed the cluster (binds,
evictions, annotations), with the CPU time each group took. Decisions carried
out are split by what they held: binds only, or evictions too.

Run: ``python -m benchmarks.cycle_census [--jobs N] [--gpus N] [--seed N]`` on
a contended trace (:mod:`benchmarks.contended`), or ``--trace CSV --cluster
YAML`` on any CSV trace.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from benchmarks import contended
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult
from simulator import cluster, csvtrace
from simulator.events import JobRun, Simulation, changes_cluster
from simulator.model import Scenario


@dataclass(slots=True)
class Group:
    """The cycles woken by one combination of events, with one verdict."""

    cycles: int = 0
    cpu_s: float = 0.0


@dataclass(slots=True)
class Census:
    groups: dict[tuple[str, bool], Group] = field(default_factory=dict)
    # gangs each cycle left pending, summed over the cycles: every action and the report
    # visit each of them in each cycle, so the run's CPU divided by this is the cost of
    # one gang's visit by a whole cycle
    waiting: int = 0
    most_waiting: int = 0

    def add(self, woken_by: str, changed: bool, cpu_s: float, waiting: int = 0) -> None:
        group = self.groups.setdefault((woken_by, changed), Group())
        group.cycles += 1
        group.cpu_s += cpu_s
        self.waiting += waiting
        self.most_waiting = max(self.most_waiting, waiting)

    def report(self) -> dict[str, Any]:
        cycles = sum(g.cycles for g in self.groups.values())
        cpu = sum(g.cpu_s for g in self.groups.values())
        idle = [g for (_, changed), g in self.groups.items() if not changed]
        rows = sorted(self.groups.items(), key=lambda item: -item[1].cpu_s)
        return {
            "cycles": cycles,
            "cpu_s": round(cpu, 2),
            "pending_gang_cycles": self.waiting,
            "most_pending_gangs": self.most_waiting,
            "cpu_us_per_pending_gang_cycle": round(cpu / self.waiting * 1e6, 1)
            if self.waiting
            else None,
            "changed_nothing": {
                "cycles": sum(g.cycles for g in idle),
                "cpu_s": round(sum(g.cpu_s for g in idle), 2),
            },
            "by_wake": [
                {
                    "woken_by": woken_by,
                    "changed_cluster": changed,
                    "cycles": group.cycles,
                    "cpu_s": round(group.cpu_s, 2),
                }
                for (woken_by, changed), group in rows
            ],
        }


class _CountedSimulation(Simulation):
    """A simulation that notes the events before each cycle and the cycle's verdict."""

    def __init__(self, scenario: Scenario, config: SchedulerConfig) -> None:
        super().__init__(scenario, config)
        self.census = Census()
        self._events_seen: set[str] = set()
        self._result: CycleResult | None = None

    def _arrive(self, run: JobRun) -> None:
        self._events_seen.add("arrival")
        super()._arrive(run)

    def _complete(self, run: JobRun, epoch: int) -> None:
        if epoch == run.epoch and run.end is None:  # a stale completion changes nothing
            self._events_seen.add("completion")
        super()._complete(run, epoch)

    def _apply(self, result: CycleResult) -> None:
        if result.evictions:
            self._events_seen.add("evictions carried out")
        elif result.binds:
            self._events_seen.add("binds carried out")
        else:
            self._events_seen.add("annotations carried out")
        super()._apply(result)

    def _wake(self) -> None:
        self._events_seen.add("timer")
        super()._wake()

    def add_node(self, manifest: dict[str, Any], pool: str | None = None) -> None:
        self._events_seen.add("node")
        super().add_node(manifest, pool)

    def _arm_wake(self, snapshot: ClusterSnapshot, result: CycleResult) -> None:
        self._result = result  # called once per cycle run, with its result
        super()._arm_wake(snapshot, result)

    def _cycle(self) -> None:
        before = self.cycles
        started = time.process_time()
        super()._cycle()
        if self.cycles == before or self._result is None:
            return  # nothing pending, or decisions in flight: no cycle ran
        woken_by = " + ".join(sorted(self._events_seen)) or "tick"
        spent = time.process_time() - started
        waiting = sum(1 for outcome in self._result.pod_groups if outcome.outcome == "pending")
        self.census.add(woken_by, changes_cluster(self._result), spent, waiting)
        self._events_seen = set()


def count(scenario: Scenario, config: SchedulerConfig) -> dict[str, Any]:
    """Run ``scenario`` to the end and report its census."""
    simulation = _CountedSimulation(scenario, config)
    simulation.run()
    report = simulation.census.report()
    report["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", help="a CSV trace (default: a contended one)")
    parser.add_argument("--cluster", help="the cluster YAML for --trace")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--gpus", type=int, default=256)
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args(argv)
    if (args.trace is None) != (args.cluster is None):
        parser.error("--trace and --cluster go together")
    if args.trace is not None:
        scenario = csvtrace.load(args.trace, cluster.load(args.cluster))
        described: dict[str, Any] = {"trace": args.trace}
    else:
        with tempfile.TemporaryDirectory(prefix="podmuster-census-") as directory:
            trace, cluster_file, _ = contended.write(directory, args.jobs, args.gpus, args.seed)
            scenario = csvtrace.load(trace, cluster.load(cluster_file))
        described = {"jobs": args.jobs, "gpus": args.gpus, "seed": args.seed}
    report = {**described, **count(scenario, SchedulerConfig())}
    print(json.dumps(report, indent=2), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
