"""Allocate answers a gang shaped like one that failed since the last commit without searching.

The answer must be the one the search would give (same outcome, same reason);
a placement in between, or anything beyond the shape that placement depends on
(inter-pod affinity anywhere, a topology constraint), makes allocate search again.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.actions import allocate
from scheduler.cache.snapshotting import build_snapshot
from scheduler.cycle import CycleResult, open_session, run_cycle
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
