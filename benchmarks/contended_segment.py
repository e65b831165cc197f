"""The engine's cost per cycle late in a contended trace, without running the whole trace.

Why: the 2,000-job / 256-GPU trace (``simulate_trace --case contended-2000``)
runs for minutes, and its cycles grow dearer as the backlog grows (hundreds of
gangs pending). This replays the same trace in-process, reports the CPU time
to reach cycle START, then the CPU time per cycle of the next COUNT cycles
(optionally under cProfile), and stops: a before/after figure for one segment
in a few minutes.

With ``--per-action`` it also reports the CPU milliseconds per cycle each action
took in the segment, and the rest of the cycle (session, report, the simulator).

Run: ``python -m benchmarks.contended_segment [--start N] [--count N] [--jobs N]
[--gpus N] [--seed N] [--profile N] [--per-action]``.
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
from collections.abc import Callable, Iterator

from benchmarks import contended
from scheduler import cycle as scheduler_cycle
from scheduler.config import SchedulerConfig
from simulator import cluster, csvtrace
from simulator.events import Simulation


class _Reached(Exception):
    """The segment is measured: stop the simulation."""


def measure(
    start: int,
    count: int,
    jobs: int,
    gpus: int,
    seed: int,
    profile: int | None = None,
    per_action: bool = False,
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
    spent: dict[str, float] = {}
    timing = (
        _timed_actions(spent, lambda: "start" in marks and "end" not in marks)
        if per_action
        else contextlib.nullcontext()
    )

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
    with timing, contextlib.suppress(_Reached):
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
    if per_action:
        actions = {name: round(1000 * seconds / count, 2) for name, seconds in spent.items()}
        rest = 1000 * (marks["end"] - marks["start"]) / count - sum(actions.values())
        report["ms_per_cycle_by_action"] = {**actions, "rest of the cycle": round(rest, 2)}
    if profiler is not None and profile:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(profile)
        report["profile"] = out.getvalue()
    return report


@contextlib.contextmanager
def _timed_actions(spent: dict[str, float], measuring: Callable[[], bool]) -> Iterator[None]:
    """Add each action's CPU time to ``spent`` while ``measuring()``; the actions are
    restored afterwards."""
    originals = {name: action.execute for name, action in scheduler_cycle.ACTIONS.items()}
    for name, action in scheduler_cycle.ACTIONS.items():

        def timed(
            self: object,
            session: object,
            name: str = name,
            execute: Callable[[object, object], None] = originals[name],
        ) -> None:
            if not measuring():
                return execute(self, session)
            started = time.process_time()
            execute(self, session)
            spent[name] = spent.get(name, 0.0) + time.process_time() - started
            return None

        action.execute = timed  # type: ignore[assignment]
    try:
        yield
    finally:
        for name, action in scheduler_cycle.ACTIONS.items():
            action.execute = originals[name]  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=3000, help="cycles run before measuring")
    parser.add_argument("--count", type=int, default=200, help="cycles measured")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--gpus", type=int, default=256)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--profile", type=int, metavar="N", help="profile; print the top N")
    parser.add_argument(
        "--per-action", action="store_true", help="CPU ms per cycle of each action too"
    )
    args = parser.parse_args(argv)
    report = measure(
        args.start, args.count, args.jobs, args.gpus, args.seed, args.profile, args.per_action
    )
    profile = report.pop("profile", None)
    print(json.dumps(report, indent=2), flush=True)
    if profile:
        print(profile, file=sys.stderr)
    return 0 if "incomplete" not in report else 1


if __name__ == "__main__":
    sys.exit(main())
