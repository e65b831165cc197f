"""The simulated autoscaler: nodes join scaleUpDelay after jobs wait for room, up to max,
and empty nodes leave after scaleDownDelay, down to min."""

from __future__ import annotations

from pathlib import Path

from scheduler.config import SchedulerConfig
from simulator import cluster, csvtrace
from simulator.events import Simulation


def test_pool_grows_to_max_and_shrinks_when_idle(fixtures: Path) -> None:
    scenario = csvtrace.load(
        str(fixtures / "burst.csv"), cluster.load(str(fixtures / "autoscaled.yaml"))
    )
    simulation = Simulation(scenario, SchedulerConfig())
    figures = simulation.run().figures
    # three jobs at 0 on an empty pool: two nodes (max) join at 30, first and second run
    # 31..41; third is bound at 41, runs 42..52. Both nodes are empty from 52 and leave at
    # 112; late (200) waits for a new node at 230 and runs 231..241.
    waits = sorted(run.first_start - run.job.arrival for run in simulation.runs)  # type: ignore[operator]
    assert waits == [31.0, 31.0, 31.0, 42.0]
    assert figures["autoscaler"] == {"scale_ups": 3, "scale_downs": 2}
    assert figures["makespan_s"] == 241.0
    # all four found no node at first; third then found both new nodes taken, but it
    # waited 30 s for a node and 11 s for a GPU: each job counts once, by its longest cause
    assert figures["pending_reasons"] == {"no nodes in the cluster": 4}
    third = next(r for r in figures["job_results"] if r["wait_s"] == 42.0)
    assert third["waited_for"] == "no nodes in the cluster"


def test_no_scale_down_under_a_decision_on_its_way(fixtures: Path) -> None:
    # first runs 11..41 on the only node. second arrives at 41: the cycle at 41 binds it
    # to that node, applied at 42. The node has been empty since 41 and its scale-down
    # check comes at 41.5, while that bind is on its way: the node must stay.
    scenario = csvtrace.load(
        str(fixtures / "back-to-back.csv"), cluster.load(str(fixtures / "quick-scale-down.yaml"))
    )
    simulation = Simulation(scenario, SchedulerConfig())
    figures = simulation.run().figures
    assert figures["completed"] == 2
    assert [run.first_start for run in simulation.runs] == [11.0, 42.0]
    assert figures["autoscaler"] == {"scale_ups": 1, "scale_downs": 0}
