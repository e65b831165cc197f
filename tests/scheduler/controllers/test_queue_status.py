"""Queue status rolled up a three-level tree."""

from __future__ import annotations

from typing import Any

from scheduler.controllers.queue_status import queue_statuses


def queue(name: str, parent: str = "") -> dict[str, Any]:
    spec = {"parentQueue": parent} if parent else {}
    return {"metadata": {"name": name}, "spec": spec}


def group(queue_name: str, requested: dict[str, Any], allocated: dict[str, Any]) -> dict[str, Any]:
    return {
        "spec": {"queue": queue_name},
        "status": {
            "resourcesStatus": {
                "requested": requested,
                "allocated": allocated,
                "allocatedNonPreemptible": allocated if "cpu" in allocated else {},
            }
        },
    }


def test_three_levels() -> None:
    queues = [
        queue("root"),
        queue("dept", "root"),
        queue("team-a", "dept"),
        queue("team-b", "dept"),
        queue("other", "root"),
    ]
    groups = [
        group("team-a", {"nvidia.com/gpu": "0.5", "cpu": "500"}, {"nvidia.com/gpu": "0.5"}),
        group("team-a", {"nvidia.com/gpu": "2"}, {}),
        group("team-b", {"cpu": "1000", "memory": "100"}, {"cpu": "1000", "memory": "100"}),
        group("other", {"nvidia.com/gpu": 1}, {"nvidia.com/gpu": 1}),
        group("missing", {"nvidia.com/gpu": 8}, {}),
    ]
    got = queue_statuses(queues, groups)
    assert got["team-a"] == {
        "childQueues": [],
        "allocated": {"nvidia.com/gpu": "0.5"},
        "allocatedNonPreemptible": {},
        "requested": {"cpu": "500", "nvidia.com/gpu": "2.5"},
    }
    assert got["dept"] == {
        "childQueues": ["team-a", "team-b"],
        "allocated": {"cpu": "1000", "memory": "100", "nvidia.com/gpu": "0.5"},
        "allocatedNonPreemptible": {"cpu": "1000", "memory": "100"},
        "requested": {"cpu": "1500", "memory": "100", "nvidia.com/gpu": "2.5"},
    }
    assert got["root"]["childQueues"] == ["dept", "other"]
    assert got["root"]["requested"] == {"cpu": "1500", "memory": "100", "nvidia.com/gpu": "3.5"}
    assert got["root"]["allocated"]["nvidia.com/gpu"] == "1.5"


def test_orphan_and_cycle_terminate() -> None:
    queues = [queue("a", "b"), queue("b", "a"), queue("orphan", "gone")]
    got = queue_statuses(queues, [group("a", {"cpu": "1"}, {})])
    assert set(got) == {"a", "b", "orphan"}
    assert got["orphan"]["childQueues"] == []
    assert got["a"]["requested"] == {"cpu": "1"}
