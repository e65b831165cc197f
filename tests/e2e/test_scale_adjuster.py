"""The node-scale-adjuster against a real API server (docs/semantics.md §7).

A half-GPU pod of ``kai-scheduler`` that no node can take is marked
``PodScheduled=False/Unschedulable`` (by the test, standing in for the scheduler,
which does not run here). ``podmuster run node-scale-adjuster`` must then create
its whole-GPU scaling pod in ``kai-scale-adjust`` (default scheduler, the pod's
CPU/memory, selector and tolerations, ``PodScheduled=False`` for autoscalers).
Deleting the original removes the scaling pod and starts the cool-down: a new
pending pod gets its scaling pod only once the cool-down is over.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from .controlplane import Cluster
from .kube import KubectlError, Obj, wait_for
from .live import component
from .objects import KWOK_TOLERATION

pytestmark = pytest.mark.e2e

SCALING_NS = "kai-scale-adjust"
COOL_DOWN = 6.0


@pytest.fixture(scope="module")
def adjuster(cluster: Cluster) -> Iterator[None]:
    try:
        cluster.kubectl.run("create", "namespace", SCALING_NS)
    except KubectlError as exc:
        if "AlreadyExists" not in exc.stderr:
            raise
    flags = ["--metrics-port=-1", "--log-format=json", "--debounce=0.1",
             f"--scale-cool-down-seconds={COOL_DOWN:g}"]  # fmt: skip
    with component(cluster, "node-scale-adjuster", flags):
        yield
    cluster.kubectl.run("delete", "pods", "-n", SCALING_NS, "-l", "app=scaling-pod",
                        "--ignore-not-found", "--wait=false")  # fmt: skip


def sharing_pod(name: str, namespace: str, pool: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": {"gpu-fraction": "0.5"}},
        "spec": {
            "schedulerName": "kai-scheduler",
            "restartPolicy": "Never",
            "nodeSelector": {"pool": pool},
            "tolerations": [KWOK_TOLERATION],
            "containers": [
                {
                    "name": "main",
                    "image": "registry.invalid/x:none",
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                },
                {
                    "name": "side",
                    "image": "registry.invalid/x:none",
                    "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
                },
            ],
        },
    }


def mark_unschedulable(cluster: Cluster, namespace: str, name: str) -> None:
    """What the scheduler writes for a pod it could not place."""
    patch = ('{"status":{"conditions":[{"type":"PodScheduled","status":"False",'
             '"reason":"Unschedulable","message":"0/1 nodes are available"}]}}')  # fmt: skip
    cluster.kubectl.run("patch", "pod", name, "-n", namespace, "--subresource=status",
                        "--type=strategic", "-p", patch)  # fmt: skip


def scaling_pod(cluster: Cluster, name: str) -> Obj | None:
    try:
        return cluster.kubectl.get("pod", name, "-n", SCALING_NS)
    except KubectlError:
        return None


def test_scaling_pod_lifecycle(cluster: Cluster, namespace: str, adjuster: None) -> None:
    pool = f"gpu-{uuid.uuid4().hex[:5]}"
    cluster.kubectl.create(sharing_pod("half", namespace, pool))
    mark_unschedulable(cluster, namespace, "half")
    name = f"{namespace}-half"

    def created() -> Obj | None:
        pod = scaling_pod(cluster, name)
        conditions = (pod or {}).get("status", {}).get("conditions") or []
        return pod if any(c.get("reason") == "Unschedulable" for c in conditions) else None

    pod = wait_for(f"scaling pod {name}", created, timeout=30)
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["labels"]["app"] == "scaling-pod"
    assert meta["annotations"]["kai.scheduler/unschedulable-pod-name"] == "half"
    assert meta["annotations"]["kai.scheduler/unschedulable-pod-namespace"] == namespace
    assert spec["schedulerName"] == "default-scheduler"  # none set: the API server's default
    assert spec["restartPolicy"] == "OnFailure"
    assert spec["nodeSelector"] == {"pool": pool}
    assert KWOK_TOLERATION in spec["tolerations"]
    (container,) = spec["containers"]
    requests = container["resources"]["requests"]
    assert requests["nvidia.com/gpu"] == "1"
    assert requests["cpu"] == "750m"
    assert int(requests["memory"]) == 1280 * 2**20
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    (condition,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")

    # The original goes: so does its scaling pod, and the cool-down starts.
    cluster.kubectl.run("delete", "pod", "half", "-n", namespace, "--wait=false",
                        "--grace-period=0", "--force")  # fmt: skip
    wait_for(f"scaling pod {name} deleted", lambda: scaling_pod(cluster, name) is None, timeout=30)
    gone_at = time.monotonic()
    cluster.kubectl.create(sharing_pod("next", namespace, pool))
    mark_unschedulable(cluster, namespace, "next")
    follow = f"{namespace}-next"
    time.sleep(max(0.0, COOL_DOWN / 2 - (time.monotonic() - gone_at)))
    assert scaling_pod(cluster, follow) is None, "created during the cool-down"
    wait_for(f"scaling pod {follow} after the cool-down", lambda: scaling_pod(cluster, follow),
             timeout=30)  # fmt: skip
    assert time.monotonic() - gone_at >= COOL_DOWN - 1.0
