"""Every workload manifest of the shared corpus, grouped, against PodGroups written from the rules.

Covers: PodGroup names (``pg-<object>-<uid>`` and per-kind suffixes), minMember,
subgroups and their mins, queue, priority class, preemptibility; that every
synthesized pod is assigned; that non-workload files (queues, runtimes) give nothing.
Uids are the stable uids podmuster gives objects that have none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from integrations import templates
from integrations.grouping import GroupingResult, group_workloads

Loader = Callable[..., list[dict[str, Any]]]


@dataclass(frozen=True)
class Expected:
    name: str
    min_member: int | None
    subgroups: tuple[tuple[str, int | None], ...] = ()
    queue: str = "default-queue"
    priority: str = "train"
    min_sub_group: int | None = None
    parents: tuple[tuple[str, int], ...] = ()
    """``(name, minSubGroup)`` of the subgroups that have children."""


def jobset_tree(*jobs: tuple[str, int, int]) -> dict[str, Any]:
    """A JobSet's subgroups from ``(replicatedJob, replicas, leaf minMember)`` (KAI v0.16):
    each replicatedJob (minSubGroup ``replicas``) followed by its ``<rj>-replica-<i>`` leaves."""
    order: list[tuple[str, int | None]] = []
    for rj, replicas, size in jobs:
        order.append((rj, None))
        order.extend((f"{rj}-replica-{i}", size) for i in range(replicas))
    return {
        "subgroups": tuple(order),
        "parents": tuple((rj, replicas) for rj, replicas, _ in jobs),
    }


def uid(api_version: str, kind: str, name: str, namespace: str = "default") -> str:
    return templates.stable_uid(api_version, kind, namespace, name)


def pg(api_version: str, kind: str, name: str, namespace: str = "default", suffix: str = "") -> str:
    return f"pg-{name}-{uid(api_version, kind, name, namespace)}{suffix}"


def generated(api_version: str, kind: str, generate_name: str) -> str:
    """The name podmuster gives an object that has only ``generateName``."""
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"generateName": generate_name}}
    return str(templates.normalized(obj)["metadata"]["name"])


PYTORCH = "kubeflow.org/v1"
RAY = "ray.io/v1"
JOBSET = "jobset.x-k8s.io/v1alpha2"
LWS = "leaderworkerset.x-k8s.io/v1"

# One PodGroup per top owner (the minMember and subgroups written out from docs/semantics.md §4.3).
PER_WORKLOAD: dict[tuple[str, ...], list[Expected]] = {
    ("kai-scheduler/build-priority-pod.yaml",): [
        Expected(pg("v1", "Pod", "build-pod"), 1, priority="build")
    ],
    ("kai-scheduler/train-priority-pod.yaml",): [Expected(pg("v1", "Pod", "train-pod"), 1)],
    ("kai-scheduler/gpu-sharing.yaml",): [Expected(pg("v1", "Pod", "gpu-sharing"), 1)],
    ("kai-scheduler/gpu-memory.yaml",): [Expected(pg("v1", "Pod", "gpu-sharing"), 1)],
    ("kai-scheduler/quickstart-cpu-only-pod.yaml",): [Expected(pg("v1", "Pod", "cpu-only-pod"), 1)],
    ("kai-scheduler/quickstart-gpu-pod.yaml",): [Expected(pg("v1", "Pod", "gpu-pod"), 1)],
    ("kai-scheduler/two-queue-oscillation-jobs.yaml",): [
        Expected(pg("v1", "Pod", "team-a-training-job"), 1, queue="team-a"),
        Expected(pg("v1", "Pod", "team-b-training-job"), 1, queue="team-b"),
    ],
    ("kai-scheduler/pytorch-elastic.yaml",): [
        Expected(pg(PYTORCH, "PyTorchJob", "elastic-example-imagenet"), 1, (("worker", 1),))
    ],
    ("kai-scheduler/pytorch-job.yaml",): [
        Expected(
            pg(PYTORCH, "PyTorchJob", "pytorch-dist-mnist-nccl"), 3, (("master", 1), ("worker", 2))
        )
    ],
    ("kai-scheduler/ray-job.yaml",): [
        Expected(pg(RAY, "RayJob", "rayjob-sample"), 2, (("headgroup", 1), ("gpu-workers", 1)))
    ],
    ("kubeflow-training-operator/pytorch-simple.yaml",): [
        Expected(
            pg(PYTORCH, "PyTorchJob", "pytorch-simple", "kubeflow"),
            2,
            (("master", 1), ("worker", 1)),
        )
    ],
    ("kubeflow-training-operator/pytorch_job_mnist_nccl.yaml",): [
        Expected(
            pg(PYTORCH, "PyTorchJob", "pytorch-dist-mnist-nccl"), 2, (("master", 1), ("worker", 1))
        )
    ],
    ("kubeflow-training-operator/pytorch-elastic-echo.yaml",): [
        Expected(pg(PYTORCH, "PyTorchJob", "elastic-example-echo"), 1, (("worker", 1),))
    ],
    ("kubeflow-training-operator/tf_job_mnist.yaml",): [
        Expected(pg(PYTORCH, "TFJob", "dist-mnist-for-e2e-test"), 4)
    ],
    ("kubeflow-training-operator/tfjob-simple.yaml",): [
        Expected(pg(PYTORCH, "TFJob", "tfjob-simple", "kubeflow"), 2)
    ],
    ("kubeflow-training-operator/multi_worker_tfjob.yaml",): [
        Expected(pg(PYTORCH, "TFJob", "multi-worker"), 2)
    ],
    ("kubeflow-training-operator/jaxjob-cpu-demo.yaml",): [
        Expected(pg(PYTORCH, "JAXJob", "jaxjob-simple", "kubeflow"), 2)
    ],
    ("kubeflow-training-operator/xgboostjob.yaml",): [
        Expected(pg(PYTORCH, "XGBoostJob", "xgboost-dist-iris-test-train"), 3)
    ],
    ("kubeflow-training-operator/mpijob-tensorflow-mnist.yaml",): [
        Expected(pg(PYTORCH, "MPIJob", "tensorflow-mnist"), 3)
    ],
    # PaddleJob: KAI's default grouper would give 1; podmuster gangs all replicas.
    ("kubeflow-training-operator/paddlejob-simple-gpu.yaml",): [
        Expected(pg(PYTORCH, "PaddleJob", "paddle-simple-gpu", "kubeflow"), 2)
    ],
    ("mpi-operator/pi.yaml",): [Expected(pg("kubeflow.org/v2beta1", "MPIJob", "pi"), 3)],
    ("kuberay/ray-cluster.sample.yaml",): [
        Expected(
            pg(RAY, "RayCluster", "raycluster-kuberay"), 2, (("headgroup", 1), ("workergroup", 1))
        )
    ],
    ("kuberay/ray-cluster.autoscaler.yaml",): [
        Expected(pg(RAY, "RayCluster", "raycluster-autoscaler"), 1, (("headgroup", 1),))
    ],
    ("kuberay/ray-cluster.complete.yaml",): [
        Expected(
            pg(RAY, "RayCluster", "raycluster-complete"), 2, (("headgroup", 1), ("small-group", 1))
        )
    ],
    ("kuberay/ray-cluster-label-selector.yaml",): [
        Expected(
            pg(RAY, "RayCluster", "ray-label-cluster"),
            2,
            (("headgroup", 1), ("large-cpu-group", 1)),
        )
    ],
    ("kuberay/ray-cluster.kai-gpu-sharing.yaml",): [
        Expected(
            pg(RAY, "RayCluster", "raycluster-half-gpu"),
            3,
            (("headgroup", 1), ("shared-gpu", 2)),
            queue="team-a",
        )
    ],
    ("kuberay/ray-cluster.kai-scheduler.yaml",): [
        Expected(
            pg(RAY, "RayCluster", "raycluster-sample"),
            3,
            (("headgroup", 1), ("worker", 2)),
            queue="team-a",
        )
    ],
    ("kuberay/ray-cluster.tpu-v4-multihost.yaml",): [
        Expected(
            pg(RAY, "RayCluster", "raycluster-tpu-v4-multihost"),
            3,
            (("headgroup", 1), ("tpu-group", 2)),
        )
    ],
    ("kuberay/ray-cluster.tpu-v6e-16-multihost.yaml",): [
        Expected(
            pg(RAY, "RayCluster", "raycluster-tpu-v6e-multihost"),
            5,
            (("headgroup", 1), ("tpu-group", 4)),
        )
    ],
    ("kuberay/ray-job.sample.yaml",): [
        Expected(pg(RAY, "RayJob", "rayjob-sample"), 2, (("headgroup", 1), ("small-group", 1)))
    ],
    ("kuberay/ray-job.pytorch-image-classifier.yaml",): [
        Expected(
            pg(RAY, "RayJob", generated(RAY, "RayJob", "pytorch-image-classifier-")),
            5,
            (("headgroup", 1), ("gpu-group", 4)),
        )
    ],
    ("kuberay/ray-job.tpu-v6e-16-multihost.yaml",): [
        Expected(pg(RAY, "RayJob", "v6e-16-job"), 5, (("headgroup", 1), ("tpu-group", 4)))
    ],
    ("kuberay/ray-service.sample.yaml",): [
        Expected(
            pg(RAY, "RayService", "rayservice-sample"),
            2,
            (("headgroup", 1), ("small-group", 1)),
            priority="inference",  # Serve replicas are services (KAI: train)
        )
    ],
    ("kuberay/ray-service.high-throughput-llm.yaml",): [
        Expected(
            pg(RAY, "RayService", "qwen-35-4b"),
            5,
            (("headgroup", 1), ("gpu-group", 4)),
            priority="inference",
        )
    ],
    ("kuberay/ray-service.incremental-upgrade.yaml",): [
        Expected(
            pg(RAY, "RayService", "rayservice-incremental-upgrade"),
            1,
            (("headgroup", 1),),
            priority="inference",
        )
    ],
    ("lws/lws-sample.yaml",): [
        Expected(
            pg(LWS, "LeaderWorkerSet", "leaderworkerset-sample", suffix=f"-group-{i}"),
            4,
            (("leader", 1), ("workers", 3)),
        )
        for i in range(3)
    ],
    ("lws/lws-vllm-gpu.yaml",): [
        Expected(
            pg(LWS, "LeaderWorkerSet", "vllm", suffix=f"-group-{i}"),
            2,
            (("leader", 1), ("workers", 1)),
        )
        for i in range(2)
    ],
    # JobSets without startupPolicy: KAI treats a missing order as InOrder.
    # JobSet: one PodGroup, a parent per replicatedJob, a leaf per Job replica; the root's
    # minSubGroup is all replicatedJobs (no startupPolicy: AnyOrder), 1 for InOrder, and
    # those without dependsOn when some have it.
    ("jobset/paralleljobs.yaml",): [
        Expected(
            pg(JOBSET, "JobSet", "paralleljobs"),
            None,
            min_sub_group=2,
            **jobset_tree(("workers", 1, 4), ("driver", 1, 1)),
        )
    ],
    ("jobset/pytorch-cnn-mnist.yaml",): [
        Expected(
            pg(JOBSET, "JobSet", "pytorch"), None, min_sub_group=1, **jobset_tree(("workers", 1, 4))
        )
    ],
    ("jobset/startup-driver-ready.yaml",): [
        Expected(
            pg(JOBSET, "JobSet", "startup-driver-ready"),
            None,
            min_sub_group=1,
            **jobset_tree(("driver", 1, 1), ("workers", 1, 4)),
        )
    ],
    ("jobset/depends-on.yaml",): [
        Expected(
            pg(JOBSET, "JobSet", "depends-on"),
            None,
            min_sub_group=1,
            **jobset_tree(("initializer", 1, 1), ("launcher", 1, 1), ("worker", 1, 4)),
        )
    ],
    # TrainJob: skipped to the JobSet the trainer renders from the runtime.
    ("kubeflow-trainer/01-multi-node.yaml", "kubeflow-trainer/runtime-torch_distributed.yaml"): [
        Expected(
            pg(JOBSET, "JobSet", "multi-node-example"),
            None,
            min_sub_group=1,
            **jobset_tree(("node", 1, 3)),
        )
    ],
    ("kubeflow-trainer/05-multi-step.yaml",): [
        Expected(
            pg(JOBSET, "JobSet", "multi-step-example"),
            None,
            min_sub_group=1,
            **jobset_tree(("dataset-initializer", 1, 1), ("node", 1, 2)),
        )
    ],
    # Knative (gang): one per Revision; min-scale from the legacy minScale spelling.
    ("knative-serving/helloworld-service.yaml",): [
        Expected(
            pg("serving.knative.dev/v1", "Revision", "helloworld-test-image-00001"),
            1,
            priority="inference",
        )
    ],
    ("spark-operator/spark-pi.yaml",): [
        Expected(pg("sparkoperator.k8s.io/v1beta2", "SparkApplication", "spark-pi"), 1)
    ],
}


def _check(result: GroupingResult, expected: list[Expected]) -> None:
    assert result.errors == ()
    got = {
        pg["metadata"]["name"]: (
            pg["spec"].get("minMember"),
            tuple((s["name"], s.get("minMember")) for s in pg["spec"].get("subGroups", [])),
            pg["spec"]["queue"],
            pg["spec"]["priorityClassName"],
            pg["spec"].get("preemptibility"),
            pg["spec"].get("minSubGroup"),
            tuple(
                (s["name"], s["minSubGroup"])
                for s in pg["spec"].get("subGroups", [])
                if "minSubGroup" in s
            ),
        )
        for pg in result.pod_groups
    }
    want = {
        e.name: (e.min_member, e.subgroups, e.queue, e.priority, None, e.min_sub_group, e.parents)
        for e in expected
    }
    assert got == want
    assert {a.pod_group for a in result.assignments} <= set(want)
    assert len(result.assignments) == len(result.pods) > 0


@pytest.mark.parametrize("files", list(PER_WORKLOAD), ids=lambda f: f[0])
def test_corpus_workload_groups(files: tuple[str, ...], manifests: Loader) -> None:
    _check(group_workloads(manifests(*files)), PER_WORKLOAD[files])


def _per_pod(result: GroupingResult, group_uid: Callable[[str], str]) -> None:
    """Per-pod kinds: one PodGroup per pod named from the pod, min 1."""
    assert result.errors == ()
    names = {pg["metadata"]["name"] for pg in result.pod_groups}
    expected = set()
    for assignment in result.assignments:
        pod_name = assignment.pod.split("/", 1)[1]
        expected.add(f"pg-{pod_name}-{group_uid(pod_name)}")
        assert assignment.pod_group == f"pg-{pod_name}-{group_uid(pod_name)}"
    assert names == expected
    assert all(pg["spec"]["minMember"] == 1 for pg in result.pod_groups)


def test_corpus_batch_job_is_one_group_per_job(manifests: Loader) -> None:
    result = group_workloads(manifests("kai-scheduler/batch-job.yaml"))
    assert result.errors == ()
    [group] = result.pod_groups  # both pods (parallelism 2) in pg-<job>-<jobUID>, minMember 1
    assert group["metadata"]["name"] == pg("batch/v1", "Job", "batch-job")
    assert group["spec"]["minMember"] == 1
    assert {a.pod_group for a in result.assignments} == {group["metadata"]["name"]}
    assert len(result.assignments) == 2
    assert {pg["spec"]["queue"] for pg in result.pod_groups} == {"default-queue"}  # pod label


def test_corpus_knative_and_deployment(manifests: Loader) -> None:
    result = group_workloads(manifests("knative-serving/dataplane-probe-setup.yaml"))
    assert result.errors == ()
    by_name = {pg["metadata"]["name"]: pg["spec"] for pg in result.pod_groups}
    for service in ("activator", "queue-proxy"):
        revision = pg("serving.knative.dev/v1", "Revision", f"{service}-00001")
        assert by_name.pop(revision)["minMember"] == 5  # autoscaling.knative.dev/minScale: "5"
    # the Deployment's 5 replicas: one PodGroup each, owned by the pod, inference by default
    assert len(by_name) == 5
    assert {spec["priorityClassName"] for spec in by_name.values()} == {"inference"}
    assert all(name.startswith("pg-deployment-") for name in by_name)


@pytest.mark.parametrize(
    ("file", "steps"),
    [
        ("argo-workflows/hello-world.yaml", 1),
        ("argo-workflows/steps.yaml", 3),
        ("argo-workflows/dag-diamond.yaml", 4),
    ],
)
def test_corpus_argo_step_pods_are_grouped_per_pod(
    file: str, steps: int, manifests: Loader
) -> None:
    result = group_workloads(manifests(file))
    _per_pod(result, lambda pod: uid("v1", "Pod", pod))
    assert len(result.pod_groups) == steps


def test_corpus_argo_resource_job_is_grouped_by_the_job_adapter(manifests: Loader) -> None:
    result = group_workloads(manifests("argo-workflows/k8s-jobs.yaml"))
    assert result.errors == ()
    owners = sorted(pg["metadata"]["ownerReferences"][0]["kind"] for pg in result.pod_groups)
    assert owners == ["Job", "Pod"]  # the Job's 3 pods together + the resource step pod
    job_groups = [
        pg for pg in result.pod_groups if pg["metadata"]["ownerReferences"][0]["kind"] == "Job"
    ]
    job_uid = job_groups[0]["metadata"]["ownerReferences"][0]["uid"]
    assert all(pg["metadata"]["name"].endswith(job_uid) for pg in job_groups)


@pytest.mark.parametrize(
    "file",
    [
        "kai-scheduler/limited-queue.yaml",
        "kai-scheduler/quickstart-default-queues.yaml",
        "kubeflow-trainer/runtime-torch_distributed.yaml",
    ],
)
def test_corpus_non_workloads_give_nothing(file: str, manifests: Loader) -> None:
    result = group_workloads(manifests(file))
    assert result.pod_groups == ()
    assert result.errors == ()
    assert result.assignments == ()


def test_corpus_coverage_is_complete(corpus: Any) -> None:
    """Every manifest file of the corpus appears in one of the tests above."""
    covered = {f for files in PER_WORKLOAD for f in files} | {
        "kai-scheduler/batch-job.yaml",
        "knative-serving/dataplane-probe-setup.yaml",
        "argo-workflows/hello-world.yaml",
        "argo-workflows/steps.yaml",
        "argo-workflows/dag-diamond.yaml",
        "argo-workflows/k8s-jobs.yaml",
        "kai-scheduler/limited-queue.yaml",
        "kai-scheduler/quickstart-default-queues.yaml",
        "kubeflow-trainer/runtime-torch_distributed.yaml",
    }
    root = corpus / "manifests"
    present = {str(p.relative_to(root)) for p in root.glob("*/*.yaml")}
    assert present == covered
