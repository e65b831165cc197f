"""Built-in kinds: bare Pod (and Spark), Job (per pod, legacy name), CronJob, Deployment, sets.

Covers: ``pg-<pod>-<uid>`` for bare pods; Spark driver/executors sharing the
``spark-app-selector`` PodGroup; Job's ``pg-<pod>-<jobUID>`` and the legacy
``pg-<job>-<jobUID>`` reuse for parallelism <= 1; CronJob grouping on the Job's
metadata; Deployment per pod with inference and top-owner-only priority;
StatefulSet/ReplicaSet through the default grouper.
"""

from __future__ import annotations

import pytest
from adapter_builders import Lookup, ctx, group, obj, pod

from integrations import base
from integrations.grouping import group_workloads


def test_bare_pod_is_its_own_group() -> None:
    the_pod = pod("solo", labels={"kai.scheduler/queue": "q"})
    spec = group(ctx(the_pod, the_pod, ()))
    assert (spec.name, spec.min_member, spec.queue) == ("pg-solo-uid-solo", 1, "q")
    assert spec.owner == base.OwnerReference("v1", "Pod", "solo", "uid-solo")


def test_spark_driver_and_executors_share_the_selector_group() -> None:
    spark = {"spark-app-name": "pi", "spark-app-selector": "spark-123"}
    driver = pod("pi-driver", labels={**spark, "spark-role": "driver"})
    executors = [
        pod(f"pi-exec-{i}", labels={**spark, "spark-role": "executor"}, owner=driver)
        for i in (1, 2)
    ]
    result = group_workloads([driver, *executors])
    assert result.errors == ()
    assert [pg["metadata"]["name"] for pg in result.pod_groups] == ["spark-123"]
    assert result.pod_groups[0]["metadata"]["ownerReferences"][0]["name"] == "pi-driver"
    assert {a.pod_group for a in result.assignments} == {"spark-123"}
    lone = pod("x", labels={"spark-app-name": "pi"})  # one Spark label is not enough
    assert group(ctx(lone, lone, ())).name == "pg-x-uid-x"


def job(**spec: object) -> dict[str, object]:
    return obj("batch/v1", "Job", "train", spec=dict(spec), labels={"kai.scheduler/queue": "jq"})


def test_job_groups_all_its_pods_in_one_group() -> None:
    the_job = job(parallelism=3)
    spec = group(ctx(the_job, pod("train-abc", owner=the_job)))
    assert (spec.name, spec.min_member) == ("pg-train-uid-train", 1)
    assert spec.owner.kind == "Job"
    assert spec.queue == "jq"


def test_job_batch_min_member_makes_it_a_gang() -> None:
    the_job = job(parallelism=4)
    the_job["metadata"]["annotations"] = {"kai.scheduler/batch-min-member": "4"}
    assert group(ctx(the_job, pod("train-x", owner=the_job))).min_member == 4
    for bad, problem in (("four", "expected an integer"), ("0", "must be >= 1")):
        the_job["metadata"]["annotations"] = {"kai.scheduler/batch-min-member": bad}
        with pytest.raises(base.GroupingError) as caught:
            group(ctx(the_job, pod("train-x", owner=the_job)))
        assert caught.value.obj == "Job ns/train"
        assert caught.value.field == "metadata.annotations[kai.scheduler/batch-min-member]"
        assert problem in caught.value.problem


def test_job_pod_keeps_its_legacy_per_pod_group() -> None:
    """A pod grouped by an older podgrouper stays in pg-<pod>-<jobUID>, with minMember 1."""
    legacy = obj("scheduling.run.ai/v2alpha2", "PodGroup", "pg-train-x-uid-train")
    the_job = job(parallelism=2)
    the_job["metadata"]["annotations"] = {"kai.scheduler/batch-min-member": "2"}
    spec = group(ctx(the_job, pod("train-x", owner=the_job), lookup=Lookup(legacy)))
    assert (spec.name, spec.min_member) == ("pg-train-x-uid-train", 1)
    spec = group(ctx(the_job, pod("train-y", owner=the_job), lookup=Lookup(legacy)))
    assert (spec.name, spec.min_member) == ("pg-train-uid-train", 2)


def test_cronjob_groups_on_the_job_and_its_metadata() -> None:
    cron = obj("batch/v1", "CronJob", "nightly", labels={"kai.scheduler/queue": "cron-q"})
    the_job = obj(
        "batch/v1",
        "Job",
        "nightly-1",
        owner=cron,
        labels={"kai.scheduler/queue": "job-q", "priorityClassName": "build"},
    )
    the_pod = pod("nightly-1-x", owner=the_job)
    spec = group(ctx(cron, the_pod, (the_job, cron)))
    assert (spec.name, spec.queue, spec.priority_class_name) == (
        "pg-nightly-1-uid-nightly-1",
        "job-q",
        "build",
    )
    assert spec.owner.kind == "Job"


def test_cronjob_run_honours_its_jobs_batch_min_member() -> None:
    """podmuster: a run's Job is a Job; KAI's CronJob grouper ignores the annotation."""
    cron = obj("batch/v1", "CronJob", "nightly")
    notes = {"kai.scheduler/batch-min-member": "3"}
    the_job = obj("batch/v1", "Job", "nightly-1", owner=cron, annotations=notes)
    the_pod = pod("nightly-1-x", owner=the_job)
    assert group(ctx(cron, the_pod, (the_job, cron))).min_member == 3
    kai = group(ctx(cron, the_pod, (the_job, cron), reproduce_kai_bugs=True))
    assert kai.min_member == 1


def test_cronjob_synthesized_run_takes_job_template_metadata() -> None:
    cron = obj(
        "batch/v1",
        "CronJob",
        "nightly",
        spec={
            "jobTemplate": {
                "metadata": {"labels": {"kai.scheduler/queue": "nightly-q"}},
                "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}},
            }
        },
    )
    result = group_workloads([cron])
    assert result.errors == ()
    assert len(result.pod_groups) == 1
    assert result.pod_groups[0]["spec"]["queue"] == "nightly-q"
    assert result.pod_groups[0]["metadata"]["ownerReferences"][0]["kind"] == "Job"


def test_deployment_is_one_group_per_pod_with_inference() -> None:
    dep = obj("apps/v1", "Deployment", "web", labels={"kai.scheduler/queue": "serve"})
    rs = obj("apps/v1", "ReplicaSet", "web-1", owner=dep, labels={"priorityClassName": "build"})
    the_pod = pod("web-1-a", owner=rs)
    spec = group(ctx(dep, the_pod, (rs, dep)))
    assert (spec.name, spec.queue, spec.priority_class_name) == (
        "pg-web-1-a-uid-web-1-a",
        "serve",
        "inference",
    )
    assert spec.owner == base.OwnerReference("v1", "Pod", "web-1-a", "uid-web-1-a")
    # only the top owner is consulted for priority
    top = obj("apps/v1", "Deployment", "web", labels={"priorityClassName": "build"})
    assert group(ctx(top, the_pod, (rs, top))).priority_class_name == "build"


def test_statefulset_and_replicaset_use_the_default_grouper() -> None:
    sts = obj(
        "apps/v1",
        "StatefulSet",
        "db",
        spec={"replicas": 3, "template": {"spec": {"containers": [{"name": "c"}]}}},
    )
    result = group_workloads([sts])
    assert [pg["metadata"]["name"] for pg in result.pod_groups] == ["pg-db-uid-db"]
    assert [a.pod for a in result.assignments] == ["ns/db-0", "ns/db-1", "ns/db-2"]
    assert result.pod_groups[0]["spec"]["minMember"] == 1
