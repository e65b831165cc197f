"""Labels and annotations that are not a map are an error naming the object and field.

Why: read as empty, a list or a string in ``metadata.labels`` (``[kai.scheduler/queue=a]``)
loses the queue, priority or min-member it was meant to carry, and the workload is
grouped on a guess with no word. One table over every adapter family
(fixtures/adapter-families.yaml: one valid workload each) breaks one field at a time,
on the workload itself and on its pod template (or the family's own label fields);
each must be one error naming the object and the field, while a workload beside it is
still grouped.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from adapter_builders import FIXTURES, families, with_field, with_its_pod

from integrations.grouping import group_workloads
from podmuster.cli import main

FAMILIES = families()
AS_LIST = ["kai.scheduler/queue=team-a"]
AS_TEXT = "kai.scheduler/queue: team-a"

ROWS: list[tuple[str, str, Any]] = [
    ("Job", "metadata.labels", AS_LIST),
    ("Job", "spec.template.metadata.labels", AS_LIST),
    ("Deployment", "metadata.annotations", AS_TEXT),
    ("Deployment", "spec.template.metadata.annotations", AS_TEXT),
    ("CronJob", "spec.jobTemplate.metadata.labels", AS_LIST),
    ("PyTorchJob", "metadata.labels", AS_TEXT),
    ("PyTorchJob", "spec.pytorchReplicaSpecs.Worker.template.metadata.labels", AS_LIST),
    ("RayCluster", "metadata.annotations", AS_LIST),
    ("RayCluster", "spec.workerGroupSpecs[0].template.metadata.labels", AS_LIST),
    ("JobSet", "metadata.labels", AS_LIST),
    ("JobSet", "spec.replicatedJobs[0].template.metadata.annotations", AS_TEXT),
    ("LeaderWorkerSet", "metadata.labels", AS_LIST),
    ("LeaderWorkerSet", "spec.leaderWorkerTemplate.workerTemplate.metadata.labels", AS_TEXT),
    ("PodCliqueSet", "metadata.annotations", AS_TEXT),
    ("PodCliqueSet", "spec.template.cliques[0].labels", AS_LIST),
    ("Service", "metadata.labels", AS_LIST),
    ("Service", "spec.template.metadata.annotations", AS_LIST),
    ("SparkApplication", "metadata.labels", AS_TEXT),
    ("SparkApplication", "spec.driver.labels", AS_LIST),
    ("Workflow", "metadata.labels", AS_LIST),
    ("Workflow", "spec.templates[0].metadata.labels", AS_TEXT),
    ("Widget", "metadata.labels", AS_LIST),
    ("Widget", "spec.template.metadata.annotations", AS_TEXT),
]
"""(kind, field, what it is set to): the field as the error names it."""


def broken(kind: str, field: str, value: Any) -> dict[str, Any]:
    """The family's workload with ``field`` (``a.b[0].c``) set to ``value``."""
    return with_field(FAMILIES[kind], field, value)


def bystander() -> dict[str, Any]:
    doc = copy.deepcopy(FAMILIES["Job"])
    doc["metadata"]["name"] = "bystander"
    return doc


def where(doc: dict[str, Any]) -> str:
    return f"{doc['kind']} {doc['metadata']['namespace']}/{doc['metadata']['name']}"


def test_the_table_covers_every_family() -> None:
    assert {kind for kind, *_ in ROWS} == set(FAMILIES)


@pytest.mark.parametrize(("kind", "field", "value"), ROWS)
def test_not_a_map_is_one_error_naming_object_and_field(kind: str, field: str, value: Any) -> None:
    doc = broken(kind, field, value)
    result = group_workloads([doc, bystander()])
    assert [e.object for e in result.errors] == [where(doc)], result.errors
    # a template's labels and annotations are read as the object's own (crds.metadata)
    assert result.errors[0].message == (
        f"{where(doc)} field {field}: expected a map of strings, got {value!r}"
    )
    assert any(g["metadata"]["name"].startswith("pg-bystander-") for g in result.pod_groups)


EXTRA_ROWS: list[tuple[str, str]] = [
    ("RayCluster", "spec.headGroupSpec.template.metadata.annotations"),
    ("JobSet", "spec.replicatedJobs[0].template.spec.template.metadata.labels"),
    ("PodCliqueSet", "spec.template.cliques[0].annotations"),
    ("SparkApplication", "spec.executor.annotations"),
    ("Workflow", "spec.podMetadata.labels"),
]
"""More template label fields of the families, beside those of :data:`ROWS`."""


@pytest.mark.parametrize(("kind", "field"), [(kind, field) for kind, field, _ in ROWS] + EXTRA_ROWS)
def test_a_value_that_is_no_string_is_one_error_naming_its_key(kind: str, field: str) -> None:
    """``tier: 1`` in a pod template's labels is an error at ``...labels[tier]``, the
    same line as in the object's own labels: the API server refuses both, and a number
    copied onto a pod would make a pod no cluster can hold."""
    doc = broken(kind, field, {"tier": 1})
    result = group_workloads([doc, bystander()])
    assert [e.message for e in result.errors] == [
        f"{where(doc)} field {field}[tier]: expected a string, got 1"
    ]
    assert any(g["metadata"]["name"].startswith("pg-bystander-") for g in result.pod_groups)


@pytest.mark.parametrize(("kind", "field"), EXTRA_ROWS)
def test_more_template_fields_not_a_map(kind: str, field: str) -> None:
    doc = broken(kind, field, AS_LIST)
    result = group_workloads([doc, bystander()])
    assert [e.message for e in result.errors] == [
        f"{where(doc)} field {field}: expected a map of strings, got {AS_LIST!r}"
    ]


def test_a_pod_given_with_its_workload() -> None:
    """Pods met as they are (not synthesized) go through the same reader."""
    job = FAMILIES["Job"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "etl-x1",
            "namespace": "data",
            "labels": AS_LIST,
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "etl", "uid": "u-etl"}
            ],
        },
        "spec": job["spec"]["template"]["spec"],
    }
    owned = {**copy.deepcopy(job), "metadata": {**job["metadata"], "uid": "u-etl"}}
    result = group_workloads([owned, pod, bystander()])
    # reported against the workload the pod belongs to, naming the pod and its field
    assert [e.object for e in result.errors] == ["Job data/etl"]
    assert result.errors[0].message.startswith(
        "Pod data/etl-x1 field metadata.labels: expected a map of strings"
    )
    assert len(result.pod_groups) == 1  # the bystander's


def test_cli_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = broken("RayCluster", "metadata.labels", AS_LIST)
    path = tmp_path / "work.yaml"
    path.write_text(yaml.safe_dump_all([doc, bystander()]))
    assert main(["group", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"podmuster: {path}: RayCluster research/tune: metadata.labels: expected a map of"
        f" strings, got {AS_LIST!r}"
    ]
    assert len(yaml.safe_load(captured.out)["items"]) == 1


@pytest.mark.parametrize("metadata", [["name", "etl"], "etl", 3])
def test_metadata_not_a_map_is_an_error_not_a_made_up_name(metadata: Any) -> None:
    """Called directly (no document loader before it), an object whose ``metadata`` is not
    a map is one error naming it by kind and the field; it was given a generated name and
    grouped as if it had said nothing."""
    doc = {**copy.deepcopy(FAMILIES["Job"]), "metadata": metadata}
    result = group_workloads([doc, bystander()])
    assert [(e.object, e.message) for e in result.errors] == [
        ("Job", f"Job field metadata: expected a map, got {metadata!r}")
    ]
    assert [g["metadata"]["name"].startswith("pg-bystander-") for g in result.pod_groups] == [True]


GIVEN_POD_LABELS = {
    "RayCluster": {"ray.io/cluster": "tune", "ray.io/group": "headgroup"},
    "PyTorchJob": {"training.kubeflow.org/replica-type": "worker"},
    "LeaderWorkerSet": {
        "leaderworkerset.sigs.k8s.io/name": "vllm",
        "leaderworkerset.sigs.k8s.io/worker-index": "1",
    },
}


@pytest.mark.parametrize(
    ("kind", "field", "value", "error"),
    [
        (
            "RayCluster",
            "spec.workerGroupSpecs[0].template.metadata.annotations",
            AS_LIST,
            f": expected a map of strings, got {AS_LIST!r}",
        ),
        (
            "PyTorchJob",
            "spec.pytorchReplicaSpecs.Worker.template.metadata.annotations",
            {"tier": 1},
            "[tier]: expected a string, got 1",
        ),
        (
            "LeaderWorkerSet",
            "spec.leaderWorkerTemplate.workerTemplate.metadata.annotations",
            {"tier": 1},
            "[tier]: expected a string, got 1",
        ),
    ],
)
def test_a_template_read_while_grouping_a_given_pod(
    kind: str, field: str, value: Any, error: str
) -> None:
    """A workload given with its pod is not synthesized: its grouper reads the template's
    annotations itself (a RayCluster's topology, a PyTorchJob's or LWS's segment size),
    where a list was read as none and a number passed as a string."""
    doc, owned = with_its_pod(broken(kind, field, value), GIVEN_POD_LABELS[kind])
    result = group_workloads([doc, owned, bystander()])
    assert [e.message for e in result.errors] == [f"{where(doc)} field {field}{error}"]
    assert len(result.pod_groups) == 1  # the bystander's


def test_a_rayjob_cluster_selector_is_a_map_of_strings() -> None:
    """``spec.clusterSelector`` names the RayCluster's labels: a number there is an error
    at its key, not a selector no label can match."""
    rayjob = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "sweep", "namespace": "research"},
        "spec": {"entrypoint": "python sweep.py", "clusterSelector": {"ray.io/cluster": 7}},
    }
    result = group_workloads([rayjob, bystander()])
    assert [e.message for e in result.errors] == [
        "RayJob research/sweep field spec.clusterSelector[ray.io/cluster]: expected a string, got 7"
    ]


def test_a_training_runtimes_job_template_labels() -> None:
    """The trainer's replicatedJob is told by its Job template's labels: not a map of
    strings, the error names the runtime and the field (it named an unnamed ``object``)."""
    docs = list(yaml.safe_load_all((FIXTURES / "trainjob-runtimes.yaml").read_text()))
    runtime = docs[0]
    field = "spec.template.spec.replicatedJobs[0].template.metadata.labels"
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["metadata"] = {
        "labels": AS_LIST
    }
    result = group_workloads(docs)
    assert [e.message for e in result.errors] == [
        f"ClusterTrainingRuntime mpi-pretrain field {field}: expected a map of strings,"
        f" got {AS_LIST!r}"
    ]
    assert [e.object for e in result.errors] == ["TrainJob nlp/bert-pretrain"]
    assert result.pod_groups  # the other TrainJob's
