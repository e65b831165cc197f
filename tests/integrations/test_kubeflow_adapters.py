"""Kubeflow jobs: replica sums, minAvailable, PyTorch elastic and subgroups, segments, MPI.

Covers: the sum of replicas and its errors (missing/zero/negative/non-integer
replicas, missing required replica types); ``schedulingPolicy.minAvailable``;
PyTorch ``elasticPolicy.minReplicas`` and the master/worker subgroups; segment-size
subgroups (the §4.3 example Master 1, Worker 7, size 4) with segment topology;
the MPI launcher rule for ``WaitForWorkersReady``; PaddleJob and Notebook.
"""

from __future__ import annotations

from typing import Any

import pytest
from adapter_builders import Lookup, ctx, group, obj, pod, subgroups

from integrations import base
from integrations.grouping import group_workloads

KF = "kubeflow.org/v1"


def replica(n: Any, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": {"containers": [{"name": "c"}]}}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    return {"replicas": n, "template": template}


def pytorch(spec: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    return obj(KF, "PyTorchJob", "pt", spec=spec, **kwargs)


def worker_pod(index: int, job: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    labels = {
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": str(index),
    }
    return pod(f"pt-worker-{index}", labels=labels, owner=job, **kwargs)


def test_tfjob_sums_replicas() -> None:
    tf = obj(KF, "TFJob", "tf", spec={"tfReplicaSpecs": {"PS": replica(1), "Worker": replica(3)}})
    assert group(ctx(tf, pod(owner=tf))).min_member == 4


@pytest.mark.parametrize(
    ("replicas", "problem"),
    [
        (None, "must be set"),
        (0, "must be set"),
        (-2, "must be >= 0"),
        ("two", "expected an integer"),
        ("3", "expected an integer"),
        (2.5, "expected an integer"),
    ],
)
def test_bad_replicas_name_the_object_and_field(replicas: Any, problem: str) -> None:
    tf = obj(KF, "TFJob", "tf", spec={"tfReplicaSpecs": {"Worker": replica(replicas)}})
    with pytest.raises(base.GroupingError) as caught:
        group(ctx(tf, pod(owner=tf)))
    assert caught.value.obj == "TFJob ns/tf"
    assert caught.value.field == "spec.tfReplicaSpecs.Worker.replicas"
    assert problem in str(caught.value)


def test_min_available_wins_and_skips_the_sum() -> None:
    spec = {
        "runPolicy": {"schedulingPolicy": {"minAvailable": 2}},
        "xgbReplicaSpecs": {"Worker": {"template": {}}},
    }
    xgb = obj(KF, "XGBoostJob", "x", spec=spec)
    assert group(ctx(xgb, pod(owner=xgb))).min_member == 2


def test_required_replica_types() -> None:
    xgb = obj(KF, "XGBoostJob", "x", spec={"xgbReplicaSpecs": {"Worker": replica(2)}})
    with pytest.raises(base.GroupingError, match=r"spec.xgbReplicaSpecs.Master"):
        group(ctx(xgb, pod(owner=xgb)))
    jax = obj(KF, "JAXJob", "j", spec={"jaxReplicaSpecs": {"Chief": replica(1)}})
    with pytest.raises(base.GroupingError, match=r"spec.jaxReplicaSpecs.Worker"):
        group(ctx(jax, pod(owner=jax)))


def test_pytorch_master_worker_subgroups() -> None:
    job = pytorch({"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(3)}})
    master = pod("pt-master-0", labels={"training.kubeflow.org/replica-type": "master"}, owner=job)
    spec = group(ctx(job, master))
    assert spec.min_member == 4
    assert subgroups(spec) == [("master", 1, None), ("worker", 3, None)]
    assert spec.subgroup_of("pt-master-0") == "master"
    assert group(ctx(job, worker_pod(2, job))).subgroup_of("pt-worker-2") == "worker"


def test_pytorch_elastic_then_min_available() -> None:
    specs = {"Master": replica(1), "Worker": replica(4)}
    elastic = pytorch({"pytorchReplicaSpecs": specs, "elasticPolicy": {"minReplicas": 3}})
    spec = group(ctx(elastic, worker_pod(0, elastic)))
    assert spec.min_member == 3
    assert subgroups(spec) == [("master", 1, None), ("worker", 2, None)]
    both = pytorch(
        {
            "pytorchReplicaSpecs": specs,
            "elasticPolicy": {"minReplicas": 3},
            "runPolicy": {"schedulingPolicy": {"minAvailable": 1}},
        }
    )
    spec = group(ctx(both, worker_pod(0, both)))
    assert spec.min_member == 1
    assert subgroups(spec) == [("master", 1, None), ("worker", 0, None)]
    bad = pytorch({"pytorchReplicaSpecs": specs, "elasticPolicy": {"minReplicas": "3.5"}})
    with pytest.raises(base.GroupingError, match=r"spec\.elasticPolicy\.minReplicas"):
        group(ctx(bad, worker_pod(0, bad)))


def test_pytorch_segments_example_from_the_reference() -> None:
    notes = {
        "kai.scheduler/segment-size": "4",
        "kai.scheduler/segment-topology-required-placement": "rack",
    }
    job = pytorch(
        {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(7, notes)}},
        annotations={"kai.scheduler/topology": "dc"},
    )
    spec = group(ctx(job, worker_pod(5, job)))
    assert spec.min_member == 8
    assert subgroups(spec) == [
        ("master", 1, None),
        ("worker", 2, None),  # minSubGroup: both segments (KAI v0.17)
        ("worker-0", 4, "worker"),
        ("worker-1", 3, "worker"),
    ]
    assert spec.subgroup_of("pt-worker-5") == "worker-1"
    assert spec.subgroups[2].topology == base.TopologyConstraint("dc", "rack", "")
    assert spec.subgroups[1].topology is None


def test_pytorch_elastic_segments_past_min_replicas_are_optional() -> None:
    """minReplicas 5 of 8 workers in segments of 2: segments 0-2 hold workers 0-5 and are
    mandatory, segment 3 is elastic (minMember 0, written)."""
    notes = {"kai.scheduler/segment-size": "2"}
    job = pytorch(
        {
            "elasticPolicy": {"minReplicas": 5, "maxReplicas": 8},
            "pytorchReplicaSpecs": {"Worker": replica(8, notes)},
        }
    )
    spec = group(ctx(job, worker_pod(7, job)))
    assert subgroups(spec) == [
        ("worker", 4, None),
        ("worker-0", 2, "worker"),
        ("worker-1", 2, "worker"),
        ("worker-2", 2, "worker"),
        ("worker-3", 0, "worker"),
    ]
    written = spec.to_manifest()["spec"]["subGroups"]
    assert written[0] == {"name": "worker", "minSubGroup": 4}
    assert written[4] == {"name": "worker-3", "minMember": 0, "parent": "worker"}


def test_pytorch_segment_size_from_the_pod_and_its_errors() -> None:
    job = pytorch({"pytorchReplicaSpecs": {"Worker": replica(4)}})
    spec = group(ctx(job, worker_pod(3, job, annotations={"kai.scheduler/segment-size": "2"})))
    assert subgroups(spec)[1:] == [("worker-0", 2, "worker"), ("worker-1", 2, "worker")]
    assert spec.subgroup_of("pt-worker-3") == "worker-1"
    for size in ("0", "x"):
        with pytest.raises(base.GroupingError, match=r"kai\.scheduler/segment-size"):
            group(ctx(job, worker_pod(0, job, annotations={"kai.scheduler/segment-size": size})))
    no_index = pod(
        "w",
        labels={"training.kubeflow.org/replica-type": "worker"},
        annotations={"kai.scheduler/segment-size": "2"},
        owner=job,
    )
    with pytest.raises(base.GroupingError, match="replica-index"):
        group(ctx(job, no_index))


def mpi(policy: str | None = None, version: str = "kubeflow.org/v2beta1") -> dict[str, Any]:
    spec: dict[str, Any] = {"mpiReplicaSpecs": {"Launcher": replica(1), "Worker": replica(4)}}
    if policy:
        spec["launcherCreationPolicy"] = policy
    return obj(version, "MPIJob", "m", spec=spec)


def test_mpi_launcher_rule() -> None:
    assert group(ctx(mpi(), pod(owner=mpi()))).min_member == 5
    waiting = mpi("WaitForWorkersReady")
    assert group(ctx(waiting, pod(owner=waiting))).min_member == 4
    launcher = pod(
        "m-launcher",
        labels={
            "training.kubeflow.org/job-name": "m",
            "training.kubeflow.org/job-role": "launcher",
        },
    )
    assert group(ctx(waiting, pod(owner=waiting), lookup=Lookup(launcher))).min_member == 5
    terminating = {
        **launcher,
        "metadata": {**launcher["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"},
    }
    assert group(ctx(waiting, pod(owner=waiting), lookup=Lookup(terminating))).min_member == 4
    v1 = mpi("WaitForWorkersReady", KF)
    assert group(ctx(v1, pod(owner=v1))).min_member == 4
    missing = obj(KF, "MPIJob", "m", spec={"mpiReplicaSpecs": {"Worker": replica(2)}})
    with pytest.raises(base.GroupingError, match=r"mpiReplicaSpecs\.Launcher"):
        group(ctx(missing, pod(owner=missing)))


def test_mpi_wait_for_workers_synthesizes_no_launcher_and_subtracts_it() -> None:
    result = group_workloads([mpi("WaitForWorkersReady")])
    assert result.errors == ()
    assert [a.pod for a in result.assignments] == [f"ns/m-worker-{i}" for i in range(4)]
    assert result.pod_groups[0]["spec"]["minMember"] == 4
    result = group_workloads([mpi()])
    assert result.pod_groups[0]["spec"]["minMember"] == 5
    assert "ns/m-launcher-" in result.assignments[0].pod


def test_paddlejob_gangs_its_replicas() -> None:
    paddle = obj(
        KF,
        "PaddleJob",
        "pd",
        spec={"paddleReplicaSpecs": {"Master": replica(1), "Worker": replica(2)}},
    )
    assert group(ctx(paddle, pod(owner=paddle))).min_member == 3
    # with KAI's exact table PaddleJob falls back to the default grouper
    assert group(ctx(paddle, pod(owner=paddle), reproduce_kai_bugs=True)).min_member == 1


def test_notebook_defaults_to_build() -> None:
    for version in ("kubeflow.org/v1beta1", "kubeflow.org/v1"):
        nb = obj(
            version, "Notebook", "nb", spec={"template": {"spec": {"containers": [{"name": "c"}]}}}
        )
        result = group_workloads([nb])
        assert result.errors == ()
        assert result.pod_groups[0]["spec"]["priorityClassName"] == "build"
        assert [a.pod for a in result.assignments] == ["ns/nb-0"]
    v1 = obj("kubeflow.org/v1", "Notebook", "nb")
    assert group(ctx(v1, pod(), reproduce_kai_bugs=True)).priority_class_name == "train"
