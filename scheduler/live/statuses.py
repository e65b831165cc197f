"""Why a gang stayed pending, written where users look: pod and PodGroup status, Events.

Why this module exists: KAI closes every session by telling users why a job was not
scheduled (§1.2 step 4): ``PodScheduled=False`` (reason ``Unschedulable``) on its pending
pods, a PodGroup ``status.schedulingConditions`` entry of type
``UnschedulableOnNodePool`` with one ``reasons[]`` item per reason (codes such as
``OverLimit``, ``NonPreemptibleOverQuota``, ``QueueDoesNotExist``,
``PreemptionDelayNotElapsed``, podmuster's ``AdmissionGated`` for a gang held at the
queue admission gate, else ``Unschedulable``), and a Warning Event.  The bodies are built
here as pure functions;
:mod:`scheduler.live.committing` writes them only when they change, so a job pending
for an hour costs no writes after the first cycle. "Change" means the cause: a reason
that names the gang member the engine happened to try (``pod ns/train-2: ...``) is
the same reason when the next cycle tries ``train-1`` for the same failure
(:func:`cause`), so a waiting gang's status is not rewritten, nor its Event sent
again, every cycle the member alternates.

A pod whose bind the API server refused (its BindRequest create, or ``pods/binding``
with ``--direct-bind``) says so as in KAI: ``PodScheduled=False`` with reason
``BindingError`` and a Warning ``FailedBinding`` Event, both with
:func:`bind_failure_message`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from crds.bindrequest import BINDING_ERROR_REASON
from crds.podgroup import REASONS_SEPARATOR, reason_code
from kubeapi.objects import Object, timestamp

CONDITION_TYPE = "UnschedulableOnNodePool"
NODE_POOL = "default"
FAILED_BINDING = "FailedBinding"
"""KAI's Warning Event reason on that pod."""
_MEMBER = re.compile(r"\bpod [^\s/:;,]+/[^\s:;,]+")
"""A pod named by its ``namespace/name`` key in an engine reason."""


def cause(text: str) -> str:
    """``text`` without the pod names it holds: what stays the same while the cause does.

    >>> cause("gang of 3 pods: only 2 could be placed; pod ml/train-2: 0/4 nodes fit")
    'gang of 3 pods: only 2 could be placed; pod …: 0/4 nodes fit'
    """
    return _MEMBER.sub("pod …", text)


def message_of(reasons: Sequence[str]) -> str:
    """The reasons as one message, each said once."""
    if not reasons:
        return "the scheduler could not place the pod group"
    return REASONS_SEPARATOR.join(dict.fromkeys(reasons))


def _ours(condition: Any, node_pool: str) -> bool:
    return (
        isinstance(condition, Mapping)
        and condition.get("nodePool") == node_pool
        and condition.get("type") == CONDITION_TYPE
    )


def holds_condition(group: Mapping[str, Any], node_pool: str = NODE_POOL) -> bool:
    """Whether the group carries our pool's ``UnschedulableOnNodePool`` condition."""
    existing = (group.get("status") or {}).get("schedulingConditions") or []
    return any(_ours(c, node_pool) for c in existing)


def cleared_patch(group: Mapping[str, Any], node_pool: str = NODE_POOL) -> Object | None:
    """Merge patch removing our pool's condition (other pools' stay), or None if absent."""
    existing = list((group.get("status") or {}).get("schedulingConditions") or [])
    kept = [c for c in existing if not _ours(c, node_pool)]
    if len(kept) == len(existing):
        return None
    return {"status": {"schedulingConditions": kept}}


def pod_scheduled_patch(reasons: Sequence[str], reason: str = "Unschedulable") -> Object:
    """Strategic-merge patch for a pod's status: ``PodScheduled=False`` with ``reason``."""
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message_of(reasons)[:4096],
        "lastTransitionTime": timestamp(),
    }
    return {"status": {"conditions": [condition]}}


INVALID_OBJECT = "InvalidObject"
"""The ``PodScheduled=False`` reason of a pod that waits because an object cannot be read
(the pod or its PodGroup): not ``Unschedulable``, which autoscalers and the node-scale
adjuster act on, as no new node helps it."""


def pod_needs_condition(
    pod: Mapping[str, Any], reasons: Sequence[str], reason: str = "Unschedulable"
) -> bool:
    """False when the pod already says PodScheduled=False with this message's cause."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled":
            return not (
                condition.get("status") == "False"
                and condition.get("reason") == reason
                and cause(str(condition.get("message"))) == cause(message_of(reasons)[:4096])
            )
    return True


def bind_failure_message(pod_key: str, node: str, error: str) -> str:
    """KAI's text for a bind the scheduler could not write (its pod condition and Event)."""
    return f"Failed to bind pod {pod_key} to node {node}. {error}"


def says_bind_failure(pod: Mapping[str, Any]) -> bool:
    """The pod's ``PodScheduled`` condition says its bind failed (``BindingError``)."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled":
            failed = (condition.get("status"), condition.get("reason"))
            return failed == ("False", BINDING_ERROR_REASON)
    return False


def scheduling_condition(
    reasons: Sequence[str], transition: int, node_pool: str = NODE_POOL
) -> Object:
    """One ``schedulingConditions`` entry for ``node_pool`` (default: the default pool)."""
    return {
        "type": CONDITION_TYPE,
        "nodePool": node_pool,
        "status": "True",
        "reason": "Unschedulable",
        "message": message_of(reasons)[:4096],
        "transitionID": str(transition),
        "lastTransitionTime": timestamp(),
        "reasons": [{"reason": reason_code(r), "message": r[:1024]} for r in reasons],
    }


def pod_group_patch(
    group: Mapping[str, Any], reasons: Sequence[str], node_pool: str = NODE_POOL
) -> Object | None:
    """Merge patch for a PodGroup's status, or None when its condition already says this
    (the same reason codes with the same :func:`cause`).

    Conditions of other node pools are kept; ours is replaced, with the next
    ``transitionID`` when the reasons changed."""
    existing = list((group.get("status") or {}).get("schedulingConditions") or [])
    ours = [
        c for c in existing if c.get("nodePool") == node_pool and c.get("type") == CONDITION_TYPE
    ]
    others = [c for c in existing if c not in ours]
    wanted = [(reason_code(r), cause(r[:1024])) for r in reasons]
    written = [
        (item.get("reason"), cause(str(item.get("message"))))
        for item in (ours[0].get("reasons") or [] if ours else [])
        if isinstance(item, Mapping)
    ]
    if ours and written == wanted and ours[0].get("status") == "True":
        return None
    previous = ours[0].get("transitionID") if ours else None
    transition = int(str(previous)) + 1 if str(previous or "").isdigit() else 0
    condition = scheduling_condition(reasons, transition, node_pool)
    return {"status": {"schedulingConditions": [*others, condition]}}
