"""``podmuster simulate`` on bad objects (cli-contract "Bad input"): each one gets a line on
stderr naming object, field and value, it is left out (with the job it belongs to), the
rest is simulated and printed, and the exit status is 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from podmuster.cli import main
from simulator.workloads import DURATION


def _simulate(
    capsys: pytest.CaptureFixture[str], cluster: Path, workloads: Path
) -> tuple[int, dict[str, Any], list[str]]:
    code = main(
        ["simulate", "--cluster", str(cluster), "--workloads", str(workloads), "-o", "json"]
    )
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err.strip().splitlines()


def _workloads(fixtures: Path, tmp_path: Path) -> Path:
    directory = tmp_path / "workloads"
    shutil.copytree(fixtures / "workloads", directory)
    return directory


def test_every_bad_object_is_reported_and_the_rest_simulated(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workloads = _workloads(fixtures, tmp_path)
    text = (workloads / "train.yaml").read_text()
    # eval's pod asks for -2 GPUs; a Queue with quota -4 and a second bad node join
    (workloads / "train.yaml").write_text(
        text.replace(
            "example.com/eval:1\n          resources: {limits: {nvidia.com/gpu: 1}}",
            "example.com/eval:1\n          resources: {limits: {nvidia.com/gpu: -2}}",
        )
    )
    bad_queue = {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": "broken"},
        "spec": {"resources": {"gpu": {"quota": -4}}},
    }
    (workloads / "queue.yaml").write_text(yaml.safe_dump(bad_queue))
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        (fixtures / "cluster.yaml").read_text()
        + "objects:\n  - {apiVersion: v1, kind: Node, metadata: {name: odd},"
        " status: {allocatable: {cpu: '-8'}}}\n"
    )
    code, document, err = _simulate(capsys, cluster, workloads)
    assert code == 2
    assert sorted(err) == [
        f"podmuster: {cluster}: Node odd: status.allocatable.cpu: negative quantity '-8'",
        f"podmuster: {workloads / 'queue.yaml'}: Queue broken: spec.resources.gpu.quota: "
        "Input should be greater than or equal to -1, got -4",
        f"podmuster: {workloads / 'train.yaml'}: Job team-b/eval: Pod team-b/eval-k4t8w: "
        "spec.containers[0].resources.limits.nvidia.com/gpu: negative quantity -2",
    ]
    assert document["jobs"] == 1  # train alone, on the two good nodes
    assert document["completed"] == 1


def test_a_workload_that_cannot_be_read_is_left_out(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workloads = _workloads(fixtures, tmp_path)
    text = (workloads / "train.yaml").read_text()
    (workloads / "train.yaml").write_text(
        text.replace("simulate.podmuster.io/duration: 30s", "simulate.podmuster.io/duration: soon")
    )
    code, document, err = _simulate(capsys, fixtures / "cluster.yaml", workloads)
    assert code == 2
    (line,) = err
    assert "Job team-b/eval: metadata.annotations[simulate.podmuster.io/duration]" in line
    assert "'soon'" in line
    assert (document["jobs"], document["completed"]) == (1, 1)


def test_a_workload_given_twice_is_reported_once_and_simulated_once(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by the fuzz tests: "two jobs share the PodGroup" once stopped the whole run."""
    workloads = _workloads(fixtures, tmp_path)
    train = (workloads / "train.yaml").read_text().split("---")[0]
    (workloads / "again.yaml").write_text(train)
    code, document, err = _simulate(capsys, fixtures / "cluster.yaml", workloads)
    assert code == 2
    (line,) = err
    assert line.startswith(f"podmuster: {workloads / 'train.yaml'}: PyTorchJob team-a/train: ")
    assert line.endswith(
        f"metadata.name: given twice (first in {workloads / 'again.yaml'} (document 1));"
        " the first is kept"
    )
    assert (document["jobs"], document["completed"]) == (2, 2)


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        (  # once a Python traceback: annotations read for the arrival time
            "  annotations:\n    simulate.podmuster.io/arrival: 1m\n"
            "    simulate.podmuster.io/duration: 30s\n",
            "  annotations: soon\n",
            "metadata.annotations: expected a map of strings, got 'soon'",
        ),
        (  # once a Python traceback: the pods' GPUs counted before the engine reads them
            "resources: {limits: {nvidia.com/gpu: 1}}\n---",
            "resources: {limits: [1]}\n---",
            "spec.containers[0].resources.limits: expected a map, got [1]",
        ),
    ],
)
def test_malformed_workload_is_one_line_and_the_rest_simulated(
    fixtures: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    old: str,
    new: str,
    field: str,
) -> None:
    workloads = _workloads(fixtures, tmp_path)
    text = (workloads / "train.yaml").read_text()
    broken = text.replace(old, new, 1) if old.endswith("---") else text.replace(old, new)
    assert broken != text
    (workloads / "train.yaml").write_text(broken)
    code, document, err = _simulate(capsys, fixtures / "cluster.yaml", workloads)
    assert code == 2
    (line,) = err
    assert field in line, line
    assert document["jobs"] == 1


def _with_bare_pod(fixtures: Path, tmp_path: Path, spec: Any) -> Path:
    """The fixture workloads and pod.yaml: a bare pod ``team-a/p`` with ``spec``."""
    workloads = _workloads(fixtures, tmp_path)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team-a", "annotations": {DURATION: "1m"}},
        "spec": spec,
    }
    (workloads / "pod.yaml").write_text(yaml.safe_dump(pod))
    return workloads


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        # found by the fuzz tests: once a Python traceback
        ("abc", "spec: expected a map, got 'abc'"),
        # a bare pod is its own workload: its line named it twice (``Pod a/p: Pod a/p: ...``)
        (
            {"schedulerName": "kai-scheduler", "containers": [], "tolerations": "gpu"},
            "spec.tolerations: expected a list, got 'gpu'",
        ),
        # a pod taken from a running cluster keeps ``spec.nodeName``, which bypasses every
        # scheduler: it once became a job that never started, with "no cycle explained it"
        (
            {"schedulerName": "kai-scheduler", "nodeName": "gpu-7", "containers": []},
            "spec.nodeName: is 'gpu-7': Kubernetes runs such a pod on that node without a"
            " scheduler; remove it to simulate how the pod is scheduled",
        ),
    ],
)
def test_a_bad_bare_pod_is_one_line_naming_it_once(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: Any, said: str
) -> None:
    workloads = _with_bare_pod(fixtures, tmp_path, spec)
    code, document, err = _simulate(capsys, fixtures / "cluster.yaml", workloads)
    assert code == 2
    assert err == [f"podmuster: {workloads / 'pod.yaml'}: Pod team-a/p: {said}"]
    assert (document["jobs"], document["completed"]) == (2, 2)


def test_a_directory_queue_under_a_missing_parent_is_one_line_and_left_out(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was kept, the scheduler dropped it (QueueDoesNotExist) and its jobs waited to the
    end without a word; the cluster file's queues are checked when it is read."""
    workloads = _workloads(fixtures, tmp_path)
    orphan = {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": "orphan"},
        "spec": {"parentQueue": "nothere", "resources": {"gpu": {"quota": 1}}},
    }
    (workloads / "queue.yaml").write_text(yaml.safe_dump(orphan))
    code, document, err = _simulate(capsys, fixtures / "cluster.yaml", workloads)
    assert code == 2
    assert err == [
        f"podmuster: {workloads / 'queue.yaml'}: Queue orphan: spec.parentQueue: no queue"
        " 'nothere' in the cluster; known: orphan, team-a, team-b"
    ]
    assert (document["jobs"], document["completed"]) == (2, 2)  # the others still run
