"""Node-aware victim choice, written from docs/semantics.md §5.2 (victims, node by node).

Why: victims come in job order, which spreads them over the nodes; a gang of
whole-GPU tasks needs whole nodes. Evicting the order's prefix as it stands
would evict jobs on nodes the gang never uses (and then move them about).
KAI instead tries, within the prefix, the fewest nodes that can hold the gang,
smallest offer first, and evicts only the victims on them. The cases state
KAI's rule worked out by hand; KAI's ReclaimLargeJobs benchmark shape is then
checked by counts at several sizes (its own assertion: every pod of the large
job pipelined, ``pods x 8`` one-GPU victims).
"""

from __future__ import annotations

import pytest
from disruption_kit import Disruption, check, running

from benchmarks import kai_topologies as topo
from benchmarks.kai import build
from scheduler.config import SchedulerConfig
from scheduler.cycle import run_cycle
from tests.kits.worlds import job, node, queue

R = ("reclaim",)


def _three_pairs() -> list[object]:
    """Three 2-GPU nodes, each running two 1-GPU jobs of q0 (deserves nothing), listed in
    node order twice (a, b, c, then d, e, f), so the newest-first victim order visits
    n2, n1, n0, n2, ..."""
    return [
        node("n0", gpus=2),
        node("n1", gpus=2),
        node("n2", gpus=2),
        queue("q0"),
        queue("q1", gpu_quota=6),
        running("a", "q0", "n0"),
        running("b", "q0", "n1"),
        running("c", "q0", "n2"),
        running("d", "q0", "n0"),
        running("e", "q0", "n1"),
        running("f", "q0", "n2"),
    ]


CASES = [
    # Victim order f (n2), e (n1), d (n0), c (n2): the prefix first holds a whole node at c.
    # Of its nodes only n2 offers 2 GPUs: the victims there (f, c) go and nobody else, where
    # evicting the whole prefix would also move e and f about and lose d.
    Disruption(
        "victims-of-one-node-not-the-prefix",
        [*_three_pairs(), job("big", "q1", gpus=2)],
        R,
        evicted=["c-0", "f-0"],
        pipelined={"big-0": "n2"},
    ),
    # Two 2-GPU tasks: the prefix must reach a second whole node (b after f, e, d, c); the
    # two nodes offering 2 GPUs are n2 and n1, so exactly their four jobs go.
    Disruption(
        "a-gang-takes-the-fewest-whole-nodes",
        [*_three_pairs(), job("big", "q1", 2, gpus=2)],
        R,
        evicted=["b-0", "c-0", "e-0", "f-0"],
        pipelined={"big-0": "n1", "big-1": "n2"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_node_aware(case: Disruption) -> None:
    check(case)


@pytest.mark.parametrize("nodes", [2, 4, 6, 10, 20])
def test_reclaim_large_jobs_counts_equal_kais(nodes: int) -> None:
    """KAI's ReclaimLargeJobs: half the nodes emptied, exactly, nothing moved."""
    cluster = topo.large_job(nodes)
    result = run_cycle(build(cluster).snapshot().snapshot, SchedulerConfig(actions=R))
    tasks = topo.large_job_tasks(nodes)
    assert len(result.pipelined) == tasks
    assert all(topo.LARGE_JOB in b.pod for b in result.pipelined)
    assert len(result.evictions) == tasks * topo.LARGE_JOB_GPUS_PER_TASK
    assert not result.binds
    # the victims are exactly the jobs on the nodes the large job takes
    taken = {b.node for b in result.pipelined}
    homes = {
        f"ns-queue-0/running-job-{i}-0": f"node-{i % nodes:05d}"
        for i in range(nodes * topo.GPUS_PER_NODE)
    }
    assert {e.pod for e in result.evictions} == {p for p, n in homes.items() if n in taken}
