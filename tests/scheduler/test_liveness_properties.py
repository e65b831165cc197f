"""Liveness properties: work that can be scheduled is scheduled (docs/semantics.md §5.1, §5.2, §5.5).

The safety properties elsewhere (nothing over-committed, gangs whole, limits
kept, evictions justified) all hold for a scheduler that does nothing. These
hold only for one that works. Each world is built so that the answer is not
in doubt:

- (a) allocate: one pending gang of identical pods beside random running and
  releasing work. If it fits in idle room (identical pods fit a set of nodes
  exactly when the nodes' per-node pod counts add up to the gang) within
  every limit on its queue path, and, when non-preemptible, within every
  quota on that path, allocate places all of it;
- (b) reclaim: a queue with nothing running and a pending gang within its
  quota; a full cluster held by another queue's single-pod preemptible jobs,
  more above that queue's quota than the gang needs. The gang gets its
  pods (pipelined on the reclaimed GPUs);
- (c) preempt: one queue, a full cluster of low-priority preemptible
  single-pod jobs, and a pending higher-priority gang no larger than them:
  the gang gets its pods;
- (d) consolidation: one queue, 1-GPU preemptible jobs scattered so that the
  cluster's free GPUs add up to a pending preemptible pod's request (on a
  node large enough), at the same priority (preempt may not help) and with
  no other queue (reclaim may not either): the pod is placed after moves,
  and every pod evicted for it lands elsewhere.

``tests/conftest.py`` can turn every action into a no-op
(``PODMUSTER_NOOP_ACTIONS=1``); the last test runs this file so and expects
every liveness property to fail.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.config import SchedulerConfig
from tests.kits.worlds import ALLOCATE_ONLY, job, node, queue, queue_path, run_objects

NOOP_ACTIONS_ENV = "PODMUSTER_NOOP_ACTIONS"
PRIORITIES = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
RESOURCES = 4  # GPU devices, CPU millicores, memory MB, pods
PROPERTY = settings(deadline=None)


@dataclass
class Gang:
    """The pending gang of a world: its queue, pod count, per-pod request, preemptibility."""

    name: str
    queue: str
    size: int
    request: tuple[int, int, int]  # GPU devices, CPU millicores, memory MB
    preemptible: bool

    @property
    def pods(self) -> set[str]:
        return {f"default/{self.name}-{i}" for i in range(self.size)}


@dataclass
class AllocateWorld:
    objects: list[Any]
    gang: Gang
    free: dict[str, list[int]]  # node -> idle room, per RESOURCES (releasing pods hold theirs)
    parents: dict[str, str | None]
    limit: dict[str, tuple[int, int, int]]  # -1 = unlimited
    quota: dict[str, tuple[int, int, int]]  # -1 = unlimited
    used: dict[str, list[int]] = field(default_factory=dict)  # queue subtree, running pods
    used_non_preemptible: dict[str, list[int]] = field(default_factory=dict)

    def path(self, leaf: str) -> list[str]:
        return queue_path(self.parents, leaf)

    def fits_in_idle_room(self) -> bool:
        wanted = (*self.gang.request, 1)
        room = 0
        for free in self.free.values():
            room += min(free[r] // wanted[r] for r in range(RESOURCES) if wanted[r] > 0)
        return room >= self.gang.size

    def within_queue_bounds(self) -> bool:
        total = [self.gang.size * r for r in self.gang.request]
        for name in self.path(self.gang.queue):
            for r in range(3):
                if total[r] == 0:
                    continue  # a resource the gang does not request is not checked
                limit = self.limit[name][r]
                if limit != -1 and self.used[name][r] + total[r] > limit:
                    return False
                quota = self.quota[name][r]
                if (
                    not self.gang.preemptible
                    and quota != -1
                    and self.used_non_preemptible[name][r] + total[r] > quota
                ):
                    return False
        return True


@st.composite
def allocate_worlds(draw: st.DrawFn) -> AllocateWorld:
    """Random nodes, a 2-level queue tree, random running/releasing jobs, one pending gang."""
    objects: list[Any] = []
    free: dict[str, list[int]] = {}
    for i in range(draw(st.integers(1, 4))):
        gpus = draw(st.sampled_from([0, 2, 4]))
        cpu = draw(st.sampled_from([4, 8]))
        memory = draw(st.sampled_from([8, 16]))
        pods_cap = draw(st.sampled_from([4, 110]))
        free[f"n{i}"] = [gpus, cpu * 1000, memory * 1000, pods_cap]
        objects.append(node(f"n{i}", gpus=gpus, cpu=str(cpu), memory=f"{memory}G", pods=pods_cap))
    parents: dict[str, str | None] = {}
    limit: dict[str, tuple[int, int, int]] = {}
    quota: dict[str, tuple[int, int, int]] = {}
    leaves: list[str] = []
    bounds = st.sampled_from([-1, -1, -1, 0, 2, 4, 8])
    for d in range(draw(st.integers(1, 2))):
        names = [f"d{d}"] + [f"d{d}-l{c}" for c in range(draw(st.integers(1, 2)))]
        for position, name in enumerate(names):
            parent = None if position == 0 else names[0]
            gpu_quota, gpu_limit = draw(bounds), draw(bounds)
            cpu_quota = draw(st.sampled_from([-1, -1, 2000, 8000]))
            cpu_limit = draw(st.sampled_from([-1, -1, -1, 2000, 8000]))
            memory_limit = draw(st.sampled_from([-1, -1, -1, 4000, 16000]))
            objects.append(
                queue(
                    name,
                    parent,
                    gpu_quota=gpu_quota,
                    gpu_limit=gpu_limit,
                    gpu_weight=draw(st.sampled_from([0, 1])),
                    cpu_quota=cpu_quota,
                    cpu_limit=cpu_limit,
                    memory_limit=memory_limit,
                )
            )
            parents[name] = parent
            limit[name] = (gpu_limit, cpu_limit, memory_limit)
            quota[name] = (gpu_quota, cpu_quota, -1)
            if position:
                leaves.append(name)
    world = AllocateWorld(objects, Gang("", "", 0, (0, 0, 0), True), free, parents, limit, quota)
    world.used = {name: [0, 0, 0] for name in parents}
    world.used_non_preemptible = {name: [0, 0, 0] for name in parents}
    requests = st.tuples(
        st.sampled_from([0, 0, 1, 2]),
        st.sampled_from([500, 1000, 2000]),
        st.sampled_from([1000]),
    )
    for j in range(draw(st.integers(0, 6))):
        request = draw(requests)
        where = draw(st.sampled_from(sorted(free)))
        room = free[where]
        if any(room[r] < (*request, 1)[r] for r in range(RESOURCES)):
            continue
        state = draw(st.sampled_from(["Running", "Running", "Releasing"]))
        for r, amount in enumerate((*request, 1)):
            room[r] -= amount
        leaf = draw(st.sampled_from(leaves))
        priority_class = draw(st.sampled_from(sorted(PRIORITIES)))
        objects.extend(
            job(
                f"r{j}",
                leaf,
                gpus=request[0],
                cpu=f"{request[1]}m",
                memory=f"{request[2]}M",
                states=[state],
                nodes=[where],
                priority_class=priority_class,
            )
        )
        if state == "Running":
            for name in world.path(leaf):
                for r in range(3):
                    world.used[name][r] += request[r]
                    if PRIORITIES[priority_class] >= 100:
                        world.used_non_preemptible[name][r] += request[r]
    priority_class = draw(st.sampled_from(sorted(PRIORITIES)))
    world.gang = Gang(
        "pending",
        draw(st.sampled_from(leaves)),
        draw(st.integers(1, 4)),
        draw(requests),
        PRIORITIES[priority_class] < 100,
    )
    gang = world.gang
    objects.extend(
        job(
            gang.name,
            gang.queue,
            gang.size,
            gpus=gang.request[0],
            cpu=f"{gang.request[1]}m",
            memory=f"{gang.request[2]}M",
            priority_class=priority_class,
        )
    )
    return world


def _placed(result: Any) -> set[str]:
    return {b.pod for b in result.binds} | {b.pod for b in result.pipelined}


@PROPERTY
@given(allocate_worlds())
def test_allocate_places_a_gang_that_fits_in_free_room_within_its_queues(
    world: AllocateWorld,
) -> None:
    if not (world.fits_in_idle_room() and world.within_queue_bounds()):
        return
    result = run_objects(world.objects, ALLOCATE_ONLY)
    missing = sorted(world.gang.pods - _placed(result))
    assert not missing, (world.gang, missing, [o for o in result.pod_groups])


@dataclass
class DisruptionWorld:
    objects: list[Any]
    gang: Gang
    free_gpus: int = 0  # idle GPUs in the whole cluster before the cycle


@st.composite
def reclaim_worlds(draw: st.DrawFn) -> DisruptionWorld:
    """Queue "owner" holds the full cluster above its quota; queue "wanting" has a gang."""
    objects: list[Any] = []
    sizes = [draw(st.sampled_from([2, 4])) for _ in range(draw(st.integers(1, 3)))]
    for i, gpus in enumerate(sizes):
        objects.append(node(f"n{i}", gpus=gpus, cpu="64", memory="256G"))
    held = sum(sizes)
    owner_quota = draw(st.integers(0, held - 1))
    wanting_quota = draw(st.integers(1, 4))
    size = draw(st.integers(1, min(wanting_quota, held - owner_quota)))
    objects.append(queue("owner", gpu_quota=owner_quota, gpu_weight=draw(st.sampled_from([0, 1]))))
    objects.append(queue("wanting", gpu_quota=wanting_quota))
    count = 0
    for i, gpus in enumerate(sizes):
        for _ in range(gpus):
            objects.extend(job(f"r{count}", "owner", gpus=1, states=["Running"], nodes=[f"n{i}"]))
            count += 1
    gang = Gang("pending", "wanting", size, (1, 1000, 1000), True)
    objects.extend(job(gang.name, gang.queue, gang.size, gpus=1))
    return DisruptionWorld(objects, gang)


@PROPERTY
@given(reclaim_worlds())
def test_reclaim_serves_a_queue_below_its_share_from_an_over_share_queue(
    world: DisruptionWorld,
) -> None:
    result = run_objects(world.objects, SchedulerConfig())
    missing = sorted(world.gang.pods - _placed(result))
    assert not missing, (world.gang, missing, [o for o in result.pod_groups])
    assert {e.action for e in result.evictions} <= {"reclaim"}, result.evictions


@st.composite
def preempt_worlds(draw: st.DrawFn) -> DisruptionWorld:
    """One queue: the full cluster held by low-priority jobs, a higher-priority gang pending."""
    # The gang is non-preemptible, so its queue's quota must hold it: unlimited or 4 >= size.
    objects: list[Any] = [queue("q", gpu_quota=draw(st.sampled_from([-1, 4])))]
    sizes = [draw(st.sampled_from([2, 4])) for _ in range(draw(st.integers(1, 3)))]
    count = 0
    for i, gpus in enumerate(sizes):
        objects.append(node(f"n{i}", gpus=gpus, cpu="64", memory="256G"))
        for _ in range(gpus):
            victim_class = draw(st.sampled_from(["train", "build-preemptible"]))
            objects.extend(
                job(
                    f"r{count}",
                    "q",
                    gpus=1,
                    states=["Running"],
                    nodes=[f"n{i}"],
                    priority_class=victim_class,
                )
            )
            count += 1
    size = draw(st.integers(1, min(count, 4)))
    gang = Gang("pending", "q", size, (1, 1000, 1000), False)
    preemptor_class = draw(st.sampled_from(["build", "inference"]))  # above every victim
    objects.extend(job(gang.name, "q", size, gpus=1, priority_class=preemptor_class))
    return DisruptionWorld(objects, gang)


@PROPERTY
@given(preempt_worlds())
def test_preempt_serves_a_higher_priority_gang_in_its_queue(world: DisruptionWorld) -> None:
    result = run_objects(world.objects, SchedulerConfig())
    missing = sorted(world.gang.pods - _placed(result))
    assert not missing, (world.gang, missing, [o for o in result.pod_groups])
    assert {e.action for e in result.evictions} <= {"preempt"}, result.evictions


@st.composite
def consolidation_worlds(draw: st.DrawFn) -> DisruptionWorld:
    """Scattered 1-GPU jobs and one pending pod as large as the free GPUs together."""
    objects: list[Any] = [queue("q", gpu_quota=draw(st.sampled_from([-1, 0, 2])))]
    sizes = [draw(st.sampled_from([2, 4])) for _ in range(draw(st.integers(2, 3)))]
    count = 0
    for i, gpus in enumerate(sizes):
        objects.append(node(f"n{i}", gpus=gpus, cpu="64", memory="256G"))
        for _ in range(draw(st.integers(0, gpus))):
            objects.extend(job(f"r{count}", "q", gpus=1, states=["Running"], nodes=[f"n{i}"]))
            count += 1
    free = sum(sizes) - count
    wanted = max(1, min(free, max(sizes)))  # more than a full cluster's 0 free: nothing can help
    gang = Gang("pending", "q", 1, (wanted, 1000, 1000), True)
    objects.extend(job(gang.name, "q", gpus=wanted, priority_class="train"))
    return DisruptionWorld(objects, gang, free)


@PROPERTY
@given(consolidation_worlds())
def test_consolidation_places_a_pod_that_fits_after_moves(world: DisruptionWorld) -> None:
    if world.free_gpus < world.gang.request[0]:
        return  # a full cluster: no move frees anything
    result = run_objects(world.objects, SchedulerConfig())
    missing = sorted(world.gang.pods - _placed(result))
    assert not missing, (world.gang, missing, [o for o in result.pod_groups])
    pipelined = {b.pod for b in result.pipelined}
    for eviction in result.evictions:
        assert eviction.action == "consolidation", eviction
        assert eviction.pod in pipelined, (eviction, "a moved pod must land elsewhere")


LIVENESS = (
    "test_allocate_places_a_gang_that_fits_in_free_room_within_its_queues",
    "test_reclaim_serves_a_queue_below_its_share_from_an_over_share_queue",
    "test_preempt_serves_a_higher_priority_gang_in_its_queue",
    "test_consolidation_places_a_pod_that_fits_after_moves",
)


@pytest.mark.skipif(
    os.environ.get(NOOP_ACTIONS_ENV) == "1", reason="this run is the no-op run it checks"
)
def test_the_liveness_properties_fail_when_every_action_does_nothing() -> None:
    """Run this file with no-op actions: every liveness property must fail."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env[NOOP_ACTIONS_ENV] = "1"
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", __file__],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    failed = set(re.findall(r"^FAILED \S+::(\w+)", run.stdout, re.MULTILINE))
    assert failed == set(LIVENESS), run.stdout[-4000:] + run.stderr[-2000:]
