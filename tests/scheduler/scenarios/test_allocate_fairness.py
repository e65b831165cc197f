"""Queue order and fair share as seen through allocation order (docs/semantics.md §5.4).

Fair shares are computed by hand in each comment; the pool of free GPUs is kept
small so the order in which queues are served decides who gets them.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.kits.worlds import Scenario, check, job, node, queue

GPU_ONLY = {"cpu": None, "memory": None}
# Fair share 0 in every resource: quota 0 and over-quota weight 0 for GPU, CPU and memory.
ZERO_SHARE = {"cpu_quota": 0, "memory_quota": 0}


def _one_gpu_contest(
    name: str, queues: list[dict[str, Any]], *, jobs_first: str, winner: str
) -> Scenario:
    """qa and qb each have one 1-GPU job (``jobs_first``'s is older) for n0's only GPU."""
    order = [jobs_first, "qb" if jobs_first == "qa" else "qa"]
    loser = "qb" if winner == "qa" else "qa"
    return Scenario(
        name,
        [*queues, node("n0", gpus=1), *(job(q[1], q, gpus=1) for q in order)],
        binds={f"{winner[1]}-0": "n0"},
        pending=[loser[1]],
    )


SCENARIOS = [
    # Rule 2 beats rule 3: qa (priority 200) has 2 of its deserved 2 running, so 2+1 > 2 is
    # not starved; qb (priority 100) has 0+1 <= 2 and is starved, so qb gets the free GPU.
    Scenario(
        "starved-before-priority",
        [
            queue("qa", gpu_quota=2, priority=200),
            queue("qb", gpu_quota=2),
            node("n0", gpus=3),
            job("a-run", "qa", 2, gpus=1, states=["Running"] * 2, nodes=["n0"] * 2),
            job("a", "qa", gpus=1),
            job("b", "qb", gpus=1),
        ],
        binds={"b-0": "n0"},
        pending=["a"],
    ),
    # Rule 3: neither queue is starved (quota 0); the higher-priority, newer qa goes first.
    _one_gpu_contest(
        "higher-queue-priority-first",
        [queue("qb", priority=50), queue("qa", priority=100)],
        jobs_first="qb",
        winner="qa",
    ),
    # §2.3: queue priority defaults to 100, so the unset qb beats qa (99) under rule 3 although
    # qa is older.
    _one_gpu_contest(
        "queue-priority-defaults-to-100",
        [queue("qa", priority=99), queue("qb")],
        jobs_first="qa",
        winner="qb",
    ),
    # Rule 5 (DRF): fair shares qa=1, qb=1 (deserved only, OQW 0). qa would reach 3/1,
    # qb 2/1, so qb goes first although qa and its job are older.
    Scenario(
        "lower-dominant-share-first",
        [
            queue("qa", gpu_quota=1),
            queue("qb", gpu_quota=1),
            node("n0", gpus=4),
            job("a-run", "qa", 2, gpus=1, states=["Running"] * 2, nodes=["n0"] * 2),
            job("b-run", "qb", gpus=1, states=["Running"], nodes=["n0"]),
            job("a", "qa", gpus=1),
            job("b", "qb", gpus=1),
        ],
        binds={"b-0": "n0"},
        pending=["a"],
    ),
    # Rule 5 over all resources: by GPU alone qb and qa tie (1/2 each) and the older qb
    # would win; but qb's CPU share would be (3+1)/4 = 1.0 > qa's 0.5, so qa goes first.
    Scenario(
        "dominant-resource-is-cpu",
        [
            queue("qb", gpu_quota=2, cpu_quota=4000),
            queue("qa", gpu_quota=2, cpu_quota=4000),
            node("n0", gpus=1, cpu="8"),
            job("b-run", "qb", cpu="3", memory=None, states=["Running"], nodes=["n0"]),
            job("b", "qb", gpus=1, cpu="1", memory=None),
            job("a", "qa", gpus=1, cpu="1", memory=None),
        ],
        binds={"a-0": "n0"},
        pending=["b"],
    ),
    # Rule 8: identical empty queues tie on rules 1-7; the older queue qa wins even though
    # qb's job is older.
    _one_gpu_contest(
        "older-queue-wins-tie", [queue("qa"), queue("qb")], jobs_first="qb", winner="qa"
    ),
    # Rule 7: CPU-only jobs tie on DRF (same CPU share of the cluster); qb's allocatable
    # share (GPU 1) is smaller than qa's (GPU 2), so qb goes first despite being newer.
    Scenario(
        "smaller-allocatable-share-first",
        [
            queue("qa", gpu_quota=2),
            queue("qb", gpu_quota=1),
            node("n0", cpu="1"),
            job("a", "qa", cpu="1", memory=None),
            job("b", "qb", cpu="1", memory=None),
        ],
        binds={"b-0": "n0"},
        pending=["a"],
    ),
    # Rule 7 reads an unlimited (-1) allocatable share as above every number (KAI's
    # compareQuantities): qa's GPU share is -1 (quota and limit -1), qb's 2, so qb's
    # share is the smaller and qb goes first, although qa is older (rule 8 would pick qa).
    Scenario(
        "unlimited-allocatable-share-is-the-largest",
        [
            queue("qa", gpu_quota=-1),
            queue("qb", gpu_quota=2),
            node("n0", cpu="1"),
            job("a", "qa", cpu="1", memory=None),
            job("b", "qb", cpu="1", memory=None),
        ],
        binds={"b-0": "n0"},
        pending=["a"],
    ),
    # Rule 4: qa has allocatable share 0 (quota 0, OQW 0) while asking a GPU, so it is
    # penalised; qb (OQW 1, fair share 1) goes first although qa is older.
    _one_gpu_contest(
        "zero-share-penalised",
        [queue("qa"), queue("qb", gpu_weight=1)],
        jobs_first="qa",
        winner="qb",
    ),
    # Rule 1: qa (priority 200) holds 1 GPU/1 CPU/1G with a fair share of 0 in every
    # resource, so it is over-utilised and goes after qb, whatever its priority.
    Scenario(
        "over-utilised-last",
        [
            queue("qa", priority=200, **ZERO_SHARE),
            queue("qb", gpu_weight=1, cpu_weight=1, memory_weight=1),
            node("n0", gpus=2),
            job("a-run", "qa", gpus=1, states=["Running"], nodes=["n0"]),
            job("a", "qa", gpus=1),
            job("b", "qb", gpus=1),
        ],
        binds={"b-0": "n0"},
        pending=["a"],
    ),
    # Over-quota weights 2:1 over 3 GPUs: fair shares qa=2, qb=1. Order: qa (1/2 < 1/1),
    # then qb (tie at 1 on rule 5, DRF without job 0 < 1/2), then qa (2/2 < 2/1):
    # qa gets 2, qb 1, exactly the fair shares.
    Scenario(
        "over-quota-weights-2-to-1",
        [
            queue("qa", gpu_weight=2),
            queue("qb", gpu_weight=1),
            node("n0", gpus=3),
            *[job(f"a{i}", "qa", gpus=1, **GPU_ONLY) for i in range(3)],
            *[job(f"b{i}", "qb", gpus=1, **GPU_ONLY) for i in range(3)],
        ],
        binds={"a0-0": "n0", "a1-0": "n0", "b0-0": "n0"},
        pending=["a2", "b1", "b2"],
    ),
    # Two levels: departments d1, d2 deserve 2 each of 4 GPUs (fair share 2 each); d1's leaf
    # a1 and d2's leaf b both want 4. Starvation and DRF at the department level give
    # 2 + 2 although a1 is older.
    Scenario(
        "hierarchy-departments-split",
        [
            queue("d1", gpu_quota=2),
            queue("d2", gpu_quota=2),
            queue("a1", "d1", gpu_quota=2),
            queue("a2", "d1"),
            queue("b", "d2", gpu_quota=2),
            node("n0", gpus=4),
            *[job(f"a{i}", "a1", gpus=1, **GPU_ONLY) for i in range(4)],
            *[job(f"b{i}", "b", gpus=1, **GPU_ONLY) for i in range(4)],
        ],
        binds={"a0-0": "n0", "a1-0": "n0", "b0-0": "n0", "b1-0": "n0"},
        pending=["a2", "a3", "b2", "b3"],
    ),
    # Three levels (root r -> d -> leaves a, b): d's fair share 4 splits into deserved a=1,
    # b=3; DRF against those shares and starvation give b 3 GPUs and a 1.
    Scenario(
        "three-level-tree",
        [
            queue("r", gpu_quota=4),
            queue("d", "r", gpu_quota=4),
            queue("a", "d", gpu_quota=1),
            queue("b", "d", gpu_quota=3),
            node("n0", gpus=4),
            *[job(f"a{i}", "a", gpus=1, **GPU_ONLY) for i in range(4)],
            *[job(f"b{i}", "b", gpus=1, **GPU_ONLY) for i in range(4)],
        ],
        binds={"a0-0": "n0", "b0-0": "n0", "b1-0": "n0", "b2-0": "n0"},
        pending=["a1", "a2", "a3", "b3"],
    ),
    # Deserved quota 3 vs 1 over 4 GPUs: DRF against the quotas serves qa, qa, then qb
    # (tie at 1, qb has 0 without the job), then qa is still starved (2+1 <= 3) and qb is
    # not: qa gets 3 and qb 1.
    Scenario(
        "deserved-quota-3-to-1",
        [
            queue("qa", gpu_quota=3),
            queue("qb", gpu_quota=1),
            node("n0", gpus=4),
            *[job(f"a{i}", "qa", gpus=1, **GPU_ONLY) for i in range(4)],
            *[job(f"b{i}", "qb", gpus=1, **GPU_ONLY) for i in range(4)],
        ],
        binds={"a0-0": "n0", "a1-0": "n0", "a2-0": "n0", "b0-0": "n0"},
        pending=["a3", "b1", "b2", "b3"],
    ),
    # A queue priority bucket is served first in the over-quota phase: qa (priority 200)
    # gets the whole left-over 2, qb nothing, and rule 3 serves qa first anyway: qa gets
    # both GPUs.
    Scenario(
        "priority-bucket-takes-leftover",
        [
            queue("qb", gpu_weight=1),
            queue("qa", gpu_weight=1, priority=200),
            node("n0", gpus=2),
            *[job(f"b{i}", "qb", gpus=1, **GPU_ONLY) for i in range(2)],
            *[job(f"a{i}", "qa", gpus=1, **GPU_ONLY) for i in range(2)],
        ],
        binds={"a0-0": "n0", "a1-0": "n0"},
        pending=["b0", "b1"],
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_allocate_fairness(scenario: Scenario) -> None:
    check(scenario)
