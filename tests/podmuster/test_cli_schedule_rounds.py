"""``podmuster schedule --rounds N`` (docs/cli.md §2): cycles with decisions carried out between.

Covers: the document shape (``rounds`` of per-cycle documents, then ``pods``);
a preemption played out (evict + pipeline, then bind, final states); a
consolidation victim running again on another node; a pod allocated and then
preempted in the same cycle neither bound nor deleted; nothing changes once
converged; the clock advancing one second per round from ``--now``, a
``--now`` without a zone read as UTC whatever ``TZ`` says; JSON
output; no ``--rounds`` keeps the one-cycle document; bad values exit 2 with
one line naming the flag.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from podmuster.cli import main

QUEUE = """
- apiVersion: scheduling.run.ai/v2
  kind: Queue
  metadata: {name: team}
  spec: {resources: {gpu: {quota: 8, limit: -1, overQuotaWeight: 1}, cpu: {quota: -1, limit: -1}, memory: {quota: -1, limit: -1}}}
"""


def _node(name: str, gpus: int) -> str:
    return (
        f"- {{apiVersion: v1, kind: Node, metadata: {{name: {name}}}, "
        f'status: {{allocatable: {{cpu: "16", memory: 64Gi, nvidia.com/gpu: "{gpus}"}}}}}}\n'
    )


def _pod(name: str, gpus: int, node: str | None = None, priority: str = "train") -> str:
    placed = f"nodeName: {node}, " if node else ""
    status = "\n  status: {phase: Running}" if node else ""
    return f"""- apiVersion: v1
  kind: Pod
  metadata: {{name: {name}, namespace: ns, labels: {{kai.scheduler/queue: team}}}}
  spec: {{schedulerName: kai-scheduler, {placed}priorityClassName: {priority}, containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: "{gpus}"}}}}}}]}}{status}
"""


PREEMPT = (
    "apiVersion: v1\nkind: List\nitems:\n"
    + _node("n0", 2)
    + QUEUE
    + _pod("train-0", 2, "n0")
    + _pod("infer-0", 1, priority="inference")
)
CONSOLIDATE = (
    "apiVersion: v1\nkind: List\nitems:\n"
    + _node("n0", 4)
    + _node("n1", 4)
    + QUEUE
    + _pod("small", 2, "n0")
    + _pod("other", 2, "n1")
    + _pod("big", 4)
)
# allocate binds lo next to run; preempt then evicts both for hi (build), in the same cycle
PLACED_THEN_PREEMPTED = (
    "apiVersion: v1\nkind: List\nitems:\n"
    + _node("n0", 4)
    + QUEUE
    + _pod("run", 2, "n0")
    + _pod("hi", 4, priority="build")
    + _pod("lo", 2)
)
NOW = "2025-01-01T00:00:00Z"


def _schedule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, *argv: str
) -> dict[str, Any]:
    path = tmp_path / "snap.yaml"
    path.write_text(text)
    assert main(["schedule", str(path), "--now", NOW, *argv]) == 0
    out: dict[str, Any] = yaml.safe_load(capsys.readouterr().out)
    return out


def _decided(document: dict[str, Any]) -> tuple[list[str], list[str], list[str]]:
    return (
        [b["pod"] for b in document["binds"]],
        [b["pod"] for b in document["pipelined"]],
        [e["pod"] for e in document["evictions"]],
    )


def test_document_has_one_entry_per_round_then_the_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _schedule(tmp_path, capsys, PREEMPT, "--rounds", "3")
    assert list(out) == ["rounds", "pods"]
    assert [r["round"] for r in out["rounds"]] == [1, 2, 3]
    for document in out["rounds"]:
        assert list(document) == ["round", "time", "binds", "pipelined", "evictions", "podGroups"]
    assert [list(p) for p in out["pods"]] == [["pod", "podGroup", "state", "node"]] * 2


def test_preemption_pipelines_then_binds_and_the_victim_is_deleted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _schedule(tmp_path, capsys, PREEMPT, "--rounds", "2")
    first, second = out["rounds"]
    assert _decided(first) == ([], ["ns/infer-0"], ["ns/train-0"])
    assert first["evictions"][0]["action"] == "preempt"
    assert _decided(second) == (["ns/infer-0"], [], [])
    states = {p["pod"]: (p["state"], p["node"]) for p in out["pods"]}
    assert states == {"ns/infer-0": ("Running", "n0"), "ns/train-0": ("Deleted", None)}
    assert next(p for p in out["pods"] if p["pod"] == "ns/train-0")["podGroup"].startswith(
        "ns/pg-train-0-"
    )


def test_consolidation_victim_runs_again_on_another_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _schedule(tmp_path, capsys, CONSOLIDATE, "--rounds", "2")
    first, second = out["rounds"]
    assert _decided(first) == ([], ["ns/big", "ns/other"], ["ns/other"])
    assert _decided(second) == (["ns/big", "ns/other"], [], [])
    states = {p["pod"]: (p["state"], p["node"]) for p in out["pods"]}
    assert states == {
        "ns/big": ("Running", "n1"),
        "ns/other": ("Running", "n0"),
        "ns/small": ("Running", "n0"),
    }


def test_a_pod_placed_then_preempted_in_one_cycle_is_neither_bound_nor_deleted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _schedule(tmp_path, capsys, PLACED_THEN_PREEMPTED, "--rounds", "2", "--output", "json")
    first, second = out["rounds"]
    assert _decided(first) == ([], ["ns/hi"], ["ns/run"])
    lo = next(g for g in first["podGroups"] if g["podGroup"].startswith("ns/pg-lo-"))
    assert lo["outcome"] == "pending"
    assert any("placed earlier in this cycle, then evicted" in r for r in lo["reasons"])
    assert _decided(second) == (["ns/hi"], [], [])
    states = {p["pod"]: (p["state"], p["node"]) for p in out["pods"]}
    assert states == {
        "ns/hi": ("Running", "n0"),
        "ns/lo": ("Pending", None),
        "ns/run": ("Deleted", None),
    }


def test_after_convergence_later_rounds_change_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    three = _schedule(tmp_path, capsys, CONSOLIDATE, "--rounds", "3")
    six = _schedule(tmp_path, capsys, CONSOLIDATE, "--rounds", "6")
    for document in six["rounds"][2:]:
        assert _decided(document) == ([], [], [])
        assert document["podGroups"] == []
    assert six["pods"] == three["pods"]


def test_clock_advances_one_second_per_round(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _schedule(tmp_path, capsys, PREEMPT, "--rounds", "3")
    assert [r["time"] for r in out["rounds"]] == [
        "2025-01-01T00:00:00Z",
        "2025-01-01T00:00:01Z",
        "2025-01-01T00:00:02Z",
    ]


@pytest.mark.parametrize("now", ["2025-01-01T00:00:00", "2025-01-01"])
def test_a_clock_without_a_zone_is_utc_whatever_the_machines_time_zone(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    now: str,
) -> None:
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # UTC+05:30, no daylight saving
    time.tzset()
    try:
        out = _schedule(tmp_path, capsys, PREEMPT, "--rounds", "1", "--now", now)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert [r["time"] for r in out["rounds"]] == ["2025-01-01T00:00:00Z"]


def test_json_output_with_rounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(PREEMPT)
    assert main(["schedule", str(path), "--now", NOW, "--rounds", "2", "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rounds"][1]["binds"][0]["pod"] == "ns/infer-0"


def test_rounds_1_lists_one_round_and_no_flag_keeps_the_one_cycle_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = _schedule(tmp_path, capsys, PREEMPT)
    one = _schedule(tmp_path, capsys, PREEMPT, "--rounds", "1")
    assert list(plain) == ["binds", "pipelined", "evictions", "podGroups"]
    (only,) = one["rounds"]
    assert {k: v for k, v in only.items() if k not in ("round", "time")} == plain


def test_explain_adds_queues_to_every_round(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _schedule(tmp_path, capsys, PREEMPT, "--rounds", "2", "--explain")
    assert [[q["queue"] for q in r["queues"]] for r in out["rounds"]] == [["team"], ["team"]]
    assert [r["queues"][0]["requested"]["gpu"] for r in out["rounds"]] == [3, 1]


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "two", ""])
def test_bad_rounds_value_exits_2_with_one_line_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(PREEMPT)
    assert main(["schedule", str(path), f"--rounds={value}"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("podmuster: --rounds: ")
    assert repr(value) in line


def test_a_pod_the_cache_reads_is_carried_between_rounds_whatever_its_version_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by the fuzz tests: a pod written ``apiVersion: V1`` was scheduled (the cache
    tells a pod by API group and kind) but not found when the rounds carried out its
    bind, and the command ended in a Python traceback."""
    text = PREEMPT.replace("- apiVersion: v1\n  kind: Pod", "- apiVersion: V1\n  kind: Pod")
    assert text != PREEMPT
    out = _schedule(tmp_path, capsys, text, "--rounds", "2")
    assert {p["pod"]: p["state"] for p in out["pods"]} == {
        "ns/infer-0": "Running",
        "ns/train-0": "Deleted",
    }
