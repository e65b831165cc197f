"""Preempt scenarios, written from docs/semantics.md §5.2 (preempt, shared solver) and §5.9.

Why: preemption is the in-queue priority rule. Each case pins one part of it:
victims only in the preemptor's own leaf queue, only with strictly lower
priority, only preemptible; a non-preemptible preemptor must stay within
deserved quota at every level; victims go lowest priority first and newest
first among equals; a gang victim goes whole, an elastic one sheds surplus
pods one at a time; only as many victims as needed; a victim that can be
re-placed elsewhere moves rather than losing its place; the preemptor is
pipelined, never bound in the same cycle.
"""

from __future__ import annotations

import pytest
from disruption_kit import Disruption, check, priority_class, running

from tests.kits.worlds import job, node, queue

P = ("preempt",)

CASES = [
    # Same queue only: a lower-priority job in another queue is not a victim.
    Disruption(
        "other-queue-never-preempted",
        [
            node("n0", gpus=1),
            queue("qa", gpu_quota=1),
            queue("qb", gpu_quota=1),
            running("t0", "qb", "n0"),
            job("b", "qa", gpus=1, priority_class="build"),
        ],
        P,
        pending=["b"],
        reasons={"b": ["preempt: no running lower-priority preemptible job in queue qa"]},
    ),
    # Strictly lower priority: an equal-priority job is not preempted.
    Disruption(
        "equal-priority-never-preempted",
        [
            node("n0", gpus=1),
            queue("qa", gpu_quota=1),
            running("t0", "qa", "n0"),
            job("t1", "qa", gpus=1),
        ],
        P,
        pending=["t1"],
    ),
    # A higher-priority running job is not preempted by a lower-priority pending one.
    Disruption(
        "higher-priority-never-preempted",
        [
            node("n0", gpus=1),
            queue("qa", gpu_quota=1),
            running("bp", "qa", "n0", priority_class="build-preemptible"),
            job("t", "qa", gpus=1),
        ],
        P,
        pending=["t"],
    ),
    # A preemptible build-preemptible (75) job is preempted by a build (100) job.
    Disruption(
        "build-preempts-build-preemptible",
        [
            node("n0", gpus=1),
            queue("qa", gpu_quota=1),
            running("bp", "qa", "n0", priority_class="build-preemptible"),
            job("b", "qa", gpus=1, priority_class="build"),
        ],
        P,
        evicted=["bp-0"],
        pipelined={"b-0": "n0"},
    ),
    # Preemptible victims only: a priority-100 job is non-preemptible by default ...
    Disruption(
        "non-preemptible-by-priority-never-preempted",
        [
            node("n0", gpus=1),
            queue("qa", gpu_quota=1),
            running("b", "qa", "n0", priority_class="build"),
            job("i", "qa", gpus=1, priority_class="inference"),
        ],
        P,
        pending=["i"],
    ),
    # ... but an explicit preemptibility: preemptible makes it a victim.
    Disruption(
        "explicitly-preemptible-build-preempted",
        [
            node("n0", gpus=1),
            queue("qa", gpu_quota=1),
            running("b", "qa", "n0", priority_class="build", preemptibility="preemptible"),
            job("i", "qa", gpus=1, priority_class="inference"),
        ],
        P,
        evicted=["b-0"],
        pipelined={"i-0": "n0"},
    ),
    # And an explicit non-preemptible train job is never a victim.
    Disruption(
        "explicitly-non-preemptible-train-never-preempted",
        [
            node("n0", gpus=1),
            queue("qa", gpu_quota=1),
            running("t", "qa", "n0", preemptibility="non-preemptible"),
            job("b", "qa", gpus=1, priority_class="build"),
        ],
        P,
        pending=["b"],
    ),
    # Non-preemptible preemptor within deserved: it preempts.
    Disruption(
        "non-preemptible-preemptor-within-deserved",
        [
            node("n0", gpus=2),
            queue("qa", gpu_quota=1),
            running("t", "qa", "n0", gpus=2),
            job("b", "qa", gpus=1, priority_class="build"),
        ],
        P,
        evicted=["t-0"],
        pipelined={"b-0": "n0"},
    ),
    # Non-preemptible preemptor beyond deserved (0 + 2 > 1): refused before any search.
    Disruption(
        "non-preemptible-preemptor-beyond-deserved-refused",
        [
            node("n0", gpus=2),
            queue("qa", gpu_quota=1),
            running("t", "qa", "n0", gpus=2),
            job("b", "qa", gpus=2, priority_class="build"),
        ],
        P,
        pending=["b"],
        reasons={"b": ["NonPreemptibleOverQuota"]},
    ),
    # Deserved is checked at every level: the parent's deserved 1 refuses a 2-GPU build job
    # although its leaf deserves 4.
    Disruption(
        "non-preemptible-preemptor-parent-deserved-refused",
        [
            node("n0", gpus=2),
            queue("d", gpu_quota=1),
            queue("qa", "d", gpu_quota=4),
            running("t", "qa", "n0", gpus=2),
            job("b", "qa", gpus=2, priority_class="build"),
        ],
        P,
        pending=["b"],
        reasons={"b": ["NonPreemptibleOverQuota", "queue d "]},
    ),
    # A queue at its limit: the GPU is free but the limit is not, so the victim cannot be
    # re-placed within the limit and really goes (for a non-preemptible preemptor ...
    Disruption(
        "non-preemptible-preemptor-queue-at-limit",
        [
            node("n0", gpus=4),
            queue("qa", gpu_quota=2, gpu_limit=2),
            running("t", "qa", "n0", gpus=2),
            job("b", "qa", gpus=1, priority_class="build"),
        ],
        P,
        evicted=["t-0"],
        pipelined={"b-0": "n0"},
    ),
    # ... and for a preemptible one).
    Disruption(
        "preemptible-preemptor-queue-at-limit",
        [
            node("n0", gpus=4),
            queue("qa", gpu_quota=2, gpu_limit=2),
            running("t", "qa", "n0", gpus=2),
            job("bp", "qa", gpus=1, priority_class="build-preemptible"),
        ],
        P,
        evicted=["t-0"],
        pipelined={"bp-0": "n0"},
    ),
    # A preemptible preemptor (75) may preempt train work even with no deserved quota.
    Disruption(
        "preemptible-preemptor-over-quota",
        [
            node("n0", gpus=1),
            queue("qa"),
            running("t", "qa", "n0"),
            job("bp", "qa", gpus=1, priority_class="build-preemptible"),
        ],
        P,
        evicted=["t-0"],
        pipelined={"bp-0": "n0"},
    ),
    # Lowest priority first, even when the lowest-priority job is the oldest.
    Disruption(
        "lowest-priority-victim-first",
        [
            priority_class("low", 10),
            node("n0", gpus=2),
            queue("qa", gpu_quota=2),
            running("old_low", "qa", "n0", priority_class="low"),
            running("new_train", "qa", "n0"),
            job("b", "qa", gpus=1, priority_class="build"),
        ],
        P,
        evicted=["old_low-0"],
        pipelined={"b-0": "n0"},
    ),
    # Newest first among equal priority.
    Disruption(
        "newest-first-among-equals",
        [
            node("n0", gpus=3),
            queue("qa", gpu_quota=3),
            running("t0", "qa", "n0"),
            running("t1", "qa", "n0"),
            running("t2", "qa", "n0"),
            job("b", "qa", gpus=1, priority_class="build"),
        ],
        P,
        evicted=["t2-0"],
        pipelined={"b-0": "n0"},
    ),
    # Only as many victims as needed: two of three for a 2-GPU preemptor.
    Disruption(
        "only-needed-victims",
        [
            node("n0", gpus=3),
            queue("qa", gpu_quota=3),
            running("t0", "qa", "n0"),
            running("t1", "qa", "n0"),
            running("t2", "qa", "n0"),
            job("b", "qa", gpus=2, priority_class="build"),
        ],
        P,
        evicted=["t2-0", "t1-0"],
        pipelined={"b-0": "n0"},
    ),
    # A gang victim goes whole: one GPU is needed but the 2-pod gang cannot run in part.
    Disruption(
        "gang-victim-evicted-whole",
        [
            node("n0", gpus=2),
            queue("qa", gpu_quota=2),
            running("g", "qa", "n0", 2),
            job("b", "qa", gpus=1, priority_class="build"),
        ],
        P,
        evicted=["g-0", "g-1"],
        pipelined={"b-0": "n0"},
    ),
    # A preemptor gang across two nodes takes a victim on each and is pipelined whole.
    Disruption(
        "gang-preemptor-across-nodes",
        [
            node("n0", gpus=1),
            node("n1", gpus=1),
            queue("qa", gpu_quota=2),
            running("t0", "qa", "n0"),
            running("t1", "qa", "n1"),
            job("b", "qa", 2, gpus=1, priority_class="build"),
        ],
        P,
        evicted=["t0-0", "t1-0"],
        pipelined={"b-0": "n0", "b-1": "n1"},
    ),
    # Nobody loses their place: the victim is re-placed on the other node's free GPU.
    Disruption(
        "victim-moves-to-free-room",
        [
            node("n0", gpus=2),
            node("n1", gpus=2),
            queue("qa", gpu_quota=4),
            running("t0", "qa", "n0"),
            running("t1", "qa", "n1"),
            job("b", "qa", gpus=2, priority_class="build"),
        ],
        P,
        evicted=["t1-0"],
        pipelined={"b-0": "n1", "t1-0": "n0"},
    ),
    # A victim re-placed on its own node stays: only the job that must go is evicted (S4).
    Disruption(
        "victim-that-fits-again-stays",
        [
            node("n0", gpus=3),
            queue("qa", gpu_quota=3),
            running("t_big", "qa", "n0", gpus=2),
            running("t_small", "qa", "n0", gpus=1),
            job("b", "qa", gpus=2, priority_class="build"),
        ],
        P,
        evicted=["t_big-0"],
        pipelined={"b-0": "n0"},
    ),
    # The higher-priority of two pending jobs preempts first; the other finds nothing left.
    Disruption(
        "higher-priority-preemptor-first",
        [
            node("n0", gpus=1),
            queue("qa", gpu_quota=2),
            running("t", "qa", "n0"),
            job("bp", "qa", gpus=1, priority_class="build-preemptible"),
            job("i", "qa", gpus=1, priority_class="inference"),
        ],
        P,
        evicted=["t-0"],
        pipelined={"i-0": "n0"},
        pending=["bp"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_preempt(case: Disruption) -> None:
    check(case)
