"""``podmuster schedule --usage FILE``: queue usage given as input (docs/cli.md §2,
docs/semantics.md §5.4 "Time-based fair share")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from podmuster.cli import main

NOW = "2026-01-05T00:00:00Z"
NODE = '- {apiVersion: v1, kind: Node, metadata: {name: n0}, status: {allocatable: {cpu: "64", memory: 256Gi, nvidia.com/gpu: "10"}}}\n'


def _queue(name: str) -> str:
    return f"""- apiVersion: scheduling.run.ai/v2
  kind: Queue
  metadata: {{name: {name}}}
  spec: {{resources: {{gpu: {{quota: 0, limit: -1, overQuotaWeight: 1}}, cpu: {{quota: -1, limit: -1}}, memory: {{quota: -1, limit: -1}}}}}}
"""


def _pods(queue: str) -> str:
    return "".join(
        f"""- apiVersion: v1
  kind: Pod
  metadata: {{name: {queue}-{i}, namespace: ns, labels: {{kai.scheduler/queue: {queue}}}}}
  spec: {{schedulerName: kai-scheduler, containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: "1"}}}}}}]}}
"""
        for i in range(10)
    )


def _fair_shares(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *argv: str
) -> dict[str, float]:
    path = tmp_path / "snap.yaml"
    items = NODE + _queue("a") + _queue("b") + _pods("a") + _pods("b")
    path.write_text("apiVersion: v1\nkind: List\nitems:\n" + items)
    assert main(["schedule", str(path), "--now", NOW, "--explain", *argv]) == 0
    out: dict[str, Any] = yaml.safe_load(capsys.readouterr().out)
    return {q["queue"]: q["fairShare"]["gpu"] for q in out["queues"]}


def test_usage_file_lowers_the_heavy_queues_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    usage = tmp_path / "usage.yaml"
    usage.write_text("usage:\n  a: {gpu: 0.6}\n")
    # no usage: 5 / 5; with u_a = 0.6 and the default k = 1: 3 / 7 (as the scenario table
    # k1-heavy-gets-less: weights 0.4 and 1.0 of 10 GPUs, the remainder to a)
    assert _fair_shares(tmp_path, capsys) == {"a": 5, "b": 5}
    assert _fair_shares(tmp_path, capsys, "--usage", str(usage)) == {"a": 3, "b": 7}


def test_k_zero_in_the_config_ignores_the_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    usage = tmp_path / "usage.yaml"
    usage.write_text("usage:\n  a: {gpu: 0.6}\n")
    config = tmp_path / "config.yaml"
    config.write_text("plugins: {proportion: {arguments: {kValue: 0}}}\n")
    shares = _fair_shares(tmp_path, capsys, "--usage", str(usage), "--config", str(config))
    assert shares == {"a": 5, "b": 5}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("usage:\n  a: {gpu: -0.5}\n", "usage.yaml: usage.a.gpu: expected a number >= 0"),
        ("usage: [\n", "usage.yaml: invalid YAML"),
        ("a: {gpu: 0.5}\n", "usage.yaml: expected one top-level key, usage"),
    ],
)
def test_a_bad_usage_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    usage = tmp_path / "usage.yaml"
    usage.write_text(text)
    snapshot = tmp_path / "snap.yaml"
    snapshot.write_text("apiVersion: v1\nkind: List\nitems:\n" + NODE)
    assert main(["schedule", str(snapshot), "--usage", str(usage)]) == 2
    assert message in capsys.readouterr().err
