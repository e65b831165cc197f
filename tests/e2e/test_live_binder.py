"""The binder against a real API server: BindRequests in, bound pods and statuses out.

A pod names ``kai-scheduler`` (no such scheduler runs here), a BindRequest is
created by hand as the scheduler would, and ``podmuster run binder`` binds it;
kwok then runs the pod. A BindRequest to a node that does not exist fails
after its backoffLimit, with every attempt counted in ``failedAttempts``.
"""

from __future__ import annotations

import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from .controlplane import Cluster
from .kube import Obj, wait_for
from .live import component
from .objects import KWOK_TOLERATION, wait_phase
from .procs import ManagedProcess, free_port

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def binder(cluster: Cluster) -> Iterator[tuple[ManagedProcess, int]]:
    port = free_port()
    flags = ["--leader-elect", "--leader-elect-namespace=default",
             f"--metrics-port={port}", "--log-format=json"]  # fmt: skip
    with component(cluster, "binder", flags) as proc:
        yield proc, port


def kai_pod(name: str, namespace: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": "kai-scheduler",
            "restartPolicy": "Never",
            "tolerations": [KWOK_TOLERATION],
            "containers": [
                {
                    "name": "main",
                    "image": "registry.invalid/x:none",
                    "resources": {"requests": {"cpu": "100m"}},
                }
            ],
        },
    }


def bind_request(cluster: Cluster, namespace: str, pod: str, node: str, limit: int) -> None:
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
                "receivedResourceType": "Regular",
                "receivedGPU": {"count": 0, "portion": "0.00"},
                "backoffLimit": limit,
            },
        }
    )


def br_status(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    got = cluster.kubectl.get("bindrequests.scheduling.run.ai", name, "-n", namespace)
    return dict(got.get("status") or {})


def test_binder_binds_and_reports_success(
    cluster: Cluster, namespace: str, kwok_node: str, binder: tuple[ManagedProcess, int]
) -> None:
    cluster.kubectl.create(kai_pod("train-0", namespace))
    bind_request(cluster, namespace, "train-0", kwok_node, limit=3)
    wait_for(
        "BindRequest Succeeded",
        lambda: br_status(cluster, namespace, "train-0").get("phase") == "Succeeded",
        timeout=60,
    )
    pod = cluster.kubectl.get("pod", "train-0", "-n", namespace)
    assert pod["spec"]["nodeName"] == kwok_node
    # the binding carried it: the API server copies a Binding's annotations onto the pod
    assert pod["metadata"]["annotations"]["received-resource-type"] == "Regular"
    wait_phase(cluster, namespace, "train-0", "Running")
    assert cluster.kubectl.exists("bindrequests.scheduling.run.ai", "train-0", "-n", namespace)
    lease = cluster.kubectl.get("lease", "podmuster-binder", "-n", "default")
    assert lease["spec"]["holderIdentity"]
    text = urllib.request.urlopen(f"http://127.0.0.1:{binder[1]}/metrics", timeout=10).read()
    assert b'podmuster_binder_binds_total{result="succeeded"}' in text
    assert b"kai_task_bind_latency_milliseconds_count" in text


def test_binder_missing_node_fails_with_attempts(
    cluster: Cluster, namespace: str, binder: tuple[ManagedProcess, int]
) -> None:
    cluster.kubectl.create(kai_pod("lost-0", namespace))
    bind_request(cluster, namespace, "lost-0", "no-such-node", limit=2)
    status = wait_for(
        "BindRequest Failed after 2 attempts",
        lambda: (s := br_status(cluster, namespace, "lost-0")).get("failedAttempts") == 2 and s,
        timeout=60,
    )
    assert status["phase"] == "Failed"
    assert "no-such-node" in status["reason"]
    pod = cluster.kubectl.get("pod", "lost-0", "-n", namespace)
    assert not pod["spec"].get("nodeName")


@pytest.fixture(scope="module")
def scheduler(cluster: Cluster) -> Iterator[int]:
    """The live scheduler (no leader election: its own module's tests use the Lease);
    yields its metrics port."""
    port = free_port()
    with component(
        cluster, "scheduler", ["--schedule-period=0.5", f"--metrics-port={port}"]
    ) as proc:
        proc.check_alive()
        yield port


def test_scheduler_then_binder_runs_a_gang(
    cluster: Cluster,
    namespace: str,
    kwok_node: str,
    binder: tuple[ManagedProcess, int],
    scheduler: int,
) -> None:
    queue = f"q-{uuid.uuid4().hex[:6]}"
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    cluster.kubectl.create(
        {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": queue},
            "spec": {"resources": {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}},
        }
    )
    cluster.kubectl.create(
        {
            "apiVersion": "scheduling.run.ai/v2alpha2",
            "kind": "PodGroup",
            "metadata": {"name": "gang", "namespace": namespace},
            "spec": {"queue": queue, "minMember": 2},
        }
    )
    for i in range(2):
        pod = kai_pod(f"gang-{i}", namespace)
        pod["metadata"]["annotations"] = {"pod-group-name": "gang"}
        cluster.kubectl.create(pod)
    for i in range(2):
        wait_phase(cluster, namespace, f"gang-{i}", "Running", timeout=90)
        assert br_status(cluster, namespace, f"gang-{i}")["phase"] == "Succeeded"
    text = (
        urllib.request.urlopen(f"http://127.0.0.1:{scheduler}/metrics", timeout=10).read().decode()
    )
    assert "kai_e2e_scheduling_latency_milliseconds " in text
    created = next(
        line
        for line in text.splitlines()
        if line.startswith("podmuster_bind_requests_created_total")
    )
    assert float(created.split()[-1]) >= 2
    assert f'kai_queue_fair_share_gpu{{queue_name="{queue}"}}' in text
    cluster.kubectl.run("delete", "queue", queue, "--wait=false")


def test_binder_stops_on_sigterm(cluster: Cluster, binder: tuple[ManagedProcess, int]) -> None:
    proc, _ = binder
    binder[0].check_alive()
    proc.stop()
    assert '"msg": "stopped"' in proc.tail(50)
    lease = cluster.kubectl.get("lease", "podmuster-binder", "-n", "default")
    assert not lease["spec"].get("holderIdentity")  # released for a standby
