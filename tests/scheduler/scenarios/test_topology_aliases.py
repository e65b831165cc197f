"""Topology level aliases (KAI v0.17): a constraint may name a level by its alias.

Why: ``spec.levels[].alias`` gives a level a short name ("rack") that a
PodGroup's or subgroup's ``requiredTopologyLevel`` / ``preferredTopologyLevel``
may use instead of the node-label key; the placement must be exactly the one the
label key gives. An alias is resolved only within its own Topology, and a
Topology whose aliases are ambiguous (two levels, or an alias equal to a level's
label) is refused with the field named, keeping only that Topology out.
"""

from __future__ import annotations

from typing import Any

import pytest
from topology_kit import HOST, RACK, TOPO, ZONE, preferred, required, tnode

from scheduler.api.topology import TopologyInfo, build_domain_tree
from scheduler.cache.snapshotting import build_snapshot
from scheduler.cache.topologies import read_topology
from tests.kits.worlds import Scenario, check, job, pod, pod_group, queue, run_objects, sourced

Obj = dict[str, Any]


def aliased(name: str = TOPO, **aliases: str) -> Obj:
    """The zone/rack/hostname Topology with ``aliases`` (alias -> label) on its levels."""
    by_label = {label: alias for alias, label in aliases.items()}
    levels: list[Obj] = []
    for label in (ZONE, RACK, HOST):
        level: Obj = {"nodeLabel": label}
        if label in by_label:
            level["alias"] = by_label[label]
        levels.append(level)
    return {
        "apiVersion": "kai.scheduler/v1alpha1",
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": levels},
    }


def used(name: str, node_name: str, gpus: int) -> list[Obj]:
    return job(name, "q", gpus=gpus, states=["Running"], nodes=[node_name])


# Free GPUs: n0 2, n1 4 (rack r1: 6); n2 1, n3 4 (rack r2: 5), all in zone z1.
RACKS = [
    tnode("n0", "z1", "r1", gpus=4),
    tnode("n1", "z1", "r1", gpus=4),
    tnode("n2", "z1", "r2", gpus=4),
    tnode("n3", "z1", "r2", gpus=4),
    *used("u0", "n0", 2),
    *used("u2", "n2", 3),
]

SCENARIOS = [
    # Required "rack" (an alias): four pods go to the tighter rack r2 (5 free), exactly as
    # required(RACK) places them (test_topology_allocate's required-rack-tightest-fit).
    Scenario(
        "required-alias-is-the-label",
        [
            queue("q"),
            aliased(rack=RACK, zone=ZONE),
            *RACKS,
            job("j", "q", 4, gpus=1, topology=required("rack")),
        ],
        binds={"j-0": "n2", "j-1": "n3", "j-2": "n3", "j-3": "n3"},
    ),
    # Preferred "rack" inside required "zone", both aliases: three pods; r1 has room for
    # all three only after r2 (5 free) is ranked; the tightest rack holding all three is r2.
    Scenario(
        "preferred-and-required-aliases",
        [
            queue("q"),
            aliased(rack=RACK, zone=ZONE),
            *RACKS,
            job("j", "q", 3, gpus=1, topology=preferred("rack", within="zone")),
        ],
        binds={"j-0": "n2", "j-1": "n3", "j-2": "n3"},
    ),
    # The label key still works on a Topology with aliases.
    Scenario(
        "label-still-accepted",
        [
            queue("q"),
            aliased(rack=RACK),
            *RACKS,
            job("j", "q", 4, gpus=1, topology=required(RACK)),
        ],
        binds={"j-0": "n2", "j-1": "n3", "j-2": "n3", "j-3": "n3"},
    ),
    # A subgroup's constraint accepts the alias too: each subgroup of two in one rack.
    # Inside zone z1, a takes r2 (5 free, tighter than r1's 6: n2 then n3 by bin-packing);
    # b then sees r2 with 3 free, still tighter than r1, and fills n3.
    Scenario(
        "subgroup-alias",
        [
            queue("q"),
            aliased(rack=RACK, zone=ZONE),
            *RACKS,
            pod_group(
                "g",
                "q",
                sub_groups=[
                    {"name": "a", "minMember": 2, "topologyConstraint": required("rack")},
                    {"name": "b", "minMember": 2, "topologyConstraint": required("rack")},
                ],
                topology=required("zone"),
            ),
            pod("g-a0", "g", gpus=1, sub_group="a"),
            pod("g-a1", "g", gpus=1, sub_group="a"),
            pod("g-b0", "g", gpus=1, sub_group="b"),
            pod("g-b1", "g", gpus=1, sub_group="b"),
        ],
        binds={"g-a0": "n2", "g-a1": "n3", "g-b0": "n3", "g-b1": "n3"},
    ),
    # An alias belongs to its Topology: "rack" on another Topology without aliases is not a
    # level there, a configuration reason on that group only.
    Scenario(
        "alias-of-another-topology",
        [
            queue("q"),
            aliased(rack=RACK),
            aliased("plain"),
            *RACKS,
            job("j", "q", 1, gpus=1, topology=required("rack", "plain")),
            job("ok", "q", 1, gpus=1, topology=required("rack")),
        ],
        pending=["j"],
        binds={"ok-0": "n2"},
        reasons={"j": ["required level 'rack' is not a level of topology plain"]},
    ),
    # A preferred alias above the required alias is refused like the label keys are.
    Scenario(
        "preferred-alias-above-required",
        [
            queue("q"),
            aliased(rack=RACK, zone=ZONE),
            *RACKS,
            job("j", "q", 1, gpus=1, topology=preferred("zone", within="rack")),
        ],
        pending=["j"],
        reasons={"j": ["preferred level 'zone' is above required level 'rack'"]},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_topology_aliases(scenario: Scenario) -> None:
    check(scenario)


def test_aliases_read_into_topology_info() -> None:
    info = read_topology(aliased(rack=RACK, zone=ZONE))
    assert info == TopologyInfo("cluster-topo", (ZONE, RACK, HOST), {"rack": RACK, "zone": ZONE})
    assert info.resolve("rack") == RACK
    assert info.resolve(RACK) == RACK
    assert info.resolve("block") == "block"


def test_edited_alias_is_not_served_from_the_tree_cache() -> None:
    nodes = build_snapshot(sourced([tnode("n0", "z1", "r1", gpus=1)])).snapshot.nodes
    before = build_domain_tree(nodes, TopologyInfo(TOPO, (ZONE, RACK), {"rack": RACK}))
    after = build_domain_tree(nodes, TopologyInfo(TOPO, (ZONE, RACK), {"r": RACK}))
    assert before.level_index("rack") == 1
    assert after.level_index("rack") is None
    assert after.level_index("r") == 1


def test_scale_up_hint_names_the_level_by_its_node_label() -> None:
    """A gang requiring "rack" (an alias) that no rack holds: the hint's level is the node
    label an autoscaler can put on new nodes, not the alias."""
    result = run_objects(
        [
            queue("q"),
            aliased(rack=RACK),
            *RACKS,
            job("j", "q", 7, gpus=1, topology=required("rack")),
        ]
    )
    (outcome,) = [g for g in result.pod_groups if g.pod_group == "default/j"]
    assert outcome.scale_up_hint is not None
    assert outcome.scale_up_hint.topology is not None
    assert outcome.scale_up_hint.topology["level"] == RACK
