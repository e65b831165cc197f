"""Queue usage for the live scheduler's snapshots, from Prometheus or its own record.

Why this module exists: the cycle is a pure function of its snapshot, so time-based
fair share's usage must be in the snapshot (``ClusterSnapshot.queue_usage``) before
the cycle runs. This is the edge that puts it there:

* ``prometheus``: a task refreshes the usage every ``fetchInterval`` off the event
  loop (KAI's ``UsageLister``); each cycle takes the latest answer. A failed query is
  logged and the previous answer kept; an answer older than ``stalenessPeriod`` is
  still used, with a warning, as KAI does. Before the first answer the usage is empty.
* ``builtin``: each cycle first records what the queues hold at the snapshot's time
  (:func:`scheduler.usage.recording.record_snapshot`), then reads the usage from the
  record, computed again once per ``fetchInterval``. With ``historyFile`` the record is
  loaded at start and written back at most once per ``fetchInterval`` (and at shutdown),
  so a restart keeps the window.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from scheduler.api.snapshot import ClusterSnapshot
from scheduler.usage.history import UsageHistory
from scheduler.usage.params import UsageDBConfig
from scheduler.usage.prometheus import PrometheusUsage, UsageQueryError
from scheduler.usage.recording import record_snapshot
from scheduler.usage.window import Vector

log = logging.getLogger("podmuster.scheduler")


class UsageFeed:
    """The configured usage source, as the loop sees it."""

    def __init__(self, config: UsageDBConfig) -> None:
        self.config = config
        self.params = config.params
        self.latest: dict[str, Vector] = {}
        self.fetched_at: float | None = None
        self.history: UsageHistory | None = None
        self.prometheus: PrometheusUsage | None = None
        self.saved_at = 0.0
        self.recorded = False  # a replica that never ran a cycle must not overwrite the file
        if config.client_type == "prometheus":
            self.prometheus = PrometheusUsage(config.connection_string, config.params)
        else:
            self.history = UsageHistory(config.params)
            if config.history_file:
                try:
                    self.history = UsageHistory.load(config.history_file, config.params)
                except ValueError as exc:  # a broken record: start a fresh one, say so
                    log.error("%s; starting an empty usage record", exc)

    def refresh_once(self, now: float) -> None:
        """Ask Prometheus once; keep the previous answer if it fails."""
        if self.prometheus is None:
            return
        try:
            self.latest = self.prometheus.fetch(now)
            self.fetched_at = now
        except UsageQueryError as exc:
            log.error("failed to fetch queue usage: %s", exc)

    async def refresh(self, stop: asyncio.Event) -> None:
        """Refresh every ``fetchInterval`` until ``stop`` is set (Prometheus only)."""
        while self.prometheus is not None and not stop.is_set():
            await asyncio.to_thread(self.refresh_once, time.time())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.params.fetch_interval_s)

    def fill(self, snapshot: ClusterSnapshot) -> None:
        """Put the usage at ``snapshot.now`` into the snapshot (recording it first if builtin)."""
        now = snapshot.now
        if self.history is not None:
            record_snapshot(self.history, snapshot)
            self.recorded = True
            snapshot.queue_usage = self.history.refreshed_usage(now)
            if self.config.history_file and now - self.saved_at >= self.params.fetch_interval_s:
                self.save(now)
            return
        if self.fetched_at is not None and now - self.fetched_at > self.params.staleness_s:
            log.warning(
                "queue usage is stale: last fetched %.0f s ago (stalenessPeriod %.0f s)",
                now - self.fetched_at,
                self.params.staleness_s,
            )
        snapshot.queue_usage = dict(self.latest)

    def save(self, now: float) -> None:
        """Write the built-in record to ``historyFile``; a failure is logged, not fatal."""
        if self.history is None or not self.config.history_file or not self.recorded:
            return
        try:
            self.history.save(self.config.history_file)
            self.saved_at = now
        except OSError as exc:
            log.error("cannot write the usage history %s: %s", self.config.history_file, exc)
