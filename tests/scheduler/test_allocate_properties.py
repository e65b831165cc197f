"""Properties of one allocate cycle over random snapshots (docs/semantics.md §5.1, §5.2, §5.9).

Random clusters: a few nodes with random CPU, memory and GPUs; a 2-level queue
tree with random quotas, limits and weights (including -1 and 0); random jobs
(gangs, elastic jobs with ``minMember`` 0, jobs of two or three pod sets, some
needing only ``minSubGroup`` of them) of random sizes, requests and
priorities, some pods already Running / Bound / Binding / Releasing / Gated /
Succeeded, plus pods of another scheduler. After one cycle:

- no node is over-committed in any resource;
- gangs, by the subgroup rule (a pod set is schedulable at its minimum, the
  group when ``minSubGroup`` of its sets are, all without it): a pod set that
  got a bind has at least its minimum settled (Running, Bound, Binding, newly
  bound), one that got any placement its minimum counting pipelined pods too;
  a job that got a bind meets its requirement with settled pods, one that got
  any placement counting pipelined pods. (A plain "0 or >= min" does not hold:
  a partly running gang may exist before the cycle, and allocate leaves it to
  stale-gang eviction.)
- queue limits: per queue and resource, allocated after <= max(before, limit)
  (a queue that respected its limit still does; one already over it gets none
  of that resource);
- non-preemptible allocation stays within deserved the same way;
- the same input gives the same output, also with the objects shuffled
  (creation timestamps, which decide ties, stay fixed);
- a Statement rolled back to a checkpoint restores node idle/releasing arrays,
  queue allocated and pod states exactly.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.pods import ACTIVE_USED, PodStatus
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult
from scheduler.framework.session import Session
from scheduler.plugins import builtin_plugins
from tests.kits.worlds import (
    ALLOCATE_ONLY,
    NOW,
    node,
    pod,
    pod_group,
    queue,
    run_objects,
    sourced,
    stamp,
)

PRIORITIES = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
ON_NODE = ("Running", "Releasing", "Bound", "Binding")
SETTLED = ("Running", "Bound", "Binding")
GIB = 10**9


@dataclass
class PodModel:
    key: str
    job: str | None
    pod_set: str
    request: tuple[int, int, int]  # gpu devices, cpu millicores, memory bytes
    state: str
    node: str | None


@dataclass
class QueueModel:
    name: str
    parent: str | None
    quota: tuple[float, ...]  # gpu devices, cpu millicores, memory bytes; -1 unlimited
    limit: tuple[float, ...]


@dataclass
class JobModel:
    name: str
    queue: str
    preemptible: bool
    mins: dict[str, int]
    min_sub_group: int | None = None  # sets that must be schedulable; None: all

    def meets(self, counts: dict[str, int]) -> bool:
        """The subgroup rule, written out independently of the engine."""
        satisfied = sum(1 for s, minimum in self.mins.items() if counts[s] >= minimum)
        return satisfied >= (len(self.mins) if self.min_sub_group is None else self.min_sub_group)

    def check_placed(
        self, pods: list[PodModel], settled: set[str], binds: set[str], pipelined: set[str]
    ) -> None:
        """No pod set is placed into below its minimum and the group meets its requirement
        (with ``settled`` pods when it got a bind, counting ``pipelined`` ones otherwise)."""
        got_bind = any(p.key in binds for p in pods)
        if not got_bind and not any(p.key in pipelined for p in pods):
            return
        settled_counts: dict[str, int] = {}
        reserved_counts: dict[str, int] = {}
        for pod_set, minimum in self.mins.items():
            members = [p for p in pods if p.pod_set == pod_set]
            count = sum(1 for p in members if p.key in settled)
            reserved = count + sum(1 for p in members if p.key in pipelined)
            settled_counts[pod_set], reserved_counts[pod_set] = count, reserved
            info = (self.name, pod_set, count, reserved, minimum)
            if any(p.key in pipelined or p.key in binds for p in members):
                assert reserved >= minimum, info
            if any(p.key in binds for p in members):
                assert count >= minimum, info
        assert self.meets(reserved_counts), (self.name, reserved_counts, self)
        if got_bind:
            assert self.meets(settled_counts), (self.name, settled_counts, self)


@dataclass
class World:
    objects: list[dict[str, Any]]
    nodes: dict[str, tuple[int, int, int, int]]  # gpu, cpu m, memory bytes, pods
    queues: dict[str, QueueModel]
    jobs: dict[str, JobModel]
    pods: list[PodModel] = field(default_factory=list)

    def path(self, leaf: str) -> list[str]:
        out: list[str] = []
        current: str | None = leaf
        while current is not None:
            out.append(current)
            current = self.queues[current].parent
        return out


def _scaled(queue_value: float, resource: int) -> float:
    """Queue units (GPU devices, CPU millicores, memory MB) -> model units."""
    if queue_value == -1:
        return -1.0
    return queue_value * (10**6 if resource == 2 else 1)


@st.composite
def worlds(draw: st.DrawFn, releasing: int = 3) -> World:
    """A random cluster; ``releasing`` weighs how often an existing pod is Releasing."""
    objects: list[dict[str, Any]] = []
    nodes: dict[str, tuple[int, int, int, int]] = {}
    for i in range(draw(st.integers(1, 4))):
        gpus = draw(st.sampled_from([0, 1, 2, 4]))
        cpu = draw(st.sampled_from([2, 4, 8]))
        memory = draw(st.sampled_from([4, 8, 16]))
        pods_cap = draw(st.sampled_from([3, 110]))
        nodes[f"n{i}"] = (gpus, cpu * 1000, memory * GIB, pods_cap)
        objects.append(node(f"n{i}", gpus=gpus, cpu=str(cpu), memory=f"{memory}G", pods=pods_cap))
    quotas = st.sampled_from([-1, 0, 1, 2, 4])
    limits = st.sampled_from([-1] * 6 + [0, 1, 2, 4, 8])
    cpu_quotas = st.sampled_from([-1, -1, 0, 2000, 8000])
    cpu_limits = st.sampled_from([-1] * 6 + [0, 2000, 8000])
    memory_quotas = st.sampled_from([-1, -1, 4000, 16000])
    memory_limits = st.sampled_from([-1] * 6 + [4000, 16000])
    queues: dict[str, QueueModel] = {}
    leaves: list[str] = []
    for d in range(draw(st.integers(1, 2))):
        names = [f"d{d}"] + [f"d{d}-l{c}" for c in range(draw(st.integers(1, 2)))]
        for position, name in enumerate(names):
            parent = None if position == 0 else names[0]
            gq, gl, cq, cl, mq, ml = (
                draw(quotas),
                draw(limits),
                draw(cpu_quotas),
                draw(cpu_limits),
                draw(memory_quotas),
                draw(memory_limits),
            )
            objects.append(
                queue(
                    name,
                    parent,
                    gpu_quota=gq,
                    gpu_limit=gl,
                    gpu_weight=draw(st.sampled_from([0, 1, 2])),
                    cpu_quota=cq,
                    cpu_limit=cl,
                    cpu_weight=draw(st.sampled_from([0, 1])),
                    memory_quota=mq,
                    memory_limit=ml,
                    priority=draw(st.sampled_from([None, 50, 200])),
                )
            )
            queues[name] = QueueModel(
                name,
                parent,
                tuple(_scaled(v, r) for r, v in enumerate((gq, cq, mq))),
                tuple(_scaled(v, r) for r, v in enumerate((gl, cl, ml))),
            )
            if position:
                leaves.append(name)
    free = {name: list(cap) for name, cap in nodes.items()}
    world = World(objects, nodes, queues, {})

    def place(state: str, request: tuple[int, int, int]) -> tuple[str, str | None]:
        if state not in ON_NODE:
            return state, None
        target = draw(st.sampled_from(sorted(nodes)))
        room = free[target]
        wanted = (*request, 1)
        if all(room[r] >= wanted[r] for r in range(4)):
            for r in range(4):
                room[r] -= wanted[r]
            return state, target
        return "Pending", None

    states = st.sampled_from(
        ["Pending"] * 14
        + ["Running"] * 3
        + ["Releasing"] * releasing
        + ["Bound", "Binding", "Gated", "Succeeded"]
    )
    for j in range(draw(st.integers(1, 6))):
        name = f"j{j}"
        leaf = draw(st.sampled_from(leaves))
        priority_class = draw(st.sampled_from(sorted(PRIORITIES)))
        request = (
            draw(st.sampled_from([0, 0, 1, 2])),
            draw(st.sampled_from([250, 500, 1000, 2000])),
            draw(st.sampled_from([256, 512, 1024])) * 10**6,
        )
        two_sets = draw(st.booleans()) and draw(st.booleans())
        set_names = ["a", "b", "c"][: draw(st.sampled_from([2, 2, 3]))] if two_sets else ["default"]
        sizes = {s: draw(st.integers(1, 3)) for s in set_names}
        # Mostly satisfiable minimums, sometimes 0 (elastic); sometimes one more than the
        # pods (never ready).
        mins = {s: draw(st.sampled_from([0, 1, 1, sizes[s], sizes[s] + 1])) for s in set_names}
        min_sub_group = (
            draw(st.sampled_from([None, None, *range(1, len(set_names) + 1)])) if two_sets else None
        )
        group = pod_group(
            name,
            leaf,
            min_member=None if two_sets else mins["default"],
            priority_class=priority_class,
            sub_groups=[(s, mins[s]) for s in set_names] if two_sets else (),
        )
        if min_sub_group is not None:
            group["spec"]["minSubGroup"] = min_sub_group
        objects.append(group)
        if not two_sets:
            mins["default"] = max(mins["default"], 1)  # KAI's floor without subgroups
        world.jobs[name] = JobModel(
            name, leaf, PRIORITIES[priority_class] < 100, mins, min_sub_group
        )
        for s in set_names:
            for i in range(sizes[s]):
                state, where = place(draw(states), request)
                pod_name = f"{name}-{s}-{i}"
                objects.extend(
                    pod(
                        pod_name,
                        name,
                        gpus=request[0],
                        cpu=f"{request[1]}m",
                        memory=str(request[2]),
                        state=state,
                        node=where,
                        sub_group=s if two_sets else None,
                    )
                )
                world.pods.append(PodModel(f"default/{pod_name}", name, s, request, state, where))
    for f in range(draw(st.integers(0, 2))):
        request = (draw(st.sampled_from([0, 1])), 1000, GIB)
        state, where = place("Running", request)
        if where is None:
            continue
        objects.extend(
            pod(f"foreign-{f}", gpus=request[0], state=state, node=where, scheduler_name="other")
        )
        world.pods.append(PodModel(f"default/foreign-{f}", None, "", request, state, where))
    world.objects = stamp(objects)
    return world


def _run(world: World) -> CycleResult:
    return run_objects(world.objects, ALLOCATE_ONLY)


FAST = settings(deadline=None)


# Worlds where much capacity is being released, so pipelining happens often.
RELEASING_WORLDS = worlds(releasing=12)


@FAST
@given(st.one_of(worlds(), RELEASING_WORLDS))
def test_no_node_over_committed(world: World) -> None:
    result = _run(world)
    binds = {b.pod: b.node for b in result.binds}
    pipelined = {b.pod: b.node for b in result.pipelined}
    assert not set(binds) & set(pipelined)
    with_releasing = {n: [0, 0, 0, 0] for n in world.nodes}
    after_release = {n: [0, 0, 0, 0] for n in world.nodes}
    for p in world.pods:
        row = (*p.request, 1)
        if p.state in ON_NODE:
            assert p.node is not None
            assert p.key not in binds, f"{p.key} bound again"
            assert p.key not in pipelined, f"{p.key} pipelined again"
            for r in range(4):
                with_releasing[p.node][r] += row[r]
                if p.state != "Releasing":
                    after_release[p.node][r] += row[r]
        if p.key in binds:
            assert p.state == "Pending", f"{p.key} was {p.state}, not Pending"
            for r in range(4):
                with_releasing[binds[p.key]][r] += row[r]
                after_release[binds[p.key]][r] += row[r]
        if p.key in pipelined:
            assert p.state == "Pending"
            for r in range(4):
                after_release[pipelined[p.key]][r] += row[r]
    for name, capacity in world.nodes.items():
        for r in range(4):
            assert with_releasing[name][r] <= capacity[r], (name, r, with_releasing[name])
            assert after_release[name][r] <= capacity[r], (name, r, after_release[name])


@FAST
@given(st.one_of(worlds(), RELEASING_WORLDS))
def test_gangs_whole_or_nothing(world: World) -> None:
    result = _run(world)
    binds = {b.pod for b in result.binds}
    pipelined = {b.pod for b in result.pipelined}
    for job_model in world.jobs.values():
        pods = [p for p in world.pods if p.job == job_model.name]
        settled = {p.key for p in pods if p.state in SETTLED or p.key in binds}
        job_model.check_placed(pods, settled, binds, pipelined)


def _queue_usage(world: World, keys: set[str], non_preemptible: bool) -> dict[str, np.ndarray]:
    usage = {name: np.zeros(3) for name in world.queues}
    for p in world.pods:
        if p.job is None or p.key not in keys:
            continue
        job_model = world.jobs[p.job]
        if non_preemptible and job_model.preemptible:
            continue
        for name in world.path(job_model.queue):
            usage[name] += np.array(p.request, dtype=float)
    return usage


@FAST
@given(worlds())
def test_queue_limits_and_non_preemptible_quota(world: World) -> None:
    result = _run(world)
    before = {p.key for p in world.pods if p.state in SETTLED}
    after = before | {b.pod for b in result.binds} | {b.pod for b in result.pipelined}
    for non_preemptible in (False, True):
        used_before = _queue_usage(world, before, non_preemptible)
        used_after = _queue_usage(world, after, non_preemptible)
        for name, model in world.queues.items():
            bounds = model.quota if non_preemptible else model.limit
            for r in range(3):
                if bounds[r] == -1:
                    continue
                cap = max(used_before[name][r], bounds[r])
                assert used_after[name][r] <= cap, (name, r, non_preemptible, used_after[name])


@FAST
@given(worlds(), st.randoms(use_true_random=False))
def test_deterministic_and_order_independent(world: World, rnd: random.Random) -> None:
    first = _run(world)
    assert _run(world) == first
    shuffled = list(world.objects)
    rnd.shuffle(shuffled)
    assert run_objects(shuffled, ALLOCATE_ONLY) == first


OPS = st.lists(
    st.tuples(
        st.sampled_from(["allocate", "pipeline", "evict"]), st.integers(0, 50), st.integers(0, 10)
    ),
    max_size=12,
)


@FAST
@given(worlds(), OPS, st.integers(0, 12))
def test_statement_rollback_restores_state(
    world: World, ops: list[tuple[str, int, int]], at: int
) -> None:
    snapshot = build_snapshot(sourced(world.objects), now=NOW.timestamp()).snapshot
    session = Session(snapshot, ALLOCATE_ONLY)
    for plugin in builtin_plugins(ALLOCATE_ONLY):
        plugin.on_session_open(session)
    nodes = snapshot.nodes
    states = session.plugin_state["proportion"]
    ours = [p for p in snapshot.pods if p.job is not None]

    def capture() -> tuple[Any, ...]:
        return (
            nodes.idle.copy(),
            nodes.releasing.copy(),
            {
                n: (s.allocated.copy(), s.allocated_non_preemptible.copy())
                for n, s in states.items()
            },
            [(p.status, p.node) for p in snapshot.pods],
        )

    def same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
        return (
            np.array_equal(a[0], b[0])
            and np.array_equal(a[1], b[1])
            and all(
                np.array_equal(a[2][n][0], b[2][n][0]) and np.array_equal(a[2][n][1], b[2][n][1])
                for n in a[2]
            )
            and a[3] == b[3]
        )

    initial = capture()
    statement = session.statement()
    token = None
    checkpoint_state = None
    for position, (kind, pick, where) in enumerate([*ops, ("", 0, 0)]):
        if position == min(at, len(ops)):
            token = statement.checkpoint()
            checkpoint_state = capture()
        if not kind or not len(nodes):
            continue
        if kind == "evict":
            candidates = [
                p for p in ours if p.status in ACTIVE_USED and p.status != PodStatus.RELEASING
            ]
        else:
            candidates = [p for p in ours if p.status == PodStatus.PENDING]
        if not candidates:
            continue
        target = candidates[pick % len(candidates)]
        if kind == "allocate":
            statement.allocate(target, where % len(nodes))
        elif kind == "pipeline":
            statement.pipeline(target, where % len(nodes))
        else:
            statement.evict(target, "test")
    assert token is not None
    assert checkpoint_state is not None
    statement.rollback(token)
    assert same(capture(), checkpoint_state)
    statement.discard()
    assert same(capture(), initial)


ALL_ACTIONS = SchedulerConfig()


@FAST
@given(st.one_of(RELEASING_WORLDS, worlds(releasing=30)))
def test_a_gang_pipelined_in_part_binds_nothing(world: World) -> None:
    result = run_objects(world.objects, ALL_ACTIONS)
    binds = {b.pod for b in result.binds}
    pipelined = {b.pod for b in result.pipelined}
    evicted = {e.pod for e in result.evictions}
    for job_model in world.jobs.values():
        pods = [p for p in world.pods if p.job == job_model.name]
        settled = {
            p.key for p in pods if (p.state in SETTLED and p.key not in evicted) or p.key in binds
        }
        job_model.check_placed(pods, settled, binds, pipelined - evicted)
