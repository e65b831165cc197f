"""``podmuster run all --cluster-autoscaling`` on the real API server: the whole chain.

A half-GPU pod selects a node pool that does not exist. The podgrouper in the process
groups it, the scheduler cannot place it and writes ``PodScheduled=False``
(Unschedulable), and the node-scale-adjuster in the same process answers with a
whole-GPU scaling pod in ``kai-scale-adjust``; deleting the pod removes it.
"""

from __future__ import annotations

import uuid

import pytest

from .controlplane import Cluster
from .kube import KubectlError, Obj, wait_for
from .live import component
from .test_run_all import queue
from .test_scale_adjuster import SCALING_NS, scaling_pod, sharing_pod

pytestmark = pytest.mark.e2e


def unschedulable(pod: Obj | None) -> bool:
    conditions = (pod or {}).get("status", {}).get("conditions") or []
    return any(
        c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions
    )


def test_scheduler_condition_drives_the_scaling_pod(cluster: Cluster, namespace: str) -> None:
    try:
        cluster.kubectl.run("create", "namespace", SCALING_NS)
    except KubectlError as exc:
        if "AlreadyExists" not in exc.stderr:
            raise
    queue_name = f"ca-{uuid.uuid4().hex[:5]}"
    cluster.kubectl.create(queue(queue_name))
    flags = ["--schedule-period=0.5", "--log-format=json", "--metrics-port=0",
             f"--namespace={namespace}", "--cluster-autoscaling",
             "--scale-cool-down-seconds=1"]  # fmt: skip
    try:
        with component(cluster, "all", flags):
            pod = sharing_pod("half", namespace, f"missing-{uuid.uuid4().hex[:5]}")
            pod["metadata"]["labels"] = {"kai.scheduler/queue": queue_name}
            cluster.kubectl.create(pod)
            wait_for(
                "the scheduler's PodScheduled=False",
                lambda: unschedulable(cluster.kubectl.get("pod", "half", "-n", namespace)),
                timeout=60,
            )
            name = f"{namespace}-half"
            scaler = wait_for(
                f"scaling pod {name}",
                lambda: (lambda p: p if unschedulable(p) else None)(scaling_pod(cluster, name)),
                timeout=30,
            )
            limits = scaler["spec"]["containers"][0]["resources"]["limits"]
            assert limits == {"nvidia.com/gpu": "1"}
            cluster.kubectl.run("delete", "pod", "half", "-n", namespace, "--wait=false",
                                "--grace-period=0", "--force")  # fmt: skip
            wait_for(
                f"scaling pod {name} deleted",
                lambda: scaling_pod(cluster, name) is None,
                timeout=30,
            )
    finally:
        cluster.kubectl.run("delete", "queue.scheduling.run.ai", queue_name, "--wait=false")
