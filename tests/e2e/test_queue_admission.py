"""Queue admission through the scheduling gate on a real API server (docs/semantics.md §5.11).

``podmuster run webhooks`` serves ``/gate-pod`` to the API server (a
MutatingWebhookConfiguration for this test's namespace, on a serving certificate signed
by the control plane's CA); the scheduler (leader election on) and the binder run as
subprocesses; kwok runs the pods. A Queue annotated ``kai.scheduler/admission-gate:
"true"`` with a CPU limit of 2 takes gang A (2 x 1 CPU); gang B, created while A runs,
is held behind ``kai.scheduler/queue-admission`` with the API server's
``PodScheduled=False, reason SchedulingGated``; once A is deleted, B's gate is lifted
and B runs. Needs the local control plane (the API server must reach 127.0.0.1).
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from crds.names import ADMISSION_GATE, ADMISSION_GATE_ANNOTATION, QUEUE_LABEL

from .controlplane import Cluster, http_ok
from .kube import NotYet, Obj, wait_for
from .live import component
from .objects import KWOK_TOLERATION
from .procs import ManagedProcess, free_port, wait_until

pytestmark = pytest.mark.e2e

QUIET = ["--metrics-port=-1", "--log-format=json"]


@pytest.fixture(scope="module")
def webhook_port(cluster: Cluster) -> Iterator[int]:
    """``podmuster run webhooks`` on a free port, serving a certificate the API server trusts."""
    if cluster.local is None or cluster.local.pki is None:
        pytest.skip("the API server must reach this machine's 127.0.0.1 (local control plane)")
    cert = cluster.local.pki.server("podmuster-webhooks")
    port, health = free_port(), free_port()
    flags = [f"--tls-cert-file={cert.cert}", f"--tls-key-file={cert.key}",
             f"--port={port}", f"--health-port={health}"]  # fmt: skip
    with component(cluster, "webhooks", flags) as proc:
        wait_until(
            "webhooks /healthz", lambda: http_ok(f"http://127.0.0.1:{health}/healthz"), 60, [proc]
        )
        yield port


@pytest.fixture(scope="module")
def scheduler_and_binder(cluster: Cluster) -> Iterator[dict[str, ManagedProcess]]:
    scheduler = ["--leader-elect", "--leader-elect-namespace=default", "--schedule-period=0.5"]
    with (
        component(cluster, "scheduler", [*scheduler, *QUIET]) as sched,
        component(cluster, "binder", QUIET) as binder,
    ):
        yield {"scheduler": sched, "binder": binder}


@pytest.fixture
def gate_webhook(cluster: Cluster, webhook_port: int, namespace: str) -> Iterator[None]:
    """The API server sends this namespace's new kai-scheduler pods to ``/gate-pod``."""
    assert cluster.local is not None
    assert cluster.local.pki is not None
    name = f"podmuster-gate-{namespace}"
    ca = base64.b64encode(cluster.local.pki.ca_cert.read_bytes()).decode()
    cluster.kubectl.create(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [
                {
                    "name": "admission.podmuster.io",
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Fail",
                    "timeoutSeconds": 5,
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{webhook_port}/gate-pod",
                        "caBundle": ca,
                    },
                    "rules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "resources": ["pods"],
                            "operations": ["CREATE"],
                            "scope": "Namespaced",
                        }
                    ],
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": namespace}
                    },
                    "matchConditions": [
                        {
                            "name": "scheduler-name",
                            "expression": "has(object.spec.schedulerName) && "
                            "object.spec.schedulerName == 'kai-scheduler'",
                        }
                    ],
                }
            ],
        }
    )
    yield
    cluster.kubectl.run("delete", "mutatingwebhookconfiguration", name, "--ignore-not-found")


@pytest.fixture
def admission_queue(cluster: Cluster) -> Iterator[str]:
    """A queue under the gate with a CPU limit of 2 (KAI units: millicores)."""
    name = f"q-{uuid.uuid4().hex[:6]}"
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    cluster.kubectl.create(
        {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": name, "annotations": {ADMISSION_GATE_ANNOTATION: "true"}},
            "spec": {
                "resources": {
                    "gpu": {"quota": 0, "limit": -1, "overQuotaWeight": 1},
                    "cpu": {"quota": -1, "limit": 2000, "overQuotaWeight": 1},
                    "memory": unlimited,
                }
            },
        }
    )
    yield name
    cluster.kubectl.run("delete", "queue.scheduling.run.ai", name, "--ignore-not-found")


def pod(namespace: str, name: str, group: str, queue: str, node: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {"pod-group-name": group},
            "labels": {QUEUE_LABEL: queue},
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": [KWOK_TOLERATION],
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                }
            ],
        },
    }


def create_gang(cluster: Cluster, namespace: str, name: str, queue: str, node: str) -> None:
    cluster.kubectl.create(
        {
            "apiVersion": "scheduling.run.ai/v2alpha2",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"queue": queue, "minMember": 2},
        }
    )
    for index in range(2):
        cluster.kubectl.create(pod(namespace, f"{name}-{index}", name, queue, node))


def gates(obj: Obj) -> list[str]:
    return [g["name"] for g in obj["spec"].get("schedulingGates") or ()]


def running(cluster: Cluster, namespace: str, *names: str) -> bool | NotYet:
    for name in names:
        obj = cluster.kubectl.get("pod", name, "-n", namespace)
        if obj.get("status", {}).get("phase") != "Running":
            return NotYet(f"{name} is {obj.get('status', {}).get('phase')}, gates {gates(obj)}")
    return True


def scheduled_condition(obj: Obj) -> dict[str, Any]:
    for condition in obj.get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled":
            return dict(condition)
    return {}


def test_a_gang_waits_at_the_gate_until_its_queue_has_room(
    cluster: Cluster,
    scheduler_and_binder: dict[str, ManagedProcess],
    gate_webhook: None,
    namespace: str,
    kwok_node: str,
    admission_queue: str,
) -> None:
    probe = pod(namespace, "probe", "probe", admission_queue, kwok_node)

    def webhook_serves() -> bool:  # the API server has picked up the configuration
        out = cluster.kubectl.run("create", "--dry-run=server", "-o", "json", "-f", "-",
                                  stdin=json.dumps(probe))  # fmt: skip
        return ADMISSION_GATE in gates(json.loads(out))

    wait_for("the API server calling /gate-pod", webhook_serves, timeout=60)

    create_gang(cluster, namespace, "a", admission_queue, kwok_node)
    wait_for("gang a running", lambda: running(cluster, namespace, "a-0", "a-1"), timeout=60)

    create_gang(cluster, namespace, "b", admission_queue, kwok_node)
    for name in ("b-0", "b-1"):
        obj = cluster.kubectl.get("pod", name, "-n", namespace)
        assert gates(obj) == [ADMISSION_GATE]
        condition = scheduled_condition(obj)
        assert (condition.get("status"), condition.get("reason")) == ("False", "SchedulingGated")
    time.sleep(3)  # six cycles: the queue is full, so b must still be held
    for proc in scheduler_and_binder.values():
        proc.check_alive()
    for name in ("b-0", "b-1"):
        obj = cluster.kubectl.get("pod", name, "-n", namespace)
        assert gates(obj) == [ADMISSION_GATE], f"{name} was let in over the queue's limit"
        assert scheduled_condition(obj).get("reason") == "SchedulingGated"
        assert not obj["spec"].get("nodeName")

    cluster.kubectl.run("delete", "pod", "a-0", "a-1", "-n", namespace, "--wait=false")
    wait_for("gang b running", lambda: running(cluster, namespace, "b-0", "b-1"), timeout=60)
    for name in ("b-0", "b-1"):
        obj = cluster.kubectl.get("pod", name, "-n", namespace)
        assert gates(obj) == []
        assert obj["spec"]["nodeName"] == kwok_node
        assert scheduled_condition(obj).get("status") == "True"
