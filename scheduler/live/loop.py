"""The live scheduler's loop: sync informers, then snapshot → run_cycle → commit, every period.

Why this module exists: KAI runs ``runOnce`` every ``schedulePeriod`` once its informers
have synced (§5.1); this is that loop around the pure engine, plus what a process in a
cluster needs: optional Lease leader election (a replica that loses the lease stops, and
writes nothing once the lease may be lost), the cycle in a worker thread (the event loop
keeps renewing the lease), ``/readyz`` checks (informers synced, lease held), graceful
shutdown on SIGTERM/SIGINT (the current commit finishes, the lease is released), and one
log line per cycle (JSON objects with ``--log-format json``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from crds.documents import gc_paused
from kubeapi.protocol import KubeController
from liveprocess.fencing import FencedWrites
from liveprocess.leader import LeaderElector, identity
from liveprocess.serving import READINESS, Readiness
from scheduler import metrics
from scheduler.cache.cluster_cache import ClusterCache, SnapshotResult
from scheduler.cache.pools import NodePool
from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult, EarlyBinds, run_cycle
from scheduler.live.collector import Collector
from scheduler.live.committing import BindStream, Committer
from scheduler.live.informers import NUMA_WATCHED, WATCHED, Informers
from scheduler.live.usage_feed import UsageFeed

log = logging.getLogger("podmuster.scheduler")

FLUSH_GRACE_SECONDS = 5.0
"""At shutdown, how long queued PodGroup annotations may take to be written."""

EARLY_BIND_POLL_SECONDS = 0.01
"""In the first cycle, how often allocate's binds are taken while the cycle decides."""


@dataclass(frozen=True, slots=True)
class Options:
    config: SchedulerConfig
    schedule_period: float = 1.0
    leader_elect: bool = False
    lease_namespace: str = "default"
    lease_name: str = ""  # default: the node pool's (podmuster-scheduler[-POOL])
    identity: str = ""
    backoff_limit: int = 3
    direct_bind: bool = False
    pool: NodePool = field(default_factory=NodePool)
    # A process of its own: move everything alive after the first sync out of the
    # collector's sight, and what survives each cycle after it (scheduler.live.collector;
    # in-process tests leave it off: the rest of their process would stay frozen).
    freeze_after_sync: bool = False


async def run(
    api: KubeController,
    options: Options,
    stop: asyncio.Event,
    *,
    elector: LeaderElector | None = None,
    readiness: Readiness = READINESS,
) -> int:
    """Run until ``stop`` is set (0) or the lease is lost (1).

    With ``options.leader_elect`` (or an ``elector`` given), cycles run only while the
    lease is held and every write goes through :class:`FencedWrites`.  The snapshot and
    the cycle run in a worker thread, so the event loop keeps renewing the lease (and
    reading watch events, held until the commit is done) however long a cycle takes.
    """
    if elector is None and options.leader_elect:
        elector = LeaderElector(
            api,
            options.lease_namespace,
            options.identity or identity(),
            name=options.lease_name or options.pool.lease_name,
        )
    cache = ClusterCache(options.config.scheduler_name, strict=False)
    watched = WATCHED + NUMA_WATCHED if options.config.numa else WATCHED
    informers = Informers(api, cache, pool=options.pool, watched=watched)
    writer: KubeController = api if elector is None else FencedWrites(api, elector.leading)
    committer = Committer(
        writer, informers, backoff_limit=options.backoff_limit, direct_bind=options.direct_bind
    )
    lost = asyncio.Event()
    holding: asyncio.Task[None] | None = None
    checks: list[int] = []
    if elector is not None:
        checks.append(readiness.add("leader election", elector.readiness))
        if not await elector.acquire(stop):
            _remove(readiness, checks)
            return 0
        holding = asyncio.create_task(_hold(elector, stop, lost))
    checks.append(readiness.add("informers", lambda: None if informers.synced else "not synced"))
    watching = asyncio.create_task(informers.run(), name="informers")
    usage_db = options.config.usage_db
    feed = None if usage_db is None else UsageFeed(usage_db)
    refreshing = None if feed is None else asyncio.create_task(feed.refresh(stop), name="usage")

    # the pods whose bind the API server refused in the last commit: an input of the next
    # cycle, as usage is (stale-gang eviction does not count them to their gangs)
    bind_failed: frozenset[str] = frozenset()

    def decide(early: EarlyBinds | None) -> tuple[SnapshotResult, CycleResult, float]:
        snapshot = cache.snapshot(time.time(), options.config.stuck_in_releasing_s)
        if feed is not None:  # time-based fair share: usage is an input of the cycle
            feed.fill(snapshot.snapshot)
        snapshot.snapshot.bind_failed = bind_failed
        decided = time.monotonic()
        result = run_cycle(snapshot.snapshot, options.config, explain=True, early=early)
        return snapshot, result, decided

    def may_write() -> bool:
        if elector is None or elector.leading():
            return True
        lost.set()
        return False

    try:
        with gc_paused():  # the lists build tens of thousands of fresh, acyclic objects
            await _until(informers.wait_synced(), stop)
        collector = Collector() if options.freeze_after_sync else None
        if collector is not None:
            collector.start()  # the listed cache: later collections need not walk it again
        log.info("informers synced", extra={"objects": sum(map(len, informers.objects.values()))})
        cold = True  # the first cycle binds as allocate decides (docs/architecture.md)
        while not stop.is_set() and not lost.is_set():
            if watching.done():  # an informer died of a bug: stop rather than serve stale
                watching.result()
            started = time.monotonic()
            # Changes arriving while the cycle decides and its writes are in flight are
            # held and applied after them; the collector waits too: the writes' garbage
            # is freed by reference counting, and a full collection would walk every
            # held change again and again (about 40% of the commit's CPU). With the
            # collector settled between cycles it waits from the snapshot to the settle,
            # which walks what the cycle left once (scheduler.live.collector).
            pause = contextlib.nullcontext() if collector is None else gc_paused()
            with informers.deferred(), pause:
                early, stream = (EarlyBinds(), committer.stream()) if cold else (None, None)
                cold = False
                snapshot, result, decided = await _deciding(decide, early, stream, may_write)
                informers.note_dropped_queues(snapshot.snapshot.queues.dropped)
                committing = time.monotonic()
                if not may_write():  # fenced: the lease may be another replica's now
                    if stream is not None:
                        stream.cancel()
                    log.error("cycle not committed: the lease may have been lost")
                    break
                with gc_paused():
                    report = await committer.commit(result, stream)
                bind_failed = frozenset(report.bind_failures)
                if collector is not None:
                    collector.settle()
            metrics.observe_result(
                result,
                (time.monotonic() - started) * 1000,
                open_session_ms=(decided - started) * 1000,
                close_session_ms=(time.monotonic() - committing) * 1000,
            )
            log.info(
                "cycle",
                extra={
                    "seconds": round(time.monotonic() - started, 4),
                    "decide_seconds": round(committing - started, 4),
                    "binds": len(result.binds),
                    "early_binds": len(stream.sent) if stream is not None else 0,
                    "deferred_actions": list(result.deferred),
                    "pipelined": len(result.pipelined),
                    "evictions": len(result.evictions),
                    "pending_groups": sum(o.outcome == "pending" for o in result.pod_groups),
                    "held_groups": sum(o.outcome == "held" for o in result.pod_groups),
                    "invalid_objects": len(snapshot.errors),
                    "bind_requests": report.bind_requests,
                    "bound": report.bound,
                    "refused_binds": report.refused,
                    "ungated": report.ungated,
                    "failed_writes": report.failed,
                    "failed_binds": len(report.bind_failures),
                },
            )
            remaining = options.schedule_period - (time.monotonic() - started)
            if committer.pending_annotations and remaining > 0 and may_write():
                await _until(_flush(committer, remaining), stop, lost)
                remaining = options.schedule_period - (time.monotonic() - started)
            await _until(asyncio.sleep(max(remaining, 0.0)), stop, lost)
        if committer.pending_annotations and may_write():
            await _flush(committer, FLUSH_GRACE_SECONDS)
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
        if refreshing is not None:
            refreshing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await refreshing
        if feed is not None:
            feed.save(time.time())
        if holding is not None:
            stop.set()
            await holding
        if elector is not None and not lost.is_set():
            await elector.release()
        _remove(readiness, checks)
    return 1 if lost.is_set() else 0


async def _deciding(
    decide: Callable[[EarlyBinds | None], tuple[SnapshotResult, CycleResult, float]],
    early: EarlyBinds | None,
    stream: BindStream | None,
    may_write: Callable[[], bool],
) -> tuple[SnapshotResult, CycleResult, float]:
    """Run ``decide`` in a worker thread; with ``early``, send allocate's binds meanwhile."""
    if early is None or stream is None:
        return await asyncio.to_thread(decide, early)
    deciding = asyncio.ensure_future(asyncio.to_thread(decide, early))
    with gc_paused():  # the writers' garbage, as in the commit
        while not deciding.done():
            await asyncio.wait([deciding], timeout=EARLY_BIND_POLL_SECONDS)
            if may_write():
                stream.add(early.take())
    return deciding.result()


def _remove(readiness: Readiness, tokens: list[int]) -> None:
    for token in tokens:
        readiness.remove(token)


async def _flush(committer: Committer, seconds: float) -> None:
    """Start queued PodGroup annotation writes for ``seconds`` (the rest stay queued)."""
    await committer.flush(seconds)


async def _hold(elector: LeaderElector, stop: asyncio.Event, lost: asyncio.Event) -> None:
    await elector.hold(stop)
    if not stop.is_set():
        lost.set()


async def _until(work: object, *events: asyncio.Event) -> None:
    """Await ``work`` unless one of ``events`` is set first."""
    task = asyncio.ensure_future(work)  # type: ignore[call-overload]
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    await asyncio.wait([task, *waiters], return_when=asyncio.FIRST_COMPLETED)
    for pending in [task, *waiters]:
        pending.cancel()
