"""Knative (gang on/off), Argo Workflow and TrainJob (skip-top-owner), SparkApplication.

Covers: one group per Revision with min-scale (and the legacy minScale spelling),
inference on the Revision only, no topology or preemptibility; per-pod groups with
the literal ``inference`` when gang mode is off; a missing Revision; the Argo skip
(step pods per pod, a PyTorchJob below the Workflow grouped by its adapter,
Workflow labels filling gaps); TrainJob skipped to its JobSet with its labels; a
missing runtime; SparkApplication pods and resources.
"""

from __future__ import annotations

from typing import Any

import pytest
from adapter_builders import Lookup, ctx, group, obj, pod, subgroups

from integrations import base
from integrations.grouping import group_workloads

KN = "serving.knative.dev/v1"


def knative_chain(min_scale: dict[str, str] | None = None) -> tuple[dict[str, Any], ...]:
    svc = obj(KN, "Service", "hello", labels={"kai.scheduler/queue": "svc-q"})
    revision = obj(
        KN,
        "Revision",
        "hello-00001",
        labels={"kai.scheduler/queue": "rev-q", "kai.scheduler/preemptibility": "preemptible"},
        annotations={**(min_scale or {}), "kai.scheduler/topology": "dc"},
        owner=svc,
    )
    the_pod = pod(
        "hello-00001-abc", labels={"serving.knative.dev/revision": "hello-00001"}, owner=revision
    )
    return svc, revision, the_pod


@pytest.mark.parametrize(
    ("notes", "expected"),
    [
        ({"autoscaling.knative.dev/min-scale": "3"}, 3),
        ({"autoscaling.knative.dev/minScale": "4"}, 4),
        ({"autoscaling.knative.dev/min-scale": "many"}, 1),
        ({}, 1),
    ],
)
def test_knative_gang_groups_on_the_revision(notes: dict[str, str], expected: int) -> None:
    svc, revision, the_pod = knative_chain(notes)
    spec = group(ctx(svc, the_pod, (revision, svc), lookup=Lookup(revision)))
    assert (spec.name, spec.min_member, spec.queue) == (
        "pg-hello-00001-uid-hello-00001",
        expected,
        "rev-q",
    )
    assert spec.owner.kind == "Revision"
    assert (spec.priority_class_name, spec.preemptibility) == ("inference", "")
    assert spec.topology == base.TopologyConstraint()


def test_knative_legacy_min_scale_is_ignored_in_kai_mode() -> None:
    svc, revision, the_pod = knative_chain({"autoscaling.knative.dev/minScale": "4"})
    spec = group(
        ctx(svc, the_pod, (revision, svc), lookup=Lookup(revision), reproduce_kai_bugs=True)
    )
    assert spec.min_member == 1


def test_knative_per_pod_when_gang_mode_is_off() -> None:
    svc, revision, the_pod = knative_chain({"autoscaling.knative.dev/min-scale": "3"})
    the_pod["metadata"]["labels"]["priorityClassName"] = "build"
    spec = group(
        ctx(svc, the_pod, (revision, svc), lookup=Lookup(revision), knative_gang_schedule=False)
    )
    assert (spec.name, spec.min_member, spec.priority_class_name) == (
        "pg-hello-00001-abc-uid-hello-00001-abc",
        1,
        "inference",
    )
    assert spec.owner.kind == "Pod"


def test_knative_missing_revision_is_an_error() -> None:
    svc, revision, the_pod = knative_chain()
    with pytest.raises(base.GroupingError, match="Revision ns/hello-00001 not found"):
        group(ctx(svc, the_pod, (revision, svc)))


def test_knative_gang_off_through_group_workloads(fixture: Any) -> None:
    docs = fixture("knative-min-scale.yaml")
    gang = group_workloads(docs)
    assert [pg["spec"]["minMember"] for pg in gang.pod_groups] == [2]
    per_pod = group_workloads(docs, settings=base.GroupingSettings(knative_gang_schedule=False))
    assert len(per_pod.pod_groups) == 2
    assert {pg["metadata"]["ownerReferences"][0]["kind"] for pg in per_pod.pod_groups} == {"Pod"}


def test_argo_step_pod_is_grouped_per_pod_with_workflow_labels() -> None:
    wf = obj(
        "argoproj.io/v1alpha1",
        "Workflow",
        "wf",
        labels={"kai.scheduler/queue": "wf-q", "team": "a"},
    )
    step = pod("wf-step-1", labels={"team": "b"}, owner=wf)
    spec = group(ctx(wf, step, (wf,)))
    assert (spec.name, spec.queue) == ("pg-wf-step-1-uid-wf-step-1", "wf-q")
    assert spec.labels["team"] == "b"  # the Workflow only fills gaps
    assert spec.owner.kind == "Pod"


def test_argo_pytorchjob_below_the_workflow(fixture: Any) -> None:
    result = group_workloads(fixture("argo-pytorch.yaml"))
    assert result.errors == ()
    by_owner = {pg["metadata"]["ownerReferences"][0]["kind"]: pg for pg in result.pod_groups}
    pytorch = by_owner["PyTorchJob"]
    assert pytorch["spec"]["minMember"] == 3
    assert pytorch["spec"]["queue"] == "research"  # from the Workflow label
    assert [s["name"] for s in pytorch["spec"]["subGroups"]] == ["master", "worker"]
    assert by_owner["Pod"]["spec"]["queue"] == "research"  # the resource step pod


def test_trainjob_is_skipped_to_its_jobset() -> None:
    train = obj(
        "trainer.kubeflow.org/v1alpha1", "TrainJob", "tj", labels={"kai.scheduler/queue": "tq"}
    )
    js = obj(
        "jobset.x-k8s.io/v1alpha2",
        "JobSet",
        "tj",
        owner=train,
        spec={
            "startupPolicy": {"startupPolicyOrder": "AnyOrder"},
            "replicatedJobs": [
                {"name": "node", "replicas": 1, "template": {"spec": {"parallelism": 2}}}
            ],
        },
    )
    job = obj("batch/v1", "Job", "tj-node-0", owner=js)
    labels = {"jobset.sigs.k8s.io/replicatedjob-name": "node", "jobset.sigs.k8s.io/job-index": "0"}
    the_pod = pod("tj-node-0-a", labels=labels, owner=job)
    spec = group(ctx(train, the_pod, (job, js, train)))
    assert (spec.name, spec.min_sub_group, spec.queue) == ("pg-tj-uid-tj", 1, "tq")
    assert spec.subgroup_of("tj-node-0-a") == "node-replica-0"
    assert spec.owner.kind == "JobSet"


def test_trainjob_missing_runtime_is_an_error_that_names_the_field() -> None:
    train = obj(
        "trainer.kubeflow.org/v1alpha1",
        "TrainJob",
        "tj",
        spec={"runtimeRef": {"kind": "ClusterTrainingRuntime", "name": "nope"}},
    )
    result = group_workloads([train])
    assert result.pod_groups == ()
    assert [e.object for e in result.errors] == ["TrainJob ns/tj"]
    assert "spec.runtimeRef" in result.errors[0].message


def test_spark_application_pods(fixture: Any) -> None:
    result = group_workloads(fixture("spark-app.yaml"))
    assert result.errors == ()
    assert len(result.pod_groups) == 1
    pods = {p["metadata"]["name"]: p for p in result.pods}
    driver = pods["sp-driver"]
    assert driver["metadata"]["labels"]["spark-role"] == "driver"
    assert driver["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "1",
        "memory": "1408Mi",
    }
    assert driver["spec"]["schedulerName"] == "kai-scheduler"
    executors = [p for n, p in pods.items() if "-exec-" in n]
    assert len(executors) == 2
    assert all(p["metadata"]["ownerReferences"][0]["name"] == "sp-driver" for p in executors)
    assert executors[0]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "1"
    assert subgroups(group(ctx(driver, driver, ()))) == []
