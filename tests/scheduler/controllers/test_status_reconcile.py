"""Status controllers on kubeapi's fake server: patches only on change, roll-up, metrics."""

from __future__ import annotations

import asyncio
from typing import Any

import pydantic
import pytest

from scheduler.controllers.reconciler import StatusControllers, merge_diff
from scheduler.metrics.families import Metrics
from tests.kits.fake_kube import FakeKube

PG = ("scheduling.run.ai/v2alpha2", "PodGroup")
Q = ("scheduling.run.ai/v2", "Queue")


def pod(
    name: str, group: str, *, gpu: str = "1", node: str = "", phase: str = "Pending"
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpu}}}]
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "annotations": {"pod-group-name": group}},
        "spec": spec,
        "status": {"phase": phase},
    }


def cluster() -> FakeKube:
    kube = FakeKube()
    for name, parent in (("root", ""), ("team", "root")):
        spec: dict[str, Any] = {"resources": {"gpu": {"quota": 4}, "cpu": {"quota": -1}}}
        if parent:
            spec["parentQueue"] = parent
        kube.add({"apiVersion": Q[0], "kind": Q[1], "metadata": {"name": name}, "spec": spec})
    kube.add(
        {
            "apiVersion": PG[0],
            "kind": PG[1],
            "metadata": {"name": "pg", "namespace": "ns"},
            "spec": {"queue": "team", "minMember": 2, "priorityClassName": "high"},
        }
    )
    kube.add(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        }
    )
    kube.add(pod("a", "pg", node="n1", phase="Running"))
    kube.add(pod("b", "pg", gpu="2"))
    return kube


def test_merge_diff_only_touches_owned_fields() -> None:
    current = {"phase": "x", "resourcesStatus": {"allocated": {"cpu": "1", "memory": "2"}}}
    desired = {"resourcesStatus": {"allocated": {"cpu": "1"}, "requested": {}}}
    assert merge_diff(current, desired) == {"resourcesStatus": {"allocated": {"memory": None}}}
    assert merge_diff(desired, desired) == {}


def test_reconcile_patches_podgroup_and_queues_once() -> None:
    kube = cluster()

    async def main() -> StatusControllers:
        ctl = StatusControllers(kube, metrics=Metrics(), debounce=0.01)
        task = asyncio.create_task(ctl.run())
        for _ in range(300):
            await asyncio.sleep(0.01)
            team = kube.stored(*Q, "", "team") or {}
            if (team.get("status") or {}).get("requested"):
                break
        await asyncio.sleep(0.1)
        patches = len([c for c in kube.calls if c[0] == "patch/status"])
        # A second pass with nothing changed patches nothing.
        assert not await ctl.reconcile_podgroup("ns", "pg")
        assert await ctl.reconcile_queues() == 0
        assert len([c for c in kube.calls if c[0] == "patch/status"]) == patches
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return ctl

    ctl = asyncio.run(main())
    group = kube.stored(*PG, "ns", "pg") or {}
    assert group["status"]["resourcesStatus"] == {
        "requested": {"nvidia.com/gpu": "3"},
        "allocated": {"nvidia.com/gpu": "1"},
        "allocatedNonPreemptible": {"nvidia.com/gpu": "1"},  # priority 1000
    }
    assert (group["status"]["running"], group["status"]["pending"]) == (1, 1)
    root = (kube.stored(*Q, "", "root") or {})["status"]
    assert root["childQueues"] == ["team"]
    assert root["requested"] == {"nvidia.com/gpu": "3"}
    assert ctl.metrics.sample("kai_queue_allocated_gpus", queue_name="root") == 1
    assert ctl.metrics.sample("kai_queue_deserved_gpus", queue_name="team") == 4
    assert ctl.metrics.sample("kai_queue_quota_cpu_cores", queue_name="team") == -1


def test_pod_finishing_updates_status() -> None:
    kube = cluster()

    async def main() -> None:
        ctl = StatusControllers(kube, metrics=Metrics(), debounce=0.01)
        task = asyncio.create_task(ctl.run())
        await asyncio.sleep(0.2)
        await kube.patch("v1", "Pod", "ns", "a", {"status": {"phase": "Succeeded"}})
        for _ in range(300):
            await asyncio.sleep(0.01)
            rs = ((kube.stored(*PG, "ns", "pg") or {}).get("status") or {}).get("resourcesStatus")
            if rs and rs["allocated"] == {}:
                break
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    rs = (kube.stored(*PG, "ns", "pg") or {})["status"]["resourcesStatus"]
    assert rs == {
        "requested": {"nvidia.com/gpu": "2"},
        "allocated": {},
        "allocatedNonPreemptible": {},
    }


def test_a_status_the_model_refuses_is_not_sent() -> None:
    """Status writes go through crds' PodGroupStatus: a misspelt field never reaches the server."""
    kube = cluster()
    ctl = StatusControllers(kube, metrics=Metrics(), debounce=0.01)
    group = kube.stored(*PG, "ns", "pg") or {}
    with pytest.raises(pydantic.ValidationError, match="runing"):
        asyncio.run(ctl._patch_status(PG, group, {"runing": 1}))
    assert not [c for c in kube.calls if c[0] == "patch/status"]
    assert asyncio.run(ctl._patch_status(PG, group, {"running": 1}))
    assert (kube.stored(*PG, "ns", "pg") or {})["status"] == {"running": 1}
