"""Leader election through a ``coordination.k8s.io/v1`` Lease.

Why this module exists: two scheduler replicas deciding at once would bind the same
capacity twice, so only the Lease holder runs cycles (``--leader-elect``).  The holder
renews every ``retry`` seconds; if it cannot renew for ``renew_deadline`` seconds it
has lost the lease and must stop.  A candidate takes the lease over once
``renewTime + leaseDurationSeconds`` has passed.  Writes carry the read
``resourceVersion``, so of two candidates exactly one wins (ConflictError for the
other).  Defaults are KAI's: 15 s lease, 10 s renew deadline, 2 s retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubeapi import ApiError, Kube, NotFoundError, Object

log = logging.getLogger("podmuster.scheduler.leader")

LEASE_API = "coordination.k8s.io/v1"


def _micro(moment: float) -> str:
    stamp = datetime.datetime.fromtimestamp(moment, datetime.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _seconds(raw: Any) -> float | None:
    if not raw:
        return None
    text = str(raw).replace("Z", "+00:00")
    try:
        return datetime.datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def held_by_other(spec: Mapping[str, Any], identity: str, now: float) -> bool:
    """True while someone else holds an unexpired lease."""
    holder = str(spec.get("holderIdentity") or "")
    if not holder or holder == identity:
        return False
    renewed = _seconds(spec.get("renewTime")) or _seconds(spec.get("acquireTime"))
    duration = float(spec.get("leaseDurationSeconds") or 0)
    return renewed is not None and renewed + duration > now


class LeaderElector:
    """Acquire, renew and release one Lease; see the module docstring."""

    def __init__(
        self,
        api: Kube,
        namespace: str,
        identity: str,
        *,
        name: str = "podmuster-scheduler",
        lease: float = 15.0,
        renew_deadline: float = 10.0,
        retry: float = 2.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.api, self.namespace, self.identity, self.name = api, namespace, identity, name
        self.lease, self.renew_deadline, self.retry, self.clock = (
            lease,
            renew_deadline,
            retry,
            clock,
        )
        self.renewed_at = 0.0

    def _spec(self, now: float, old: Mapping[str, Any] | None) -> Object:
        ours = old is not None and old.get("holderIdentity") == self.identity
        transitions = int((old or {}).get("leaseTransitions") or 0)
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease),
            "acquireTime": (old or {}).get("acquireTime") if ours else _micro(now),
            "renewTime": _micro(now),
            "leaseTransitions": transitions if ours or old is None else transitions + 1,
        }

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True when we hold the lease afterwards."""
        now = self.clock()
        try:
            current = await self.api.get(LEASE_API, "Lease", self.namespace, self.name)
        except NotFoundError:
            body = {
                "apiVersion": LEASE_API,
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(now, None),
            }
            try:
                await self.api.create(body)
            except ApiError as exc:
                log.info("Lease %s/%s: create lost: %s", self.namespace, self.name, exc)
                return False
            self.renewed_at = now
            return True
        except ApiError as exc:
            log.warning("Lease %s/%s: read failed: %s", self.namespace, self.name, exc)
            return False
        spec = current.get("spec") or {}
        if held_by_other(spec, self.identity, now):
            return False
        current["spec"] = self._spec(now, spec)
        try:
            await self.api.replace(current)
        except ApiError as exc:
            log.info("Lease %s/%s: update lost: %s", self.namespace, self.name, exc)
            return False
        self.renewed_at = now
        return True

    async def acquire(self, stop: asyncio.Event) -> bool:
        """Retry every ``retry`` seconds until we lead (True) or ``stop`` is set (False)."""
        while not stop.is_set():
            if await self.try_acquire_or_renew():
                log.info("became leader", extra={"lease": self.name, "identity": self.identity})
                return True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.retry)
        return False

    async def hold(self, stop: asyncio.Event) -> None:
        """Renew until ``stop`` is set; returns early when renewals failed for longer
        than the renew deadline (leadership lost)."""
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), self.retry)
                return
            except TimeoutError:
                pass
            renewed = await self.try_acquire_or_renew()
            if not renewed and self.clock() - self.renewed_at > self.renew_deadline:
                log.error("lost the lease", extra={"lease": self.name})
                return

    async def release(self) -> None:
        """Give the lease up so a standby takes over at once."""
        try:
            current = await self.api.get(LEASE_API, "Lease", self.namespace, self.name)
            spec = current.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            current["spec"] = {**spec, "holderIdentity": "", "leaseDurationSeconds": 1}
            await self.api.replace(current)
        except ApiError as exc:
            log.warning("Lease %s/%s: release failed: %s", self.namespace, self.name, exc)
