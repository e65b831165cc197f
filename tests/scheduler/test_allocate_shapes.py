"""Allocate answers a gang shaped like one that failed since the last commit without searching.

The answer must be the one the search would give (same outcome, same reason);
a placement in between, or anything beyond the shape that placement depends on
(inter-pod affinity anywhere, a topology constraint), makes allocate search again.
Once every job left would be refused by its shape, the rest is refused without
being popped: the same outcomes and reasons as the ordered path (memos off).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.actions import allocate
from scheduler.actions.ordering import JobQueue
from scheduler.cache.snapshotting import build_snapshot
from scheduler.cycle import CycleResult, open_session, run_cycle
from scheduler.framework.session import Session
from scheduler.framework.shapes import allocation_shape, shapes_apply
from tests.kits.affinity import affinity, term
from tests.kits.worlds import ALLOCATE_ONLY, NOW, Item, job, node, queue, sourced

NO_ROOM = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."


def no_room(name: str) -> tuple[str]:
    return (f"pod default/{name}-0: {NO_ROOM}",)


def _run(objects: list[Item], monkeypatch: pytest.MonkeyPatch) -> tuple[CycleResult, list[str]]:
    """One allocate cycle, and the jobs allocate searched placements for, in order."""
    searched: list[str] = []
    real = allocate.place_tasks

    def counting(session: Any, statement: Any, job: Any, tasks: Any) -> str | None:
        searched.append(job.name)
        return real(session, statement, job, tasks)

    monkeypatch.setattr(allocate, "place_tasks", counting)
    return run_cycle(_snapshot(objects), ALLOCATE_ONLY), searched


def _snapshot(objects: list[Item]) -> Any:
    return build_snapshot(sourced(objects), now=NOW.timestamp()).snapshot


def _world(*jobs: Item) -> list[Item]:
    """One node with 2 GPUs, queue q and the jobs."""
    return [node("n0", gpus=2), queue("q"), *jobs]


def _reasons(result: CycleResult) -> dict[str, tuple[str, ...]]:
    return {o.pod_group.split("/")[1]: o.reasons for o in result.pod_groups}


def test_same_shape_is_searched_once(monkeypatch: pytest.MonkeyPatch) -> None:
    result, searched = _run(_world(*(job(n, "q", gpus=4) for n in ("a", "b", "c"))), monkeypatch)
    assert searched == ["a"]
    assert all(o.outcome == "pending" for o in result.pod_groups)
    # each names its own pod, as its own search would have
    assert _reasons(result) == {name: no_room(name) for name in ("a", "b", "c")}


def test_a_placement_in_between_searches_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # a fails; small takes a GPU; b (shaped like a) must be searched: the room changed
    world = _world(job("a", "q", gpus=4), job("small", "q", gpus=1), job("b", "q", gpus=4))
    result, searched = _run(world, monkeypatch)
    assert searched == ["a", "small", "b"]
    assert [b.pod for b in result.binds] == ["default/small-0"]


def test_inter_pod_affinity_anywhere_turns_shapes_off(monkeypatch: pytest.MonkeyPatch) -> None:
    objects = _world(
        job("a", "q", gpus=4),
        job("b", "q", gpus=4),
        job("x", "q", cpu="1000", labels={"app": "x"}, affinity=affinity(anti=[term("x")])),
    )
    assert not shapes_apply(open_session(_snapshot(objects), ALLOCATE_ONLY))
    _, searched = _run(objects, monkeypatch)
    assert searched.count("a") == 1
    assert searched.count("b") == 1


def test_shape_covers_queue_preemptibility_and_requests() -> None:
    snapshot = _snapshot(
        [
            node("n0", gpus=2),
            queue("q"),
            queue("r"),
            job("a", "q", 2, gpus=1),
            job("b", "q", 2, gpus=1),
            job("other-queue", "r", 2, gpus=1),
            job("bigger", "q", 2, gpus=2),
            job("build", "q", 2, gpus=1, priority_class="build"),
            job("topo", "q", 2, gpus=1, topology={"topology": "t", "requiredTopologyLevel": "z"}),
        ]
    )
    jobs = {key.split("/")[1]: j for key, j in snapshot.jobs.items()}

    def shape(name: str) -> object:
        found = jobs[name]
        return allocation_shape(found, found.iter_pods())

    assert shapes_apply(open_session(snapshot, ALLOCATE_ONLY))
    assert shape("a") == shape("b")
    assert len({shape(n) for n in ("a", "other-queue", "bigger", "build")}) == 4
    assert shape("topo") is None


def _popped(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The jobs allocate pops, in order, from now on."""
    popped: list[str] = []
    real = JobQueue.pop

    def counting(self: JobQueue) -> Any:
        found = real(self)
        if found is not None:
            popped.append(found.name)
        return found

    monkeypatch.setattr(JobQueue, "pop", counting)
    return popped


def _reference(objects: list[Item], monkeypatch: pytest.MonkeyPatch) -> CycleResult:
    """The cycle with memos off: every job popped in order and searched."""
    with monkeypatch.context() as patched:
        patched.setattr(Session, "memoise", False)
        return run_cycle(_snapshot(objects), ALLOCATE_ONLY)


def _waiting(count: int) -> list[Item]:
    """Jobs that can never fit on the 2-GPU node, in two shapes."""
    return [job(f"w{i:02d}", "q", gpus=4 if i % 2 else 3) for i in range(count)]


def test_after_a_placement_the_refused_rest_is_not_popped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = _world(job("first", "q", gpus=1), *_waiting(40))
    reference = _reference(world, monkeypatch)
    popped = _popped(monkeypatch)
    result = run_cycle(_snapshot(world), ALLOCATE_ONLY)
    assert [b.pod for b in result.binds] == ["default/first-0"]
    assert popped[0] == "first"
    assert len(popped) < 41  # the rest was refused without being popped
    assert _reasons(result)["w39"] == no_room("w39")  # named as its own search would
    assert result.pod_groups == reference.pod_groups
    assert result.binds == reference.binds


def test_a_job_that_would_place_keeps_the_order(monkeypatch: pytest.MonkeyPatch) -> None:
    # after first's placement, the look ahead finds late (1 GPU) would place: the jobs are
    # popped in order up to it, it is placed, and the look comes again after it
    world = _world(job("first", "q", gpus=1), *_waiting(30), job("late", "q", gpus=1))
    world += _waiting(60)[30:]
    reference = _reference(world, monkeypatch)
    popped = _popped(monkeypatch)
    result = run_cycle(_snapshot(world), ALLOCATE_ONLY)
    assert [b.pod for b in result.binds] == ["default/first-0", "default/late-0"]
    assert popped[: popped.index("late") + 1] == [
        "first",
        *(f"w{i:02d}" for i in range(30)),
        "late",
    ]
    assert len(popped) < 62
    assert result.pod_groups == reference.pod_groups
    assert result.binds == reference.binds
