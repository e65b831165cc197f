"""Turning a cycle's decisions into API writes: BindRequests, evictions, Events, statuses.

Why this module exists: the engine decides purely (``run_cycle`` → ``CycleResult``);
this is the one place that acts on the decisions, as KAI's ``Statement.Commit`` and
session close do (§1.2 step 4):

* a bind → one BindRequest named after the pod, owned by it, labelled
  ``selected-node``, with ``backoffLimit`` set (KAI leaves it unset, so its binder
  tries once; we default to 3 so the binder retries).  The created object is fed to
  the cache at once, so the next cycle sees the pod Binding even before the watch
  event arrives; an existing live BindRequest is never re-created, an exhausted
  (finally failed) one is replaced. The devices the cycle chose for the pod's DRA
  claims go in ``resourceClaimAllocations`` (the binder writes them to the claims);
* with ``direct_bind`` (``--direct-bind``; off by default, as KAI), a pod that needs
  nothing of the binder (:func:`binder_needed` is None: no GPU sharing, no volume
  claims, no DRA claims) is bound here through ``pods/binding``: one API call per pod
  instead of three (BindRequest, binding, BindRequest status), which is what bounds
  throughput under a client QPS limit.  The bound pod is fed to the cache at once.
  Just before the call the node's room is checked against what its pods hold now
  (:mod:`scheduler.cache.room`, fed with every Pod change as it arrives, while the
  cache holds them back): a room another scheduler took since the snapshot leaves the
  pod unbound (``refused``), and the next cycle decides again. The bind's log line
  (``bound``, info, as the BindRequest path's ``bind request created``) carries the
  revision of the node's pods the check read (``checked_at``);
* an eviction → the pod is deleted (uid precondition), a Normal ``Evict`` Event on
  the pod, and one on its PodGroup carrying KAI's annotations (``num-evicted-pods``,
  ``evictor-action-type``, ``evictor-pod-group-name``/``-namespace``);
* PodGroup annotation changes of the cycle (minimum runtime's
  ``kai.scheduler/last-start-timestamp``, the stale-gang
  ``kai.scheduler/stale-podgroup-timestamp``, the preemption delay's
  ``kai.scheduler/last-eviction-timestamp``) → applied to the cache at once, then
  written by :meth:`Committer.flush` as one merge patch per group (keys set, or
  removed for None), skipped when the group already says so.  The loop flushes
  after the binds, in the time left before the next cycle: bookkeeping never takes a
  rate-limit token from a bind.  Until written they live only in this process;
* a pipelined pod → a Normal ``Pipelined`` Event (once per pod and node);
* a group that stayed pending → :mod:`scheduler.live.statuses` bodies, written only
  when they change, plus a Warning ``Unschedulable`` Event; as in KAI, a group with a
  pod bound or being bound (an elastic job at its minimum, with extras waiting) gets
  its pods' conditions but no PodGroup condition, and a group whose pods no longer
  wait (none pending, none awaiting its bind) has its condition removed; a gang's scale-up hint
  (:mod:`scheduler.actions.scale_hint`) is one more reason in the PodGroup's
  condition, its Event and its pods' conditions, and the
  ``kai.scheduler/scale-up-hint`` annotation goes with the cycle's annotations;
* a group held at the queue admission gate → the same PodGroup condition and Event
  (reason code ``AdmissionGated``), nothing on its pods: the API server's
  ``PodScheduled=False/SchedulingGated`` stays;
* a pod the cycle admits (``CycleResult.ungated``) → a strategic-merge patch deleting
  only the ``kai.scheduler/queue-admission`` scheduling gate (other gates stay), with
  the pod's uid as precondition; a pod gone or replaced meanwhile is skipped;
* an object the cache rejected → a Warning ``InvalidObject`` Event naming the field.

A failed write is logged with the object and counted in :class:`CommitReport`; it
never stops the other writes, and the next cycle decides again. A bind the API server
refuses (BindRequest create or ``pods/binding``: an admission policy or webhook, a
``ResourceQuota`` on BindRequests) is also kept in ``CommitReport.bind_failures``: the loop
hands it to the next cycle (``ClusterSnapshot.bind_failed``), whose stale-gang eviction
does not count the pod to its gang when allocate places it again (KAI unallocates it
in the session), so a gang that can never be completed is evicted after the grace
period instead of staying partly bound. The pod gets ``PodScheduled=False`` with reason
``BindingError`` and a Warning ``FailedBinding`` Event (KAI's), once per refusal.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any

from crds import rules
from crds.bindrequest import API_VERSION as BINDREQUEST_API_VERSION
from crds.bindrequest import BINDING_ERROR_REASON, SELECTED_NODE_LABEL
from crds.gpusharing import FRACTION, MEMORY
from crds.names import ADMISSION_GATE, CREATED_BY_LABEL, POD_GROUP_ANNOTATION
from crds.podgroup import API_VERSION as PODGROUP_API_VERSION
from crds.podgroup import marks_unschedulable
from kubeapi.errors import ApiError, ConflictError, NotFoundError
from kubeapi.objects import Object, event_body, owner_reference
from kubeapi.protocol import KubeController
from scheduler.api.resources import GPU_UNIT
from scheduler.cache.pools import NodePool
from scheduler.cache.reading import read_bind_request
from scheduler.cache.room import NodeRoom
from scheduler.component import node_pods
from scheduler.cycle import Bind, CycleResult, Eviction
from scheduler.live import statuses
from scheduler.live.informers import Informers

log = logging.getLogger("podmuster.scheduler.commit")

PARALLEL_WRITES = 32
"""Writes in flight at once (the client's rate limit, if any, still applies)."""

GPU_SHARING_ANNOTATIONS = (FRACTION, MEMORY)
EVICTED_GANG_SIZE = "num-evicted-pods"
EVICTOR_ACTION = "evictor-action-type"
EVICTOR_GROUP_NAME = "evictor-pod-group-name"
EVICTOR_GROUP_NAMESPACE = "evictor-pod-group-namespace"


@dataclass(slots=True)
class CommitReport:
    bind_requests: int = 0
    bound: int = 0  # bound directly (--direct-bind)
    already_binding: int = 0
    evicted: int = 0
    conditions: int = 0
    annotated: int = 0
    events: int = 0
    failed: int = 0
    refused: int = 0  # direct binds left undone: the node's room was taken meanwhile
    ungated: int = 0  # pods whose admission gate was removed
    # pod key -> why the API server refused its bind (BindRequest create, or pods/binding):
    # the next cycle's ClusterSnapshot.bind_failed, so stale-gang eviction does not count
    # the pod to its gang when it is placed again (and likely refused again)
    bind_failures: dict[str, str] = field(default_factory=dict)


def binder_needed(pod: Mapping[str, Any]) -> str | None:
    """Why ``pod`` must be bound by the binder (a BindRequest), or None if it needs
    nothing the binder does: GPU sharing (reservation pods), volume claims to bind,
    DRA resource claims to allocate."""
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if any(annotations.get(name) for name in GPU_SHARING_ANNOTATIONS):
        return "GPU sharing"
    spec = pod.get("spec") or {}
    if spec.get("resourceClaims"):
        return "resource claims"
    for volume in spec.get("volumes") or ():
        if "persistentVolumeClaim" in volume or "ephemeral" in volume:
            return "volume claims"
    return None


def bind_request(
    pod: Mapping[str, Any],
    node: str,
    backoff_limit: int,
    decision: Bind | None = None,
    pool: NodePool | None = None,
) -> Object:
    """The BindRequest for ``pod`` on ``node`` (KAI's shape, plus ``backoffLimit``).

    ``decision`` carries what the engine chose for shared GPUs: the groups go to
    ``selectedGPUGroups`` (the binder makes one reservation pod per group and
    labels the pod with them) and the portion per device to ``receivedGPU``.
    A named ``pool`` labels the request with its node-pool label, as KAI does: the
    instance watches only its pool's BindRequests, so without the label it would not
    see its own binds in flight (and the default pool would count them instead).
    ``CREATED_BY_LABEL`` lets the chart's cleanup hook find it after an uninstall.
    """
    meta = pod.get("metadata") or {}
    groups: list[str] = []
    if decision is not None and decision.gpu_groups:
        resource_type = "Fraction"
        groups = list(decision.gpu_groups)
        count, portion = len(groups), f"{decision.gpu_portion / GPU_UNIT:.2f}"
    elif decision is not None and decision.resource_type == "MigInstance":
        resource_type, count, portion = "MigInstance", 0, "0.00"
    elif (fraction := _fraction_request(meta.get("annotations") or {})) is not None:
        resource_type = "Fraction"
        count, portion = fraction.devices, f"{fraction.fraction:.2f}"
    else:
        count = _whole_gpus(pod)  # KAI: a whole device is portion 1, none is 0
        resource_type, portion = "Regular", "1.00" if count else "0.00"
    spec: dict[str, Any] = {
        "podName": meta.get("name"),
        "selectedNode": node,
        "receivedResourceType": resource_type,
        "receivedGPU": {"count": count, "portion": portion},
        "backoffLimit": backoff_limit,
    }
    if groups:
        spec["selectedGPUGroups"] = groups
    if decision is not None and decision.resource_claims:
        spec["resourceClaimAllocations"] = [
            {"name": entry, "allocation": allocation}
            for entry, allocation in decision.resource_claims
        ]
    labels = {SELECTED_NODE_LABEL: node, CREATED_BY_LABEL: "scheduler"}
    if pool is not None and pool.name is not None:
        labels[pool.label] = pool.name
    return {
        "apiVersion": BINDREQUEST_API_VERSION,
        "kind": "BindRequest",
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace") or "default",
            "labels": labels,
            "ownerReferences": [owner_reference({"apiVersion": "v1", "kind": "Pod", **pod})],
        },
        "spec": spec,
    }


def pod_group_key(pod: Mapping[str, Any]) -> str:
    """The pod's PodGroup key (``ns/name``) from its annotation, or '' when it names none."""
    meta = pod.get("metadata") or {}
    group = (meta.get("annotations") or {}).get(POD_GROUP_ANNOTATION)
    return f"{meta.get('namespace') or 'default'}/{group}" if group else ""


def _fraction_request(annotations: Mapping[str, Any]) -> rules.SharedGpu | None:
    """The pod's ``gpu-fraction`` request (:func:`crds.rules.shared_gpu`); None without one,
    or when an annotation is bad (the engine reports it, naming the field)."""
    try:
        shared = rules.shared_gpu(annotations)
    except rules.RuleError:
        return None
    return shared if shared is not None and shared.fraction is not None else None


def _whole_gpus(pod: Mapping[str, Any]) -> int:
    total = 0
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        amount = (resources.get("limits") or {}).get("nvidia.com/gpu") or (
            resources.get("requests") or {}
        ).get("nvidia.com/gpu")
        total += int(str(amount or 0))
    return total


def _waits_for(obj: Mapping[str, Any], scheduler_name: str) -> bool:
    """``obj`` is a pod of ours that no node has yet (one the cache could not read waits
    for ever: it gets a PodScheduled=False condition saying why)."""
    spec = obj.get("spec") or {}
    return (
        obj.get("kind") == "Pod"
        and not spec.get("nodeName")
        and spec.get("schedulerName") == scheduler_name
        and (obj.get("status") or {}).get("phase", "Pending") == "Pending"
    )


class Committer:
    """Writes one cycle's decisions; keeps what it already said to avoid repeating it."""

    def __init__(
        self,
        api: KubeController,
        informers: Informers,
        *,
        backoff_limit: int = 3,
        direct_bind: bool = False,
        component: str = "podmuster-scheduler",
    ) -> None:
        self.api = api
        self.informers = informers
        self.backoff_limit = backoff_limit
        self.direct_bind = direct_bind
        self.component = component
        self._pipelined: dict[str, str] = {}
        self._limit = asyncio.Semaphore(PARALLEL_WRITES)
        self.room: NodeRoom | None = None
        if direct_bind:
            self.room = NodeRoom()
            for pod in informers.objects.get("Pod", {}).values():
                self.room.pod_changed(None, pod)
            informers.listeners.append(self._pod_seen)
        # PodGroup key -> annotation changes applied to the cache, not yet written
        self.pending_annotations: dict[str, dict[str, str | None]] = {}
        # pod key -> the bind refusal its condition and Event said (said again only when
        # the refusal changes or the condition was replaced); dropped once the pod binds
        self._refusals_said: dict[str, str] = {}
        # groups that may hold our UnschedulableOnNodePool condition (None: not read yet)
        self._marked: set[str] | None = None

    def stream(self) -> BindStream:
        """Start the bind writers now; binds are added while the cycle is still deciding."""
        return BindStream(self, CommitReport())

    async def commit(self, result: CycleResult, stream: BindStream | None = None) -> CommitReport:
        """Write ``result``; with ``stream``, its binds already sent are not sent again."""
        stream = stream or self.stream()
        report = stream.report
        pods = self.informers.objects["Pod"]
        for gone in [key for key in self._refusals_said if key not in pods]:
            del self._refusals_said[gone]
        stream.add(result.binds)
        binding = asyncio.ensure_future(stream.close())
        # Two turns of the event loop: the writers take their first binds, and send their
        # first requests; the bookkeeping below then runs while those are on the wire.
        for _ in range(2):
            await asyncio.sleep(0)
        writes: list[Awaitable[None]] = [binding]
        evicted = [(e, self._group_of(e.pod)) for e in result.evictions]
        gang_sizes = Counter((group, e.action) for e, group in evicted)
        writes += [self._evict(e, gang_sizes[(group, e.action)], report) for e, group in evicted]
        for key, changes in result.annotations.items():
            self._hold_annotations(key, changes)
        writes += [self._pipeline(b.pod, b.node, report) for b in result.pipelined]
        writes += [self._ungate(key, report) for key in result.ungated]
        pending = [o for o in result.pod_groups if o.outcome == "pending"]
        if self._marked is None:  # conditions a previous process wrote are ours to clear
            self._marked = {
                key
                for key, group in self.informers.objects["PodGroup"].items()
                if statuses.holds_condition(group, self._pool())
            }
        census = self._census() if pending or self._marked else None
        if pending:
            assert census is not None
            for outcome in pending:
                group_pods = census.waiting.get(outcome.pod_group, [])
                hint = outcome.scale_up_hint
                said = (*outcome.reasons, hint.message()) if hint else outcome.reasons
                if outcome.pod_group not in census.placed:  # KAI: not while a pod is allocated
                    writes.append(self._unschedulable(outcome.pod_group, said, report))
                if self._marks_pods(outcome.pod_group):
                    writes += [self._pod_condition(p, said, report) for p in group_pods]
        for outcome in result.pod_groups:  # held at the admission gate: the group says why
            if outcome.outcome == "held":
                writes.append(self._unschedulable(outcome.pod_group, outcome.reasons, report))
        if census is not None:
            said_now = {o.pod_group for o in result.pod_groups if o.outcome in ("pending", "held")}
            for key in sorted(self._marked - said_now):
                if key not in census.waiting and key not in census.awaiting_bind:
                    writes.append(self._clear_condition(key, report))
        while self.informers.invalid:
            obj, error = self.informers.invalid.pop(0)
            # the Event is on the object itself: its field and what is wrong, no source
            text = ": ".join(part for part in (error.field, error.message) if part)
            writes.append(self._event(obj, "Warning", statuses.INVALID_OBJECT, text, report))
            if _waits_for(obj, self.informers.cache.scheduler_name):
                # `kubectl describe pod` says why it is not scheduled, not only an Event
                reasons = (f"InvalidObject: {text}",)
                writes.append(self._pod_condition(obj, reasons, report, statuses.INVALID_OBJECT))
        # The pods of a PodGroup that cannot be read wait for ever: they say why too, in
        # every commit (a pod may name the group after its error was first reported; the
        # condition is written only when it is missing or says something else)
        broken = [
            (key, error) for (kind, key), error in self.informers.cache.errors.items()
            if kind == "PodGroup"
        ]  # fmt: skip
        if broken:
            census = census or self._census()
            for key, error in broken:
                text = ": ".join(part for part in (error.field, error.message) if part)
                reasons = (f"InvalidObject: PodGroup {key}: {text}",)
                writes += [
                    self._pod_condition(pod, reasons, report, statuses.INVALID_OBJECT)
                    for pod in census.waiting.get(key, ())
                    if _waits_for(pod, self.informers.cache.scheduler_name)
                ]
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

    def _census(self) -> _Census:
        """The cached pods of each PodGroup: waiting, awaiting their bind, or placed."""
        binding = {key for key, b in self.informers.objects["BindRequest"].items() if _live(b)}
        census = _Census({}, set(), set())
        for key, pod in self.informers.objects["Pod"].items():
            group = pod_group_key(pod)
            if not group:
                continue
            meta = pod.get("metadata") or {}
            spec, status = pod.get("spec") or {}, pod.get("status") or {}
            phase = status.get("phase", "Pending")
            if phase not in ("Pending", "Running") or meta.get("deletionTimestamp"):
                continue
            if spec.get("nodeName"):
                census.placed.add(group)
            elif key in binding:
                census.awaiting_bind.add(group)
                census.placed.add(group)
            elif not spec.get("schedulingGates"):  # the API server reports SchedulingGated
                census.waiting.setdefault(group, []).append(pod)
        return census

    def _pool(self) -> str:
        return self.informers.pool.name or statuses.NODE_POOL

    async def _clear_condition(self, group_key: str, report: CommitReport) -> None:
        """Remove our pool's condition from a group whose pods no longer wait (KAI clears
        it once nothing is pending or awaiting its bind)."""
        assert self._marked is not None
        group = self.informers.objects["PodGroup"].get(group_key)
        patch = None if group is None else statuses.cleared_patch(group, self._pool())
        if patch is None:
            self._marked.discard(group_key)
            return
        if await self._write_status(group_key, patch, report) is not None:
            self._marked.discard(group_key)

    async def _write_status(self, group_key: str, patch: Object, report: CommitReport) -> Any:
        """Patch a PodGroup's status; the stored object (now in the cache), or None."""
        namespace, name = group_key.split("/", 1)
        write = self.api.patch(
            PODGROUP_API_VERSION, "PodGroup", namespace, name, patch, subresource="status"
        )
        stored = await self._guarded(f"status of PodGroup {group_key}", write, report)
        if stored is not None:
            report.conditions += 1
            self.informers.observe("MODIFIED", stored)
        return stored

    def _group_of(self, pod_key: str) -> str:
        """The cached pod's PodGroup key (``ns/name``), or '' when it names none."""
        return pod_group_key(self.informers.objects["Pod"].get(pod_key) or {})

    async def _bind(self, decision: Bind, report: CommitReport) -> None:
        pod_key, node = decision.pod, decision.node
        pod = self.informers.objects["Pod"].get(pod_key)
        if pod is None:
            return
        existing = self.informers.objects["BindRequest"].get(pod_key)
        if existing is not None and _live(existing):
            report.already_binding += 1
            return
        namespace, name = pod_key.split("/", 1)
        if self.direct_bind and binder_needed(pod) is None:
            await self._bind_directly(pod, namespace, name, node, report)
            return
        if existing is not None:  # finally failed: replace it with a fresh request
            uid = str(existing["metadata"].get("uid") or "")
            delete = self.api.delete(
                BINDREQUEST_API_VERSION, "BindRequest", namespace, name, uid=uid
            )
            await self._guarded(f"delete failed BindRequest {pod_key}", delete, report)
        body = bind_request(pod, node, self.backoff_limit, decision, self.informers.pool)
        error: ApiError | None = None
        async with self._limit:
            try:
                created = await self.api.create(body)
            except ConflictError:
                report.already_binding += 1
                return
            except ApiError as exc:
                error = exc
        if error is not None:
            log.warning("create BindRequest %s on %s failed: %s", pod_key, node, error)
            await self._refused(pod, node, error, report)
            return
        self._refusals_said.pop(pod_key, None)
        self.informers.observe("ADDED", created)
        report.bind_requests += 1
        log.info("bind request created", extra={"pod": pod_key, "node": node})

    async def _refused(self, pod: Object, node: str, error: ApiError, report: CommitReport) -> None:
        """The API server refused ``pod``'s bind (an admission policy or webhook, a quota on
        BindRequests, ...): the next cycle is told (``report.bind_failures``), and the pod
        says why as KAI's does: ``PodScheduled=False``/``BindingError`` and a Warning
        ``FailedBinding`` Event, once per refusal (not every cycle it is refused again)."""
        meta = pod.get("metadata") or {}
        namespace, name = meta.get("namespace") or "default", str(meta.get("name"))
        pod_key, text = f"{namespace}/{name}", str(error)
        report.failed += 1
        report.bind_failures[pod_key] = text
        if self._refusals_said.get(pod_key) == text and statuses.says_bind_failure(pod):
            return
        self._refusals_said[pod_key] = text
        message = statuses.bind_failure_message(pod_key, node, text)
        await self._event(pod, "Warning", statuses.FAILED_BINDING, message, report)
        await self._pod_condition(pod, (message,), report, BINDING_ERROR_REASON)

    async def _bind_directly(
        self, pod: Object, namespace: str, name: str, node: str, report: CommitReport
    ) -> None:
        """``pods/binding`` from the scheduler; the bound pod is fed to the cache."""
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        bound = {**pod, "spec": {**pod["spec"], "nodeName": node}}
        # The node's pods are listed inside the write limit, right before the bind: listed
        # before waiting for a slot, another scheduler's binds made during the wait would
        # be missed (an e2e run under load over-committed a node that way).
        checked_at: str | None = None  # the revision of the node's pods the check read
        error: ApiError | None = None
        async with self._limit:
            if self.room is not None:
                checked_at = await node_pods.refresh(self.room, self.api, node)
                node_obj = self.informers.objects["Node"].get(node) or {}
                refused = self.room.shortfall(node_obj, pod)
                if refused:
                    report.refused += 1
                    log.warning("bind Pod %s/%s not sent: %s", namespace, name, refused)
                    return
                self.room.pod_changed(None, bound)  # held at once: the next check counts it
            try:
                await self.api.bind(namespace, name, node, uid=uid)
            except ConflictError:  # bound meanwhile: its watch event tells the cache where
                report.already_binding += 1
                self._unhold(pod)
                return
            except NotFoundError:
                self._unhold(pod)
                return
            except ApiError as exc:
                error = exc
                self._unhold(pod)
        if error is not None:
            log.warning("bind Pod %s/%s to %s failed: %s", namespace, name, node, error)
            await self._refused(pod, node, error, report)
            return
        self._refusals_said.pop(f"{namespace}/{name}", None)
        # The same resourceVersion with spec.nodeName set: the cache counts the pod on
        # its node now, and the watch event (a newer version) replaces this copy.
        self.informers.observe("MODIFIED", bound)
        report.bound += 1
        where = {"pod": f"{namespace}/{name}", "node": node}
        log.info("bound", extra={**where, "checked_at": checked_at})

    def _pod_seen(self, event_type: str, obj: Mapping[str, Any]) -> None:
        if self.room is not None and obj.get("kind") == "Pod":
            self.room.pod_changed(obj, None if event_type == "DELETED" else obj)

    def _unhold(self, pod: Object) -> None:
        """A direct bind that did not happen: the pod holds no room (until its next event)."""
        if self.room is not None:
            self.room.pod_changed(None, pod)

    def _hold_annotations(self, group_key: str, changes: Mapping[str, str | None]) -> None:
        """Apply ``changes`` to the cached PodGroup now; queue them for :meth:`flush`."""
        group = self.informers.objects["PodGroup"].get(group_key)
        if group is None:
            return
        current = (group.get("metadata") or {}).get("annotations") or {}
        wanted = {k: v for k, v in changes.items() if current.get(k) != v}
        if not wanted:
            return
        self.pending_annotations.setdefault(group_key, {}).update(wanted)
        merged = {k: v for k, v in {**current, **wanted}.items() if v is not None}
        self.informers.observe(
            "MODIFIED", {**group, "metadata": {**group["metadata"], "annotations": merged}}
        )

    async def flush(self, seconds: float | None = None) -> CommitReport:
        """Write the queued PodGroup annotation changes, one merge patch per group.

        Binds and evictions go first: the loop flushes in the time left before the next
        cycle (and at shutdown), so this bookkeeping never delays a bind under a client
        rate limit (as kube-scheduler's Events trail its bindings). No write starts
        after ``seconds`` (None: no limit); those already sent finish. A group whose
        write failed stays queued; a deleted group is dropped.
        """
        report = CommitReport()
        loop = asyncio.get_running_loop()
        deadline = None if seconds is None else loop.time() + seconds
        keys = list(self.pending_annotations)
        await asyncio.gather(*(self._annotate(k, report, deadline) for k in keys))
        return report

    async def _annotate(
        self, group_key: str, report: CommitReport, deadline: float | None = None
    ) -> None:
        async with self._limit:
            if deadline is not None and asyncio.get_running_loop().time() >= deadline:
                return
            await self._write_annotations(group_key, report)

    async def _write_annotations(self, group_key: str, report: CommitReport) -> None:
        changes = dict(self.pending_annotations.get(group_key) or {})
        if not changes:
            return
        namespace, name = group_key.split("/", 1)
        patch = {"metadata": {"annotations": dict(changes)}}
        try:  # the caller holds a write slot
            stored = await self.api.merge_patch(
                PODGROUP_API_VERSION, "PodGroup", namespace, name, patch
            )
        except NotFoundError:
            self.pending_annotations.pop(group_key, None)
            return
        except ApiError as exc:
            report.failed += 1
            log.warning("annotations of PodGroup %s failed: %s", group_key, exc)
            return
        if self.pending_annotations.get(group_key) == changes:
            del self.pending_annotations[group_key]
        report.annotated += 1
        self.informers.observe("MODIFIED", stored)

    async def _evict(self, eviction: Eviction, gang_size: int, report: CommitReport) -> None:
        pod_key, action, for_job = eviction.pod, eviction.action, eviction.for_job
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
        group = self.informers.objects["PodGroup"].get(self._group_of(pod_key))
        if group is not None:
            await self._evict_event(
                group, f"pod {pod_key}: {why}", action, for_job, gang_size, report
            )

    async def _evict_event(
        self,
        group: Object,
        message: str,
        action: str,
        for_job: str | None,
        gang_size: int,
        report: CommitReport,
    ) -> None:
        """KAI's Evict Event on the evicted pod's PodGroup, its metadata as annotations."""
        body = event_body(group, "Normal", "Evict", message, component=self.component)
        annotations = {EVICTED_GANG_SIZE: str(gang_size), EVICTOR_ACTION: action}
        if for_job:
            evictor_namespace, _, evictor_name = for_job.rpartition("/")
            annotations[EVICTOR_GROUP_NAME] = evictor_name
            annotations[EVICTOR_GROUP_NAMESPACE] = evictor_namespace
        body["metadata"]["annotations"] = annotations
        if await self._guarded("Evict Event of a PodGroup", self.api.create(body), report):
            report.events += 1

    async def _pipeline(self, pod_key: str, node: str, report: CommitReport) -> None:
        pod = self.informers.objects["Pod"].get(pod_key)
        if pod is None or self._pipelined.get(pod_key) == node:
            return
        self._pipelined[pod_key] = node
        message = (
            f"pod {pod_key} is pipelined to node {node}: it waits for resources being released"
        )
        await self._event(pod, "Normal", "Pipelined", message, report)

    async def _ungate(self, pod_key: str, report: CommitReport) -> None:
        """Remove our admission gate from the pod, keeping any other gate."""
        pod = self.informers.objects["Pod"].get(pod_key)
        if pod is None:
            return
        namespace, name = pod_key.split("/", 1)
        patch = {
            "metadata": {"uid": pod["metadata"].get("uid")},  # not a namesake created since
            "spec": {"schedulingGates": [{"name": ADMISSION_GATE, "$patch": "delete"}]},
        }
        async with self._limit:
            try:
                stored = await self.api.patch("v1", "Pod", namespace, name, patch, strategic=True)
            except (NotFoundError, ConflictError):
                return  # deleted or replaced meanwhile: the next cycle sees the new pod
            except ApiError as exc:
                report.failed += 1
                log.warning("removing the admission gate of Pod %s failed: %s", pod_key, exc)
                return
        self.informers.observe("MODIFIED", stored)
        report.ungated += 1
        log.debug("admission gate removed", extra={"pod": pod_key})

    def _marks_pods(self, group_key: str) -> bool:
        """Whether the group's pending pods get ``PodScheduled=False``: not with KAI's
        ``spec.markUnschedulable: false``, which keeps autoscalers off the gang (its
        PodGroup condition and Event still say why it waits)."""
        group = self.informers.objects["PodGroup"].get(group_key) or {}
        return marks_unschedulable((group.get("spec") or {}).get("markUnschedulable"))

    async def _unschedulable(
        self, group_key: str, reasons: tuple[str, ...], report: CommitReport
    ) -> None:
        group = self.informers.objects["PodGroup"].get(group_key)
        if group is None:
            return
        pool = self._pool()
        patch = statuses.pod_group_patch(group, reasons, pool)
        if self._marked is not None:
            self._marked.add(group_key)
        if patch is None:
            return
        if await self._write_status(group_key, patch, report) is not None:
            await self._event(
                group, "Warning", "Unschedulable", statuses.message_of(reasons), report
            )

    async def _pod_condition(
        self,
        pod: Object,
        reasons: tuple[str, ...],
        report: CommitReport,
        reason: str = "Unschedulable",
    ) -> None:
        if not statuses.pod_needs_condition(pod, reasons, reason):
            return
        meta = pod["metadata"]
        namespace, name = meta.get("namespace") or "default", meta["name"]
        patch = statuses.pod_scheduled_patch(reasons, reason)
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


class BindStream:
    """A cycle's binds in the order they come, :data:`PARALLEL_WRITES` writers at a time.

    A few writers take the next bind as each finishes: the first bind is sent at once,
    where a task per bind (ten thousand in a backlog's first cycle) would all be created
    and started before any reply is read. Binds can be added while the cycle still decides
    (:class:`scheduler.cycle.EarlyBinds`); a pod is sent at most once per stream.
    """

    def __init__(self, committer: Committer, report: CommitReport) -> None:
        self.report = report
        self.sent: set[str] = set()
        self._queue: asyncio.Queue[Bind | None] = asyncio.Queue()
        self._writers = [
            asyncio.ensure_future(self._write(committer)) for _ in range(PARALLEL_WRITES)
        ]

    def add(self, binds: list[Bind]) -> None:
        for decision in binds:
            if decision.pod not in self.sent:
                self.sent.add(decision.pod)
                self._queue.put_nowait(decision)

    async def close(self) -> None:
        """No more binds: wait for those added to be written."""
        for _ in self._writers:
            self._queue.put_nowait(None)
        await asyncio.gather(*self._writers)

    def cancel(self) -> None:
        """Stop the writers (binds not yet sent stay unsent: the next cycle decides again)."""
        for writer in self._writers:
            writer.cancel()

    async def _write(self, committer: Committer) -> None:
        while (decision := await self._queue.get()) is not None:
            await committer._bind(decision, self.report)


@dataclass(slots=True)
class _Census:
    waiting: dict[str, list[Object]]  # group -> its pods waiting for a node
    awaiting_bind: set[str]  # groups with a pod whose BindRequest is live
    placed: set[str]  # groups with a pod on a node or being bound


def _live(bind_request_obj: Mapping[str, Any]) -> bool:
    """True while the BindRequest still holds its pod (not finally failed)."""
    try:
        return read_bind_request(bind_request_obj) is not None
    except ValueError:
        return True
