"""Properties of topology-aware placement over random clusters (docs/semantics.md §5.8, §5.9).

Random clusters of zones, racks and nodes (some nodes missing a level label),
running jobs (some rack-constrained, placed inside one rack), and pending jobs
with every kind of constraint: none, required rack or zone, preferred rack
(within a zone or alone) and podgrouper-style segments with a required rack
under an optional required zone. One cycle runs allocate alone or all five
actions. The result gives every pod one final decision (checked first: a pod
placed by one action and evicted by a later one is neither bound nor pipelined,
and a pod both evicted and pipelined is a running pod that moved). Then, on the
cluster as the cycle leaves it (running pods not evicted, binds, pipelined pods):

- (a) every (sub)group with a required level has all its placed pods inside
  one domain of that level, on nodes that carry every level label up to it;
- (b) no node is over-committed, neither now (running pods, evicted ones
  included, plus binds) nor once the evicted pods are gone (plus pipelined);
- (c) allocate decides exactly the same with incremental placement on and off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_incremental_placement import _decide as decide

from scheduler.config import SchedulerConfig
from tests.kits.worlds import (
    conflicting_decisions,
    job,
    node,
    pod,
    pod_group,
    queue,
    run_objects,
    topology,
    topology_constraint,
)

TOPO = "t"
ZONE = "zone"
RACK = "rack"
LEVELS = (ZONE, RACK)


@dataclass
class Group:
    """A (sub)group with a required level and the pod keys that belong to it."""

    job: str
    required: str
    pods: list[str]


@dataclass
class World:
    objects: list[Any]
    labels: dict[str, dict[str, str]]  # node -> topology labels it carries
    gpus: dict[str, int]  # node -> GPUs
    requests: dict[str, int] = field(default_factory=dict)  # pod key -> GPUs
    running: dict[str, str] = field(default_factory=dict)  # pod key -> node
    groups: list[Group] = field(default_factory=list)


def _key(name: str) -> str:
    return f"default/{name}"


@st.composite
def worlds(draw: st.DrawFn) -> World:
    objects: list[Any] = [
        topology(TOPO, ZONE, RACK),
        queue("q0", gpu_quota=draw(st.sampled_from([0, 2, 4]))),
        queue("q1", gpu_quota=draw(st.sampled_from([0, 2, 4]))),
    ]
    labels: dict[str, dict[str, str]] = {}
    gpus: dict[str, int] = {}
    racks: dict[tuple[str, str], list[str]] = {}
    count = 0
    for z in range(draw(st.integers(1, 2))):
        for r in range(draw(st.integers(1, 3))):
            for _ in range(draw(st.integers(1, 3))):
                name = f"n{count:02d}"
                count += 1
                carried = {ZONE: f"z{z}", RACK: f"r{r}"}
                dropped = draw(st.sampled_from([None, None, None, None, ZONE, RACK]))
                if dropped is not None:
                    carried.pop(dropped)
                else:
                    racks.setdefault((f"z{z}", f"r{r}"), []).append(name)
                labels[name] = carried
                gpus[name] = draw(st.sampled_from([2, 4]))
                objects.append(node(name, gpus=gpus[name], cpu="64", memory="256G", labels=carried))
    world = World(objects, labels, gpus)
    free = dict(gpus)
    classes = st.sampled_from(["train", "build-preemptible", "train"])
    for j in range(draw(st.integers(0, 6))):
        name = f"r{j}"
        size = draw(st.integers(1, 3))
        per_pod = draw(st.sampled_from([1, 2]))
        constrained = bool(racks) and draw(st.booleans())
        pool = draw(st.sampled_from(sorted(racks))) if constrained else None
        candidates = racks[pool] if pool is not None else sorted(gpus)
        placed: list[str] = []
        for _ in range(size):
            room = [n for n in candidates if free[n] >= per_pod]
            if not room:
                break
            where = draw(st.sampled_from(room))
            free[where] -= per_pod
            placed.append(where)
        if not placed:
            continue
        objects.extend(
            job(
                name,
                draw(st.sampled_from(["q0", "q1"])),
                len(placed),
                gpus=per_pod,
                states=["Running"] * len(placed),
                nodes=placed,
                min_member=draw(st.integers(1, len(placed))),
                priority_class=draw(classes),
                topology=topology_constraint(TOPO, required=RACK) if constrained else None,
            )
        )
        keys = [_key(f"{name}-{i}") for i in range(len(placed))]
        world.requests.update({k: per_pod for k in keys})
        world.running.update(dict(zip(keys, placed, strict=True)))
        if constrained:
            world.groups.append(Group(name, RACK, keys))
    for j in range(draw(st.integers(1, 5))):
        add_pending(draw, world, f"p{j}", classes)
    return world


def add_pending(draw: st.DrawFn, world: World, name: str, classes: Any) -> None:
    kind = draw(
        st.sampled_from(["none", "rack", "zone", "preferred", "preferred-only", "segments"])
    )
    queue_name = draw(st.sampled_from(["q0", "q1"]))
    priority_class = draw(classes)
    per_pod = draw(st.sampled_from([1, 1, 2]))
    size = draw(st.integers(1, 6))
    keys = [_key(f"{name}-{i}") for i in range(size)]
    world.requests.update({k: per_pod for k in keys})
    if kind == "segments":
        segment = draw(st.integers(1, 3))
        count = -(-size // segment)
        root = draw(st.sampled_from([None, ZONE]))
        subs: list[dict[str, Any]] = [{"name": "worker", "minMember": size}]
        for s in range(count):
            members = [k for i, k in enumerate(keys) if i // segment == s]
            subs.append(
                {
                    "name": f"worker-{s}",
                    "minMember": len(members),
                    "parent": "worker",
                    "topologyConstraint": topology_constraint(TOPO, required=RACK),
                }
            )
            world.groups.append(Group(name, RACK, members))
        if root is not None:
            world.groups.append(Group(name, root, keys))
        world.objects.append(
            pod_group(
                name,
                queue_name,
                min_member=size,
                sub_groups=subs,
                priority_class=priority_class,
                topology=topology_constraint(TOPO, required=root) if root else None,
            )
        )
        for i in range(size):
            world.objects.extend(
                pod(f"{name}-{i}", name, gpus=per_pod, sub_group=f"worker-{i // segment}")
            )
        return
    constraint = {
        "none": None,
        "rack": topology_constraint(TOPO, required=RACK),
        "zone": topology_constraint(TOPO, required=ZONE),
        "preferred": topology_constraint(TOPO, required=ZONE, preferred=RACK),
        "preferred-only": topology_constraint(TOPO, preferred=RACK),
    }[kind]
    if constraint is not None and "requiredTopologyLevel" in constraint:
        world.groups.append(Group(name, constraint["requiredTopologyLevel"], keys))
    world.objects.extend(
        job(
            name,
            queue_name,
            size,
            gpus=per_pod,
            min_member=draw(st.integers(1, size)),
            priority_class=priority_class,
            topology=constraint,
        )
    )


CONFIGS = st.sampled_from(
    [
        SchedulerConfig(actions=("allocate",)),
        SchedulerConfig(),
        SchedulerConfig(actions=("allocate",), gpu_placement="spread"),
    ]
)


@settings(deadline=None)
@given(world=worlds(), config=CONFIGS)
def test_constraints_hold_and_no_node_is_overcommitted(
    world: World, config: SchedulerConfig
) -> None:
    result = run_objects(world.objects, config)
    evicted = {e.pod for e in result.evictions}
    binds = {b.pod: b.node for b in result.binds}
    pipelined = {b.pod: b.node for b in result.pipelined}
    assert conflicting_decisions(world.objects, result) == []
    final = {k: n for k, n in world.running.items() if k not in evicted}
    final.update({**binds, **pipelined})  # a running pod evicted and pipelined moved

    # (a) every required constraint holds on the placed pods of its group
    for group in world.groups:
        placed = [final[k] for k in group.pods if k in final]
        depth = LEVELS.index(group.required) + 1
        domains = set()
        for node_name in placed:
            carried = world.labels[node_name]
            assert all(level in carried for level in LEVELS), (group, node_name)
            domains.add(tuple(carried[level] for level in LEVELS[:depth]))
        assert len(domains) <= 1, (group, placed, domains)

    # (b) no node over-committed, now or after the evictions
    now: dict[str, int] = {}
    for key, node_name in [*world.running.items(), *binds.items()]:
        now[node_name] = now.get(node_name, 0) + world.requests[key]
    after: dict[str, int] = {}
    for key, node_name in final.items():
        after[node_name] = after.get(node_name, 0) + world.requests[key]
    for node_name, capacity in world.gpus.items():
        assert now.get(node_name, 0) <= capacity, (node_name, now)
        assert after.get(node_name, 0) <= capacity, (node_name, after)


@settings(deadline=None)
@given(world=worlds(), config=CONFIGS)
def test_incremental_placement_equals_full_with_topology(
    world: World, config: SchedulerConfig
) -> None:
    """(c) node subsets and the preferred-level score keep incremental placement exact."""
    objects = world.objects
    assert decide(objects, config, incremental=True) == decide(objects, config, incremental=False)
