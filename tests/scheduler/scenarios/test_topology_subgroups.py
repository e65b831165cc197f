"""Topology constraints on subgroups and segments (docs/semantics.md §2.1, §3, §5.8).

Why: a subgroup applies its own constraint inside the domain its parent chose
(multi-level placement), and the podgrouper's segment subgroups
(``kai.scheduler/segment-size``) must each land inside one domain of their
level. The PodGroups here are written the way the podgrouper writes them
(``integrations.base`` manifests), so the engine is checked against its input.
"""

from __future__ import annotations

from typing import Any

import pytest
from topology_kit import RACK, TOPO, TOPOLOGY, ZONE, required, tnode

from integrations.base import SubGroupSpec, TopologyConstraint
from tests.kits.worlds import Scenario, check, job, pod, pod_group, queue


def used(name: str, node_name: str, gpus: int) -> list[dict[str, Any]]:
    return job(name, "q", gpus=gpus, states=["Running"], nodes=[node_name])


def segments(
    name: str, workers: int, size: int, level: str, *, root: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """A PyTorchJob-shaped PodGroup: a ``worker`` set cut into segments of ``size``, 1 GPU each.

    The subgroups are the podgrouper's own manifests; pods carry the segment label.
    """
    constraint = TopologyConstraint(TOPO, required_level=level)
    count = -(-workers // size)
    subs = [SubGroupSpec("worker", workers).to_model().to_manifest()] + [
        SubGroupSpec(
            f"worker-{i}",
            size if i < count - 1 else workers - size * (count - 1),
            parent="worker",
            topology=constraint,
        )
        .to_model()
        .to_manifest()
        for i in range(count)
    ]
    group = pod_group(name, "q", min_member=workers, sub_groups=subs, topology=root)
    pods = [
        pod(f"{name}-w{i}", name, gpus=1, sub_group=f"worker-{i // size}") for i in range(workers)
    ]
    return [group, *pods]


SCENARIOS = [
    # Root zone, each subgroup its own rack. Zone z1 (4 free) is tighter than z2 (5 free);
    # inside it a takes r1 (tie with r2, lower id) and b, with r1 now full, r2.
    Scenario(
        "subgroups-own-racks-inside-parent-zone",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n1", "z1", "r1", gpus=2),
            tnode("n2", "z1", "r2", gpus=2),
            tnode("n3", "z2", "r3", gpus=3),
            tnode("n4", "z2", "r4", gpus=2),
            pod_group(
                "g",
                "q",
                sub_groups=[
                    {"name": "a", "minMember": 2, "topologyConstraint": required(RACK)},
                    {"name": "b", "minMember": 2, "topologyConstraint": required(RACK)},
                ],
                topology=required(ZONE),
            ),
            pod("g-a0", "g", gpus=1, sub_group="a"),
            pod("g-a1", "g", gpus=1, sub_group="a"),
            pod("g-b0", "g", gpus=1, sub_group="b"),
            pod("g-b1", "g", gpus=1, sub_group="b"),
        ],
        binds={"g-a0": "n1", "g-a1": "n1", "g-b0": "n2", "g-b1": "n2"},
    ),
    # A subgroup whose rack cannot be found inside the parent's zone: the whole gang waits
    # and the reason names the subgroup.
    Scenario(
        "subgroup-rack-does-not-fit",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n1", "z1", "r1", gpus=1),
            tnode("n2", "z1", "r2", gpus=1),
            pod_group(
                "g",
                "q",
                sub_groups=[{"name": "a", "minMember": 2, "topologyConstraint": required(RACK)}],
            ),
            pod("g-a0", "g", gpus=1, sub_group="a"),
            pod("g-a1", "g", gpus=1, sub_group="a"),
        ],
        pending=["g"],
        reasons={"g": ["sub-group a: no rack of topology cluster-topo has room for 2 pods"]},
    ),
    # The PodGroup's required rack pins on the running pod of any subgroup: s2's recreated
    # pod waits for room in s1's rack r1 rather than take r2. (KAI v0.17 pins only on the
    # pod sets being placed, s2 alone, and binds it in r2: a documented difference.)
    Scenario(
        "running-subgroup-pins-the-group",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n1", "z1", "r1", gpus=1),
            tnode("n2", "z1", "r2", gpus=2),
            pod_group("g", "q", sub_groups=[("s1", 1), ("s2", 1)], topology=required(RACK)),
            pod("g-s1", "g", gpus=1, sub_group="s1", state="Running", node="n1"),
            pod("g-s2", "g", gpus=1, sub_group="s2"),
        ],
        pending=["g"],
        reasons={"g": ["the rack already holding its running pods (z1/r1)"]},
    ),
    # Segments of two: each segment in one rack. Free: r1 3, r2 2, r3 1. Unconstrained
    # bin-packing would start on r3's node; worker-0 takes the tightest rack r2, worker-1 r1.
    Scenario(
        "segments-each-in-one-rack",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n1", "z1", "r1", gpus=3),
            tnode("n2", "z1", "r2", gpus=2),
            tnode("n3", "z1", "r3", gpus=1),
            *segments("pt", 4, 2, RACK),
        ],
        binds={"pt-w0": "n2", "pt-w1": "n2", "pt-w2": "n1", "pt-w3": "n1"},
    ),
    # Segments inside a required zone: only zone z2 holds all four; its racks take one
    # segment each although z1's rack r1 alone would hold a segment.
    Scenario(
        "segments-inside-required-zone",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n1", "z1", "r1", gpus=2),
            tnode("n2", "z2", "r2", gpus=2),
            tnode("n3", "z2", "r3", gpus=2),
            *segments("pt", 4, 2, RACK, root=required(ZONE)),
        ],
        binds={"pt-w0": "n2", "pt-w1": "n2", "pt-w2": "n3", "pt-w3": "n3"},
    ),
    # Racks with one free GPU each cannot hold a segment of two: pending with the reason.
    Scenario(
        "segment-fits-no-rack",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n1", "z1", "r1", gpus=1),
            tnode("n2", "z1", "r2", gpus=1),
            tnode("n3", "z1", "r3", gpus=2),
            used("u3", "n3", 1),
            *segments("pt", 2, 2, RACK),
        ],
        pending=["pt"],
        reasons={"pt": ["sub-group worker-0: no rack of topology cluster-topo has room"]},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_topology_subgroups(scenario: Scenario) -> None:
    check(scenario)
