"""Every metric family podmuster exports, with KAI's names (``docs/metrics.md``).

Why this module exists: the scheduler, the binder and the queue controller write to
the same families; naming them once keeps KAI's names, labels and units (cores, bytes,
GB, milliseconds) in one place. The families are ``prometheus_client`` metrics on one
:class:`~prometheus_client.CollectorRegistry` per :class:`Metrics`, which also carries
the standard ``process_*`` and ``python_*`` collectors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from liveprocess.serving import new_registry

__all__ = ["LATENCY_BUCKETS_MS", "Metrics"]

LATENCY_BUCKETS_MS: Final = tuple(5.0 * 2**i for i in range(10))
"""KAI's exponential latency buckets: 5, 10, 20, ... 2560 ms."""

_MS = "in milliseconds"


class Metrics:
    """Every metric family podmuster exports, on one registry (KAI names, ``kai_`` prefix).

    Without a ``registry``, a new one with the standard collectors
    (:func:`liveprocess.serving.new_registry`).
    """

    def __init__(self, registry: CollectorRegistry | None = None, prefix: str = "kai_") -> None:
        self.registry = registry if registry is not None else new_registry()
        self._children = _Children()
        p, r = prefix, self.registry
        self.e2e = Gauge(f"{p}e2e_scheduling_latency_milliseconds", f"Last cycle {_MS}", registry=r)
        self.open_session = Gauge(
            f"{p}open_session_latency_milliseconds", f"Last session open {_MS}", registry=r
        )
        self.close_session = Gauge(
            f"{p}close_session_latency_milliseconds", f"Last session close {_MS}", registry=r
        )
        self.action = Gauge(
            f"{p}action_scheduling_latency_milliseconds",
            f"Last cycle's time per action {_MS}",
            ("action",),
            registry=r,
        )
        self.cycles = Counter("podmuster_scheduling_cycles_total", "Cycles run", registry=r)
        self.cycle_hist = Histogram(
            "podmuster_cycle_latency_milliseconds",
            f"Cycle duration {_MS}",
            buckets=LATENCY_BUCKETS_MS,
            registry=r,
        )
        self.scheduler_binds = Counter(
            "podmuster_bind_requests_created_total",
            "BindRequests the scheduler created",
            registry=r,
        )
        self.evicted_pods = Counter(
            f"{p}pod_group_evicted_pods_total",
            "Pods evicted, per PodGroup and action",
            ("podgroup", "uid", "nodepool", "action"),
            registry=r,
        )
        self.bind_latency = Histogram(
            f"{p}task_bind_latency_milliseconds",
            f"Binder time from BindRequest seen to pod bound {_MS}",
            buckets=LATENCY_BUCKETS_MS,
            registry=r,
        )
        self.binder_results = Counter(
            "podmuster_binder_binds_total",
            "Binder attempts by result (succeeded, retry, failed)",
            ("result",),
            registry=r,
        )
        self.gpu_reservations = Counter(
            "podmuster_binder_gpu_reservation_pods_total",
            "GPU reservation pods by event (created, deleted, timed_out, restored: re-created "
            "for running pods); sharing pods deleted because their reservation pod was gone "
            "(orphan_deleted)",
            ("event",),
            registry=r,
        )
        q = ("queue_name",)
        self.fair_share = {
            "gpu": Gauge(f"{p}queue_fair_share_gpu", "Fair share in GPUs", q, registry=r),
            "cpu": Gauge(
                f"{p}queue_fair_share_cpu_cores", "Fair share in CPU cores", q, registry=r
            ),
            "memory": Gauge(f"{p}queue_fair_share_memory_gb", "Fair share in GB", q, registry=r),
        }
        self.queue_info = Gauge(f"{p}queue_info", "1 for every queue", q, registry=r)
        self.deserved = {
            "gpu": Gauge(f"{p}queue_deserved_gpus", "Quota in GPUs (-1: unlimited)", q, registry=r),
            "cpu": Gauge(f"{p}queue_quota_cpu_cores", "Quota in CPU cores (-1)", q, registry=r),
            "memory": Gauge(f"{p}queue_quota_memory_bytes", "Quota in bytes (-1)", q, registry=r),
        }
        self.allocated = {
            "gpu": Gauge(f"{p}queue_allocated_gpus", "Allocated GPUs (subtree)", q, registry=r),
            "cpu": Gauge(f"{p}queue_allocated_cpu_cores", "Allocated CPU cores", q, registry=r),
            "memory": Gauge(f"{p}queue_allocated_memory_bytes", "Allocated bytes", q, registry=r),
        }

    def observe_cycle(
        self,
        total_ms: float,
        actions_ms: Mapping[str, float],
        open_session_ms: float | None,
        close_session_ms: float | None,
    ) -> None:
        self.e2e.set(total_ms)
        self.cycles.inc()
        self.cycle_hist.observe(total_ms)
        for action, ms in actions_ms.items():
            self.action.labels(action=action).set(ms)
        if open_session_ms is not None:
            self.open_session.set(open_session_ms)
        if close_session_ms is not None:
            self.close_session.set(close_session_ms)

    def set_fair_shares(self, shares: Mapping[str, Mapping[str, float]]) -> None:
        """Engine units in: GPUs, CPU millicores, memory bytes. Queues not in ``shares``
        are dropped from the output."""
        scale = {"gpu": 1.0, "cpu": 1e-3, "memory": 1e-9}
        for resource, gauge in self.fair_share.items():
            self._children.set_each(
                gauge, {q: a.get(resource, 0.0) * scale[resource] for q, a in shares.items()}
            )

    def set_queues(
        self,
        deserved: Mapping[str, Mapping[str, float]],
        allocated: Mapping[str, Mapping[str, float]],
    ) -> None:
        """Queue-controller gauges; amounts in GPUs, CPU cores, memory bytes (-1 stays)."""
        self._children.set_each(self.queue_info, dict.fromkeys(deserved, 1.0))
        for values, gauges in ((deserved, self.deserved), (allocated, self.allocated)):
            for resource, gauge in gauges.items():
                self._children.set_each(gauge, {q: a.get(resource, 0.0) for q, a in values.items()})

    def sample(self, name: str, **labels: str) -> float:
        """One sample's value by its exposed name (0 if never written); for tests."""
        value = self.registry.get_sample_value(name, labels)
        return 0.0 if value is None else value

    def render(self) -> str:
        """The Prometheus text format, as ``/metrics`` serves it."""
        return prometheus_client.generate_latest(self.registry).decode()


class _Children:
    """The children of one-label gauges by label value, so a cycle sets each queue's
    gauge without looking it up again (``labels()`` validates and locks every time) and
    removes the queues no longer listed (clearing and re-creating every child made a
    cycle's update 6x dearer at 1,000 queues: ``benchmarks/metrics_cost.py``)."""

    def __init__(self) -> None:
        self._of: dict[int, dict[str, Any]] = {}

    def set_each(self, gauge: Gauge, values: Mapping[str, float]) -> None:
        """Set ``gauge`` to exactly ``values`` (label value → amount)."""
        children = self._of.setdefault(id(gauge), {})
        for label in [label for label in children if label not in values]:
            gauge.remove(label)
            del children[label]
        for label, amount in values.items():
            child = children.get(label)
            if child is None:
                child = children[label] = gauge.labels(label)
            child.set(amount)
