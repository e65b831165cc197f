"""Reclaim, preemption and consolidation through the whole pipeline, seen through the API.

podmuster runs as one ``podmuster run all`` process for the module (or one process
per component). Each test has its own namespace, queues and GPU nodes; only those
nodes have ``nvidia.com/gpu``, so the tests' GPU workloads fill exactly the capacity
they make. Evictions are pod deletions: the test sees the victims vanish (and their
``Evict`` Events), their controllers re-create them, and the pods they made room
for are bound in a following cycle.
"""

from __future__ import annotations

import pytest

from .conftest import NodeFactory, QueueFactory
from .controlplane import Cluster
from .kube import NotYet, Obj, wait_for
from .objects import (
    GPU,
    batch_job,
    bind_requests,
    events,
    kai_bare_pod,
    kai_template,
    live_pods,
    replica_set,
    running_on,
    wait_running,
)
from .procs import ManagedProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def names(pods: list[Obj]) -> set[str]:
    return {p["metadata"]["name"] for p in pods}


def evicted(cluster: Cluster, namespace: str, action: str) -> dict[str, str]:
    """Pod name -> Evict Event message, for the evictions ``action`` made."""
    return {
        e["involvedObject"]["name"]: e["message"]
        for e in events(cluster, namespace, "Pod")
        if e["reason"] == "Evict" and f"the {action} action" in e["message"]
    }


def gpus_per_node(cluster: Cluster, namespace: str) -> dict[str, int]:
    """GPUs requested by the namespace's bound, live pods, per node."""
    used: dict[str, int] = {}
    for member in live_pods(cluster, namespace):
        node = member["spec"].get("nodeName")
        if node:
            for container in member["spec"]["containers"]:
                amount = int(container["resources"].get("requests", {}).get(GPU, 0))
                used[node] = used.get(node, 0) + amount
    return used


def test_reclaim_gives_a_queue_back_its_quota(
    cluster: Cluster,
    podmuster: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    kwok_nodes.add(gpus=4)
    lender = kai_queues.add("lender", gpu_quota=0)  # runs on borrowed GPUs only
    owner = kai_queues.add("owner", gpu_quota=2)
    one_gpu = kai_template(kwok_nodes.pool, gpus=1)
    cluster.kubectl.create(batch_job("borrow", namespace, lender, one_gpu, parallelism=4))
    borrowers = names(wait_running(cluster, namespace, "job-name=borrow", 4))

    cluster.kubectl.create(batch_job("claim", namespace, owner, one_gpu, parallelism=2))
    wait_running(cluster, namespace, "job-name=claim", 2)

    victims = set(evicted(cluster, namespace, "reclaim"))
    assert len(victims) == 2, victims
    assert victims <= borrowers, victims
    remaining = [p for p in live_pods(cluster, namespace, "job-name=borrow") if running_on(p)]
    assert names(remaining) == borrowers - victims  # the replacements wait: lender is at its share
    assert gpus_per_node(cluster, namespace) == {kwok_nodes.names[0]: 4}


def test_inference_preempts_train_in_its_queue(
    cluster: Cluster,
    podmuster: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    node = kwok_nodes.add(gpus=4)
    queue = kai_queues.add("team", gpu_quota=4)
    one_gpu = kai_template(kwok_nodes.pool, gpus=1)
    job = batch_job("train", namespace, queue, one_gpu, parallelism=4, priority="train")
    cluster.kubectl.create(job)
    trainers = names(wait_running(cluster, namespace, "job-name=train", 4))

    two_gpus = kai_template(kwok_nodes.pool, gpus=2, labels={"app": "serve"})
    cluster.kubectl.create(kai_bare_pod("serve", namespace, queue, two_gpus, "inference"))
    (server,) = wait_running(cluster, namespace, "app=serve", 1)
    assert running_on(server) == node

    victims = set(evicted(cluster, namespace, "preempt"))
    assert len(victims) == 2, victims
    assert victims <= trainers, victims
    remaining = [p for p in live_pods(cluster, namespace, "job-name=train") if running_on(p)]
    assert names(remaining) == trainers - victims
    assert gpus_per_node(cluster, namespace) == {node: 4}


def test_consolidation_moves_a_job_to_make_room(
    cluster: Cluster,
    podmuster: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    """Two 4-GPU nodes each run a 2-GPU job; a 4-GPU job fits only if one of them moves."""
    queue = kai_queues.add("team", gpu_quota=8)
    pool = kwok_nodes.pool
    first = kwok_nodes.add(gpus=4)
    mover = replica_set("mover", namespace, queue, kai_template(pool, gpus=2))
    cluster.kubectl.create(mover)
    (moved,) = wait_running(cluster, namespace, "podmuster.io/e2e-rs=mover", 1)
    assert running_on(moved) == first
    second = kwok_nodes.add(gpus=4)
    anchor = kai_template(pool, gpus=2, node=second, labels={"app": "anchor"})
    cluster.kubectl.create(kai_bare_pod("anchor", namespace, queue, anchor))
    wait_running(cluster, namespace, "app=anchor", 1)
    assert gpus_per_node(cluster, namespace) == {first: 2, second: 2}

    big = kai_template(pool, gpus=4, labels={"app": "big"})
    cluster.kubectl.create(kai_bare_pod("big", namespace, queue, big))
    (placed,) = wait_running(cluster, namespace, "app=big", 1, timeout=120)
    assert running_on(placed) == first

    def replacement() -> Obj | NotYet:
        found = live_pods(cluster, namespace, "podmuster.io/e2e-rs=mover")
        ok = len(found) == 1 and running_on(found[0]) and found[0]["metadata"]["uid"]
        return (
            found[0]
            if ok and found[0]["metadata"]["uid"] != moved["metadata"]["uid"]
            else (NotYet(str([(p["metadata"]["name"], running_on(p)) for p in found])))
        )

    again = wait_for("the moved job's new pod Running", replacement, timeout=60)
    assert running_on(again) == second
    assert set(evicted(cluster, namespace, "consolidation")) == {moved["metadata"]["name"]}
    assert gpus_per_node(cluster, namespace) == {first: 4, second: 4}
    requests = bind_requests(cluster, namespace)
    for member in live_pods(cluster, namespace):
        request = requests[member["metadata"]["name"]]
        assert request["spec"]["selectedNode"] == member["spec"]["nodeName"]
