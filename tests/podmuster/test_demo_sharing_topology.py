"""``podmuster demo``'s GPU-sharing and topology scenes, and its closing summary.

The notebooks scene: fractional pods (``gpu-fraction`` 0.5, 0.25, 0.25) pack into
one shared GPU beside a whole-GPU Job, a later 0.5 opens a second shared GPU, and
the queue is charged the fractions. The rack scene: a 4-pod gang with a required
rack level lands inside one rack although bin-packing alone would split it. The
summary's sentences come from the run itself.
"""

from __future__ import annotations

import json
from typing import Any

import pytest


@pytest.fixture(scope="module")
def summary() -> dict[str, Any]:
    from podmuster.demo import render
    from podmuster.demo.timeline import simulate

    data: dict[str, Any] = json.loads(json.dumps(render.summary(simulate())))
    return data


def _scene(summary: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in summary["scenes"] if s["name"] == name)
    return found


def _step(scene: dict[str, Any], minute: int) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in scene["timeline"] if s["minute"] == minute)
    return found


def test_three_notebooks_share_one_gpu_beside_a_whole_gpu_job(summary: dict[str, Any]) -> None:
    start = _step(_scene(summary, "share"), 0)
    started = {s["workload"]: s["gpus"] for s in start["started"]}
    assert started == {
        "finetune-small": 2,
        "jupyter-carol": 0.5,
        "jupyter-dan": 0.25,
        "jupyter-erin": 0.25,
    }
    assert start["gpusInUse"] == {"gpu-node-1": 3}  # 2 whole + 1 shared by three notebooks
    shares = {s["workload"]: s["sharesGpuWith"] for s in start["started"]}
    assert shares["jupyter-erin"] == ["jupyter-carol", "jupyter-dan"]
    assert shares["finetune-small"] == []


def test_a_full_shared_gpu_makes_the_next_notebook_open_another(summary: dict[str, Any]) -> None:
    later = _step(_scene(summary, "share"), 5)
    assert [(s["workload"], s["gpus"], s["sharesGpuWith"]) for s in later["started"]] == [
        ("jupyter-frank", 0.5, [])
    ]
    assert later["gpusInUse"] == {"gpu-node-1": 4}


def test_the_queue_is_charged_the_fractions(summary: dict[str, Any]) -> None:
    start = _step(_scene(summary, "share"), 0)
    row = next(q for q in start["queues"] if q["name"] == "notebooks")
    assert row["allocated"] == pytest.approx(3.0)  # 2 + 0.5 + 0.25 + 0.25


def test_the_rack_constrained_gang_stays_inside_one_rack(summary: dict[str, Any]) -> None:
    later = _step(_scene(summary, "topology"), 5)
    started = {s["workload"]: s for s in later["started"]}
    gang = started["allreduce-train"]
    assert gang["pods"] == 4
    assert set(gang["nodes"]) <= {"gpu-node-3", "gpu-node-4"}  # rack-b


def test_the_summary_names_every_idea_the_demo_showed(summary: dict[str, Any]) -> None:
    topics = {t["topic"]: t["text"] for t in summary["takeaways"]}
    assert set(topics) == {
        "gang scheduling",
        "fair share",
        "limits",
        "preemption",
        "reclaim",
        "consolidation",
        "GPU sharing",
        "topology",
    }
    assert "ran all in rack-b" in topics["topology"]
    assert "ran on 2 shared GPUs" in topics["GPU sharing"]
