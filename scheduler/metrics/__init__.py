"""Prometheus metrics with KAI's metric names, on ``prometheus_client``.

Why this module exists: operators alert on KAI's metric names (cycle and action
latency, evictions, queue fair share and allocation), and the time-based fair
share reads ``kai_queue_allocated_*`` back from Prometheus. ``families`` names every
metric; :mod:`liveprocess.serving` serves the registry. Names and units:
``docs/metrics.md``.

The scheduler loop calls :func:`observe_result` once per cycle (or the parts:
:func:`observe_cycle`, :func:`count_binds`, :func:`count_evictions`,
:func:`set_queue_shares`); the binder and the queue
controller use their own helpers below. All write to :data:`METRICS` unless a
test passes its own :class:`Metrics`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from scheduler.metrics.families import Metrics

if TYPE_CHECKING:  # the binder and controllers never load the engine
    from scheduler.cycle import CycleResult

__all__ = [
    "METRICS",
    "count_binds",
    "count_evictions",
    "observe_cycle",
    "observe_result",
    "set_queue_shares",
]

METRICS: Final = Metrics()
"""The process-wide metrics every component writes to and the endpoint serves."""


def observe_cycle(
    total_ms: float,
    actions_ms: Mapping[str, float] | None = None,
    *,
    open_session_ms: float | None = None,
    close_session_ms: float | None = None,
    metrics: Metrics = METRICS,
) -> None:
    """One scheduling cycle's latencies in milliseconds (whole cycle, per action)."""
    metrics.observe_cycle(total_ms, actions_ms or {}, open_session_ms, close_session_ms)


def count_binds(n: int, *, metrics: Metrics = METRICS) -> None:
    """``n`` BindRequests created by the scheduler this cycle."""
    if n:
        metrics.scheduler_binds.inc(n)


def count_evictions(
    n: int = 1,
    *,
    action: str,
    podgroup: str = "",
    uid: str = "",
    nodepool: str = "default",
    metrics: Metrics = METRICS,
) -> None:
    """``n`` pods of one PodGroup evicted by ``action`` (reclaim, preempt, ...)."""
    metrics.evicted_pods.labels(podgroup=podgroup, uid=uid, nodepool=nodepool, action=action).inc(n)


def set_queue_shares(
    fair_share: Mapping[str, Mapping[str, float]],
    *,
    metrics: Metrics = METRICS,
) -> None:
    """Each queue's fair share this cycle: ``{queue: {gpu, cpu (millicores), memory (bytes)}}``.

    Queues no longer listed disappear from the output.
    """
    metrics.set_fair_shares(fair_share)


def observe_result(
    result: CycleResult,
    total_ms: float,
    actions_ms: Mapping[str, float] | None = None,
    *,
    open_session_ms: float | None = None,
    close_session_ms: float | None = None,
    metrics: Metrics = METRICS,
) -> None:
    """Everything one cycle reports, in one call from the live loop.

    Latencies (:func:`observe_cycle`), BindRequests (``len(result.binds)``),
    evictions per action (the victim's PodGroup label is left empty: a
    ``CycleResult`` eviction names the pod only) and the queues' fair shares.
    """
    observe_cycle(
        total_ms,
        result.action_ms if actions_ms is None else actions_ms,
        open_session_ms=open_session_ms,
        close_session_ms=close_session_ms,
        metrics=metrics,
    )
    count_binds(len(result.binds), metrics=metrics)
    per_action: dict[str, int] = {}
    for eviction in result.evictions:
        per_action[eviction.action] = per_action.get(eviction.action, 0) + 1
    for action, n in per_action.items():
        count_evictions(n, action=action, metrics=metrics)
    set_queue_shares(
        {
            q.name: dict(zip(("gpu", "cpu", "memory"), q.fair_share, strict=True))
            for q in result.queues
        },
        metrics=metrics,
    )
