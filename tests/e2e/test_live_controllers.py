"""The status controllers against a real API server: PodGroup and Queue statuses appear.

A three-level queue tree and a PodGroup of two pods (one bound to a kwok node
and Running, one pending with a fractional GPU) get their statuses written by
``podmuster run controllers``; the queue gauges are on its /metrics endpoint.
"""

from __future__ import annotations

import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from .controlplane import Cluster
from .kube import Obj, wait_for
from .live import component
from .objects import bind, wait_phase
from .procs import free_port
from .test_live_binder import kai_pod

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def controllers(cluster: Cluster) -> Iterator[int]:
    port = free_port()
    with component(cluster, "controllers", [f"--metrics-port={port}", "--debounce=0.2"]):
        yield port


def queue(name: str, parent: str = "") -> Obj:
    spec: dict[str, Any] = {
        "resources": {
            "gpu": {"quota": 2, "limit": -1, "overQuotaWeight": 1},
            "cpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
            "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
        }
    }
    if parent:
        spec["parentQueue"] = parent
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def member(name: str, namespace: str, group: str, annotations: dict[str, str]) -> Obj:
    pod = kai_pod(name, namespace)
    pod["metadata"]["annotations"] = {"pod-group-name": group, **annotations}
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m", "memory": "100M"}}
    return pod


def test_podgroup_and_queue_statuses(
    cluster: Cluster, namespace: str, kwok_node: str, controllers: int
) -> None:
    tag = uuid.uuid4().hex[:5]
    root, dept, team = f"root-{tag}", f"dept-{tag}", f"team-{tag}"
    for q in (queue(root), queue(dept, root), queue(team, dept)):
        cluster.kubectl.create(q)
    cluster.kubectl.create(
        {
            "apiVersion": "scheduling.run.ai/v2alpha2",
            "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": namespace},
            "spec": {"queue": team, "minMember": 2, "preemptibility": "non-preemptible"},
        }
    )
    cluster.kubectl.create(member("w-0", namespace, "pg", {}))
    cluster.kubectl.create(member("w-1", namespace, "pg", {"gpu-fraction": "0.5"}))
    bind(cluster, namespace, "w-0", kwok_node)
    wait_phase(cluster, namespace, "w-0", "Running")

    want = {
        "requested": {"cpu": "1000", "memory": "200", "nvidia.com/gpu": "0.5"},
        "allocated": {"cpu": "500", "memory": "100"},
        "allocatedNonPreemptible": {"cpu": "500", "memory": "100"},
    }

    def pg_status() -> dict[str, Any]:
        got = cluster.kubectl.get("podgroups.scheduling.run.ai", "pg", "-n", namespace)
        return dict(got.get("status") or {})

    wait_for("PodGroup resourcesStatus", lambda: pg_status().get("resourcesStatus") == want)
    assert (pg_status()["running"], pg_status()["pending"]) == (1, 1)

    def q_status(name: str) -> dict[str, Any]:
        return dict(cluster.kubectl.get("queues.scheduling.run.ai", name).get("status") or {})

    wait_for("root queue rolled up", lambda: q_status(root).get("requested") == want["requested"])
    assert q_status(root)["childQueues"] == [dept]
    assert q_status(dept)["childQueues"] == [team]
    assert q_status(dept)["allocated"] == want["allocated"]
    assert q_status(team)["allocatedNonPreemptible"] == want["allocatedNonPreemptible"]

    text = urllib.request.urlopen(f"http://127.0.0.1:{controllers}/metrics", timeout=10).read()
    samples = {
        (sample.name, sample.labels.get("queue_name")): sample.value
        for family in text_string_to_metric_families(text.decode())
        for sample in family.samples
    }
    assert samples["kai_queue_allocated_cpu_cores", root] == 0.5
    assert samples["kai_queue_allocated_memory_bytes", root] == 1e8
    assert samples["kai_queue_deserved_gpus", team] == 2

    # The running pod finishes: it leaves allocated and requested.
    cluster.kubectl.run("delete", "pod", "w-0", "-n", namespace, "--wait=false")
    wait_for(
        "allocated drops to nothing",
        lambda: q_status(root).get("allocated") in (None, {}),
        timeout=60,
    )
    for name in (team, dept, root):
        cluster.kubectl.run("delete", "queue", name, "--wait=false")
