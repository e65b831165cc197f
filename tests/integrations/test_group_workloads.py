"""``group_workloads``: mixed inputs, owner walking, errors per object, output shape.

Covers: a bad workload reported with its object and field while the others are
grouped; owner-chain errors (missing owner, uid mismatch, an intermediate owner
with two owners); given pods used instead of synthesis; PodGroups deduplicated and
sorted; the ``v1 List`` and ``--pods`` assignment shapes of docs/cli.md §3;
PriorityClass objects extending the existing classes; default-grouper kinds with no
pods; determinism.
"""

from __future__ import annotations

import json
from typing import Any

from adapter_builders import obj, pod

from integrations.grouping import group_workloads

KF = "kubeflow.org/v1"


def tfjob(name: str, replicas: Any) -> dict[str, Any]:
    spec = {
        "tfReplicaSpecs": {
            "Worker": {"replicas": replicas, "template": {"spec": {"containers": []}}}
        }
    }
    return obj(KF, "TFJob", name, spec=spec)


def test_one_bad_workload_does_not_stop_the_others(fixture: Any) -> None:
    docs = [tfjob("good", 2), tfjob("bad", -3), *fixture("bad-raycluster.yaml")]
    result = group_workloads(docs)
    assert [pg["metadata"]["name"] for pg in result.pod_groups] == ["pg-good-uid-good"]
    errors = {e.object: e.message for e in result.errors}
    assert set(errors) == {"TFJob ns/bad", "RayCluster ray/no-group-name"}
    assert "spec.tfReplicaSpecs.Worker.replicas" in errors["TFJob ns/bad"]
    assert "spec.workerGroupSpecs[0].groupName" in errors["RayCluster ray/no-group-name"]


def test_given_pods_are_used_and_owner_chains_walked() -> None:
    job = tfjob("t", 3)
    pods = [
        pod(f"t-worker-{i}", owner=job, labels={"training.kubeflow.org/replica-type": "worker"})
        for i in range(2)
    ]
    result = group_workloads([*pods, job])
    assert [a.pod for a in result.assignments] == ["ns/t-worker-0", "ns/t-worker-1"]
    assert len(result.pod_groups) == 1
    assert result.pod_groups[0]["spec"]["minMember"] == 3


def test_owner_chain_errors() -> None:
    rs = obj("apps/v1", "ReplicaSet", "rs")
    orphan = pod("orphan", owner=rs)
    result = group_workloads([orphan])
    assert "owner ReplicaSet ns/rs not found" in result.errors[0].message
    other = {**rs, "metadata": {**rs["metadata"], "uid": "different"}}
    assert "another uid" in group_workloads([orphan, other]).errors[0].message
    a = obj("apps/v1", "Deployment", "a")
    b = obj("apps/v1", "Deployment", "b")
    shared = obj("apps/v1", "ReplicaSet", "rs")
    shared["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": n, "uid": f"uid-{n}"}
        for n in ("a", "b")
    ]
    result = group_workloads([a, b, shared, pod("p", owner=shared)])
    [error] = [e for e in result.errors if e.object == "Pod ns/p"]
    assert (
        "ReplicaSet ns/rs field metadata.ownerReferences: has more than one owner" in error.message
    )


def test_cli_output_shapes() -> None:
    rc = obj(
        "ray.io/v1",
        "RayCluster",
        "rc",
        spec={
            "headGroupSpec": {"template": {"spec": {"containers": []}}},
            "workerGroupSpecs": [
                {"groupName": "w", "replicas": 2, "template": {"spec": {"containers": []}}}
            ],
        },
    )
    result = group_workloads([rc])
    listing = result.to_list()
    assert (listing["apiVersion"], listing["kind"], len(listing["items"])) == ("v1", "List", 1)
    rows = result.assignment_dicts()
    assert len(rows) == 3
    assert all(set(row) == {"pod", "podGroup", "subGroup"} for row in rows)
    assert sorted(str(row["subGroup"]) for row in rows) == ["headgroup", "w", "w"]
    json.dumps(listing)  # plain data, serialisable as is


def test_deduplicated_sorted_and_deterministic() -> None:
    docs = [tfjob("zeta", 2), tfjob("alpha", 1), pod("solo")]
    first = group_workloads(docs)
    assert [pg["metadata"]["name"] for pg in first.pod_groups] == [
        "pg-alpha-uid-alpha",
        "pg-solo-uid-solo",
        "pg-zeta-uid-zeta",
    ]
    assert group_workloads(docs) == first


def test_priority_classes_argument_and_objects() -> None:
    labelled = pod("p", labels={"priorityClassName": "gold"})
    assert group_workloads([labelled]).pod_groups[0]["spec"]["priorityClassName"] == "train"
    gold = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "gold"},
        "value": 200,
    }
    assert group_workloads([labelled, gold]).pod_groups[0]["spec"]["priorityClassName"] == "gold"
    assert (
        group_workloads([labelled], priority_classes=["gold"]).pod_groups[0]["spec"][
            "priorityClassName"
        ]
        == "gold"
    )
    build = pod("b", labels={"priorityClassName": "build"})
    assert (
        group_workloads([build], priority_classes=[]).pod_groups[0]["spec"]["priorityClassName"]
        == "train"
    )


def test_default_kinds_without_pods_still_get_their_group() -> None:
    swf = obj(
        "kubeflow.org/v1alpha1",
        "ScheduledWorkflow",
        "nightly",
        labels={"kai.scheduler/queue": "kfp"},
    )
    widget = obj("example.com/v1", "Widget", "w")
    result = group_workloads([swf, widget])
    assert [(pg["metadata"]["name"], pg["spec"]["queue"]) for pg in result.pod_groups] == [
        ("pg-nightly-uid-nightly", "kfp"),
        ("pg-w-uid-w", "default-queue"),
    ]
    assert result.assignments == ()


def test_generic_pod_template_kind_is_synthesized() -> None:
    seldon = obj(
        "machinelearning.seldon.io/v1",
        "SeldonDeployment",
        "model",
        spec={"replicas": 2, "template": {"spec": {"containers": [{"name": "m"}]}}},
    )
    result = group_workloads([seldon])
    assert len(result.assignments) == 2
    assert [pg["metadata"]["name"] for pg in result.pod_groups] == ["pg-model-uid-model"]


def test_given_intermediate_owners_are_expanded_instead_of_the_workload() -> None:
    rayjob = obj(
        "ray.io/v1", "RayJob", "job", spec={"rayClusterSpec": {"headGroupSpec": {"template": {}}}}
    )
    live = obj(
        "ray.io/v1",
        "RayCluster",
        "job-live",
        owner=rayjob,
        spec={
            "headGroupSpec": {"template": {}},
            "workerGroupSpecs": [{"groupName": "w", "replicas": 2, "template": {}}],
        },
    )
    result = group_workloads([rayjob, live])
    assert result.errors == ()
    assert all(a.pod.startswith("ns/job-live-") for a in result.assignments)
    assert len(result.assignments) == 3
    assert result.pod_groups[0]["metadata"]["name"] == "pg-job-uid-job"
    assert result.pod_groups[0]["spec"]["minMember"] == 3  # from the cluster in the chain


def test_user_managed_pods_are_left_alone() -> None:
    mine = pod(
        "mine",
        annotations={"pod-group-name": "my-pg"},
        labels={"kai.scheduler/subgroup-name": "workers"},
    )
    result = group_workloads([mine])
    assert result.pod_groups == ()
    assert result.assignment_dicts() == [
        {"pod": "ns/mine", "podGroup": "my-pg", "subGroup": "workers"}
    ]


def test_lists_are_flattened() -> None:
    listing = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [tfjob("a", 1), {"kind": "PodList", "items": [pod("b")]}],
    }
    result = group_workloads([listing])
    assert [pg["metadata"]["name"] for pg in result.pod_groups] == ["pg-a-uid-a", "pg-b-uid-b"]
