"""Reading DRA objects (scheduler.cache.dra_reading) and CEL selectors (scheduler.api.dra_cel).

Why: malformed objects are reported naming the field and never stop the others;
CEL selectors see ``device.driver``, domain-qualified attributes (a bare name belongs
to the driver) and capacities compared as Kubernetes quantities.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from scheduler.api.dra_cel import (
    CelError,
    compile_selector,
    device_activation,
    driver_equals,
    matches,
)
from scheduler.cache.cluster_cache import ClusterCache
from scheduler.cache.dra_reading import read_resource_claim, read_resource_slice
from scheduler.cycle import run_cycle
from scheduler.plugins import dra_devices
from tests.kits.dra import (
    GPU_DRIVER,
    claim,
    device_class,
    dra_job,
    first_available,
    request,
    resource_slice,
)
from tests.kits.volumes import host
from tests.kits.worlds import ALLOCATE_ONLY, queue, sourced

DEVICE = device_activation(
    GPU_DRIVER,
    {"model": "A100", "other.example.com/numa": 1, "mig": True},
    {"memory": Fraction(80 * 2**30)},
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (f'device.driver == "{GPU_DRIVER}"', True),
        ('device.attributes["gpu.example.com"].model == "A100"', True),
        ('device.attributes["other.example.com"].numa == 1', True),
        ('device.attributes["gpu.example.com"].mig', True),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
        ('device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("100Gi"))', False),
        ('device.capacity["gpu.example.com"].memory.isLessThan(quantity("100Gi"))', True),
        ('device.attributes["gpu.example.com"].missing == "x"', False),  # runtime error
        ('device.attributes["gpu.example.com"].model', False),  # not a bool
    ],
)
def test_cel_selectors(expression: str, expected: bool) -> None:
    assert matches(compile_selector(expression), DEVICE) is expected


@pytest.mark.parametrize("expression", ["", "device.driver ==", "device.attributes["])
def test_bad_cel_does_not_compile(expression: str) -> None:
    with pytest.raises(CelError):
        compile_selector(expression)


def test_slice_devices_and_attributes() -> None:
    body = resource_slice("n1", ("gpu-0", {"model": "A100"}), capacity={"memory": "80Gi"})
    (device,) = read_resource_slice(body)
    assert device.key == (GPU_DRIVER, "n1", "gpu-0")
    assert device.node_name == "n1"
    assert device.attributes == {"model": "A100"}
    assert device.capacity == {"memory": Fraction(80 * 2**30)}


def test_claim_allocation_is_read() -> None:
    body = claim("c", allocated=[("gpu", GPU_DRIVER, "n1", "gpu-0")], node="n1")
    info = read_resource_claim(body)
    assert info.allocated is not None
    assert [(a.request, a.device) for a in info.allocated] == [("gpu", "gpu-0")]
    assert info.node_selector is not None


def test_first_available_alternatives_are_read_in_order() -> None:
    body = claim("c", first_available("gpu", ("two", "gpu.example.com", 2), ("one", "x", 1)))
    (gpu,) = read_resource_claim(body).requests
    assert [(c.name, c.device_class, c.count, c.field) for c in gpu.choices] == [
        ("gpu/two", "gpu.example.com", 2, "spec.devices.requests[0].firstAvailable[0]"),
        ("gpu/one", "x", 1, "spec.devices.requests[0].firstAvailable[1]"),
    ]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": "nowhere"},
                "spec": {"driver": GPU_DRIVER, "pool": {"name": "p"}, "devices": []},
            },
            "spec",  # no nodeName, nodeSelector or allNodes
        ),
        (
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": "bad"},
                "spec": {
                    "driver": GPU_DRIVER,
                    "pool": {"name": "p"},
                    "nodeName": "n0",
                    "devices": "gpu-0",
                },
            },
            "spec.devices",
        ),
        (
            resource_slice("n0", "gpu-0", capacity={"memory": "lots"}, name="bad"),
            "spec.devices[0].capacity[memory].value",
        ),
        (
            claim("bad", request(mode="Some")),
            "spec.devices.requests[0].exactly.allocationMode",
        ),
    ],
)
def test_malformed_objects_are_reported_and_others_served(
    body: dict[str, object], field: str
) -> None:
    """A malformed DRA object is an error naming its field; the good job still binds."""
    good = [
        queue("q"),
        device_class(),
        host("n1"),
        resource_slice("n1", "gpu-0", name="good"),
        claim("c"),
        dra_job("j", "q", ["c"]),
    ]
    cache = ClusterCache(strict=False)
    cache.upsert_all(sourced([*good, body]))
    result = cache.snapshot()
    assert [e.field for e in result.errors] == [field]
    cycle = run_cycle(result.snapshot, ALLOCATE_ONLY)
    assert [(b.pod, b.node) for b in cycle.binds] == [("default/j-0", "n1")]


def test_malformed_pod_claims_name_the_field() -> None:
    objects = [queue("q"), device_class(), host("n1"), dra_job("j", "q", ["c"])]
    pod = next(o for o in objects[-1] if o["kind"] == "Pod")
    pod["spec"]["resourceClaims"] = [{"name": "gpu"}]  # neither a claim nor a template
    cache = ClusterCache(strict=False)
    cache.upsert_all(sourced(objects))
    assert [e.field for e in cache.snapshot().errors] == ["spec.resourceClaims[0]"]


def test_gpu_quota_counts_a_shared_claim_once_and_follows_its_allocation() -> None:
    """GPU-class devices count in queue quota: a shared claim once (its first pod), the
    request's count before allocation (All: 1), the allocated devices after."""
    cache = ClusterCache(strict=False)
    shared = claim("s", request(mode="All"))
    cache.upsert_all(
        sourced([queue("q"), device_class(), host("n1"), shared, dra_job("j", "q", ["s"], ["s"])])
    )

    def gpus() -> list[float]:
        snapshot = cache.snapshot().snapshot
        return [p.quota[0] for p in sorted(snapshot.pods, key=lambda p: p.name)]

    assert gpus() == [1000.0, 0.0]
    results = [("gpu", GPU_DRIVER, "n1", f"gpu-{d}") for d in range(3)]
    allocated = claim("s", request(mode="All"), allocated=results, node="n1")
    cache.upsert_all(sourced([allocated]))
    assert gpus() == [3000.0, 0.0]
    assert gpus() == [3000.0, 0.0]  # not added again by the next snapshot
    cache.delete("ResourceClaim", "default/s")
    assert gpus() == [0.0, 0.0]


def test_devices_of_other_classes_do_not_count() -> None:
    cache = ClusterCache(strict=False)
    nic = claim("n", request(device_class="nic.example.com", count=2))
    cache.upsert_all(sourced([queue("q"), host("n1"), nic, dra_job("j", "q", ["n"])]))
    assert [p.quota[0] for p in cache.snapshot().snapshot.pods] == [0.0]


@pytest.mark.parametrize(
    ("expression", "driver"),
    [
        ('device.driver == "gpu.example.com"', "gpu.example.com"),
        (' device.driver=="x.io" ', "x.io"),
        ('device.driver == "a" || true', None),
        ('device.driver != "a"', None),
    ],
)
def test_driver_selector_fast_path(expression: str, driver: str | None) -> None:
    assert driver_equals(expression) == driver


def test_cel_is_evaluated_once_per_device_across_cycles(monkeypatch: pytest.MonkeyPatch) -> None:
    """Device records live as long as their slice: later cycles reuse the matches."""
    calls: list[object] = []

    def counting(program: object, activation: object) -> bool:
        calls.append(program)
        return matches(program, activation)  # type: ignore[arg-type]

    monkeypatch.setattr(dra_devices, "matches", counting)
    a100 = device_class("a100", 'device.attributes["gpu.example.com"].model == "A100"')
    objects = [
        queue("q"),
        a100,
        host("n1"),
        resource_slice("n1", ("gpu-0", {"model": "A100"}), ("gpu-1", {"model": "T4"})),
        claim("c", request(device_class="a100")),
        dra_job("j", "q", ["c"]),
    ]
    cache = ClusterCache(strict=False)
    cache.upsert_all(sourced(objects))
    for _ in range(3):
        assert [b.node for b in run_cycle(cache.snapshot().snapshot, ALLOCATE_ONLY).binds] == ["n1"]
    assert len(calls) == 2  # two devices, once each
