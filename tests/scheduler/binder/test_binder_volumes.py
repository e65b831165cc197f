"""The binder's volume step against the in-memory API server (scheduler.binder.volumes).

Why: a pod with claims is bound only once its claims are: a static PV gets the
claim's ``claimRef``, a provisioned claim the ``selected-node`` annotation, the pod
waits while the PV controller (simulated here) binds, and a timeout fails the
BindRequest and undoes what was written for claims still unbound.
"""

from __future__ import annotations

import asyncio
from typing import Any

from crds.names import SELECTED_NODE_ANNOTATION
from kubeapi.errors import ConflictError
from kubeapi.objects import ObjectRef
from scheduler.api.nodes import NodeMeta
from scheduler.binder.reconciler import Binder
from scheduler.binder.volumes import POLL_SECONDS, plan
from scheduler.metrics.families import Metrics
from tests.kits.fake_kube import FakeKube
from tests.kits.volumes import HOSTNAME, pv, pvc, storage_class, volume_state

BR = ("scheduling.run.ai/v1alpha2", "BindRequest")
NS = "default"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def world(*objects: dict[str, Any], claims: tuple[str, ...] = ("data",)) -> FakeKube:
    kube = FakeKube()
    for name in ("n0", "n1"):
        kube.add({"apiVersion": "v1", "kind": "Node",
                  "metadata": {"name": name, "labels": {HOSTNAME: name}}})  # fmt: skip
    kube.add(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": NS, "uid": "u1"},
            "spec": {
                "schedulerName": "kai-scheduler",
                "volumes": [
                    {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                    for i, c in enumerate(claims)
                ],
            },
        }
    )
    kube.add(
        {
            "apiVersion": BR[0],
            "kind": BR[1],
            "metadata": {"name": "p", "namespace": NS},
            "spec": {"podName": "p", "selectedNode": "n1"},
        }
    )
    for obj in objects:
        kube.add(obj)
    return kube


def binder(kube: FakeKube, clock: Clock) -> Binder:
    return Binder(kube, metrics=Metrics(), clock=clock, volume_timeout=60.0)


def stored(kube: FakeKube, kind: str, name: str, namespace: str = "") -> dict[str, Any]:
    found = kube.stored("v1", kind, namespace, name)
    assert found is not None
    return found


def status(kube: FakeKube) -> dict[str, Any]:
    found = kube.stored(*BR, NS, "p")
    assert found is not None
    return dict(found.get("status") or {})


def pod_node(kube: FakeKube) -> str:
    return str(stored(kube, "Pod", "p", NS)["spec"].get("nodeName") or "")


def bind_claim(kube: FakeKube, claim: str, volume: str) -> None:
    """What the PV controller does once a PV's claimRef names the claim."""
    body = stored(kube, "PersistentVolumeClaim", claim, NS)
    body["spec"]["volumeName"] = volume
    body["status"] = {"phase": "Bound"}
    kube.add(body)


def test_static_pv_gets_the_claim_ref_then_the_pod_binds_once_the_claim_is_bound() -> None:
    kube = world(storage_class("local"), pv("far", node="n0"), pv("near", node="n1"), pvc("data"))
    clock = Clock()
    b = binder(kube, clock)
    assert asyncio.run(b.reconcile(NS, "p")) == POLL_SECONDS
    ref = stored(kube, "PersistentVolume", "near")["spec"]["claimRef"]
    assert (ref["namespace"], ref["name"], ref["uid"]) == (NS, "data", "uid-data")
    assert "claimRef" not in stored(kube, "PersistentVolume", "far")["spec"]
    assert pod_node(kube) == ""
    # Not bound yet: waits, writes nothing more.
    writes = len([c for c in kube.calls if c[0] == "replace"])
    assert asyncio.run(b.reconcile(NS, "p")) == POLL_SECONDS
    assert len([c for c in kube.calls if c[0] == "replace"]) == writes
    bind_claim(kube, "data", "near")
    assert asyncio.run(b.reconcile(NS, "p")) is None
    assert pod_node(kube) == "n1"
    assert status(kube)["phase"] == "Succeeded"


def test_dynamic_claim_is_annotated_with_the_selected_node() -> None:
    kube = world(storage_class("fast", provisioner="csi.example.com"),
                 pvc("data", storage_class="fast"))  # fmt: skip
    b = binder(kube, Clock())
    assert asyncio.run(b.reconcile(NS, "p")) == POLL_SECONDS
    annotations = stored(kube, "PersistentVolumeClaim", "data", NS)["metadata"]["annotations"]
    assert annotations[SELECTED_NODE_ANNOTATION] == "n1"
    assert pod_node(kube) == ""


def test_timeout_fails_the_request_and_releases_the_pv() -> None:
    kube = world(storage_class("local"), pv("near", node="n1"), pvc("data"))
    clock = Clock()
    b = binder(kube, clock)
    assert asyncio.run(b.reconcile(NS, "p")) == POLL_SECONDS
    assert "claimRef" in stored(kube, "PersistentVolume", "near")["spec"]
    clock.now += 61
    assert asyncio.run(b.reconcile(NS, "p")) is None
    got = status(kube)
    assert got["phase"] == "Failed"
    assert "'data' not bound within 60s" in got["reason"]
    assert "claimRef" not in stored(kube, "PersistentVolume", "near")["spec"]
    assert pod_node(kube) == ""


def test_timeout_removes_the_selected_node_annotation() -> None:
    kube = world(storage_class("fast", provisioner="csi.example.com"),
                 pvc("data", storage_class="fast"))  # fmt: skip
    clock = Clock()
    b = binder(kube, clock)
    asyncio.run(b.reconcile(NS, "p"))
    clock.now += 61
    asyncio.run(b.reconcile(NS, "p"))
    annotations = stored(kube, "PersistentVolumeClaim", "data", NS)["metadata"].get("annotations")
    assert SELECTED_NODE_ANNOTATION not in (annotations or {})
    assert status(kube)["phase"] == "Failed"


def test_missing_claim_fails_naming_it() -> None:
    kube = world(storage_class("local"))
    asyncio.run(binder(kube, Clock()).reconcile(NS, "p"))
    assert status(kube)["phase"] == "Failed"
    assert 'persistentvolumeclaim "data" not found' in status(kube)["reason"]


def test_pv_taken_meanwhile_is_decided_again() -> None:
    kube = world(storage_class("local"), pv("near", node="n1"), pvc("data"))
    kube.fail("replace", ConflictError(ObjectRef("v1", "PersistentVolume", "", "near"), "x", 409))
    b = binder(kube, Clock())
    assert asyncio.run(b.reconcile(NS, "p")) == POLL_SECONDS
    assert "claimRef" not in stored(kube, "PersistentVolume", "near")["spec"]
    assert asyncio.run(b.reconcile(NS, "p")) == POLL_SECONDS
    assert stored(kube, "PersistentVolume", "near")["spec"]["claimRef"]["name"] == "data"


def test_already_bound_claims_bind_the_pod_at_once() -> None:
    kube = world(storage_class("local"), pv("near", node="n1", phase="Bound"),
                 pvc("data", volume="near"))  # fmt: skip
    assert asyncio.run(binder(kube, Clock()).reconcile(NS, "p")) is None
    assert pod_node(kube) == "n1"


N1 = NodeMeta(name="n1", labels={HOSTNAME: "n1"}, taints=(), unschedulable=False, ready=True)


def test_plan_waits_for_claims_in_progress() -> None:
    # the claim has a PV pre-bound to it, or a volume name: the PV controller is at work
    prebound = volume_state(pv("near", node="n1", claim="data"), pvc("data"))
    assert plan(NS, ("data",), N1, prebound, waited=0, timeout=60).kind == "wait"
    named = volume_state(pvc("data", volume="near") | {"status": {"phase": "Pending"}})
    assert plan(NS, ("data",), N1, named, waited=0, timeout=60).kind == "wait"


def test_plan_fails_when_the_node_serves_the_claim_no_more() -> None:
    state = volume_state(pv("far", node="n0"), pvc("data"))
    step = plan(NS, ("data",), N1, state, waited=0, timeout=60)
    assert step.kind == "fail"
    assert "node n1 no longer serves persistentvolumeclaims 'data'" in step.reason


def test_a_pv_taken_by_another_claim_between_plan_and_write_is_not_taken_over() -> None:
    # Two binders chose the same smallest PV from the same listing: the one that writes
    # second finds the claimRef of the other claim and decides again (the next PV).
    kube = world(storage_class("local"), pv("a", "10Gi", node="n1"), pv("b", "20Gi", node="n1"),
                 pvc("data"), pvc("other"))  # fmt: skip
    b = binder(kube, Clock())
    original = kube.get

    async def racing_get(api_version: str, kind: str, namespace: str, name: str) -> Any:
        found = await original(api_version, kind, namespace, name)
        if kind == "PersistentVolume" and name == "a" and "claimRef" not in found["spec"]:
            body = stored(kube, "PersistentVolume", "a")
            body["spec"]["claimRef"] = {"namespace": NS, "name": "other"}
            kube.add(body)
            return await original(api_version, kind, namespace, name)
        return found

    kube.get = racing_get  # type: ignore[method-assign]
    assert asyncio.run(b.reconcile(NS, "p")) == POLL_SECONDS
    assert stored(kube, "PersistentVolume", "a")["spec"]["claimRef"]["name"] == "other"
    assert "claimRef" not in stored(kube, "PersistentVolume", "b")["spec"]
    assert asyncio.run(b.reconcile(NS, "p")) == POLL_SECONDS
    assert stored(kube, "PersistentVolume", "b")["spec"]["claimRef"]["name"] == "data"


def test_pvs_are_listed_once_per_second_for_all_waiting_requests() -> None:
    kube = world(storage_class("local"), pv("near", node="n1", claim="data"), pvc("data"))
    clock = Clock()
    b = binder(kube, clock)

    def pv_lists() -> int:
        return len([c for c in kube.calls if c[0] == "list" and c[1].kind == "PersistentVolume"])

    for _ in range(3):  # the claim waits for the PV controller: nothing is written
        assert asyncio.run(b.reconcile(NS, "p")) == POLL_SECONDS
    assert pv_lists() == 1
    clock.now += 1.5
    asyncio.run(b.reconcile(NS, "p"))
    assert pv_lists() == 2
