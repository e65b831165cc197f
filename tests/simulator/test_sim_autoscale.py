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
    # all four found no node at first; third then found both new nodes taken
    assert figures["pending_reasons"]["no nodes in the cluster"] == 4
    assert figures["pending_reasons"]["Insufficient nvidia.com/gpu"] == 1
