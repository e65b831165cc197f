"""The binder against kubeapi's in-memory API server: bind, statuses, back-off, watch."""

from __future__ import annotations

import asyncio
from typing import Any

from crds.names import CREATED_BY_LABEL as CREATED_BY
from kubeapi.errors import TransientError
from scheduler.binder.reconciler import Binder
from scheduler.binder.sharing import Settings
from scheduler.component.watching import Store
from scheduler.metrics.families import Metrics
from tests.kits.fake_kube import FakeKube

BR = ("scheduling.run.ai/v1alpha2", "BindRequest")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def world(node: str = "n1", *, bound: str = "", limit: int | None = None) -> FakeKube:
    kube = FakeKube()
    kube.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": {"schedulerName": "kai-scheduler"},
    }
    if bound:
        pod["spec"]["nodeName"] = bound
    kube.add(pod)
    spec: dict[str, Any] = {"podName": "p", "selectedNode": node, "receivedResourceType": "Regular"}
    if limit is not None:
        spec["backoffLimit"] = limit
    kube.add(
        {
            "apiVersion": BR[0],
            "kind": BR[1],
            "metadata": {
                "name": "p",
                "namespace": "ns",
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u1"}],
            },
            "spec": spec,
        }
    )
    return kube


def status(kube: FakeKube) -> dict[str, Any]:
    stored = kube.stored(*BR, "ns", "p")
    assert stored is not None
    return dict(stored.get("status") or {})


def node_of(kube: FakeKube) -> str:
    pod = kube.stored("v1", "Pod", "ns", "p")
    assert pod is not None
    return str(pod["spec"].get("nodeName") or "")


def binder(kube: FakeKube, clock: Clock | None = None) -> Binder:
    return Binder(kube, metrics=Metrics(), clock=clock or Clock())


def test_binds_and_succeeds() -> None:
    kube = world()
    b = binder(kube)
    assert asyncio.run(b.reconcile("ns", "p")) is None
    assert node_of(kube) == "n1"
    assert status(kube) == {"phase": "Succeeded"}
    assert b.metrics.sample("podmuster_binder_binds_total", result="succeeded") == 1
    assert b.metrics.sample("kai_task_bind_latency_milliseconds_count") == 1
    assert not [c for c in kube.calls if c[0] == "delete"]


def test_already_bound_here_is_success_without_binding() -> None:
    kube = world(bound="n1")
    asyncio.run(binder(kube).reconcile("ns", "p"))
    assert status(kube)["phase"] == "Succeeded"
    assert not [c for c in kube.calls if c[0] == "bind"]


def test_bound_elsewhere_fails_for_good() -> None:
    kube = world(bound="n2", limit=3)
    assert asyncio.run(binder(kube).reconcile("ns", "p")) is None
    got = status(kube)
    assert got["phase"] == "Failed"
    assert "already bound to node n2" in got["reason"]
    assert got["failedAttempts"] == 3
    assert node_of(kube) == "n2"


def test_pod_gone_fails_a_request_a_podmuster_scheduler_made() -> None:
    kube = world()
    kube.remove("v1", "Pod", "ns", "p")
    asyncio.run(kube.patch(*BR, "ns", "p", {"metadata": {"labels": {CREATED_BY: "scheduler"}}}))
    asyncio.run(binder(kube).reconcile("ns", "p"))
    assert "does not exist" in status(kube)["reason"]


def test_pod_gone_leaves_another_schedulers_request_alone() -> None:
    kube = world()
    kube.remove("v1", "Pod", "ns", "p")
    assert asyncio.run(binder(kube).reconcile("ns", "p")) is None
    assert status(kube) == {}  # KAI's binder judges its own request


def test_another_schedulers_request_is_left_alone() -> None:
    kube = world()
    asyncio.run(kube.patch("v1", "Pod", "ns", "p", {"spec": {"schedulerName": "podmuster"}}))
    before = len(kube.calls)
    b = Binder(kube, metrics=Metrics(), clock=Clock())  # serves kai-scheduler
    assert asyncio.run(b.reconcile("ns", "p")) is None
    assert node_of(kube) == ""
    assert status(kube) == {}
    assert not [c for c in kube.calls[before:] if c[0] in ("bind", "patch", "create")]
    mine = Binder(kube, metrics=Metrics(), reservations=Settings(scheduler_name="podmuster"))
    assert asyncio.run(mine.reconcile("ns", "p")) is None
    assert node_of(kube) == "n1"
    assert status(kube) == {"phase": "Succeeded"}


def test_transient_error_backs_off_two_to_the_n_and_persists_each_attempt() -> None:
    kube = world(limit=3)
    clock = Clock()
    b = binder(kube, clock)

    async def attempts() -> list[float | None]:
        delays = []
        for _ in range(3):
            kube.fail("bind", TransientError("Pod ns/p", "apiserver busy", 503))
            delays.append(await b.reconcile("ns", "p"))
            assert status(kube)["failedAttempts"] == len(delays)
            if delays[-1] is not None:
                # Too early: waits, no new attempt.
                assert await b.reconcile("ns", "p") == delays[-1]
                clock.now += delays[-1]
        return delays

    assert asyncio.run(attempts()) == [1.0, 2.0, None]
    got = status(kube)
    assert got == {"phase": "Failed", "reason": got["reason"], "failedAttempts": 3}
    assert "apiserver busy" in got["reason"]
    assert asyncio.run(b.reconcile("ns", "p")) is None  # limit reached: done
    assert node_of(kube) == ""


def test_retry_after_failure_succeeds() -> None:
    kube = world(limit=2)
    clock = Clock()
    b = binder(kube, clock)
    kube.fail("bind", TransientError("Pod ns/p", "timeout"))
    assert asyncio.run(b.reconcile("ns", "p")) == 1.0
    clock.now += 1.0
    assert asyncio.run(b.reconcile("ns", "p")) is None
    assert status(kube) == {"phase": "Succeeded", "failedAttempts": 1}


def test_missing_node_is_retried_then_fails() -> None:
    kube = world("ghost", limit=2)
    clock = Clock()
    b = binder(kube, clock)
    assert asyncio.run(b.reconcile("ns", "p")) == 1.0
    assert status(kube)["failedAttempts"] == 1
    clock.now += 1.0
    assert asyncio.run(b.reconcile("ns", "p")) is None
    assert status(kube) == {
        "phase": "Failed",
        "reason": "node ghost not found",
        "failedAttempts": 2,
    }
    assert node_of(kube) == ""


def test_run_watches_and_binds() -> None:
    kube = world()

    async def main() -> None:
        b = Binder(kube, metrics=Metrics())  # the real clock
        task = asyncio.create_task(b.run())
        for _ in range(200):
            await asyncio.sleep(0.01)
            if status(kube).get("phase") == "Succeeded":
                break
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    assert node_of(kube) == "n1"
    assert status(kube)["phase"] == "Succeeded"


def test_running_binder_reads_from_its_watch_caches_two_calls_per_bind() -> None:
    kube = world()

    async def main() -> None:
        b = Binder(kube, metrics=Metrics())
        task = asyncio.create_task(b.run())
        for _ in range(200):
            await asyncio.sleep(0.01)
            if status(kube).get("phase") == "Succeeded":
                break
        await asyncio.sleep(0.05)  # the Succeeded event comes back: nothing more is done
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    writes = [verb for verb, _ in kube.calls if verb not in ("list", "watch")]
    assert writes == ["bind", "patch/status"]
    # KAI's binder annotates every pod it binds; the binding carries it (no third call)
    pod = kube.stored("v1", "Pod", "ns", "p")
    assert pod is not None
    assert pod["metadata"]["annotations"] == {"received-resource-type": "Regular"}


def test_a_stale_cached_pod_is_read_again_before_a_permanent_failure() -> None:
    kube = world()
    b = binder(kube)
    stale = kube.stored("v1", "Pod", "ns", "p")
    assert stale is not None
    stale = {**stale, "metadata": {**stale["metadata"], "uid": "an-older-pod"}}
    b.caches = {"Pod": Store()}
    b.caches["Pod"].apply("ADDED", stale)
    b._synced = {"Pod": asyncio.Event()}
    b._synced["Pod"].set()
    assert asyncio.run(b.reconcile("ns", "p")) is None
    assert status(kube) == {"phase": "Succeeded"}
    assert node_of(kube) == "n1"


def fail_three_binds(kube: FakeKube) -> None:
    """Three attempts, each refused by the API server, each retried when it asks."""
    clock = Clock()
    b = binder(kube, clock)
    for _ in range(3):
        kube.fail("bind", TransientError("Pod ns/p", "apiserver busy", 503))
        again = asyncio.run(b.reconcile("ns", "p"))
        clock.now += again or 0.0


def test_a_failed_bind_is_a_warning_event_on_the_pod_first_and_last_attempt_only() -> None:
    kube = world(limit=3)
    fail_three_binds(kube)
    first, last = kube.events  # the second attempt's failure is not repeated
    for event in (first, last):
        assert event["type"] == "Warning"
        assert event["reason"] == "BindingError"  # KAI binder's reason
        assert event["involvedObject"]["kind"] == "Pod"
        assert event["involvedObject"]["name"] == "p"
        assert event["message"].startswith("Failed to bind pod ns/p to node n1: binding pod p:")
    assert first["message"].endswith("(attempt 1; retrying in 1s)")
    assert last["message"].endswith(
        "(attempt 3; no retry left: the scheduler places the pod again)"
    )


def test_a_success_is_no_event() -> None:
    kube = world()
    asyncio.run(binder(kube).reconcile("ns", "p"))
    assert kube.events == []


def pod_bound(kube: FakeKube) -> dict[str, Any] | None:
    pod = kube.stored("v1", "Pod", "ns", "p")
    assert pod is not None
    found = [
        c for c in (pod.get("status") or {}).get("conditions") or [] if c["type"] == "PodBound"
    ]
    assert len(found) <= 1
    return found[0] if found else None


def test_a_failed_bind_is_podbound_false_on_the_pod_and_a_later_bind_turns_it_true() -> None:
    kube = world(limit=3)
    clock = Clock()
    b = binder(kube, clock)
    kube.fail("bind", TransientError("Pod ns/p", "apiserver busy", 503))
    again = asyncio.run(b.reconcile("ns", "p"))
    condition = pod_bound(kube)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("False", "BindingError")  # KAI's
    assert condition["message"].startswith("Failed to bind pod ns/p to node n1: binding pod p:")
    assert node_of(kube) == ""
    clock.now += again or 0.0
    assert asyncio.run(b.reconcile("ns", "p")) is None
    condition = pod_bound(kube)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("True", "Bound")
    assert condition["message"] == "Pod bound successfully to node n1"


def test_the_same_failure_again_is_not_written_again() -> None:
    kube = world(limit=4)
    fail_three_binds(kube)
    pod_writes = [ref for verb, ref in kube.calls if verb == "patch/status" and ref.kind == "Pod"]
    assert len(pod_writes) == 1  # three failures for one reason: one condition


def test_a_replaced_pod_gets_no_podbound_condition() -> None:
    kube = world()
    pod = kube.stored("v1", "Pod", "ns", "p")
    assert pod is not None
    kube.add({**pod, "metadata": {**pod["metadata"], "uid": "u2"}})  # same name, new pod
    asyncio.run(binder(kube).reconcile("ns", "p"))
    assert status(kube)["phase"] == "Failed"
    assert pod_bound(kube) is None
