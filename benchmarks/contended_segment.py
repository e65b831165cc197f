"""The engine's cost per cycle late in a contended trace, without running the whole trace.

Why: the 2,000-job / 256-GPU trace (``simulate_trace --case contended-2000``)
runs for minutes, and its cycles grow dearer as the backlog grows (hundreds of
gangs pending). This replays the same trace in-process, reports the CPU time
to reach cycle START, then the CPU time per cycle of the next COUNT cycles
(optionally under cProfile), and stops: a before/after figure for one segment
in a few minutes.

Run: ``python -m benchmarks.contended_segment [--start N] [--count N] [--jobs N]
[--gpus N] [--seed N] [--profile N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time

from benchmarks import contended
from scheduler.config import SchedulerConfig
from simulator import cluster, csvtrace
from simulator.events import Simulation


class _Reached(Exception):
    """The segment is measured: stop the simulation."""


def measure(
    start: int, count: int, jobs: int, gpus: int, seed: int, profile: int | None = None
) -> dict[str, object]:
    """CPU seconds to reach cycle ``start``, and CPU milliseconds per cycle after it."""
    with tempfile.TemporaryDirectory(prefix="podmuster-bench-") as directory:
        trace, cluster_file, _ = contended.write(directory, jobs, gpus, seed)
        scenario = csvtrace.load(trace, cluster.load(cluster_file))
    simulation = Simulation(scenario, SchedulerConfig())
    run_one = simulation._cycle
    began = time.process_time()
    marks: dict[str, float] = {}
    profiler = cProfile.Profile() if profile else None

    def cycle() -> None:
        if simulation.cycles == start and "start" not in marks:
            marks["start"] = time.process_time()
            marks["pending"] = simulation.pending_pods
            if profiler is not None:
                profiler.enable()
        run_one()
        if simulation.cycles == start + count and "start" in marks:
            marks["end"] = time.process_time()
            raise _Reached

    simulation._cycle = cycle  # type: ignore[method-assign]
    with contextlib.suppress(_Reached):
        simulation.run()
    if profiler is not None:
        profiler.disable()
    report: dict[str, object] = {
        "jobs": jobs,
        "gpus": gpus,
        "cycles_run": simulation.cycles,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if "end" not in marks:
        report["incomplete"] = "the trace ended before the segment did"
        return report
    report.update(
        start=start,
        count=count,
        cpu_to_start_s=round(marks["start"] - began, 2),
        pending_pods_at_start=int(marks["pending"]),
        ms_per_cycle=round(1000 * (marks["end"] - marks["start"]) / count, 1),
    )
    if profiler is not None and profile:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(profile)
        report["profile"] = out.getvalue()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=3000, help="cycles run before measuring")
    parser.add_argument("--count", type=int, default=200, help="cycles measured")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--gpus", type=int, default=256)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--profile", type=int, metavar="N", help="profile; print the top N")
    args = parser.parse_args(argv)
    report = measure(args.start, args.count, args.jobs, args.gpus, args.seed, args.profile)
    profile = report.pop("profile", None)
    print(json.dumps(report, indent=2), flush=True)
    if profile:
        print(profile, file=sys.stderr)
    return 0 if "incomplete" not in report else 1


if __name__ == "__main__":
    sys.exit(main())
