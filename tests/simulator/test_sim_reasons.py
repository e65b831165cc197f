"""Pending reasons: one root cause per cycle's reasons, and each job counted once in a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.config import SchedulerConfig
from simulator import cluster, workloads
from simulator.events import Simulation
from simulator.reasons import root_cause

FIT = "pod sim/huge-0: 0/5 nodes are available: 5 Insufficient nvidia.com/gpu."
ACTIONS = (
    "consolidation: no victim would make room",
    "reclaim: queue ml would go over its fair share by reclaiming",
    "preempt: no running lower-priority preemptible job in queue ml may be evicted",
)


@pytest.mark.parametrize(
    ("reasons", "cause"),
    [
        ((FIT, *ACTIONS), "Insufficient nvidia.com/gpu"),
        ((*ACTIONS, FIT), "Insufficient nvidia.com/gpu"),  # the actions are consequences
        (
            (
                "OverLimit: gpu request of gpu=16 would take queue ml over its limit",
                *ACTIONS[1:],
            ),
            "OverLimit",
        ),
        (
            (
                "pod sim/a-0: 0/5 nodes are available: 1 Insufficient nvidia.com/gpu, "
                "4 node(s) didn't match Pod's node selector.",
            ),
            "didn't match Pod's node selector",  # rules out the most nodes
        ),
        (
            ("gang of 2 pods: only 0 could be placed; " + FIT,),
            "Insufficient nvidia.com/gpu",
        ),
        (("no nodes in the cluster",), "no nodes in the cluster"),
        (ACTIONS[1:], "no reclaim possible"),  # only failed actions: the first stands
        ((), "no reason given"),
    ],
)
def test_root_cause(reasons: tuple[str, ...], cause: str) -> None:
    assert root_cause(reasons) == cause


def test_a_stuck_job_is_counted_once(fixtures: Path) -> None:
    # picky never fits (its node selector matches no node); each cycle explains it with the
    # fit failure and the failed reclaim/preempt attempts: one job, one count
    scenario = workloads.load(
        str(fixtures / "stuck"), cluster.load(str(fixtures / "cluster.yaml")), "kai-scheduler"
    )
    figures = Simulation(scenario, SchedulerConfig()).run().figures
    assert figures["pending_reasons"] == {"didn't match Pod's node selector": 1}
    assert figures["queues"]["team-b"]["pending_reasons"] == {"didn't match Pod's node selector": 1}
    picky = next(r for r in figures["job_results"] if r["workload"] == "Job team-b/picky")
    assert picky["waited_for"] == "didn't match Pod's node selector"
    assert len(picky["last_reasons"]) > 1  # the sentences are all still in the JSON


def test_each_job_counts_at_most_once(fixtures: Path) -> None:
    from simulator import csvtrace

    scenario = csvtrace.load(
        str(fixtures / "frag.csv"), cluster.load(str(fixtures / "frag-cluster.yaml"))
    )
    figures = Simulation(scenario, SchedulerConfig()).run().figures
    waited = [r for r in figures["job_results"] if r["waited_for"] is not None]
    assert sum(figures["pending_reasons"].values()) == len(waited) <= figures["jobs"]
