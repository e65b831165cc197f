"""``podmuster run all``: every component in one process, on the real API server.

A bare pod for ``kai-scheduler`` with a queue label goes all the way: the podgrouper
in the process writes its PodGroup, the scheduler a BindRequest, the binder binds it
(kwok turns it Running), and the status controllers fill the PodGroup's and the
Queue's status. Then SIGTERM: the process releases its Lease and exits 0 quickly.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from .controlplane import Cluster
from .kube import Obj, wait_for
from .live import component
from .objects import KWOK_TOLERATION, wait_phase

pytestmark = pytest.mark.e2e


def queue(name: str) -> Obj:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"resources": {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}},
    }


def bare_pod(namespace: str, name: str, queue_name: str, node: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"kai.scheduler/queue": queue_name},
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": [KWOK_TOLERATION],
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}},
                }
            ],
        },
    }


def test_run_all_groups_schedules_binds_reports_and_stops_cleanly(
    cluster: Cluster, namespace: str, kwok_node: str
) -> None:
    queue_name = f"all-{uuid.uuid4().hex[:5]}"
    cluster.kubectl.create(queue(queue_name))
    flags = ["--leader-elect", "--leader-elect-namespace=default", "--schedule-period=0.5",
             "--log-format=json", "--metrics-port=0", f"--namespace={namespace}"]  # fmt: skip
    with component(cluster, "all", flags) as proc:
        cluster.kubectl.create(bare_pod(namespace, "solo", queue_name, kwok_node))
        wait_phase(cluster, namespace, "solo", "Running", timeout=90)
        pod = cluster.kubectl.get("pod", "solo", "-n", namespace)
        assert pod["spec"]["nodeName"] == kwok_node
        group_name = pod["metadata"]["annotations"]["pod-group-name"]

        def group_status() -> dict[str, Any]:
            group = cluster.kubectl.get("podgroups.scheduling.run.ai", group_name, "-n", namespace)
            status: dict[str, Any] = group.get("status") or {}
            return status

        wait_for(
            f"PodGroup {group_name} resourcesStatus.allocated",
            lambda: bool((group_status().get("resourcesStatus") or {}).get("allocated")),
            timeout=60,
        )

        def queue_allocated() -> dict[str, Any]:
            status = cluster.kubectl.get("queues.scheduling.run.ai", queue_name).get("status")
            allocated: dict[str, Any] = (status or {}).get("allocated") or {}
            return allocated

        wait_for(f"Queue {queue_name} status.allocated", lambda: bool(queue_allocated()), 60)
        lease = cluster.kubectl.get("lease", "podmuster-all", "-n", "default")
        assert lease["spec"].get("holderIdentity")
        started = time.monotonic()
        proc.stop(timeout=30)
        assert time.monotonic() - started < 20, "run all took too long to stop on SIGTERM"
        assert proc.returncode == 0, proc.tail()
    lease = cluster.kubectl.get("lease", "podmuster-all", "-n", "default")
    assert not lease["spec"].get("holderIdentity"), "the Lease was not released"
    cluster.kubectl.run("delete", "queue.scheduling.run.ai", queue_name, "--wait=false")
