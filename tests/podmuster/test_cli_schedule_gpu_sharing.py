"""``podmuster schedule`` with fractional GPUs: ``gpuGroups`` and ``gpuPortion`` (docs/cli.md §2).

Why: these two keys are the public face of GPU sharing offline; a script
reading them must get the group ids and the portion per device, and the same
input must give the same ids.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from podmuster.cli import main

SNAPSHOT = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n0, labels: {nvidia.com/gpu.memory: "40960"}}
  status: {allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "2"}}
- apiVersion: scheduling.run.ai/v2
  kind: Queue
  metadata: {name: team}
  spec: {resources: {gpu: {quota: 1, limit: -1, overQuotaWeight: 1}, cpu: {quota: -1, limit: -1}, memory: {quota: -1, limit: -1}}}
- apiVersion: v1
  kind: Pod
  metadata: {name: half, namespace: ns, labels: {kai.scheduler/queue: team}, annotations: {gpu-fraction: "0.5"}}
  spec: {schedulerName: kai-scheduler, containers: [{name: c}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: mem, namespace: ns, labels: {kai.scheduler/queue: team}, annotations: {gpu-memory: "10240"}}
  spec: {schedulerName: kai-scheduler, containers: [{name: c}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: whole, namespace: ns, labels: {kai.scheduler/queue: team}}
  spec: {schedulerName: kai-scheduler, containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]}
"""


def test_binds_carry_gpu_groups_and_portion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(SNAPSHOT)
    assert main(["schedule", str(path)]) == 0
    first = yaml.safe_load(capsys.readouterr().out)
    binds = {b["pod"]: b for b in first["binds"]}
    assert binds["ns/half"]["gpuPortion"] == 0.5
    # 40960 MiB is rounded down to 40900; 10240 / 40900 is rounded up to hundredths
    assert binds["ns/mem"]["gpuPortion"] == 0.26
    assert len(binds["ns/half"]["gpuGroups"]) == 1
    assert binds["ns/mem"]["gpuGroups"] == binds["ns/half"]["gpuGroups"]
    assert binds["ns/whole"] == {
        "pod": "ns/whole",
        "node": "n0",
        "gpuGroups": [],
        "gpuPortion": None,
    }
    assert main(["schedule", str(path)]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == first


def test_bad_fraction_is_one_line_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(SNAPSHOT.replace('gpu-fraction: "0.5"', 'gpu-fraction: "1.5"'))
    assert main(["schedule", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "Pod ns/half" in err
    assert "metadata.annotations[gpu-fraction]" in err
