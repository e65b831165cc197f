"""The cycle census on a small contended trace.

Why: the census backs docs/benchmarks.md's account of where a contended run's
cycles go; this keeps its report's shape and its sums true when the simulator
changes. Timings are not checked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import contended, cycle_census
from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult
from simulator import cluster, csvtrace
from simulator.events import Simulation

SMALL = ["--jobs", "30", "--gpus", "16"]


def test_the_census_adds_up_to_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert cycle_census.main(SMALL) == 0
    report = json.loads(capsys.readouterr().out)
    groups = report["by_wake"]
    assert groups
    assert sum(g["cycles"] for g in groups) == report["cycles"]
    idle = [g for g in groups if not g["changed_cluster"]]
    assert sum(g["cycles"] for g in idle) == report["changed_nothing"]["cycles"]
    woken = {part for g in groups for part in g["woken_by"].split(" + ")}
    # the first cycle follows the nodes and the first arrivals; binds are carried out later
    assert {"node", "arrival", "binds carried out"} <= woken


def test_the_census_counts_every_cycle_the_simulator_runs(tmp_path: Path) -> None:
    trace, cluster_file, _ = contended.write(str(tmp_path), 30, 16, 18)
    plain = Simulation(csvtrace.load(trace, cluster.load(cluster_file)), SchedulerConfig())
    plain.run()
    report = cycle_census.count(csvtrace.load(trace, cluster.load(cluster_file)), SchedulerConfig())
    assert report["cycles"] == plain.cycles


def test_the_census_sums_the_gangs_each_cycle_left_pending(tmp_path: Path) -> None:
    trace, cluster_file, _ = contended.write(str(tmp_path), 30, 16, 18)
    scenario = csvtrace.load(trace, cluster.load(cluster_file))
    waiting: list[int] = []
    simulation = Simulation(scenario, SchedulerConfig())
    noted = simulation.recorder.cycle

    def note(result: CycleResult) -> None:
        waiting.append(sum(1 for o in result.pod_groups if o.outcome == "pending"))
        noted(result)

    simulation.recorder.cycle = note  # type: ignore[method-assign]
    simulation.run()
    report = cycle_census.count(csvtrace.load(trace, cluster.load(cluster_file)), SchedulerConfig())
    assert report["pending_gang_cycles"] == sum(waiting) > 0
    assert report["most_pending_gangs"] == max(waiting)


def test_trace_and_cluster_go_together(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cycle_census.main(["--trace", "t.csv"])
    assert "go together" in capsys.readouterr().err
