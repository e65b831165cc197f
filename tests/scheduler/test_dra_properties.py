"""Properties of DRA allocation over random small clusters (scheduler.plugins.dra).

Why: the scenarios check chosen pictures; these check the invariants on any picture:

- no device is allocated twice (the cycle's allocations are disjoint from each other
  and from the claims allocated before it);
- every bound pod's claims are allocated, on devices its node reaches;
- a gang is bound whole or not at all, so none of its claims is partly allocated;
- liveness: a lone single-pod job whose claim fits on some node is bound.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kits.dra import GPU_DRIVER, claim, device_class, dra_job, request, resource_slice
from tests.kits.volumes import host
from tests.kits.worlds import queue, run_objects

Obj = dict[str, Any]
MODES = (None, None, "All")  # ExactCount twice as often


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[Any], dict[str, int], list[tuple[str, list[str]]]]:
    """Objects, devices per node, and the jobs with their pods' claim names."""
    nodes = draw(st.integers(1, 3))
    per_node = {f"n{i}": draw(st.integers(0, 3)) for i in range(nodes)}
    objects: list[Any] = [queue("q"), device_class()]
    for name, count in per_node.items():
        objects.append(host(name))
        if count:
            objects.append(resource_slice(name, *[f"gpu-{d}" for d in range(count)]))
    pre_taken = {
        name: draw(st.integers(0, count)) for name, count in per_node.items()
    }  # devices of each node already allocated to an old claim
    for name, taken in pre_taken.items():
        if taken:
            results = [("gpu", GPU_DRIVER, name, f"gpu-{d}") for d in range(taken)]
            objects.append(claim(f"old-{name}", request(count=taken), allocated=results, node=name))
    jobs: list[tuple[str, list[str]]] = []
    shared = draw(st.booleans())
    for j in range(draw(st.integers(1, 4))):
        size = draw(st.integers(1, 3))
        names = [f"j{j}-c{i}" for i in range(size)]
        if shared and size > 1:
            names = [names[0]] * size  # one claim for the whole gang
        for name in dict.fromkeys(names):
            requests = [
                request(f"r{r}", count=draw(st.integers(1, 2)), mode=draw(st.sampled_from(MODES)))
                for r in range(draw(st.integers(1, 2)))
            ]
            objects.append(claim(name, *requests))
        objects.append(dra_job(f"j{j}", "q", *[[n] for n in names]))
        jobs.append((f"j{j}", names))
    return objects, pre_taken, jobs


@settings(max_examples=60, deadline=None)
@given(worlds())
def test_devices_once_gangs_whole_claims_allocated(world: Any) -> None:
    objects, pre_taken, jobs = world
    result = run_objects(objects)
    bound = {b.pod: b for b in result.binds}
    taken = {(GPU_DRIVER, n, f"gpu-{d}") for n, count in pre_taken.items() for d in range(count)}
    allocated_claims: dict[str, tuple[tuple[str, str, str], ...]] = {}
    for bind in result.binds:
        for _, allocation in bind.resource_claims:
            devices = tuple(
                (r["driver"], r["pool"], r["device"]) for r in allocation["devices"]["results"]
            )
            assert all(pool == bind.node for _, pool, _ in devices)  # on the pod's node
            key = str(devices)
            allocated_claims[key] = devices
    seen: set[tuple[str, str, str]] = set()
    for devices in allocated_claims.values():
        for device in devices:
            assert device not in taken, "a device of an old claim was allocated again"
            assert device not in seen, "a device was allocated to two claims"
            seen.add(device)
    for name, claims in jobs:
        pods = [f"default/{name}-{i}" for i in range(len(claims))]
        placed = [p for p in pods if p in bound]
        assert not placed or len(placed) == len(pods), f"gang {name} bound in part"
        for pod_key, claim_name in zip(pods, claims, strict=True):
            if pod_key in bound:
                carried = dict(bound[pod_key].resource_claims)
                assert "c0" in carried, f"{pod_key} bound without its claim {claim_name}"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=3), st.integers(1, 3))
def test_a_claim_that_fits_is_allocated(per_node: list[int], wanted: int) -> None:
    objects: list[Any] = [queue("q"), device_class()]
    for i, count in enumerate(per_node):
        objects.append(host(f"n{i}"))
        if count:
            objects.append(resource_slice(f"n{i}", *[f"gpu-{d}" for d in range(count)]))
    objects += [claim("c", request(count=wanted)), dra_job("j", "q", ["c"])]
    result = run_objects(objects)
    fits = max(per_node) >= wanted
    assert (len(result.binds) == 1) == fits
    if fits:
        (bind,) = result.binds
        assert per_node[int(bind.node[1:])] >= wanted
