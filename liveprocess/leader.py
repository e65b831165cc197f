"""Leader election through a ``coordination.k8s.io/v1`` Lease, timed as client-go times it.

Why this module exists: two replicas acting at once would bind the same capacity twice
(or write the same statuses twice), so only the Lease holder acts (``--leader-elect``).

The rules, each measured by this replica's own monotonic clock (``clock``), never by
comparing a time written by another replica with ours:

* A candidate remembers the Lease record it last saw (holder, ``renewTime``,
  ``resourceVersion``) and *when it saw it change*.  Another holder's lease counts as
  expired only once the record has not changed for ``leaseDurationSeconds`` since then.
  ``renewTime`` is written (from ``wall``, the wall clock) for people and other tools to
  read; a replica whose wall clock is minutes off neither steals a live lease nor keeps
  one it no longer renews.  A released lease (empty holder) is free at once.
* The holder renews every ``retry`` seconds.  :meth:`LeaderElector.leading` is True
  while the last successful write of the lease *started* less than ``renew_deadline``
  seconds ago (a standby waits ``leaseDurationSeconds`` from when it saw that write, and
  the deadline is shorter), so a component checks it before writing: once the deadline
  passed without a successful renewal, the lease may have been lost and nothing more is
  written (:mod:`liveprocess.fencing`).  :meth:`LeaderElector.hold` returns then.
* Writes carry the read ``resourceVersion``, so of two candidates exactly one wins
  (ConflictError for the other).

Defaults are KAI's: 15 s lease, 10 s renew deadline, 2 s retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubeapi.errors import ApiError, NotFoundError
from kubeapi.objects import Object
from kubeapi.protocol import Kube

log = logging.getLogger("podmuster.scheduler.leader")

LEASE_API = "coordination.k8s.io/v1"

Record = tuple[str, str, str]
"""What identifies one state of the lease: (holder, renewTime, resourceVersion)."""


def identity() -> str:
    """hostname + pid: unique per replica, readable in ``kubectl get lease``."""
    return f"{socket.gethostname()}_{os.getpid()}"


def _micro(moment: float) -> str:
    stamp = datetime.datetime.fromtimestamp(moment, datetime.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _record(lease: Mapping[str, Any]) -> Record:
    spec = lease.get("spec") or {}
    meta = lease.get("metadata") or {}
    return (
        str(spec.get("holderIdentity") or ""),
        str(spec.get("renewTime") or ""),
        str(meta.get("resourceVersion") or ""),
    )


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
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        if not 0 < retry < renew_deadline < lease:
            raise ValueError(
                f"Lease {namespace}/{name}: need 0 < retry ({retry}) < renew deadline "
                f"({renew_deadline}) < lease duration ({lease})"
            )
        self.api, self.namespace, self.identity, self.name = api, namespace, identity, name
        self.lease, self.renew_deadline, self.retry = lease, renew_deadline, retry
        self.clock, self.wall = clock, wall
        self._observed: Record | None = None
        self._observed_at = 0.0
        # monotonic start of the last successful acquire/renew; None while not leading
        self._renewed_at: float | None = None
        self._led = False

    def readiness(self) -> str | None:
        """A ``/readyz`` check: a standby is ready; a leader that lost the lease is not."""
        if self._led and not self.leading():
            return "lease lost (not renewed within the renew deadline)"
        return None

    def leading(self) -> bool:
        """True while writes are safe: the last successful write of the lease started
        less than ``renew_deadline`` ago by our monotonic clock."""
        return (
            self._renewed_at is not None and self.clock() - self._renewed_at < self.renew_deadline
        )

    def _spec(self, old: Mapping[str, Any] | None) -> Object:
        now = self.wall()
        ours = old is not None and old.get("holderIdentity") == self.identity
        transitions = int((old or {}).get("leaseTransitions") or 0)
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease),
            "acquireTime": (old or {}).get("acquireTime") if ours else _micro(now),
            "renewTime": _micro(now),
            "leaseTransitions": transitions if ours or old is None else transitions + 1,
        }

    def _observe(self, lease: Mapping[str, Any]) -> None:
        record = _record(lease)
        if record != self._observed:
            self._observed, self._observed_at = record, self.clock()

    def _held_by_other(self, spec: Mapping[str, Any]) -> bool:
        """True while another holder's record changed less than its duration ago."""
        holder = str(spec.get("holderIdentity") or "")
        if not holder or holder == self.identity:
            return False
        duration = float(spec.get("leaseDurationSeconds") or self.lease)
        return self._observed_at + duration > self.clock()

    def _won(self, started: float, stored: Mapping[str, Any]) -> bool:
        self._renewed_at, self._led = started, True
        self._observe(stored)
        return True

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True when we hold the lease afterwards."""
        started = self.clock()
        try:
            current = await self.api.get(LEASE_API, "Lease", self.namespace, self.name)
        except NotFoundError:
            body = {
                "apiVersion": LEASE_API,
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(None),
            }
            try:
                created = await self.api.create(body)
            except ApiError as exc:
                log.info("Lease %s/%s: create lost: %s", self.namespace, self.name, exc)
                return False
            return self._won(started, created)
        except ApiError as exc:
            log.warning("Lease %s/%s: read failed: %s", self.namespace, self.name, exc)
            return False
        self._observe(current)
        spec = current.get("spec") or {}
        if self._held_by_other(spec):
            if self._renewed_at is not None:
                log.error("Lease %s/%s: taken by %s", self.namespace, self.name,
                          spec.get("holderIdentity"))  # fmt: skip
            self._renewed_at = None  # someone else holds it: we certainly do not
            return False
        current["spec"] = self._spec(spec)
        try:
            stored = await self.api.replace(current)
        except ApiError as exc:
            log.info("Lease %s/%s: update lost: %s", self.namespace, self.name, exc)
            return False
        return self._won(started, stored)

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
        """Renew until ``stop`` is set; returns early once :meth:`leading` is False
        (no successful renewal within the renew deadline: leadership may be lost).
        A renewal that hangs is abandoned at the deadline."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.retry)
                return
            renewed_at = self._renewed_at
            if renewed_at is not None and self.leading():
                left = renewed_at + self.renew_deadline - self.clock()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.try_acquire_or_renew(), left)
            if not self.leading():
                self._renewed_at = None
                log.error("lost the lease", extra={"lease": self.name})
                return

    async def release(self) -> None:
        """Give the lease up so a standby takes over at once (only if still ours)."""
        self._renewed_at, self._led = None, False
        try:
            current = await self.api.get(LEASE_API, "Lease", self.namespace, self.name)
            spec = current.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            current["spec"] = {**spec, "holderIdentity": "", "leaseDurationSeconds": 1}
            await self.api.replace(current)
        except ApiError as exc:
            log.warning("Lease %s/%s: release failed: %s", self.namespace, self.name, exc)
