"""Pipelining onto releasing capacity (docs/semantics.md §5.1 node bookkeeping, §5.2 placement):
a pod that fits only with releasing resources is pipelined, and a gang that needs any
pipelined pod is pipelined whole, never partly bound.
"""

from __future__ import annotations

import pytest

from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import open_session
from tests.kits.worlds import ALLOCATE_ONLY, NOW, Scenario, check, job, node, pod, queue, sourced

ALL_ACTIONS = SchedulerConfig()

# Two GPUs idle on n1, one releasing on n0: a 3-pod gang fits only with n0's releasing GPU.
TWO_IDLE_ONE_RELEASING = [
    queue("q"),
    node("n0", gpus=1),
    node("n1", gpus=2),
    job("leaving", "q", gpus=1, states=["Releasing"], nodes=["n0"]),
]
# One GPU idle on n1, one releasing on n0.
ONE_IDLE_ONE_RELEASING = [
    queue("q"),
    node("n0", gpus=1),
    node("n1", gpus=1),
    job("leaving", "q", gpus=1, states=["Releasing"], nodes=["n0"]),
]

SCENARIOS = [
    # n0's only GPU is held by a Releasing pod: the new pod fits only on releasing, so it
    # is pipelined there (no bind).
    Scenario(
        "pipeline-on-releasing",
        [
            queue("q"),
            node("n0", gpus=1),
            job("leaving", "q", gpus=1, states=["Releasing"], nodes=["n0"]),
            job("j", "q", gpus=1),
        ],
        pipelined={"j-0": "n0"},
    ),
    # Gang of 2: the first pod fits on n1's idle GPU, the second only on n0's releasing GPU;
    # the gang would start with fewer than 2 settled pods, so both are pipelined.
    Scenario(
        "gang-pipelined-whole",
        [
            queue("q"),
            node("n0", gpus=1),
            node("n1", gpus=1),
            job("leaving", "q", gpus=1, states=["Releasing"], nodes=["n0"]),
            job("g", "q", 2, gpus=1),
        ],
        pipelined={"g-0": "n1", "g-1": "n0"},
    ),
    # Gang of 3 with 1 idle + 1 releasing GPU: it does not fit even with releasing
    # capacity, so nothing is bound or pipelined.
    Scenario(
        "gang-too-big-even-with-releasing",
        [
            queue("q"),
            node("n0", gpus=1),
            node("n1", gpus=1),
            job("leaving", "q", gpus=1, states=["Releasing"], nodes=["n0"]),
            job("g", "q", 3, gpus=1),
        ],
        pending=["g"],
    ),
    # Elastic (min 1): the first pop binds e-0 on idle n1; the extra e-1 only fits on n0's
    # releasing GPU and is pipelined, and since the gang minimum is already settled
    # (e-0 binding) the bind stays.
    Scenario(
        "elastic-extra-pipelined-core-bound",
        [
            queue("q"),
            node("n0", gpus=1),
            node("n1", gpus=1),
            job("leaving", "q", gpus=1, states=["Releasing"], nodes=["n0"]),
            job("e", "q", 2, gpus=1, min_member=1),
        ],
        binds={"e-0": "n1"},
        pipelined={"e-1": "n0"},
    ),
    # A pipelined reservation counts to the queue during the cycle (pipelining fires the
    # allocate event): with limit 1, the second job is OverLimit.
    Scenario(
        "pipelined-counts-to-queue-limit",
        [
            queue("q", gpu_limit=1),
            queue("other"),
            node("n0", gpus=2),
            job("leaving", "other", 2, gpus=1, states=["Releasing"] * 2, nodes=["n0"] * 2),
            job("j1", "q", gpus=1),
            job("j2", "q", gpus=1),
        ],
        pipelined={"j1-0": "n0"},
        pending=["j2"],
        reasons={"j2": ["OverLimit"]},
    ),
    # §5.1: after a successful commit the job is pushed back while it has Pending pods, even
    # when the commit only pipelined. Elastic (min 1) with 2 releasing GPUs: e-0 is
    # pipelined, then the extra e-1 on the second releasing GPU.
    Scenario(
        "elastic-pipelined-job-pushed-back",
        [
            queue("q"),
            node("n0", gpus=2),
            job("leaving", "q", 2, gpus=1, states=["Releasing"] * 2, nodes=["n0"] * 2),
            job("e", "q", 2, gpus=1, min_member=1),
        ],
        pipelined={"e-0": "n0", "e-1": "n0"},
    ),
    # §5.1: a Releasing pod of another scheduler frees capacity like ours: pipelined onto it.
    Scenario(
        "pipeline-on-foreign-releasing-pod",
        [
            queue("q"),
            node("n0", gpus=1),
            *pod("web", gpus=1, state="Releasing", node="n0", scheduler_name="other"),
            job("j", "q", gpus=1),
        ],
        pipelined={"j-0": "n0"},
    ),
    # Releasing capacity is used only once: two 1-GPU jobs, one releasing GPU; the second
    # job finds nothing.
    Scenario(
        "releasing-capacity-used-once",
        [
            queue("q"),
            node("n0", gpus=1),
            job("leaving", "q", gpus=1, states=["Releasing"], nodes=["n0"]),
            job("j1", "q", gpus=1),
            job("j2", "q", gpus=1),
        ],
        pipelined={"j1-0": "n0"},
        pending=["j2"],
    ),
    # The shapes random states with Releasing pods produce, as gangs (minimum = size) and
    # with all five actions: 3 pods on 2 idle + 1 releasing GPU, 2 pods on 1 + 1. Each gang
    # is pipelined whole, never 2 bound + 1 pipelined or 1 + 1.
    Scenario(
        "gang-of-3-two-idle-one-releasing-pipelined-whole",
        [*TWO_IDLE_ONE_RELEASING, job("g", "q", 3, gpus=1)],
        pipelined={"g-0": "n1", "g-1": "n1", "g-2": "n0"},
        config=ALL_ACTIONS,
    ),
    Scenario(
        "gang-of-2-one-idle-one-releasing-pipelined-whole",
        [*ONE_IDLE_ONE_RELEASING, job("g", "q", 2, gpus=1)],
        pipelined={"g-0": "n1", "g-1": "n0"},
        config=ALL_ACTIONS,
    ),
    # The same shapes as elastic jobs: the minimum (2 of 3, 1 of 2) binds on idle GPUs, and
    # the extra pod, placed by a later pop once the minimum is settled, waits alone on the
    # releasing GPU (KAI pipelines a job whole only while a pod set is below its minimum).
    Scenario(
        "elastic-3-min-2-core-bound-extra-pipelined",
        [*TWO_IDLE_ONE_RELEASING, job("e", "q", 3, gpus=1, min_member=2)],
        binds={"e-0": "n1", "e-1": "n1"},
        pipelined={"e-2": "n0"},
        config=ALL_ACTIONS,
    ),
    Scenario(
        "elastic-2-min-1-core-bound-extra-pipelined",
        [*ONE_IDLE_ONE_RELEASING, job("e", "q", 2, gpus=1, min_member=1)],
        binds={"e-0": "n1"},
        pipelined={"e-1": "n0"},
        config=ALL_ACTIONS,
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_allocate_pipelining(scenario: Scenario) -> None:
    check(scenario)


def test_commit_pipelines_a_gang_that_would_start_partly_pipelined() -> None:
    """Whoever fills the statement, its commit binds no part of a gang below its minimum."""
    objects = [*TWO_IDLE_ONE_RELEASING, job("g", "q", 3, gpus=1)]
    snapshot = build_snapshot(sourced(objects), now=NOW.timestamp()).snapshot
    session = open_session(snapshot, ALLOCATE_ONLY)
    pods = {pod.key: pod for pod in snapshot.pods}
    n0, n1 = snapshot.nodes.names.index("n0"), snapshot.nodes.names.index("n1")
    statement = session.statement()
    statement.allocate(pods["default/g-0"], n1)
    statement.allocate(pods["default/g-1"], n1)
    statement.pipeline(pods["default/g-2"], n0)
    statement.commit()
    assert session.decisions.binds == []
    assert sorted((p.key, n) for p, n in session.decisions.pipelined) == [
        ("default/g-0", n1),
        ("default/g-1", n1),
        ("default/g-2", n0),
    ]
