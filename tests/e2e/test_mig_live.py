"""MIG slices (mixed strategy) on a real API server (docs/gpu-scheduling.md, docs/semantics.md §6).

The whole pipeline runs (``podmuster run all``). A kwok node labelled
``nvidia.com/mig.strategy=mixed`` advertises seven ``nvidia.com/mig-1g.10gb`` and two
``nvidia.com/mig-2g.20gb`` slices. A gang of three 1g pods is bound there
(``receivedResourceType: MigInstance``).

Where the GPU count of a slice shows: the scheduler counts a ``mig-<X>g.*`` slice as X
GPUs in its queue (docs/semantics.md §3), which the API shows through the queue's GPU limit:
with 3 of 4 GPUs in use, a 2g slice is refused as ``OverLimit`` (the reason names
``gpu=3`` allocated and a ``gpu=2`` request) although the node has 2g slices free, and one
more 1g slice still binds. The Queue's ``status.allocated``, written by the status
controllers, lists the slices under their own resource name, as KAI's podgroup and queue
controllers do (container requests summed, no GPU conversion): it is checked as such.
"""

from __future__ import annotations

from functools import partial

import pytest

from .conftest import NodeFactory, QueueFactory
from .controlplane import Cluster
from .kube import saying, wait_for
from .objects import (
    bind_requests,
    kai_gang,
    kai_template,
    scheduling_reasons,
    wait_running,
)
from .procs import ManagedProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

MIG_1G = "nvidia.com/mig-1g.10gb"
MIG_2G = "nvidia.com/mig-2g.20gb"


def test_mig_slices_bind_on_a_mixed_node_and_count_as_gpus_in_their_queue(
    cluster: Cluster,
    podmuster: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    node = kwok_nodes.add(
        labels={"nvidia.com/mig.strategy": "mixed"}, extra={MIG_1G: "7", MIG_2G: "2"}
    )
    pool = kwok_nodes.pool
    queue = kai_queues.add("team", gpu_quota=4, gpu_limit=4)

    def submit(name: str, pods: int, slice_name: str) -> None:
        template = kai_template(pool, labels={"app": name}, extended={slice_name: "1"})
        for obj in kai_gang(name, namespace, queue, template, pods):
            cluster.kubectl.create(obj)

    submit("slices", 3, MIG_1G)
    pods = wait_running(cluster, namespace, "app=slices", 3, timeout=30)
    assert {p["spec"]["nodeName"] for p in pods} == {node}
    requests = bind_requests(cluster, namespace)
    assert {r["spec"]["receivedResourceType"] for r in requests.values()} == {"MigInstance"}

    def queue_allocated() -> dict[str, str]:
        status = cluster.kubectl.get("queues.scheduling.run.ai", queue).get("status") or {}
        return dict(status.get("allocated") or {})

    wait_for("Queue status allocated", lambda: queue_allocated().get(MIG_1G) == "3", timeout=30)

    # Three 1g slices are 3 GPUs of the queue's limit of 4: a 2g slice (2 GPUs) waits.
    submit("big", 1, MIG_2G)
    probe = saying("OverLimit", partial(scheduling_reasons, cluster, namespace, "big"))
    reasons = wait_for("why big waits", probe)
    assert reasons[0]["reason"] == "OverLimit", reasons
    message = reasons[0]["message"]
    assert "request of gpu=2 " in message, message
    assert "allocated gpu=3 " in message, message
    # One more 1g slice (1 GPU) takes the queue to exactly its limit and binds.
    submit("one", 1, MIG_1G)
    (pod,) = wait_running(cluster, namespace, "app=one", 1, timeout=30)
    assert pod["spec"]["nodeName"] == node
    assert "big-0" not in bind_requests(cluster, namespace)
    wait_for("Queue status allocated", lambda: queue_allocated().get(MIG_1G) == "4", timeout=30)
