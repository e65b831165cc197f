"""Workloads podmuster used to guess about silently: each is grouped right, or warned about.

Covers (issue 16, item 5), on hand-written manifests under ``fixtures/`` with the
expected PodGroups worked out by hand from KAI's rules and the frameworks' docs:
a kind with no adapter and no pod template (default grouping + a warning); a RayJob
on an existing RayCluster (``spec.clusterSelector``: no cluster of its own, a warning,
its submitter pod alone); a RayService's default priority (``inference``); a recursive
Argo workflow (one pass + a warning); TrainJob runtimes whose trainer job is not named
``node`` (found by label or name, else a warning); a RayCronJob (each run's RayJob
gang; a warning while suspended).  KAI's results, where they differ, are checked under
``reproduce_kai_bugs``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from integrations import templates
from integrations.base import GroupingSettings
from integrations.grouping import GroupingResult, group_workloads

Fixture = Callable[[str], list[dict[str, Any]]]
RAY = "ray.io/v1"
KAI = GroupingSettings(reproduce_kai_bugs=True)


def pg_name(api_version: str, kind: str, name: str, namespace: str = "default") -> str:
    return f"pg-{name}-{templates.stable_uid(api_version, kind, namespace, name)}"


def summary(result: GroupingResult) -> dict[str, tuple[Any, ...]]:
    """name → (minMember, ((subgroup, min), ...), queue, priority) per PodGroup."""
    return {
        pg["metadata"]["name"]: (
            pg["spec"].get("minMember"),
            tuple((s["name"], s.get("minMember")) for s in pg["spec"].get("subGroups", [])),
            pg["spec"]["queue"],
            pg["spec"]["priorityClassName"],
        )
        for pg in result.pod_groups
    }


def test_unknown_kind_without_pods_is_shown_with_a_warning(fixture: Fixture) -> None:
    result = group_workloads(fixture("unknown-kind.yaml"))
    assert result.errors == ()
    name = pg_name("example.com/v1", "Simulation", "wind-tunnel", "research")
    assert summary(result) == {name: (1, (), "default-queue", "train")}
    [warning] = result.warnings
    assert warning.object == "Simulation research/wind-tunnel"
    assert "does not know which pods Simulation creates" in warning.message


def test_known_kinds_give_no_warning(fixture: Fixture) -> None:
    result = group_workloads(fixture("spark-app.yaml"))
    assert result.warnings == ()


# --- RayJob on an existing RayCluster -------------------------------------------------


def test_rayjob_with_cluster_selector_is_grouped_with_its_cluster(fixture: Fixture) -> None:
    result = group_workloads(fixture("rayjob-cluster-selector.yaml"))
    assert result.errors == ()
    # head 1 + cpu-workers minReplicas 2; the RayJob adds no PodGroup and no pods
    cluster = pg_name(RAY, "RayCluster", "shared-cluster", "analytics")
    assert summary(result) == {
        cluster: (3, (("headgroup", 1), ("cpu-workers", 2)), "team-data", "train")
    }
    assert len(result.pods) == 3
    assert {a.pod_group for a in result.assignments} == {cluster}
    [warning] = result.warnings
    assert warning.object == "RayJob analytics/nightly-report"
    assert "spec.clusterSelector" in warning.message
    assert "ray.io/cluster=shared-cluster" in warning.message


def test_rayjob_with_cluster_selector_alone_is_a_warning_not_an_error(fixture: Fixture) -> None:
    docs = [d for d in fixture("rayjob-cluster-selector.yaml") if d["kind"] == "RayJob"]
    result = group_workloads(docs)
    assert result.errors == ()
    assert result.pod_groups == ()
    assert len(result.warnings) == 1


def test_submitter_pod_of_a_selector_rayjob_is_grouped_alone(fixture: Fixture) -> None:
    result = group_workloads(fixture("rayjob-submitter-pod.yaml"))
    assert result.errors == ()
    name = "pg-nightly-report-0c7e2b1a-0000-4000-8000-000000000001"
    assert summary(result) == {name: (1, (), "team-data", "train")}
    [assignment] = result.assignments
    assert (assignment.pod, assignment.pod_group, assignment.sub_group) == (
        "analytics/nightly-report-x7k2p",
        name,
        None,
    )


def test_kai_gives_the_submitter_pod_the_selected_clusters_gang(fixture: Fixture) -> None:
    cluster = [d for d in fixture("rayjob-cluster-selector.yaml") if d["kind"] == "RayCluster"]
    result = group_workloads([*fixture("rayjob-submitter-pod.yaml"), *cluster], settings=KAI)
    assert result.errors == ()
    got = summary(result)["pg-nightly-report-0c7e2b1a-0000-4000-8000-000000000001"]
    assert got[:2] == (3, (("headgroup", 1), ("cpu-workers", 2)))  # one pod never reaches 3


# --- RayService priority --------------------------------------------------------------


def test_rayservice_defaults_to_inference_unless_set(fixture: Fixture) -> None:
    result = group_workloads(fixture("rayservice-priority.yaml"))
    assert result.errors == ()
    assert summary(result) == {
        # head 1 + gpu minReplicas 1
        pg_name(RAY, "RayService", "text-embedder"): (
            2,
            (("headgroup", 1), ("gpu", 1)),
            "default-queue",
            "inference",
        ),
        pg_name(RAY, "RayService", "batch-scorer"): (
            1,
            (("headgroup", 1),),
            "default-queue",
            "build",
        ),
    }


def test_rayservice_priority_as_kai_gives_it(fixture: Fixture) -> None:
    result = group_workloads(fixture("rayservice-priority.yaml"), settings=KAI)
    priorities = {name: spec[3] for name, spec in summary(result).items()}
    assert priorities == {
        pg_name(RAY, "RayService", "text-embedder"): "train",
        pg_name(RAY, "RayService", "batch-scorer"): "build",
    }


# --- Argo: a template that calls itself -----------------------------------------------


def test_recursive_workflow_is_synthesized_one_pass_with_a_warning(fixture: Fixture) -> None:
    result = group_workloads(fixture("argo-recursive.yaml"))
    assert result.errors == ()
    # 3 DAG tasks x (flip + report); the call back into ``toss`` is not followed
    assert len(result.pods) == 6
    assert len(result.pod_groups) == 6  # step pods: one PodGroup each (skip-top-owner)
    assert {s[0] for s in summary(result).values()} == {1}
    assert {s[2] for s in summary(result).values()} == {"ci-batch"}  # Workflow label
    [warning] = result.warnings
    assert warning.object.startswith("Workflow ci/coin-toss-")
    assert "template 'toss' calls itself" in warning.message


# --- Kubeflow Trainer: the trainer's replicatedJob is not always "node" -----------------

JOBSET = "jobset.x-k8s.io/v1alpha2"


def _gpus(result: GroupingResult, job_label: str) -> list[str]:
    """The GPU limit of every pod of one replicatedJob."""
    return [
        c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", "none")
        for p in result.pods
        if p["metadata"]["labels"].get("jobset.sigs.k8s.io/replicatedjob-name") == job_label
        for c in p["spec"]["containers"]
    ]


def test_trainer_job_found_by_name_trainer_node_or_by_ancestor_label(fixture: Fixture) -> None:
    result = group_workloads(fixture("trainjob-runtimes.yaml"))
    assert result.errors == ()
    assert result.warnings == ()
    # one PodGroup per JobSet: a parent per replicatedJob, a leaf per replica (numNodes pods)
    bert = pg_name(JOBSET, "JobSet", "bert-pretrain", "nlp")
    finetune = pg_name(JOBSET, "JobSet", "finetune", "nlp")
    assert summary(result) == {
        bert: (
            None,
            (
                ("launcher", None),
                ("launcher-replica-0", 1),
                ("trainer-node", None),
                ("trainer-node-replica-0", 4),
            ),
            "nlp-train",
            "train",
        ),
        finetune: (None, (("workers", None), ("workers-replica-0", 3)), "nlp-train", "train"),
    }
    assert _gpus(result, "trainer-node") == ["8"] * 4  # the container named like its job
    assert _gpus(result, "launcher") == ["none"]
    assert _gpus(result, "workers") == ["1"] * 3  # the only container


def test_unrecognised_runtime_is_kept_as_written_with_a_warning(fixture: Fixture) -> None:
    result = group_workloads(fixture("trainjob-unrecognised-runtime.yaml"))
    assert result.errors == ()
    name = pg_name(JOBSET, "JobSet", "rl-run")
    assert summary(result) == {
        name: (None, (("learner", None), ("learner-replica-0", 1)), "default-queue", "train")
    }
    [warning] = result.warnings
    assert warning.object == "TrainJob default/rl-run"
    assert "numNodes and resourcesPerNode not applied" in warning.message
    assert "trainer.kubeflow.org/trainjob-ancestor-step=trainer" in warning.message


# --- RayCronJob: one RayJob gang per scheduled run ------------------------------------


def _scheduled_rayjob(cron: str, namespace: str) -> str:
    """The RayJob podmuster synthesizes for one run: ``<cron>-<suffix of the cron uid>``."""
    return f"{cron}-{templates.suffix(templates.stable_uid(RAY, 'RayCronJob', namespace, cron))}"


def test_raycronjob_run_is_grouped_as_its_rayjob(fixture: Fixture) -> None:
    result = group_workloads(fixture("raycronjob.yaml"))
    assert result.errors == ()
    rayjob = _scheduled_rayjob("hourly-etl", "data")
    name = pg_name(RAY, "RayJob", rayjob, "data")
    # head 1 + workers replicas 3; queue from the RayCronJob (KubeRay copies no labels)
    assert summary(result) == {name: (4, (("headgroup", 1), ("workers", 3)), "etl", "train")}
    [group] = result.pod_groups
    assert group["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    assert len(result.pods) == 4
    assert {a.sub_group for a in result.assignments} == {"headgroup", "workers"}
    [warning] = result.warnings  # the suspended one: no RayJob, nothing to group
    assert warning.object == "RayCronJob data/paused-backfill"
    assert "suspended" in warning.message


def test_raycronjob_as_kai_groups_it_one_group_of_one(fixture: Fixture) -> None:
    result = group_workloads(fixture("raycronjob.yaml"), settings=KAI)
    name = pg_name(RAY, "RayCronJob", "hourly-etl", "data")
    assert summary(result) == {name: (1, (), "etl", "train")}  # default grouper, top owner
