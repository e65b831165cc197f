"""Queue accounting of fractional GPUs (docs/semantics.md §6 "Quota accounting").

Why: a queue's GPU quota, limit and fair share are in GPUs, and a shared pod
must count as the part of a GPU it gets, not as the whole device its group
holds on the node (nor as nothing): a fraction counts devices x portion, a
pending gpu-memory pod its memory over the smallest device memory in the
cluster, a placed one its portion on its node. The job-level limit check
counts a gpu-memory pod's memory over the *largest* device memory, and each
node is then checked with the portion it would give.
"""

from __future__ import annotations

import pytest
from gpu_kit import GpuCase, check, fraction, gpu_node, memory, reservation, shared

from scheduler.cache.snapshotting import build_snapshot
from scheduler.cycle import run_cycle
from tests.kits.worlds import ALLOCATE_ONLY, NOW, job, queue, sourced

CASES = [
    # Limit 1 GPU: two halves fit (1.0), a further quarter would not.
    GpuCase(
        "fractions-count-toward-limit",
        [
            queue("q", gpu_limit=1),
            gpu_node("n0", 4),
            job("a", "q", annotations=fraction(0.5)),
            job("b", "q", annotations=fraction(0.5)),
            job("c", "q", annotations=fraction(0.25)),
        ],
        binds={"a-0": "n0", "b-0": "n0"},
        pending=["c"],
        reasons={"c": ["OverLimit", "gpu=0.25"]},
    ),
    # A running half and a new quarter stay under a limit of 0.75 + a little: both fine.
    GpuCase(
        "running-fraction-counted-not-whole-device",
        [
            queue("q", gpu_limit=0.8),
            gpu_node("n0", 2),
            shared("r", "q", "n0", 0.5, "g1"),
            job("a", "q", annotations=fraction(0.25)),
        ],
        binds={"a-0": "n0"},
        groups={"a-0": "=g1"},
    ),
    # num-devices multiplies: 2 x 0.5 = 1 GPU, over a limit of 0.9.
    GpuCase(
        "devices-times-portion",
        [
            queue("q", gpu_limit=0.9),
            gpu_node("n0", 2),
            job("a", "q", annotations=fraction(0.5, devices=2)),
        ],
        pending=["a"],
        reasons={"a": ["OverLimit", "gpu=1 "]},
    ),
    # The job-level check counts a gpu-memory pod's smallest portion anywhere: memory /
    # largest device memory (20000 / 80000 = 0.25), within a limit of 0.4 (KAI's
    # getRequiredQuota). Each node then charges its own portion: 0.5 on n0 would pass
    # the limit, so only n1 is offered (KAI's per-node capacity predicate).
    GpuCase(
        "gpu-memory-limit-checked-with-largest-device-then-per-node",
        [
            queue("q", gpu_limit=0.4),
            gpu_node("n0", 1, device_memory=40000),
            gpu_node("n1", 1, device_memory=80000),
            job("a", "q", annotations=memory(20000)),
        ],
        binds={"a-0": "n1"},
    ),
    # Even the smallest portion (0.25) passes a limit of 0.2: refused before any node.
    GpuCase(
        "gpu-memory-over-limit-on-every-device",
        [
            queue("q", gpu_limit=0.2),
            gpu_node("n0", 1, device_memory=40000),
            gpu_node("n1", 1, device_memory=80000),
            job("a", "q", annotations=memory(20000)),
        ],
        pending=["a"],
        reasons={"a": ["OverLimit", "gpu=0.25"]},
    ),
    # Non-preemptible, deserved 0.4: the job-level check passes (0.25), and only n1 keeps
    # the non-preemptible allocation within deserved.
    GpuCase(
        "non-preemptible-gpu-memory-per-node-quota",
        [
            queue("q", gpu_quota=0.4),
            gpu_node("n0", 1, device_memory=40000),
            gpu_node("n1", 1, device_memory=80000),
            job("a", "q", annotations=memory(20000), priority_class="build"),
        ],
        binds={"a-0": "n1"},
    ),
    # With n1 full, n0 alone is left and charges 0.5: the reason names the node check.
    GpuCase(
        "gpu-memory-per-node-limit-reason",
        [
            queue("q", gpu_limit=0.4),
            gpu_node("n0", 1, device_memory=40000),
            gpu_node("n1", 0, device_memory=80000),
            job("a", "q", annotations=memory(20000)),
        ],
        pending=["a"],
        reasons={"a": ["OverLimit", "GPU portion here"]},
    ),
    # Non-preemptible fractions stay within deserved quota: 0.5 + 0.75 > 1.
    GpuCase(
        "non-preemptible-fraction-over-quota",
        [
            queue("q", gpu_quota=1),
            gpu_node("n0", 2),
            shared("r", "q", "n0", 0.5, "g1", priority_class="build"),
            job("a", "q", annotations=fraction(0.75), priority_class="build"),
        ],
        pending=["a"],
        reasons={"a": ["NonPreemptibleOverQuota"]},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_gpu_sharing_quota(case: GpuCase) -> None:
    check(case)


def test_queue_summary_counts_portions() -> None:
    """After the cycle the queue has 0.5 running + 0.25 placed = 0.75 GPU allocated."""
    objects = [
        queue("q"),
        gpu_node("n0", 2),
        shared("r", "q", "n0", 0.5, "g1"),
        job("a", "q", annotations=fraction(0.25)),
    ]
    snapshot = build_snapshot(sourced(objects), now=NOW.timestamp()).snapshot
    result = run_cycle(snapshot, ALLOCATE_ONLY)
    (summary,) = result.queues
    assert summary.allocated[0] == pytest.approx(0.75)
    assert summary.requested[0] == pytest.approx(0.75)


def test_placed_gpu_memory_counts_its_node_portion() -> None:
    """A running gpu-memory pod counts its portion on its node: 20000 of 80000 MiB = 0.25."""
    objects = [
        queue("q"),
        gpu_node("n0", 1, device_memory=40000),
        gpu_node("n1", 1, device_memory=80000),
        job(
            "m",
            "q",
            annotations=memory(20000),
            labels={"runai-gpu-group": "g1"},
            states=["Running"],
            nodes=["n1"],
        ),
    ]
    snapshot = build_snapshot(sourced(objects), now=NOW.timestamp()).snapshot
    (summary,) = run_cycle(snapshot, ALLOCATE_ONLY).queues
    assert summary.allocated[0] == pytest.approx(0.25)


def test_utility_pods_left_out_of_fair_share_capacity() -> None:
    """Reservation and scaling pods are not subtracted from the GPUs queues divide."""
    scaling = reservation("x", "n0")[0]
    scaling["metadata"] = {
        **scaling["metadata"],
        "name": "scale-1",
        "namespace": "kai-scale-adjust",
        "labels": {"app": "scaling-pod"},
    }
    objects = [
        queue("q"),
        gpu_node("n0", 4),
        shared("r", "q", "n0", 0.5, "g1"),
        reservation("g1", "n0"),
        reservation("g2", "n0"),
        scaling,
    ]
    snapshot = build_snapshot(sourced(objects), now=NOW.timestamp()).snapshot
    assert snapshot.total[0] == 4000
    # on the node: g1 (fraction + its reservation) once, g2's orphan reservation, the scaling pod
    assert snapshot.nodes.idle[0 + 3, 0] == 1000
