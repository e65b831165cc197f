"""Every cycle of the contended benchmark trace decides the same with and without memos.

The engine keeps pending-work memos within a cycle (allocate's failed gang
shapes, the shared pop order, tasks to allocate, queue order keys, fit-failure
sentences; ``Session.memoise``). They must change nothing: each cycle's binds,
pipelined pods, evictions, outcomes with their reasons, queue summaries and
annotations are compared one by one, under the default and the spread
placement. The trace is the head of the 2,000-job / 256-GPU benchmark
(``benchmarks.contended``, seed 18): its first 300 jobs wait for hours, so
hundreds of gangs are pending in a cycle, and teams reclaim and preempt.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchmarks.contended import cluster_document, trace_rows
from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult
from scheduler.framework.session import Session
from simulator import cluster, csvtrace
from simulator.events import Simulation

JOBS = 300
GPUS = 256
CONFIGS = {
    "default": SchedulerConfig(),
    "spread": SchedulerConfig(gpu_placement="spread", cpu_placement="spread"),
}


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    directory = tmp_path_factory.mktemp("contended")
    rows = trace_rows(2000, GPUS, 18)[: JOBS + 1]  # the header and the first jobs
    (directory / "trace.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (directory / "cluster.yaml").write_text(yaml.safe_dump(cluster_document(GPUS)))
    return directory / "trace.csv", directory / "cluster.yaml"


def _cycles(trace: tuple[Path, Path], config: SchedulerConfig) -> list[CycleResult]:
    scenario = csvtrace.load(str(trace[0]), cluster.load(str(trace[1])))
    simulation = Simulation(scenario, config)
    results: list[CycleResult] = []
    record = simulation.recorder.cycle

    def recording(result: CycleResult) -> None:
        results.append(result)
        record(result)

    simulation.recorder.cycle = recording  # type: ignore[method-assign]
    simulation.run()
    return results


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_cycle_is_the_same_without_memos(
    trace: tuple[Path, Path], name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    memoised = _cycles(trace, CONFIGS[name])
    monkeypatch.setattr(Session, "memoise", False)
    fresh = _cycles(trace, CONFIGS[name])
    assert len(memoised) == len(fresh)
    for index, (mine, theirs) in enumerate(zip(memoised, fresh, strict=True)):
        assert mine == theirs, f"cycle {index} differs"
    pending = max(sum(o.outcome == "pending" for o in r.pod_groups) for r in memoised)
    assert pending > 50  # contended: many gangs wait in one cycle
    evictions = {e.action for r in memoised for e in r.evictions}
    assert evictions & {"reclaim", "preempt"}
