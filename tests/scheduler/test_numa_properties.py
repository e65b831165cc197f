"""Property: no NUMA zone of a single-numa-node node is over-committed by one cycle.

Random nodes publishing one to three zones (whole CPUs and memory, some already partly
used), random gangs of Guaranteed pods with whole-CPU requests, one allocate cycle. The
pods bound to each single-numa-node node must fit one zone each with no zone over its
published available: checked by an exhaustive search for such an assignment, independent
of the order the engine charged the zones in. Nodes without NUMA data take what is left.
Nodes use pod or container scope (one container per pod: the same rule), so both the
vectorised pod-scope test and the per-node evaluation are checked.
"""

from __future__ import annotations

from itertools import product
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.config import SchedulerConfig
from tests.kits.numa_kit import gpod, nrt, zone
from tests.kits.worlds import node, pod_group, queue, run_objects

NUMA = SchedulerConfig(actions=("allocate",), numa=True)

zones_st = st.lists(
    st.tuples(st.integers(1, 6), st.integers(0, 6), st.integers(1, 8), st.integers(0, 8)),
    min_size=1,
    max_size=3,
)
# pod scope is judged for all such nodes at once, container scope node by node: with one
# container per pod both must keep the same invariant
scopes_st = st.lists(st.sampled_from(["pod", "container"]), min_size=3, max_size=3)
pods_st = st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4)), min_size=1, max_size=3)


def _fits(pods: list[tuple[int, int]], free: list[list[int]]) -> bool:
    """Whether every pod (cpu, mem) can take one zone with none over its free (cpu, mem)."""
    for choice in product(range(len(free)), repeat=len(pods)):
        used = [[0, 0] for _ in free]
        for (cpu, mem), z in zip(pods, choice, strict=True):
            used[z][0] += cpu
            used[z][1] += mem
        if all(u[0] <= f[0] and u[1] <= f[1] for u, f in zip(used, free, strict=True)):
            return True
    return False


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.lists(zones_st, min_size=1, max_size=3),
    jobs=st.lists(pods_st, min_size=1, max_size=3),
    spare=st.booleans(),
    scopes=scopes_st,
)
def test_no_zone_over_committed(
    nodes: list[list[tuple[int, int, int, int]]],
    jobs: list[list[tuple[int, int]]],
    spare: bool,
    scopes: list[str],
) -> None:
    objects: list[Any] = [queue("q")]
    free: dict[str, list[list[int]]] = {}
    for n, zones in enumerate(nodes):
        name = f"n{n}"
        # (allocatable cpu, used cpu, allocatable memory Gi, used memory Gi) per zone
        published = [(c, min(u, c), m, min(um, m)) for c, u, m, um in zones]
        total_cpu = sum(c for c, *_ in published)
        total_mem = sum(m for _, _, m, _ in published)
        objects.append(node(name, cpu=str(total_cpu), memory=f"{total_mem}Gi"))
        objects.append(
            nrt(
                name,
                "single-numa-node",
                [
                    zone(str(c), f"{m}Gi", free={"cpu": str(c - u), "memory": f"{m - um}Gi"})
                    for c, u, m, um in published
                ],
                scope=scopes[n],
            )
        )
        free[name] = [[c - u, m - um] for c, u, m, um in published]
    if spare:
        objects.append(node("plain", cpu="6", memory="6Gi"))
    requests: dict[str, tuple[int, int]] = {}
    for j, pods in enumerate(jobs):
        objects.append(pod_group(f"j{j}", "q", min_member=len(pods)))
        for i, (cpu, mem) in enumerate(pods):
            name = f"j{j}-{i}"
            requests[f"default/{name}"] = (cpu, mem)
            objects.append(gpod(name, f"j{j}", [{"cpu": str(cpu), "memory": f"{mem}Gi"}]))
    result = run_objects(objects, NUMA)
    placed: dict[str, list[tuple[int, int]]] = {}
    for bind in result.binds:
        placed.setdefault(bind.node, []).append(requests[bind.pod])
    for name, pods in placed.items():
        if name in free:
            assert _fits(pods, free[name]), (name, pods, free[name])
