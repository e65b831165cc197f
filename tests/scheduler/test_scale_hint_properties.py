"""Properties of the scale-up hint over random clusters (scheduler/actions/scale_hint.py).

Random clusters: one to three node shapes (GPUs, CPU) in two pools, some GPUs already
busy, and one homogeneous gang (the common case: N identical workers) of random size
and per-pod GPUs, optionally selecting one pool. After one cycle:

- sufficiency: when the gang stays pending with a hint and no unhostable pods, adding
  the hinted number of nodes of the hinted shape and labels lets the same gang be
  scheduled in the next cycle;
- minimality: with one node fewer than the hint (when it asks for more than one), the
  gang still does not fit;
- a gang that is scheduled carries no hint.

The same for a gang that requires one rack (topology "topo": zone, rack; nodes in up to
three racks): the hinted nodes, added with the hinted labels (which name the rack),
let it be scheduled; one node fewer, in any rack, does not.

And for a gang whose pods are required anti-affine to each other, per hostname (one pod
per node) or per zone (label "az", nodes in zones a and b): the hinted nodes, each in a
zone of its own when the hint names the key (``apart``), let it be scheduled; one fewer
does not.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from tests.kits.affinity import HOST, affinity, term
from tests.kits.worlds import job, node, queue, run_objects, topology, topology_constraint

POOL = "karpenter.sh/nodepool"
AZ = "az"
SHAPES = [(8, "64"), (4, "32"), (2, "16")]


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    nodes = []
    for i in range(draw(st.integers(1, 4))):
        gpus, cpu = draw(st.sampled_from(SHAPES))
        pool = draw(st.sampled_from(["a", "b"]))
        busy = draw(st.integers(0, gpus))
        rack = draw(st.sampled_from(["r1", "r2", "r3"]))
        az = draw(st.sampled_from(["a", "b"]))
        nodes.append((f"n{i}", gpus, cpu, pool, busy, rack, az))
    return {
        "nodes": nodes,
        "racks": draw(st.booleans()),
        "apart": draw(st.sampled_from([None, HOST, AZ])),
        "tasks": draw(st.integers(1, 12)),
        "gpus": draw(st.sampled_from([1, 2, 4])),
        "pool": draw(st.sampled_from([None, "a", "b"])),
    }


def objects(case: dict[str, Any], extra: list[tuple[str, dict[str, str], dict[str, str]]]) -> list:  # type: ignore[type-arg]
    out: list[Any] = [queue("q"), topology("topo", "zone", "rack")]
    for name, gpus, cpu, pool, busy, rack, az in case["nodes"]:
        labels = {POOL: pool, "zone": "z1", "rack": rack, AZ: az, HOST: name}
        out.append(node(name, gpus=gpus, cpu=cpu, memory="256Gi", labels=labels))
        if busy:
            out.append(
                job(
                    f"busy-{name}",
                    "q",
                    busy,
                    gpus=1,
                    cpu="100m",
                    memory="1Gi",
                    states=["Running"] * busy,
                    nodes=[name] * busy,
                )
            )
    out += [hinted_node(*added) for added in extra]
    selector = {POOL: case["pool"]} if case["pool"] else None
    apart: dict[str, Any] = {}
    if case["apart"]:
        apart = {"labels": {"app": "g"}, "affinity": affinity(anti=[term("g", case["apart"])])}
    out.append(
        job(
            "g",
            "q",
            case["tasks"],
            gpus=case["gpus"],
            cpu="1",
            memory="1Gi",
            node_selector=selector,
            topology=topology_constraint("topo", required="rack") if case["racks"] else None,
            **apart,
        )
    )
    return out


def hinted_node(name: str, shape: dict[str, str], labels: dict[str, str]) -> dict[str, Any]:
    """A new node of a hint's ``shape`` (its rendered quantities) with ``labels``."""
    return node(
        name,
        gpus=float(shape["nvidia.com/gpu"]),
        cpu=shape["cpu"],
        memory=shape["memory"],
        labels=labels,
    )


def gang_outcome(result: Any) -> Any:
    (outcome,) = [g for g in result.pod_groups if g.pod_group == "default/g"]
    return outcome


def with_new_nodes(case: dict[str, Any], hint: Any, count: int, rack: str = "") -> Any:
    """The gang's outcome with ``count`` more nodes of the hint, each in a zone of its own."""
    labels = {**hint.labels, **({"rack": rack} if rack else {})}
    extra = [
        (f"new-{i}", dict(hint.shape), {**labels, HOST: f"new-{i}", AZ: f"new-{i}"})
        for i in range(count)
    ]
    return gang_outcome(run_objects(objects(case, extra)))


@settings(deadline=None)
@given(clusters())
def test_hint_is_sufficient_and_minimal(case: dict[str, Any]) -> None:
    outcome = gang_outcome(run_objects(objects(case, [])))
    hint = outcome.scale_up_hint
    if outcome.outcome != "pending":
        assert hint is None
        return
    if hint is None or hint.unhostable or hint.nodes == 0:
        return
    event(f"racks={case['racks']} apart={case['apart']} nodes={min(hint.nodes, 3)}")
    assert (hint.topology is not None) == case["racks"]
    assert list(hint.apart) == ([AZ] if case["apart"] == AZ else [])
    assert with_new_nodes(case, hint, hint.nodes).outcome == "scheduled"
    if hint.nodes > 1:
        racks = ["r1", "r2", "r3"] if case["racks"] else [""]
        for rack in racks:  # the hinted rack needs the fewest: one fewer fits no rack
            assert with_new_nodes(case, hint, hint.nodes - 1, rack).outcome == "pending"
