"""Smoke tests: real framework operators reconcile their workloads into pods.

podmuster's podgrouper reads the pods and owners that these operators create;
the tests prove the operators built from the Go module proxy run here (and
skip, naming the failed build, when one could not be built).
"""

from __future__ import annotations

import pytest

from .controlplane import Cluster
from .frameworks import CORPUS_ONLY, install_corpus_crds
from .kube import Obj, wait_for
from .objects import pod_template

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def raycluster(name: str, namespace: str, workers: int) -> Obj:
    head = pod_template()
    head["spec"]["containers"][0]["name"] = "ray-head"
    worker = pod_template()
    worker["spec"]["containers"][0]["name"] = "ray-worker"
    worker["spec"]["restartPolicy"] = "Always"
    head["spec"]["restartPolicy"] = "Always"
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": head},
            "workerGroupSpecs": [
                {
                    "groupName": "workers",
                    "replicas": workers,
                    "minReplicas": workers,
                    "maxReplicas": workers,
                    "rayStartParams": {},
                    "template": worker,
                }
            ],
        },
    }


def test_kuberay_creates_head_and_worker_pods(
    cluster: Cluster, namespace: str, kuberay: str
) -> None:
    cluster.kubectl.create(raycluster("ray", namespace, workers=2))

    def pods() -> list[Obj] | None:
        got = cluster.kubectl.items("pods", "-n", namespace, "-l", "ray.io/cluster=ray")
        return got if len(got) == 3 else None

    found = wait_for("RayCluster ray's 3 pods", pods, timeout=120)
    types = sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in found)
    assert types == ["head", "worker", "worker"]
    for p in found:
        owner = p["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"]) == ("RayCluster", "ray")


def pytorchjob(name: str, namespace: str, workers: int) -> Obj:
    def replica(count: int) -> Obj:
        tpl = pod_template()
        tpl["spec"]["containers"][0]["name"] = "pytorch"  # the operator looks for it
        return {"replicas": count, "restartPolicy": "Never", "template": tpl}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(workers)}},
    }


def test_training_operator_creates_pytorchjob_pods(
    cluster: Cluster, namespace: str, training_operator: str
) -> None:
    cluster.kubectl.create(pytorchjob("torch", namespace, workers=2))
    selector = "training.kubeflow.org/job-name=torch"

    def pods() -> list[Obj] | None:
        got = cluster.kubectl.items("pods", "-n", namespace, "-l", selector)
        return got if len(got) == 3 else None

    found = wait_for("PyTorchJob torch's 3 pods", pods, timeout=120)
    roles = sorted(p["metadata"]["labels"]["training.kubeflow.org/replica-type"] for p in found)
    assert roles == ["master", "worker", "worker"]


@pytest.mark.parametrize("framework", sorted(CORPUS_ONLY))
def test_corpus_crds_install(cluster: Cluster, framework: str) -> None:
    """JobSet and LWS have no operator module on the proxy: their CRDs at least serve."""
    names = install_corpus_crds(cluster, framework)
    assert names
    for name in names:
        cluster.kubectl.run("get", name.split(".", 1)[0], "-A")
