"""``podmuster schedule --node-pool``: only the pool's nodes, queues and pod groups are
scheduled; without it, only the objects without the node-pool label (docs/cli.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from podmuster.cli import main

SNAPSHOT = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: na, labels: {kai.scheduler/node-pool: a}}, status: {allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "1"}}}
- {apiVersion: v1, kind: Node, metadata: {name: n0}, status: {allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "4"}}}
- apiVersion: scheduling.run.ai/v2
  kind: Queue
  metadata: {name: qa, labels: {kai.scheduler/node-pool: a}}
  spec: {resources: {gpu: {quota: -1, limit: -1}, cpu: {quota: -1, limit: -1}, memory: {quota: -1, limit: -1}}}
- apiVersion: scheduling.run.ai/v2
  kind: Queue
  metadata: {name: q0}
  spec: {resources: {gpu: {quota: -1, limit: -1}, cpu: {quota: -1, limit: -1}, memory: {quota: -1, limit: -1}}}
- apiVersion: v1
  kind: Pod
  metadata: {name: pa, namespace: ns, labels: {kai.scheduler/queue: qa, kai.scheduler/node-pool: a}}
  spec: {schedulerName: kai-scheduler, containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: pa2, namespace: ns, labels: {kai.scheduler/queue: qa, kai.scheduler/node-pool: a}}
  spec: {schedulerName: kai-scheduler, containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: p0, namespace: ns, labels: {kai.scheduler/queue: q0}}
  spec: {schedulerName: kai-scheduler, containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]}
"""


def _binds(tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, str]:
    path = tmp_path / "snap.yaml"
    path.write_text(SNAPSHOT)
    assert main(["schedule", str(path), *flags]) == 0
    out = yaml.safe_load(capsys.readouterr().out)
    return {bind["pod"]: bind["node"] for bind in out["binds"]}


def test_a_pool_schedules_only_on_its_nodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # one GPU in pool a: pa2 stays pending although n0 (default pool) has room
    binds = _binds(tmp_path, capsys, "--node-pool", "a")
    assert len(binds) == 1
    assert set(binds.values()) == {"na"}


def test_the_default_pool_leaves_labelled_objects_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _binds(tmp_path, capsys) == {"ns/p0": "n0"}


def test_a_bad_pool_name_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["schedule", str(tmp_path / "x.yaml"), "--node-pool", "a/b"])
    assert exc.value.code == 2
