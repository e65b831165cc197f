"""Properties of GPU sharing over random clusters (docs/semantics.md §6).

Random worlds: one to three GPU nodes (1-4 devices, with or without the
device-memory label); some devices shared by running fractional pods (some
releasing), others held by whole-GPU pods (some releasing); pending
fractional pods (one or two devices), gpu-memory pods and whole-GPU pods of
two queues and several priorities. Properties:

- (a) after a full cycle of the five actions, no device is over-shared: the
  members that will hold a group (all but releasing ones) use at most one
  device's worth (portion <= 1000) and at most the device's memory;
- (b) the node's GPU columns (idle, releasing, free) never go negative, and
  whole-GPU pods plus held groups never exceed the node's devices;
- (c) the groups the engine tracks are exactly those the pods' statuses say
  (every rollback in the disruption simulations restored them);
- (d) a Statement rolled back restores node arrays, groups, pod fields and
  queue accounting exactly;
- (e) the same input gives the same decisions, group ids included, and one final
  decision per pod.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.api.pods import ACTIVE_USED, PodStatus
from scheduler.api.resources import GPU, GPU_UNIT
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import ACTIONS, open_session, run_cycle
from scheduler.framework.session import Session
from tests.kits.worlds import NOW, conflicting_decisions, job, node, queue, sourced

PORTIONS = (0.1, 0.25, 0.3, 0.5, 0.6, 0.75)
CLASSES = ("train", "build-preemptible")
HOLDING = ACTIVE_USED - {PodStatus.RELEASING}


@st.composite
def worlds(draw: Any) -> list[Any]:
    objects: list[Any] = [queue("qa", gpu_quota=draw(st.integers(0, 3))), queue("qb", gpu_quota=1)]
    counter = 0
    for n in range(draw(st.integers(1, 3))):
        name = f"n{n}"
        devices = draw(st.integers(1, 4))
        device_memory = draw(st.sampled_from([None, 16000, 40000]))
        labels = {"nvidia.com/gpu.memory": str(device_memory)} if device_memory else {}
        objects.append(node(name, gpus=devices, cpu="64", memory="256G", labels=labels))
        for device in range(devices):
            use = draw(st.sampled_from(["idle", "shared", "whole"]))
            state = draw(st.sampled_from(["Running", "Running", "Releasing"]))
            counter += 1
            owner_queue = draw(st.sampled_from(["qa", "qb"]))
            cls = draw(st.sampled_from(CLASSES))
            if use == "whole":
                objects.append(
                    job(
                        f"w{counter}",
                        owner_queue,
                        gpus=1,
                        states=[state],
                        nodes=[name],
                        priority_class=cls,
                    )
                )
            elif use == "shared":
                used = 0.0
                for member in range(draw(st.integers(1, 3))):
                    value = draw(st.sampled_from(PORTIONS))
                    if used + value > 1.0:
                        break
                    used += value
                    member_state = draw(st.sampled_from(["Running", "Running", "Releasing"]))
                    objects.append(
                        job(
                            f"s{counter}x{member}",
                            owner_queue,
                            annotations={"gpu-fraction": f"{value:g}"},
                            labels={"runai-gpu-group": f"g-{name}-{device}"},
                            states=[member_state],
                            nodes=[name],
                            priority_class=cls,
                        )
                    )
    for p in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["fraction", "fraction", "memory", "whole"]))
        owner_queue = draw(st.sampled_from(["qa", "qb"]))
        cls = draw(st.sampled_from(("train", "build-preemptible", "inference")))
        if kind == "whole":
            objects.append(job(f"p{p}", owner_queue, gpus=1, priority_class=cls))
            continue
        devices = draw(st.sampled_from([1, 1, 2]))
        annotations = {"gpu-fraction-num-devices": str(devices)}
        if kind == "fraction":
            annotations["gpu-fraction"] = f"{draw(st.sampled_from(PORTIONS)):g}"
        else:
            annotations["gpu-memory"] = str(draw(st.sampled_from([2000, 8000, 20000])))
        objects.append(job(f"p{p}", owner_queue, annotations=annotations, priority_class=cls))
    return objects


def _snapshot(objects: list[Any]) -> ClusterSnapshot:
    return build_snapshot(sourced(objects), now=NOW.timestamp()).snapshot


def _row(room: Any, node: int) -> list[int]:
    return sorted(int(v) for v in room[node] if v >= 0)


def _check_devices(snapshot: ClusterSnapshot) -> None:
    nodes = snapshot.nodes
    shared = nodes.shared
    assert (nodes.idle[GPU] >= 0).all(), nodes.idle[GPU]
    assert (nodes.releasing[GPU] >= 0).all(), nodes.releasing[GPU]
    assert (nodes.free[GPU] >= 0).all(), nodes.free[GPU]
    holding: dict[tuple[int, str], list[Any]] = {}
    whole = np.zeros(len(nodes), dtype=np.int64)
    for pod in snapshot.pods:
        if pod.node < 0 or pod.status not in HOLDING:
            continue
        whole[pod.node] += pod.request[GPU]
        for gid in pod.gpu_groups:
            holding.setdefault((pod.node, gid), []).append(pod)
    for (n, gid), pods in holding.items():
        assert sum(p.gpu_portion for p in pods) <= GPU_UNIT, (gid, pods)
        share_memory = [p.gpu_share.memory_on(int(shared.memory[n])) for p in pods]
        if shared.synced[n]:
            assert sum(share_memory) <= int(shared.memory[n])
    # what the engine tracks matches the pods; a victim moved elsewhere may leave a
    # releasing copy of itself in its old group until it is gone
    tracked = {
        (n, gid): g.members - g.releasing_members
        for n, groups in shared.by_node.items()
        for gid, g in groups.items()
        if g.members > g.releasing_members
    }
    assert tracked == {key: len(pods) for key, pods in holding.items()}
    # the per-slot room arrays say what the group records say (negative: no room)
    for n in range(len(nodes)):
        groups = shared.groups(n).values()
        room = [GPU_UNIT - g.portion + g.releasing for g in groups if not g.all_releasing]
        assert _row(shared.room, n) == sorted(r for r in room if r >= 0)
        room_now = [GPU_UNIT - g.portion for g in groups if not g.only_pipelined]
        assert _row(shared.room_now, n) == sorted(r for r in room_now if r >= 0)
    groups_held = np.zeros(len(nodes), dtype=np.int64)
    for n, _ in holding:
        groups_held[n] += GPU_UNIT
    assert (whole + groups_held <= nodes.allocatable[GPU]).all()


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds(), st.sampled_from(["binpack", "spread"]))
def test_no_device_over_shared_after_a_cycle(objects: list[Any], strategy: str) -> None:
    snapshot = _snapshot(objects)
    _check_devices(snapshot)
    session = open_session(snapshot, SchedulerConfig(gpu_placement=strategy))
    for name in SchedulerConfig().actions:
        ACTIONS[name]().execute(session)
    _check_devices(session.snapshot)


def _state(session: Session) -> Any:
    nodes = session.snapshot.nodes
    states = session.plugin_state["proportion"]
    return (
        nodes.idle.copy(),
        nodes.releasing.copy(),
        nodes.free.copy(),
        {n: dict(groups) for n, groups in nodes.shared.by_node.items()},
        [(_row(nodes.shared.room, n), _row(nodes.shared.room_now, n)) for n in range(len(nodes))],
        [
            (p.status, p.node, p.gpu_groups, p.gpu_portion, list(p.quota))
            for p in session.snapshot.pods
        ],
        {name: list(state.used) for name, state in states.items()},
    )


def _same(a: Any, b: Any) -> None:
    for x, y in zip(a[:3], b[:3], strict=True):
        np.testing.assert_array_equal(x, y)
    assert a[3:] == b[3:]


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds(), st.data())
def test_rollback_restores_everything(objects: list[Any], data: Any) -> None:
    session = open_session(_snapshot(objects), SchedulerConfig())
    before = _state(session)
    statement = session.statement()
    pods = session.snapshot.pods
    running = [p for p in pods if p.status == PodStatus.RUNNING]
    for pod in data.draw(st.lists(st.sampled_from(running), unique=True)) if running else []:
        statement.evict(pod, "preempt")
    for pod in [p for p in pods if p.status == PodStatus.PENDING]:
        placement = session.place(pod, pipeline_only=data.draw(st.booleans()))
        if placement is None:
            continue
        if placement.on_idle:
            statement.allocate(pod, placement.node)
        else:
            statement.pipeline(pod, placement.node)
    _check_devices(session.snapshot)
    statement.discard()
    _same(before, _state(session))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_same_world_same_devices(objects: list[Any]) -> None:
    """(e) the same input gives the same decisions, group ids and portions included,
    one final decision per pod (a fractional pod moved to other devices of its own
    node is evicted and pipelined; one placed and then evicted gets neither)."""
    first = run_cycle(_snapshot(objects), SchedulerConfig())
    assert conflicting_decisions(objects, first) == []
    second = run_cycle(_snapshot(objects), SchedulerConfig())
    assert (first.binds, first.pipelined, first.evictions) == (
        second.binds,
        second.pipelined,
        second.evictions,
    )
