"""Turning a cycle's decisions into API writes: BindRequests, evictions, Events, statuses.

Why this module exists: the engine decides purely (``run_cycle`` → ``CycleResult``);
this is the one place that acts on the decisions, as KAI's ``Statement.Commit`` and
session close do (§1.2 step 4):

* a bind → one BindRequest named after the pod, owned by it, labelled
  ``selected-node``, with ``backoffLimit`` set (KAI leaves it unset, so its binder
  tries once; we default to 3 so the binder retries).  The created object is fed to
  the cache at once, so the next cycle sees the pod Binding even before the watch
  event arrives; an existing live BindRequest is never re-created, an exhausted
  (finally failed) one is replaced;
* an eviction → the pod is deleted (uid precondition) and a Normal Event recorded;
* a pipelined pod → a Normal ``Pipelined`` Event (once per pod and node);
* a group that stayed pending → :mod:`scheduler.live.statuses` bodies, written only
  when they change, plus a Warning ``Unschedulable`` Event;
* an object the cache rejected → a Warning ``InvalidObject`` Event naming the field.

A failed write is logged with the object and counted in :class:`CommitReport`; it
never stops the other writes, and the next cycle decides again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any

from kubeapi import ApiError, ConflictError, KubeController, NotFoundError, Object, owner_reference
from scheduler.cache.reading import POD_GROUP_ANNOTATION, read_bind_request
from scheduler.cycle import CycleResult
from scheduler.live import statuses
from scheduler.live.informers import Informers

log = logging.getLogger("podmuster.scheduler.commit")

BIND_REQUEST_API = "scheduling.run.ai/v1alpha2"
PODGROUP_API = "scheduling.run.ai/v2alpha2"
SELECTED_NODE_LABEL = "selected-node"
PARALLEL_WRITES = 16


@dataclass(slots=True)
class CommitReport:
    bind_requests: int = 0
    already_binding: int = 0
    evicted: int = 0
    conditions: int = 0
    events: int = 0
    failed: int = 0


def bind_request(pod: Mapping[str, Any], node: str, backoff_limit: int) -> Object:
    """The BindRequest for ``pod`` on ``node`` (KAI's shape, plus ``backoffLimit``)."""
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    fraction = annotations.get("gpu-fraction")
    if fraction:
        resource_type = "Fraction"
        count = int(annotations.get("gpu-fraction-num-devices") or 1)
        portion = f"{float(fraction):.2f}"
    else:
        resource_type, count, portion = "Regular", _whole_gpus(pod), "0.00"
    return {
        "apiVersion": BIND_REQUEST_API,
        "kind": "BindRequest",
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace") or "default",
            "labels": {SELECTED_NODE_LABEL: node},
            "ownerReferences": [owner_reference({"apiVersion": "v1", "kind": "Pod", **pod})],
        },
        "spec": {
            "podName": meta.get("name"),
            "selectedNode": node,
            "receivedResourceType": resource_type,
            "receivedGPU": {"count": count, "portion": portion},
            "backoffLimit": backoff_limit,
        },
    }


def _whole_gpus(pod: Mapping[str, Any]) -> int:
    total = 0
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        amount = (resources.get("limits") or {}).get("nvidia.com/gpu") or (
            resources.get("requests") or {}
        ).get("nvidia.com/gpu")
        total += int(str(amount or 0))
    return total


class Committer:
    """Writes one cycle's decisions; keeps what it already said to avoid repeating it."""

    def __init__(
        self, api: KubeController, informers: Informers, *, backoff_limit: int = 3
    ) -> None:
        self.api = api
        self.informers = informers
        self.backoff_limit = backoff_limit
        self._pipelined: dict[str, str] = {}
        self._limit = asyncio.Semaphore(PARALLEL_WRITES)

    async def commit(self, result: CycleResult) -> CommitReport:
        report = CommitReport()
        writes: list[Awaitable[None]] = [self._bind(b.pod, b.node, report) for b in result.binds]
        writes += [self._evict(e.pod, e.action, e.for_job, report) for e in result.evictions]
        writes += [self._pipeline(b.pod, b.node, report) for b in result.pipelined]
        pending = [o for o in result.pod_groups if o.outcome == "pending"]
        if pending:
            members = self._pending_pods_by_group()
            for outcome in pending:
                group_pods = members.get(outcome.pod_group, [])
                writes.append(self._unschedulable(outcome.pod_group, outcome.reasons, report))
                writes += [self._pod_condition(p, outcome.reasons, report) for p in group_pods]
        while self.informers.invalid:
            obj, error = self.informers.invalid.pop(0)
            writes.append(self._event(obj, "Warning", "InvalidObject", str(error), report))
        await asyncio.gather(*writes)
        return report

    async def _guarded(self, what: str, write: Awaitable[Any], report: CommitReport) -> Any:
        async with self._limit:
            try:
                return await write
            except ApiError as exc:
                report.failed += 1
                log.warning("%s failed: %s", what, exc)
                return None

    def _pending_pods_by_group(self) -> dict[str, list[Object]]:
        binding = {key for key, b in self.informers.objects["BindRequest"].items() if _live(b)}
        members: dict[str, list[Object]] = {}
        for key, pod in self.informers.objects["Pod"].items():
            meta = pod.get("metadata") or {}
            group = (meta.get("annotations") or {}).get(POD_GROUP_ANNOTATION)
            spec, status = pod.get("spec") or {}, pod.get("status") or {}
            if not group or spec.get("nodeName") or key in binding:
                continue
            if status.get("phase", "Pending") != "Pending" or meta.get("deletionTimestamp"):
                continue
            members.setdefault(f"{meta.get('namespace') or 'default'}/{group}", []).append(pod)
        return members

    async def _bind(self, pod_key: str, node: str, report: CommitReport) -> None:
        pod = self.informers.objects["Pod"].get(pod_key)
        if pod is None:
            return
        existing = self.informers.objects["BindRequest"].get(pod_key)
        if existing is not None and _live(existing):
            report.already_binding += 1
            return
        namespace, name = pod_key.split("/", 1)
        if existing is not None:  # finally failed: replace it with a fresh request
            uid = str(existing["metadata"].get("uid") or "")
            delete = self.api.delete(BIND_REQUEST_API, "BindRequest", namespace, name, uid=uid)
            await self._guarded(f"delete failed BindRequest {pod_key}", delete, report)
        body = bind_request(pod, node, self.backoff_limit)
        async with self._limit:
            try:
                created = await self.api.create(body)
            except ConflictError:
                report.already_binding += 1
                return
            except ApiError as exc:
                report.failed += 1
                log.warning("create BindRequest %s on %s failed: %s", pod_key, node, exc)
                return
        self.informers.observe("ADDED", created)
        report.bind_requests += 1
        log.info("bind request created", extra={"pod": pod_key, "node": node})

    async def _evict(
        self, pod_key: str, action: str, for_job: str | None, report: CommitReport
    ) -> None:
        pod = self.informers.objects["Pod"].get(pod_key)
        if pod is None:
            return
        namespace, name = pod_key.split("/", 1)
        uid = str(pod["metadata"].get("uid") or "")
        try:
            async with self._limit:
                await self.api.delete("v1", "Pod", namespace, name, uid=uid)
        except NotFoundError:
            return
        except ApiError as exc:
            report.failed += 1
            log.warning("evict Pod %s failed: %s", pod_key, exc)
            return
        report.evicted += 1
        why = f"Evicted by the {action} action" + (f" for pod group {for_job}" if for_job else "")
        await self._event(pod, "Normal", "Evict", why, report)

    async def _pipeline(self, pod_key: str, node: str, report: CommitReport) -> None:
        pod = self.informers.objects["Pod"].get(pod_key)
        if pod is None or self._pipelined.get(pod_key) == node:
            return
        self._pipelined[pod_key] = node
        message = (
            f"pod {pod_key} is pipelined to node {node}: it waits for resources being released"
        )
        await self._event(pod, "Normal", "Pipelined", message, report)

    async def _unschedulable(
        self, group_key: str, reasons: tuple[str, ...], report: CommitReport
    ) -> None:
        group = self.informers.objects["PodGroup"].get(group_key)
        if group is None:
            return
        patch = statuses.pod_group_patch(group, reasons)
        if patch is None:
            return
        namespace, name = group_key.split("/", 1)
        write = self.api.patch(
            PODGROUP_API, "PodGroup", namespace, name, patch, subresource="status"
        )
        stored = await self._guarded(f"status of PodGroup {group_key}", write, report)
        if stored is not None:
            report.conditions += 1
            self.informers.observe("MODIFIED", stored)
            await self._event(
                group, "Warning", "Unschedulable", statuses.message_of(reasons), report
            )

    async def _pod_condition(
        self, pod: Object, reasons: tuple[str, ...], report: CommitReport
    ) -> None:
        if not statuses.pod_needs_condition(pod, reasons):
            return
        meta = pod["metadata"]
        namespace, name = meta.get("namespace") or "default", meta["name"]
        patch = statuses.pod_scheduled_patch(reasons)
        write = self.api.patch(
            "v1", "Pod", namespace, name, patch, subresource="status", strategic=True
        )
        stored = await self._guarded(
            f"PodScheduled condition of Pod {namespace}/{name}", write, report
        )
        if stored is not None:
            report.conditions += 1
            self.informers.observe("MODIFIED", stored)

    async def _event(
        self,
        involved: Mapping[str, Any],
        event_type: str,
        reason: str,
        message: str,
        report: CommitReport,
    ) -> None:
        write = _done(self.api.create_event(involved, event_type, reason, message))
        if await self._guarded(f"{reason} Event", write, report):
            report.events += 1


async def _done(write: Awaitable[None]) -> bool:
    await write
    return True


def _live(bind_request_obj: Mapping[str, Any]) -> bool:
    """True while the BindRequest still holds its pod (not finally failed)."""
    try:
        return read_bind_request(bind_request_obj) is not None
    except ValueError:
        return True
