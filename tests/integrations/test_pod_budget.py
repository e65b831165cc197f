"""The one cap on pods synthesized offline per workload (``templates.MAX_SYNTHESIZED``).

Why: each count alone is capped, but KubeRay ``replicas`` times ``numOfHosts``, JobSet
``replicas`` times Job ``parallelism``, LWS ``replicas`` times ``size`` and counts added up over
groups could still ask ``podmuster group`` / ``simulate`` for billions of pods. Each
such workload must be one error naming it and its counts, while the others are served
(fixtures/multiplied-counts.yaml, through the library and through the CLI).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml
from adapter_builders import FIXTURES, families, with_field

from integrations import templates
from integrations.grouping import group_workloads
from podmuster.cli import main

TOO_MANY = {
    "RayCluster research/tpu-slices": (
        "spec.workerGroupSpecs[0].replicas=50000",
        "spec.workerGroupSpecs[0].numOfHosts=50000",
    ),
    "JobSet research/sweep": (
        "spec.replicatedJobs[0].replicas=90000",
        "spec.replicatedJobs[0].template.spec.parallelism=90000",
    ),
    "LeaderWorkerSet inference/serving": (
        "spec.replicas=70000",
        "spec.leaderWorkerTemplate.size=70000",
    ),
    "RayCluster research/two-big-groups": (
        "spec.workerGroupSpecs[0].replicas=60000",
        "spec.workerGroupSpecs[1].replicas=60000",
    ),
}
LIMIT = f"more than the {templates.MAX_SYNTHESIZED} pods podmuster synthesizes offline"


def test_multiplied_counts_are_one_error_each_and_the_rest_is_grouped(
    fixture: Callable[[str], list[dict[str, Any]]],
) -> None:
    result = group_workloads(fixture("multiplied-counts.yaml"))
    errors = {e.object: e.message for e in result.errors}
    assert set(errors) == set(TOO_MANY)
    for workload, counts in TOO_MANY.items():
        assert errors[workload].startswith(f"{workload} field "), errors[workload]
        for read in counts:
            assert read in errors[workload]
        assert LIMIT in errors[workload]
    # the fine LeaderWorkerSet: 4 groups of 8 pods, nothing of the others
    assert len(result.pod_groups) == 4
    assert all(g["metadata"]["name"].startswith("pg-small-serving-") for g in result.pod_groups)
    assert len(result.pods) == 4 * 8


def lws(replicas: int, size: int) -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "lws", "namespace": "ml"},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": size,
                "workerTemplate": {"spec": {"containers": [{"name": "w", "image": "x"}]}},
            },
        },
    }


@pytest.mark.parametrize(
    ("replicas", "size", "refused"),
    [(10, 10, False), (10, 11, True), (1, 101, True), (101, 1, True), (100, 1, False)],
)
def test_the_cap_is_on_the_total_not_on_each_count(
    monkeypatch: pytest.MonkeyPatch, replicas: int, size: int, refused: bool
) -> None:
    monkeypatch.setattr(templates, "MAX_SYNTHESIZED", 100)
    result = group_workloads([lws(replicas, size)])
    assert bool(result.errors) == refused, result.errors
    assert len(result.pods) == (0 if refused else replicas * size)


def test_cli_reports_each_and_serves_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / "multiplied-counts.yaml"
    assert main(["group", str(path)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == len(TOO_MANY), lines
    for workload, counts in TOO_MANY.items():
        (line,) = [ln for ln in lines if ln.startswith(f"podmuster: {path}: {workload}: ")]
        assert all(read in line for read in counts), line
        assert LIMIT in line, line
    groups = yaml.safe_load(captured.out)["items"]
    assert {g["metadata"]["namespace"] for g in groups} == {"inference"}
    assert len(groups) == 4
    assert all(g["metadata"]["name"].startswith("pg-small-serving-") for g in groups)


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the pods synthesized (``templates.make_pod`` calls) from now on."""
    names: list[str] = []
    make_pod = templates.make_pod

    def counted(template: Any, name: str, owner: Any, **kwargs: Any) -> dict[str, Any]:
        names.append(name)
        return make_pod(template, name, owner, **kwargs)

    monkeypatch.setattr(templates, "make_pod", counted)
    return names


def test_too_many_pods_are_refused_before_the_first_is_built(
    fixture: Callable[[str], list[dict[str, Any]]], built: list[str]
) -> None:
    """A total known from the counts is refused up front: the four workloads of billions
    of pods cost no pod each (they built 100,000 first, about 1.7 s each), the fine one
    its 32."""
    result = group_workloads(fixture("multiplied-counts.yaml"))
    assert set(e.object for e in result.errors) == set(TOO_MANY)
    assert len(built) == 4 * 8
    assert all(name.startswith("small-serving-") for name in built)


NESTED_SEQUENCES = [
    {
        "name": "sweep",
        "steps": [[{"name": "trial", "template": "seeds", "withSequence": {"count": "11"}}]],
    },
    {
        "name": "seeds",
        "steps": [[{"name": "seed", "template": "main", "withSequence": {"count": 10}}]],
    },
    {"name": "main", "container": {"image": "busybox"}},
]

OVER_100: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    (
        "LeaderWorkerSet",
        {"spec.replicas": 11, "spec.leaderWorkerTemplate.size": 10},
        ("spec.replicas=11", "spec.leaderWorkerTemplate.size=10"),
    ),
    (
        "JobSet",
        {
            "spec.replicatedJobs[0].replicas": 11,
            "spec.replicatedJobs[0].template.spec.parallelism": 10,
            "spec.replicatedJobs[0].template.spec.completions": 10,
        },
        (
            "spec.replicatedJobs[0].replicas=11",
            "spec.replicatedJobs[0].template.spec.parallelism=10",
        ),
    ),
    (
        "RayCluster",
        {"spec.workerGroupSpecs[0].replicas": 11, "spec.workerGroupSpecs[0].numOfHosts": 10},
        ("spec.workerGroupSpecs[0].replicas=11", "spec.workerGroupSpecs[0].numOfHosts=10"),
    ),
    ("RayCluster", {"spec.workerGroupSpecs[0].replicas": 100}, ("replicas=100",)),  # + head
    (
        "PyTorchJob",
        {"spec.pytorchReplicaSpecs.Worker.replicas": 100},  # + the master
        ("spec.pytorchReplicaSpecs.Worker.replicas=100",),
    ),
    (
        "PodCliqueSet",
        {"spec.replicas": 11, "spec.template.cliques[0].spec.replicas": 10},
        ("spec.replicas=11", "spec.template.cliques[0].spec.replicas=10"),
    ),
    (
        "PodCliqueSet",
        {
            "spec.template.cliques[0].spec.replicas": 10,
            "spec.template.podCliqueScalingGroups": [
                {"name": "prefill-sg", "replicas": 11, "cliqueNames": ["prefill"]}
            ],
        },
        ("spec.template.podCliqueScalingGroups[0].replicas=11", "cliques[0].spec.replicas=10"),
    ),
    ("SparkApplication", {"spec.executor.instances": 100}, ("instances=100",)),  # + driver
    (
        "Workflow",
        {"spec.entrypoint": "sweep", "spec.templates": NESTED_SEQUENCES},
        (
            "spec.templates[0].steps[0][0].withSequence.count=11",
            "spec.templates[1].steps[0][0].withSequence.count=10",
        ),
    ),
]
"""(kind, fields set on its family's workload, the counts its error names): each count
within a cap of 100 pods, their product or sum (with a head, master or driver) above it."""


@pytest.mark.parametrize(("kind", "changes", "named"), OVER_100)
def test_each_kind_refuses_its_total_before_building(
    monkeypatch: pytest.MonkeyPatch,
    built: list[str],
    kind: str,
    changes: dict[str, Any],
    named: tuple[str, ...],
) -> None:
    monkeypatch.setattr(templates, "MAX_SYNTHESIZED", 100)
    doc = families()[kind]
    for field, value in changes.items():
        doc = with_field(doc, field, value)
    job = families()["Job"]
    result = group_workloads([doc, job])
    (error,) = result.errors
    assert error.object == f"{kind} {doc['metadata']['namespace']}/{doc['metadata']['name']}"
    assert all(count in error.message for count in named), error.message
    assert "more than the 100 pods podmuster synthesizes offline" in error.message
    assert built == [p["metadata"]["name"] for p in result.pods]  # the Job's, none of doc's
    assert len(built) == 2


@pytest.mark.parametrize(
    ("count", "error"),
    [
        ("2147483647", "2147483647 is more than the 100000 pods"),
        (-1, "must be >= 0, got -1"),
        ("{{inputs.parameters.n}}", None),  # decided at run time: one pass, as before
        ("3", None),
    ],
)
def test_an_argo_sequence_count_is_a_replica_count(count: Any, error: str | None) -> None:
    calls = [[{"name": "seed", "template": "main", "withSequence": {"count": count}}]]
    steps = [{"name": "sweep", "steps": calls}, NESTED_SEQUENCES[-1]]
    doc = families()["Workflow"]
    doc = with_field(with_field(doc, "spec.templates", steps), "spec.entrypoint", "sweep")
    result = group_workloads([doc])
    if error is None:
        assert not result.errors
        assert len(result.pods) == (3 if count == "3" else 1)
        return
    (found,) = result.errors
    assert found.message == (
        f"Workflow data/pipeline field spec.templates[0].steps[0][0].withSequence.count: {error}"
        + ("" if count == -1 else " podmuster synthesizes offline")
    )
