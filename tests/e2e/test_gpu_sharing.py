"""Fractional GPUs through the binder on a real API server, kwok standing in for kubelets.

Each test writes Fraction BindRequests by hand (as the scheduler would) for pods that
carry the admission mutation's env wiring (``webhooks.podenv`` applied here), and
``podmuster run binder`` does the rest: a reservation pod per GPU group pinned to the
node, the pod labelled ``runai-gpu-group`` and bound, its ConfigMap holding the GPU's
UUID and the portion. The test itself stands in for the GPU device plugin and the code
inside KAI's reservation image: a background thread annotates every Running reservation
pod with a fake UUID (``GPU-<hash>``), except on nodes whose GPUs it is told are broken.
Covered: one pod; two pods sharing one reservation pod; both deleted, the reservation
pod goes; a reservation pod deleted, its sharing pod goes with an Event; a reservation
that never reports, the BindRequest fails with the timeout reason.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from webhooks.podenv import mutate_pod

from .conftest import create_kwok_node, require_kwok
from .controlplane import Cluster
from .kube import KubectlError, Obj, wait_for
from .live import component
from .objects import KWOK_TOLERATION, events
from .procs import ManagedProcess, free_port

pytestmark = pytest.mark.e2e

RESERVATIONS = "kai-resource-reservation"
TIMEOUT = 6.0
BR = "bindrequests.scheduling.run.ai"


class FakeDevicePlugin:
    """Annotates Running reservation pods with a fake GPU UUID, as the reservation
    image does on a real node; nodes in ``broken`` never report."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.broken: set[str] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="fake-device-plugin", daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.3):
            try:
                self._report()
            except KubectlError:
                continue  # a pod deleted meanwhile: look again next round

    def _report(self) -> None:
        for pod in self.cluster.kubectl.items("pods", "-n", RESERVATIONS):
            meta, node = pod["metadata"], pod["spec"].get("nodeName", "")
            annotations = meta.get("annotations") or {}
            if "run.ai/reserve_for_gpu_index" in annotations or node in self.broken:
                continue
            if (pod.get("status") or {}).get("phase") != "Running":
                continue
            fake = "GPU-" + hashlib.sha256(f"{node}/{meta['name']}".encode()).hexdigest()[:12]
            self.cluster.kubectl.run(
                "annotate", "pod", meta["name"], "-n", RESERVATIONS,
                f"run.ai/reserve_for_gpu_index={fake}",
            )  # fmt: skip


@pytest.fixture(scope="module")
def device_plugin(cluster: Cluster) -> Iterator[FakeDevicePlugin]:
    if not cluster.kubectl.exists("namespace", RESERVATIONS):
        cluster.kubectl.run("create", "namespace", RESERVATIONS)
    wait_for(
        "the default ServiceAccount of the reservation namespace",
        lambda: cluster.kubectl.exists("serviceaccount", "default", "-n", RESERVATIONS),
    )
    if not cluster.kubectl.exists("serviceaccount", RESERVATIONS, "-n", RESERVATIONS):
        cluster.kubectl.run("create", "serviceaccount", RESERVATIONS, "-n", RESERVATIONS)
    plugin = FakeDevicePlugin(cluster)
    plugin.thread.start()
    yield plugin
    plugin.stop.set()
    plugin.thread.join(timeout=10)


@pytest.fixture(scope="module")
def binder(cluster: Cluster, device_plugin: FakeDevicePlugin) -> Iterator[ManagedProcess]:
    """The binder; the tests' cluster has no RuntimeClass ``nvidia``, so none is named."""
    flags = [
        f"--metrics-port={free_port()}",
        "--resource-reservation-runtime-class=",
        f"--resource-reservation-allocation-timeout={TIMEOUT}",
        "--resource-reservation-grace=1",
        "--resource-reservation-image=registry.invalid/podmuster/resource-reservation:none",
    ]
    with component(cluster, "binder", flags) as proc:
        yield proc
        proc.check_alive()


@pytest.fixture
def gpu_node(cluster: Cluster) -> Iterator[str]:
    require_kwok(cluster)
    name = f"gpu-{uuid.uuid4().hex[:6]}"
    allocatable = {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "2"}
    create_kwok_node(cluster, name, allocatable, {"nvidia.com/gpu.memory": "16000"})
    yield name
    cluster.kubectl.run("delete", "node", name, "--ignore-not-found", "--wait=false")


def sharing_pod(cluster: Cluster, namespace: str, name: str, fraction: str = "0.5") -> None:
    """A pod as the admission mutation leaves it (env read from its ConfigMap)."""
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace,
                     "annotations": {"gpu-fraction": fraction}},
        "spec": {
            "schedulerName": "kai-scheduler",
            "restartPolicy": "Never",
            "tolerations": [KWOK_TOLERATION],
            "containers": [{"name": "main", "image": "registry.invalid/x:none",
                            "resources": {"requests": {"cpu": "100m"}}}],
        },
    }  # fmt: skip
    for op in mutate_pod(pod, "kai-scheduler", "e2e"):
        *parents, last = (p.replace("~1", "/") for p in op["path"][1:].split("/"))
        target: Any = pod
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        target[last] = op["value"]
    cluster.kubectl.create(pod)


def fraction_request(
    cluster: Cluster, namespace: str, pod: str, node: str, group: str, portion: str = "0.50"
) -> None:
    uid = cluster.kubectl.get("pod", pod, "-n", namespace)["metadata"]["uid"]
    cluster.kubectl.create(
        {
            "apiVersion": "scheduling.run.ai/v1alpha2",
            "kind": "BindRequest",
            "metadata": {
                "name": pod,
                "namespace": namespace,
                "labels": {"selected-node": node},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": uid}],
            },
            "spec": {
                "podName": pod,
                "selectedNode": node,
                "receivedResourceType": "Fraction",
                "receivedGPU": {"count": 1, "portion": portion},
                "selectedGPUGroups": [group],
                "backoffLimit": 3,
            },
        }
    )


def br_status(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    return dict(cluster.kubectl.get(BR, name, "-n", namespace).get("status") or {})


def succeeded(cluster: Cluster, namespace: str, name: str) -> None:
    wait_for(
        f"BindRequest {name} Succeeded",
        lambda: (s := br_status(cluster, namespace, name)).get("phase") == "Succeeded" or s,
        timeout=30,
    )
    assert br_status(cluster, namespace, name)["phase"] == "Succeeded"


def reservations_of(cluster: Cluster, group: str) -> list[Obj]:
    return cluster.kubectl.items("pods", "-n", RESERVATIONS, "-l", f"runai-gpu-group={group}")


def gone(cluster: Cluster, *args: str) -> bool:
    return not cluster.kubectl.exists(*args)


def test_two_pods_share_one_reservation_pod_until_both_are_gone(
    cluster: Cluster, namespace: str, gpu_node: str, binder: ManagedProcess
) -> None:
    group = f"grp-{uuid.uuid4().hex[:8]}"
    sharing_pod(cluster, namespace, "nb-0")
    fraction_request(cluster, namespace, "nb-0", gpu_node, group)
    succeeded(cluster, namespace, "nb-0")
    [reservation] = reservations_of(cluster, group)
    assert reservation["spec"]["nodeName"] == gpu_node
    assert reservation["metadata"]["labels"]["app"] == "kai-resource-reservation"
    assert reservation["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    gpu = reservation["metadata"]["annotations"]["run.ai/reserve_for_gpu_index"]
    assert gpu.startswith("GPU-")
    pod = cluster.kubectl.get("pod", "nb-0", "-n", namespace)
    assert pod["spec"]["nodeName"] == gpu_node
    assert pod["metadata"]["labels"]["runai-gpu-group"] == group
    assert pod["metadata"]["annotations"]["received-resource-type"] == "Fraction"
    configmap = cluster.kubectl.get("configmap", "nb-0-shared-gpu", "-n", namespace)
    assert configmap["data"] == {"NVIDIA_VISIBLE_DEVICES": gpu, "GPU_PORTION": "0.50"}
    assert configmap["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    env = {e["name"]: e["valueFrom"] for e in pod["spec"]["containers"][0]["env"]}
    assert env["NVIDIA_VISIBLE_DEVICES"]["configMapKeyRef"]["name"] == "nb-0-shared-gpu"

    sharing_pod(cluster, namespace, "nb-1", "0.25")
    fraction_request(cluster, namespace, "nb-1", gpu_node, group, portion="0.25")
    succeeded(cluster, namespace, "nb-1")
    assert [r["metadata"]["name"] for r in reservations_of(cluster, group)] == [
        reservation["metadata"]["name"]
    ]
    second = cluster.kubectl.get("configmap", "nb-1-shared-gpu", "-n", namespace)["data"]
    assert second == {"NVIDIA_VISIBLE_DEVICES": gpu, "GPU_PORTION": "0.25"}

    cluster.kubectl.run("delete", "pod", "nb-0", "-n", namespace, "--wait=false")
    wait_for("nb-0 gone", lambda: gone(cluster, "pod", "nb-0", "-n", namespace), timeout=30)
    assert len(reservations_of(cluster, group)) == 1  # nb-1 still uses the GPU
    cluster.kubectl.run("delete", "pod", "nb-1", "-n", namespace, "--wait=false")
    wait_for("the reservation pod deleted", lambda: not reservations_of(cluster, group), timeout=30)


def test_a_sharing_pod_whose_reservation_pod_is_lost_is_deleted(
    cluster: Cluster, namespace: str, gpu_node: str, binder: ManagedProcess
) -> None:
    group = f"grp-{uuid.uuid4().hex[:8]}"
    sharing_pod(cluster, namespace, "lost-0")
    fraction_request(cluster, namespace, "lost-0", gpu_node, group)
    succeeded(cluster, namespace, "lost-0")
    [reservation] = reservations_of(cluster, group)
    cluster.kubectl.run("delete", "pod", reservation["metadata"]["name"], "-n", RESERVATIONS)
    wait_for("lost-0 deleted", lambda: gone(cluster, "pod", "lost-0", "-n", namespace), timeout=30)
    [event] = wait_for(
        "a GPUReservationLost Event",
        lambda: [e for e in events(cluster, namespace, "Pod", "lost-0")
                 if e["reason"] == "GPUReservationLost"],
        timeout=15,
    )  # fmt: skip
    assert f"its GPU group {group} lost its reservation pod" in event["message"]


def test_a_reservation_that_never_reports_fails_the_bind_request(
    cluster: Cluster,
    namespace: str,
    gpu_node: str,
    binder: ManagedProcess,
    device_plugin: FakeDevicePlugin,
) -> None:
    device_plugin.broken.add(gpu_node)
    group = f"grp-{uuid.uuid4().hex[:8]}"
    sharing_pod(cluster, namespace, "stuck-0")
    fraction_request(cluster, namespace, "stuck-0", gpu_node, group)
    status = wait_for(
        "BindRequest Failed",
        lambda: (s := br_status(cluster, namespace, "stuck-0")).get("phase") == "Failed" and s,
        timeout=TIMEOUT + 20,
    )
    assert "did not report a GPU (annotation run.ai/reserve_for_gpu_index)" in status["reason"]
    assert f"within {TIMEOUT:g}s" in status["reason"]
    pod = cluster.kubectl.get("pod", "stuck-0", "-n", namespace)
    assert not pod["spec"].get("nodeName")
    assert "runai-gpu-group" not in (pod["metadata"].get("labels") or {})
    # Failed for good: nothing uses the group, so its reservation pod is removed.
    wait_for("the reservation pod deleted", lambda: not reservations_of(cluster, group), timeout=30)
    assert status["failedAttempts"] == 3
