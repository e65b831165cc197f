"""A pod stuck in Releasing holds its room in the live scheduler (docs/semantics.md §1.3).

Why: a Running pod whose deletion never finishes (a finalizer nobody clears, a node that
is gone) must not keep a gang pipelined behind it forever. Here a pod on a kwok node is
force-deleted but held by a finalizer; with ``stuckInReleasingThreshold: 1s`` a gang that
needs its room is not pipelined, its PodGroup says why (``StuckInReleasing``), and it is
bound once the finalizer is cleared and the pod has gone.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from .controlplane import Cluster
from .kube import Obj, wait_for
from .live import component
from .objects import KWOK_TOLERATION
from .procs import ManagedProcess
from .test_live_scheduler import bind_requests, gang, queue

pytestmark = pytest.mark.e2e

HOLD = "podmuster.io/e2e-hold"
STUCK_AFTER = timedelta(seconds=3)
"""Past the threshold (1s), with a margin for deletionTimestamp's whole seconds."""


@pytest.fixture(scope="module")
def scheduler(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ManagedProcess]:
    config: Path = tmp_path_factory.mktemp("stuck") / "scheduler.yaml"
    config.write_text("stuckInReleasingThreshold: 1s\n")
    flags = ["--schedule-period=0.5", "--log-format=json", f"--config={config}"]
    with component(cluster, "scheduler", flags, instance="stuck") as proc:
        yield proc


def held_pod(namespace: str, node: str) -> Obj:
    """A pod bound straight to ``node`` (30 of its 32 CPUs) with a finalizer that holds it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "old", "namespace": namespace, "finalizers": [HOLD]},
        "spec": {
            "nodeName": node,
            "tolerations": [KWOK_TOLERATION],
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "30", "memory": "1Gi"}},
                }
            ],
        },
    }


def test_a_gang_is_not_pipelined_behind_a_pod_stuck_in_releasing(
    cluster: Cluster, scheduler: ManagedProcess, namespace: str, kwok_node: str
) -> None:
    queue_name = f"q-{uuid.uuid4().hex[:6]}"
    cluster.kubectl.create(queue(queue_name))
    cluster.kubectl.create(held_pod(namespace, kwok_node))
    try:
        wait_for(
            "pod old Running",
            lambda: (
                cluster.kubectl.get("pod", "old", "-n", namespace)["status"].get("phase")
                == "Running"
            ),
            timeout=60,
        )
        # grace period 0: the deletionTimestamp is now, the finalizer keeps the pod
        cluster.kubectl.run(
            "delete", "pod", "old", "-n", namespace, "--grace-period=0", "--force", "--wait=false"
        )
        deleted = wait_for(
            "pod old terminating",
            lambda: cluster.kubectl.get("pod", "old", "-n", namespace)["metadata"].get(
                "deletionTimestamp"
            ),
            timeout=30,
        )
        # Until the threshold has passed the pod is only Releasing, and a gang created
        # then is rightly pipelined behind it: create the gang once the pod is stuck.
        stuck_from = datetime.fromisoformat(str(deleted).replace("Z", "+00:00")) + STUCK_AFTER
        time.sleep(max(0.0, (stuck_from - datetime.now(UTC)).total_seconds()))
        for obj in gang(namespace, "late", queue_name, kwok_node, 1, "20"):
            cluster.kubectl.create(obj)

        def stuck_reason() -> str | None:
            group = cluster.kubectl.get("podgroup.scheduling.run.ai", "late", "-n", namespace)
            for condition in group.get("status", {}).get("schedulingConditions") or []:
                for reason in condition.get("reasons") or []:
                    if "StuckInReleasing" in reason.get("message", ""):
                        return str(reason["message"])
            return None

        message = wait_for("a StuckInReleasing reason on late", stuck_reason, timeout=60)
        assert f"{namespace}/old on {kwok_node}" in message
        assert "late-0" not in bind_requests(cluster, namespace)
        events = cluster.kubectl.items("events", "-n", namespace)
        assert not [e for e in events if e["reason"] == "Pipelined"]
    finally:
        if cluster.kubectl.exists("pod", "old", "-n", namespace):
            cluster.kubectl.run(
                "patch", "pod", "old", "-n", namespace, "--type=merge",
                "-p", '{"metadata":{"finalizers":null}}',
            )  # fmt: skip
    wait_for(
        "a BindRequest for late-0 once old is gone",
        lambda: "late-0" in bind_requests(cluster, namespace),
        timeout=60,
    )
    cluster.kubectl.run("delete", "queue.scheduling.run.ai", queue_name, "--ignore-not-found")
