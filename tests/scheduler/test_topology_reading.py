"""Topology CRs, topology constraints and domain trees as the snapshot reads them (§2.1, §2.5).

Why: a bad Topology or a constraint field of the wrong type must be refused
with the field named, and keep only that object out of a live snapshot; the
domain tree must put nodes missing a level label outside the topology and sum
free capacity per domain exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from crds.errors import InputError
from scheduler.api.topology import ROOT, TopologyInfo, build_domain_tree
from scheduler.cache.cluster_cache import ClusterCache
from scheduler.cache.parsing import FieldError
from scheduler.cache.snapshotting import build_snapshot
from scheduler.cache.topologies import read_constraint, read_topology, read_topology_tree
from tests.kits.worlds import node, pod_group, queue, sourced, topology, topology_constraint


@pytest.mark.parametrize(
    ("levels", "field", "message"),
    [
        ([], "spec.levels", "at least 1 item"),
        (
            [{"nodeLabel": "a"}, {"nodeLabel": "a"}],
            "spec.levels[1].nodeLabel",
            "duplicate level 'a' (levels[0])",
        ),
        (
            [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}],
            "spec.levels[0].nodeLabel",
            "kubernetes.io/hostname may only be the last level",
        ),
        ([{"nodeLabel": "bad key!"}], "spec.levels[0].nodeLabel", "match pattern"),
        ([{"other": "x"}], "spec.levels[0].nodeLabel", "Field required"),
        ([{"nodeLabel": f"l{i}"} for i in range(17)], "spec.levels", "at most 16 items"),
        (
            [{"nodeLabel": "a", "alias": "x"}, {"nodeLabel": "b", "alias": "x"}],
            "spec.levels[1].alias",
            "'x' is the alias of levels[0] too",
        ),
        (
            [{"nodeLabel": "a"}, {"nodeLabel": "b", "alias": "a"}],
            "spec.levels[1].alias",
            "'a' is the nodeLabel of levels[0]; an alias must not equal a nodeLabel",
        ),
        ([{"nodeLabel": "a", "alias": ""}], "spec.levels[0].alias", "at least 1 character"),
        ([{"nodeLabel": "a", "alias": "bad alias!"}], "spec.levels[0].alias", "match pattern"),
        ([{"nodeLabel": "a", "alias": 3}], "spec.levels[0].alias", "string"),
    ],
)
def test_bad_topology_names_the_field(levels: list[Any], field: str, message: str) -> None:
    body = {"kind": "Topology", "metadata": {"name": "t"}, "spec": {"levels": levels}}
    with pytest.raises(FieldError) as caught:
        read_topology(body)
    assert caught.value.field == field
    assert message in caught.value.message


def test_topology_levels_in_order() -> None:
    info = read_topology(topology("t", "zone", "rack", "kubernetes.io/hostname"))
    assert info == TopologyInfo("t", ("zone", "rack", "kubernetes.io/hostname"))


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ("rack", "spec.topologyConstraint"),
        ({"topology": 3}, "spec.topologyConstraint.topology"),
        (
            {"topology": "t", "requiredTopologyLevel": ["x"]},
            "spec.topologyConstraint.requiredTopologyLevel",
        ),
    ],
)
def test_bad_constraint_names_the_field(raw: Any, field: str) -> None:
    with pytest.raises(FieldError) as caught:
        read_constraint(raw, "spec.topologyConstraint")
    assert caught.value.field == field


def test_constraint_without_topology_is_ignored() -> None:
    assert read_constraint({}, "f") is None  # what the podgrouper writes without annotations
    assert read_constraint({"requiredTopologyLevel": "rack"}, "f") is None


def test_subgroup_constraints_and_parents_lowercased() -> None:
    spec = {
        "topologyConstraint": topology_constraint("t", required="zone"),
        "subGroups": [
            {"name": "Worker"},
            {
                "name": "worker-0",
                "parent": "Worker",
                "topologyConstraint": topology_constraint("t", required="rack"),
            },
        ],
    }
    tree = read_topology_tree(spec)
    assert tree is not None
    assert tree.root is not None
    assert tree.root.required == "zone"
    assert tree.chain("worker-0") == ["worker", "worker-0"]
    assert tree.constraint_of("worker-0") is not None
    assert tree.constraint_of("worker") is None


def test_bad_subgroup_constraint_names_its_index() -> None:
    spec = {"subGroups": [{"name": "a", "topologyConstraint": {"topology": 1}}]}
    with pytest.raises(FieldError) as caught:
        read_topology_tree(spec)
    assert caught.value.field == "spec.subGroups[0].topologyConstraint.topology"


def test_snapshot_carries_topologies_and_constraints() -> None:
    group = pod_group("g", "q", topology=topology_constraint("t", required="rack"))
    built = build_snapshot(sourced([queue("q"), topology("t", "rack"), group]))
    snapshot = built.snapshot
    assert snapshot.topologies["t"].levels == ("rack",)
    tree = snapshot.jobs["default/g"].topology_tree
    assert tree is not None
    assert tree.root is not None
    assert tree.root.required == "rack"
    assert snapshot.jobs["default/g"].topology == "t"


def test_strict_snapshot_raises_for_a_bad_topology() -> None:
    bad = topology("t", "kubernetes.io/hostname", "rack")
    with pytest.raises(
        InputError,
        match=r": Topology t: spec\.levels\[0\]\.nodeLabel: kubernetes.io/hostname may only be the last level$",
    ):
        build_snapshot(sourced([bad]))


def test_live_cache_keeps_one_bad_object_out() -> None:
    cache = ClusterCache(strict=False)
    bad_group = pod_group("bad", "q", topology={"topology": "t", "requiredTopologyLevel": 5})
    cache.upsert_all(
        sourced([queue("q"), topology("t", "rack"), topology("u", "a", "a"), bad_group])
    )
    result = cache.snapshot()
    assert set(result.snapshot.topologies) == {"t"}
    assert "default/bad" not in result.snapshot.jobs
    fields = sorted(str(error) for error in result.errors)
    assert any("requiredTopologyLevel" in text for text in fields)
    assert any("spec.levels[1].nodeLabel: duplicate level 'a'" in text for text in fields)
    cache.delete("Topology", "t")
    assert cache.snapshot().snapshot.topologies == {}


def _table(*nodes: dict[str, Any]) -> Any:
    return build_snapshot(sourced(nodes)).snapshot.nodes


def test_domain_tree_levels_and_outside_nodes() -> None:
    nodes = _table(
        node("a", gpus=2, labels={"zone": "z1", "rack": "r1"}),
        node("b", gpus=4, labels={"zone": "z1", "rack": "r2"}),
        node("c", gpus=8, labels={"zone": "z2", "rack": "r1"}),
        node("d", gpus=1, labels={"zone": "z2"}),  # no rack: outside
    )
    tree = build_domain_tree(nodes, TopologyInfo("t", ("zone", "rack")))
    assert tree.inside.tolist() == [True, True, True, False]
    assert tree.levels[0].ids == ["z1", "z2"]
    assert tree.levels[1].ids == ["z1/r1", "z1/r2", "z2/r1"]  # same rack name, other zone
    assert tree.levels[1].of_node.tolist() == [0, 1, 2, -1]
    assert tree.levels[1].parent.tolist() == [0, 0, 1]
    gpus = nodes.free[3:4].astype(np.float64)
    everything = np.ones(len(nodes), dtype=bool)
    assert tree.per_domain(0, gpus, everything).tolist() == [[6000.0, 8000.0]]
    assert tree.per_domain(ROOT, gpus, tree.inside).tolist() == [[14000.0]]
    # cached on the node table: built once per node set
    assert build_domain_tree(nodes, TopologyInfo("t", ("zone", "rack"))) is tree
