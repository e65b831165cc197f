"""``podmuster simulate --sweep SWEEP.yaml``: a grid of configurations over one trace (§5).

Why: the sweep is ``simulate`` run once per point of a grid, so it keeps
``simulate``'s input options, bad-input rules and signal handling and adds
only what a grid needs: the SWEEP.yaml (``simulator.sweep``), where the
points run (Ray by default, ``--ray-address`` for a cluster, ``--sweep-local``
in this process) and the results (``simulator.sweep_report``).

Exit codes: 2 for bad input (as ``simulate``, including Ray not installed
without ``--sweep-local``), 1 when some point failed (the others are
printed), 128 + the signal's number when SIGINT or SIGTERM cancelled it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from crds.errors import InputError
from podmuster import output
from podmuster.schedule_command import report_bad_objects
from podmuster.simulate_command import _period, _scenario, _stop_on_signals
from scheduler.config import SchedulerConfig

if TYPE_CHECKING:
    from simulator.model import Scenario
    from simulator.sweep import Sweep

DEFAULT_RAY_CPUS = 2  # a local Ray stays small: the machine is shared with everything else


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sweep",
        metavar="SWEEP.yaml",
        help="run a grid of configurations and queue quotas (docs/simulate.md, Sweeps)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--sweep-local",
        action="store_true",
        help="run the sweep's points one by one in this process, without Ray",
    )
    where.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="run the sweep on this Ray cluster (default: $RAY_ADDRESS, else a local Ray)",
    )
    parser.add_argument(
        "--ray-cpus",
        type=int,
        metavar="N",
        help=f"CPUs of the local Ray, points run at once (default {DEFAULT_RAY_CPUS})",
    )


def _input(args: argparse.Namespace, given: dict[str, Any]) -> argparse.Namespace:
    """The simulate options for the scenario: each command-line option wins over the file's key."""
    merged = argparse.Namespace(**vars(args))
    for attr, key in (
        ("trace", "trace"),
        ("trace_format", "traceFormat"),
        ("pods", "pods"),
        ("cluster", "cluster"),
        ("workloads", "workloads"),
        ("period", "period"),
    ):
        if getattr(args, attr) is None and key in given:
            setattr(merged, attr, given[key])
    if args.arrival_scale == 1.0 and "arrivalScale" in given:
        merged.arrival_scale = given["arrivalScale"]
    return merged


def refuse_without_sweep(args: argparse.Namespace) -> None:
    """The sweep's own options mean nothing to a single run: an error, not silence."""
    for flag, given in (
        ("--sweep-local", args.sweep_local),
        ("--ray-address", args.ray_address is not None),
        ("--ray-cpus", args.ray_cpus is not None),
    ):
        if given:
            raise InputError("only a sweep runs on Ray; give --sweep SWEEP.yaml", field=flag)


def _checks(args: argparse.Namespace) -> None:
    if args.config or args.compare:
        raise InputError(
            "a sweep's configurations are its file's base and axes", field="--config/--compare"
        )
    if args.label:
        raise InputError(
            "a sweep's points are named by their axis values, not by --label", field="--label"
        )
    if args.ray_cpus is None:
        args.ray_cpus = DEFAULT_RAY_CPUS
    if args.ray_cpus < 1:
        raise InputError(f"expected at least 1, got {args.ray_cpus}", field="--ray-cpus")


def _load(args: argparse.Namespace) -> tuple[Sweep, Scenario, float, int]:
    """The checked sweep, its scenario (bad objects left out), the period, and the exit code."""
    from simulator import sweep
    from simulator.checking import leave_out_bad_objects

    grid = sweep.load(args.sweep, cluster=args.cluster)
    options = _input(args, dict(grid.input))
    first = grid.points[0].config
    scheduler_name = (first or SchedulerConfig()).scheduler_name
    scenario = _scenario(options, scheduler_name)
    leave_out_bad_objects(scenario, scheduler_name)
    bad_input = report_bad_objects(scenario.bad_objects)
    sweep.check_queues(grid, scenario.queues)
    sweep.check_scheduler_name(grid, scenario.jobs, scenario.config)
    period = _period(options.period, scenario.period)
    if not options.arrival_scale > 0:
        raise InputError(f"must be positive, got {options.arrival_scale}", field="--arrival-scale")
    for job in scenario.jobs:
        job.arrival *= options.arrival_scale
    return grid, scenario, period, bad_input


def run(args: argparse.Namespace) -> int:
    from simulator import report, sweep_report, sweep_run
    from simulator.progress import StopFlag

    _checks(args)
    if not args.sweep_local:
        from simulator import sweep_ray

        why = sweep_ray.missing()
        if why is not None:
            raise InputError(f"{why}, or run it without Ray with --sweep-local", field="--sweep")
    grid, scenario, period, bad_input = _load(args)
    address = None if args.sweep_local else args.ray_address or os.environ.get("RAY_ADDRESS")
    where = "this process" if args.sweep_local else (address or f"local Ray, {args.ray_cpus} CPUs")
    settings = {
        "points": len(grid.points),
        "runner": where,
        "period": f"{period:g}s",
        "base configuration": grid.base or "the cluster's or the defaults",
    }
    done: list[dict[str, Any]] = []

    def on_done(entry: dict[str, Any]) -> None:
        done.append(entry)
        if not args.no_progress:
            wall = (entry["metrics"] or {}).get("wall_seconds")
            took = f" in {wall:g}s" if wall is not None else ""
            print(
                f"sweep: {len(done)}/{len(grid.points)} points done: "
                f"{entry['name']} {entry['status']}{took}",
                file=sys.stderr,
                flush=True,
            )

    flag = StopFlag()
    started = time.perf_counter()
    if args.sweep_local:
        with _stop_on_signals(flag):
            rows = sweep_run.run_serial(scenario, grid.points, period, stop=flag, on_done=on_done)
    else:
        from simulator import sweep_ray

        if not args.no_progress:
            print(f"sweep: {len(grid.points)} points on {where}", file=sys.stderr, flush=True)
        with sweep_ray.session(address, args.ray_cpus), _stop_on_signals(flag):
            rows = sweep_ray.run(scenario, grid.points, period, stop=flag, on_done=on_done)
    settings["wall seconds"] = round(time.perf_counter() - started, 2)
    settings.update(sweep_report.progress(rows))
    if args.report:
        page = sweep_report.render(grid, rows, source=scenario.source, settings=settings)
        report.write(args.report, page)
    if args.output == "table":
        sweep_report.table(rows)
        if args.report:
            print(f"report: {args.report}")
    else:
        output.write(sweep_report.document(grid, rows, settings), args.output)
    if flag.signum is not None:
        return 128 + flag.signum
    if any(entry["status"] == "failed" for entry in rows):
        return 1
    return bad_input
