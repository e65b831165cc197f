"""``podmuster demo``'s "making room" scenes: preemption, reclaim and consolidation, cycle by cycle.

Each scene runs on its own small cluster, with cycles one second apart and
each cycle's decisions carried out (``scheduler.rounds``) before the next.
Covers, per scene: the victims named with the action and the job they make
room for; the preemptor pipelined in the first cycle and bound in the next;
what happens to the victims afterwards. Also the text names every step.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from podmuster.cli import main


@pytest.fixture(scope="module")
def scenes() -> dict[str, dict[str, Any]]:
    from podmuster.demo import render
    from podmuster.demo.timeline import simulate

    data: dict[str, Any] = json.loads(json.dumps(render.summary(simulate())))
    return {scene["name"]: scene for scene in data["scenes"]}


def _step(scene: dict[str, Any], minute: int) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in scene["timeline"] if s["minute"] == minute)
    return found


def _workload(scene: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(w for w in scene["workloads"] if w["name"] == name)
    return found


def _pipelined_then_bound(step: dict[str, Any], preemptor: str, gpus: int) -> None:
    assert step["cycles"] == 2
    assert [(p["workload"], p["cycle"]) for p in step["pipelined"]] == [(preemptor, 1)]
    started = {s["workload"]: s for s in step["started"]}
    assert (started[preemptor]["cycle"], started[preemptor]["gpus"]) == (2, gpus)


def test_inference_preempts_the_training_gang_of_its_queue(
    scenes: dict[str, dict[str, Any]],
) -> None:
    scene = scenes["preempt"]
    step = _step(scene, 5)
    (evicted,) = step["evicted"]
    assert (evicted["workload"], evicted["pods"], evicted["gpus"]) == ("nightly-train", 2, 8)
    assert (evicted["action"], evicted["for"], evicted["movedTo"]) == ("preempt", "chat-serve", [])
    assert evicted["cycle"] == 1
    _pipelined_then_bound(step, "chat-serve", 4)
    assert _workload(scene, "chat-serve")["priority"] == "inference"
    train = _workload(scene, "nightly-train")
    assert (train["priority"], train["startedAt"], train["status"]) == ("train", None, "waiting")
    assert {w["workload"]: w["reason"] for w in step["waiting"]} == {
        "nightly-train": "GangDoesNotFit"
    }


def test_starved_team_reclaims_only_what_the_other_team_borrowed(
    scenes: dict[str, dict[str, Any]],
) -> None:
    scene = scenes["reclaim"]
    assert sum(s["gpus"] for s in _step(scene, 0)["started"]) == 16  # team-b borrows all 16
    step = _step(scene, 5)
    (evicted,) = step["evicted"]
    assert (evicted["workload"], evicted["pods"], evicted["gpus"]) == ("hparam-sweep", 2, 8)
    assert (evicted["action"], evicted["for"], evicted["movedTo"]) == (
        "reclaim",
        "llm-pretrain",
        [],
    )
    _pipelined_then_bound(step, "llm-pretrain", 8)
    queues = {q["name"]: q for q in step["queues"]}
    assert (queues["team-a"]["allocated"], queues["team-b"]["allocated"]) == (8, 8)
    assert queues["team-b"]["requested"] == 16  # the re-created sweep pods wait
    assert _workload(scene, "hparam-sweep")["status"] == "running"


def test_consolidation_moves_a_2_gpu_job_to_make_room_for_a_4_gpu_job(
    scenes: dict[str, dict[str, Any]],
) -> None:
    scene = scenes["consolidate"]
    step = _step(scene, 5)
    free = [scene["cluster"]["gpusPerNode"] - used for used in step["gpusBefore"].values()]
    assert sum(free) >= 4
    assert max(free) < 4  # room enough in total, on no single node
    (moved,) = step["evicted"]
    assert (moved["workload"], moved["gpus"], moved["action"]) == ("eval-suite", 2, "consolidation")
    assert moved["for"] == "diffusion-train"
    assert moved["movedTo"] != moved["nodes"]
    assert moved["movedTo"]
    _pipelined_then_bound(step, "diffusion-train", 4)
    (diffusion,) = (s for s in step["started"] if s["workload"] == "diffusion-train")
    assert len(diffusion["nodes"]) == 1
    restarted = next(s for s in step["started"] if s["workload"] == "eval-suite")
    assert (restarted["moved"], restarted["nodes"], restarted["cycle"]) == (
        True,
        moved["movedTo"],
        2,
    )


def test_consolidation_costs_nobody_their_place(scenes: dict[str, dict[str, Any]]) -> None:
    scene = scenes["consolidate"]
    for workload in scene["workloads"]:
        assert workload["status"] in ("running", "finished"), workload["name"]
        assert all(e["movedTo"] for e in workload["evictions"]), workload["name"]


def test_text_tells_each_step_with_victims_and_preemptors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--no-color"]) == 0
    out = capsys.readouterr().out
    for line in (
        "Scene 1. Inference preempts training in the same queue",
        "evict nightly-train: 2 pods, 8 GPUs on node-1 (preempt, for chat-serve)",
        "reserve chat-serve: 1 pod pipelined on node-1",
        "cycle 2, one second later:",
        "Scene 2. A starved team reclaims its quota from a borrowing team",
        "evict hparam-sweep: 2 pods, 8 GPUs on node-2 (reclaim, for llm-pretrain)",
        "start llm-pretrain: 2 pods, 8 GPUs on node-2",
        "Scene 3. Consolidation makes room for a 4-GPU job",
        "GPUs in use before: node-1 6/8  node-2 6/8",
        "move  eval-suite: 1 pod, 2 GPUs from node-1 to node-2 (consolidation, for diffusion-train)",
        "start diffusion-train: 1 pod, 4 GPUs on node-1",
    ):
        assert line in out, line
