"""Fractional GPU placement (docs/semantics.md §6): which node, which shared device, bind or pipeline.

Why: a fractional pod must land on a device with room, fill shared devices
before opening new ones under bin-packing (or spread over devices under
spread), size ``gpu-memory`` requests by the node's device memory, take
several devices for ``gpu-fraction-num-devices``, wait for a device still
being released, and leave a pod slot for the binder's reservation pod.
"""

from __future__ import annotations

import pytest
from gpu_kit import GpuCase, check, fraction, gpu_node, memory, reservation, shared
from topology_kit import RACK, TOPOLOGY, required, tnode

from tests.kits.worlds import bind_request, job, node, pod, queue

SPREAD = {"gpu_placement": "spread"}


def binding_with_groups(name: str, queue_name: str, where: str, value: float, groups: list[str]):
    """A fractional job whose pod is Binding: a BindRequest naming its selected groups."""
    objects = job(name, queue_name, annotations=fraction(value))
    request = bind_request(f"{name}-0", where)
    request["spec"]["selectedGPUGroups"] = groups
    return [*objects, request]


CASES = [
    # Two halves on a 2-GPU node: bin-packing puts both on one device.
    GpuCase(
        "halves-pack-into-one-device",
        [
            queue("q"),
            gpu_node("n0", 2),
            job("a", "q", annotations=fraction(0.5)),
            job("b", "q", annotations=fraction(0.5)),
        ],
        binds={"a-0": "n0", "b-0": "n0"},
        groups={"a-0": "x", "b-0": "x"},
        portions={"a-0": 0.5, "b-0": 0.5},
    ),
    # The same under spread: each half gets a device of its own.
    GpuCase(
        "halves-spread-over-devices",
        [
            queue("q"),
            gpu_node("n0", 2),
            job("a", "q", annotations=fraction(0.5)),
            job("b", "q", annotations=fraction(0.5)),
        ],
        binds={"a-0": "n0", "b-0": "n0"},
        groups={"a-0": "x", "b-0": "y"},
        settings=SPREAD,
    ),
    # A group with no room left is not joined: 0.6 + 0.5 > 1, so a new device is opened.
    GpuCase(
        "full-group-skipped",
        [
            queue("q"),
            gpu_node("n0", 2),
            *[shared("r", "q", "n0", 0.6, "g1")],
            job("a", "q", annotations=fraction(0.5)),
        ],
        binds={"a-0": "n0"},
        groups={"a-0": "new"},
    ),
    # Bin-packing: of two groups with room, the fuller one (0.5 used) is joined.
    GpuCase(
        "pack-joins-fullest-group",
        [
            queue("q"),
            gpu_node("n0", 3),
            shared("r1", "q", "n0", 0.25, "g1"),
            shared("r2", "q", "n0", 0.5, "g2"),
            job("a", "q", annotations=fraction(0.5)),
        ],
        binds={"a-0": "n0"},
        groups={"a-0": "=g2"},
    ),
    # Spread: a whole idle device first, even though both groups have room.
    GpuCase(
        "spread-prefers-idle-device",
        [
            queue("q"),
            gpu_node("n0", 3),
            shared("r1", "q", "n0", 0.25, "g1"),
            shared("r2", "q", "n0", 0.5, "g2"),
            job("a", "q", annotations=fraction(0.25)),
        ],
        binds={"a-0": "n0"},
        groups={"a-0": "new"},
        settings=SPREAD,
    ),
    # Spread with no idle device: the emptiest group (0.25 used).
    GpuCase(
        "spread-joins-emptiest-group",
        [
            queue("q"),
            gpu_node("n0", 2),
            shared("r1", "q", "n0", 0.25, "g1"),
            shared("r2", "q", "n0", 0.5, "g2"),
            job("a", "q", annotations=fraction(0.25)),
        ],
        binds={"a-0": "n0"},
        groups={"a-0": "=g1"},
        settings=SPREAD,
    ),
    # gpusharingorder: a node with a fitting group wins (+1000) even where bin-packing
    # prefers the fuller node.
    GpuCase(
        "node-with-fitting-group-first",
        [
            queue("q"),
            gpu_node("n0", 1),
            gpu_node("n1", 4),
            shared("r", "q", "n1", 0.5, "g1"),
            job("a", "q", annotations=fraction(0.5)),
        ],
        binds={"a-0": "n1"},
        groups={"a-0": "=g1"},
    ),
    GpuCase(
        "no-device-with-room",
        [
            queue("q"),
            gpu_node("n0", 1),
            shared("r", "q", "n0", 0.75, "g1"),
            job("a", "q", annotations=fraction(0.5)),
        ],
        pending=["a"],
        reasons={"a": ["Insufficient shared GPU"]},
    ),
    # A whole-GPU pod cannot use a device that a group holds, however little it uses.
    GpuCase(
        "group-holds-whole-device",
        [queue("q"), gpu_node("n0", 1), shared("r", "q", "n0", 0.1, "g1"), job("w", "q", gpus=1)],
        pending=["w"],
        reasons={"w": ["Insufficient nvidia.com/gpu"]},
    ),
    # gpu-memory: sized by the node's nvidia.com/gpu.memory label (10000 of 40000 MiB = 0.25);
    # the node without the label is not a candidate.
    GpuCase(
        "gpu-memory-on-labelled-node",
        [
            queue("q"),
            gpu_node("n0", 1, device_memory=None),
            gpu_node("n1", 1),
            job("a", "q", annotations=memory(10000)),
        ],
        binds={"a-0": "n1"},
        portions={"a-0": 0.25},
    ),
    # gpu-memory rounds the portion up to hundredths: 1000 of 24000 MiB -> 0.05.
    GpuCase(
        "gpu-memory-portion-rounded-up",
        [
            queue("q"),
            gpu_node("n0", 1, device_memory=24000),
            job("a", "q", annotations=memory(1000)),
        ],
        binds={"a-0": "n0"},
        portions={"a-0": 0.05},
    ),
    # A label of 1,048,576 or more is bytes (gpu-feature-discovery issue 26, as KAI reads
    # it): 16 GiB -> 16384 MiB -> 16300; 8000 MiB is 0.50 of it, two pods to the device.
    GpuCase(
        "gpu-memory-label-in-bytes",
        [
            queue("q"),
            gpu_node("n0", 1, device_memory=16 * 1024**3),
            job("a", "q", annotations=memory(8000)),
            job("b", "q", annotations=memory(8000)),
            job("c", "q", annotations=memory(8000)),
        ],
        binds={"a-0": "n0", "b-0": "n0"},
        groups={"a-0": "x", "b-0": "x"},
        portions={"a-0": 0.5, "b-0": 0.5},
        pending=["c"],
    ),
    # Only unlabelled nodes: a gpu-memory pod is refused there, a fraction is fine.
    GpuCase(
        "gpu-memory-needs-memory-label",
        [
            queue("q"),
            gpu_node("n0", 1, device_memory=None),
            job("a", "q", annotations=memory(100)),
            job("b", "q", annotations=fraction(0.5)),
        ],
        binds={"b-0": "n0"},
        pending=["a"],
        reasons={"a": ["nvidia.com/gpu.memory label"]},
    ),
    # gpu-memory beyond the device's memory fits nowhere.
    GpuCase(
        "gpu-memory-larger-than-device",
        [
            queue("q"),
            gpu_node("n0", 2, device_memory=16000),
            job("a", "q", annotations=memory(20000)),
        ],
        pending=["a"],
        reasons={"a": ["Insufficient shared GPU"]},
    ),
    # num-devices 2: two devices on one node, each with its own group.
    GpuCase(
        "two-devices-two-groups",
        [
            queue("q"),
            gpu_node("n0", 1),
            gpu_node("n1", 2),
            job("a", "q", annotations=fraction(0.5, devices=2)),
        ],
        binds={"a-0": "n1"},
        groups={"a-0": ["x", "y"]},
        portions={"a-0": 0.5},
    ),
    # num-devices 2 joins two existing groups when no device is idle.
    GpuCase(
        "two-devices-join-existing-groups",
        [
            queue("q"),
            gpu_node("n0", 2),
            shared("r1", "q", "n0", 0.5, "g1"),
            shared("r2", "q", "n0", 0.5, "g2"),
            job("a", "q", annotations=fraction(0.5, devices=2)),
        ],
        binds={"a-0": "n0"},
        groups={"a-0": ["=g1", "=g2"]},
    ),
    # A group with a releasing member: the new half fits only once it is gone, so it is
    # pipelined into that group (no bind yet).
    GpuCase(
        "pipelined-into-releasing-group",
        [
            queue("q"),
            gpu_node("n0", 1),
            shared("r1", "q", "n0", 0.5, "g1"),
            shared("r2", "q", "n0", 0.5, "g1", state="Releasing"),
            job("a", "q", annotations=fraction(0.5)),
        ],
        pipelined={"a-0": "n0"},
        groups={"a-0": "=g1"},
    ),
    # A device whose every member is releasing is given back: the new pod opens a new
    # group on it, pipelined.
    GpuCase(
        "pipelined-onto-device-being-freed",
        [
            queue("q"),
            gpu_node("n0", 1),
            shared("r", "q", "n0", 0.7, "g1", state="Releasing"),
            job("a", "q", annotations=fraction(0.5)),
        ],
        pipelined={"a-0": "n0"},
        groups={"a-0": "new"},
    ),
    # Opening a group needs two pod slots (the pod and its reservation pod).
    GpuCase(
        "new-group-needs-reservation-slot",
        [queue("q"), gpu_node("n0", 1, pods=1), job("a", "q", annotations=fraction(0.5))],
        pending=["a"],
        reasons={"a": ["reservation pod"]},
    ),
    # Joining an existing group needs one slot only.
    GpuCase(
        "joining-group-needs-one-slot",
        [
            queue("q"),
            gpu_node("n0", 1, pods=2),
            shared("r", "q", "n0", 0.5, "g1"),
            job("a", "q", annotations=fraction(0.5)),
        ],
        binds={"a-0": "n0"},
        groups={"a-0": "=g1"},
    ),
    # The reservation pod of a live group is not counted again: one GPU stays for w.
    GpuCase(
        "reservation-pod-counted-once",
        [
            queue("q"),
            gpu_node("n0", 2),
            shared("r", "q", "n0", 0.5, "g1"),
            reservation("g1", "n0"),
            job("w", "q", gpus=1),
        ],
        binds={"w-0": "n0"},
    ),
    # ... also in another namespace (the binder's --resource-reservation-namespace): the
    # scheduler knows a reservation pod by its app label, as KAI's does.
    GpuCase(
        "reservation-pod-in-another-namespace-counted-once",
        [
            queue("q"),
            gpu_node("n0", 2),
            shared("r", "q", "n0", 0.5, "g1"),
            reservation("g1", "n0", namespace="gpu-res"),
            job("w", "q", gpus=1),
        ],
        binds={"w-0": "n0"},
    ),
    # A reservation pod whose group has no fraction pod left still holds its GPU.
    GpuCase(
        "orphan-reservation-pod-holds-gpu",
        [queue("q"), gpu_node("n0", 1), reservation("g9", "n0"), job("w", "q", gpus=1)],
        pending=["w"],
    ),
    # A Binding pod not labelled yet: its group comes from the BindRequest's selectedGPUGroups.
    GpuCase(
        "binding-pod-group-from-bind-request",
        [
            queue("q"),
            gpu_node("n0", 1),
            binding_with_groups("f", "q", "n0", 0.5, ["g7"]),
            job("a", "q", annotations=fraction(0.5)),
        ],
        binds={"a-0": "n0"},
        groups={"a-0": "=g7"},
    ),
    # A bound fraction pod without any group label still holds its device.
    GpuCase(
        "unlabelled-bound-fraction-holds-device",
        [
            queue("q"),
            gpu_node("n0", 1),
            job("f", "q", annotations=fraction(0.5), states=["Running"], nodes=["n0"]),
            job("w", "q", gpus=1),
        ],
        pending=["w"],
    ),
    # Pods of another scheduler using a whole GPU leave only the other device.
    GpuCase(
        "foreign-whole-gpu-respected",
        [
            queue("q"),
            gpu_node("n0", 2),
            *pod("web", gpus=1, state="Running", node="n0", scheduler_name="other"),
            job("a", "q", annotations=fraction(0.5)),
            job("b", "q", annotations=fraction(0.75)),
        ],
        binds={"a-0": "n0"},
        pending=["b"],
    ),
    # A gang of four quarter pods packs into one device.
    GpuCase(
        "gang-of-quarters-one-device",
        [
            queue("q"),
            gpu_node("n0", 4),
            node("cpu", cpu="64"),
            job("g", "q", 4, annotations=fraction(0.25)),
        ],
        binds={f"g-{i}": "n0" for i in range(4)},
        groups={f"g-{i}": "x" for i in range(4)},
    ),
    # Control for the next case: unconstrained, the first half joins n0's group (+1000),
    # the others open a device on n1.
    GpuCase(
        "halves-follow-fitting-group-across-racks",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=1),
            tnode("n1", "z1", "r2", gpus=2),
            shared("r", "q", "n0", 0.5, "g1"),
            job("g", "q", 3, annotations=fraction(0.5)),
        ],
        binds={"g-0": "n0", "g-1": "n1", "g-2": "n1"},
    ),
    # A rack-constrained gang of halves: rack r1 has room for one half only, so the
    # whole gang goes to rack r2, whatever the shared-group score says.
    GpuCase(
        "required-rack-keeps-halves-together",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=1),
            tnode("n1", "z1", "r2", gpus=2),
            shared("r", "q", "n0", 0.5, "g1"),
            job("g", "q", 3, annotations=fraction(0.5), topology=required(RACK)),
        ],
        binds={"g-0": "n1", "g-1": "n1", "g-2": "n1"},
        groups={"g-0": "x", "g-1": "x", "g-2": "y"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_gpu_sharing_placement(case: GpuCase) -> None:
    check(case)
