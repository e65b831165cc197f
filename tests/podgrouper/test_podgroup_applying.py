"""ApplyToCluster: create; update keeps queue, markUnschedulable, schedulingBackoff, the
queue label and the node-pool label (or its absence); no-op writes skipped; labels and
annotations merged; extra metadata kept; the pod patch is idempotent."""

from __future__ import annotations

from typing import Any

import pytest
from podgrouper_objects import fake, pod, pod_group, run

from integrations import base
from kubeapi.errors import ConflictError, NotFoundError
from podgrouper import applying
from tests.kits import podgrouper_kube as testing

SETTINGS = base.GroupingSettings()
OWNER = base.OwnerReference("batch/v1", "Job", "train", "uid-train")
POD = pod("train-a")


def spec(**changes: Any) -> base.PodGroupSpec:
    values: dict[str, Any] = {
        "name": "pg-train-uid-train",
        "namespace": "ns",
        "owner": OWNER,
        "queue": "team-a",
        "priority_class_name": "train",
        "labels": {"kai.scheduler/queue": "team-a", "app": "train"},
        "annotations": {"note": "one"},
    }
    values.update(changes)
    return base.PodGroupSpec(**values)


def apply(kube_: testing.FakeKube, s: base.PodGroupSpec, p: dict[str, Any] = POD) -> Any:
    return run(applying.apply(s, p, kube_, SETTINGS))


def test_absent_podgroup_is_created_and_the_pod_patched() -> None:
    kube_ = fake(POD)
    applied = apply(kube_, spec())
    assert applied == applying.Applied("pg-train-uid-train", None, applying.Write.CREATED, True)
    assert pod_group(kube_, "pg-train-uid-train")["spec"]["queue"] == "team-a"
    stored = kube_.stored("v1", "Pod", "ns", "train-a")
    assert stored is not None
    assert stored["metadata"]["annotations"]["pod-group-name"] == "pg-train-uid-train"


def test_update_keeps_sticky_fields() -> None:
    kube_ = fake(POD)
    apply(kube_, spec(labels={"kai.scheduler/queue": "team-a", "kai.scheduler/node-pool": "a"}))
    existing = pod_group(kube_, "pg-train-uid-train")
    existing["spec"].update(markUnschedulable=True, schedulingBackoff=3)
    existing["metadata"]["finalizers"] = ["keep.me/too"]
    kube_.add(existing)
    changed = spec(
        queue="team-b",
        priority_class_name="build",
        labels={"kai.scheduler/queue": "team-b", "kai.scheduler/node-pool": "b"},
    )
    assert apply(kube_, changed).write is applying.Write.UPDATED
    updated = pod_group(kube_, "pg-train-uid-train")
    assert updated["spec"]["queue"] == "team-a"
    assert updated["spec"]["markUnschedulable"] is True
    assert updated["spec"]["schedulingBackoff"] == 3
    assert updated["spec"]["priorityClassName"] == "build"
    assert updated["metadata"]["labels"] == {
        "kai.scheduler/queue": "team-a",
        "kai.scheduler/node-pool": "a",
    }
    assert updated["metadata"]["finalizers"] == ["keep.me/too"]
    assert updated["metadata"]["uid"] == existing["metadata"]["uid"]


def test_node_pool_absence_is_sticky() -> None:
    kube_ = fake(POD)
    apply(kube_, spec())
    apply(kube_, spec(labels={"kai.scheduler/node-pool": "b"}, annotations={"note": "two"}))
    assert (
        "kai.scheduler/node-pool"
        not in pod_group(kube_, "pg-train-uid-train")["metadata"]["labels"]
    )


def test_labels_and_annotations_are_merged() -> None:
    kube_ = fake(POD)
    apply(kube_, spec())
    apply(kube_, spec(labels={"extra": "x"}, annotations={"note": "two"}))
    meta = pod_group(kube_, "pg-train-uid-train")["metadata"]
    assert meta["labels"] == {"kai.scheduler/queue": "team-a", "app": "train", "extra": "x"}
    assert meta["annotations"] == {"note": "two"}


def test_no_op_write_and_pod_patch_are_skipped() -> None:
    kube_ = fake(POD)
    apply(kube_, spec())
    patched = kube_.stored("v1", "Pod", "ns", "train-a")
    assert patched is not None
    again = apply(kube_, spec(), patched)
    assert again.write is applying.Write.UNCHANGED
    assert again.pod_patched is False
    assert kube_.count("replace") == 0
    assert kube_.count("merge_patch") == 1


def test_subgroup_label_is_written_when_a_subgroup_lists_the_pod() -> None:
    kube_ = fake(POD)
    sub = base.SubGroupSpec("workers", 2, pod_names=("train-a",))
    applied = apply(kube_, spec(subgroups=(sub,)))
    assert applied.subgroup == "workers"
    stored = kube_.stored("v1", "Pod", "ns", "train-a")
    assert stored is not None
    assert stored["metadata"]["labels"]["kai.scheduler/subgroup-name"] == "workers"


def test_stale_write_raises_conflict() -> None:
    kube_ = fake(POD)
    apply(kube_, spec())
    kube_.fail("replace", "PodGroup", "ns", "pg-train-uid-train", ConflictError)
    with pytest.raises(ConflictError) as caught:
        apply(kube_, spec(priority_class_name="build"))
    assert caught.value.retryable


def test_a_lost_create_race_is_retried_once_as_an_update() -> None:
    kube_ = fake(POD)

    async def racing() -> Any:
        kube_.add(spec(queue="winner").to_manifest())  # the other pod's reconcile won
        return await applying.apply_pod_group(spec(), kube_, SETTINGS)

    kube_.fail("get", "PodGroup", "ns", "pg-train-uid-train", NotFoundError, times=1)
    assert run(racing()) is applying.Write.UNCHANGED
    assert pod_group(kube_, "pg-train-uid-train")["spec"]["queue"] == "winner"
    assert kube_.count("create") == 1
