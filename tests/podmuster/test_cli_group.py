"""``podmuster group`` (docs/cli.md §3): List output, --pods, JSON, errors that spare the rest.

Covers: a RayCluster becomes one PodGroup with headgroup/worker sub-groups and
synthesized pods; --pods in YAML (second document) and JSON (a ``pods`` key);
generateName objects (Argo) get stable names; a broken workload is reported
on stderr with its file while the other workload is still printed (exit 2).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from podmuster.cli import main

RAY = """
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc, namespace: team-a, labels: {kai.scheduler/queue: research}}
spec:
  headGroupSpec:
    template:
      spec:
        schedulerName: kai-scheduler
        containers: [{name: head, image: ray, resources: {limits: {cpu: "2"}}}]
  workerGroupSpecs:
  - groupName: gpu
    replicas: 4
    minReplicas: 2
    numOfHosts: 2
    template:
      spec:
        schedulerName: kai-scheduler
        containers: [{name: w, image: ray, resources: {limits: {nvidia.com/gpu: "1"}}}]
"""

BROKEN = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: broken, namespace: team-a}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: -3
      template: {spec: {containers: [{name: c, image: x}]}}
"""

WORKFLOW = """
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {generateName: hello-, namespace: default}
spec:
  entrypoint: main
  templates:
  - name: main
    container: {image: busybox}
"""


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_ray_cluster_groups_with_subgroups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["group", _write(tmp_path, "ray.yaml", RAY)]) == 0
    out = yaml.safe_load(capsys.readouterr().out)
    assert out["kind"] == "List"
    (group,) = out["items"]
    assert group["apiVersion"] == "scheduling.run.ai/v2alpha2"
    assert group["spec"]["queue"] == "research"
    # §4.3: 1 head + minReplicas 2 x numOfHosts 2 = 5
    assert group["spec"]["minMember"] == 5
    subs = {s["name"]: s["minMember"] for s in group["spec"]["subGroups"]}
    assert subs == {"headgroup": 1, "gpu": 4}


def test_pods_as_second_yaml_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["group", "--pods", _write(tmp_path, "ray.yaml", RAY)]) == 0
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    assert len(documents) == 2
    pods = documents[1]["pods"]
    # head + 4 replicas x 2 hosts synthesized from the templates
    assert len(pods) == 9
    assert {p["subGroup"] for p in pods} == {"headgroup", "gpu"}
    assert all(p["podGroup"] == documents[0]["items"][0]["metadata"]["name"] for p in pods)


def test_pods_in_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["group", "--pods", "-o", "json", _write(tmp_path, "ray.yaml", RAY)]) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert out["kind"] == "List"
    assert len(out["items"]) == 1
    assert len(out["pods"]) == 9


def test_generate_name_gets_a_stable_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "wf.yaml", WORKFLOW)
    assert main(["group", "--pods", path]) == 0
    first = capsys.readouterr().out
    assert main(["group", "--pods", path]) == 0
    assert capsys.readouterr().out == first
    pods = list(yaml.safe_load_all(first))[1]["pods"]
    assert pods
    assert all(p["pod"].startswith("default/hello-") for p in pods)


def test_broken_workload_reported_and_others_served(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = _write(tmp_path, "broken.yaml", BROKEN)
    assert main(["group", broken, _write(tmp_path, "ray.yaml", RAY)]) == 2
    captured = capsys.readouterr()
    out = yaml.safe_load(captured.out)
    assert len(out["items"]) == 1  # the RayCluster is still grouped
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"podmuster: {broken}: PyTorchJob team-a/broken: ")
    assert "replicas" in lines[0]


def test_object_that_cannot_be_read_is_one_line_and_others_served(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by the fuzz tests: an object without ``kind`` once stopped the whole command."""
    nameless = "apiVersion: kubeflow.org/v1\nmetadata: {name: odd, namespace: team-a}\n---\n"
    path = _write(tmp_path, "ray.yaml", nameless + RAY)
    assert main(["group", path]) == 2
    captured = capsys.readouterr()
    assert len(yaml.safe_load(captured.out)["items"]) == 1  # the RayCluster is still grouped
    assert captured.err.splitlines() == [
        f"podmuster: {path}: object team-a/odd: kind: missing or not a string"
    ]


def test_unreadable_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["group", str(tmp_path / "missing.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "missing.yaml" in err[0]


SELECTOR_RAYJOB = """
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: on-shared, namespace: team-a}
spec:
  entrypoint: python run.py
  clusterSelector: {ray.io/cluster: shared}
"""


def test_what_is_not_understood_is_one_warning_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "rayjob.yaml", SELECTOR_RAYJOB)
    assert main(["group", path, _write(tmp_path, "ray.yaml", RAY)]) == 0  # warnings only
    captured = capsys.readouterr()
    assert len(yaml.safe_load(captured.out)["items"]) == 1  # the RayCluster
    [line] = captured.err.strip().splitlines()
    assert line.startswith(
        f"podmuster: warning: {path}: RayJob team-a/on-shared: field spec.clusterSelector: "
    )
    assert "existing RayCluster (ray.io/cluster=shared)" in line
