"""Two node pools, two schedulers, on a real API server (docs/semantics.md, node pools).

Each pool's scheduler (`podmuster run scheduler --node-pool NAME`) sees only the Nodes,
Queues and PodGroups labelled with its pool; one binder and one status controller serve
both. No pod may land outside its pool: a gang of pool b that does not fit pool b waits,
though pool a has the room it lacks, and each scheduler writes the PodGroup condition
of its own pool only. Every BindRequest carries its pool's label (only that pool's
scheduler writes it, as KAI's does) and names a node of that pool, and each scheduler's
log names only its own pool's pods. All nodes carry the test's e2e pool label, so only
the node-pool filter keeps a pod off the other pool's nodes.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from crds.names import NODE_POOL_LABEL

from .conftest import NodeFactory, QueueFactory
from .controlplane import Cluster
from .kube import NotYet, saying, wait_for
from .live import PIPELINE_FLAGS, component, pipeline
from .objects import (
    QUEUE_LABEL,
    bind_requests,
    ensure_priority_classes,
    kai_gang,
    kai_queue,
    kai_template,
    live_pods,
    pod_group,
    scheduling_reasons,
    wait_running,
)
from .procs import ManagedProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

SUFFIX = uuid.uuid4().hex[:5]
POOL_A, POOL_B = f"pa-{SUFFIX}", f"pb-{SUFFIX}"


@pytest.fixture(scope="module")
def schedulers(cluster: Cluster) -> Iterator[dict[str, ManagedProcess]]:
    """The binder and the controllers, and one scheduler per pool (no default one)."""
    ensure_priority_classes(cluster)
    with contextlib.ExitStack() as stack:
        procs = stack.enter_context(pipeline(cluster, skip=("podgrouper", "scheduler")))
        for pool in (POOL_A, POOL_B):
            flags = (*PIPELINE_FLAGS["scheduler"], f"--node-pool={pool}")
            procs[pool] = stack.enter_context(component(cluster, "scheduler", flags, pool))
        yield procs
        for proc in procs.values():
            proc.check_alive()


def _pooled(obj: dict[str, Any], pool: str) -> dict[str, Any]:
    obj["metadata"].setdefault("labels", {})[NODE_POOL_LABEL] = pool
    return obj


def _queue(cluster: Cluster, queues: QueueFactory, pool: str) -> str:
    name = f"{queues.prefix}-{pool}"
    cluster.kubectl.create(_pooled(kai_queue(name), pool))
    queues.names.append(name)
    return name


def _gang(
    cluster: Cluster,
    name: str,
    namespace: str,
    queue: str,
    pool: str,
    e2e_pool: str,
    pods: int,
    cpu: str = "2",
) -> None:
    template = kai_template(e2e_pool, cpu=cpu, labels={"app": name})
    group, *members = kai_gang(name, namespace, queue, template, pods)
    cluster.kubectl.create(_pooled(group, pool))
    for member in members:
        member["metadata"]["labels"][QUEUE_LABEL] = queue
        cluster.kubectl.create(member)


def _pool_condition(cluster: Cluster, namespace: str, group: str, pool: str) -> Any:
    conditions = (pod_group(cluster, namespace, group).get("status") or {}).get(
        "schedulingConditions"
    ) or []
    mine = [c for c in conditions if c.get("nodePool") == pool]
    return mine or NotYet(f"no condition of pool {pool} on {group}: {conditions}")


def _bound_by(proc: ManagedProcess) -> set[str]:
    """The pods a scheduler's JSON log says it created a BindRequest for."""
    pods = set()
    for line in proc.log_path.read_text(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            entry: dict[str, Any] = json.loads(line)
            if entry.get("msg") == "bind request created":
                pods.add(str(entry["pod"]))
    return pods


def test_two_pools_two_schedulers_no_pod_outside_its_pool(
    cluster: Cluster,
    schedulers: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    nodes = {
        POOL_A: [kwok_nodes.add(cpu="4", labels={NODE_POOL_LABEL: POOL_A}) for _ in range(2)],
        POOL_B: [kwok_nodes.add(cpu="4", labels={NODE_POOL_LABEL: POOL_B}) for _ in range(2)],
    }
    queue_a = _queue(cluster, kai_queues, POOL_A)
    queue_b = _queue(cluster, kai_queues, POOL_B)
    e2e_pool = kwok_nodes.pool
    _gang(cluster, "ga", namespace, queue_a, POOL_A, e2e_pool, 3)  # 6 of pool a's 8 CPUs
    _gang(cluster, "gb", namespace, queue_b, POOL_B, e2e_pool, 2)  # 4 of pool b's 8 CPUs
    placed: dict[str, str] = {}
    for group, pool, count in (("ga", POOL_A, 3), ("gb", POOL_B, 2)):
        for pod in wait_running(cluster, namespace, f"app={group}", count, timeout=90):
            assert pod["spec"]["nodeName"] in nodes[pool], (group, pod["spec"]["nodeName"])
            placed[pod["metadata"]["name"]] = pod["spec"]["nodeName"]
    # Only once ga and gb run (a gang created with them might be decided first and take
    # the room): 3 more pods of 2 CPUs, where pool b has 4 left and pool a 2: together
    # they would fit.
    _gang(cluster, "big", namespace, queue_b, POOL_B, e2e_pool, 3)
    # One pod of 5 CPUs fits no node: pool a's scheduler must say so, for pool a.
    _gang(cluster, "huge", namespace, queue_a, POOL_A, e2e_pool, 1, cpu="5")
    reasons = wait_for(
        "why big waits",
        saying("Insufficient cpu", partial(scheduling_reasons, cluster, namespace, "big")),
        timeout=60,
    )
    assert "0/2 nodes are available" in str(reasons)  # pool b's scheduler sees pool b only
    assert [p["spec"].get("nodeName") for p in live_pods(cluster, namespace, "app=big")] == [
        None,
        None,
        None,
    ]
    # A pending PodGroup's condition is its own pool's, written by that pool's scheduler
    # only (a gang placed at once may never get one), and no group has the other pool's.
    # Each pool has a pending group, so each scheduler's writing is seen.
    wait_for(
        "huge's condition of pool a", partial(_pool_condition, cluster, namespace, "huge", POOL_A)
    )
    wait_for(
        "big's condition of pool b", partial(_pool_condition, cluster, namespace, "big", POOL_B)
    )
    for group, other in (("ga", POOL_B), ("gb", POOL_A), ("big", POOL_A), ("huge", POOL_B)):
        conditions = (pod_group(cluster, namespace, group).get("status") or {}).get(
            "schedulingConditions"
        ) or []
        assert not [c for c in conditions if c.get("nodePool") == other], (group, conditions)
    # Each pool's BindRequests: its label, its nodes, and its scheduler's log only.
    requests = bind_requests(cluster, namespace)
    assert sorted(requests) == sorted(placed)
    for pool, groups in ((POOL_A, ("ga",)), (POOL_B, ("gb", "big"))):
        mine = {n for n in requests if n.split("-")[0] in groups}
        for name in mine:
            assert requests[name]["metadata"]["labels"].get(NODE_POOL_LABEL) == pool, name
            assert requests[name]["spec"]["selectedNode"] in nodes[pool], name
        assert _bound_by(schedulers[pool]) == {f"{namespace}/{n}" for n in mine}, pool
