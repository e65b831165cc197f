"""Node pools: an instance keeps only its pool's Nodes, Queues, PodGroups and
BindRequests (the default instance: those without the label), every Pod, one Lease per
pool, its BindRequests carry its label, and ``--node-pool`` rejects what is not a label
value."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import pytest
from live_objects import api_with, with_informers

from crds.bindrequest import SELECTED_NODE_LABEL
from crds.names import CREATED_BY_LABEL, NODE_POOL_LABEL
from scheduler.cache import pools
from scheduler.cache.cluster_cache import ClusterCache
from scheduler.cache.pools import NodePool
from scheduler.cycle import Bind, CycleResult
from scheduler.live import statuses
from scheduler.live.committing import Committer
from scheduler.live.informers import Informers
from tests.kits import worlds as st
from tests.kits.fake_kube import FakeKube


def _labelled(obj: dict[str, Any], pool: str | None, key: str = NODE_POOL_LABEL) -> dict[str, Any]:
    obj = dict(obj)
    meta = dict(obj.get("metadata") or {})
    labels = dict(meta.get("labels") or {})
    if pool is not None:
        labels[key] = pool
    meta["labels"] = labels
    obj["metadata"] = meta
    return obj


def _obj(kind: str, labels: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": "x", "labels": labels}}


@pytest.mark.parametrize(
    ("pool", "kind", "labels", "held"),
    [
        (NodePool("a"), "Node", {NODE_POOL_LABEL: "a"}, True),
        (NodePool("a"), "Node", {NODE_POOL_LABEL: "b"}, False),
        (NodePool("a"), "Node", {}, False),
        (NodePool("a"), "Queue", {NODE_POOL_LABEL: "a"}, True),
        (NodePool("a"), "Queue", None, False),
        (NodePool("a"), "PodGroup", {NODE_POOL_LABEL: "b"}, False),
        (NodePool("a"), "BindRequest", {NODE_POOL_LABEL: "a"}, True),
        (NodePool("a"), "Pod", {NODE_POOL_LABEL: "b"}, True),  # foreign pods use room
        (NodePool("a"), "Pod", {}, True),
        (NodePool(), "Node", {}, True),
        (NodePool(), "Node", None, True),
        (NodePool(), "Node", {NODE_POOL_LABEL: "a"}, False),
        (NodePool(), "PodGroup", {NODE_POOL_LABEL: ""}, False),  # the key is present
        # labels that cannot be read: held by every pool, so its cache reports the node
        (NodePool(), "Node", "not a map", True),
        (NodePool("a"), "Node", "not a map", True),
        (NodePool("a"), "Node", [f"{NODE_POOL_LABEL}=a"], True),
        (NodePool("a"), "Node", {NODE_POOL_LABEL: 1}, True),
        (NodePool(), "Queue", {NODE_POOL_LABEL: 1}, True),
        (NodePool("a", "pool"), "Node", {"pool": "a"}, True),
        (NodePool("a", "pool"), "Node", {NODE_POOL_LABEL: "a"}, False),
        (NodePool("a"), "PriorityClass", {}, True),
    ],
)
def test_which_objects_a_pool_holds(pool: NodePool, kind: str, labels: Any, held: bool) -> None:
    assert pool.holds(_obj(kind, labels)) is held


@pytest.mark.parametrize("metadata", [["name", "x"], "x"])
def test_metadata_not_a_map_is_held_not_a_crash(metadata: Any) -> None:
    assert NodePool("a").holds({"kind": "Node", "metadata": metadata}) is True


def test_lease_names_and_selectors_differ_per_pool() -> None:
    assert NodePool().lease_name == "podmuster-scheduler"
    assert NodePool("a").lease_name == "podmuster-scheduler-a"
    assert NodePool("A.b").lease_name == "podmuster-scheduler-a-b"
    assert NodePool("gpu_A100").lease_name == "podmuster-scheduler-gpu-a100"
    assert NodePool().selector == f"!{NODE_POOL_LABEL}"
    assert NodePool("a", "pool").selector == "pool=a"


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    pools.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_flags_default_to_the_default_pool_and_the_kai_label() -> None:
    assert pools.from_arguments(_parse()) == NodePool(None, NODE_POOL_LABEL)
    assert pools.from_arguments(_parse("--node-pool", "gpu-a100")) == NodePool("gpu-a100")
    args = _parse("--node-pool", "a", "--node-pool-label", "pool")
    assert pools.from_arguments(args) == NodePool("a", "pool")
    assert pools.from_arguments(argparse.Namespace()) == NodePool()


@pytest.mark.parametrize("value", ["", "-a", "a-", "a b", "a/b", "x" * 64])
def test_a_bad_pool_name_is_a_usage_error(value: str) -> None:
    with pytest.raises(SystemExit):
        _parse("--node-pool", value)


def test_informers_keep_only_their_pool_and_drop_what_leaves_it() -> None:
    objects = [
        _labelled(st.node("na"), "a"),
        _labelled(st.node("nb"), "b"),
        st.node("n0"),
        _labelled(st.queue("qa"), "a"),
        st.queue("q0"),
    ]
    informers = Informers(FakeKube(), ClusterCache(strict=False), pool=NodePool("a"))
    for obj in st.stamp(st.flatten(objects)):
        informers.observe("ADDED", obj)
    assert set(informers.objects["Node"]) == {"na"}
    assert set(informers.objects["Queue"]) == {"qa"}
    moved = _labelled(st.node("na"), "b")
    informers.observe("MODIFIED", moved)  # relabelled into pool b: gone for pool a
    assert set(informers.objects["Node"]) == set()
    assert informers.cache.snapshot(0).snapshot.nodes.names == []


@pytest.mark.parametrize("pool", [NodePool("a"), NodePool()])
@pytest.mark.parametrize(
    ("metadata", "field"),
    [
        ({"name": "bad", "labels": [f"{NODE_POOL_LABEL}=a"]}, "metadata.labels"),
        ({"name": "bad", "labels": {NODE_POOL_LABEL: 1}}, f"metadata.labels[{NODE_POOL_LABEL}]"),
    ],
)
def test_a_node_whose_labels_cannot_be_read_is_reported_by_every_pool(
    pool: NodePool, metadata: dict[str, Any], field: str
) -> None:
    """Pool ``a`` dropped such a node without a word (the default pool took it as its
    own): every instance now reports it, naming the node and the field, and schedules
    on the others."""
    bad = {**st.node("bad"), "metadata": metadata}
    objects = st.stamp(st.flatten([_labelled(st.node("n"), pool.name), bad]))
    informers = Informers(FakeKube(), ClusterCache(strict=False), pool=pool)
    for obj in objects:
        informers.observe("ADDED", obj)
    assert [(obj["metadata"]["name"], error.field) for obj, error in informers.invalid] == [
        ("bad", field)
    ]
    assert informers.cache.snapshot(0).snapshot.nodes.names == ["n"]


def test_the_default_pool_lists_only_unlabelled_objects() -> None:
    fake = api_with([_labelled(st.node("na"), "a"), st.node("n0")])

    async def scenario(informers: Informers) -> None:
        assert set(informers.objects["Node"]) == {"n0"}

    informers = with_informers(fake, scenario)
    assert informers.cache.snapshot(0).snapshot.nodes.names == ["n0"]


def test_a_pool_writes_and_replaces_only_its_own_scheduling_condition() -> None:
    group = {
        "status": {
            "schedulingConditions": [
                statuses.scheduling_condition(["x"], 1, "b"),
                statuses.scheduling_condition(["x"], 4),
            ]
        }
    }
    patch = statuses.pod_group_patch(group, ["OverLimit: y"], "a")
    assert patch is not None
    conditions = patch["status"]["schedulingConditions"]
    assert sorted(c["nodePool"] for c in conditions) == ["a", "b", "default"]


@pytest.mark.parametrize(
    ("pool", "labels"), [(NodePool("a"), {NODE_POOL_LABEL: "a"}), (NodePool(), {})]
)
def test_a_pool_labels_its_bind_requests_and_keeps_seeing_them(
    pool: NodePool, labels: dict[str, str]
) -> None:
    """As KAI does: a pool's instance watches only BindRequests with its label, so an
    unlabelled request would vanish from its cache (the pod would look unplaced) and be
    counted by the default pool instead."""
    objects = st.stamp(st.flatten([_labelled(st.node("na"), pool.name), st.pod("p")]))
    fake = api_with(objects)
    informers = Informers(fake, ClusterCache(strict=False), pool=pool)
    for obj in objects:
        informers.observe("ADDED", obj)
    report = asyncio.run(
        Committer(fake, informers).commit(CycleResult(binds=[Bind("default/p", "na")]))
    )
    assert report.bind_requests == 1
    (request,) = fake.of_kind("BindRequest")
    assert request["metadata"]["labels"] == {
        SELECTED_NODE_LABEL: "na",
        CREATED_BY_LABEL: "scheduler",
        **labels,
    }
    assert set(informers.objects["BindRequest"]) == {"default/p"}
