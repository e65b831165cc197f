"""The binder's decision table: bind, already bound, bound elsewhere, gone, back-off."""

from __future__ import annotations

from typing import Any

import pytest

from crds.rules import DEFAULT_BACKOFF_LIMIT
from scheduler.binder.decide import (
    Action,
    after_failure,
    backoff_limit,
    decide,
    retry_delay,
    succeeded_status,
)


def request(
    node: str = "n1",
    *,
    phase: str | None = None,
    failed: int | None = None,
    limit: int | None = None,
    owner_uid: str = "u1",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"podName": "p", "selectedNode": node}
    if limit is not None:
        spec["backoffLimit"] = limit
    status: dict[str, Any] = {}
    if phase:
        status["phase"] = phase
    if failed is not None:
        status["failedAttempts"] = failed
    return {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "ownerReferences": [{"kind": "Pod", "name": "p", "uid": owner_uid}],
        },
        "spec": spec,
        "status": status,
    }


def pod(node: str = "", uid: str = "u1", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "ns", "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}}


@pytest.mark.parametrize(
    ("req", "the_pod", "kind", "reason_part"),
    [
        pytest.param(request(), pod(), "bind", "", id="pending-pod-binds"),
        pytest.param(request(), pod("n1"), "succeed", "", id="already-bound-here"),
        pytest.param(
            request(), pod("n2"), "fail", "already bound to node n2", id="bound-elsewhere"
        ),
        pytest.param(request(), None, "fail", "does not exist", id="pod-gone"),
        pytest.param(request(), pod(uid="u2"), "fail", "replaced", id="pod-recreated"),
        pytest.param(request(), pod(deleting=True), "fail", "being deleted", id="pod-deleting"),
        pytest.param(request(""), pod(), "fail", "selectedNode", id="no-node"),
        pytest.param(request(phase="Succeeded"), pod("n1"), "done", "", id="succeeded-is-done"),
        pytest.param(
            request(phase="Failed", failed=3), pod(), "done", "", id="default-limit-reached"
        ),
        pytest.param(
            request(phase="Failed", failed=1, limit=1), pod(), "done", "", id="limit-reached"
        ),
        pytest.param(
            request(phase="Failed", failed=1, limit=2), pod(), "bind", "", id="retry-left"
        ),
    ],
)
def test_decide(
    req: dict[str, Any], the_pod: dict[str, Any] | None, kind: str, reason_part: str
) -> None:
    action = decide(req, the_pod, now=100.0)
    assert action.kind == kind
    assert reason_part in action.reason


def test_retry_waits_until_due() -> None:
    req = request(phase="Failed", failed=1, limit=3)
    assert decide(req, pod(), 100.0, retry_at=101.0) == Action("wait", "n1", at=101.0)
    assert decide(req, pod(), 101.0, retry_at=101.0).kind == "bind"


def test_backoff_is_two_to_the_n_and_every_attempt_is_persisted() -> None:
    req = request(limit=4)
    delays = []
    for attempt in range(1, 5):
        status, retry_at = after_failure(req, "node n1 not found", now=0.0)
        assert status == {
            "phase": "Failed",
            "reason": "node n1 not found",
            "failedAttempts": attempt,
        }
        delays.append(retry_at)
        req["status"] = status
    assert delays == [1.0, 2.0, 4.0, None]
    assert decide(req, pod(), 1000.0).kind == "done"


def test_unset_limit_is_one_attempt_as_in_kai() -> None:
    assert backoff_limit(request()) == DEFAULT_BACKOFF_LIMIT == 0
    req = request()
    req["status"], retry_at = after_failure(req, "boom", now=0.0)
    assert retry_at is None
    assert req["status"]["failedAttempts"] == 1
    assert decide(req, pod(), 1000.0).kind == "done"


def test_permanent_failure_exhausts_the_limit() -> None:
    status, retry_at = after_failure(request(limit=5), "pod gone", 0.0, retryable=False)
    assert retry_at is None
    assert status["failedAttempts"] == 5  # rules.bind_request_finally_failed sees it as final


def test_delay_is_capped() -> None:
    assert retry_delay(1) == 1.0
    assert retry_delay(40) == 300.0


def test_succeeded_clears_the_reason() -> None:
    assert succeeded_status() == {"phase": "Succeeded", "reason": None}
