"""``podmuster demo``: real manifests, grouped by the adapters, then scheduled; deterministic."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest

from integrations.grouping import group_workloads
from podmuster.cli import main
from podmuster.demo import podgrouping, story
from podmuster.demo.timeline import Simulation
from scheduler.config import SchedulerConfig


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


def _groups(summary: dict[str, Any], name: str) -> list[tuple[int, dict[str, int]]]:
    return [(g["minMember"], g["subGroups"]) for g in _workload(summary, name)["podGroups"]]


def _started(summary: dict[str, Any], minute: int) -> dict[str, dict[str, Any]]:
    return {s["workload"]: s for s in _step(summary, minute)["started"]}


def _waiting(summary: dict[str, Any], minute: int) -> dict[str, str]:
    return {w["workload"]: w["reason"] for w in _step(summary, minute)["waiting"]}


def test_text_output_exits_0_and_is_short(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "--no-color")
    assert code == 0
    assert "\033[" not in out
    assert 100 <= len(out.splitlines()) <= 280
    for word in (
        "Timeline",
        "fair share",
        "NonPreemptibleOverQuota",
        "OverLimit",
        "autoscaler",
        "What you just saw",
    ):
        assert word in out
    assert "RayCluster research/ray-vision -> pg-ray-vision-" in out
    assert "minMember 3 (headgroup 1, gpu-workers 2)" in out


def test_json_output_is_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    first = _run(capsys, "-o", "json")
    second = _run(capsys, "-o", "json")
    assert first == second
    assert first[0] == 0
    json.loads(first[1])


def test_workloads_are_shipped_manifests_of_the_issue_kinds() -> None:
    kinds = {w.name: (w.manifest["apiVersion"], w.kind) for w in story.workloads()}
    assert kinds["ray-vision"] == ("ray.io/v1", "RayCluster")
    assert kinds["llama-finetune"] == ("kubeflow.org/v1", "PyTorchJob")
    assert kinds["data-prep"] == ("argoproj.io/v1alpha1", "Workflow")
    assert kinds["eval-batch"] == ("batch/v1", "Job")
    assert kinds["llm-serve"] == ("apps/v1", "Deployment")
    assert kinds["bert-pretrain"] == ("kubeflow.org/v2beta1", "MPIJob")
    assert kinds["notebook-bob"] == ("kubeflow.org/v1", "Notebook")
    shipped = resources.files("podmuster.demo") / "workloads"
    files = {f.name.removesuffix(".yaml") for f in shipped.iterdir() if f.name.endswith(".yaml")}
    scenes = {w.name for scene in story.SCENES for w in scene.workloads()}
    assert files == set(kinds) | scenes
    ray = story.manifest("ray-vision")["spec"]["workerGroupSpecs"][0]
    assert (ray["minReplicas"], ray["replicas"], ray["maxReplicas"]) == (2, 2, 4)


def test_pod_groups_are_what_the_adapters_make(summary: dict[str, Any]) -> None:
    assert _groups(summary, "llama-finetune") == [(4, {"master": 1, "worker": 3})]
    assert _groups(summary, "ray-vision") == [(3, {"headgroup": 1, "gpu-workers": 2})]
    assert _groups(summary, "bert-pretrain") == [(4, {})]
    assert _groups(summary, "data-prep") == [(1, {})] * 3  # one per Argo step pod
    assert _groups(summary, "eval-batch") == [(1, {})]  # one per Job, minMember 1
    assert _groups(summary, "llm-serve") == [(1, {})] * 3  # one per replica
    priorities = {w["name"]: w["priority"] for w in summary["workloads"]}
    assert priorities["llm-serve"] == "inference"
    assert priorities["notebook-bob"] == "build"
    assert priorities["llama-finetune"] == "train"
    for item in story.workloads():
        made = group_workloads([item.manifest]).pod_groups
        names = {g["name"] for g in _workload(summary, item.name)["podGroups"]}
        assert names == {pg["metadata"]["name"] for pg in made}


def test_every_pod_carries_the_podgroupers_patch() -> None:
    sim = Simulation(story.workloads(), story.RESCALES, SchedulerConfig())
    sim.run()
    for key, pod in sim.pods.items():
        group = pod["metadata"]["annotations"]["pod-group-name"]
        assert f"{pod['metadata']['namespace']}/{group}" in sim.pod_groups, key
    llama = [p for k, p in sim.pods.items() if k.startswith("research/llama-finetune-")]
    assert sorted(p["metadata"]["labels"]["kai.scheduler/subgroup-name"] for p in llama) == [
        "master",
        "worker",
        "worker",
        "worker",
    ]
    ray = [p for k, p in sim.pods.items() if k.startswith("research/ray-vision-")]
    subgroups = sorted(p["metadata"]["labels"]["kai.scheduler/subgroup-name"] for p in ray)
    assert subgroups == ["gpu-workers"] * 4 + ["headgroup"]


def test_arrivals_print_what_the_podgrouper_made(summary: dict[str, Any]) -> None:
    grouped = {g["workload"]: g for g in _step(summary, 0)["grouped"]}
    assert set(grouped) == set(_step(summary, 0)["arrived"])
    assert grouped["ray-vision"]["line"].startswith(
        "RayCluster research/ray-vision -> pg-ray-vision-"
    )
    assert grouped["llm-serve"]["line"].startswith("Deployment product/llm-serve -> 3 PodGroups")


def test_gangs_start_whole_at_t0(summary: dict[str, Any]) -> None:
    started = _started(summary, 0)
    assert (started["llama-finetune"]["pods"], started["llama-finetune"]["gpus"]) == (4, 8)
    assert (started["ray-vision"]["pods"], started["ray-vision"]["gpus"]) == (3, 4)
    assert started["ray-vision"]["elasticExtras"] == 0
    assert {n: started[n]["pods"] for n in ("data-prep", "eval-batch", "llm-serve")} == {
        "data-prep": 3,
        "eval-batch": 2,
        "llm-serve": 3,
    }


def test_autoscaler_grows_ray_workers_as_elastic_extras(summary: dict[str, Any]) -> None:
    rescale = next(g for g in _step(summary, 5)["grouped"] if "rescale" in g)
    assert rescale["workload"] == "ray-vision"
    assert rescale["rescale"] == {"workerGroup": "gpu-workers", "from": 2, "to": 4}
    assert rescale["newPods"] == 2
    assert rescale["podGroups"][0]["minMember"] == 3  # the gang does not change
    grew = _started(summary, 5)["ray-vision"]
    assert (grew["grew"], grew["pods"], grew["elasticExtras"]) == (True, 2, 2)


def test_build_notebook_waits_non_preemptible_over_quota_until_a_slot_frees(
    summary: dict[str, Any],
) -> None:
    bob = _workload(summary, "notebook-bob")
    assert bob["waitReasons"] == ["NonPreemptibleOverQuota"]
    assert bob["startedAt"] == _workload(summary, "notebook-alice")["finishedAt"] == 10
    assert _waiting(summary, 0) == {"notebook-bob": "NonPreemptibleOverQuota"}


def test_mpi_gang_waits_whole_until_gpus_free(summary: dict[str, Any]) -> None:
    bert = _workload(summary, "bert-pretrain")
    assert bert["arrivedAt"] == 5
    assert bert["waitReasons"] == ["GangDoesNotFit"]
    assert "bert-pretrain" not in _started(summary, 5)
    assert bert["startedAt"] == _workload(summary, "llama-finetune")["finishedAt"] == 10
    assert _started(summary, 10)["bert-pretrain"]["pods"] == 4


def test_queue_limit_holds_a_job_back(summary: dict[str, Any]) -> None:
    sweep = _workload(summary, "vision-sweep")
    assert sweep["waitReasons"] == ["OverLimit"]
    assert sweep["startedAt"] == _workload(summary, "ray-vision")["finishedAt"] == 20
    for step in summary["timeline"]:
        vision = next(q for q in step["queues"] if q["name"] == "research-vision")
        assert vision["allocated"] <= vision["limit"] == 10


def test_inference_runs_at_t0_and_everyone_starts(summary: dict[str, Any]) -> None:
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


def test_main_story_runs_every_action_and_disrupts_no_one(summary: dict[str, Any]) -> None:
    # every action runs; in the main story nothing needs to be disrupted (the scenes do that)
    assert not any(step["evicted"] or step["pipelined"] for step in summary["timeline"])


def test_a_podgroup_view_shows_pod_sets_not_parents() -> None:
    """A JobSet's PodGroup (parents with minSubGroup only) is shown by its leaves."""
    pg = {
        "metadata": {"namespace": "ns", "name": "pg-js"},
        "spec": {
            "minSubGroup": 1,
            "subGroups": [
                {"name": "workers", "minSubGroup": 1},
                {"name": "workers-replica-0", "minMember": 4, "parent": "workers"},
            ],
        },
    }
    view = podgrouping._view(pg, 4)
    assert view.subgroups == (("workers-replica-0", 4),)
