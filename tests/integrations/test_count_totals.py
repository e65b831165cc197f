"""A PodGroup count an adapter multiplies or adds up must fit the PodGroup: an error if not.

Why: each count is an int32, as the API server has it, but a RayCluster's ``replicas`` times
``numOfHosts``, or the replicas of a PyTorchJob's Master and Worker added up, can pass
2147483647. Grouping the pods of such a workload (given with its pods, as in a cluster
dump, or live) built a PodGroup whose ``minMember`` the model refuses, and the whole
``podmuster group`` stopped with a traceback. It must be one error naming the workload
and its counts, while the other workloads are grouped.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from adapter_builders import ctx, families, group, subgroups, with_field, with_its_pod
from test_lws_adapter import lws, lws_pod

from integrations import base
from integrations.grouping import group_workloads
from podmuster.cli import main

HOLDS = "the most a PodGroup's minMember holds"
WORKER = {
    "training.kubeflow.org/replica-type": "worker",
    "training.kubeflow.org/replica-index": "0",
}
HEAD = {"ray.io/cluster": "tune", "ray.io/group": "headgroup"}

CASES: list[tuple[str, dict[str, Any], dict[str, str], str]] = [
    (
        "RayCluster",
        {"spec.workerGroupSpecs[0].replicas": 50000, "spec.workerGroupSpecs[0].numOfHosts": 50000},
        HEAD,
        "field spec.workerGroupSpecs[0].replicas=50000, spec.workerGroupSpecs[0].numOfHosts=50000:"
        " these counts, multiplied and added up, make 2500000000",
    ),
    (
        "RayCluster",
        {"spec.workerGroupSpecs[0].replicas": 2147483647},  # and the head
        HEAD,
        "field spec.workerGroupSpecs: these counts, multiplied and added up, make 2147483648",
    ),
    (
        "PyTorchJob",
        {"spec.pytorchReplicaSpecs.Worker.replicas": 2147483647},  # and the master
        WORKER,
        "field spec.pytorchReplicaSpecs.Master.replicas=1,"
        " spec.pytorchReplicaSpecs.Worker.replicas=2147483647: these counts, multiplied and"
        " added up, make 2147483648",
    ),
]


def given_with_its_pod(kind: str, changes: dict[str, Any], labels: dict[str, str]) -> list[Any]:
    """The family's workload with ``changes``, and one pod it owns (not synthesized)."""
    doc = families()[kind]
    for field, value in changes.items():
        doc = with_field(doc, field, value)
    return with_its_pod(doc, labels)


@pytest.mark.parametrize(("kind", "changes", "labels", "error"), CASES)
def test_a_total_above_int32_is_one_error_naming_the_counts(
    kind: str, changes: dict[str, Any], labels: dict[str, str], error: str
) -> None:
    doc, owned = given_with_its_pod(kind, changes, labels)
    bystander = families()["Job"]
    result = group_workloads([doc, owned, bystander])
    where = f"{kind} {doc['metadata']['namespace']}/{doc['metadata']['name']}"
    assert [e.object for e in result.errors] == [where]
    assert result.errors[0].message.startswith(f"{where} {error}: more than 2147483647")
    assert result.errors[0].message.endswith(HOLDS)
    assert [g["metadata"]["name"].startswith("pg-etl-") for g in result.pod_groups] == [True]


def test_at_int32_it_is_grouped() -> None:
    changes = {"spec.workerGroupSpecs[0].replicas": 2147483646}
    result = group_workloads(given_with_its_pod("RayCluster", changes, HEAD))
    assert not result.errors
    assert [g["spec"]["minMember"] for g in result.pod_groups] == [2147483647]


def test_cli_line_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "dump.yaml"
    kind, changes, labels, error = CASES[0]
    path.write_text(yaml.safe_dump_all([*given_with_its_pod(kind, changes, labels)]))
    assert main(["group", str(path)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"podmuster: {path}: RayCluster research/tune: {error}")


def test_a_podgang_whose_min_replicas_add_up_past_int32(
    fixture: Callable[[str], list[dict[str, Any]]],
) -> None:
    """The PodGroup of a PodGang needs the sum of its PodCliques' ``minReplicas``."""
    objects = fixture("grove-disaggregated.yaml")
    (gang,) = [o for o in objects if o["kind"] == "PodGang" and o["metadata"]["name"] == "svc-0"]
    gang["spec"]["podgroups"][0]["minReplicas"] = 2147483647
    result = group_workloads(objects)
    assert {e.message for e in result.errors} == {
        "PodGang serving/svc-0 field spec.podgroups[*].minReplicas: these counts, multiplied"
        f" and added up, make 2147483651: more than 2147483647, {HOLDS}"
    }
    assert [g["metadata"]["ownerReferences"][0]["name"] for g in result.pod_groups] == [
        "svc-0-prefill-0"
    ]  # the scaled PodGang's group is still made


JOBSET_POD = {
    "jobset.sigs.k8s.io/jobset-name": "pretrain",
    "jobset.sigs.k8s.io/replicatedjob-name": "workers",
    "jobset.sigs.k8s.io/job-index": "0",
}
SEGMENTED = "spec.pytorchReplicaSpecs.Worker.template.metadata.annotations"


@pytest.mark.parametrize(
    ("kind", "changes", "labels", "error"),
    [
        (
            "JobSet",
            {"spec.replicatedJobs[0].replicas": 2147483647},
            JOBSET_POD,
            "field spec.replicatedJobs[0].replicas=2147483647: these counts make 2147483648"
            " subgroups",
        ),
        (
            "PyTorchJob",
            {
                "spec.pytorchReplicaSpecs.Worker.replicas": 2147483646,
                SEGMENTED: {"kai.scheduler/segment-size": "2"},
            },
            WORKER,
            "field spec.pytorchReplicaSpecs.Worker.replicas=2147483646, segment size=2: these"
            " counts make 1073741823 subgroups",
        ),
    ],
)
def test_a_subgroup_per_count_is_capped(
    kind: str, changes: dict[str, Any], labels: dict[str, str], error: str
) -> None:
    """One subgroup per Job replica or worker segment: int32 counts asked for billions,
    and grouping the workload's pod hung building them."""
    doc, owned = given_with_its_pod(kind, changes, labels)
    result = group_workloads([doc, owned, families()["Job"]])
    where = f"{kind} {doc['metadata']['namespace']}/{doc['metadata']['name']}"
    assert [e.message for e in result.errors] == [
        f"{where} {error}: more than 100000, the most podmuster writes in one PodGroup"
    ]
    assert [g["metadata"]["name"].startswith("pg-etl-") for g in result.pod_groups] == [True]


def test_an_lws_group_of_two_billion_pods_is_cut_without_walking_them() -> None:
    """Segments are counted from the size, not pod by pod (the grouping of one pod walked
    all 2147483647 workers); too many segments is the cap's error."""
    big = 2**31 - 1
    the_lws = lws(big, policy={"subGroupSize": 2**30})
    spec = group(ctx(the_lws, lws_pod(7, the_lws)))
    assert subgroups(spec) == [
        ("segment-0", 2, None),
        ("leader", 1, "segment-0"),
        ("workers", 2**30 - 1, "segment-0"),
        ("segment-1", 2**30 - 1, None),
    ]
    assert spec.subgroup_of("l-0-7") == "workers"
    many = lws(big, policy={"subGroupSize": 2})
    with pytest.raises(base.GroupingError) as raised:
        group(ctx(many, lws_pod(0, many)))
    assert str(raised.value).endswith(
        "field spec.leaderWorkerTemplate.size=2147483647, segment size=2: these counts make"
        " 1073741823 subgroups: more than 100000, the most podmuster writes in one PodGroup"
    )
