"""Queue admission through the whole pipeline: webhook -> podgrouper -> scheduler -> binder.

Batch Jobs carry their queue label on the Job only, so their pods reach ``/gate-pod``
without one and are gated because some queue is under the gate; the podgrouper groups
the gated pods (one PodGroup per Job pod, from the Job's label); the scheduler then lifts
the gate of the pod whose queue is not under it at once, and in the queue under the gate
(CPU limit 1) lets one pod in and holds the other until the limit is raised
(docs/semantics.md §5.11).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from crds.names import ADMISSION_GATE

from .admission import admission_queue, gate_webhook, gates, scheduled_condition, webhooks_server
from .conftest import NodeFactory
from .controlplane import Cluster
from .kube import NotYet, Obj, wait_for
from .objects import (
    batch_job,
    group_of,
    kai_bare_pod,
    kai_template,
    live_pods,
    running_on,
    scheduling_reasons,
    wait_running,
)
from .procs import ManagedProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def webhook_port(cluster: Cluster) -> Iterator[int]:
    with webhooks_server(cluster) as port:
        yield port


@pytest.fixture
def queues(cluster: Cluster) -> Iterator[tuple[str, str]]:
    """(a queue under the gate with a CPU limit of 1, a queue without the annotation)."""
    stem = uuid.uuid4().hex[:5]
    gated, open_queue = f"q{stem}-gated", f"q{stem}-open"
    cluster.kubectl.create(admission_queue(gated, cpu_limit=1000))
    cluster.kubectl.create(admission_queue(open_queue, gated=False))
    yield gated, open_queue
    cluster.kubectl.run("delete", "queues.scheduling.run.ai", gated, open_queue,
                        "--ignore-not-found", "--wait=false")  # fmt: skip


def split(cluster: Cluster, namespace: str, selector: str) -> tuple[Obj, Obj] | NotYet:
    """(the Running pod, the pod held at the gate with its PodGroup), once both hold."""
    found = live_pods(cluster, namespace, selector)
    on = [p for p in found if running_on(p)]
    waiting = [p for p in found if gates(p) == [ADMISSION_GATE] and group_of(p)]
    if len(found) == 2 and len(on) == 1 and len(waiting) == 1:
        return on[0], waiting[0]
    return NotYet(", ".join(f"{p['metadata']['name']}:{gates(p)}" for p in found) or "no pods")


def test_unlabelled_pods_are_decided_by_their_pod_groups_queue(
    cluster: Cluster,
    podmuster: dict[str, ManagedProcess],
    webhook_port: int,
    namespace: str,
    kwok_nodes: NodeFactory,
    queues: tuple[str, str],
) -> None:
    gated, open_queue = queues
    kwok_nodes.add(cpu="8")
    template = kai_template(kwok_nodes.pool, cpu="1")
    probe = kai_bare_pod("probe", namespace, gated, template)
    with gate_webhook(cluster, webhook_port, namespace, probe):
        cluster.kubectl.create(batch_job("free", namespace, open_queue, template))
        wait_running(cluster, namespace, "job-name=free", 1)

        cluster.kubectl.create(batch_job("capped", namespace, gated, template, parallelism=2))
        _, waiting = wait_for(
            "one capped pod running, the other held and grouped",
            lambda: split(cluster, namespace, "job-name=capped"),
            timeout=120,
        )
        condition = scheduled_condition(waiting)
        assert (condition.get("status"), condition.get("reason")) == ("False", "SchedulingGated")
        reasons = wait_for(
            "the held pod's group saying why",
            lambda: scheduling_reasons(cluster, namespace, group_of(waiting)),
            timeout=30,
        )
        assert [r["reason"] for r in reasons] == ["AdmissionGated"]
        assert "OverLimit" in reasons[0]["message"]

        cluster.kubectl.run("patch", "queues.scheduling.run.ai", gated, "--type=merge", "-p",
                            '{"spec":{"resources":{"cpu":{"limit":2000}}}}')  # fmt: skip
        found = wait_running(cluster, namespace, "job-name=capped", 2)
        assert all(gates(p) == [] for p in found)
    for proc in podmuster.values():
        proc.check_alive()
