"""An elastic job runs, in the simulator, from the moment its gang's minimum runs.

Why: the simulator started a job's duration only once every pod ran. An elastic
PyTorchJob (``elasticPolicy.minReplicas``) on a cluster with room for its minimum but not
for every replica ran at its minimum for ever: it never "started", never completed, held
its GPUs, and the run ended with it pending (``start_s: null``, 0% allocation). Now it
starts with its minimum, its extra pods join when room appears, and when it completes
they go too. An elastic job that loses only pods beyond its minimum runs on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from podmuster.cli import main


def _metadata(name: str, queue: str, arrival: str, duration: str) -> dict[str, Any]:
    """A workload's metadata: its queue, and when it arrives and how long it runs."""
    return {
        "name": name,
        "namespace": "ml",
        "labels": {"kai.scheduler/queue": queue},
        "annotations": {
            "simulate.podmuster.io/arrival": arrival,
            "simulate.podmuster.io/duration": duration,
        },
    }


def _pytorch(name: str, queue: str, workers: int, minimum: int, arrival: str) -> dict[str, Any]:
    """An elastic PyTorchJob: a master and ``workers`` workers of 1 GPU each, its gang the
    master and ``minimum`` - 1 workers (KAI: minReplicas counts the master too)."""
    template = {
        "spec": {
            "schedulerName": "kai-scheduler",
            "containers": [
                {"name": "pytorch", "image": "pt:1", "resources": {"limits": {"nvidia.com/gpu": 1}}}
            ],
        }
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": _metadata(name, queue, arrival, "10m"),
        "spec": {
            "elasticPolicy": {"minReplicas": minimum, "maxReplicas": workers + 1},
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": template},
                "Worker": {"replicas": workers, "template": template},
            },
        },
    }


def _job(name: str, queue: str, gpus: int, arrival: str) -> dict[str, Any]:
    """A batch Job of one pod asking ``gpus`` GPUs, running 5 minutes."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _metadata(name, queue, arrival, "5m"),
        "spec": {
            "template": {
                "spec": {
                    "schedulerName": "kai-scheduler",
                    "containers": [
                        {
                            "name": "c",
                            "image": "x",
                            "resources": {"limits": {"nvidia.com/gpu": gpus}},
                        }
                    ],
                }
            }
        },
    }


def _simulate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, cluster: str, workloads: list[Any]
) -> dict[str, Any]:
    (tmp_path / "cluster.yaml").write_text(cluster)
    directory = tmp_path / "workloads"
    directory.mkdir()
    (directory / "all.yaml").write_text(yaml.safe_dump_all(workloads))
    code = main(
        [
            "simulate",
            "--cluster",
            str(tmp_path / "cluster.yaml"),
            "--workloads",
            str(directory),
            "-o",
            "json",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    document: dict[str, Any] = json.loads(captured.out)
    return document


def _by_workload(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {result["workload"]: result for result in document["job_results"]}


def test_an_elastic_job_runs_at_its_minimum_and_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Room for 3 of its 4 pods: it starts at the first cycle after it arrives (10 s + the
    1 s period), runs its 10 minutes, and the fourth pod, never placed, goes with it."""
    cluster = "nodes: [{name: n, count: 1, gpus: 3}]\nqueues: [{name: team-a}]\n"
    document = _simulate(capsys, tmp_path, cluster, [_pytorch("pt", "team-a", 3, 2, "10s")])
    result = _by_workload(document)["PyTorchJob ml/pt"]
    assert (result["start_s"], result["end_s"], result["wait_s"]) == (11.0, 611.0, 1.0)
    assert result["waited_for"] is None  # its extra pod waited; the job did not
    assert (document["jobs"], document["completed"]) == (1, 1)
    assert document["makespan_s"] == 601.0


def test_an_elastic_job_that_keeps_its_minimum_runs_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Team b reclaims 2 of the 4 GPUs team a's elastic job borrowed beyond its quota: only
    the 2 pods beyond its minimum go, so it runs on to its first end, 10 minutes after it
    started, and no GPU time is lost."""
    cluster = (
        "nodes: [{name: n, count: 1, gpus: 4}]\n"
        "queues: [{name: team-a, gpuQuota: 2}, {name: team-b, gpuQuota: 2}]\n"
    )
    workloads = [_pytorch("pt", "team-a", 3, 2, "0s"), _job("batch", "team-b", 2, "60s")]
    document = _simulate(capsys, tmp_path, cluster, workloads)
    results = _by_workload(document)
    elastic, batch = results["PyTorchJob ml/pt"], results["Job ml/batch"]
    assert elastic["reclaimed"] >= 1  # its extra pods were taken back
    assert (elastic["start_s"], elastic["end_s"]) == (1.0, 601.0)  # not restarted
    # reclaimed for at 61 s (the cycle after it arrived), placed as the evictions are done
    assert (batch["start_s"], batch["end_s"]) == (62.0, 362.0)
    assert document["gpu_hours_lost"] == 0.0
    assert (document["jobs"], document["completed"]) == (2, 2)
