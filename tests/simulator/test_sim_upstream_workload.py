"""``podmuster simulate`` on manifests with Kubernetes' own PodGroups: a gang of bare pods
naming a ``podgroups.scheduling.k8s.io`` group is one simulated job, timed by the root
group's annotations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from podmuster.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "integrations" / "fixtures"
CLUSTER = """\
nodes:
  - {name: node, count: 2, gpus: 0, cpu: 8, memory: 32Gi}
queues:
  - {name: research}
"""


def _workloads(tmp_path: Path, drop_pod_group: bool = False) -> Path:
    directory = tmp_path / "workloads"
    directory.mkdir()
    timing = {"simulate.podmuster.io/arrival": "5s", "simulate.podmuster.io/duration": "1m"}
    docs = list(yaml.safe_load_all((FIXTURES / "upstream-gang.yaml").read_text()))
    for doc in docs:
        if doc["kind"] == "PodGroup":
            doc["metadata"]["annotations"] = dict(timing)
    if drop_pod_group:  # then each pod is a workload of its own, timed itself
        docs = [d for d in docs if d["kind"] != "PodGroup"]
        for pod in docs[-1]["items"]:
            pod["metadata"]["annotations"] = dict(timing)
    (directory / "gang.yaml").write_text(yaml.safe_dump_all(docs))
    return directory


def _simulate(
    tmp_path: Path, workloads: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, Any, str]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    code = main(
        ["simulate", "--cluster", str(cluster), "--workloads", str(workloads), "-o", "json"]
    )
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else None, captured.err


def test_upstream_gang_is_one_simulated_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, document, _ = _simulate(tmp_path, _workloads(tmp_path), capsys)
    assert code == 0
    assert document["jobs"] == 1
    assert document["completed"] == 1
    assert set(document["queues"]) == {"research"}


def test_pods_whose_podgroup_is_missing_are_named_and_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _simulate(tmp_path, _workloads(tmp_path, drop_pod_group=True), capsys)
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 3  # each pod named, with the group it misses
    assert all("podgroups.scheduling.k8s.io team-a/trainer-workers not found" in x for x in lines)
