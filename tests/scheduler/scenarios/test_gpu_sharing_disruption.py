"""Reclaim, preempt and consolidation with fractional GPUs (docs/semantics.md §5.2, §6).

Why: evicting a fractional pod frees its device only when the device's last
member goes; a disruption must evict exactly the members that make room, and
the freed device must not be handed out twice.
"""

from __future__ import annotations

import pytest
from gpu_kit import GpuCase, check, fraction, gpu_node, shared

from tests.kits.worlds import job, queue

CASES = [
    # A whole-GPU job of a queue under its quota reclaims the one device held by two
    # halves of another queue: both must go, and the job is pipelined onto the device.
    GpuCase(
        "reclaim-both-members-for-whole-gpu",
        [
            queue("q1"),
            queue("q2", gpu_quota=1),
            gpu_node("n0", 1),
            shared("f1", "q1", "n0", 0.5, "g1"),
            shared("f2", "q1", "n0", 0.5, "g1"),
            job("w", "q2", gpus=1),
        ],
        actions=("reclaim",),
        evicted=["f1-0", "f2-0"],
        pipelined={"w-0": "n0"},
    ),
    # A fraction reclaims a whole GPU from an over-served queue; it opens a group there.
    GpuCase(
        "reclaim-whole-gpu-for-fraction",
        [
            queue("q1"),
            queue("q2", gpu_quota=1),
            gpu_node("n0", 1),
            job("w", "q1", gpus=1, states=["Running"], nodes=["n0"]),
            job("a", "q2", annotations=fraction(0.5)),
        ],
        actions=("reclaim",),
        evicted=["w-0"],
        pipelined={"a-0": "n0"},
        groups={"a-0": "new"},
    ),
    # Preempt in one queue: the lower-priority 0.7 goes so the higher-priority 0.6 fits.
    GpuCase(
        "preempt-fraction-for-fraction",
        [
            queue("q"),
            gpu_node("n0", 1),
            shared("lo", "q", "n0", 0.7, "g1", priority_class="train"),
            job("hi", "q", annotations=fraction(0.6), priority_class="build-preemptible"),
        ],
        actions=("preempt",),
        evicted=["lo-0"],
        pipelined={"hi-0": "n0"},
    ),
    # Only one member has to go: the higher-priority half joins the same device, pipelined
    # into it, and the other member keeps running.
    GpuCase(
        "preempt-one-member-join-its-group",
        [
            queue("q"),
            gpu_node("n0", 1),
            shared("keep", "q", "n0", 0.5, "g1", priority_class="build-preemptible"),
            shared("lo", "q", "n0", 0.5, "g1", priority_class="train"),
            job("hi", "q", annotations=fraction(0.5), priority_class="build-preemptible"),
        ],
        actions=("preempt",),
        evicted=["lo-0"],
        pipelined={"hi-0": "n0"},
        groups={"hi-0": "=g1"},
    ),
    # Nothing lower-priority to take: the half stays pending.
    GpuCase(
        "no-victim-for-fraction",
        [
            queue("q"),
            gpu_node("n0", 1),
            shared("r", "q", "n0", 0.7, "g1", priority_class="build-preemptible"),
            job("a", "q", annotations=fraction(0.5), priority_class="train"),
        ],
        actions=("preempt",),
        pending=["a"],
    ),
    # Consolidation counts the free halves of shared devices: with one free half on each
    # device, a 2-GPU job cannot fit however pods move, and is told why.
    GpuCase(
        "consolidation-skips-beyond-free-parts",
        [
            queue("q"),
            gpu_node("n0", 2),
            shared("h1", "q", "n0", 0.5, "g1"),
            shared("h2", "q", "n0", 0.5, "g2"),
            job("w", "q", gpus=2),
        ],
        actions=("consolidation",),
        pending=["w"],
        reasons={
            "w": [
                "consolidation: asks for 2 GPUs but the cluster has only 1 free"
                " (0 on whole devices, 1 on shared ones)"
            ]
        },
    ),
    # ... and a shared request counts its portion: 0.6 of a device is more than the free 0.5.
    GpuCase(
        "consolidation-counts-shared-request",
        [
            queue("q"),
            gpu_node("n0", 1),
            shared("h1", "q", "n0", 0.5, "g1"),
            job("f", "q", annotations=fraction(0.6)),
        ],
        actions=("consolidation",),
        pending=["f"],
        reasons={"f": ["consolidation: asks for 0.6 GPUs but the cluster has only 0.5 free"]},
    ),
    # The full default action list on a busy node: allocate finds no room, preempt makes it.
    GpuCase(
        "all-actions-preempt-fraction",
        [
            queue("q"),
            gpu_node("n0", 1),
            shared("lo", "q", "n0", 0.6, "g1", priority_class="train"),
            job("hi", "q", annotations=fraction(0.6), priority_class="build-preemptible"),
        ],
        actions=("allocate", "consolidation", "reclaim", "preempt"),
        evicted=["lo-0"],
        pipelined={"hi-0": "n0"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_gpu_sharing_disruption(case: GpuCase) -> None:
    check(case)
