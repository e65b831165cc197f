"""Pipelining onto releasing capacity (kai-semantics §5.1 node bookkeeping, §5.2 placement):
a pod that fits only with releasing resources is pipelined, and a gang that needs any
pipelined pod is pipelined whole, never partly bound.
"""

from __future__ import annotations

import pytest

from scheduler.testing import Scenario, check, job, node, pod, queue

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
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_allocate_pipelining(scenario: Scenario) -> None:
    check(scenario)
