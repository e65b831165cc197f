"""Malformed workloads found by the fuzz tests (tests/fuzz): one error naming the field.

Each case once crashed ``podmuster group`` with a Python exception, or (a replica count
of two billion) exhausted the memory building pods; each must now be one error that
names the object and the field, while a valid workload beside it is still grouped.
"""

from __future__ import annotations

from typing import Any

import pytest

from integrations.grouping import detail, group_workloads
from tests.kits.edits import replaced


def _template(container: str) -> dict[str, Any]:
    """A pod template with one container."""
    return {"spec": {"containers": [{"name": container, "image": "x"}]}}


def _workload(api_version: str, kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns"}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec}


GOOD = _workload("batch/v1", "Job", "good", {"template": _template("c")})
RAY = _workload(
    "ray.io/v1",
    "RayCluster",
    "rc",
    {
        "headGroupSpec": {"template": _template("h")},
        "workerGroupSpecs": [{"groupName": "w", "replicas": 1, "template": _template("w")}],
    },
)
ARGO = _workload(
    "argoproj.io/v1alpha1",
    "Workflow",
    "wf",
    {
        "entrypoint": "main",
        "templates": [
            {"name": "main", "steps": [[{"name": "a", "template": "work"}]]},
            {"name": "work", "container": {"image": "busybox"}},
        ],
    },
)
PYTORCH = _workload(
    "kubeflow.org/v1",
    "PyTorchJob",
    "pt",
    {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": _template("pytorch")}}},
)
JOBSET = _workload(
    "jobset.x-k8s.io/v1alpha2",
    "JobSet",
    "js",
    {
        "replicatedJobs": [
            {"name": "w", "replicas": 1, "template": {"spec": {"template": _template("c")}}}
        ]
    },
)
TFJOB = _workload(
    "kubeflow.org/v1",
    "TFJob",
    "tf",
    {"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": _template("tensorflow")}}},
)
KNATIVE = _workload(
    "serving.knative.dev/v1",
    "Service",
    "kn",
    {"template": {"spec": {"containers": [{"image": "hello"}]}}},
)


CASES = [
    (
        replaced(RAY, ("spec", "workerGroupSpecs", 0, "template"), "12"),
        "RayCluster ns/rc",
        "field spec.workerGroupSpecs[0].template: expected an object, got '12'",
    ),
    (
        replaced(RAY, ("spec", "headGroupSpec", "template", "metadata"), [1]),
        "RayCluster ns/rc",
        "field spec.headGroupSpec.template.metadata: expected an object, got [1]",
    ),
    (
        replaced(ARGO, ("spec", "templates", 0, "steps", 0, 0), True),
        "Workflow ns/wf",
        "field spec.templates[0].steps[0][0]: expected a map, got true",
    ),
    (
        replaced(ARGO, ("spec", "templates", 1, "container"), [1, "two"]),
        "Workflow ns/wf",
        "field spec.templates[1].container: expected an object, got [1, 'two']",
    ),
    (
        replaced(PYTORCH, ("spec", "pytorchReplicaSpecs", "Worker", "template"), 7),
        "PyTorchJob ns/pt",
        "field spec.pytorchReplicaSpecs.Worker.template: expected an object, got 7",
    ),
    (
        replaced(PYTORCH, ("spec", "pytorchReplicaSpecs", "Worker", "replicas"), 2**31),
        "PyTorchJob ns/pt",
        "field spec.pytorchReplicaSpecs.Worker.replicas: must be <= 2147483647, got 2147483648",
    ),
    (
        replaced(PYTORCH, ("spec", "pytorchReplicaSpecs", "Worker", "replicas"), 2**31 - 1),
        "PyTorchJob ns/pt",
        "field spec.pytorchReplicaSpecs.Worker.replicas: 2147483647 is more than the 100000"
        " pods podmuster synthesizes offline",
    ),
    (
        replaced(PYTORCH, ("spec", "pytorchReplicaSpecs", "Worker"), 3),
        "PyTorchJob ns/pt",
        "field spec.pytorchReplicaSpecs.Worker: expected an object, got 3",
    ),
    (
        replaced(TFJOB, ("spec", "tfReplicaSpecs", "Worker"), 3),
        "TFJob ns/tf",
        "field spec.tfReplicaSpecs.Worker: expected an object, got 3",
    ),
    (
        replaced(ARGO, ("spec", "templates", 0, "steps"), 7),
        "Workflow ns/wf",
        "field spec.templates[0].steps: expected a list, got 7",
    ),
    (
        replaced(ARGO, ("spec", "templates", 0, "steps"), [{"name": "a", "template": "work"}]),
        "Workflow ns/wf",
        "field spec.templates[0].steps[0]: expected a list, got {'name': 'a', 'template': 'work'}",
    ),
    (
        replaced(ARGO, ("spec", "templates", 0), {"name": "main", "dag": {"tasks": 5}}),
        "Workflow ns/wf",
        "field spec.templates[0].dag.tasks: expected a list, got 5",
    ),
    (
        replaced(RAY, ("spec", "workerGroupSpecs", 0), 3),
        "RayCluster ns/rc",
        "field spec.workerGroupSpecs[0]: expected an object, got 3",
    ),
    (
        replaced(JOBSET, ("spec", "replicatedJobs", 0), 3),
        "JobSet ns/js",
        "field spec.replicatedJobs[0]: expected an object, got 3",
    ),
    (
        replaced(JOBSET, ("spec", "replicatedJobs", 0, "template", "spec"), "12"),
        "JobSet ns/js",
        "field spec.replicatedJobs[0].template.spec: expected an object, got '12'",
    ),
    (
        replaced(JOBSET, ("spec", "replicatedJobs", 0, "template", "spec", "template"), 10**30),
        "JobSet ns/js",
        "field spec.replicatedJobs[0].template.spec.template: expected an object, got "
        + repr(10**30),
    ),
    (
        {**_workload("v1", "Pod", "p", {**_template("c")["spec"], "priorityClassName": [1]})},
        "Pod ns/p",
        "field spec.priorityClassName: expected a string, got [1]",
    ),
    (
        replaced(KNATIVE, ("spec", "template", "metadata"), 3),
        "Service ns/kn",
        "field spec.template.metadata: expected an object, got 3",
    ),
    (
        replaced(ARGO, ("spec", "templates", 1), "work"),
        "Workflow ns/wf",
        "field spec.templates[1]: expected an object, got 'work'",
    ),
    # the field of the manifest written, not of the object made from it
    (
        _workload("apps/v1", "Deployment", "dep", {"replicas": -1, "template": _template("c")}),
        "Deployment ns/dep",
        "field spec.replicas: must be >= 0, got -1",
    ),
    (
        _workload(
            "ray.io/v1",
            "RayJob",
            "rj",
            {"rayClusterSpec": {**RAY["spec"], "workerGroupSpecs": [3]}},
        ),
        "RayJob ns/rj",
        "field spec.rayClusterSpec.workerGroupSpecs[0]: expected an object, got 3",
    ),
    (  # found when its PodGroup is made, from the RayCluster synthesized for it
        replaced(
            _workload("ray.io/v1", "RayJob", "rj", {"rayClusterSpec": RAY["spec"]}),
            ("spec", "rayClusterSpec", "workerGroupSpecs", 0, "template", "metadata"),
            {"annotations": {"kai.scheduler/topology-required-placement": "rack"}},
        ),
        "RayJob ns/rj",
        "field spec.rayClusterSpec.workerGroupSpecs[0].template.metadata.annotations: "
        "a placement annotation needs kai.scheduler/topology",
    ),
    (
        _workload(
            "batch/v1",
            "CronJob",
            "cj",
            {"jobTemplate": {"spec": {"parallelism": -3, "template": _template("c")}}},
        ),
        "CronJob ns/cj",
        "field spec.jobTemplate.spec.parallelism: must be >= 0, got -3",
    ),
]


@pytest.mark.parametrize(("broken", "obj", "message"), CASES)
def test_one_error_naming_the_field_and_the_rest_grouped(
    broken: dict[str, Any], obj: str, message: str
) -> None:
    result = group_workloads([broken, GOOD])
    assert [(e.object, detail(e)) for e in result.errors] == [(obj, message)]
    owners = {ref["name"] for g in result.pod_groups for ref in g["metadata"]["ownerReferences"]}
    assert owners == {"good"}
