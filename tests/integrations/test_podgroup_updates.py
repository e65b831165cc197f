"""Sticky fields on update and the pod patch (docs/semantics.md §3 "Sticky", §4.1 ApplyToCluster)."""

from __future__ import annotations

from typing import Any

from integrations import base, updates


def manifest(queue: str, labels: dict[str, str], min_member: int = 2) -> dict[str, Any]:
    spec = base.PodGroupSpec(
        name="pg-a-1",
        namespace="ns",
        owner=base.OwnerReference("v1", "Pod", "a", "1"),
        queue=queue,
        min_member=min_member,
        labels=labels,
        subgroups=(base.SubGroupSpec("leader", 1, pod_names=("a-0",)),),
    )
    return spec.to_manifest()


def test_new_podgroup_is_written_as_desired() -> None:
    desired = manifest("q", {"x": "1"})
    assert updates.merged_podgroup(None, desired) == desired
    assert updates.needs_write(None, desired)


def test_queue_queue_label_and_node_pool_are_sticky() -> None:
    existing = manifest(
        "old-q", {"kai.scheduler/queue": "old-q", "keep": "me", "kai.scheduler/node-pool": "a"}
    )
    existing["spec"]["markUnschedulable"] = False
    desired = manifest("new-q", {"kai.scheduler/queue": "new-q", "kai.scheduler/node-pool": "b"}, 3)
    merged = updates.merged_podgroup(existing, desired)
    assert merged["spec"]["queue"] == "old-q"
    assert merged["spec"]["markUnschedulable"] is False
    assert merged["spec"]["minMember"] == 3
    assert merged["metadata"]["labels"] == {
        "keep": "me",
        "kai.scheduler/node-pool": "a",
        "kai.scheduler/queue": "old-q",
    }
    no_pool = updates.merged_podgroup(
        manifest("q", {}), manifest("q", {"kai.scheduler/node-pool": "b"})
    )
    assert "labels" not in no_pool["metadata"]  # absence of the node pool is sticky too


def test_needs_write() -> None:
    existing = manifest("q", {"a": "1", "extra": "x"})
    assert not updates.needs_write(existing, manifest("q", {"a": "1"}))
    assert updates.needs_write(existing, manifest("q", {"a": "2"}))
    assert updates.needs_write(existing, manifest("q", {"a": "1"}, 5))


def test_pod_patch() -> None:
    spec = base.PodGroupSpec(
        name="pg",
        namespace="ns",
        owner=base.OwnerReference("v1", "Pod", "a", "1"),
        subgroups=(base.SubGroupSpec("leader", 1, pod_names=("a-0",)),),
    )
    fresh = {"metadata": {"name": "a-0"}}
    assert updates.pod_patch(fresh, spec) == {
        "metadata": {
            "annotations": {"pod-group-name": "pg"},
            "labels": {"kai.scheduler/subgroup-name": "leader"},
        }
    }
    done = {
        "metadata": {
            "name": "a-0",
            "annotations": {"pod-group-name": "pg"},
            "labels": {"kai.scheduler/subgroup-name": "leader"},
        }
    }
    assert updates.pod_patch(done, spec) is None
    other = {"metadata": {"name": "b", "labels": {"kai.scheduler/subgroup-name": "mine"}}}
    assert updates.pod_patch(other, spec) == {"metadata": {"annotations": {"pod-group-name": "pg"}}}
