"""``simulate --workloads`` on framework manifests written as their users write them.

Why: the manifests a Ray or Kubeflow Trainer user has do not name KAI's scheduler
where podmuster's synthesis looked for it. KubeRay's KAI guide labels the RayCluster
(or the RayJob) with its queue and leaves the pod templates alone: KubeRay's
kai-scheduler plugin sets each pod's ``schedulerName``. A TrainJob names a
ClusterTrainingRuntime that sits beside it in the directory, as it sits in the
cluster. Both were once refused ("its pods must use schedulerName", "not found").
The fixtures (``fixtures/framework-workloads``) are small hand-written cases of each
form: a labelled RayCluster and RayJob, an unlabelled RayCluster whose template names
no scheduler, and a TrainJob with its runtime in another file, beside one whose
runtime does not exist.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from integrations.grouping import group_workloads
from podmuster.cli import main

CLUSTER = """\
nodes:
  - {name: node, count: 4, gpus: 2, cpu: 16, memory: 64Gi}
queues:
  - {name: team-a}
  - {name: team-b}
"""


def _simulate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, workloads: Path
) -> tuple[int, dict[str, Any], list[str]]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    code = main(
        ["simulate", "--cluster", str(cluster), "--workloads", str(workloads), "-o", "json"]
    )
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err.splitlines()


def test_kuberay_and_trainer_manifests_are_simulated_as_their_operators_run_them(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workloads = fixtures / "framework-workloads"
    code, document, err = _simulate(capsys, tmp_path, workloads)
    assert code == 2  # the two bad workloads below; the others are simulated
    assert sorted(err) == [
        f"podmuster: {workloads / 'ray-plain.yaml'}: RayCluster ml/plain: spec.schedulerName: "
        "its pods must use schedulerName 'kai-scheduler' to be simulated",
        f"podmuster: {workloads / 'trainjob.yaml'}: TrainJob ml/orphan: field spec.runtimeRef: "
        "ClusterTrainingRuntime 'nowhere' not found",
    ]
    results = {r["name"].rsplit("-", 5)[0]: r for r in document["job_results"]}
    assert sorted(results) == ["ml/pg-chat", "ml/pg-finetune", "ml/pg-tune"]
    assert (document["jobs"], document["completed"]) == (3, 3)
    # the RayCluster's gang (head and two 1-GPU workers) in the queue its label names
    assert (results["ml/pg-chat"]["queue"], results["ml/pg-chat"]["gpus"]) == ("team-a", 2.0)
    # the RayJob's label reaches the RayCluster KubeRay makes for it, and so its pods
    assert (results["ml/pg-tune"]["queue"], results["ml/pg-tune"]["gpus"]) == ("team-b", 2.0)
    # the TrainJob's two nodes, from the runtime in runtime.yaml, each with its 1 GPU
    finetune = results["ml/pg-finetune"]
    assert (finetune["queue"], finetune["gpus"], finetune["end_s"]) == ("team-b", 2.0, 621.0)
    # named as written: the TrainJob, not the JobSet its PodGroup's owner reference names
    assert [results[k]["workload"] for k in sorted(results)] == [
        "RayCluster ml/chat",
        "TrainJob ml/finetune",
        "RayJob ml/tune",
    ]


def test_a_trainjob_without_its_runtime_in_the_directory_is_refused_alone(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workloads = tmp_path / "workloads"
    workloads.mkdir()
    for name in ("trainjob.yaml", "ray-kai.yaml"):
        shutil.copy(fixtures / "framework-workloads" / name, workloads / name)
    code, document, err = _simulate(capsys, tmp_path, workloads)
    assert code == 2
    assert sorted(line.split(": field ")[0].rsplit(": ", 1)[1] for line in err) == [
        "TrainJob ml/finetune",
        "TrainJob ml/orphan",
    ]
    assert document["jobs"] == 1  # the RayCluster


def _pods(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    result = group_workloads(objs)
    assert result.errors == ()
    return list(result.pods)


def test_kuberay_kai_plugin_stamps_the_scheduler_only_on_a_labelled_cluster(
    fixtures: Path,
) -> None:
    (cluster,) = yaml.safe_load_all((fixtures / "framework-workloads" / "ray-kai.yaml").read_text())
    labelled = _pods([cluster])
    assert len(labelled) == 3
    assert {pod["spec"].get("schedulerName") for pod in labelled} == {"kai-scheduler"}
    # the plugin sets it whatever the template says
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["schedulerName"] = "default-scheduler"
    head = [p for p in _pods([cluster]) if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
    assert head[0]["spec"]["schedulerName"] == "kai-scheduler"
    (plain,) = yaml.safe_load_all((fixtures / "framework-workloads" / "ray-plain.yaml").read_text())
    assert [pod["spec"].get("schedulerName") for pod in _pods([plain])] == [None]


JOB_WITH_SCRATCH = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: preprocess
  namespace: ml
  labels: {kai.scheduler/queue: team-a}
  annotations: {simulate.podmuster.io/duration: 2m}
spec:
  template:
    spec:
      schedulerName: kai-scheduler
      restartPolicy: Never
      containers:
        - name: main
          image: python:3.12
          resources:
            requests: {cpu: "2", memory: 4Gi, ephemeral-storage: 50Gi}
"""


def test_a_pod_asking_for_local_disk_fits_a_node_of_the_cluster_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Once 'Insufficient ephemeral-storage' on every node: the cluster YAML's nodes had no
    disk, which every real node reports (default 1Ti)."""
    workloads = tmp_path / "workloads"
    workloads.mkdir()
    (workloads / "job.yaml").write_text(JOB_WITH_SCRATCH)
    code, document, err = _simulate(capsys, tmp_path, workloads)
    assert (code, err) == (0, [])
    assert (document["jobs"], document["completed"]) == (1, 1)
