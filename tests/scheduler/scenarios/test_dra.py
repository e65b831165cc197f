"""Dynamic Resource Allocation scenarios (docs/dra.md), expectations computed by hand.

Two empty, identical nodes tie on every score and n0 wins by name, so a pod landing
on n1 shows that its claims ruled n0 out. Devices come from ResourceSlices of driver
``gpu.example.com``; the DeviceClass of the same name selects that driver by CEL.
"""

from __future__ import annotations

import pytest

from scheduler.config import SchedulerConfig
from tests.kits.dra import (
    GPU_CLASS,
    GPU_DRIVER,
    claim,
    device_class,
    dra_job,
    first_available,
    request,
    resource_slice,
    template_job,
    with_resource_claims,
)
from tests.kits.volumes import host
from tests.kits.worlds import Scenario, check, job, queue, run_objects

GPUS = device_class()
NUMA = "gpu.example.com/numa"
SAME_NUMA = {"matchAttribute": NUMA}
TWO = [queue("q"), GPUS, host("n0"), host("n1")]
A100 = 'device.attributes["gpu.example.com"].model == "A100"'
BIG = 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'

SCENARIOS = [
    # Only n1 publishes a device: the claim's pod goes there.
    Scenario(
        "device-only-on-n1",
        [*TWO, resource_slice("n1", "gpu-0"), claim("c"), dra_job("j", "q", ["c"])],
        binds={"j-0": "n1"},
    ),
    # The DeviceClass's CEL selector: only n1's device is an A100.
    Scenario(
        "class-selector",
        [
            queue("q"),
            device_class("a100", f'device.driver == "{GPU_DRIVER}"', A100),
            host("n0"),
            host("n1"),
            resource_slice("n0", ("gpu-0", {"model": "T4"})),
            resource_slice("n1", ("gpu-0", {"model": "A100"})),
            claim("c", request(device_class="a100")),
            dra_job("j", "q", ["c"]),
        ],
        binds={"j-0": "n1"},
    ),
    # The request's own selector over capacity: 16Gi on n0 is too small, 80Gi on n1 fits.
    Scenario(
        "request-capacity-selector",
        [
            *TWO,
            resource_slice("n0", "gpu-0", capacity={"memory": "16Gi"}),
            resource_slice("n1", "gpu-0", capacity={"memory": "80Gi"}),
            claim("c", request("gpu", GPU_CLASS, 1, BIG)),
            dra_job("j", "q", ["c"]),
        ],
        binds={"j-0": "n1"},
    ),
    # count 2: n0 has one device, n1 two.
    Scenario(
        "count-two",
        [
            *TWO,
            resource_slice("n0", "gpu-0"),
            resource_slice("n1", "gpu-0", "gpu-1"),
            claim("c", request(count=2)),
            dra_job("j", "q", ["c"]),
        ],
        binds={"j-0": "n1"},
    ),
    # n0's only device is allocated to another claim: not free.
    Scenario(
        "allocated-device-not-free",
        [
            *TWO,
            resource_slice("n0", "gpu-0"),
            resource_slice("n1", "gpu-0"),
            claim("old", allocated=[("gpu", GPU_DRIVER, "n0", "gpu-0")], node="n0"),
            claim("c"),
            dra_job("j", "q", ["c"]),
        ],
        binds={"j-0": "n1"},
    ),
    # Two jobs in one cycle, one device per node: the first takes n0's, the second n1's.
    Scenario(
        "cycle-reservations",
        [
            *TWO,
            resource_slice("n0", "gpu-0"),
            resource_slice("n1", "gpu-0"),
            claim("ca"),
            claim("cb"),
            dra_job("a", "q", ["ca"]),
            dra_job("b", "q", ["cb"]),
        ],
        binds={"a-0": "n0", "b-0": "n1"},
    ),
    # A gang of two needs two devices, the cluster has one: nothing of it is placed,
    # and the later job c gets the device its rollback released.
    Scenario(
        "gang-all-or-none",
        [
            *TWO,
            resource_slice("n1", "gpu-0"),
            claim("g0"),
            claim("g1"),
            claim("cc"),
            dra_job("g", "q", ["g0"], ["g1"]),
            dra_job("c", "q", ["cc"]),
        ],
        binds={"c-0": "n1"},
        pending=["g"],
        reasons={"g": ['node(s) do not have free devices for resourceclaim(s) "g1"']},
    ),
    # allocationMode All: every matching device of the node must be free; n0 has one taken.
    Scenario(
        "all-mode",
        [
            *TWO,
            resource_slice("n0", "gpu-0", "gpu-1"),
            resource_slice("n1", "gpu-0", "gpu-1"),
            claim("old", allocated=[("gpu", GPU_DRIVER, "n0", "gpu-1")], node="n0"),
            claim("c", request(mode="All")),
            dra_job("j", "q", ["c"]),
        ],
        binds={"j-0": "n1"},
    ),
    # One claim shared by a gang's two pods: allocated once, both pods follow it to n1.
    Scenario(
        "shared-claim",
        [*TWO, resource_slice("n1", "gpu-0"), claim("s"), dra_job("j", "q", ["s"], ["s"])],
        binds={"j-0": "n1", "j-1": "n1"},
    ),
    # A shared claim already allocated on n1: the new pod goes where the allocation allows,
    # though n1 has no free device left.
    Scenario(
        "shared-claim-allocated",
        [
            *TWO,
            resource_slice("n1", "gpu-0"),
            claim("s", allocated=[("gpu", GPU_DRIVER, "n1", "gpu-0")], node="n1"),
            dra_job("j", "q", ["s"]),
        ],
        binds={"j-0": "n1"},
    ),
    # A template's claim not created yet: the pod waits, the reason says why.
    Scenario(
        "template-claim-not-created",
        [*TWO, resource_slice("n1", "gpu-0"), template_job("j", "q", [None])],
        pending=["j"],
        reasons={"j": ['waiting for the resourceclaim of spec.resourceClaims "gpu"']},
    ),
    # The claim the ResourceClaim controller made (named in the pod's status) is used.
    Scenario(
        "template-claim-created",
        [
            *TWO,
            resource_slice("n1", "gpu-0"),
            claim("j-0-gpu-abcde"),
            template_job("j", "q", ["j-0-gpu-abcde"]),
        ],
        binds={"j-0": "n1"},
    ),
    # A claim that does not exist.
    Scenario(
        "claim-missing",
        [*TWO, resource_slice("n1", "gpu-0"), dra_job("j", "q", ["gone"])],
        pending=["j"],
        reasons={"j": ['resourceclaim "gone" not found']},
    ),
    # Bad inputs name the object and field, and do not stop the other job.
    Scenario(
        "unknown-device-class",
        [
            *TWO,
            resource_slice("n0", "gpu-0"),
            claim("bad", request(device_class="nosuch")),
            claim("good"),
            dra_job("a", "q", ["bad"]),
            dra_job("b", "q", ["good"]),
        ],
        binds={"b-0": "n0"},
        pending=["a"],
        reasons={
            "a": [
                "resourceclaim default/bad spec.devices.requests[0].exactly.deviceClassName: "
                'deviceclass "nosuch" not found'
            ]
        },
    ),
    Scenario(
        "bad-cel-in-class",
        [
            *TWO,
            device_class("broken", "device.driver =="),
            resource_slice("n0", "gpu-0"),
            claim("bad", request(device_class="broken")),
            claim("good"),
            dra_job("a", "q", ["bad"]),
            dra_job("b", "q", ["good"]),
        ],
        binds={"b-0": "n0"},
        pending=["a"],
        reasons={"a": ["deviceclass 'broken' spec.selectors[0].cel.expression: invalid CEL"]},
    ),
    Scenario(
        "bad-cel-in-request",
        [
            *TWO,
            resource_slice("n0", "gpu-0"),
            claim("bad", request("gpu", GPU_CLASS, 1, "device.attributes[")),
            claim("good"),
            dra_job("a", "q", ["bad"]),
            dra_job("b", "q", ["good"]),
        ],
        binds={"b-0": "n0"},
        pending=["a"],
        reasons={
            "a": [
                "resourceclaim default/bad "
                "spec.devices.requests[0].exactly.selectors[0].cel.expression: invalid CEL"
            ]
        },
    ),
    # firstAvailable: two GPUs preferred, one accepted; only n0 has a device.
    Scenario(
        "first-available-falls-back",
        [
            *TWO,
            resource_slice("n0", "gpu-0"),
            claim("c", first_available("gpu", ("two", GPU_CLASS, 2), ("one", GPU_CLASS, 1))),
            dra_job("j", "q", ["c"]),
        ],
        binds={"j-0": "n0"},
    ),
    # ... and an alternative naming an unknown class is reported by its field.
    Scenario(
        "first-available-unknown-class",
        [
            *TWO,
            resource_slice("n0", "gpu-0"),
            claim("c", first_available("gpu", ("two", GPU_CLASS, 2), ("one", "nosuch", 1))),
            dra_job("j", "q", ["c"]),
        ],
        pending=["j"],
        reasons={"j": ["spec.devices.requests[0].firstAvailable[1].deviceClassName"]},
    ),
    # matchAttribute: two GPUs on one NUMA node; n0's two are on different ones.
    Scenario(
        "match-attribute",
        [
            *TWO,
            resource_slice("n0", ("gpu-0", {"numa": 0}), ("gpu-1", {"numa": 1})),
            resource_slice("n1", ("gpu-0", {"numa": 0}), ("gpu-1", {"numa": 0})),
            claim("c", request(count=2), constraints=[SAME_NUMA]),
            dra_job("j", "q", ["c"]),
        ],
        binds={"j-0": "n1"},
    ),
    # distinctAttribute: two GPUs on different NUMA nodes; n0's two share one.
    Scenario(
        "distinct-attribute",
        [
            *TWO,
            resource_slice("n0", ("gpu-0", {"numa": 0}), ("gpu-1", {"numa": 0})),
            resource_slice("n1", ("gpu-0", {"numa": 0}), ("gpu-1", {"numa": 1})),
            claim("c", request(count=2), constraints=[{"distinctAttribute": NUMA}]),
            dra_job("j", "q", ["c"]),
        ],
        binds={"j-0": "n1"},
    ),
    # A constraint attribute without a domain is reported by its field.
    Scenario(
        "constraint-unqualified",
        [
            *TWO,
            resource_slice("n0", "gpu-0", "gpu-1"),
            claim("c", request(count=2), constraints=[{"matchAttribute": "numa"}]),
            dra_job("j", "q", ["c"]),
        ],
        pending=["j"],
        reasons={"j": ["spec.devices.constraints[0].matchAttribute: expected a fully qualified"]},
    ),
    # DRA GPUs count against the queue: a limit of 1 GPU admits a 1-device claim only.
    Scenario(
        "gpu-quota-limit",
        [
            queue("q", gpu_limit=1),
            GPUS,
            host("n0"),
            resource_slice("n0", "gpu-0", "gpu-1"),
            claim("two", request(count=2)),
            dra_job("j", "q", ["two"]),
        ],
        pending=["j"],
    ),
    Scenario(
        "gpu-quota-within-limit",
        [
            queue("q", gpu_limit=1),
            GPUS,
            host("n0"),
            resource_slice("n0", "gpu-0", "gpu-1"),
            claim("one"),
            dra_job("j", "q", ["one"]),
        ],
        binds={"j-0": "n0"},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_dra_scenarios(scenario: Scenario) -> None:
    check(scenario)


def test_bind_carries_the_allocation() -> None:
    """The chosen devices and the node go with the bind, for the binder to write."""
    result = run_objects(
        [*TWO, resource_slice("n1", "gpu-0", "gpu-1"), claim("c"), dra_job("j", "q", ["c"])]
    )
    (bind,) = result.binds
    assert bind.node == "n1"
    assert bind.resource_claims == (
        (
            "c0",
            {
                "devices": {
                    "results": [
                        {"request": "gpu", "driver": GPU_DRIVER, "pool": "n1", "device": "gpu-0"}
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n1"]}
                            ]
                        }
                    ]
                },
            },
        ),
    )


@pytest.mark.parametrize(("devices", "served_by"), [(2, ["gpu/two"] * 2), (1, ["gpu/one"])])
def test_first_available_prefers_the_first_alternative(devices: int, served_by: list[str]) -> None:
    """The result names the alternative that served the request."""
    result = run_objects(
        [
            *TWO,
            resource_slice("n0", *[f"gpu-{d}" for d in range(devices)]),
            claim("c", first_available("gpu", ("two", GPU_CLASS, 2), ("one", GPU_CLASS, 1))),
            dra_job("j", "q", ["c"]),
        ]
    )
    ((_, body),) = result.binds[0].resource_claims
    assert [r["request"] for r in body["devices"]["results"]] == served_by


def test_match_attribute_tries_each_value() -> None:
    """NUMA 0 has one free GPU, NUMA 1 two: the pair is taken from NUMA 1."""
    result = run_objects(
        [
            *TWO,
            resource_slice(
                "n0", ("gpu-0", {"numa": 0}), ("gpu-1", {"numa": 1}), ("gpu-2", {"numa": 1})
            ),
            claim("c", request(count=2), constraints=[SAME_NUMA]),
            dra_job("j", "q", ["c"]),
        ]
    )
    ((_, body),) = result.binds[0].resource_claims
    assert [r["device"] for r in body["devices"]["results"]] == ["gpu-1", "gpu-2"]


def test_shared_claim_allocated_once() -> None:
    """Both pods of a shared claim carry the same single allocation of one device."""
    result = run_objects(
        [*TWO, resource_slice("n1", "gpu-0", "gpu-1"), claim("s"), dra_job("j", "q", ["s"], ["s"])]
    )
    allocations = {b.pod: b.resource_claims for b in result.binds}
    assert allocations["default/j-0"] == allocations["default/j-1"]
    ((_, body),) = allocations["default/j-0"]
    assert [r["device"] for r in body["devices"]["results"]] == ["gpu-0"]


def _preemption_world(reserved_for: tuple[str, ...]) -> list[object]:
    """n0's only device held by low-priority t-0 (its claim reserved for ``reserved_for``);
    a high-priority job of the same queue wants a device."""
    return [
        queue("q", gpu_quota=2),
        GPUS,
        host("n0"),
        resource_slice("n0", "gpu-0"),
        claim(
            "held",
            allocated=[("gpu", GPU_DRIVER, "n0", "gpu-0")],
            node="n0",
            reserved_for=reserved_for,
        ),
        with_resource_claims(
            job("t", "q", states=["Running"], nodes=["n0"], priority_class="train"), ["held"]
        ),
        claim("want"),
        dra_job("b", "q", ["want"], priority_class="build"),
    ]


def test_preemption_frees_the_victims_devices() -> None:
    """Evicting the pod that alone holds a claim frees its devices for the preemptor,
    which is pipelined onto them (bound once the victim and its claim are gone)."""
    config = SchedulerConfig(actions=("allocate", "preempt"))
    result = run_objects(_preemption_world(("default/t-0",)), config)
    assert [e.pod for e in result.evictions] == ["default/t-0"]
    assert [(b.pod, b.node) for b in result.pipelined] == [("default/b-0", "n0")]


def test_a_claim_other_pods_still_use_is_not_freed_by_one_eviction() -> None:
    config = SchedulerConfig(actions=("allocate", "preempt"))
    result = run_objects(_preemption_world(("default/t-0", "other/uid")), config)
    assert result.evictions == []
    assert result.pipelined == []


def test_no_scale_up_hint_for_a_gang_waiting_on_devices() -> None:
    """A new node of n0's shape would bring no device: no hint is given."""
    result = run_objects(
        [queue("q"), GPUS, host("n0"), claim("c"), dra_job("j", "q", ["c"])], SchedulerConfig()
    )
    (outcome,) = result.pod_groups
    assert outcome.outcome == "pending"
    assert outcome.scale_up_hint is None


def test_pods_without_claims_unaffected() -> None:
    """Plain pods bind as before, with no claims on their binds."""
    result = run_objects([*TWO, resource_slice("n1", "gpu-0"), job("p", "q")])
    assert [(b.pod, b.node, b.resource_claims) for b in result.binds] == [("default/p-0", "n0", ())]
