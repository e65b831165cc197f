"""Fractional GPUs through the binder on a real API server, kwok standing in for kubelets.

Each test writes Fraction BindRequests by hand (as the scheduler would) for pods that
carry the admission mutation's env wiring (``webhooks.podenv`` applied here), and
``podmuster run binder`` does the rest: a reservation pod per GPU group pinned to the
node, the pod labelled ``runai-gpu-group`` and bound, its ConfigMap holding the GPU's
UUID and the portion. The test itself stands in for the GPU device plugin and the code
inside KAI's reservation image (``gpus.FakeDevicePlugin``): a background thread annotates
every Running reservation pod with a fake UUID (``GPU-<hash>``), except on nodes whose
GPUs it is told are broken.
Covered: one pod; two pods sharing one reservation pod; both deleted, the reservation
pod goes; a reservation pod deleted, it is re-created on the pod's GPU and the pod kept;
one that cannot be restored (no GPU reported), its sharing pod goes with an Event;
another scheduler's BindRequest and running sharing pod left alone; a group whose
reservation pod KAI's binder made (its own name) reuses it; a reservation that
never reports, the BindRequest fails with the timeout reason and a BindingError Event;
a pod the mutation never saw is not bound.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from crds.names import CREATED_BY_LABEL

from .conftest import create_kwok_node, require_kwok
from .controlplane import Cluster
from .gpus import RESERVATIONS, FakeDevicePlugin, fake_device_plugin, reservations_of, sharing_pod
from .kube import wait_for
from .live import component
from .objects import events
from .procs import ManagedProcess, free_port

pytestmark = pytest.mark.e2e

TIMEOUT = 6.0
BR = "bindrequests.scheduling.run.ai"


@pytest.fixture(scope="module")
def device_plugin(cluster: Cluster) -> Iterator[FakeDevicePlugin]:
    with fake_device_plugin(cluster) as plugin:
        yield plugin


@pytest.fixture(scope="module")
def binder(cluster: Cluster, device_plugin: FakeDevicePlugin) -> Iterator[ManagedProcess]:
    """The binder; its reservation pods name no RuntimeClass (the default, as KAI's)."""
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


def gone(cluster: Cluster, *args: str) -> bool:
    return not cluster.kubectl.exists(*args)


def test_two_pods_share_one_reservation_pod_until_both_are_gone(
    cluster: Cluster, namespace: str, gpu_node: str, binder: ManagedProcess
) -> None:
    group = f"grp-{uuid.uuid4().hex[:8]}"
    cluster.kubectl.create(sharing_pod(namespace, "nb-0"))
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
    assert configmap["data"] == {
        "NVIDIA_VISIBLE_DEVICES": gpu, "GPU_PORTION": "0.50", "RUNAI_NUM_OF_GPUS": "0.50"
    }  # fmt: skip
    assert configmap["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    # what the chart's cleanup hook selects after helm uninstall (test_chart_lifecycle.py)
    assert configmap["metadata"]["labels"] == {CREATED_BY_LABEL: "binder"}
    env = {e["name"]: e["valueFrom"] for e in pod["spec"]["containers"][0]["env"]}
    assert env["NVIDIA_VISIBLE_DEVICES"]["configMapKeyRef"]["name"] == "nb-0-shared-gpu"

    cluster.kubectl.create(sharing_pod(namespace, "nb-1", "0.25"))
    fraction_request(cluster, namespace, "nb-1", gpu_node, group, portion="0.25")
    succeeded(cluster, namespace, "nb-1")
    assert [r["metadata"]["name"] for r in reservations_of(cluster, group)] == [
        reservation["metadata"]["name"]
    ]
    second = cluster.kubectl.get("configmap", "nb-1-shared-gpu", "-n", namespace)["data"]
    assert second == {
        "NVIDIA_VISIBLE_DEVICES": gpu, "GPU_PORTION": "0.25", "RUNAI_NUM_OF_GPUS": "0.25"
    }  # fmt: skip

    cluster.kubectl.run("delete", "pod", "nb-0", "-n", namespace, "--wait=false")
    wait_for("nb-0 gone", lambda: gone(cluster, "pod", "nb-0", "-n", namespace), timeout=30)
    assert len(reservations_of(cluster, group)) == 1  # nb-1 still uses the GPU
    cluster.kubectl.run("delete", "pod", "nb-1", "-n", namespace, "--wait=false")
    wait_for("the reservation pod deleted", lambda: not reservations_of(cluster, group), timeout=30)


def test_a_lost_reservation_pod_is_restored_and_its_sharing_pod_kept(
    cluster: Cluster, namespace: str, gpu_node: str, binder: ManagedProcess
) -> None:
    """As after helm uninstall and reinstall: the reservation pod (and the pod's ConfigMap)
    are gone while the sharing pod runs. The device plugin gives the re-created reservation
    pod the same GPU (the fake's UUID hashes node and pod name), so the pod is kept."""
    group = f"grp-{uuid.uuid4().hex[:8]}"
    cluster.kubectl.create(sharing_pod(namespace, "kept-0"))
    fraction_request(cluster, namespace, "kept-0", gpu_node, group)
    succeeded(cluster, namespace, "kept-0")
    [reservation] = reservations_of(cluster, group)
    gpu = reservation["metadata"]["annotations"]["run.ai/reserve_for_gpu_index"]
    pod = cluster.kubectl.get("pod", "kept-0", "-n", namespace)
    assert pod["metadata"]["annotations"]["podmuster.io/gpu-uuids"] == gpu
    assert reservation["metadata"]["labels"]["podmuster.io/created-by"] == "binder"
    assert reservation["metadata"]["labels"]["podmuster.io/scheduler-name"] == "kai-scheduler"
    wait_for(
        "kept-0 Running",
        lambda: (
            cluster.kubectl.get("pod", "kept-0", "-n", namespace)["status"].get("phase")
            == "Running"
        ),
        timeout=30,
    )
    cluster.kubectl.run("delete", "configmap", "kept-0-shared-gpu", "-n", namespace)
    old_uid = reservation["metadata"]["uid"]
    cluster.kubectl.run("delete", "pod", reservation["metadata"]["name"], "-n", RESERVATIONS)
    restored = wait_for(
        "the reservation pod re-created and reporting the pod's GPU",
        lambda: [
            r for r in reservations_of(cluster, group)
            if r["metadata"]["uid"] != old_uid
            and (r["metadata"].get("annotations") or {}).get("run.ai/reserve_for_gpu_index")
        ],
        timeout=30,
    )  # fmt: skip
    annotations = restored[0]["metadata"]["annotations"]
    assert annotations["podmuster.io/restored-for-gpu"] == gpu
    assert annotations["run.ai/reserve_for_gpu_index"] == gpu
    time.sleep(TIMEOUT + 3)  # past the allocation timeout and the grace: still there
    assert cluster.kubectl.exists("pod", "kept-0", "-n", namespace)
    assert len(reservations_of(cluster, group)) == 1
    assert not [e for e in events(cluster, namespace, "Pod", "kept-0")
                if e["reason"] == "GPUReservationLost"]  # fmt: skip


def test_a_sharing_pod_whose_reservation_cannot_be_restored_is_deleted(
    cluster: Cluster,
    namespace: str,
    gpu_node: str,
    binder: ManagedProcess,
    device_plugin: FakeDevicePlugin,
) -> None:
    group = f"grp-{uuid.uuid4().hex[:8]}"
    cluster.kubectl.create(sharing_pod(namespace, "lost-0"))
    fraction_request(cluster, namespace, "lost-0", gpu_node, group)
    succeeded(cluster, namespace, "lost-0")
    [reservation] = reservations_of(cluster, group)
    device_plugin.broken.add(gpu_node)  # the re-created one never gets a GPU
    cluster.kubectl.run("delete", "pod", reservation["metadata"]["name"], "-n", RESERVATIONS)
    wait_for(
        "lost-0 deleted",
        lambda: gone(cluster, "pod", "lost-0", "-n", namespace),
        timeout=TIMEOUT + 30,
    )
    [event] = wait_for(
        "a GPUReservationLost Event",
        lambda: [e for e in events(cluster, namespace, "Pod", "lost-0")
                 if e["reason"] == "GPUReservationLost"],
        timeout=15,
    )  # fmt: skip
    assert f"its GPU group {group} lost its reservation pod" in event["message"]
    wait_for("the restore deleted", lambda: not reservations_of(cluster, group), timeout=30)


def test_another_schedulers_work_is_left_alone(
    cluster: Cluster, namespace: str, gpu_node: str, binder: ManagedProcess
) -> None:
    """Beside KAI: the binder (serving kai-scheduler here) neither binds another
    scheduler's BindRequest nor deletes its running sharing pod whose group has no
    reservation pod in the binder's namespace."""
    group = f"grp-{uuid.uuid4().hex[:8]}"
    theirs = sharing_pod(namespace, "theirs-0")
    theirs["spec"]["schedulerName"] = "other-scheduler"
    cluster.kubectl.create(theirs)
    fraction_request(cluster, namespace, "theirs-0", gpu_node, group)
    running = sharing_pod(namespace, "theirs-1")
    running["spec"].update({"schedulerName": "other-scheduler", "nodeName": gpu_node})
    running["metadata"]["labels"] = {"runai-gpu-group": f"{group}-r"}
    running["metadata"]["annotations"]["received-resource-type"] = "Fraction"
    cluster.kubectl.create(running)
    time.sleep(8)  # several syncs (every 5 s) and the grace (1 s)
    assert br_status(cluster, namespace, "theirs-0") == {}
    assert not cluster.kubectl.get("pod", "theirs-0", "-n", namespace)["spec"].get("nodeName")
    assert not reservations_of(cluster, group)
    assert cluster.kubectl.exists("pod", "theirs-1", "-n", namespace)
    assert not reservations_of(cluster, f"{group}-r")  # not restored either: not ours


def test_a_group_whose_reservation_pod_kai_made_reuses_it(
    cluster: Cluster, namespace: str, gpu_node: str, binder: ManagedProcess
) -> None:
    """Taking over from KAI: its binder named the group's reservation pod
    ``gpu-reservation-<16 hex>``; the binder finds it by the group label and binds the new
    pod to its GPU instead of reserving a second one."""
    group = f"grp-{uuid.uuid4().hex[:8]}"
    kais = f"gpu-reservation-{uuid.uuid4().hex[:16]}"
    container = {"name": "resource-reservation", "image": "registry.invalid/x:none",
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}  # fmt: skip
    cluster.kubectl.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": kais, "namespace": RESERVATIONS,
                         "labels": {"app": "kai-resource-reservation", "runai-gpu-group": group}},
            "spec": {"nodeName": gpu_node, "tolerations": [{"operator": "Exists"}],
                     "terminationGracePeriodSeconds": 0, "containers": [container]},
        }
    )  # fmt: skip
    try:
        gpu = wait_for(
            "KAI's reservation pod reports its GPU",
            lambda: (cluster.kubectl.get("pod", kais, "-n", RESERVATIONS)["metadata"]
                     .get("annotations") or {}).get("run.ai/reserve_for_gpu_index"),
            timeout=30,
        )  # fmt: skip
        cluster.kubectl.create(sharing_pod(namespace, "new-0"))
        fraction_request(cluster, namespace, "new-0", gpu_node, group)
        succeeded(cluster, namespace, "new-0")
        assert [r["metadata"]["name"] for r in reservations_of(cluster, group)] == [kais]
        data = cluster.kubectl.get("configmap", "new-0-shared-gpu", "-n", namespace)["data"]
        assert data["NVIDIA_VISIBLE_DEVICES"] == gpu
    finally:
        cluster.kubectl.run("delete", "pod", kais, "-n", RESERVATIONS, "--wait=false")


def test_a_reservation_that_never_reports_fails_the_bind_request(
    cluster: Cluster,
    namespace: str,
    gpu_node: str,
    binder: ManagedProcess,
    device_plugin: FakeDevicePlugin,
) -> None:
    device_plugin.broken.add(gpu_node)
    group = f"grp-{uuid.uuid4().hex[:8]}"
    cluster.kubectl.create(sharing_pod(namespace, "stuck-0"))
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
    # and the pod says why (KAI's BindingError), not only the BindRequest
    binding = [
        e for e in events(cluster, namespace, "Pod", "stuck-0") if e["reason"] == "BindingError"
    ]
    assert binding
    assert binding[-1]["type"] == "Warning"
    assert f"Failed to bind pod {namespace}/stuck-0 to node {gpu_node}:" in binding[-1]["message"]
    assert "did not report a GPU" in binding[-1]["message"]
    # and KAI's PodBound condition, which the API server accepted from the binder
    pod = cluster.kubectl.get("pod", "stuck-0", "-n", namespace)
    bound = [c for c in pod["status"].get("conditions") or [] if c["type"] == "PodBound"]
    assert [(c["status"], c["reason"]) for c in bound] == [("False", "BindingError")]
    assert "did not report a GPU" in bound[0]["message"]


def test_a_pod_the_mutation_never_saw_is_not_bound(
    cluster: Cluster, namespace: str, gpu_node: str, binder: ManagedProcess
) -> None:
    """No runai/shared-gpu-configmap annotation, no GPU env (the webhook did not see it):
    the BindRequest fails naming the annotation, no reservation pod is made."""
    group = f"grp-{uuid.uuid4().hex[:8]}"
    bare = sharing_pod(namespace, "bare-0")
    del bare["metadata"]["annotations"]["runai/shared-gpu-configmap"]
    del bare["spec"]["containers"][0]["env"]
    cluster.kubectl.create(bare)
    fraction_request(cluster, namespace, "bare-0", gpu_node, group)
    wait_for(
        "the BindRequest failed",
        lambda: br_status(cluster, namespace, "bare-0").get("phase") == "Failed",
        timeout=30,
    )
    assert (
        "has no annotation runai/shared-gpu-configmap"
        in br_status(cluster, namespace, "bare-0")["reason"]
    )
    assert not cluster.kubectl.get("pod", "bare-0", "-n", namespace)["spec"].get("nodeName")
    assert not reservations_of(cluster, group)
    [event] = [
        e for e in events(cluster, namespace, "Pod", "bare-0") if e["reason"] == "BindingError"
    ]
    assert "the pod webhook must mutate it at creation" in event["message"]
