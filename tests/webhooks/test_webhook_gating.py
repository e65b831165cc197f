"""The queue admission gate at pod creation (docs/semantics.md §5.11): which pods get
``kai.scheduler/queue-admission``, the JSONPatch that adds it, the Queue annotation's
inheritance down the tree, and the ``/gate-pod`` edge (Queues read once for a burst)."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Mapping
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from crds.names import ADMISSION_GATE, ADMISSION_GATE_ANNOTATION, QUEUE_LABEL
from kubeapi.errors import TransientError
from webhooks.gating import gate_patch, gated_queues
from webhooks.server import PATHS, build_app
from webhooks.validation import validate_queue

OURS = "kai-scheduler"
GATE = {"name": ADMISSION_GATE}


def queue(name: str, parent: str | None = None, opt_in: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if opt_in is not None:
        meta["annotations"] = {ADMISSION_GATE_ANNOTATION: opt_in}
    spec: dict[str, Any] = {"resources": {}}
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": meta, "spec": spec}


def pod(queue_name: str | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "team"}
    if queue_name is not None:
        meta["labels"] = {QUEUE_LABEL: queue_name}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"schedulerName": OURS, "containers": [{"name": "c"}], **spec},
    }


TREE = {
    q["metadata"]["name"]: q
    for q in (
        queue("dept", opt_in="true"),
        queue("team-a", "dept"),
        queue("other"),
        queue("off", opt_in="false"),
        queue("bad", opt_in="yes"),
    )
}


def test_the_annotation_covers_the_queue_and_its_descendants_only() -> None:
    assert gated_queues(TREE) == {"dept", "team-a"}


@pytest.mark.parametrize(
    ("obj", "gated", "everywhere", "patch"),
    [
        # labelled with a queue under the gate: the gate is added
        (
            pod("team-a"),
            {"team-a"},
            False,
            [{"op": "add", "path": "/spec/schedulingGates", "value": [GATE]}],
        ),
        # labelled with a queue not under it: nothing
        (pod("other"), {"team-a"}, False, []),
        # no label: gated when some queue is (the scheduler decides once grouped)
        (
            pod(),
            {"team-a"},
            False,
            [{"op": "add", "path": "/spec/schedulingGates", "value": [GATE]}],
        ),
        (pod(), set(), False, []),
        # every queue: gated whatever the label
        (
            pod("other"),
            set(),
            True,
            [{"op": "add", "path": "/spec/schedulingGates", "value": [GATE]}],
        ),
        # someone else's gate is kept: ours is appended
        (
            pod("team-a", schedulingGates=[{"name": "example.com/wait"}]),
            {"team-a"},
            False,
            [{"op": "add", "path": "/spec/schedulingGates/-", "value": GATE}],
        ),
        # already gated (a reinvocation), already bound, or another scheduler's: nothing
        (pod("team-a", schedulingGates=[GATE]), {"team-a"}, False, []),
        (pod("team-a", nodeName="n1"), {"team-a"}, True, []),
        (pod("team-a", schedulerName="default-scheduler"), {"team-a"}, True, []),
    ],
)
def test_gate_patch(
    obj: dict[str, Any], gated: set[str], everywhere: bool, patch: list[dict[str, Any]]
) -> None:
    assert gate_patch(obj, OURS, frozenset(gated), everywhere=everywhere) == patch


def test_a_queue_with_a_bad_opt_in_value_is_refused_naming_the_annotation() -> None:
    (problem,) = validate_queue(queue("bad", opt_in="yes"), {})
    assert ADMISSION_GATE_ANNOTATION in str(problem)
    assert '"true" or "false"' in str(problem)


def review(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "u-1", "operation": "CREATE", "object": obj},
    }


def test_the_edge_patches_and_reads_queues_once_for_a_burst() -> None:
    reads: list[int] = []

    async def lister() -> Mapping[str, Mapping[str, Any]]:
        reads.append(1)
        return TREE

    async def go() -> list[Any]:
        async with TestClient(TestServer(build_app(lister))) as client:
            out = []
            for obj in (pod("team-a"), pod("other"), pod("dept")):
                response = await client.post(PATHS["pod-admission-gate"], json=review(obj))
                out.append(await response.json())
            return out

    gated, plain, dept = asyncio.run(go())
    assert len(reads) == 1
    assert plain["response"] == {"uid": "u-1", "allowed": True}
    for answer in (gated, dept):
        assert answer["response"]["patchType"] == "JSONPatch"
        patch = json.loads(base64.b64decode(answer["response"]["patch"]))
        assert patch == [{"op": "add", "path": "/spec/schedulingGates", "value": [GATE]}]


def test_the_edge_answers_500_when_queues_cannot_be_read_unless_every_queue_is_gated() -> None:
    async def broken() -> Mapping[str, Mapping[str, Any]]:
        raise TransientError("Queue", "connection refused")

    async def go(all_queues: bool) -> int:
        app = build_app(broken, gate_all_queues=all_queues)
        async with TestClient(TestServer(app)) as client:
            response = await client.post(PATHS["pod-admission-gate"], json=review(pod("x")))
            return response.status

    assert asyncio.run(go(False)) == 500
    assert asyncio.run(go(True)) == 200
