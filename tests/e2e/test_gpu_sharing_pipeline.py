"""Fractional GPUs through the whole pipeline on a real API server.

``podmuster run all`` (podgrouper, scheduler, binder, controllers) schedules bare pods
asking for ``gpu-fraction: "0.5"`` on a kwok node with two GPUs; the test stands in for
the device plugin (``gpus.FakeDevicePlugin``). Four such pods end up two per GPU: two
GPU groups, one reservation pod each, every pod's ConfigMap naming its group's GPU.
A fifth pod does not fit and is reported unschedulable. When the pods go, the
reservation pods go.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator

import pytest

from .conftest import QueueFactory, create_kwok_node, require_kwok
from .controlplane import Cluster
from .gpus import FakeDevicePlugin, fake_device_plugin, reservations_of, sharing_pod
from .kube import Obj, wait_for
from .live import PIPELINE_FLAGS, component
from .objects import QUEUE_LABEL, ensure_priority_classes, wait_running
from .procs import ManagedProcess

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def pipeline(cluster: Cluster) -> Iterator[tuple[ManagedProcess, FakeDevicePlugin]]:
    ensure_priority_classes(cluster)
    flags = [
        *PIPELINE_FLAGS["all"],
        "--resource-reservation-runtime-class=",  # none (the default, as KAI's)
        "--resource-reservation-grace=1",
    ]
    with fake_device_plugin(cluster) as plugin, component(cluster, "all", flags) as proc:
        yield proc, plugin
        proc.check_alive()


@pytest.fixture
def gpu_node(cluster: Cluster) -> Iterator[str]:
    require_kwok(cluster)
    name = f"gpu-{uuid.uuid4().hex[:6]}"
    allocatable = {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "2"}
    create_kwok_node(cluster, name, allocatable, {"nvidia.com/gpu.memory": "16000"})
    yield name
    cluster.kubectl.run("delete", "node", name, "--ignore-not-found", "--wait=false")


def notebook(namespace: str, name: str, queue: str, node: str) -> Obj:
    pod = sharing_pod(namespace, name, "0.5")
    pod["metadata"]["labels"] = {QUEUE_LABEL: queue}
    pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return pod


def test_half_gpu_pods_end_up_two_per_gpu_with_one_reservation_each(
    cluster: Cluster,
    namespace: str,
    gpu_node: str,
    kai_queues: QueueFactory,
    pipeline: tuple[ManagedProcess, FakeDevicePlugin],
) -> None:
    queue = kai_queues.add("nb", gpu_quota=2)
    names = [f"nb-{i}" for i in range(4)]
    for name in names:
        cluster.kubectl.create(notebook(namespace, name, queue, gpu_node))
    pods = wait_running(cluster, namespace, "", len(names), timeout=60)
    groups = Counter(p["metadata"]["labels"]["runai-gpu-group"] for p in pods)
    assert sorted(groups.values()) == [2, 2], groups
    reservations = {r["metadata"]["labels"]["runai-gpu-group"]: r for r in reservations_of(cluster)}
    assert set(groups) <= set(reservations)
    for pod in pods:
        group = pod["metadata"]["labels"]["runai-gpu-group"]
        reservation = reservations[group]
        assert reservation["spec"]["nodeName"] == pod["spec"]["nodeName"] == gpu_node
        name = pod["metadata"]["name"]
        data = cluster.kubectl.get("configmap", f"{name}-shared-gpu", "-n", namespace)["data"]
        gpu = reservation["metadata"]["annotations"]["run.ai/reserve_for_gpu_index"]
        assert data == {
            "NVIDIA_VISIBLE_DEVICES": gpu, "GPU_PORTION": "0.50", "RUNAI_NUM_OF_GPUS": "0.50"
        }  # fmt: skip
    assert len({reservations[g]["metadata"]["name"] for g in groups}) == 2

    # Both GPUs are shared full: a fifth half-GPU pod waits, reported unschedulable.
    cluster.kubectl.create(notebook(namespace, "nb-4", queue, gpu_node))

    def unschedulable() -> bool:
        pod = cluster.kubectl.get("pod", "nb-4", "-n", namespace)
        conditions = (pod.get("status") or {}).get("conditions") or []
        return not pod["spec"].get("nodeName") and any(
            c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions
        )

    wait_for("nb-4 reported unschedulable", unschedulable, timeout=30)

    cluster.kubectl.run("delete", "pod", *names, "nb-4", "-n", namespace, "--wait=false")
    wait_for(
        "the reservation pods of the emptied groups deleted",
        lambda: (
            not set(groups)
            & {r["metadata"]["labels"]["runai-gpu-group"] for r in reservations_of(cluster)}
        ),
        timeout=40,
    )
