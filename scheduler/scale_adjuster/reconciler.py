"""The node-scale-adjuster's live edge: watch Pods, apply each reconcile's plan.

Why this module exists: :func:`~scheduler.scale_adjuster.deciding.plan` decides; this
keeps the pods current (one list + watch), runs one reconcile at a time after a short
debounce (and again when a cool-down ends), and writes the plan: delete scaling pods,
create new ones and patch their status to ``PodScheduled=False/Unschedulable`` so
cluster-autoscaler and Karpenter see them at once. A failed write is logged and the
pods are looked at again a second later; the cool-down lives in this process only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from kubeapi.errors import ApiError, ConflictError, NotFoundError
from kubeapi.objects import Object, timestamp
from kubeapi.protocol import KubeController
from scheduler.component.watching import Store, run_together, watch_kind
from scheduler.component.workqueue import WorkQueue
from scheduler.scale_adjuster.deciding import Plan, Settings, plan

__all__ = ["ScaleAdjuster", "unschedulable_status"]

log = logging.getLogger("podmuster.scale_adjuster")

RECONCILE = "reconcile"
RETRY_SECONDS = 1.0


def unschedulable_status() -> Object:
    """The status patch that makes a scaling pod look unschedulable to autoscalers."""
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "scaling pod for a pending fractional-GPU pod (node-scale-adjuster)",
        "lastTransitionTime": timestamp(),
    }
    return {"status": {"conditions": [condition]}}


class ScaleAdjuster:
    """Keeps scaling pods in step with pending fractional-GPU pods."""

    def __init__(
        self,
        api: KubeController,
        settings: Settings,
        *,
        debounce: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.settings = settings
        self.debounce = debounce
        self.clock = clock
        self.pods = Store()
        self.queue: WorkQueue[str] = WorkQueue(clock)
        self.cool_down_until = 0.0

    def on_pod(self, old: Object | None, new: Object | None) -> None:
        self.queue.add(RECONCILE, self.debounce)

    async def reconcile(self) -> Plan:
        """Decide over the pods seen and write the plan; returns it (tests read it)."""
        now = self.clock()
        decided = plan(
            self.pods.values(), now=now, cool_down_until=self.cool_down_until,
            settings=self.settings,
        )  # fmt: skip
        self.cool_down_until = decided.cool_down_until
        for error in decided.errors:
            log.warning("%s", error)
        failed = False
        for namespace, name in decided.delete:
            try:
                await self.api.delete("v1", "Pod", namespace, name)
                log.info("deleted scaling pod %s/%s", namespace, name)
            except NotFoundError:
                pass
            except ApiError as exc:
                log.warning("delete scaling pod %s/%s: %s", namespace, name, exc)
                failed = True
        for pod in decided.create:
            failed |= not await self._create(pod)
        if failed:
            self.queue.add(RECONCILE, RETRY_SECONDS)
        elif now < self.cool_down_until:
            self.queue.add(RECONCILE, self.cool_down_until - now)
        return decided

    async def _create(self, pod: Object) -> bool:
        meta = pod["metadata"]
        where = f"{meta['namespace']}/{meta['name']}"
        try:
            stored = await self.api.create(pod)
        except ConflictError:
            return True  # made by an earlier reconcile; the watch brings it
        except ApiError as exc:
            log.warning("create scaling pod %s: %s", where, exc)
            return False
        self.pods.apply("ADDED", stored)
        try:
            patched = await self.api.patch(
                "v1", "Pod", meta["namespace"], meta["name"], unschedulable_status(),
                subresource="status", strategic=True,
            )  # fmt: skip
        except ApiError as exc:
            log.warning("status of scaling pod %s: %s", where, exc)
            return False
        self.pods.apply("MODIFIED", patched)
        log.info("created scaling pod %s", where)
        return True

    async def _worker(self) -> None:
        while True:
            key = await self.queue.get()
            try:
                await self.reconcile()
            except ApiError as exc:  # pragma: no cover - writes catch their own
                log.warning("reconcile: %s", exc)
                self.queue.add(key, RETRY_SECONDS)
            finally:
                self.queue.done(key)

    async def run(self) -> None:
        """Watch pods and reconcile until cancelled."""
        await run_together(
            watch_kind(self.api, "v1", "Pod", self.pods, self.on_pod), self._worker()
        )
