"""Disruptive actions with topology constraints (docs/semantics.md §5.2, §5.8).

Why: reclaim, preempt and consolidation re-place the preemptor (and moved
victims) through the same topology routine as allocate, so a constrained job
is never placed outside its required domain, and victims are chosen so that
one domain frees enough room.
"""

from __future__ import annotations

import pytest
from disruption_kit import Disruption, check, running
from topology_kit import RACK, TOPOLOGY, required, tnode

from tests.kits.worlds import job, queue

CASES = [
    # qa is under its fair share and reclaims from qb (over its quota of 1). Free: one GPU
    # on each rack, so the constrained gang cannot start by allocate; b1 (newest) goes, and
    # both pods are pipelined inside its rack r2.
    Disruption(
        "reclaim-for-constrained-gang",
        [
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=2),
            tnode("n1", "z1", "r2", gpus=2),
            queue("qa", gpu_quota=2),
            queue("qb", gpu_quota=1),
            running("b0", "qb", "n0"),
            running("b1", "qb", "n1"),
            job("a", "qa", 2, gpus=1, topology=required(RACK)),
        ],
        ("allocate", "reclaim"),
        evicted=["b1-0"],
        pipelined={"a-0": "n1", "a-1": "n1", "b1-0": "n0"},
        evicted_by="reclaim",
    ),
    # Without the constraint allocate simply uses the two free GPUs across racks (control).
    Disruption(
        "unconstrained-needs-no-reclaim",
        [
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=2),
            tnode("n1", "z1", "r2", gpus=2),
            queue("qa", gpu_quota=2),
            queue("qb", gpu_quota=1),
            running("b0", "qb", "n0"),
            running("b1", "qb", "n1"),
            job("a", "qa", 2, gpus=1),
        ],
        ("allocate", "reclaim"),
        binds={"a-0": "n0", "a-1": "n1"},
    ),
    # Preempt within the queue: the lower-priority jobs sit in different racks; evicting
    # the newest (on r2) frees r2, where the constrained gang is pipelined; low1 moves to n0.
    Disruption(
        "preempt-for-constrained-gang",
        [
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=2),
            tnode("n1", "z1", "r2", gpus=2),
            queue("q"),
            running("low0", "q", "n0", priority_class="train"),
            running("low1", "q", "n1", priority_class="train"),
            job(
                "hi",
                "q",
                2,
                gpus=1,
                priority_class="build-preemptible",
                topology=required(RACK),
            ),
        ],
        ("allocate", "preempt"),
        evicted=["low1-0"],
        pipelined={"hi-0": "n1", "hi-1": "n1", "low1-0": "n0"},
        evicted_by="preempt",
    ),
    # A constrained gang whose rack is too small even when emptied: nothing is evicted.
    Disruption(
        "reclaim-cannot-help-small-racks",
        [
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=1),
            tnode("n1", "z1", "r2", gpus=1),
            queue("qa", gpu_quota=2),
            queue("qb", gpu_quota=0),
            running("b0", "qb", "n0"),
            running("b1", "qb", "n1"),
            job("a", "qa", 2, gpus=1, topology=required(RACK)),
        ],
        ("allocate", "reclaim"),
        pending=["a"],
        reasons={"a": ["no rack of topology cluster-topo has room for 2 pods"]},
    ),
    # Consolidation re-places a moved constrained victim through the topology routine: v
    # (newest, so the first victim) leaves n0 for the 2-GPU gang p. Unconstrained it would
    # go to the lowest-named of the equally full nodes, m2 (rack r2); as a rack-constrained
    # job the racks tie on fit and r1 wins by domain id, so it lands on n1.
    Disruption(
        "consolidation-moves-victim-by-topology",
        [
            TOPOLOGY,
            tnode("m2", "z1", "r2", gpus=2),
            tnode("n0", "z1", "r1", gpus=2),
            tnode("n1", "z1", "r1", gpus=2),
            queue("q"),
            running("w", "q", "n1"),
            running("x", "q", "m2"),
            running("v", "q", "n0", topology=required(RACK)),
            job("p", "q", gpus=2),
        ],
        ("allocate", "consolidation"),
        evicted=["v-0"],
        pipelined={"v-0": "n1", "p-0": "n0"},
        evicted_by="consolidation",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_topology_disruption(case: Disruption) -> None:
    check(case)
