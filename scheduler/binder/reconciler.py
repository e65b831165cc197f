"""The binder's reconcile loop: BindRequests in, pod bindings and BindRequest status out.

Why this module exists: it is the thin async edge around
:func:`scheduler.binder.decide.decide`. For one BindRequest it reads the
BindRequest, its pod and the selected node, performs the decided step
(``pods/{name}/binding``, a ``status`` patch) and schedules the retry. Every
attempt's ``failedAttempts`` is persisted.

Reads come from watch caches while :meth:`Binder.run` runs (BindRequests, Pods and
Nodes are listed and watched, as KAI's binder reads from its informers), so a bind
costs two API calls: the binding and the status patch. The caches may lag; nothing
is decided on a stale read alone: an object missing from a cache is read from the
server, a pod the cache shows unbound but that is bound gets a Conflict from the
binding (then read fresh), and a permanent failure decided on cached objects is
decided again on fresh ones before it is written. Called without :meth:`run`
(tests), :meth:`reconcile` reads everything from the server.

Just before the binding, the node's room is checked against what its pods hold now
(:mod:`scheduler.cache.room`, from the Pod watch): a pod another scheduler bound or
nominated there since the decision fails the request for good, so the scheduler
decides again on its next cycle instead of the kubelet failing the pod ``OutOfcpu``.

A Fraction BindRequest first gets its GPU reservation pods (:mod:`scheduler.binder.sharing`
decides): the binder creates the missing ones and requeues the request until each has
reported its GPU (woken by the reservation pod's watch event, polled as a fallback),
then labels the pod, writes its ConfigMap and binds. While :meth:`run` runs, a periodic
sync (:mod:`scheduler.binder.syncing` decides) deletes reservation pods whose group
emptied and sharing pods whose reservation pod is gone; these are the only deletes.

Just before the binding, a pod's PersistentVolumeClaims are bound
(:mod:`scheduler.binder.volumes`) and its DRA ResourceClaims get their allocation and
reservation (:mod:`scheduler.binder.claims`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from crds import gpusharing as names
from crds.bindrequest import API_VERSION, BINDING_ERROR_REASON, KIND
from crds.names import CREATED_BY_LABEL
from kubeapi.errors import ApiError, ConflictError, NotFoundError
from kubeapi.objects import Object
from kubeapi.protocol import KubeController
from scheduler.binder import claims, sharing, syncing, volumes
from scheduler.binder.decide import (
    Action,
    after_failure,
    bound_annotations,
    decide,
    failed_attempts,
    pod_bound_patch,
    succeeded_status,
)
from scheduler.cache.room import NodeRoom
from scheduler.component import node_pods
from scheduler.component.watching import Key, Store, key_of, run_together, watch_kind
from scheduler.component.workqueue import WorkQueue
from scheduler.metrics import METRICS
from scheduler.metrics.families import Metrics

__all__ = ["Binder"]

log = logging.getLogger("podmuster.binder")

POLL_SECONDS = 2.0
"""A request waiting for a reservation pod's GPU is looked at again after this, at the
latest (the reservation pod's watch event usually wakes it sooner)."""


class Binder:
    """Reconciles BindRequests; :meth:`reconcile` handles one, :meth:`run` all of them."""

    def __init__(
        self,
        api: KubeController,
        *,
        metrics: Metrics = METRICS,
        clock: Callable[[], float] = time.monotonic,
        workers: int = 8,
        reservations: sharing.Settings = sharing.Settings(),  # noqa: B008 (frozen)
        sync_period: float = 5.0,
        volume_timeout: float = volumes.DEFAULT_TIMEOUT,
    ) -> None:
        self.api = api
        self.volumes = volumes.VolumeBinder(api, volume_timeout, clock=clock)
        self.reservations = reservations
        self.sync_period = sync_period
        self.reserving_since: dict[Key, float] = {}
        self.waiting: dict[str, set[Key]] = {}  # GPU group -> requests waiting for its GPU
        # GPU group -> its reservation pods in the Pod cache (a bind looks up its group's,
        # not every pod of the cluster)
        self._reservations: dict[str, dict[Key, Object]] = {}
        self.sync_since: dict[str, float] = {}
        self.metrics = metrics
        self.clock = clock
        self.workers = workers
        self.queue: WorkQueue[Key] = WorkQueue(clock)
        self.retry_at: dict[Key, float] = {}
        self.first_seen: dict[Key, float] = {}
        self.caches: dict[str, Store] = {}  # kind -> watch cache, filled by run()
        self.room = NodeRoom()  # what each node's pods hold, from the Pod watch
        self._synced: dict[str, asyncio.Event] = {}

    async def _get(self, api_version: str, kind: str, namespace: str, name: str) -> Object | None:
        try:
            return await self.api.get(api_version, kind, namespace, name)
        except NotFoundError:
            return None

    def _cached(self, kind: str, namespace: str, name: str) -> Object | None:
        """The watch cache's copy, or None (no synced cache, or not in it)."""
        synced = self._synced.get(kind)
        if synced is None or not synced.is_set():
            return None
        return self.caches[kind].objects.get((namespace, name))

    async def _read(self, api_version: str, kind: str, namespace: str, name: str) -> Object | None:
        """From the watch cache if there, else from the server (None: it does not exist)."""
        cached = self._cached(kind, namespace, name)
        if cached is not None:
            return cached
        return await self._get(api_version, kind, namespace, name)

    async def _patch_status(self, request: Object, status: dict[str, Any]) -> None:
        meta = request["metadata"]
        stored = await self.api.patch(
            API_VERSION, KIND, meta["namespace"], meta["name"], {"status": status},
            subresource="status",
        )  # fmt: skip
        if KIND in self.caches:  # a look before the watch event must not act again
            self.caches[KIND].apply("MODIFIED", stored)

    def _forget(self, key: Key) -> None:
        self.retry_at.pop(key, None)
        self.first_seen.pop(key, None)
        self.reserving_since.pop(key, None)
        self.volumes.forget(key)
        for group in [g for g, keys in self.waiting.items() if key in keys]:
            self.waiting[group].discard(key)
            if not self.waiting[group]:
                del self.waiting[group]

    async def reconcile(self, namespace: str, name: str) -> float | None:
        """Reconcile one BindRequest; returns seconds until it wants another look."""
        key = (namespace, name)
        request = await self._read(API_VERSION, KIND, namespace, name)
        if request is None:
            self._forget(key)
            return None
        now = self.clock()
        self.first_seen.setdefault(key, now)
        pod_name = str((request.get("spec") or {}).get("podName") or name)
        pod = await self._read("v1", "Pod", namespace, pod_name)
        if not self._ours(request, pod):
            self._forget(key)
            return None
        action = decide(request, pod, now, retry_at=self.retry_at.get(key))
        if action.kind == "fail" and self._cached("Pod", namespace, pod_name) is not None:
            pod = await self._get("v1", "Pod", namespace, pod_name)  # never fail on a stale copy
            action = decide(request, pod, now, retry_at=self.retry_at.get(key))
        if action.kind == "done":
            self._forget(key)
            return None
        if action.kind == "wait":
            return max(action.at - now, 0.0)
        if action.kind == "bind":
            fraction = sharing.fraction_of(request)
            if isinstance(fraction, str):
                action = Action("fail", action.node, fraction)
            elif fraction is not None and (unwired := sharing.unwired(pod or {})):
                action = Action("fail", action.node, unwired)
            elif fraction is not None:
                shared = await self._share(key, pod or {}, action.node, fraction)
                if isinstance(shared, float):
                    return shared
                action = shared or action
        if action.kind == "bind":  # claims bound first (scheduler.binder.volumes)
            prepared = await self.volumes.prepare(key, pod or {}, action.node, self.clock())
            if isinstance(prepared, float):
                return prepared
            action = prepared or action
        if action.kind == "bind":  # DRA claims allocated and reserved (scheduler.binder.claims)
            action = await claims.prepare(self.api, request, pod or {}, action.node) or action
        if action.kind == "bind":
            action = await self._bind(request, pod or {}, action)
        return await self._record(key, request, action, pod)

    def _ours(self, request: Object, pod: Object | None) -> bool:
        """The request is this binder's to carry out: its pod's ``spec.schedulerName`` is
        the binder's. A request whose pod is gone is judged (failed) only when a podmuster
        scheduler made it (``CREATED_BY_LABEL``); another scheduler's binder judges its own.
        """
        if pod is not None:
            scheduler = (pod.get("spec") or {}).get("schedulerName")
            return bool(scheduler == self.reservations.scheduler_name)
        labels = (request.get("metadata") or {}).get("labels") or {}
        return CREATED_BY_LABEL in labels

    async def _share(
        self, key: Key, pod: Object, node: str, fraction: sharing.Fraction
    ) -> Action | float | None:
        """Reserve ``fraction``'s GPUs and prepare ``pod`` for them.

        None: ready to bind. A float: look again after that many seconds. An Action:
        ``fail`` (for good) or ``retry``.
        """
        now = self.clock()
        started = self.reserving_since.setdefault(key, now)
        namespace = self.reservations.namespace
        found = {group: await self._reservation_of(group, node) for group in fraction.groups}
        step = sharing.reserve(fraction, node, found, now - started, self.reservations)
        if step.kind == "fail":
            if step.timed_out:
                self.metrics.gpu_reservations.labels(event="timed_out").inc()
            return Action("fail", node, step.reason)
        if step.kind in ("create", "wait"):
            for manifest in step.pods:
                where = f"{namespace}/{manifest['metadata']['name']}"
                try:
                    created = await self.api.create(manifest)
                except ConflictError:
                    continue  # made meanwhile (another request of the same group)
                except ApiError as exc:
                    return Action("retry", node, f"creating reservation pod {where}: {exc.message}")
                self.metrics.gpu_reservations.labels(event="created").inc()
                if "Pod" in self.caches:
                    self._file_reservation(self.caches["Pod"].apply("ADDED", created), created)
                log.info("reservation pod created", extra={"pod": where, "node": node})
            for group in fraction.groups:
                self.waiting.setdefault(group, set()).add(key)
            return POLL_SECONDS
        return await self._prepare_pod(pod, node, fraction, step.uuids)

    async def _reservation_of(self, group: str, node: str) -> Object | None:
        """The reservation pod of ``group`` (by its labels, in the reservation namespace,
        whoever made it: :func:`sharing.find_reservation`), from the Pod cache or else the
        server."""
        synced = self._synced.get("Pod")
        pods: Iterable[Object]
        if synced is not None and synced.is_set():
            pods = self._reservations.get(group, {}).values()
        else:
            pods = await self.api.list(
                "v1", "Pod", self.reservations.namespace, {names.GPU_GROUP_LABEL: group}
            )
        found = sharing.find_reservation(pods, group, node, self.reservations.namespace)
        return None if found is None else dict(found)

    async def _prepare_pod(
        self, pod: Object, node: str, fraction: sharing.Fraction, uuids: tuple[str, ...]
    ) -> Action | None:
        """Label ``pod`` with its groups and write its ConfigMap (None: done)."""
        meta = pod.get("metadata") or {}
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        maps = sharing.configmaps_of(pod)
        cdi = self.reservations.cdi
        try:
            for wanted in [
                *(sharing.configmap(pod, fraction, uuids, cdi=cdi, name=n) for n in maps.data),
                *(sharing.configmap(pod, None, (), name=n) for n in maps.present),
            ]:
                taken = await self._write_configmap(wanted, pod)
                if taken:
                    return Action("fail", node, taken)
            patch = sharing.pod_patch(pod, fraction, uuids)
            await self.api.patch("v1", "Pod", namespace, name, patch)
        except NotFoundError:
            return Action("fail", node, f"pod {name} does not exist")
        except ApiError as exc:
            return Action("retry", node, f"preparing pod {name} for its GPU groups: {exc.message}")
        return None

    async def _write_configmap(self, wanted: dict[str, Any], pod: Object) -> str:
        """Create ``wanted``, or take over the ConfigMap of its name: its data (when
        ``wanted`` has any) and owner become ``pod``'s. Returns why not (another live pod
        owns it), else ``""``."""
        meta = wanted["metadata"]
        try:
            await self.api.create(wanted)
            return ""
        except ConflictError:
            current = await self.api.get("v1", "ConfigMap", meta["namespace"], meta["name"])
        taken = await self._taken_by(current, pod)
        if taken:
            return taken
        if wanted["data"]:
            current["data"] = wanted["data"]
        current["metadata"]["ownerReferences"] = meta["ownerReferences"]
        current["metadata"]["labels"] = {
            **(current["metadata"].get("labels") or {}),
            **meta["labels"],
        }
        await self.api.replace(current)
        return ""

    async def _taken_by(self, configmap: Object, pod: Object) -> str:
        """Why ``pod`` may not have ``configmap`` (another live pod owns it), or ``""``."""
        namespace = str((pod.get("metadata") or {}).get("namespace"))
        for owner, uid in sharing.foreign_owners(configmap, pod):
            other = await self._get("v1", "Pod", namespace, owner)
            if other is not None and str(other["metadata"].get("uid") or "") == uid:
                cm = f"{namespace}/{configmap['metadata']['name']}"
                return (
                    f"ConfigMap {cm} (annotation {names.CONFIGMAP_ANNOTATION}) belongs to "
                    f"pod {namespace}/{owner}, which still exists: two pods cannot share one "
                    "GPU ConfigMap; delete this pod so it is created again with another name"
                )
        return ""

    async def _bind(self, request: Object, pod: Object, action: Action) -> Action:
        meta = pod.get("metadata") or {}
        namespace, pod_name = str(meta.get("namespace")), str(meta.get("name"))
        node = await self._read("v1", "Node", "", action.node)
        if node is None:
            return Action("retry", action.node, f"node {action.node} not found")
        checked_at: str | None = None  # the revision of the node's pods the check read
        if "Pod" in self._synced:
            # bind-time admission (scheduler.cache.room): a room taken since the
            # decision fails the request for good, and the scheduler decides again.
            # The list of the node's pods is the check's source, so it runs before the
            # Pod watch has synced too (an e2e run under load bound onto a full node
            # while the watch was still listing).
            checked_at = await node_pods.refresh(self.room, self.api, action.node)
            refused = self.room.shortfall(node, pod)
            if refused:
                return Action("fail", action.node, refused)
        # held at once: another worker's check on this node must count this pod
        self.room.pod_changed(
            None, {**pod, "spec": {**pod.get("spec", {}), "nodeName": action.node}}
        )
        try:
            await self.api.bind(
                namespace, pod_name, action.node, uid=str(meta.get("uid") or ""),
                annotations=bound_annotations(request),
            )  # fmt: skip
        except NotFoundError:
            self.room.pod_changed(pod, None)
            return Action("fail", action.node, f"pod {pod_name} does not exist")
        except ConflictError:
            # Bound meanwhile (by us in an earlier try, or by someone else): look again.
            fresh = await self._get("v1", "Pod", namespace, pod_name)
            self.room.pod_changed(pod, fresh)
            again = decide(request, fresh, self.clock())
            if again.kind in ("succeed", "fail"):
                return again
            return Action("retry", action.node, f"binding pod {pod_name}: conflict")
        except ApiError as exc:
            self.room.pod_changed(None, pod)
            return Action("retry", action.node, f"binding pod {pod_name}: {exc.message}")
        return Action("succeed", action.node, checked_at=checked_at)

    async def _record(
        self, key: Key, request: Object, action: Action, pod: Object | None = None
    ) -> float | None:
        """Persist the outcome of a ``succeed``, ``fail`` or ``retry`` action; a failure
        also gets a Warning Event on the pod (:meth:`_failure_event`)."""
        now = self.clock()
        if action.kind == "succeed":
            await self._patch_status(request, succeeded_status())
            self.metrics.binder_results.labels(result="succeeded").inc()
            started = self.first_seen.get(key, now)
            self.metrics.bind_latency.observe((now - started) * 1000.0)
            where = {"bindrequest": "/".join(key), "node": action.node}
            log.info("bound", extra={**where, "checked_at": action.checked_at})
            if pod is not None:
                await self._pod_bound(request, pod, action.node, None)
            self._forget(key)
            return None
        retryable = action.kind == "retry"
        status, retry_at = after_failure(request, action.reason, now, retryable=retryable)
        await self._patch_status(request, status)
        result = "retry" if retry_at is not None else "failed"
        self.metrics.binder_results.labels(result=result).inc()
        log.warning(
            "bind failed: %s",
            action.reason,
            extra={"bindrequest": "/".join(key), "attempts": status["failedAttempts"]},
        )
        if pod is not None:
            await self._pod_bound(request, pod, action.node, action.reason)
            if retry_at is None or failed_attempts(request) == 0:
                await self._failure_event(pod, request, action, retry_at, now)
        if retry_at is None:
            await claims.release(self.api, request)  # DRA: unreserve what was written
            self._forget(key)
            return None
        self.retry_at[key] = retry_at
        return retry_at - now

    async def _pod_bound(self, request: Object, pod: Object, node: str, error: str | None) -> None:
        """The pod's ``PodBound`` condition (:func:`~scheduler.binder.decide.pod_bound_patch`);
        a refused write is logged, never a reason to fail the bind."""
        patch = pod_bound_patch(request, pod, node, error)
        if patch is None:
            return
        meta = pod.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name"))
        try:
            await self.api.patch("v1", "Pod", namespace, name, patch, subresource="status",
                                 strategic=True)  # fmt: skip
        except ApiError as exc:
            log.warning("PodBound condition of %s/%s: %s", namespace, name, exc)

    async def _failure_event(
        self,
        pod: Object,
        request: Object,
        action: Action,
        retry_at: float | None,
        now: float,
    ) -> None:
        """``BindingError`` on the pod, as KAI's binder writes, so ``kubectl describe pod``
        says why it stays Pending. Only a request's first failure and its final one get
        one: a request retried many times, or replaced every cycle, does not flood the
        pod's Events."""
        meta = pod.get("metadata") or {}
        where = f"{meta.get('namespace')}/{meta.get('name')}"
        then = (
            f"retrying in {retry_at - now:g}s"
            if retry_at is not None
            else "no retry left: the scheduler places the pod again"
        )
        message = (
            f"Failed to bind pod {where} to node {action.node or '(none)'}: {action.reason} "
            f"(attempt {failed_attempts(request) + 1}; {then})"
        )
        try:
            involved = {"apiVersion": "v1", "kind": "Pod", **pod}
            await self.api.create_event(involved, "Warning", BINDING_ERROR_REASON, message)
        except ApiError as exc:
            log.warning("event for %s: %s", where, exc)

    async def _worker(self) -> None:
        while True:
            key = await self.queue.get()
            try:
                again = await self.reconcile(*key)
            except ApiError as exc:
                log.warning("reconcile %s: %s", "/".join(key), exc)
                again = 1.0
            finally:
                self.queue.done(key)
            if again is not None:
                self.queue.add(key, again)

    def _pod_changed(self, old: Object | None, new: Object | None) -> None:
        """Any pod: re-file it in :attr:`room`; a reservation pod: wake the requests
        waiting for its GPU."""
        self.room.pod_changed(old, new)
        self._file_reservation(old, new)
        pod = new or old or {}
        if not sharing.is_reservation(pod, self.reservations.namespace):
            return
        group = str(pod["metadata"]["labels"][names.GPU_GROUP_LABEL])
        for key in self.waiting.get(group, ()):
            self.queue.add(key)

    def _file_reservation(self, old: Object | None, new: Object | None) -> None:
        """Keep :attr:`_reservations` to the Pod cache: ``old`` out, ``new`` in."""
        for pod, keep in ((old, False), (new, True)):
            if pod is None or not sharing.is_reservation(pod, self.reservations.namespace):
                continue
            group = str(pod["metadata"]["labels"][names.GPU_GROUP_LABEL])
            filed = self._reservations.setdefault(group, {})
            if keep:
                filed[key_of(pod)] = pod
            else:
                filed.pop(key_of(pod), None)
                if not filed:
                    del self._reservations[group]

    async def sync(self) -> None:
        """One sync of GPU groups from the watch caches (see :mod:`scheduler.binder.syncing`)."""
        if not all(self._synced.get(kind, asyncio.Event()).is_set() for kind in (KIND, "Pod")):
            return
        plan = syncing.plan(
            self.caches["Pod"].values(),
            self.caches[KIND].values(),
            settings=self.reservations,
            now=self.clock(),
            since=self.sync_since,
        )
        self.sync_since = plan.since
        for restore in plan.restores:
            await self._restore(restore)
        for pod in plan.reservations:
            group = str(pod["metadata"].get("labels", {}).get(names.GPU_GROUP_LABEL))
            if not await self._delete_pod(pod):
                continue
            self.metrics.gpu_reservations.labels(event="deleted").inc()
            if syncing.restore_state(pod) in ("held", "plain"):
                why = f"GPU group {group} has no pod left"
            else:
                expected = pod["metadata"]["annotations"][names.RESTORED_FOR_GPU_ANNOTATION]
                reported = sharing.reserved_gpu(pod) or "none"
                why = (
                    f"the restore of GPU group {group} did not get the GPU its pods use "
                    f"(reported {reported}, expected {expected})"
                )
            log.info("reservation pod deleted: %s", why, extra={"pod": _where(pod), "group": group})
        for pod, group in plan.orphans:
            if not await self._delete_pod(pod):
                continue
            self.metrics.gpu_reservations.labels(event="orphan_deleted").inc()
            message = (
                f"pod {_where(pod)} deleted: its GPU group {group} lost its reservation pod "
                f"(the GPU it shared is no longer held)"
            )
            log.warning(message, extra={"pod": _where(pod), "group": group})
            try:
                involved = {"apiVersion": "v1", "kind": "Pod", **pod}
                await self.api.create_event(involved, "Warning", "GPUReservationLost", message)
            except ApiError as exc:
                log.warning("event for %s: %s", _where(pod), exc)

    async def _restore(self, restore: syncing.Restore) -> None:
        """Re-create the reservation pod of a group whose sharing pods still run, asking
        for the GPU they use (the sync keeps it only if it reports that GPU). Tried once:
        if it cannot be made, the sync deletes the sharing pods after the grace."""
        group, node = restore.group, restore.node
        self.sync_since[syncing.tried_key(group)] = self.clock()
        gpus = await self._gpus_of(restore.pods)
        if isinstance(gpus, str):
            log.warning(
                "GPU group %s lost its reservation pod and cannot be restored: %s",
                group, gpus, extra={"group": group, "node": node},
            )  # fmt: skip
            return
        manifest = sharing.reservation_pod(node, group, self.reservations)
        manifest["metadata"]["annotations"][names.RESTORED_FOR_GPU_ANNOTATION] = ",".join(gpus)
        where = f"{self.reservations.namespace}/{manifest['metadata']['name']}"
        try:
            created = await self.api.create(manifest)
        except ConflictError:  # still there, being deleted: the next sync looks again
            del self.sync_since[syncing.tried_key(group)]
            return
        except ApiError as exc:
            log.warning(
                "GPU group %s lost its reservation pod; re-creating %s: %s",
                group, where, exc.message, extra={"group": group, "node": node},
            )  # fmt: skip
            return
        self.metrics.gpu_reservations.labels(event="restored").inc()
        if "Pod" in self.caches:
            self._file_reservation(self.caches["Pod"].apply("ADDED", created), created)
        log.warning(
            "GPU group %s lost its reservation pod while %d pod(s) use it: re-created %s "
            "for GPU %s",
            group, len(restore.pods), where, ",".join(gpus),
            extra={"group": group, "node": node, "pod": where},
        )  # fmt: skip

    async def _gpus_of(self, pods: Sequence[Mapping[str, Any]]) -> list[str] | str:
        """The GPU UUIDs every one of ``pods`` uses (``podmuster.io/gpu-uuids``, else their
        ConfigMaps' NVIDIA_VISIBLE_DEVICES), or why they are not known."""
        common: set[str] | None = None
        for pod in pods:
            meta = pod.get("metadata") or {}
            listed = str((meta.get("annotations") or {}).get(names.GPU_UUIDS_ANNOTATION) or "")
            namespace, name = str(meta.get("namespace")), sharing.configmaps_of(pod).data[0]
            if not listed:  # bound by an older binder: its ConfigMap says
                try:
                    configmap = await self.api.get("v1", "ConfigMap", namespace, name)
                except ApiError as exc:
                    return f"reading ConfigMap {namespace}/{name}: {exc.message}"
                data = configmap.get("data") or {}
                listed = str(data.get(names.VISIBLE_DEVICES_ENV) or "")
            gpus = {
                item.strip().removeprefix(sharing.CDI_DEVICE_PREFIX)
                for item in listed.split(",")
                if item.strip()
            }
            common = gpus if common is None else common & gpus
        if not common:
            return "its pods' ConfigMaps name no GPU they all use"
        return sorted(common)

    async def _delete_pod(self, pod: Mapping[str, Any]) -> bool:
        meta = pod["metadata"]
        try:
            await self.api.delete(
                "v1", "Pod", meta["namespace"], meta["name"], uid=str(meta.get("uid") or "")
            )
        except NotFoundError:
            return False
        except ApiError as exc:  # a changed or replaced pod: the next sync looks again
            log.warning("deleting pod %s: %s", _where(pod), exc)
            return False
        return True

    async def _sync_loop(self) -> None:
        while True:
            await asyncio.sleep(self.sync_period)
            await self.sync()

    def _changed(self, old: Object | None, new: Object | None) -> None:
        obj = new or old
        if obj is not None:
            meta = obj.get("metadata") or {}
            self.queue.add((str(meta.get("namespace") or ""), str(meta.get("name") or "")))

    async def run(self) -> None:
        """Watch BindRequests (and cache Pods and Nodes); reconcile until cancelled."""
        self.caches = {KIND: Store(), "Pod": Store(), "Node": Store()}
        self._synced = {kind: asyncio.Event() for kind in self.caches}
        await run_together(
            watch_kind(
                self.api, API_VERSION, KIND, self.caches[KIND], self._changed,
                synced=self._synced[KIND],
            ),
            watch_kind(
                self.api, "v1", "Pod", self.caches["Pod"], self._pod_changed,
                synced=self._synced["Pod"],
            ),
            watch_kind(
                self.api, "v1", "Node", self.caches["Node"], _ignore, synced=self._synced["Node"]
            ),
            *(self._worker() for _ in range(self.workers)),
            self._sync_loop(),
        )  # fmt: skip


def _where(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def _ignore(old: Object | None, new: Object | None) -> None:
    """Nodes are only read; their changes queue nothing."""
