"""The disruption search's bounds limit its cost, never its decisions on the benchmark shapes.

Why: the default bounds (simulations per action, search time per action and per
job) exist to stop pathological searches; a bound that changes what a normal
cluster gets decided is a bug (KAI's ReclaimLargeJobs went undecided under a
16-chunk bound). Every KAI benchmark topology and every workload of
benchmarks/disruption.py runs at a small size with the default configuration
and with every bound lifted, and the decisions must be equal. The time bounds
themselves are tested with a fake clock, and their configuration keys parsed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks import disruption, kai
from scheduler.actions import solver
from scheduler.cache.cluster_cache import ClusterCache
from scheduler.config import ConfigError, SchedulerConfig, load_config
from scheduler.cycle import CycleResult, run_cycle


def _decisions(result: CycleResult) -> tuple[object, ...]:
    return (
        sorted((b.pod, b.node) for b in result.binds),
        sorted((b.pod, b.node) for b in result.pipelined),
        sorted((e.pod, e.action, e.for_job or "") for e in result.evictions),
    )


def _both(cache: ClusterCache, actions: tuple[str, ...]) -> tuple[CycleResult, CycleResult]:
    bounded = SchedulerConfig().with_actions(actions)
    return (
        run_cycle(cache.snapshot().snapshot, bounded),
        run_cycle(cache.snapshot().snapshot, kai.unbounded(bounded)),
    )


def _kai_cases() -> Iterator[kai.Case]:
    yield from kai.cases(large_nodes=[20], divisor=2)
    yield from kai.cases(large_nodes=[20], divisor=10)[-3:]  # ReclaimLargeJobs, pods = nodes / 10


@pytest.mark.parametrize("case", list(_kai_cases()), ids=lambda c: c.name)
def test_kai_topologies_decide_the_same_bounded_or_not(case: kai.Case) -> None:
    bounded, unbounded = _both(kai.build(case.build()), case.actions)
    assert _decisions(bounded) == _decisions(unbounded)


@pytest.mark.parametrize("name", list(disruption.WORKLOADS))
def test_disruption_workloads_decide_the_same_bounded_or_not(name: str) -> None:
    workload = disruption.WORKLOADS[name](20, 3)
    bounded, unbounded = _both(disruption.build(workload), (workload.action,))
    assert _decisions(bounded) == _decisions(unbounded)
    assert bounded.evictions  # the workload does call for disruption


def test_search_time_bounds_stop_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """A clock that jumps an hour at every reading: the job's search stops at once, said why."""
    ticks = iter(range(0, 10**9, 3600))
    monkeypatch.setattr(solver, "now", lambda: float(next(ticks)))
    cache = kai.build(kai.topo.large_job(4))
    result = run_cycle(
        cache.snapshot().snapshot, SchedulerConfig(actions=("reclaim",)), explain=True
    )
    assert not result.evictions
    (outcome,) = [o for o in result.pod_groups if kai.topo.LARGE_JOB in o.pod_group]
    assert any("search time of 240s for one job used up" in r for r in outcome.reasons)


def test_search_bound_keys() -> None:
    config = load_config(
        {
            "maxActionSearchDuration": "5m",
            "maxJobSearchDuration": "90s",
            "maxVictimChunks": None,
            "maxSimulationsPerAction": 50,
        }
    )
    assert config.max_action_search_s == 300
    assert config.max_job_search_s == 90
    assert config.max_victim_chunks is None
    assert config.max_simulations_per_action == 50
    lifted = load_config({"maxActionSearchDuration": None, "maxJobSearchDuration": None})
    assert lifted.max_action_search_s is None
    assert lifted.max_job_search_s is None
    defaults = SchedulerConfig()
    assert (defaults.max_action_search_s, defaults.max_job_search_s) == (300, 240)
    assert defaults.max_victim_chunks is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"maxJobSearchDuration": "0s"}, "maxJobSearchDuration: expected a positive duration"),
        ({"maxActionSearchDuration": "soon"}, "maxActionSearchDuration"),
        ({"maxVictimChunks": 0}, "maxVictimChunks: expected a positive integer or null"),
    ],
)
def test_bad_search_bounds_are_named(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(data)
