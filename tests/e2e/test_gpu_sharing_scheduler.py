"""Fractional GPUs scheduled by our scheduler and bound by our binder on a real API server.

The podgrouper, scheduler and binder run as separate processes; kwok stands in for
the kubelets and the test for the GPU device plugin (``gpus.FakeDevicePlugin``).
The scheduler must choose the group: two halves land in one group (one reservation
pod, one label value), its BindRequest says ``Fraction``/``0.50`` with the group in
``selectedGPUGroups``, and the reservation pod's GPU is not counted twice: on a
2-GPU node a whole-GPU pod still binds next to the shared device.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import QueueFactory, create_kwok_node, require_kwok
from .controlplane import Cluster
from .gpus import FakeDevicePlugin, fake_device_plugin, reservations_of, sharing_pod
from .kube import NotYet, wait_for
from .live import PIPELINE_FLAGS, component
from .objects import GPU, KWOK_TOLERATION, POOL_LABEL, QUEUE_LABEL, ensure_priority_classes
from .procs import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

BR = "bindrequests.scheduling.run.ai"


@pytest.fixture(scope="module")
def device_plugin(cluster: Cluster) -> Iterator[FakeDevicePlugin]:
    with fake_device_plugin(cluster) as plugin:
        yield plugin


@pytest.fixture(scope="module")
def components(cluster: Cluster, device_plugin: FakeDevicePlugin) -> Iterator[None]:
    """podgrouper, scheduler and binder; reservation pods name no RuntimeClass."""
    ensure_priority_classes(cluster)
    binder_flags = [
        f"--metrics-port={free_port()}",
        "--resource-reservation-runtime-class=",
        "--resource-reservation-allocation-timeout=20",
        "--resource-reservation-image=registry.invalid/podmuster/resource-reservation:none",
    ]
    with (
        component(cluster, "podgrouper", PIPELINE_FLAGS["podgrouper"]),
        component(cluster, "scheduler", PIPELINE_FLAGS["scheduler"]),
        component(cluster, "binder", binder_flags) as binder,
    ):
        yield
        binder.check_alive()


@pytest.fixture
def gpu_pool(cluster: Cluster) -> Iterator[tuple[str, str]]:
    """(pool, node): one 2-GPU kwok node with a device-memory label, in a pool of its own."""
    require_kwok(cluster)
    pool = f"gpupool-{uuid.uuid4().hex[:6]}"
    name = f"{pool}-n0"
    allocatable = {"cpu": "32", "memory": "256Gi", "pods": "110", GPU: "2"}
    create_kwok_node(
        cluster, name, allocatable, {POOL_LABEL: pool, "nvidia.com/gpu.memory": "16000"}
    )
    yield pool, name
    cluster.kubectl.run("delete", "node", name, "--ignore-not-found", "--wait=false")


def _in_pool(pod: dict[str, Any], pool: str, queue: str) -> dict[str, Any]:
    pod["metadata"].setdefault("labels", {})[QUEUE_LABEL] = queue
    pod["spec"]["nodeSelector"] = {POOL_LABEL: pool}
    return pod


def _whole_gpu_pod(namespace: str, name: str, pool: str, queue: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE_LABEL: queue}},
        "spec": {
            "schedulerName": "kai-scheduler",
            "restartPolicy": "Never",
            "tolerations": [KWOK_TOLERATION],
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": {POOL_LABEL: pool},
            "containers": [
                {
                    "name": "main",
                    "image": "registry.invalid/x:none",
                    "resources": {"limits": {GPU: "1"}, "requests": {"cpu": "100m"}},
                }
            ],
        },
    }


def _running_on(cluster: Cluster, namespace: str, name: str) -> dict[str, Any] | NotYet:
    pod = cluster.kubectl.get("pod", name, "-n", namespace)
    if pod.get("status", {}).get("phase") == "Running" and pod["spec"].get("nodeName"):
        return dict(pod)
    return NotYet(f"{name}: {pod.get('status', {}).get('phase')}")


def test_scheduler_puts_two_halves_in_one_group_and_leaves_a_gpu_free(
    cluster: Cluster,
    namespace: str,
    kai_queues: QueueFactory,
    gpu_pool: tuple[str, str],
    components: None,
) -> None:
    pool, node = gpu_pool
    queue = kai_queues.add("team", gpu_quota=2)
    for name in ("half-0", "half-1"):
        cluster.kubectl.create(_in_pool(sharing_pod(namespace, name, "0.5"), pool, queue))
    first = wait_for("half-0 Running", lambda: _running_on(cluster, namespace, "half-0"), 90)
    second = wait_for("half-1 Running", lambda: _running_on(cluster, namespace, "half-1"), 90)
    assert first["spec"]["nodeName"] == second["spec"]["nodeName"] == node
    group = first["metadata"]["labels"]["runai-gpu-group"]
    assert second["metadata"]["labels"]["runai-gpu-group"] == group
    assert len(reservations_of(cluster, group)) == 1
    spec = cluster.kubectl.get(BR, "half-0", "-n", namespace)["spec"]
    assert spec["receivedResourceType"] == "Fraction"
    assert spec["receivedGPU"] == {"count": 1, "portion": "0.50"}
    assert spec["selectedGPUGroups"] == [group]

    # One device is shared (held once, by the group and its reservation pod); the other
    # is free for a whole-GPU pod.
    cluster.kubectl.create(_whole_gpu_pod(namespace, "whole-0", pool, queue))
    whole = wait_for("whole-0 Running", lambda: _running_on(cluster, namespace, "whole-0"), 90)
    assert whole["spec"]["nodeName"] == node
