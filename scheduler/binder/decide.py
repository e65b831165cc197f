"""What the binder does with one BindRequest: pure decisions, no API calls.

Why this module exists: the binder's rules (when a pod counts as bound, when a
failure is final, how long to back off) are the scheduler → binder contract.
Keeping them as functions of plain objects lets every case be tested as a
table, and keeps the async reconciler a thin loop of reads and writes.

Rules (docs/semantics.md §1.2 step 5, §2.4), and where podmuster differs:

- A BindRequest whose phase is ``Succeeded``, or ``Failed`` with no retries
  left, is done: nothing to do.
- Pod gone, pod UID not the BindRequest's owner, or pod bound to another node:
  a permanent failure. A pod already bound to ``selectedNode`` is a success.
- Otherwise bind. After a failed attempt ``failedAttempts`` goes up by one and
  is **persisted every time** (KAI persists only the first increment). The
  binder retries while ``failedAttempts < backoffLimit``, the n-th retry
  ``2**(n-1)`` seconds after the failure (1 s, 2 s, 4 s, ... as KAI's
  ``2^failedAttempts`` counted before the increment).
- Every pod bound gets ``received-resource-type: <spec.receivedResourceType>``
  (``Regular``, ``Fraction``, ``MigInstance``), as KAI's binder writes, carried by the
  binding itself (:func:`bound_annotations`), so a bind stays two API calls.
- ``backoffLimit`` unset: a single attempt, as KAI's binder makes (its scheduler
  never sets the field); podmuster's scheduler sets it (``--bind-backoff-limit``).
  When a request has finally failed is :func:`crds.rules.bind_request_finally_failed`,
  the one rule the scheduler, the binder and its sync share.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from crds import rules
from crds.bindrequest import (
    BINDING_ERROR_REASON,
    BOUND_REASON,
    PHASE_FAILED,
    PHASE_SUCCEEDED,
    POD_BOUND_CONDITION,
    BindRequestStatus,
)
from crds.gpusharing import RECEIVED_RESOURCE_TYPE_ANNOTATION
from kubeapi.backoff import exponential
from kubeapi.objects import timestamp

__all__ = [
    "Action",
    "after_failure",
    "backoff_limit",
    "bound_annotations",
    "decide",
    "failed_attempts",
    "finally_failed",
    "pod_bound_patch",
    "retry_delay",
    "succeeded_status",
]

MAX_DELAY: Final = 300.0
"""No back-off is longer than five minutes, whatever the count."""

Kind = Literal["done", "bind", "succeed", "fail", "retry", "wait"]


@dataclass(frozen=True, slots=True)
class Action:
    """One decision.

    ``done``: nothing to do. ``bind``: post the binding to ``node``.
    ``succeed``: record phase Succeeded (the pod is already on ``node``).
    ``fail``: record a permanent failure with ``reason``.
    ``wait``: a retry is due at ``at`` (seconds, the caller's clock).
    ``retry``: an attempt failed with ``reason`` and may be retried (reconciler only).
    ``checked_at``: on a ``succeed`` after the reconciler's own bind, the revision of the
    node's pods its room check read (None: no read).
    """

    kind: Kind
    node: str = ""
    reason: str = ""
    at: float = 0.0
    checked_at: str | None = None


def _status(request: Mapping[str, Any]) -> Mapping[str, Any]:
    return request.get("status") or {}


def backoff_limit(request: Mapping[str, Any]) -> int:
    """``spec.backoffLimit`` (:func:`crds.rules.backoff_limit`: unset is one attempt)."""
    return rules.backoff_limit(request.get("spec") or {})


def finally_failed(request: Mapping[str, Any]) -> bool:
    """No attempt is left (:func:`crds.rules.bind_request_finally_failed`)."""
    return rules.bind_request_finally_failed(request.get("spec") or {}, _status(request))


def failed_attempts(request: Mapping[str, Any]) -> int:
    return int(_status(request).get("failedAttempts") or 0)


def retry_delay(failed: int) -> float:
    """Seconds to wait after the ``failed``-th failure: 1, 2, 4, ... capped."""
    return exponential(failed - 1, 1.0, MAX_DELAY)


def _owner_uid(request: Mapping[str, Any]) -> str:
    for owner in (request.get("metadata") or {}).get("ownerReferences") or ():
        if owner.get("kind") == "Pod":
            return str(owner.get("uid") or "")
    return ""


def decide(
    request: Mapping[str, Any],
    pod: Mapping[str, Any] | None,
    now: float,
    *,
    retry_at: float | None = None,
) -> Action:
    """The next step for ``request``; ``pod`` is None when the pod does not exist.

    ``retry_at`` is when the reconciler scheduled the next attempt after a
    failure (it is kept in memory: a restarted binder retries at once).
    """
    status = _status(request)
    phase = status.get("phase")
    if phase == PHASE_SUCCEEDED:
        return Action("done")
    if finally_failed(request):
        return Action("done")
    spec = request.get("spec") or {}
    node = str(spec.get("selectedNode") or "")
    meta = request.get("metadata") or {}
    pod_name = str(spec.get("podName") or meta.get("name") or "")
    if not node:
        return Action("fail", reason="spec.selectedNode is empty")
    if pod is None:
        return Action("fail", node, f"pod {pod_name} does not exist")
    pod_meta = pod.get("metadata") or {}
    owner = _owner_uid(request)
    if owner and pod_meta.get("uid") and owner != pod_meta.get("uid"):
        return Action("fail", node, f"pod {pod_name} was replaced (uid {pod_meta.get('uid')})")
    if pod_meta.get("deletionTimestamp"):
        return Action("fail", node, f"pod {pod_name} is being deleted")
    bound = str((pod.get("spec") or {}).get("nodeName") or "")
    if bound == node:
        return Action("succeed", node)
    if bound:
        return Action("fail", node, f"pod {pod_name} is already bound to node {bound}")
    if phase == PHASE_FAILED and retry_at is not None and now < retry_at:
        return Action("wait", node, at=retry_at)
    return Action("bind", node)


def after_failure(
    request: Mapping[str, Any], reason: str, now: float, *, retryable: bool = True
) -> tuple[dict[str, Any], float | None]:
    """The status to persist after a failed attempt, and when to retry (None: never)."""
    failed = failed_attempts(request) + 1
    final = not retryable or failed >= backoff_limit(request)
    if not retryable:
        # Make the failure final for the scheduler too (rules.bind_request_finally_failed).
        failed = max(failed, backoff_limit(request))
    status = BindRequestStatus(phase=PHASE_FAILED, reason=reason, failed_attempts=failed)
    return status.to_patch(), None if final else now + retry_delay(failed)


def succeeded_status() -> dict[str, Any]:
    """Phase Succeeded; the reason of an earlier failure is removed, its count kept."""
    return BindRequestStatus(phase=PHASE_SUCCEEDED, reason=None).to_patch()


def pod_bound_patch(
    request: Mapping[str, Any], pod: Mapping[str, Any], node: str, error: str | None
) -> dict[str, Any] | None:
    """The status patch for the pod's ``PodBound`` condition, or None: nothing to write.

    A failed bind sets ``False``/``BindingError`` with the reason, as KAI's binder does,
    so ``kubectl describe pod`` and tools that read KAI's condition say why the pod waits.
    A success sets ``True``/``Bound`` only over an earlier ``False``: a pod bound at the
    first try gets no condition (KAI writes one on every bind; the API server's
    ``PodScheduled=True`` says the same, and the binder saves a write per pod).
    A pod that is not the request's (replaced, or bound elsewhere) is left alone.
    """
    meta = pod.get("metadata") or {}
    owner = _owner_uid(request)
    if owner and meta.get("uid") and owner != meta.get("uid"):
        return None
    if error is not None and (pod.get("spec") or {}).get("nodeName"):
        return None
    where = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
    current = next(
        (
            c
            for c in (pod.get("status") or {}).get("conditions") or []
            if c.get("type") == POD_BOUND_CONDITION
        ),
        None,
    )
    if error is None:
        if current is None or current.get("status") != "False":
            return None
        status, reason = "True", BOUND_REASON
        message = f"Pod bound successfully to node {node}"
    else:
        status, reason = "False", BINDING_ERROR_REASON
        message = f"Failed to bind pod {where} to node {node or '(none)'}: {error}"
    if current is not None and (
        current.get("status"),
        current.get("reason"),
        current.get("message"),
    ) == (status, reason, message):
        return None
    condition = {
        "type": POD_BOUND_CONDITION,
        "status": status,
        "reason": reason,
        "message": message[:4096],
        "lastTransitionTime": timestamp(),
    }
    return {"status": {"conditions": [condition]}}


def bound_annotations(request: Mapping[str, Any]) -> dict[str, str]:
    """The annotations the binding writes on the pod (the API server copies a Binding's
    annotations onto the pod in the same write): ``received-resource-type`` from the
    request's ``spec.receivedResourceType``, as KAI's binder writes on every pod it binds."""
    received = (request.get("spec") or {}).get("receivedResourceType")
    return {RECEIVED_RESOURCE_TYPE_ANNOTATION: str(received)} if received else {}
