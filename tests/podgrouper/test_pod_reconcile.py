"""reconcile_pod end to end against FakeKube: bare pod, Job pod, PyTorchJob pods, RayCluster
head/worker subgroups, a RayJob's cluster found through its status, the ignore rules, the
namespace selector, the default-priorities ConfigMap, adapter errors as Warning events
(nothing raised, the next pod still grouped), API errors as retryable errors."""

from __future__ import annotations

from typing import Any

import pytest
from podgrouper_objects import fake, obj, pod, pod_group, reconcile

from kubeapi.errors import ForbiddenError, TransientError
from kubeapi.objects import ObjectRef
from podgrouper import applying, reconciling, selectors, settings

RAY = "ray.io/v1"


def stored_pod(kube_: Any, name: str) -> dict[str, Any]:
    found = kube_.stored("v1", "Pod", "ns", name)
    assert found is not None
    return found


def test_bare_pod_gets_its_own_podgroup() -> None:
    bare = pod("solo", labels={"kai.scheduler/queue": "team-a"})
    kube_ = fake(bare)
    outcome = reconcile(kube_, bare)
    assert outcome.applied is not None
    assert outcome.applied.write is applying.Write.CREATED
    group = pod_group(kube_, "pg-solo-uid-solo")
    assert group["spec"]["queue"] == "team-a"
    assert group["metadata"]["ownerReferences"][0]["kind"] == "Pod"
    assert stored_pod(kube_, "solo")["metadata"]["annotations"]["pod-group-name"] == (
        "pg-solo-uid-solo"
    )


def test_second_reconcile_writes_nothing() -> None:
    job = obj("batch/v1", "Job", "train", spec={})
    p = pod("train-x", job)
    kube_ = fake(job, p)
    reconcile(kube_, p)
    outcome = reconcile(kube_, p)
    assert outcome.applied is not None
    assert outcome.applied.write is applying.Write.UNCHANGED
    assert not outcome.applied.pod_patched
    assert kube_.count("create") == 1
    assert kube_.count("merge_patch") == 1


def test_bare_pod_already_grouped_is_left_alone() -> None:
    bare = pod("solo")
    kube_ = fake(bare)
    reconcile(kube_, bare)
    assert "user-managed" in reconcile(kube_, bare).skipped


def test_job_pod_is_grouped_on_the_job() -> None:
    job = obj("batch/v1", "Job", "train", labels={"kai.scheduler/queue": "q1"}, spec={})
    p = pod("train-x", job)
    kube_ = fake(job, p)
    outcome = reconcile(kube_, p)
    assert outcome.applied is not None
    group = pod_group(kube_, outcome.applied.pod_group)
    assert group["metadata"]["ownerReferences"][0]["name"] == "train"
    assert group["spec"]["queue"] == "q1"


def test_pytorchjob_pods_share_one_gang_with_subgroups() -> None:
    replicas = {"Master": {"replicas": 1}, "Worker": {"replicas": 2}}
    job = obj("kubeflow.org/v1", "PyTorchJob", "pt", spec={"pytorchReplicaSpecs": replicas})
    pods = [
        pod(
            f"pt-{kind.lower()}-{i}",
            job,
            labels={
                "training.kubeflow.org/replica-type": kind.lower(),
                "training.kubeflow.org/replica-index": str(i),
            },
        )
        for kind, i in (("Master", 0), ("Worker", 0), ("Worker", 1))
    ]
    kube_ = fake(job, *pods)
    names = {reconcile(kube_, p).applied.pod_group for p in pods}  # type: ignore[union-attr]
    assert names == {"pg-pt-uid-pt"}
    group = pod_group(kube_, "pg-pt-uid-pt")
    assert group["spec"]["minMember"] == 3
    labels = [
        stored_pod(kube_, p["metadata"]["name"])["metadata"]["labels"][
            "kai.scheduler/subgroup-name"
        ]
        for p in pods
    ]
    assert labels == ["master", "worker", "worker"]


def ray_cluster(name: str, workers: int, *owners: dict[str, Any]) -> dict[str, Any]:
    spec = {
        "headGroupSpec": {"template": {}},
        "workerGroupSpecs": [{"groupName": "gpu", "replicas": workers, "template": {}}],
    }
    return obj(RAY, "RayCluster", name, spec=spec, owners=owners)


def test_raycluster_head_and_worker_pods_get_subgroup_labels() -> None:
    rc = ray_cluster("rc", 2)
    head = pod("rc-head", rc, labels={"ray.io/group": "headgroup"})
    worker = pod("rc-gpu-a", rc, labels={"ray.io/group": "gpu"})
    kube_ = fake(rc, head, worker)
    assert reconcile(kube_, head).applied.subgroup == "headgroup"  # type: ignore[union-attr]
    assert reconcile(kube_, worker).applied.subgroup == "gpu"  # type: ignore[union-attr]
    group = pod_group(kube_, "pg-rc-uid-rc")
    assert group["spec"]["minMember"] == 3
    assert [s["name"] for s in group["spec"]["subGroups"]] == ["headgroup", "gpu"]
    labels = stored_pod(kube_, "rc-gpu-a")["metadata"]["labels"]
    assert labels["kai.scheduler/subgroup-name"] == "gpu"


def test_dynamo_pod_is_grouped_from_its_podgang_with_its_subgroup_label() -> None:
    """DynamoGraphDeployment -> PodCliqueSet -> PodClique -> pod; the PodGang is read."""
    dgd = obj("nvidia.com/v1beta1", "DynamoGraphDeployment", "llm", labels={"team": "a"})
    pcs = obj("grove.io/v1alpha1", "PodCliqueSet", "llm", owners=(dgd,), spec={})
    clique = obj("grove.io/v1alpha1", "PodClique", "llm-0-decode", owners=(pcs,), spec={})
    refs = [{"namespace": "ns", "name": n} for n in ("llm-0-decode-a", "llm-0-decode-b")]
    gang = obj(
        "scheduler.grove.io/v1alpha1",
        "PodGang",
        "llm-0",
        owners=(pcs,),
        spec={"podgroups": [{"name": "llm-0-decode", "minReplicas": 2, "podReferences": refs}]},
    )
    p = pod("llm-0-decode-a", clique, labels={"grove.io/podgang": "llm-0"})
    kube_ = fake(dgd, pcs, clique, gang, p)
    outcome = reconcile(kube_, p)
    assert outcome.applied is not None
    assert outcome.applied.subgroup == "llm-0-decode"
    group = pod_group(kube_, "pg-llm-0-uid-llm-0")
    assert group["spec"]["minMember"] == 2
    assert group["metadata"]["labels"]["team"] == "a"  # the DynamoGraphDeployment's label
    labels = stored_pod(kube_, "llm-0-decode-a")["metadata"]["labels"]
    assert labels["kai.scheduler/subgroup-name"] == "llm-0-decode"


def test_rayjob_cluster_is_looked_up_through_its_status() -> None:
    embedded = ray_cluster("unused", 7)["spec"]
    job = obj(
        RAY,
        "RayJob",
        "rj",
        spec={"rayClusterSpec": embedded},
        status={"rayClusterName": "rj-cluster"},
    )
    live = ray_cluster("rj-cluster", 4)
    head = pod("rj-head", job, labels={"ray.io/group": "headgroup"})
    kube_ = fake(job, live, head)
    outcome = reconcile(kube_, head)
    assert outcome.applied is not None
    assert pod_group(kube_, "pg-rj-uid-rj")["spec"]["minMember"] == 5
    assert ("get", ObjectRef(RAY, "RayCluster", "ns", "rj-cluster")) in kube_.calls


def test_adapter_error_warns_on_pod_and_owner_and_the_next_pod_is_grouped() -> None:
    bad = obj(
        RAY,
        "RayCluster",
        "bad",
        spec={"headGroupSpec": {"template": {}}, "workerGroupSpecs": [{"replicas": 1}]},
    )
    bad_pod = pod("bad-head", bad, labels={"ray.io/group": "headgroup"})
    good = pod("good")
    kube_ = fake(bad, bad_pod, good)
    outcome = reconcile(kube_, bad_pod)
    assert outcome.applied is None
    assert "RayCluster ns/bad" in outcome.error
    assert "groupName" in outcome.error
    for kind, name in (("Pod", "bad-head"), ("RayCluster", "bad")):
        (event,) = kube_.events_for(kind, name)
        assert (event["type"], event["reason"]) == ("Warning", "PodGrouperWarning")
        assert event["message"] == outcome.error
    assert reconcile(kube_, good).applied is not None


def test_malformed_owner_chain_warns_without_raising() -> None:
    job = obj("batch/v1", "Job", "train", spec={})
    p = pod("train-x", job)
    p["metadata"]["ownerReferences"][0]["uid"] = "stale"
    kube_ = fake(job, p)
    outcome = reconcile(kube_, p)
    assert "uid" in outcome.error
    assert len(kube_.events_for("Pod", "train-x")) == 1


def test_transient_error_is_retryable_without_events() -> None:
    p = pod("solo")
    kube_ = fake(p)
    kube_.fail("create", "PodGroup", "ns", "pg-solo-uid-solo", TransientError, times=1)
    with pytest.raises(reconciling.RetryableError) as caught:
        reconcile(kube_, p)
    assert isinstance(caught.value.cause, TransientError)
    assert kube_.events == []
    assert reconcile(kube_, p).applied is not None


def test_not_found_owner_is_reported_and_retryable() -> None:
    job = obj("batch/v1", "Job", "gone", spec={})
    p = pod("gone-x", job)
    kube_ = fake(p)
    with pytest.raises(reconciling.RetryableError, match="Job ns/gone"):
        reconcile(kube_, p)
    assert len(kube_.events_for("Pod", "gone-x")) == 1


def test_owner_lookup_failure_on_a_terminating_pod_is_ignored() -> None:
    job = obj("batch/v1", "Job", "gone", spec={})
    p = pod("gone-x", job)
    p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    kube_ = fake(p)
    assert "terminating" in reconcile(kube_, p).skipped
    assert kube_.events == []


@pytest.mark.parametrize(
    ("p", "reason"),
    [
        (pod("other", scheduler="default-scheduler"), "scheduler"),
        (pod("mine", annotations={"pod-group-name": "user-pg"}), "user-managed"),
        (pod("unlabelled"), "labels do not match"),
        (
            pod("ext", annotations={"kai.scheduler/skip-podgrouper": "true"}),
            'Pod ns/ext has kai.scheduler/skip-podgrouper: "true"',
        ),
    ],
)
def test_ignored_pods_are_not_touched(p: dict[str, Any], reason: str) -> None:
    config = settings.PodGrouperSettings(
        pod_selector=selectors.LabelSelector.parse("!skip")
        if reason != "labels do not match"
        else selectors.LabelSelector.parse("team")
    )
    kube_ = fake(p)
    assert reason in reconcile(kube_, p, config).skipped
    assert kube_.calls == []


def test_skip_podgrouper_on_an_owner_leaves_the_pod_and_its_podgroup_alone() -> None:
    """External PodGroup: the user's own PodGroup is used, nothing is written or patched."""
    skip = {"kai.scheduler/skip-podgrouper": "true"}
    js = obj("jobset.x-k8s.io/v1alpha2", "JobSet", "js", annotations=skip, spec={})
    job = obj("batch/v1", "Job", "js-a-0", owners=(js,), spec={})
    p = pod("js-a-0-x", job, annotations={"pod-group-name": "mine"})
    kube_ = fake(js, job, p)
    outcome = reconcile(kube_, p)
    assert (
        outcome.skipped
        == 'JobSet ns/js has kai.scheduler/skip-podgrouper: "true" (external PodGroup)'
    )
    assert kube_.count("create") == 0
    assert kube_.count("merge_patch") == 0
    assert stored_pod(kube_, "js-a-0-x")["metadata"]["annotations"] == {"pod-group-name": "mine"}
    plain = obj(
        "batch/v1", "Job", "j", annotations={"kai.scheduler/skip-podgrouper": "yes"}, spec={}
    )
    other = pod("j-x", plain)
    kube_ = fake(plain, other)
    assert reconcile(kube_, other).applied is not None  # only "true" skips, as in KAI


def test_namespace_selector_is_checked_per_event() -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}
    p = pod("solo")
    config = settings.PodGrouperSettings(
        namespace_selector=selectors.LabelSelector.parse("kai=enabled")
    )
    kube_ = fake(namespace, p)
    assert "namespace" in reconcile(kube_, p, config).skipped
    namespace["metadata"]["labels"] = {"kai": "enabled"}
    kube_.add(namespace)
    assert reconcile(kube_, p, config).applied is not None


def test_default_priorities_configmap_is_read() -> None:
    types = '[{"typeName": "Job", "group": "batch", "priorityName": "build"}]'
    configmap = obj("v1", "ConfigMap", "defaults", namespace="kai", data={"types": types})
    job = obj("batch/v1", "Job", "train", spec={})
    p = pod("train-x", job)
    config = settings.PodGrouperSettings(
        default_priorities_configmap_name="defaults",
        default_priorities_configmap_namespace="kai",
    )
    kube_ = fake(configmap, job, p)
    outcome = reconcile(kube_, p, config)
    assert outcome.applied is not None
    assert pod_group(kube_, outcome.applied.pod_group)["spec"]["priorityClassName"] == "build"
    missing = fake(job, p)
    outcome = reconcile(missing, p, config)
    assert outcome.applied is not None
    assert pod_group(missing, outcome.applied.pod_group)["spec"]["priorityClassName"] == "train"


def test_forbidden_top_owner_groups_on_the_last_reachable_owner() -> None:
    deploy = obj("apps/v1", "Deployment", "web")
    rs = obj("apps/v1", "ReplicaSet", "web-1", owners=(deploy,), spec={})
    p = pod("web-1-a", rs)
    kube_ = fake(deploy, rs, p)
    kube_.fail("get_metadata", "Deployment", "ns", "web", ForbiddenError)
    outcome = reconcile(kube_, p)
    assert outcome.applied is not None
    assert outcome.applied.pod_group == "pg-web-1-uid-web-1"
    assert kube_.events == []
