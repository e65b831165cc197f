"""One final decision per pod when a later action evicts what an earlier one placed (§1.3, §5.2).

Why: the five actions share one session, and Allocated and Pipelined pods are
active-allocated, so victim candidates. Preempt may evict a job allocate has
just placed; reclaim may evict a pod consolidation has just moved. The
cycle's result must say where each pod ends up, as KAI's session does once
its operations are replayed in order: a pod placed and then evicted is
neither bound nor pipelined (nothing is deleted: it never ran, and it stays
pending, with a reason saying so); a running pod moved and then evicted is
one eviction, by the action that finally took it, and no move.
"""

from __future__ import annotations

import pytest
from disruption_kit import Disruption, check, rfc3339, running

from crds.names import LAST_EVICTION_ANNOTATION
from tests.kits.worlds import Item, job, node, queue

ALL = ("allocate", "consolidation", "reclaim", "preempt", "stalegangeviction")
CANCELLED = "placed earlier in this cycle, then evicted"


def _moves(pending: Item, *, big_first: bool = True) -> list[Item]:
    """Two 4-GPU nodes; qa (deserving 2 GPUs) runs a on n0 and b on n1 (2 GPUs each) and
    waits with big (4 GPUs): consolidation moves b to n0 for big, pipelined on n1. Big is
    older than a and b unless ``big_first`` is false (victims go newest first)."""
    big = job("big", "qa", gpus=4)
    running_ab = [running("a", "qa", "n0", gpus=2), running("b", "qa", "n1", gpus=2)]
    return [
        node("n0", gpus=4),
        node("n1", gpus=4),
        queue("qa", gpu_quota=2),
        queue("qb", gpu_quota=6),
        *([big, *running_ab] if big_first else [*running_ab, big]),
        pending,
    ]


CASES = [
    # Allocate binds j (train) next to r; the build job h fits nowhere, and preempt evicts
    # r and j for it. j never ran: no bind, no eviction, it stays pending and says why;
    # no last-start stamp for it either.
    Disruption(
        "allocated-then-preempted",
        [
            node("n0", gpus=4),
            queue("q", gpu_quota=8),
            running("r", "q", "n0", gpus=2),
            job("h", "q", gpus=4, priority_class="build"),
            job("j", "q", gpus=2),
        ],
        ALL,
        evicted=["r-0"],
        evicted_by="preempt",
        pipelined={"h-0": "n0"},
        pending=["j"],
        reasons={"j": [f"preempt: {CANCELLED} to make room for default/h"]},
        annotations={"r": {LAST_EVICTION_ANNOTATION: rfc3339(0)}},
    ),
    # Reclaim, like preempt, may take a job allocate placed earlier in the same cycle: KAI
    # v0.17's victim candidates are every preemptible job with an active-allocated pod, and
    # Allocated is one of those statuses. c (qb, deserving the node) fits nowhere, so
    # allocate binds j of qa (deserving nothing) beside r; reclaim then evicts r and j for c.
    Disruption(
        "allocated-then-reclaimed",
        [
            node("n0", gpus=4),
            queue("qa", gpu_quota=0),
            queue("qb", gpu_quota=4),
            running("r", "qa", "n0", gpus=2),
            job("c", "qb", gpus=4),
            job("j", "qa", gpus=2),
        ],
        ALL,
        evicted=["r-0"],
        evicted_by="reclaim",
        pipelined={"c-0": "n0"},
        pending=["j"],
        reasons={"j": [f"reclaim: {CANCELLED} to make room for default/c"]},
        annotations={"r": {LAST_EVICTION_ANNOTATION: rfc3339(0)}},
    ),
    # Consolidation moves b to n0 for big (pipelined on n1); reclaim then evicts a and b
    # for c of qb (4 GPUs, non-preemptible, so consolidation leaves it). b is one eviction,
    # by reclaim, and not pipelined anywhere.
    Disruption(
        "moved-then-reclaimed",
        _moves(job("c", "qb", gpus=4, priority_class="build")),
        ALL,
        evicted=["a-0", "b-0"],
        evicted_by="reclaim",
        pipelined={"big-0": "n1", "c-0": "n0"},
    ),
    # Here reclaim takes big's pipelined room on n1 for c (3 GPUs) instead: big stays pending,
    # and b's move, already made for big, stands.
    Disruption(
        "pipelined-then-reclaimed",
        _moves(job("c", "qb", gpus=3, priority_class="build"), big_first=False),
        ALL,
        evicted=["b-0"],
        evicted_by="consolidation",
        pipelined={"b-0": "n0", "c-0": "n1"},
        pending=["big"],
        reasons={"big": [f"reclaim: {CANCELLED} to make room for default/c"]},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_one_final_decision_per_pod(case: Disruption) -> None:
    check(case)
