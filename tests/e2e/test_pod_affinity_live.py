"""Inter-pod affinity and topology spread against a real API server (docs/semantics.md §14).

The scheduler, the binder and the status controllers run (no podgrouper: each test
names its PodGroup); kwok stands in for the kubelets. Every node is large enough for a
whole gang, so bin-packing alone would put a gang on one node: where the pods land
shows the rule was applied, and Namespaces' labels reach the scheduler through its
watch (a ``namespaceSelector``).
"""

from __future__ import annotations

import uuid
from functools import partial
from typing import Any

import pytest

from .conftest import NodeFactory, QueueFactory
from .controlplane import Cluster
from .kube import saying, wait_for
from .objects import (
    kai_gang,
    kai_template,
    scheduling_reasons,
    wait_running,
)
from .procs import ManagedProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _gang(
    name: str, namespace: str, queue: str, pool: str, pods: int, **spec: Any
) -> list[dict[str, Any]]:
    template = kai_template(pool, labels={"app": name})
    template["spec"].update(spec)
    return kai_gang(name, namespace, queue, template, pods)


def _anti(app: str, key: str = HOSTNAME) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"podAntiAffinity": {REQUIRED: [term]}}


def test_a_gang_anti_affine_to_itself_takes_one_node_per_pod(
    cluster: Cluster,
    podmuster_own_groups: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    nodes = {kwok_nodes.add(cpu="8") for _ in range(4)}
    queue = kai_queues.add("team")
    for obj in _gang("spread", namespace, queue, kwok_nodes.pool, 3, affinity=_anti("spread")):
        cluster.kubectl.create(obj)
    running = wait_running(cluster, namespace, "app=spread", 3, timeout=90)
    placed = [p["spec"]["nodeName"] for p in running]
    assert len(set(placed)) == 3, placed
    assert set(placed) <= nodes


def test_a_gang_spreads_over_zones_within_max_skew(
    cluster: Cluster,
    podmuster_own_groups: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    zones = {kwok_nodes.add(cpu="8", labels={ZONE: zone}): zone for zone in ("a", "a", "b")}
    queue = kai_queues.add("team")
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "zoned"}},
        }
    ]
    gang = _gang("zoned", namespace, queue, kwok_nodes.pool, 4, topologySpreadConstraints=spread)
    for obj in gang:
        cluster.kubectl.create(obj)
    running = wait_running(cluster, namespace, "app=zoned", 4, timeout=90)
    per_zone = {"a": 0, "b": 0}
    for pod in running:
        per_zone[zones[pod["spec"]["nodeName"]]] += 1
    assert per_zone == {"a": 2, "b": 2}


def test_affinity_to_a_pod_in_a_namespace_chosen_by_its_labels(
    cluster: Cluster,
    podmuster_own_groups: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    nodes = [kwok_nodes.add(cpu="8") for _ in range(3)]
    other = f"e2e-db-{uuid.uuid4().hex[:5]}"
    cluster.kubectl.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": other, "labels": {"team": f"red-{namespace[-5:]}"}},
        }
    )
    try:
        # The database runs on the last node, placed there by hand (any scheduler's pod counts).
        db = kai_template(kwok_nodes.pool, labels={"app": "db"})
        db["spec"]["nodeName"] = nodes[2]
        del db["spec"]["schedulerName"]
        cluster.kubectl.create(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db", "namespace": other,
             "labels": {"app": "db"}}, "spec": db["spec"]}
        )  # fmt: skip
        wait_running(cluster, other, "app=db", 1, timeout=60)
        term = {
            "labelSelector": {"matchLabels": {"app": "db"}},
            "namespaceSelector": {"matchLabels": {"team": f"red-{namespace[-5:]}"}},
            "topologyKey": HOSTNAME,
        }
        queue = kai_queues.add("team")
        gang = _gang(
            "near",
            namespace,
            queue,
            kwok_nodes.pool,
            2,
            affinity={"podAffinity": {REQUIRED: [term]}},
        )
        for obj in gang:
            cluster.kubectl.create(obj)
        running = wait_running(cluster, namespace, "app=near", 2, timeout=90)
        assert {p["spec"]["nodeName"] for p in running} == {nodes[2]}
    finally:
        cluster.kubectl.run("delete", "namespace", other, "--wait=false", "--ignore-not-found")


def test_a_gang_whose_anti_affinity_cannot_be_met_waits_whole_and_says_why(
    cluster: Cluster,
    podmuster_own_groups: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    for _ in range(2):
        kwok_nodes.add(cpu="8")
    queue = kai_queues.add("team")
    for obj in _gang("crowded", namespace, queue, kwok_nodes.pool, 3, affinity=_anti("crowded")):
        cluster.kubectl.create(obj)
    words = "didn't match pod anti-affinity rules"
    reasons = wait_for(
        "why crowded waits",
        saying(words, partial(scheduling_reasons, cluster, namespace, "crowded")),
        timeout=60,
    )
    assert words in str(reasons)
    pods = cluster.kubectl.items("pods", "-n", namespace, "-l", "app=crowded")
    assert [p["spec"].get("nodeName") for p in pods] == [None, None, None]
