"""The status controllers' loop: watch Pods, PodGroups, Queues and PriorityClasses,
patch PodGroup and Queue ``status`` when it changes.

Why this module exists: it is the thin async edge around
:mod:`~scheduler.controllers.podgroup_status` and
:mod:`~scheduler.controllers.queue_status`. Watch events only mark work
(a PodGroup, or "the queue tree"), debounced so a burst of pod updates costs one
patch; a patch is sent only when the computed fields differ from the stored
ones, and it touches only the fields these controllers own. It also exports the
queue controller's ``kai_queue_*`` gauges.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from crds import rules
from crds.gpusharing import FRACTION, GPU_RESOURCE, MEMORY
from crds.meta import KaiModel
from crds.names import POD_GROUP_ANNOTATION
from crds.podgroup import API_VERSION as PODGROUP_API_VERSION
from crds.podgroup import PodGroupStatus
from crds.queue import API_VERSION as QUEUE_API_VERSION
from crds.queue import QueueStatus
from kubeapi.errors import ApiError, NotFoundError
from kubeapi.objects import Object
from kubeapi.protocol import KubeController
from scheduler.component.watching import Key, Store, key_of, run_together, watch_kind
from scheduler.component.workqueue import WorkQueue
from scheduler.controllers.podgroup_status import GpuMemory, is_non_preemptible
from scheduler.controllers.podgroup_status import podgroup_status as compute_podgroup
from scheduler.controllers.queue_status import queue_statuses, queue_totals
from scheduler.metrics import METRICS
from scheduler.metrics.families import Metrics

__all__ = ["StatusControllers", "merge_diff"]

log = logging.getLogger("podmuster.controllers")

PODGROUP = (PODGROUP_API_VERSION, "PodGroup")
QUEUE = (QUEUE_API_VERSION, "Queue")
# The status each kind's writes go through: a status the model refuses is our bug, not sent.
STATUS_MODELS: dict[tuple[str, str], type[KaiModel]] = {
    PODGROUP: PodGroupStatus,
    QUEUE: QueueStatus,
}
PRIORITY_CLASS = ("scheduling.k8s.io/v1", "PriorityClass")
QUEUES: tuple[str, str, str] = ("queues", "", "")
_RESOURCES = ("gpu", "cpu", "memory")


def merge_diff(
    current: Mapping[str, Any], desired: Mapping[str, Any], own_all: bool = False
) -> Any:
    """A JSON merge patch turning ``current`` into ``desired`` for ``desired``'s keys.

    Nested maps are owned whole: their keys missing from ``desired`` are removed.
    """
    patch: dict[str, Any] = {}
    for name, value in desired.items():
        have = current.get(name)
        if isinstance(value, Mapping):
            sub = merge_diff(have if isinstance(have, Mapping) else {}, value, True)
            if sub or (have is None and value):
                patch[name] = sub
        elif have != value:
            patch[name] = value
    if own_all:
        patch.update({name: None for name in current if name not in desired})
    return patch


def _group_of(pod: Mapping[str, Any]) -> Key | None:
    meta = pod.get("metadata") or {}
    group = (meta.get("annotations") or {}).get(POD_GROUP_ANNOTATION)
    return (str(meta.get("namespace") or ""), str(group)) if group else None


class StatusControllers:
    """PodGroup ``resourcesStatus`` and Queue ``status``, from four watched kinds."""

    def __init__(
        self,
        api: KubeController,
        *,
        metrics: Metrics = METRICS,
        debounce: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.metrics = metrics
        self.debounce = debounce
        self.queue: WorkQueue[tuple[str, str, str]] = WorkQueue(clock)
        self.pods, self.podgroups = Store(), Store()
        self.queues, self.priority_classes = Store(), Store()
        self.nodes = Store()
        self.members: dict[Key, set[Key]] = {}

    # --- events -------------------------------------------------------------------
    def _mark(self, group: Key) -> None:
        self.queue.add(("podgroup", *group), self.debounce)

    def on_pod(self, old: Object | None, new: Object | None) -> None:
        for obj, present in ((old, False), (new, True)):
            group = _group_of(obj) if obj is not None else None
            if obj is None or group is None:
                continue
            members = self.members.setdefault(group, set())
            (members.add if present else members.discard)(key_of(obj))
            self._mark(group)

    def on_podgroup(self, old: Object | None, new: Object | None) -> None:
        obj = new or old
        if obj is not None:
            self._mark(key_of(obj))
        self.queue.add(QUEUES, self.debounce)

    def on_queue(self, old: Object | None, new: Object | None) -> None:
        self.queue.add(QUEUES, self.debounce)

    def on_node(self, old: Object | None, new: Object | None) -> None:
        """A node's GPU memory sizes its gpu-memory pods: their groups are due again."""
        labels = [((o or {}).get("metadata") or {}).get("labels") or {} for o in (old, new)]
        if rules.node_gpu_memory(labels[0]) == rules.node_gpu_memory(labels[1]):
            return
        for group, members in self.members.items():
            if any(self._uses_gpu_memory(self.pods.objects.get(k)) for k in members):
                self._mark(group)

    @staticmethod
    def _uses_gpu_memory(pod: Object | None) -> bool:
        annotations = ((pod or {}).get("metadata") or {}).get("annotations") or {}
        return MEMORY in annotations and FRACTION not in annotations

    def on_priority_class(self, old: Object | None, new: Object | None) -> None:
        for group in self.podgroups.objects:
            self._mark(group)

    # --- reconcile ----------------------------------------------------------------
    def priority_of(self, name: str) -> int:
        """The priority of class ``name`` (:func:`crds.rules.priority_of`)."""
        classes: dict[str, int] = {}
        global_default = None
        for pc in self.priority_classes.values():
            value = int(pc.get("value") or 0)
            classes[str((pc.get("metadata") or {}).get("name") or "")] = value
            if pc.get("globalDefault"):
                global_default = value
        return rules.priority_of(name, classes, global_default)

    async def _patch_status(
        self, kind: tuple[str, str], obj: Mapping[str, Any], desired: Mapping[str, Any]
    ) -> bool:
        desired = STATUS_MODELS[kind].model_validate(desired).to_patch()
        patch = merge_diff(obj.get("status") or {}, desired)
        if not patch:
            return False
        namespace, name = key_of(obj)
        try:
            await self.api.patch(*kind, namespace, name, {"status": patch}, subresource="status")
        except NotFoundError:
            return False
        return True

    async def reconcile_podgroup(self, namespace: str, name: str) -> bool:
        """Patch one PodGroup's status if it changed; True when patched."""
        group = self.podgroups.objects.get((namespace, name))
        if group is None:
            return False
        keys = self.members.get((namespace, name), set())
        pods = [self.pods.objects[k] for k in sorted(keys) if k in self.pods.objects]
        spec = group.get("spec") or {}
        priority = self.priority_of(str(spec.get("priorityClassName") or ""))
        desired = compute_podgroup(
            group,
            pods,
            non_preemptible=is_non_preemptible(group, priority),
            gpu_memory=GpuMemory(self.nodes.values()),
        )
        return await self._patch_status(PODGROUP, group, desired)

    async def reconcile_queues(self) -> int:
        """Patch every Queue whose status changed; returns how many were patched."""
        queues, groups = self.queues.values(), self.podgroups.values()
        statuses = queue_statuses(queues, groups)
        patched = 0
        for queue in queues:
            wanted = statuses.get(key_of(queue)[1])
            if wanted is not None and await self._patch_status(QUEUE, queue, wanted):
                patched += 1
        self.export_queue_metrics(queues, groups)
        return patched

    def export_queue_metrics(self, queues: list[Object], groups: list[Object]) -> None:
        totals, _ = queue_totals(queues, groups)
        deserved: dict[str, dict[str, float]] = {}
        for queue in queues:
            resources = (queue.get("spec") or {}).get("resources") or {}
            quota = {r: float((resources.get(r) or {}).get("quota") or 0) for r in _RESOURCES}
            deserved[key_of(queue)[1]] = {
                "gpu": quota["gpu"],
                "cpu": quota["cpu"] / 1000 if quota["cpu"] != -1 else -1,
                "memory": quota["memory"] * 1e6 if quota["memory"] >= 0 else -1,
            }
        allocated = {
            name: {
                "gpu": float(t["allocated"].get(GPU_RESOURCE, 0)),
                "cpu": float(t["allocated"].get("cpu", 0)) / 1000,
                "memory": float(t["allocated"].get("memory", 0)) * 1e6,
            }
            for name, t in totals.items()
        }
        self.metrics.set_queues(deserved, allocated)

    # --- loop ---------------------------------------------------------------------
    async def _worker(self) -> None:
        while True:
            key = await self.queue.get()
            try:
                if key == QUEUES:
                    await self.reconcile_queues()
                else:
                    await self.reconcile_podgroup(key[1], key[2])
            except ApiError as exc:
                log.warning("status of %s: %s", "/".join(key), exc)
                self.queue.done(key)
                self.queue.add(key, 1.0)
                continue
            self.queue.done(key)

    async def run(self, workers: int = 4) -> None:
        """Watch and reconcile until cancelled."""
        watches = (
            (PRIORITY_CLASS, self.priority_classes, self.on_priority_class),
            (QUEUE, self.queues, self.on_queue),
            (PODGROUP, self.podgroups, self.on_podgroup),
            (("v1", "Pod"), self.pods, self.on_pod),
            (("v1", "Node"), self.nodes, self.on_node),
        )
        await run_together(
            *(watch_kind(self.api, *kind, store, handler) for kind, store, handler in watches),
            *(self._worker() for _ in range(workers)),
        )
