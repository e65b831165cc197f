"""Elastic workloads whose autoscaler edits them (docs/semantics.md §7): the podgrouper
recomputes the PodGroup's minMember on every pod reconcile.

Covers: a RayCluster with ``minReplicas: 0`` follows ``replicas`` up and down (the
Ray autoscaler's edits); ``minReplicas > 0`` pins the minimum while replicas grow;
a PyTorchJob's ``elasticPolicy.minReplicas`` sets the minimum and an edit of it is
picked up, while more Worker replicas leave it alone; the queue the PodGroup was
given stays.
"""

from __future__ import annotations

from typing import Any

from podgrouper_objects import fake, obj, pod, pod_group, reconcile

RAY = "ray.io/v1"
PYTORCH = "kubeflow.org/v1"


def ray_cluster(replicas: int, min_replicas: int, max_replicas: int = 8) -> dict[str, Any]:
    """A RayCluster as the KubeRay docs write one: a head and one autoscaled GPU group."""
    container = {
        "name": "ray-worker",
        "image": "rayproject/ray:2.9.0",
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }
    spec = {
        "enableInTreeAutoscaling": True,
        "headGroupSpec": {
            "rayStartParams": {"dashboard-host": "0.0.0.0"},
            "template": {"spec": {"containers": [{"name": "ray-head", "image": "ray"}]}},
        },
        "workerGroupSpecs": [
            {
                "groupName": "gpu-group",
                "replicas": replicas,
                "minReplicas": min_replicas,
                "maxReplicas": max_replicas,
                "rayStartParams": {},
                "template": {"spec": {"containers": [container]}},
            }
        ],
    }
    return obj(RAY, "RayCluster", "raycluster-autoscaler", labels={"kai.scheduler/queue": "team"},
               spec=spec)  # fmt: skip


def ray_worker(name: str, cluster: dict[str, Any]) -> dict[str, Any]:
    return pod(name, cluster, labels={"ray.io/group": "gpu-group", "ray.io/node-type": "worker"})


def autoscale(kube: Any, cluster: dict[str, Any], replicas: int) -> dict[str, Any]:
    """What the Ray autoscaler does: edit the worker group's ``replicas``."""
    cluster["spec"]["workerGroupSpecs"][0]["replicas"] = replicas
    kube.add(cluster)
    return cluster


def minimums(group: dict[str, Any]) -> tuple[int, dict[str, int]]:
    spec = group["spec"]
    return spec["minMember"], {s["name"]: s["minMember"] for s in spec["subGroups"]}


PG = "pg-raycluster-autoscaler-uid-raycluster-autoscaler"


def test_ray_min_replicas_zero_follows_replicas_up_and_down() -> None:
    rc = ray_cluster(replicas=2, min_replicas=0)
    first = ray_worker("w-0", rc)
    kube = fake(rc, first)
    reconcile(kube, first)
    assert minimums(pod_group(kube, PG)) == (3, {"headgroup": 1, "gpu-group": 2})
    autoscale(kube, rc, 4)
    added = ray_worker("w-3", rc)
    kube.add(added)
    reconcile(kube, added)
    assert minimums(pod_group(kube, PG)) == (5, {"headgroup": 1, "gpu-group": 4})
    autoscale(kube, rc, 1)  # scale-down: the next reconcile lowers the minimum
    reconcile(kube, first)
    assert minimums(pod_group(kube, PG)) == (2, {"headgroup": 1, "gpu-group": 1})
    assert pod_group(kube, PG)["spec"]["queue"] == "team"


def test_ray_min_replicas_pins_the_minimum_while_replicas_grow() -> None:
    rc = ray_cluster(replicas=2, min_replicas=2)
    first = ray_worker("w-0", rc)
    kube = fake(rc, first)
    reconcile(kube, first)
    assert minimums(pod_group(kube, PG)) == (3, {"headgroup": 1, "gpu-group": 2})
    autoscale(kube, rc, 6)
    extra = ray_worker("w-5", rc)
    kube.add(extra)
    outcome = reconcile(kube, extra)
    assert outcome.applied is not None
    assert minimums(pod_group(kube, PG)) == (3, {"headgroup": 1, "gpu-group": 2})
    assert outcome.applied.subgroup == "gpu-group"  # the extra joins the same gang


def pytorch_elastic(workers: int, min_replicas: int) -> dict[str, Any]:
    """A PyTorchJob with an elastic policy, as in Kubeflow's elastic examples."""

    def replica(count: int) -> dict[str, Any]:
        container = {"name": "pytorch", "image": "kubeflow/pytorch-elastic-example-imagenet"}
        return {"replicas": count, "restartPolicy": "OnFailure",
                "template": {"spec": {"containers": [container]}}}  # fmt: skip

    spec = {
        "elasticPolicy": {
            "rdzvBackend": "c10d",
            "minReplicas": min_replicas,
            "maxReplicas": 8,
            "maxRestarts": 100,
        },
        "pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(workers)},
    }
    return obj(PYTORCH, "PyTorchJob", "elastic-imagenet", spec=spec)


def pytorch_worker(index: int, job: dict[str, Any]) -> dict[str, Any]:
    labels = {
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": str(index),
    }
    return pod(f"elastic-imagenet-worker-{index}", job, labels=labels)


def test_pytorch_elastic_min_replicas_is_recomputed() -> None:
    job = pytorch_elastic(workers=3, min_replicas=2)
    worker = pytorch_worker(0, job)
    kube = fake(job, worker)
    reconcile(kube, worker)
    name = "pg-elastic-imagenet-uid-elastic-imagenet"
    assert minimums(pod_group(kube, name)) == (2, {"master": 1, "worker": 1})
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 6  # more workers: extras
    kube.add(job)
    reconcile(kube, worker)
    assert minimums(pod_group(kube, name)) == (2, {"master": 1, "worker": 1})
    job["spec"]["elasticPolicy"]["minReplicas"] = 4  # the minimum itself edited
    kube.add(job)
    reconcile(kube, worker)
    assert minimums(pod_group(kube, name)) == (4, {"master": 1, "worker": 3})
