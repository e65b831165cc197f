"""The binder's DRA step (scheduler.binder.claims): claims written before the pod is bound.

Why: the scheduler's device choice reaches the cluster only through the binder: an
unallocated claim gets the BindRequest's allocation and the pod in ``reservedFor``, a
shared claim already allocated gets the pod added, and a claim the node cannot use
fails the request so the scheduler decides again.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.api.nodes import NodeMeta
from scheduler.binder.claims import Write, held_devices, plan, release
from scheduler.binder.decide import Action
from scheduler.binder.reconciler import Binder
from scheduler.metrics.families import Metrics
from tests.kits.dra import GPU_DRIVER, claim
from tests.kits.fake_kube import FakeKube

NS = "default"
BR = ("scheduling.run.ai/v1alpha2", "BindRequest")
ON_N1 = {
    "devices": {
        "results": [{"request": "gpu", "driver": GPU_DRIVER, "pool": "n1", "device": "gpu-0"}]
    },
    "nodeSelector": {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
        ]
    },
}
ME = {"resource": "pods", "name": "p", "uid": "u1"}


def pod(claims: list[dict[str, Any]], statuses: list[dict[str, str]] | None = None) -> Any:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": NS, "uid": "u1"},
        "spec": {"schedulerName": "kai-scheduler", "resourceClaims": claims},
        "status": {},
    }
    if statuses:
        body["status"]["resourceClaimStatuses"] = statuses
    return body


def bind_request(allocations: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"podName": "p", "selectedNode": "n1"}
    if allocations:
        spec["resourceClaimAllocations"] = [
            {"name": k, "allocation": v} for k, v in allocations.items()
        ]
    return {"apiVersion": BR[0], "kind": BR[1], "metadata": {"name": "p", "namespace": NS},
            "spec": spec}  # fmt: skip


def allocated(name: str, reserved: tuple[dict[str, str], ...] = ()) -> dict[str, Any]:
    body = claim(name)
    body["status"] = {"allocation": ON_N1, "reservedFor": list(reserved)}
    return body


N1 = NodeMeta(name="n1", labels={}, taints=(), unschedulable=False, ready=True)
N0 = NodeMeta(name="n0", labels={}, taints=(), unschedulable=False, ready=True)
BY_NAME = [{"name": "gpu", "resourceClaimName": "c"}]
OTHER = {"resource": "pods", "name": "q", "uid": "u2"}

PLANS = [
    # unallocated: the request's allocation and the pod as consumer
    (
        "allocate",
        pod(BY_NAME),
        bind_request({"gpu": ON_N1}),
        {"c": claim("c")},
        N1,
        [Write("c", {"metadata": {}, "status": {"allocation": ON_N1, "reservedFor": [ME]}})],
    ),
    # shared and allocated on n1: the pod joins reservedFor, the allocation stays
    (
        "shared-allocated",
        pod(BY_NAME),
        bind_request({}),
        {"c": allocated("c", (OTHER,))},
        N1,
        [Write("c", {"metadata": {}, "status": {"reservedFor": [OTHER, ME]}})],
    ),
    # already reserved for the pod (an earlier attempt): nothing to write
    ("already-reserved", pod(BY_NAME), bind_request({}), {"c": allocated("c", (ME,))}, N1, []),
    # allocated to devices of n1, the request says n0: fail, the scheduler decides again
    (
        "allocated-elsewhere",
        pod(BY_NAME),
        bind_request({}),
        {"c": allocated("c")},
        N0,
        Action("fail", "n0", 'resourceclaim "c" is allocated to devices node n0 cannot reach'),
    ),
    # unallocated and the request carries no allocation: fail
    (
        "no-allocation",
        pod(BY_NAME),
        bind_request({}),
        {"c": claim("c")},
        N1,
        Action(
            "fail",
            "n1",
            'resourceclaim "c" is not allocated and the request carries no allocation',
        ),
    ),
    # a template's claim not created yet: retried
    (
        "template-not-created",
        pod([{"name": "gpu", "resourceClaimTemplateName": "t"}]),
        bind_request({}),
        {},
        N1,
        Action("retry", "n1", 'resourceclaim of "gpu" is not created yet'),
    ),
    # a missing claim: retried
    (
        "missing",
        pod(BY_NAME),
        bind_request({}),
        {"c": None},
        N1,
        Action("retry", "n1", 'resourceclaim "c" not found'),
    ),
]


def test_a_device_another_claim_still_holds_is_waited_for() -> None:
    """An evicted pod's claim keeps its devices until it is deallocated: retry meanwhile."""
    held = held_devices([allocated("victim")])
    step = plan(pod(BY_NAME), bind_request({"gpu": ON_N1}), {"c": claim("c")}, N1, held)
    reason = f"device {GPU_DRIVER}/n1/gpu-0 is still allocated to resourceclaim default/victim"
    assert step == Action("retry", "n1", reason)


@pytest.mark.parametrize(
    ("case", "pod_body", "request_body", "claims", "node", "expected"),
    PLANS,
    ids=[p[0] for p in PLANS],
)
def test_plan(
    case: str, pod_body: Any, request_body: Any, claims: Any, node: NodeMeta, expected: Any
) -> None:
    assert plan(pod_body, request_body, claims, node) == expected


def test_reconcile_writes_the_claim_then_binds() -> None:
    kube = FakeKube()
    for name in ("n0", "n1"):
        kube.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    kube.add(pod(BY_NAME))
    kube.add(bind_request({"gpu": ON_N1}))
    kube.add(claim("c"))
    binder = Binder(kube, metrics=Metrics(), clock=lambda: 1000.0)
    asyncio.run(binder.reconcile(NS, "p"))
    stored = kube.stored("resource.k8s.io/v1", "ResourceClaim", NS, "c")
    assert stored is not None
    assert stored["status"] == {"allocation": ON_N1, "reservedFor": [ME]}
    bound = kube.stored("v1", "Pod", NS, "p")
    assert bound is not None
    assert bound["spec"]["nodeName"] == "n1"


def test_reconcile_does_not_bind_when_the_claim_is_elsewhere() -> None:
    kube = FakeKube()
    kube.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    kube.add(pod(BY_NAME))
    request = bind_request({})
    request["spec"]["selectedNode"] = "n1"
    kube.add(request)
    other = claim("c")
    other["status"] = {"allocation": {**ON_N1, "nodeSelector": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n9"]}]}
    ]}}}  # fmt: skip
    kube.add(other)
    binder = Binder(kube, metrics=Metrics(), clock=lambda: 1000.0)
    asyncio.run(binder.reconcile(NS, "p"))
    bound = kube.stored("v1", "Pod", NS, "p")
    assert bound is not None
    assert not bound["spec"].get("nodeName")
    found = kube.stored(*BR, NS, "p")
    assert found is not None
    assert found["status"]["phase"] == "Failed"


@pytest.mark.parametrize(
    ("reserved", "expected"),
    [
        ((ME,), {"reservedFor": None, "allocation": None}),  # ours alone: deallocated
        ((OTHER, ME), {"reservedFor": [OTHER], "allocation": ON_N1}),  # shared: we leave
    ],
)
def test_a_finally_failed_request_releases_its_claims(
    reserved: tuple[dict[str, str], ...], expected: dict[str, Any]
) -> None:
    kube = FakeKube()
    kube.add(pod(BY_NAME))
    kube.add(allocated("c", reserved))
    asyncio.run(release(kube, bind_request({"gpu": ON_N1})))
    stored = kube.stored("resource.k8s.io/v1", "ResourceClaim", NS, "c")
    assert stored is not None
    status = stored.get("status") or {}
    assert {k: status.get(k) for k in expected} == expected
