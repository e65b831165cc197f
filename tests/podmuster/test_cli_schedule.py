"""``podmuster schedule`` (docs/cli.md §2): output shape, stdin, bad input and bad config.

Covers: the documented keys in YAML and JSON; reading a List from stdin;
one stderr line and exit 2 for a bad quantity or Queue number (the other objects
still decided), a bad config key and a bad --actions value; a warning line per ignored kind;
--explain adds queue numbers; same input, same output.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from podmuster.cli import main

SNAPSHOT = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n0}, status: {allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "2"}}}
- apiVersion: scheduling.run.ai/v2
  kind: Queue
  metadata: {name: team}
  spec: {resources: {gpu: {quota: 1, limit: -1, overQuotaWeight: 1}, cpu: {quota: -1, limit: -1}, memory: {quota: -1, limit: -1}}}
- apiVersion: v1
  kind: Pod
  metadata: {name: p0, namespace: ns, labels: {kai.scheduler/queue: team}}
  spec: {schedulerName: kai-scheduler, containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: p1, namespace: ns, labels: {kai.scheduler/queue: team}}
  spec: {schedulerName: kai-scheduler, containers: [{name: c, resources: {limits: {nvidia.com/gpu: "2"}}}]}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns}}
"""


def _write(tmp_path: Path, text: str, name: str = "snap.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_yaml_output_keys_and_decisions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schedule", _write(tmp_path, SNAPSHOT)]) == 0
    captured = capsys.readouterr()
    out = yaml.safe_load(captured.out)
    assert list(out) == ["binds", "pipelined", "evictions", "podGroups"]
    assert out["binds"] == [{"pod": "ns/p0", "node": "n0", "gpuGroups": [], "gpuPortion": None}]
    outcomes = {g["podGroup"].split("/")[1].split("-")[1]: g for g in out["podGroups"]}
    assert outcomes["p0"]["outcome"] == "scheduled"
    assert outcomes["p1"]["outcome"] == "pending"
    assert any("Insufficient nvidia.com/gpu" in r for r in outcomes["p1"]["reasons"])
    assert captured.err.strip() == "podmuster: warning: ignoring objects of kind ConfigMap"


def test_stdin_json_and_determinism(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = []
    for _ in range(2):
        monkeypatch.setattr("sys.stdin", io.StringIO(SNAPSHOT))
        assert main(["schedule", "-", "-o", "json"]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0])["binds"][0]["pod"] == "ns/p0"


def test_explain_adds_queue_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schedule", "--explain", _write(tmp_path, SNAPSHOT)]) == 0
    out = yaml.safe_load(capsys.readouterr().out)
    (team,) = out["queues"]
    assert team["queue"] == "team"
    assert team["deserved"]["gpu"] == 1
    assert team["allocated"]["gpu"] == 1  # p0 bound this cycle
    assert team["requested"]["gpu"] == 3


@pytest.mark.parametrize(
    ("broken", "expected", "decided"),
    [
        (
            SNAPSHOT.replace('nvidia.com/gpu: "2"}}}]}', 'nvidia.com/gpu: "2x"}}}]}'),
            ": Pod ns/p1: spec.containers[0].resources.limits.nvidia.com/gpu: invalid quantity",
            ["ns/p0"],
        ),
        (
            SNAPSHOT.replace("quota: 1, limit: -1", "quota: lots, limit: -1"),
            ": Queue team: spec.resources.gpu.quota: Input should be a valid number, got 'lots'",
            [],
        ),
    ],
    ids=["bad-quantity", "bad-queue-number"],
)
def test_bad_object_is_one_line_and_the_rest_is_decided(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    broken: str,
    expected: str,
    decided: list[str],
) -> None:
    path = _write(tmp_path, broken)
    assert main(["schedule", path]) == 2
    captured = capsys.readouterr()
    out = yaml.safe_load(captured.out)
    assert [b["pod"] for b in out["binds"]] == decided
    assert out["podGroups"]  # the other objects' groups are still there
    lines = captured.err.strip().splitlines()
    assert [line for line in lines if "warning" not in line] == [
        line for line in lines if line.startswith(f"podmuster: {path}{expected}")
    ]
    assert len(lines) == 2  # the bad object's line and the ConfigMap warning


def test_bad_config_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _write(tmp_path, "placementStrategy: {gpu: tight}\n", "config.yaml")
    assert main(["schedule", "--config", config, _write(tmp_path, SNAPSHOT)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"podmuster: {config}: placementStrategy.gpu: must be one of binpack, spread, got 'tight'"
    ]


def test_a_config_file_that_is_not_yaml_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _write(tmp_path, "a: [\n", "config.yaml")
    assert main(["schedule", "--config", config, _write(tmp_path, SNAPSHOT)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"podmuster: {config}: line 2 column 1: invalid YAML: expected the node content,"
        " but found '<stream end>'"
    ]


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        ("allocate,shuffle", "unknown action 'shuffle'; known: allocate, consolidation, "),
        ("", "expected a non-empty list of actions"),  # not all five without a word
        (" , ", "expected a non-empty list of actions"),
    ],
)
def test_bad_actions_flag_names_only_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], actions: str, message: str
) -> None:
    assert main(["schedule", "--actions", actions, _write(tmp_path, SNAPSHOT)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"podmuster: --actions: {message}")


def test_spread_config_changes_placement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # n0 has one of its two GPUs taken by another scheduler's pod; n1 is empty.
    extra = (
        "- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: "
        '{cpu: "8", memory: 32Gi, nvidia.com/gpu: "2"}}}\n'
        "- {apiVersion: v1, kind: Pod, metadata: {name: web, namespace: ns}, spec: {nodeName: n0, "
        'containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]}, '
        "status: {phase: Running}}\n"
    )
    snapshot = _write(
        tmp_path,
        SNAPSHOT.replace(
            "- apiVersion: scheduling.run.ai/v2", extra + "- apiVersion: scheduling.run.ai/v2", 1
        ),
    )
    placements = {}
    for strategy in ("binpack", "spread"):
        config = _write(tmp_path, f"placementStrategy: {{gpu: {strategy}}}\n", f"{strategy}.yaml")
        assert main(["schedule", "--actions", "allocate", "--config", config, snapshot]) == 0
        binds = yaml.safe_load(capsys.readouterr().out)["binds"]
        placements[strategy] = {b["pod"]: b["node"] for b in binds}["ns/p0"]
    # bin-pack fills the fuller n0; spread prefers the emptier n1 (free/capacity 1.0 > 0.5)
    assert placements == {"binpack": "n0", "spread": "n1"}


MISSING_GROUP = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1},
   status: {allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "4", pods: "110"}}}
- apiVersion: v1
  kind: Pod
  metadata: {name: train-0, namespace: team-a, uid: u0, annotations: {pod-group-name: train}}
  spec: {schedulerName: kai-scheduler, containers: [{name: c}]}
  status: {phase: Pending}
- apiVersion: v1
  kind: Pod
  metadata: {name: train-1, namespace: team-a, uid: u1, annotations: {pod-group-name: train}}
  spec: {schedulerName: kai-scheduler, containers: [{name: c}]}
  status: {phase: Pending}
"""


def test_pods_naming_a_missing_pod_group_get_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A dump taken with ``kubectl get podgroups`` on 1.37 holds no KAI PodGroup: the pods
    that name one would vanish from the output without a word."""
    assert main(["schedule", _write(tmp_path, MISSING_GROUP), "-o", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["podGroups"] == []
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        "podmuster: warning: PodGroup team-a/train is not in the input: its 2 pod(s) wait"
    )
    assert "podgroups.scheduling.run.ai" in lines[0]
