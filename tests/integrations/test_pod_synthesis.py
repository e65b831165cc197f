"""Pod synthesis: the objects each controller would create, with their names, labels,
ownerReferences, resources and schedulerName; determinism and bad counts."""

from __future__ import annotations

import re
from typing import Any

import pytest
from adapter_builders import Lookup, obj

from integrations import base, synthesis, templates

CONTAINER = {"name": "c", "image": "x", "resources": {"requests": {"nvidia.com/gpu": "1"}}}
POD_TEMPLATE = {
    "metadata": {"labels": {"app": "a"}},
    "spec": {"schedulerName": "kai-scheduler", "containers": [CONTAINER]},
}


def names(objects: list[dict[str, Any]], kind: str = "Pod") -> list[str]:
    return [o["metadata"]["name"] for o in objects if o["kind"] == kind]


def test_indexed_job_pods() -> None:
    job = obj(
        "batch/v1",
        "Job",
        "j",
        spec={
            "parallelism": 3,
            "completions": 2,
            "completionMode": "Indexed",
            "template": POD_TEMPLATE,
        },
    )
    pods = synthesis.synthesize(job)
    assert len(pods) == 2
    assert [p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] for p in pods] == [
        "0",
        "1",
    ]
    assert all(p["metadata"]["name"].startswith(f"j-{i}-") for i, p in enumerate(pods))
    first = pods[0]
    assert first["metadata"]["labels"]["app"] == "a"
    assert first["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "j"
    assert first["spec"]["schedulerName"] == "kai-scheduler"
    assert first["spec"]["containers"][0]["resources"] == CONTAINER["resources"]
    assert first["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "j",
            "uid": "uid-j",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_deployment_creates_a_replicaset_that_owns_the_pods() -> None:
    dep = obj("apps/v1", "Deployment", "web", spec={"replicas": 2, "template": POD_TEMPLATE})
    created = synthesis.synthesize(dep)
    [rs] = [o for o in created if o["kind"] == "ReplicaSet"]
    template_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{template_hash}"
    pods = [o for o in created if o["kind"] == "Pod"]
    assert len(pods) == 2
    assert {p["metadata"]["ownerReferences"][0]["uid"] for p in pods} == {rs["metadata"]["uid"]}
    assert all(p["metadata"]["labels"]["pod-template-hash"] == template_hash for p in pods)


def test_training_operator_pod_labels() -> None:
    job = obj(
        "kubeflow.org/v1",
        "PyTorchJob",
        "pt",
        spec={
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": POD_TEMPLATE},
                "Worker": {"replicas": 2, "template": POD_TEMPLATE},
            }
        },
    )
    pods = synthesis.synthesize(job)
    assert names(pods) == ["pt-master-0", "pt-worker-0", "pt-worker-1"]
    labels = pods[2]["metadata"]["labels"]
    assert labels["training.kubeflow.org/replica-type"] == "worker"
    assert labels["training.kubeflow.org/replica-index"] == "1"
    assert labels["training.kubeflow.org/job-name"] == "pt"
    assert pods[0]["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master"


def test_jobset_jobs_and_pod_labels() -> None:
    js = obj(
        "jobset.x-k8s.io/v1alpha2",
        "JobSet",
        "js",
        spec={
            "replicatedJobs": [
                {
                    "name": "w",
                    "replicas": 2,
                    "template": {"spec": {"parallelism": 2, "template": POD_TEMPLATE}},
                }
            ]
        },
    )
    created = synthesis.synthesize(js)
    assert names(created, "Job") == ["js-w-0", "js-w-1"]
    pods = [o for o in created if o["kind"] == "Pod"]
    assert len(pods) == 4
    assert {p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] for p in pods} == {"w"}
    assert {p["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"] for p in pods} == {"0", "1"}


def test_knative_chain() -> None:
    svc = obj(
        "serving.knative.dev/v1",
        "Service",
        "hello",
        spec={
            "template": {
                "metadata": {"annotations": {"autoscaling.knative.dev/min-scale": "2"}},
                "spec": {"containers": [CONTAINER]},
            }
        },
    )
    created = synthesis.synthesize(svc)
    kinds = [o["kind"] for o in created]
    assert kinds == ["Configuration", "Revision", "Deployment", "ReplicaSet", "Pod", "Pod"]
    revision = created[1]
    assert revision["metadata"]["name"] == "hello-00001"
    assert revision["metadata"]["annotations"]["autoscaling.knative.dev/min-scale"] == "2"
    assert created[4]["metadata"]["labels"]["serving.knative.dev/revision"] == "hello-00001"


def test_trainjob_renders_the_runtime() -> None:
    runtime = obj(
        "trainer.kubeflow.org/v1alpha1",
        "ClusterTrainingRuntime",
        "torch",
        namespace="",
        spec={
            "mlPolicy": {"numNodes": 1},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "spec": {"template": {"spec": {"containers": [{"name": "node"}]}}}
                            },
                        }
                    ]
                }
            },
        },
    )
    train = obj(
        "trainer.kubeflow.org/v1alpha1",
        "TrainJob",
        "tj",
        spec={
            "runtimeRef": {"name": "torch"},
            "trainer": {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "4"}}},
        },
    )
    created = synthesis.synthesize(train, Lookup(runtime))
    assert created[0]["kind"] == "JobSet"
    assert created[0]["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    pods = [o for o in created if o["kind"] == "Pod"]
    assert len(pods) == 2
    assert pods[0]["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "4"}}


def test_synthesis_is_deterministic_and_uids_unique() -> None:
    job = obj(
        "kubeflow.org/v1",
        "TFJob",
        "tf",
        spec={"tfReplicaSpecs": {"Worker": {"replicas": 3, "template": POD_TEMPLATE}}},
    )
    assert synthesis.synthesize(job) == synthesis.synthesize(job)
    uids = [p["metadata"]["uid"] for p in synthesis.synthesize(job)]
    assert len(set(uids)) == 3


@pytest.mark.parametrize(
    ("api_version", "kind", "count_field"),
    [
        ("batch/v1", "Job", "parallelism"),
        ("apps/v1", "Deployment", "replicas"),
        ("example.com/v1", "Custom", "replicas"),
    ],
)
def test_generated_pod_names_are_unique_within_a_workload(
    api_version: str, kind: str, count_field: str
) -> None:
    """5000 five-letter suffixes collide (the birthday bound of 27^5 is near a thousand);
    a colliding name is drawn again, as a controller retries, so no pod is merged away."""
    workload = obj(api_version, kind, "x", spec={count_field: 5000, "template": POD_TEMPLATE})
    pods = names(synthesis.synthesize(workload))
    assert len(pods) == len(set(pods)) == 5000
    assert pods == names(synthesis.synthesize(workload))
    stem = "x-" if kind != "Deployment" else r"x-[bcdfghjklmnpqrstvwxz2456789]{10}-"
    assert all(re.fullmatch(f"{stem}[bcdfghjklmnpqrstvwxz2456789]{{5}}", p) for p in pods)


def test_bad_counts_name_the_field() -> None:
    job = obj("batch/v1", "Job", "j", spec={"parallelism": -1, "template": POD_TEMPLATE})
    with pytest.raises(base.GroupingError) as caught:
        synthesis.synthesize(job)
    assert (caught.value.obj, caught.value.field) == ("Job ns/j", "spec.parallelism")


def test_normalized_fills_identity() -> None:
    plain = templates.normalized(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "x-"}}
    )
    assert plain["metadata"]["namespace"] == "default"
    assert plain["metadata"]["name"].startswith("x-")
    assert plain["metadata"]["uid"]
    cluster = templates.normalized(
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "p"}}
    )
    assert "namespace" not in cluster["metadata"]
