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
from conftest import FIXTURES

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
        "Job spec.parallelism=90000",
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
