"""The scale-up hint against a real API server (docs/autoscaling.md).

``podmuster run scheduler`` sees a gang of 12 one-GPU pods that may use only this test's
pool of kwok nodes, where one 8-GPU node is free: the PodGroup gets the annotation
``kai.scheduler/scale-up-hint`` saying one more node of that shape (with the pool label
the pods select on) would host the 4 pods that do not fit, and its Unschedulable
condition says so too. When the second node arrives the gang gets its BindRequests and
the annotation is removed.

With a required rack, free room split over two racks does not count: the hint names
the rack the new node must join (``topology`` and the rack's labels), and a node that
joins it lets the gang start.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import NodeFactory
from .controlplane import Cluster
from .kube import Obj, wait_for
from .live import component
from .objects import GPU, KWOK_TOLERATION, POOL_LABEL, kai_topology
from .procs import ManagedProcess
from .test_live_scheduler import bind_requests, queue

pytestmark = pytest.mark.e2e

HINT = "kai.scheduler/scale-up-hint"


@pytest.fixture(scope="module")
def scheduler(cluster: Cluster) -> Iterator[ManagedProcess]:
    flags = ["--schedule-period=0.5", "--log-format=json", "--metrics-port=-1"]
    with component(cluster, "scheduler", flags) as proc:
        yield proc


def gang(namespace: str, queue_name: str, pool: str, pods: int, **spec: Any) -> list[Obj]:
    group: Obj = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": namespace},
        "spec": {"queue": queue_name, "minMember": pods, **spec},
    }
    members = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"train-{i}",
                "namespace": namespace,
                "annotations": {"pod-group-name": "train"},
            },
            "spec": {
                "schedulerName": "kai-scheduler",
                "nodeSelector": {POOL_LABEL: pool},
                "tolerations": [KWOK_TOLERATION],
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.invalid/x:none",
                        "resources": {
                            "requests": {"cpu": "1", "memory": "1Gi"},
                            "limits": {GPU: "1"},
                        },
                    }
                ],
            },
        }
        for i in range(pods)
    ]
    return [group, *members]


def annotation(cluster: Cluster, namespace: str) -> str | None:
    group = cluster.kubectl.get("podgroup.scheduling.run.ai", "train", "-n", namespace)
    value: str | None = (group["metadata"].get("annotations") or {}).get(HINT)
    return value


def test_gang_hint_set_then_cleared(
    cluster: Cluster, scheduler: ManagedProcess, namespace: str, kwok_nodes: NodeFactory
) -> None:
    queue_name = f"q-{uuid.uuid4().hex[:6]}"
    cluster.kubectl.create(queue(queue_name))
    try:
        kwok_nodes.add(cpu="32", gpus=8)
        for obj in gang(namespace, queue_name, kwok_nodes.pool, 12):
            cluster.kubectl.create(obj)
        raw = wait_for("the scale-up hint", lambda: annotation(cluster, namespace), timeout=30)
        hint = json.loads(raw)
        assert (hint["nodes"], hint["pods"]) == (1, 4)
        assert hint["shape"][GPU] == "8"
        assert hint["labels"] == {POOL_LABEL: kwok_nodes.pool}
        group = cluster.kubectl.get("podgroup.scheduling.run.ai", "train", "-n", namespace)
        (condition,) = group["status"]["schedulingConditions"]
        assert "ScaleUpHint: 1 more node(s)" in condition["message"]

        kwok_nodes.add(cpu="32", gpus=8)  # what the autoscaler would do
        wait_for(
            "BindRequests for the whole gang",
            lambda: len(bind_requests(cluster, namespace)) == 12,
            timeout=30,
        )
        wait_for("the hint removed", lambda: annotation(cluster, namespace) is None, timeout=30)
    finally:
        cluster.kubectl.run("delete", "queue.scheduling.run.ai", queue_name, "--ignore-not-found")


def test_gang_hint_names_the_rack_the_node_must_join(
    cluster: Cluster, scheduler: ManagedProcess, namespace: str, kwok_nodes: NodeFactory
) -> None:
    queue_name = f"q-{uuid.uuid4().hex[:6]}"
    topology = f"topo-{uuid.uuid4().hex[:6]}"
    zone, rack = "topology.kubernetes.io/zone", "podmuster.io/e2e-rack"
    cluster.kubectl.create(queue(queue_name))
    cluster.kubectl.create(kai_topology(topology, [zone, rack]))
    try:
        # Eight GPUs free in all, four per rack: six pods that must share a rack wait.
        for name in ("r1", "r2"):
            kwok_nodes.add(cpu="32", gpus=4, labels={zone: "z1", rack: name})
        constraint = {"topology": topology, "requiredTopologyLevel": rack}
        for obj in gang(namespace, queue_name, kwok_nodes.pool, 6, topologyConstraint=constraint):
            cluster.kubectl.create(obj)
        raw = wait_for("the scale-up hint", lambda: annotation(cluster, namespace), timeout=30)
        hint = json.loads(raw)
        assert (hint["nodes"], hint["pods"]) == (1, 2)
        assert hint["topology"] == {"name": topology, "level": rack, "domain": "z1/r1"}
        assert hint["labels"] == {POOL_LABEL: kwok_nodes.pool, zone: "z1", rack: "r1"}
        assert not bind_requests(cluster, namespace)

        kwok_nodes.add(cpu="32", gpus=4, labels={zone: "z1", rack: "r1"})
        found = wait_for(
            "BindRequests for the whole gang",
            lambda: (lambda b: b if len(b) == 6 else None)(bind_requests(cluster, namespace)),
            timeout=30,
        )
        racks = {kwok_nodes.names[0]: "r1", kwok_nodes.names[1]: "r2", kwok_nodes.names[2]: "r1"}
        assert {racks[r["spec"]["selectedNode"]] for r in found.values()} == {"r1"}
        wait_for("the hint removed", lambda: annotation(cluster, namespace) is None, timeout=30)
    finally:
        cluster.kubectl.run("delete", "queue.scheduling.run.ai", queue_name, "--ignore-not-found")
        cluster.kubectl.run("delete", "topology.kai.scheduler", topology, "--ignore-not-found")
