"""Consolidation scenarios, written from docs/semantics.md §5.2 (consolidation) and §2.6.

Why: consolidation is pure defragmentation. It moves running preemptible pods
so that a pending preemptible gang fits, and a scenario counts only if every
moved pod lands somewhere else: nobody loses their place, the moved pods and
the gang are all pipelined. It is skipped when the room does not exist at
all, with a spread placement strategy, and with ``maxConsolidationPreemptees``
0; at most that many jobs (plus one, as KAI counts) are moved for one gang.

The seed example of issue 6 is the first case: a job needs 4 GPUs on one
node, no node has 4 free, and moving a 2-GPU job makes room.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from disruption_kit import Disruption, check, running, started

from tests.kits.worlds import Item, job, node, queue

UNLIMITED = {"max_consolidation_preemptees": -1}  # as KAI's unit tests run it


def consolidation(
    name: str, objects: Sequence[Item], *, settings: Mapping[str, Any] = UNLIMITED, **expect: Any
) -> Disruption:
    return Disruption(name, objects, ("consolidation",), settings=settings, **expect)


def _pair(*items: Item) -> list[Item]:
    """Two 4-GPU nodes n0 and n1, queue q deserving all 8 GPUs, and the items."""
    return [node("n0", gpus=4), node("n1", gpus=4), queue("q", gpu_quota=8), *items]


def _two_halves(*pending: Item) -> list[Item]:
    """Both nodes half used by a 2-GPU job (a on n0, b on n1), plus the pending jobs."""
    return _pair(running("a", "q", "n0", gpus=2), running("b", "q", "n1", gpus=2), *pending)


CASES = [
    # Seed example: b moves next to a (evicted and pipelined on n0), the 4-GPU job is
    # pipelined on n1; every moved pod has a new place.
    consolidation(
        "seed-move-2-gpu-job-for-4-gpu-job",
        _two_halves(job("big", "q", gpus=4)),
        evicted=["b-0"],
        pipelined={"b-0": "n0", "big-0": "n1"},
    ),
    # The seed example in a full cycle: allocate cannot place the 4-GPU job, consolidation
    # moves b, reclaim and preempt have nothing left to do.
    Disruption(
        "seed-in-full-cycle",
        _two_halves(job("big", "q", gpus=4)),
        ("allocate", "consolidation", "reclaim", "preempt", "stalegangeviction"),
        evicted=["b-0"],
        evicted_by="consolidation",
        pipelined={"b-0": "n0", "big-0": "n1"},
    ),
    # The same with the default cap of 16 preemptees.
    consolidation(
        "seed-with-default-preemptee-cap",
        _two_halves(job("big", "q", gpus=4)),
        evicted=["b-0"],
        pipelined={"b-0": "n0", "big-0": "n1"},
        settings={},  # the default cap of 16
    ),
    # A moved gang moves whole: both pods of g go to n0.
    consolidation(
        "gang-moves-whole",
        _pair(
            running("a", "q", "n0", gpus=2),
            running("g", "q", "n1", 2, gpus=1),
            job("big", "q", gpus=4),
        ),
        evicted=["g-0", "g-1"],
        pipelined={"g-0": "n0", "g-1": "n0", "big-0": "n1"},
    ),
    # Victims from any queue: b in another queue is moved for a job of q.
    consolidation(
        "moves-jobs-of-other-queues",
        [
            node("n0", gpus=4),
            node("n1", gpus=4),
            queue("q", gpu_quota=4),
            queue("other", gpu_quota=4),
            running("a", "q", "n0", gpus=2),
            running("b", "other", "n1", gpus=2),
            job("big", "q", gpus=4),
        ],
        evicted=["b-0"],
        pipelined={"b-0": "n0", "big-0": "n1"},
    ),
    # The room must already exist: 2 + 1 free GPUs cannot hold 4 however pods move.
    consolidation(
        "no-room-anywhere-nothing-moves",
        _pair(
            running("a", "q", "n0", gpus=2),
            running("b", "q", "n1", gpus=3),
            job("big", "q", gpus=4),
        ),
    ),
    # Every moved pod must land elsewhere: a 3-GPU job fits on no other node, so nothing moves
    # although 1 + 1 + 2 free GPUs add up to the 4 needed.
    consolidation(
        "moved-pod-must-land-elsewhere",
        [
            node("n0", gpus=4),
            node("n1", gpus=4),
            node("n2", gpus=2),
            queue("q", gpu_quota=10),
            running("a", "q", "n0", gpus=3),
            running("b", "q", "n1", gpus=3),
            job("big", "q", gpus=4),
        ],
        pending=["big"],
        reasons={"big": ["consolidation: "]},
    ),
    # Disabled with spread placement for GPUs (defragmenting would undo the spread).
    consolidation(
        "disabled-with-gpu-spread",
        _two_halves(job("big", "q", gpus=4)),
        settings={**UNLIMITED, "gpu_placement": "spread"},
    ),
    # Disabled with spread placement for CPU tasks too.
    consolidation(
        "disabled-with-cpu-spread",
        _two_halves(job("big", "q", gpus=4)),
        settings={**UNLIMITED, "cpu_placement": "spread"},
    ),
    # Disabled with maxConsolidationPreemptees 0.
    consolidation(
        "disabled-with-zero-preemptees",
        _two_halves(job("big", "q", gpus=4)),
        settings={"max_consolidation_preemptees": 0},
    ),
    # Only preemptible pending jobs are consolidated for: a build job waits.
    consolidation(
        "non-preemptible-pending-job-not-served",
        _two_halves(job("big", "q", gpus=4, priority_class="build")),
    ),
    # Non-preemptible running jobs are never moved.
    consolidation(
        "non-preemptible-running-jobs-never-moved",
        _pair(
            running("a", "q", "n0", gpus=2, priority_class="build"),
            running("b", "q", "n1", gpus=2, priority_class="build"),
            job("big", "q", gpus=4),
        ),
    ),
    # Several moves for one gang: c and d both go to n0 so n1 is free for the 4-GPU job.
    consolidation(
        "two-moves-for-one-gang",
        _pair(
            running("a", "q", "n0", gpus=2),
            running("c", "q", "n1", gpus=1),
            running("d", "q", "n1", gpus=1),
            job("big", "q", gpus=4),
        ),
        evicted=["c-0", "d-0"],
        pipelined={"c-0": "n0", "d-0": "n0", "big-0": "n1"},
    ),
    # Without a cap three moves empty n1 for the 4-GPU job (newest victims first).
    consolidation(
        "three-moves-without-cap",
        _pair(
            running("a", "q", "n0", gpus=1),
            running("c", "q", "n1", gpus=1),
            running("d", "q", "n1", gpus=1),
            running("e", "q", "n1", gpus=1),
            job("big", "q", gpus=4),
        ),
        evicted=["c-0", "d-0", "e-0"],
        pipelined={"c-0": "n0", "d-0": "n0", "e-0": "n0", "big-0": "n1"},
    ),
    # The preemptee cap: KAI moves at most cap + 1 jobs; three moves exceed a cap of 1.
    consolidation(
        "preemptee-cap-bounds-the-moves",
        _pair(
            running("a", "q", "n0", gpus=1),
            running("c", "q", "n1", gpus=1),
            running("d", "q", "n1", gpus=1),
            running("e", "q", "n1", gpus=1),
            job("big", "q", gpus=4),
        ),
        settings={"max_consolidation_preemptees": 1},
        reasons={"big": ["stopped after 2 victim chunks"]},
    ),
    # A job that fits as things are needs no move: consolidation evicts nothing and leaves
    # it to allocate (KAI pipelines it here; docs/semantics.md §5.2).
    consolidation(
        "fits-already-nothing-moves",
        _two_halves(job("small", "q", gpus=2)),
        reasons={"small": ["fits without moving anyone; allocate places it"]},
    ),
    # Consolidation is not a disruption: a job within its minimum runtime may still move.
    consolidation(
        "moves-ignore-minimum-runtime",
        _pair(
            running("a", "q", "n0", gpus=2),
            started(running("b", "q", "n1", gpus=2), 10),
            job("big", "q", gpus=4),
        ),
        evicted=["b-0"],
        pipelined={"b-0": "n0", "big-0": "n1"},
        settings={**UNLIMITED, "default_preempt_min_runtime_s": 3600.0},
    ),
    # S3: only the first of two pending jobs can be consolidated; the second stays pending.
    consolidation(
        "only-first-pending-job-consolidated",
        [
            node("n0", gpus=4),
            node("n1", gpus=4),
            queue("q", gpu_quota=2),
            running("r0", "q", "n0", gpus=2),
            running("r1", "q", "n1", gpus=2),
            job("p0", "q", gpus=3),
            job("p1", "q", gpus=2),
        ],
        evicted=["r1-0"],
        pipelined={"r1-0": "n0", "p0-0": "n1"},
        pending=["p1"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_consolidation(case: Disruption) -> None:
    check(case)
