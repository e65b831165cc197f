"""Scale-up hints (scheduler/actions/scale_hint.py): a pending gang's whole shortfall as
"N more nodes of this shape", the shape chosen among existing nodes the pods may use,
tasks no shape can host named, the PodGroup annotation set, kept and cleared, and
utility pods (scaling, reservation) left out of the fair-share total (§7).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from podmuster.schedule_command import render
from scheduler.actions.scale_hint import MAX_JOBS_PER_CYCLE, format_quantity
from scheduler.api.resources import CPU, GPU, MEMORY
from scheduler.cycle import CycleResult
from tests.kits.affinity import HOST, ZONE, affinity, spread, term, with_spread, zoned
from tests.kits.worlds import (
    job,
    node,
    pod,
    pod_group,
    queue,
    run_objects,
    taint,
    topology,
    topology_constraint,
)

HINT = "kai.scheduler/scale-up-hint"
POOL = "karpenter.sh/nodepool"
GPU_MEMORY = "nvidia.com/gpu.memory"


def gpu_node(
    name: str, pool: str = "gpu", gpus: int = 8, device_memory: str = "", **extra: Any
) -> dict[str, Any]:
    labels = {POOL: pool, **({GPU_MEMORY: device_memory} if device_memory else {})}
    return node(name, gpus=gpus, cpu="32", memory="256Gi", labels=labels, **extra)


def busy(name: str, node_name: str, gpus: int = 8) -> list[dict[str, Any]]:
    """A running gang filling ``gpus`` GPUs of one node."""
    return job(name, "q", gpus, gpus=1, states=["Running"] * gpus, nodes=[node_name] * gpus)


def rack_node(name: str, rack: str, zone: str = "z1") -> dict[str, Any]:
    """An 8-GPU node of pool "gpu" in ``zone``/``rack`` (topology "topo": zone, rack)."""
    labels = {POOL: "gpu", "zone": zone, "rack": rack, HOST: name}
    return node(name, gpus=8, cpu="32", memory="256Gi", labels=labels)


RACK_REQUIRED = topology_constraint("topo", required="rack")


def host_node(name: str, zone: str = "a") -> dict[str, Any]:
    """An 8-GPU node of pool "gpu" labelled with its hostname and ``zone``."""
    return zoned(name, zone, gpus=8, cpu="32", memory="256Gi", labels={POOL: "gpu"})


def apart_gang(name: str, tasks: int, key: str = HOST) -> list[dict[str, Any]]:
    """A gang of 1-GPU pods labelled app=<name>, required anti-affine to them per ``key``."""
    anti = affinity(anti=[term(name, key)])
    return job(name, "q", tasks, gpus=1, labels={"app": name}, affinity=anti)


def in_rack(hint: dict[str, Any], domain: str) -> dict[str, Any]:
    """``hint`` for new nodes in rack ``domain`` ("z1/r2") of topology "topo"."""
    zone, rack = domain.split("/")
    where = {"name": "topo", "level": "rack", "domain": domain}
    return {**hint, "labels": {**hint["labels"], "zone": zone, "rack": rack}, "topology": where}


def hinted(group: dict[str, Any], hint: dict[str, Any]) -> dict[str, Any]:
    group["metadata"]["annotations"] = {HINT: json.dumps(hint, sort_keys=True)}
    return group


@dataclass(frozen=True)
class Case:
    name: str
    objects: list[Any]
    hints: dict[str, dict[str, Any] | None]  # group -> expected scaleUpHint (None: none)
    annotations: dict[str, str | None] = field(default_factory=dict)  # expected writes

    def __str__(self) -> str:
        return self.name


SHARE_3_DEVICES = {"gpu-fraction": "0.5", "gpu-fraction-num-devices": "3"}


def unhostable(*pods: str) -> dict[str, Any]:
    return {"nodes": 0, "pods": 0, "shape": {}, "labels": {}, "unhostable": list(pods)}


WANT_ONE_NODE = {
    "nodes": 1,
    "pods": 8,
    "shape": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8"},
    "labels": {POOL: "gpu"},
}

CASES = [
    # Fractional GPUs: four halves count 2 GPUs, so one more GPU node (not a CPU node,
    # the more common shape, whose nodes have no GPU at all).
    Case(
        "fractional-gang-needs-a-gpu-node",
        [
            queue("q"),
            *[node(f"c{i}", cpu="32", memory="256Gi", labels={POOL: "cpu"}) for i in range(3)],
            gpu_node("n0"),
            busy("busy", "n0"),
            job("g", "q", 4, annotations={"gpu-fraction": "0.5"}),
        ],
        {"g": {**WANT_ONE_NODE, "pods": 4}},
    ),
    # The task's example: 16 x 1-GPU pods, 8-GPU nodes, one node free: 8 fit, the other
    # 8 need exactly one more node like the existing ones.
    Case(
        "gang-16-on-8gpu-nodes-one-free",
        [
            queue("q"),
            gpu_node("n0"),
            gpu_node("n1"),
            busy("busy", "n0"),
            job("g", "q", 16, gpus=1, cpu="1", memory="1Gi"),
        ],
        {"g": WANT_ONE_NODE},
    ),
    # Nothing free: 16 pods need two nodes.
    Case(
        "gang-16-nothing-free-needs-two",
        [queue("q"), gpu_node("n0"), busy("busy", "n0"), job("g", "q", 16, gpus=1)],
        {"g": {**WANT_ONE_NODE, "nodes": 2, "pods": 16}},
    ),
    # Selectors: the pods may only use pool "a100"; the more common "t4" shape (3 nodes)
    # is not eligible, so the hint names the a100 shape.
    Case(
        "selector-picks-matching-shape",
        [
            queue("q"),
            *[gpu_node(f"t{i}", pool="t4", gpus=4) for i in range(3)],
            gpu_node("a0", pool="a100"),
            busy("busy", "a0"),
            job("g", "q", 4, gpus=2, node_selector={POOL: "a100"}),
        ],
        {"g": {**WANT_ONE_NODE, "pods": 4, "labels": {POOL: "a100"}}},
    ),
    # Same allocatable, no known pool label: the label the pods select on ("rack") names
    # where the new node must go, from a node the pods may use.
    Case(
        "selector-label-reported",
        [
            queue("q"),
            node("r1", gpus=8, cpu="32", memory="256Gi", labels={"rack": "r1"}),
            node("r2", gpus=8, cpu="32", memory="256Gi", labels={"rack": "r2"}),
            busy("busy", "r2"),
            job("g", "q", 2, gpus=8, node_selector={"rack": "r2"}),
        ],
        {"g": {**WANT_ONE_NODE, "nodes": 2, "pods": 2, "labels": {"rack": "r2"}}},
    ),
    # Taints: the tainted pool is not eligible for pods without the toleration.
    Case(
        "taint-excludes-pool",
        [
            queue("q"),
            gpu_node("x0", pool="reserved", taints=[taint("dedicated")]),
            gpu_node("x1", pool="reserved", taints=[taint("dedicated")]),
            gpu_node("n0", gpus=4),
            busy("busy", "n0", 4),
            job("g", "q", 2, gpus=2),
        ],
        {
            "g": {
                **WANT_ONE_NODE,
                "pods": 2,
                "shape": {**WANT_ONE_NODE["shape"], "nvidia.com/gpu": "4"},
            }
        },
    ),
    # A pod asking for more than any node has: the hint says no shape can host it.
    Case(
        "no-shape-can-host",
        [queue("q"), gpu_node("n0"), job("g", "q", 1, gpus=16)],
        {"g": {"nodes": 0, "pods": 0, "shape": {}, "labels": {}, "unhostable": ["default/g-0"]}},
    ),
    # Shared-GPU requests are sized per device (gpushare finding 10): 0.5 on each of 3
    # devices, or 50000 MiB of one device, fit no node of 2 devices of 40000 MiB, busy or
    # empty. Before, 1.5 and 1.25 "GPUs" fit the 2 GPUs: one more node was asked for with
    # a running pod there, and with the node empty the pods seemed to fit (no hint at all).
    *[
        Case(
            f"shared-request-no-device-shape-hosts-{state}",
            [
                queue("q"),
                gpu_node("n0", gpus=2, device_memory="40000"),
                *(busy("busy", "n0", 1) if state == "busy" else []),
                job("m3", "q", 1, annotations=SHARE_3_DEVICES),
                job("mem", "q", 1, annotations={"gpu-memory": "50000"}),
            ],
            {"m3": unhostable("default/m3-0"), "mem": unhostable("default/mem-0")},
        )
        for state in ("busy", "empty")
    ],
    # The same 3-device pod and a 4-GPU shape: that shape is asked for, not the 2-GPU one.
    Case(
        "shared-request-picks-a-shape-with-enough-devices",
        [
            queue("q"),
            *[gpu_node(f"s{i}", gpus=2) for i in range(2)],
            gpu_node("n0", pool="big", gpus=4),
            busy("busy", "n0", 4),
            job("m3", "q", 1, annotations=SHARE_3_DEVICES),
        ],
        {
            "m3": {
                **WANT_ONE_NODE,
                "pods": 1,
                "shape": {**WANT_ONE_NODE["shape"], "nvidia.com/gpu": "4"},
                "labels": {POOL: "big"},
            }
        },
    ),
    # Three pods of 0.6 on a full 2-GPU node: two share no device, so 2 new nodes (by a
    # scalar 1.8 GPUs, one).
    Case(
        "shared-portions-packed-per-device",
        [
            queue("q"),
            gpu_node("n0", gpus=2),
            busy("busy", "n0", 2),
            job("g", "q", 3, annotations={"gpu-fraction": "0.6"}),
        ],
        {
            "g": {
                **WANT_ONE_NODE,
                "nodes": 2,
                "pods": 3,
                "shape": {**WANT_ONE_NODE["shape"], "nvidia.com/gpu": "2"},
            }
        },
    ),
    # The same three pods and an empty 2-GPU node: two fit its devices, the third needs a
    # new node (by a scalar 1.8 of 2 free GPUs all fitted: the gang got no hint at all).
    Case(
        "shared-portions-fit-free-devices-one-by-one",
        [queue("q"), gpu_node("n0", gpus=2), job("g", "q", 3, annotations={"gpu-fraction": "0.6"})],
        {
            "g": {
                **WANT_ONE_NODE,
                "pods": 1,
                "shape": {**WANT_ONE_NODE["shape"], "nvidia.com/gpu": "2"},
            }
        },
    ),
    # Room left in a shared device counts: a running 0.5 leaves 0.5 on one device, so of
    # four pods of 0.5 on that 2-GPU node three fit (that device and the free one) and one
    # more node takes the fourth, 0.5 of its 2 GPUs.
    Case(
        "shared-portions-join-existing-shared-devices",
        [
            queue("q"),
            gpu_node("n0", gpus=2),
            *job(
                "run",
                "q",
                1,
                annotations={"gpu-fraction": "0.5"},
                labels={"runai-gpu-group": "G1"},
                states=["Running"],
                nodes=["n0"],
            ),
            job("g", "q", 4, annotations={"gpu-fraction": "0.5"}),
        ],
        {
            "g": {
                **WANT_ONE_NODE,
                "pods": 1,
                "shape": {**WANT_ONE_NODE["shape"], "nvidia.com/gpu": "2"},
            }
        },
    ),
    # Nodes alike but for their GPUs' memory are two shapes: a 30000 MiB request fits only
    # the 80000 MiB one, which the hint names (before: one shape, counted by the smallest
    # device memory, so "no shape can host").
    Case(
        "gpu-memory-request-picks-the-shape-by-device-memory",
        [
            queue("q"),
            *[gpu_node(f"s{i}", gpus=1, device_memory="16000") for i in range(3)],
            gpu_node("b0", gpus=1, device_memory="80000"),
            *[busy(f"busy{i}", n, 1) for i, n in enumerate(("s0", "s1", "s2", "b0"))],
            job("g", "q", 2, annotations={"gpu-memory": "30000"}),
        ],
        {
            "g": {
                **WANT_ONE_NODE,
                "pods": 2,
                "shape": {**WANT_ONE_NODE["shape"], "nvidia.com/gpu": "1"},
                "labels": {POOL: "gpu", GPU_MEMORY: "80000"},
            }
        },
    ),
    # Pinned to one node by hostname: no new node can host it.
    Case(
        "hostname-pinned-is-unhostable",
        [
            queue("q"),
            node("n0", gpus=8, labels={"kubernetes.io/hostname": "n0"}),
            busy("busy", "n0"),
            job("g", "q", 1, gpus=1, node_selector={"kubernetes.io/hostname": "n0"}),
        ],
        {"g": {"nodes": 0, "pods": 0, "shape": {}, "labels": {}, "unhostable": ["default/g-0"]}},
    ),
    # Most common eligible shape wins: 3 nodes of 8 GPUs against 1 of 4 (both host 2 GPUs).
    Case(
        "most-common-shape",
        [
            queue("q"),
            *[gpu_node(f"b{i}", pool="big") for i in range(3)],
            gpu_node("s0", pool="small", gpus=4),
            *[busy(f"busy{i}", f"b{i}") for i in range(3)],
            busy("busys", "s0", 4),
            job("g", "q", 2, gpus=2),
        ],
        {"g": {**WANT_ONE_NODE, "pods": 2, "labels": {POOL: "big"}}},
    ),
    # Equally common: the smallest shape that hosts the tasks.
    Case(
        "tie-goes-to-smallest-shape",
        [
            queue("q"),
            gpu_node("b0", pool="big"),
            gpu_node("s0", pool="small", gpus=4),
            busy("busyb", "b0"),
            busy("busys", "s0", 4),
            job("g", "q", 2, gpus=2),
        ],
        {
            "g": {
                **WANT_ONE_NODE,
                "pods": 2,
                "shape": {**WANT_ONE_NODE["shape"], "nvidia.com/gpu": "4"},
                "labels": {POOL: "small"},
            }
        },
    ),
    # First-fit decreasing: 3 x 4-GPU and 4 x 2-GPU pods (20 GPUs) onto empty 8-GPU nodes:
    # 4+4, 4+2+2, 2+2 -> 3 nodes.
    Case(
        "first-fit-decreasing-mixed-sizes",
        [
            queue("q"),
            gpu_node("n0"),
            busy("busy", "n0"),
            pod_group("g", "q", min_member=7, sub_groups=[("big", 3), ("small", 4)]),
            *[pod(f"g-big-{i}", "g", gpus=4, sub_group="big") for i in range(3)],
            *[pod(f"g-small-{i}", "g", gpus=2, sub_group="small") for i in range(4)],
        ],
        {"g": {**WANT_ONE_NODE, "nodes": 3, "pods": 7}},
    ),
    # Over its queue's limit: more nodes would not help, so no hint.
    Case(
        "over-limit-no-hint",
        [queue("q", gpu_limit=4), gpu_node("n0"), busy("busy", "n0", 4), job("g", "q", 2, gpus=1)],
        {"g": None},
    ),
    # Not ready (fewer pods than minMember): no hint until the pods exist.
    Case(
        "not-ready-no-hint",
        [
            queue("q"),
            gpu_node("n0"),
            busy("busy", "n0"),
            pod_group("g", "q", min_member=3),
            pod("g-0", "g", gpus=1),
        ],
        {"g": None},
    ),
    # The gang fits now: it is scheduled and the hint it carried is removed.
    Case(
        "hint-cleared-when-scheduled",
        [
            queue("q"),
            gpu_node("n0"),
            gpu_node("n1"),
            hinted(pod_group("g", "q", min_member=16), WANT_ONE_NODE),
            *[pod(f"g-{i}", "g", gpus=1) for i in range(16)],
        ],
        {},
        annotations={"g": None},
    ),
    # The same hint as stored: nothing to write.
    Case(
        "unchanged-hint-not-rewritten",
        [
            queue("q"),
            gpu_node("n0"),
            gpu_node("n1"),
            busy("busy", "n0"),
            hinted(pod_group("g", "q", min_member=16), WANT_ONE_NODE),
            *[pod(f"g-{i}", "g", gpus=1) for i in range(16)],
        ],
        {"g": WANT_ONE_NODE},
        annotations={},
    ),
    # Rack required: the new nodes must join one rack together with its free room. r1 has
    # 2 GPUs free, r2 4: twelve 1-GPU pods need 2 more nodes in r1 but 1 in r2 (8 pods).
    # (Unconstrained, the six free GPUs would count: 6 pods, 1 node anywhere.)
    Case(
        "required-rack-picks-the-rack-needing-fewest-nodes",
        [
            queue("q"),
            topology("topo", "zone", "rack"),
            rack_node("a0", "r1"),
            rack_node("a1", "r1"),
            rack_node("b0", "r2"),
            rack_node("b1", "r2"),
            busy("busy-a0", "a0"),
            busy("busy-a1", "a1", 6),
            busy("busy-b0", "b0"),
            busy("busy-b1", "b1", 4),
            job("g", "q", 12, gpus=1, topology=RACK_REQUIRED),
        ],
        {"g": in_rack(WANT_ONE_NODE, "z1/r2")},
    ),
    # Eight GPUs free, four in each rack: the gang fits the cluster but no rack, so it
    # gets a hint (none before topology counted); one node either way, the tie goes to
    # the rack named first.
    Case(
        "required-rack-free-room-split-over-racks",
        [
            queue("q"),
            topology("topo", "zone", "rack"),
            rack_node("a0", "r1"),
            rack_node("b0", "r2", zone="z0"),
            busy("busy-a0", "a0", 4),
            busy("busy-b0", "b0", 4),
            job("g", "q", 8, gpus=1, topology=RACK_REQUIRED),
        ],
        {"g": in_rack({**WANT_ONE_NODE, "pods": 4}, "z0/r2")},
    ),
    # Its running pods pin the gang to r2 (full); r1's free node does not count.
    Case(
        "required-rack-pinned-by-running-pods",
        [
            queue("q"),
            topology("topo", "zone", "rack"),
            rack_node("a0", "r1"),
            rack_node("b0", "r2"),
            busy("busy-b0", "b0", 6),
            job(
                "g",
                "q",
                4,
                gpus=1,
                topology=RACK_REQUIRED,
                states=["Running", "Running", "Pending", "Pending"],
                nodes=["b0", "b0", None, None],
            ),
        ],
        {"g": in_rack({**WANT_ONE_NODE, "pods": 2}, "z1/r2")},
    ),
    # A rack the pods' selector rules out is no candidate, although it has more room.
    Case(
        "required-rack-only-where-the-pods-may-go",
        [
            queue("q"),
            topology("topo", "zone", "rack"),
            rack_node("a0", "r1"),
            rack_node("b0", "r2"),
            busy("busy-a0", "a0", 7),
            busy("busy-b0", "b0", 4),
            job("g", "q", 8, gpus=1, topology=RACK_REQUIRED, node_selector={"rack": "r1"}),
        ],
        {"g": in_rack({**WANT_ONE_NODE, "pods": 7}, "z1/r1")},
    ),
    # The Topology does not exist: no node would help, so no hint (the reason says why).
    Case(
        "required-rack-of-a-missing-topology-no-hint",
        [
            queue("q"),
            rack_node("a0", "r1"),
            busy("busy-a0", "a0"),
            job("g", "q", 2, gpus=1, topology=topology_constraint("nope", required="rack")),
        ],
        {"g": None},
    ),
    # Anti-affine to itself per hostname: one pod per node. Two free nodes take 2 of the
    # 4 (by GPUs they would take all 4: no hint before), so 2 more nodes, one pod each.
    Case(
        "anti-affine-per-host-one-pod-per-new-node",
        [queue("q"), host_node("n0"), host_node("n1"), apart_gang("g", 4)],
        {"g": {**WANT_ONE_NODE, "nodes": 2, "pods": 2}},
    ),
    # n0 holds a pod the rule matches (app=g, another owner): its free GPUs are no room.
    # One pod on n1; 2 more nodes for the other 2 (not 1 node, as GPUs alone would say).
    Case(
        "anti-affine-per-host-node-with-a-match-is-no-room",
        [
            queue("q"),
            host_node("n0"),
            host_node("n1"),
            pod("old", state="Running", node="n0", labels={"app": "g"}),
            apart_gang("g", 3),
        ],
        {"g": {**WANT_ONE_NODE, "nodes": 2, "pods": 2}},
    ),
    # 8 pods, one per node, on 8-GPU nodes: 8 nodes, where GPUs alone would say 1.
    Case(
        "anti-affine-per-host-nothing-free",
        [queue("q"), host_node("n0"), busy("busy", "n0"), apart_gang("g", 8)],
        {"g": {**WANT_ONE_NODE, "nodes": 8}},
    ),
    # Anti-affine per zone: zones a (n0, n1) and b (n2) take one pod each; the third
    # needs 1 node in a zone of its own, which the hint says (``apart``).
    Case(
        "anti-affine-per-zone-names-the-key",
        [
            queue("q"),
            host_node("n0"),
            host_node("n1"),
            host_node("n2", zone="b"),
            apart_gang("g", 3, ZONE),
        ],
        {"g": {**WANT_ONE_NODE, "nodes": 1, "pods": 1, "apart": [ZONE]}},
    ),
    # Spread per hostname, maxSkew 1, DoNotSchedule: n2 is full and holds no app=g pod,
    # so the skew stays measured from 0 and n0, n1 could take one each: 2 more nodes would
    # do. The hint packs spread pods by resources (docs/autoscaling.md: a node per pod
    # would ask for far too many wherever every node can take a pod), so it sees the 4
    # GPUs fit n0 and n1 and gives none: a known shortfall, kept visible here.
    Case(
        "spread-per-host-is-packed-by-resources",
        [
            queue("q"),
            host_node("n0"),
            host_node("n1"),
            host_node("n2"),
            busy("busy", "n2"),
            *with_spread(job("g", "q", 4, gpus=1, labels={"app": "g"}), spread("g", HOST)),
        ],
        {"g": None},
    ),
    # Rack required and one pod per node: r1's two empty nodes take 2 of 3 (by GPUs, all
    # 3: no hint before), r2's one node takes 1; r1 needs 1 more node, r2 2: r1 wins.
    Case(
        "anti-affine-per-host-in-a-required-rack",
        [
            queue("q"),
            topology("topo", "zone", "rack"),
            rack_node("a0", "r1"),
            rack_node("a1", "r1"),
            rack_node("b0", "r2"),
            *job(
                "g",
                "q",
                3,
                gpus=1,
                topology=RACK_REQUIRED,
                labels={"app": "g"},
                affinity=affinity(anti=[term("g")]),
            ),
        ],
        {"g": in_rack({**WANT_ONE_NODE, "pods": 1}, "z1/r1")},
    ),
    # An elastic gang already at its minimum: its extras wait one at a time, no hint.
    Case(
        "elastic-extras-no-hint",
        [
            queue("q"),
            gpu_node("n0", gpus=2),
            job(
                "e",
                "q",
                4,
                gpus=1,
                min_member=2,
                states=["Running", "Running"] + ["Pending"] * 2,
                nodes=["n0", "n0", None, None],
            ),
        ],
        {"e": None},
    ),
]


def outcome_hints(result: CycleResult) -> dict[str, dict[str, Any] | None]:
    return {
        g.pod_group.split("/")[1]: (g.scale_up_hint.as_dict() if g.scale_up_hint else None)
        for g in result.pod_groups
        if g.outcome == "pending"
    }


def hint_writes(result: CycleResult) -> dict[str, str | None]:
    return {
        key.split("/")[1]: changes[HINT]
        for key, changes in result.annotations.items()
        if HINT in changes
    }


@pytest.mark.parametrize("case", CASES, ids=str)
def test_scale_up_hint(case: Case) -> None:
    result = run_objects(case.objects)
    hints = outcome_hints(result)
    for group, expected in case.hints.items():
        assert hints.get(group) == expected, f"{group}: {hints.get(group)}"
    writes = hint_writes(result)
    if case.annotations or not case.hints:
        assert writes == case.annotations
    else:  # every hint is written as the annotation, compact JSON
        for group, expected in case.hints.items():
            if expected is not None:
                assert json.loads(writes[group]) == expected  # type: ignore[arg-type]


def test_hint_removed_when_gang_no_longer_lacks_room() -> None:
    """A stored hint on a gang now held back by its queue limit is removed (examined first)."""
    result = run_objects(
        [
            queue("q", gpu_limit=9),
            gpu_node("n0"),
            busy("busy", "n0"),
            hinted(pod_group("g", "q", min_member=2), WANT_ONE_NODE),
            *[pod(f"g-{i}", "g", gpus=1) for i in range(2)],
        ]
    )
    assert hint_writes(result) == {"g": None}


def test_hints_are_bounded_per_cycle() -> None:
    count = MAX_JOBS_PER_CYCLE + 4
    result = run_objects(
        [queue("q"), gpu_node("n0"), busy("busy", "n0")]
        + [job(f"g{i:02d}", "q", 2, gpus=1) for i in range(count)]
    )
    hints = [g for g in result.pod_groups if g.scale_up_hint is not None]
    assert len(hints) == MAX_JOBS_PER_CYCLE
    assert hints[0].pod_group == "default/g00"  # oldest first


def test_hinted_gangs_first_then_the_oldest() -> None:
    """Gangs carrying a hint are examined first, however young; when one of them no longer
    lacks room (its queue is at its limit: the hint comes off), the oldest gang without
    a hint takes its turn within the bound, and the next one waits for a later cycle."""
    carrying = [job(f"h{i:02d}", "q", 2, gpus=1) for i in range(MAX_JOBS_PER_CYCLE - 1)]
    capped = job("capped", "full", 2, gpus=1)
    for objects in (*carrying, capped):
        hinted(objects[0], WANT_ONE_NODE)
    result = run_objects(
        [queue("q"), queue("full", gpu_limit=1), gpu_node("n0"), busy("busy", "n0")]
        + [job(f"old{i}", "q", 2, gpus=1) for i in range(2)]
        + [item for objects in (*carrying, capped) for item in objects]
    )
    hints = outcome_hints(result)
    assert all(hints[f"h{i:02d}"] is not None for i in range(MAX_JOBS_PER_CYCLE - 1))
    assert hints["old0"] is not None
    assert hints["old1"] is None
    writes = hint_writes(result)
    assert writes["capped"] is None
    assert "old0" in writes
    assert "old1" not in writes


def test_explain_output_and_message() -> None:
    result = run_objects(
        [queue("q"), gpu_node("n0"), gpu_node("n1"), busy("busy", "n0"), job("g", "q", 16, gpus=1)]
    )
    (entry,) = render(result, explain=True)["podGroups"]
    assert entry["scaleUpHint"]["nodes"] == 1
    (outcome,) = result.pod_groups
    assert outcome.scale_up_hint is not None
    assert outcome.scale_up_hint.message().startswith(
        "ScaleUpHint: 1 more node(s) of shape {cpu=32, memory=256Gi, nvidia.com/gpu=8} "
        f"({POOL}=gpu) would host the 8 pod(s)"
    )
    scheduled = render(run_objects([queue("q"), gpu_node("n0"), job("s", "q", gpus=1)]), True)
    assert "scaleUpHint" not in scheduled["podGroups"][0]


def test_format_quantity() -> None:
    assert format_quantity(CPU, 32000) == "32"
    assert format_quantity(CPU, 1500) == "1500m"
    assert format_quantity(MEMORY, 256 * 2**30) == "256Gi"
    assert format_quantity(MEMORY, 1000) == "1000"
    assert format_quantity(GPU, 8000) == "8"
    # autoscale finding 7: bytes other than memory had no suffix (107374182400)
    assert format_quantity(7, 100 * 2**30, "ephemeral-storage") == "100Gi"
    assert format_quantity(7, 4 * 2**30, "hugepages-1Gi") == "4Gi"
    assert format_quantity(7, 3, "example.com/foo") == "3"


def test_hint_shape_shows_ephemeral_storage_as_a_quantity() -> None:
    result = run_objects(
        [
            queue("q"),
            gpu_node("n0", extended={"ephemeral-storage": "100Gi"}),
            busy("busy", "n0"),
            job("g", "q", 8, gpus=1),
        ]
    )
    (outcome,) = [g for g in result.pod_groups if g.pod_group == "default/g"]
    assert outcome.scale_up_hint is not None
    assert outcome.scale_up_hint.shape["ephemeral-storage"] == "100Gi"


@pytest.mark.parametrize(
    ("namespace", "app", "total"),
    [
        ("kai-scale-adjust", "scaling-pod", 4),
        ("kai-resource-reservation", "kai-resource-reservation", 4),
        # known by the app label, as KAI knows them: the namespaces are settings
        ("gpu-res", "kai-resource-reservation", 4),
        ("scalers", "scaling-pod", 4),
        ("kai-resource-reservation", None, 3),  # no label: someone else's pod
    ],
)
def test_utility_pods_not_subtracted_from_fair_share(
    namespace: str, app: str | None, total: int
) -> None:
    """§7: 4 GPUs, one held by a utility pod: the total stays 4 (a foreign pod makes it 3),
    so q (OQW 1) has fair share 4 while 3 GPUs are free for its jobs."""
    result = run_objects(
        [
            queue("q", gpu_weight=1),
            node("n0", gpus=4),
            pod(
                "util",
                gpus=1,
                state="Running",
                node="n0",
                namespace=namespace,
                scheduler_name="default-scheduler",
                labels={"app": app} if app else None,
            ),
            *[job(f"j{i}", "q", gpus=1) for i in range(5)],
        ],
        explain=True,
    )
    (summary,) = [q for q in result.queues if q.name == "q"]
    assert summary.fair_share[0] == total
    assert len(result.binds) == 3


def test_topology_hint_message_and_output_name_the_domain() -> None:
    result = run_objects(
        [
            queue("q"),
            topology("topo", "zone", "rack"),
            rack_node("a0", "r1"),
            busy("busy-a0", "a0", 4),
            job("g", "q", 8, gpus=1, topology=RACK_REQUIRED),
        ]
    )
    (outcome,) = [g for g in result.pod_groups if g.pod_group == "default/g"]
    assert outcome.scale_up_hint is not None
    assert outcome.scale_up_hint.message() == (
        "ScaleUpHint: 1 more node(s) of shape {cpu=32, memory=256Gi, nvidia.com/gpu=8} "
        f"({POOL}=gpu, zone=z1, rack=r1) in rack z1/r1 of topology topo would host the 4 "
        "pod(s) that do not fit the current nodes"
    )
    (entry,) = [
        g for g in render(result, explain=True)["podGroups"] if g["podGroup"] == "default/g"
    ]
    assert entry["scaleUpHint"]["topology"] == {"name": "topo", "level": "rack", "domain": "z1/r1"}


def test_apart_hint_message_names_the_key() -> None:
    """A zone rule: the message says each new node goes to a zone of its own."""
    result = run_objects([queue("q"), host_node("n0"), host_node("n1"), apart_gang("g", 3, ZONE)])
    (outcome,) = [g for g in result.pod_groups if g.pod_group == "default/g"]
    assert outcome.scale_up_hint is not None
    assert outcome.scale_up_hint.message() == (
        "ScaleUpHint: 2 more node(s) of shape {cpu=32, memory=256Gi, nvidia.com/gpu=8} "
        f"({POOL}=gpu), each in a different {ZONE} holding no pod its rules match, would host "
        "the 2 pod(s) that do not fit the current nodes"
    )


def test_unhostable_message_does_not_claim_no_node_group_can_host() -> None:
    """autoscale finding 1: with GPU node groups at min 0 no GPU node exists, so every GPU
    pod is unhostable until the autoscaler adds the first one; the message says what the
    scheduler knows (the existing nodes' shapes), not that no node group can host it."""
    result = run_objects(
        [
            queue("q"),
            node("c0", cpu="16", memory="64Gi", labels={POOL: "cpu"}),
            job("g", "q", 7, gpus=2),
        ]
    )
    (outcome,) = [g for g in result.pod_groups if g.pod_group == "default/g"]
    assert outcome.scale_up_hint is not None
    assert outcome.scale_up_hint.as_dict() == unhostable(*(f"default/g-{i}" for i in range(7)))
    assert outcome.scale_up_hint.message() == (
        "ScaleUpHint: pod(s) default/g-0, default/g-1, default/g-2, default/g-3, default/g-4"
        " and 2 more fit no shape of the existing nodes (a node group with no node now is not"
        " known to the scheduler and may still host them)"
    )
