"""What the dashboard and ``kubectl podmuster`` show: queues, waiting gangs, evictions.

Why this module exists: both read a live cluster and must tell the same story in the
scheduler's own words, so neither recomputes a rule. The queue numbers come from the
engine's division (:func:`scheduler.cycle.queue_shares` over a snapshot of the same
cache the scheduler keeps) next to what the queue controller wrote (``Queue.status``);
whether a gang still waits is the engine's gang rule on that snapshot; why it waits is
what the scheduler wrote (the PodGroup's ``schedulingConditions``, its
``kai.scheduler/scale-up-hint`` annotation, the pods' ``PodScheduled`` condition) and,
for pods placed but not bound, what the binder wrote (a failed BindRequest's reason);
evictions are the scheduler's ``Evict`` Events on PodGroups. Pure: raw objects in, a
JSON-able document out (the dashboard's ``/api/state`` and ``-o json``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crds import rules
from crds.bindrequest import PHASE_FAILED
from crds.names import SCALE_UP_HINT_ANNOTATION
from podmuster.schedule_command import queue_units
from scheduler.api.podgroups import PodGroupInfo, PodSetInfo
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.cycle import QueueSummary
from scheduler.live.committing import (
    EVICTED_GANG_SIZE,
    EVICTOR_ACTION,
    EVICTOR_GROUP_NAME,
    EVICTOR_GROUP_NAMESPACE,
    pod_group_key,
)
from scheduler.live.statuses import CONDITION_TYPE, message_of

__all__ = [
    "RESOURCES",
    "ClusterView",
    "amount",
    "bind_failures",
    "build",
    "eviction_of",
    "is_eviction",
]

RESOURCES = ("gpu", "cpu", "memory")
MAX_EVICTIONS = 50


@dataclass(frozen=True, slots=True)
class ClusterView:
    """The document: ``queues`` (tree order), ``pending`` gangs, recent ``evictions``."""

    queues: list[dict[str, Any]]
    pending: list[dict[str, Any]]
    evictions: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {"queues": self.queues, "pending": self.pending, "evictions": self.evictions}


def build(
    snapshot: ClusterSnapshot,
    summaries: Sequence[QueueSummary],
    queues: Iterable[Mapping[str, Any]],
    pod_groups: Mapping[str, Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    events: Iterable[Mapping[str, Any]],
    bind_requests: Iterable[Mapping[str, Any]] = (),
) -> ClusterView:
    """The view; ``pod_groups`` keyed ``namespace/name`` as the snapshot's jobs are."""
    rows = queue_rows(summaries, queues)
    by_queue = {row["queue"]: row for row in rows}
    pods = list(pods)
    said = pod_conditions(pods)
    failed = bind_failures(bind_requests, pods)
    pending = [
        pending_entry(key, raw, snapshot.jobs.get(key), by_queue, said, failed)
        for key, raw in sorted(pod_groups.items())
        if waits(snapshot.jobs.get(key), raw, bool(said.get(key))) or failed.get(key)
    ]
    evictions = sorted(
        (eviction_of(e) for e in events if is_eviction(e)), key=lambda e: e["time"], reverse=True
    )
    return ClusterView(rows, pending, evictions[:MAX_EVICTIONS])


def queue_rows(
    summaries: Sequence[QueueSummary], queues: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """One row per queue in tree order (parents first, then children by name), with depth;
    then each Queue object the scheduler does not use, with its ``problem``."""
    by_name = {str((q.get("metadata") or {}).get("name")): q for q in queues}
    status = {name: dict(q.get("status") or {}) for name, q in by_name.items()}
    by_parent: dict[str | None, list[QueueSummary]] = {}
    names = {s.name for s in summaries}
    for summary in summaries:
        parent = summary.parent if summary.parent in names else None
        by_parent.setdefault(parent, []).append(summary)
    rows: list[dict[str, Any]] = []

    def visit(parent: str | None, depth: int) -> None:
        for summary in sorted(by_parent.get(parent, []), key=lambda s: s.name):
            written = status.get(summary.name, {})
            rows.append(
                {
                    "queue": summary.name,
                    "parent": summary.parent,
                    "depth": depth,
                    "deserved": queue_units(summary.deserved),
                    "fairShare": queue_units(summary.fair_share),
                    "allocated": queue_units(summary.allocated),
                    "requested": queue_units(summary.requested),
                    "limit": queue_units(summary.limit),
                    "status": {
                        field: dict(written.get(field) or {})
                        for field in ("allocated", "requested", "allocatedNonPreemptible")
                    },
                }
            )
            visit(summary.name, depth + 1)

    visit(None, 0)
    # Queues the scheduler left out (a missing parent, a parent cycle): still listed, with
    # why, so "who holds the GPUs" does not lose what their running pods hold
    for name, raw in sorted(by_name.items()):
        if name in names:
            continue
        parent = str((raw.get("spec") or {}).get("parentQueue") or "") or None
        nothing = queue_units((0.0, 0.0, 0.0))
        written = status.get(name, {})
        rows.append(
            {
                "queue": name,
                "parent": parent,
                "depth": 0,
                "deserved": nothing,
                "fairShare": nothing,
                "allocated": nothing,
                "requested": nothing,
                "limit": nothing,
                "status": {
                    field: dict(written.get(field) or {})
                    for field in ("allocated", "requested", "allocatedNonPreemptible")
                },
                "problem": (
                    f"parent queue {parent!r} does not exist or is not used"
                    if parent
                    else "not used by the scheduler"
                )
                + ": its jobs are not scheduled (QueueDoesNotExist)",
            }
        )
    return rows


def waits(job: PodGroupInfo | None, raw: Mapping[str, Any], pods_say: bool = False) -> bool:
    """A gang still waiting: the engine's gang rule not met by its allocated pods, or pods
    beyond it still pending with the scheduler's reasons (a Job of parallelism 4 whose
    first pod runs: minMember 1 is met, and three pods wait; an elastic job at its
    minimum).

    A PodGroup the snapshot has no job for (no pods yet, or only pods the scheduler could
    not read) waits only when the scheduler said why: a condition on the group, or
    ``pods_say`` (a pod of it has PodScheduled=False, as one it cannot read gets)."""
    if job is None:
        return bool(conditions_of(raw)) or pods_say
    if not job.pod_sets or not any(pod_set.pods for pod_set in job.pod_sets):
        return bool(conditions_of(raw)) or pods_say
    if not job.requirement_met(PodSetInfo.active_allocated):
        return True
    return job.has_pending() and bool(conditions_of(raw))


def conditions_of(raw: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The scheduler's ``UnschedulableOnNodePool`` conditions that hold (status True)."""
    found = (raw.get("status") or {}).get("schedulingConditions") or []
    return [
        c
        for c in found
        if isinstance(c, Mapping) and c.get("type") == CONDITION_TYPE and c.get("status") == "True"
    ]


def pod_conditions(pods: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """PodGroup key → the distinct ``PodScheduled=False`` messages of its pods."""
    out: dict[str, list[str]] = {}
    for pod in pods:
        group = pod_group_key(pod)
        if not group:
            continue
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                messages = out.setdefault(group, [])
                if condition.get("message") and condition["message"] not in messages:
                    messages.append(str(condition["message"]))
    return out


def bind_failures(
    bind_requests: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """PodGroup key → its pods' failed BindRequests (phase ``Failed``): the pod, the node,
    the binder's reason, the attempts made, and whether any retry is left (``final``).

    A pod the scheduler placed is not bound until the binder carries the BindRequest out;
    when that fails, its reason is on the BindRequest only (and in a pod Event), never in
    a scheduling condition."""
    groups: dict[str, str] = {}
    for pod in pods:
        key = pod_group_key(pod)
        if key:
            meta = pod.get("metadata") or {}
            groups[f"{meta.get('namespace')}/{meta.get('name')}"] = key
    out: dict[str, list[dict[str, Any]]] = {}
    for request in bind_requests:
        status = request.get("status") or {}
        if status.get("phase") != PHASE_FAILED:
            continue
        meta, spec = request.get("metadata") or {}, request.get("spec") or {}
        pod_name = str(spec.get("podName") or meta.get("name") or "")
        group = groups.get(f"{meta.get('namespace')}/{pod_name}")
        if group is None:
            continue
        try:
            final = rules.bind_request_finally_failed(spec, status)
        except rules.RuleError:
            final = True
        out.setdefault(group, []).append(
            {
                "pod": pod_name,
                "node": str(spec.get("selectedNode") or ""),
                "reason": str(status.get("reason") or ""),
                "attempts": int(status.get("failedAttempts") or 0),
                "final": final,
            }
        )
    for failures in out.values():
        failures.sort(key=lambda f: f["pod"])
    return out


def shown_reason(pool: str, reason: str, message: str) -> dict[str, str]:
    """One scheduler reason as shown: ``detail`` is the message without the reason code it
    often starts with (KAI writes ``NonPreemptibleOverQuota: ...``), so a line that shows
    the code and then the detail says the code once."""
    detail = message.removeprefix(f"{reason}:").lstrip() if reason else message
    return {"nodePool": pool, "reason": reason, "message": message, "detail": detail}


def pending_entry(
    key: str,
    raw: Mapping[str, Any],
    job: PodGroupInfo | None,
    queues: Mapping[str, Mapping[str, Any]],
    pod_messages: Mapping[str, list[str]],
    failed_binds: Mapping[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """One gang: waiting or not, the scheduler's reasons, the binder's failures, its hint
    and its queue's numbers. A gang whose bind failed waits, whatever the gang rule says
    of the pods the scheduler placed."""
    binding = list((failed_binds or {}).get(key, []))
    spec = raw.get("spec") or {}
    queue = str(spec.get("queue") or (job.queue if job else ""))
    reasons = [
        shown_reason(
            str(c.get("nodePool") or ""), str(r.get("reason") or ""), str(r.get("message") or "")
        )
        for c in conditions_of(raw)
        for r in (c.get("reasons") or [])
        if isinstance(r, Mapping)
    ]
    entry: dict[str, Any] = {
        "podGroup": key,
        "waiting": waits(job, raw, bool(pod_messages.get(key))) or bool(binding),
        "queue": queue,
        "minMember": spec.get("minMember"),
        "pods": sum(len(ps.pods) for ps in job.pod_sets) if job else 0,
        "allocated": sum(ps.active_allocated() for ps in job.pod_sets) if job else 0,
        "reasons": reasons,
        # what a pod says beyond its PodGroup's reasons (the scheduler joins them alike)
        "podMessages": [
            m
            for m in pod_messages.get(key, [])
            if m != message_of([r["message"] for r in reasons])[:4096]
        ],
        "bindFailures": binding,
    }
    hint = ((raw.get("metadata") or {}).get("annotations") or {}).get(SCALE_UP_HINT_ANNOTATION)
    if hint:
        try:
            entry["scaleUpHint"] = json.loads(hint)
        except ValueError:
            entry["scaleUpHint"] = {"raw": hint}
    row = queues.get(queue)
    if row is not None:
        entry["queueNumbers"] = {
            k: row[k] for k in ("deserved", "fairShare", "allocated", "requested", "limit")
        }
    return entry


def amount(value: Any) -> str:
    """A queue amount as people read it: -1 is ``unlimited``, else up to two decimals."""
    if value is None:
        return ""
    number = float(value)
    if number == -1:
        return "unlimited"
    return f"{number:.2f}".rstrip("0").rstrip(".")


def is_eviction(event: Mapping[str, Any]) -> bool:
    """The scheduler's ``Evict`` Event on a PodGroup (one per evicted pod)."""
    involved = event.get("involvedObject") or {}
    return event.get("reason") == "Evict" and involved.get("kind") == "PodGroup"


def eviction_of(event: Mapping[str, Any]) -> dict[str, Any]:
    """An eviction: when, which gang, by which action and for whom (the Event's annotations)."""
    involved = event.get("involvedObject") or {}
    meta = event.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    evictor = annotations.get(EVICTOR_GROUP_NAME)
    evictor_namespace = annotations.get(EVICTOR_GROUP_NAMESPACE)
    return {
        "time": str(
            event.get("lastTimestamp")
            or event.get("eventTime")
            or meta.get("creationTimestamp")
            or ""
        ),
        "podGroup": f"{involved.get('namespace')}/{involved.get('name')}",
        "action": annotations.get(EVICTOR_ACTION, ""),
        "for": f"{evictor_namespace}/{evictor}" if evictor else None,
        "gangSize": annotations.get(EVICTED_GANG_SIZE),
        "message": str(event.get("message") or ""),
    }
