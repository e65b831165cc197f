"""The event loop's fast path decides exactly what a cycle on every tick decides.

The simulator skips a tick when nothing changed since the last cycle (no
arrival, completion, applied decision, node or timer) and when a cycle's only
decisions are pipelined pods. The reference here runs a cycle on every tick
while a pod is pending (``every_tick=True``): the starts, ends, binds and
evictions must be the same, only the number of cycles differs. The trace
(fixtures/contended.csv on 16 GPUs) queues more work than fits, with gangs,
shared GPUs and preemptible builds above training, so reclaim and preemption happen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult
from simulator import cluster, csvtrace
from simulator.events import Simulation

CONFIGS = {
    "default": SchedulerConfig(),
    "spread": SchedulerConfig(gpu_placement="spread", cpu_placement="spread"),
    "min-runtime": SchedulerConfig(
        default_reclaim_min_runtime_s=45.0, default_preempt_min_runtime_s=30.0
    ),
}


def _replay(fixtures: Path, config: SchedulerConfig, *, every_tick: bool) -> dict[str, Any]:
    scenario = csvtrace.load(
        str(fixtures / "contended.csv"), cluster.load(str(fixtures / "contended-cluster.yaml"))
    )
    simulation = Simulation(scenario, config, every_tick=every_tick)
    decisions: list[tuple[float, list[tuple[str, str]], list[tuple[str, str]]]] = []
    apply = simulation._apply

    def recording(result: CycleResult) -> None:
        binds = sorted((bind.pod, bind.node) for bind in result.binds)
        evictions = sorted((eviction.pod, eviction.action) for eviction in result.evictions)
        decisions.append((simulation.now, binds, evictions))
        apply(result)

    simulation._apply = recording  # type: ignore[method-assign]
    metrics = simulation.run()
    figures = {
        key: value
        for key, value in metrics.figures.items()
        if key not in ("cycles", "engine_seconds", "snapshot_seconds", "wall_seconds")
    }
    return {
        "decisions": decisions,
        "jobs": [(r.job.key, r.first_start, r.start, r.end) for r in simulation.runs],
        "figures": figures,
        "cycles": simulation.cycles,
    }


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_fast_path_makes_the_decisions_of_a_cycle_on_every_tick(fixtures: Path, name: str) -> None:
    fast = _replay(fixtures, CONFIGS[name], every_tick=False)
    slow = _replay(fixtures, CONFIGS[name], every_tick=True)
    assert fast["jobs"] == slow["jobs"]
    assert fast["decisions"] == slow["decisions"]
    assert fast["figures"] == slow["figures"]
    assert fast["cycles"] < slow["cycles"]
    evicted = {action for _, _, evictions in fast["decisions"] for _, action in evictions}
    assert evicted & {"reclaim", "preempt"}  # the trace is contended enough to disrupt
    assert all(end is not None for _, _, _, end in fast["jobs"])


def test_a_cycle_deciding_only_pipelined_pods_is_not_carried_out() -> None:
    from scheduler.cycle import Bind
    from simulator.events import changes_cluster

    pipelined = CycleResult(pipelined=[Bind(pod="ns/p", node="n")])
    assert not changes_cluster(pipelined)
    assert changes_cluster(CycleResult(binds=[Bind(pod="ns/p", node="n")]))
    assert changes_cluster(CycleResult(annotations={"ns/g": {"a": None}}))
