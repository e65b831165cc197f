"""PodGroup resourcesStatus: units, fractions, init containers, finished pods."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from scheduler.controllers.podgroup_status import (
    GpuMemory,
    is_non_preemptible,
    pod_request,
    podgroup_status,
)


def pod(
    *,
    cpu: str = "500m",
    memory: str = "1Gi",
    gpu: str | None = None,
    fraction: str | None = None,
    devices: str | None = None,
    node: str = "",
    phase: str = "Pending",
    init: dict[str, str] | None = None,
) -> dict[str, Any]:
    requests: dict[str, str] = {"cpu": cpu, "memory": memory}
    limits: dict[str, str] = {}
    if gpu:
        limits["nvidia.com/gpu"] = gpu
    annotations: dict[str, str] = {}
    if fraction:
        annotations["gpu-fraction"] = fraction
    if devices:
        annotations["gpu-fraction-num-devices"] = devices
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": requests, "limits": limits}}]
    }
    if init:
        spec["initContainers"] = [{"name": "i", "resources": {"requests": init}}]
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"name": "p", "annotations": annotations},
        "spec": spec,
        "status": {"phase": phase},
    }


def test_units_cpu_millicores_memory_mb_gpu_devices() -> None:
    got = pod_request(pod(cpu="1.5", memory="512M", gpu="2"))
    assert {k: str(v) for k, v in got.items()} == {
        "cpu": "1500",
        "memory": "512",
        "nvidia.com/gpu": "2",
    }


def test_fractional_gpu_annotation() -> None:
    assert pod_request(pod(fraction="0.5"))["nvidia.com/gpu"] == 0.5
    assert pod_request(pod(fraction="0.25", devices="2"))["nvidia.com/gpu"] == 0.5
    assert "nvidia.com/gpu" not in pod_request(pod(fraction="1.5"))  # invalid: ignored


def test_a_bound_pod_is_counted_as_the_scheduler_counts_it() -> None:
    """A pod on a node admitted by an earlier release (spaces around the value): the
    scheduler charges its share, so its PodGroup's and queue's status count it too."""
    assert pod_request(pod(fraction=" 0.5", node="n1"))["nvidia.com/gpu"] == 0.5
    assert "nvidia.com/gpu" not in pod_request(pod(fraction=" 0.5"))  # a new pod: refused


def test_a_fraction_of_one_is_not_a_fraction() -> None:
    # one rule everywhere: 0 < x < 1; a whole GPU is nvidia.com/gpu
    assert "nvidia.com/gpu" not in pod_request(pod(fraction="1"))


def gpu_node(name: str, memory_mib: str | None) -> dict[str, Any]:
    labels = {} if memory_mib is None else {"nvidia.com/gpu.memory": memory_mib}
    return {"metadata": {"name": name, "labels": labels}}


def memory_pod(mib: str, *, devices: str | None = None, node: str = "") -> dict[str, Any]:
    body = pod(devices=devices, node=node)
    body["metadata"]["annotations"]["gpu-memory"] = mib
    return body


def test_gpu_memory_pods_count_their_share_of_a_gpu_not_zero() -> None:
    nodes = GpuMemory([gpu_node("big", "81920"), gpu_node("small", "40960")])
    # on a node: ceil(mem / node memory, to hundredths) per device
    on_big = pod_request(memory_pod("20000", devices="2", node="big"), nodes)
    assert on_big["nvidia.com/gpu"] == Fraction(50, 100)  # 2 x ceil(24.4)/100
    # pending: mem / the smallest GPU memory (labels round down to 100 MiB: 40900)
    pending = pod_request(memory_pod("20450"), nodes)
    assert pending["nvidia.com/gpu"] == Fraction(1, 2)
    # through the status: requested counts both, allocated the bound one
    status = podgroup_status(
        {"spec": {}},
        [memory_pod("20000", devices="2", node="big"), memory_pod("20450")],
        non_preemptible=False,
        gpu_memory=nodes,
    )["resourcesStatus"]
    assert status["allocated"]["nvidia.com/gpu"] == "0.5"
    assert status["requested"]["nvidia.com/gpu"] == "1"


def test_sidecars_run_beside_the_containers_and_init_containers() -> None:
    body = pod(cpu="1", memory="1M")
    body["spec"]["initContainers"] = [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "2"}}},
        {"name": "init", "resources": {"requests": {"cpu": "2500m"}}},
    ]
    body["spec"]["overhead"] = {"cpu": "100m"}
    # containers + sidecar = 3; the init container beside the sidecar = 4.5; + overhead
    assert pod_request(body)["cpu"] == 4600


def test_init_container_counts_as_max() -> None:
    got = pod_request(pod(cpu="1", memory="1M", init={"cpu": "3", "memory": "500k"}))
    assert got["cpu"] == 3000
    assert got["memory"] == 1


def test_status_requested_allocated_and_finished_pods_excluded() -> None:
    pods = [
        pod(fraction="0.5", node="n1", phase="Running"),
        pod(fraction="0.5", node="n1", phase="Pending"),  # bound, not yet running
        pod(gpu="1"),  # pending, unbound
        pod(gpu="4", node="n1", phase="Succeeded"),
        pod(gpu="4", node="n1", phase="Failed"),
    ]
    status = podgroup_status({}, pods, non_preemptible=False)
    rs = status["resourcesStatus"]
    assert rs["requested"] == {"cpu": "1500", "memory": "3221.225472", "nvidia.com/gpu": "2"}
    assert rs["allocated"] == {"cpu": "1000", "memory": "2147.483648", "nvidia.com/gpu": "1"}
    assert rs["allocatedNonPreemptible"] == {}
    assert (status["running"], status["pending"], status["succeeded"], status["failed"]) == (
        1,
        2,
        1,
        1,
    )


def test_non_preemptible_copies_allocated() -> None:
    status = podgroup_status({}, [pod(node="n", phase="Running")], non_preemptible=True)
    rs = status["resourcesStatus"]
    assert rs["allocatedNonPreemptible"] == rs["allocated"] != {}


def test_preemptibility_rule() -> None:
    assert is_non_preemptible({"spec": {"preemptibility": "non-preemptible"}}, 10)
    assert not is_non_preemptible({"spec": {"preemptibility": "preemptible"}}, 1000)
    assert is_non_preemptible({"spec": {}}, 100)
    assert not is_non_preemptible({"spec": {}}, 99)
