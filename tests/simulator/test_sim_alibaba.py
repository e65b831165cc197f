"""The Alibaba 2023 layout: node and pod mapping, skipped rows, static pod lists, a real slice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crds.errors import InputError
from crds.gpusharing import FRACTION
from podmuster.cli import main
from simulator import alibaba, objects


def test_rows_become_nodes_and_one_pod_jobs(fixtures: Path) -> None:
    scenario = alibaba.load(str(fixtures / "openb"))
    nodes = {n["metadata"]["name"]: n for n in scenario.nodes}
    assert nodes["openb-node-0001"]["status"]["allocatable"] == {
        "cpu": "96000m",
        "memory": "786432Mi",
        "pods": "110",
        "nvidia.com/gpu": "8",
    }
    assert nodes["openb-node-0001"]["metadata"]["labels"] == {objects.GPU_MODEL_LABEL: "V100M32"}
    assert nodes["openb-node-0002"]["metadata"]["labels"] == {}  # CPU-only, no model
    jobs = {job.key: job for job in scenario.jobs}
    shared = jobs["openb/pg-openb-pod-0001"]
    pod = shared.pods[0]
    assert pod["metadata"]["annotations"][FRACTION] == "0.46"
    assert "nvidia.com/gpu" not in pod["spec"]["containers"][0]["resources"]["requests"]
    assert shared.pod_gpus == [0.46]
    assert (shared.queue, shared.arrival, shared.duration) == ("be", 10.0, 58.0)
    assert shared.pod_group["spec"]["priorityClassName"] == "train"
    whole = jobs["openb/pg-openb-pod-0003"]
    assert whole.pods[0]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert whole.pod_group["spec"]["priorityClassName"] == "build-preemptible"
    term = whole.pods[0]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert term == {"key": objects.GPU_MODEL_LABEL, "operator": "In", "values": ["V100M32"]}
    assert sum(scenario.skipped.values()) == 2


def test_pod_list_without_times_is_static_placement(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = tmp_path / "multigpu.csv"
    pods.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
        "a,1000,1024,8,1000\n"
        "b,1000,1024,2,1000\n"
        "c,1000,1024,8,1000\n"
    )
    code = main(["simulate", "--trace", str(fixtures / "openb"), "--pods", str(pods), "-o", "json"])
    assert code == 0
    document = json.loads(capsys.readouterr().out)
    # a (8 GPUs) takes the V100 node, b (2) the P100 node; c never fits; nothing ends
    assert document["jobs"] == 3
    assert document["completed"] == 0
    assert document["started"] == 2
    assert document["pending_reasons"]["Insufficient nvidia.com/gpu"] == 1


def test_a_slice_of_the_real_trace(
    alibaba_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = (alibaba_trace / "openb_pod_list_default.csv").read_text().splitlines()
    pods = tmp_path / "slice.csv"
    pods.write_text("\n".join(lines[:301]) + "\n")  # header + 300 pods, written at test time
    argv = ["simulate", "--trace", str(alibaba_trace), "--pods", str(pods), "-o", "json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["jobs"] + sum(first["skipped"].values()) == 300
    assert first["completed"] == first["jobs"]
    assert 0 < first["gpu_allocation_ratio"] < 1
    assert main(argv) == 0
    second = json.loads(capsys.readouterr().out)
    for document in (first, second):
        for timing in ("engine_seconds", "snapshot_seconds", "wall_seconds"):
            document.pop(timing)
    assert first == second


def test_pods_names_a_list_of_the_trace_directory(fixtures: Path, tmp_path: Path) -> None:
    """The documented ``--pods gpushare40`` once read a file ``gpushare40`` in the working
    directory: a variant or a file name now finds the list in the trace directory."""
    trace = tmp_path / "openb"
    trace.mkdir()
    for name in ("openb_node_list_gpu_node.csv", "openb_pod_list_default.csv"):
        (trace / name).write_bytes((fixtures / "openb" / name).read_bytes())
    rows = (fixtures / "openb" / "openb_pod_list_default.csv").read_text().splitlines()
    (trace / "openb_pod_list_gpushare40.csv").write_text("\n".join(rows[:3]) + "\n")
    variant = trace / "openb_pod_list_gpushare40.csv"
    for given in ("gpushare40", "openb_pod_list_gpushare40.csv", str(variant)):
        scenario = alibaba.load(str(trace), given)
        assert (scenario.source, len(scenario.jobs)) == (str(variant), 2), given
    with pytest.raises(InputError) as caught:
        alibaba.load(str(trace), "multigpu50")
    assert str(caught.value) == (
        f"multigpu50: --pods: no such pod list, as a file or in {trace}"
        " (its pod lists: default, gpushare40)"
    )
