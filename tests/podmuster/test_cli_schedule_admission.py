"""``podmuster schedule`` with pods held by the queue admission gate (docs/cli.md §2,
docs/semantics.md §5.11): a held gang is listed with outcome ``held`` and its reason; the
pods whose gate comes off are listed under ``ungated``; with ``--rounds`` the gate is
removed between cycles and the gang is placed in the next one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from podmuster.cli import main

NOW = "2025-01-01T00:00:00Z"


def _queue(limit: int) -> str:
    return f"""- apiVersion: scheduling.run.ai/v2
  kind: Queue
  metadata: {{name: team, annotations: {{kai.scheduler/admission-gate: "true"}}}}
  spec: {{resources: {{gpu: {{quota: 8, limit: {limit}}}, cpu: {{quota: -1, limit: -1}}, memory: {{quota: -1, limit: -1}}}}}}
"""


def _pod(name: str, node: str | None = None) -> str:
    where = (
        f"nodeName: {node}" if node else "schedulingGates: [{name: kai.scheduler/queue-admission}]"
    )
    status = "\n  status: {phase: Running}" if node else ""
    return f"""- apiVersion: v1
  kind: Pod
  metadata: {{name: {name}, namespace: ns, labels: {{kai.scheduler/queue: team}}}}
  spec: {{schedulerName: kai-scheduler, {where}, containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: "1"}}}}}}]}}{status}
"""


NODE = '- {apiVersion: v1, kind: Node, metadata: {name: n0}, status: {allocatable: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "4"}}}\n'


def _schedule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], items: str, *argv: str
) -> dict[str, Any]:
    path = tmp_path / "snap.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems:\n" + items)
    assert main(["schedule", str(path), "--now", NOW, *argv]) == 0
    out: dict[str, Any] = yaml.safe_load(capsys.readouterr().out)
    return out


def test_a_held_pod_is_reported_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _schedule(tmp_path, capsys, NODE + _queue(1) + _pod("run", "n0") + _pod("wait"))
    assert "ungated" not in out
    (held,) = [g for g in out["podGroups"] if g["outcome"] == "held"]
    assert held["queue"] == "team"
    (reason,) = held["reasons"]
    assert reason.startswith("AdmissionGated: OverLimit")


def test_rounds_lift_the_gate_then_bind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _schedule(tmp_path, capsys, NODE + _queue(2) + _pod("a") + _pod("b"), "--rounds", "2")
    first, second = out["rounds"]
    assert first["ungated"] == ["ns/a", "ns/b"]
    assert first["binds"] == []
    assert sorted(b["pod"] for b in second["binds"]) == ["ns/a", "ns/b"]
    assert {p["pod"]: p["state"] for p in out["pods"]} == {"ns/a": "Running", "ns/b": "Running"}
