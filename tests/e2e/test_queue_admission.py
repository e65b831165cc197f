"""Queue admission through the scheduling gate on a real API server (docs/semantics.md §5.11).

``podmuster run webhooks`` serves ``/gate-pod`` to the API server (:mod:`.admission`);
the scheduler (leader election on) and the binder run as subprocesses; kwok runs the
pods; PodGroups are made by hand (no podgrouper). A Queue annotated
``kai.scheduler/admission-gate: "true"`` with a CPU limit of 2 takes gang A (2 x 1 CPU);
gang B, created while A runs, is held behind ``kai.scheduler/queue-admission`` with the
API server's ``PodScheduled=False, reason SchedulingGated`` and the scheduler's
``AdmissionGated`` reason on its PodGroup; once A is deleted, B's gate is lifted and B
runs.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from crds.names import ADMISSION_GATE, QUEUE_LABEL

from .admission import admission_queue, gate_webhook, gates, scheduled_condition, webhooks_server
from .controlplane import Cluster
from .kube import NotYet, Obj, wait_for
from .live import component
from .objects import KWOK_TOLERATION, scheduling_reasons
from .procs import ManagedProcess

pytestmark = pytest.mark.e2e

QUIET = ["--metrics-port=-1", "--log-format=json"]


@pytest.fixture(scope="module")
def webhook_port(cluster: Cluster) -> Iterator[int]:
    with webhooks_server(cluster) as port:
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
def queue_name(cluster: Cluster) -> Iterator[str]:
    """A queue under the gate with a CPU limit of 2 (KAI units: millicores)."""
    name = f"q-{uuid.uuid4().hex[:6]}"
    cluster.kubectl.create(admission_queue(name, cpu_limit=2000))
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


def running(cluster: Cluster, namespace: str, *names: str) -> bool | NotYet:
    for name in names:
        obj = cluster.kubectl.get("pod", name, "-n", namespace)
        if obj.get("status", {}).get("phase") != "Running":
            return NotYet(f"{name} is {obj.get('status', {}).get('phase')}, gates {gates(obj)}")
    return True


def test_a_gang_waits_at_the_gate_until_its_queue_has_room(
    cluster: Cluster,
    scheduler_and_binder: dict[str, ManagedProcess],
    webhook_port: int,
    namespace: str,
    kwok_node: str,
    queue_name: str,
) -> None:
    probe = pod(namespace, "probe", "probe", queue_name, kwok_node)
    with gate_webhook(cluster, webhook_port, namespace, probe):
        gang_b_waits_for_gang_a(cluster, scheduler_and_binder, namespace, kwok_node, queue_name)


def held(cluster: Cluster, namespace: str, group: str) -> list[str] | NotYet:
    """The PodGroup's reason codes once the scheduler said it is held at the gate."""
    reasons = scheduling_reasons(cluster, namespace, group)
    if isinstance(reasons, NotYet):
        return reasons
    codes = [r["reason"] for r in reasons]
    return codes if "AdmissionGated" in codes else NotYet(f"reasons {codes}")


def gang_b_waits_for_gang_a(
    cluster: Cluster,
    procs: dict[str, ManagedProcess],
    namespace: str,
    kwok_node: str,
    queue: str,
) -> None:
    create_gang(cluster, namespace, "a", queue, kwok_node)
    wait_for("gang a running", lambda: running(cluster, namespace, "a-0", "a-1"), timeout=60)

    create_gang(cluster, namespace, "b", queue, kwok_node)
    for name in ("b-0", "b-1"):
        obj = cluster.kubectl.get("pod", name, "-n", namespace)
        assert gates(obj) == [ADMISSION_GATE]
        condition = scheduled_condition(obj)
        assert (condition.get("status"), condition.get("reason")) == ("False", "SchedulingGated")
    wait_for("the scheduler holding b", lambda: held(cluster, namespace, "b"), timeout=30)
    for proc in procs.values():
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
