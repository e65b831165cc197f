"""``podmuster demo``: it runs, tells the story the issue asks for, and is deterministic."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from podmuster.cli import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["demo", *argv])
    return code, capsys.readouterr().out


@pytest.fixture(scope="module")
def summary() -> dict[str, Any]:
    from podmuster.demo import render
    from podmuster.demo.timeline import simulate

    data: dict[str, Any] = json.loads(json.dumps(render.summary(simulate())))
    return data


def _workload(summary: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(w for w in summary["workloads"] if w["name"] == name)
    return found


def _step(summary: dict[str, Any], minute: int) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in summary["timeline"] if s["minute"] == minute)
    return found


def test_text_output_exits_0_is_short_and_fast(capsys: pytest.CaptureFixture[str]) -> None:
    start = time.perf_counter()
    code, out = _run(capsys, "--no-color")
    assert code == 0
    assert time.perf_counter() - start < 5
    assert "\033[" not in out
    assert 40 <= len(out.splitlines()) <= 80
    for word in ("Timeline", "fair share", "NonPreemptibleOverQuota", "OverLimit"):
        assert word in out


def test_json_output_is_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    first = _run(capsys, "-o", "json")
    second = _run(capsys, "-o", "json")
    assert first == second
    assert first[0] == 0
    json.loads(first[1])


def test_gangs_start_whole_at_t0(summary: dict[str, Any]) -> None:
    assert _workload(summary, "llama-finetune")["startedAt"] == 0
    started = {s["workload"]: s for s in _step(summary, 0)["started"]}
    assert started["llama-finetune"]["pods"] == 4
    assert started["llama-finetune"]["gpus"] == 8


def test_ray_cluster_gets_gang_then_elastic_extras(summary: dict[str, Any]) -> None:
    started = {s["workload"]: s for s in _step(summary, 0)["started"]}
    assert started["ray-vision"]["pods"] == 5
    assert started["ray-vision"]["elasticExtras"] == 2


def test_build_notebook_waits_non_preemptible_over_quota_until_a_slot_frees(
    summary: dict[str, Any],
) -> None:
    carol = _workload(summary, "notebook-carol")
    assert carol["waitReasons"] == ["NonPreemptibleOverQuota"]
    assert carol["startedAt"] == _workload(summary, "notebook-alice")["finishedAt"] == 10
    waiting = {w["workload"]: w["reason"] for w in _step(summary, 0)["waiting"]}
    assert waiting == {"notebook-carol": "NonPreemptibleOverQuota"}


def test_big_gang_waits_whole_until_gpus_free(summary: dict[str, Any]) -> None:
    bert = _workload(summary, "bert-pretrain")
    assert bert["arrivedAt"] == 5
    assert bert["waitReasons"] == ["GangDoesNotFit"]
    assert bert["startedAt"] == _workload(summary, "llama-finetune")["finishedAt"] == 10
    assert "bert-pretrain" not in {s["workload"] for s in _step(summary, 5)["started"]}


def test_queue_limit_holds_a_job_back(summary: dict[str, Any]) -> None:
    sweep = _workload(summary, "vision-sweep")
    assert sweep["waitReasons"] == ["OverLimit"]
    assert sweep["startedAt"] == _workload(summary, "ray-vision")["finishedAt"] == 20
    for step in summary["timeline"]:
        vision = next(q for q in step["queues"] if q["name"] == "research-vision")
        assert vision["allocated"] <= vision["limit"] == 10


def test_inference_runs_within_quota_and_everyone_starts(summary: dict[str, Any]) -> None:
    assert _workload(summary, "llm-serve")["startedAt"] == 0
    assert all(w["startedAt"] is not None for w in summary["workloads"])


def test_fair_share_per_queue_is_reported(summary: dict[str, Any]) -> None:
    queues = {q["name"]: q for q in _step(summary, 5)["queues"]}
    assert set(queues) == {
        "research",
        "research-nlp",
        "research-vision",
        "product",
        "product-serving",
        "product-apps",
    }
    total = sum(q["fairShare"] for q in queues.values() if q["parent"] is None)
    assert total <= 32
    assert queues["research"]["fairShare"] > queues["research"]["deserved"]


def test_bin_packing_keeps_a_node_empty_at_t0(summary: dict[str, Any]) -> None:
    in_use = _step(summary, 0)["gpusInUse"]
    assert sorted(in_use.values())[0] == 0


def test_only_existing_actions_are_claimed(summary: dict[str, Any]) -> None:
    assert "reclaim" in summary["cluster"]["skippedActions"]
    assert not any(
        w["reason"] in ("Reclaimed", "Preempted") for s in summary["timeline"] for w in s["waiting"]
    )
