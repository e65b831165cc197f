"""Every metric family podmuster exports, with KAI's names (``docs/metrics.md``).

Why this module exists: the scheduler, the binder and the queue controller
write to the same families; naming them once keeps KAI's names, labels and
units (cores, bytes, GB, milliseconds) in one place.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.metrics.registry import LATENCY_BUCKETS_MS, Registry

__all__ = ["Metrics"]

_MS = "in milliseconds"


class Metrics:
    """Every metric family podmuster exports, on one registry (KAI names, ``kai_`` prefix)."""

    def __init__(self, registry: Registry, prefix: str = "kai_") -> None:
        self.registry = registry
        p = prefix
        add = registry.add
        self.e2e = add(f"{p}e2e_scheduling_latency_milliseconds", f"Last cycle {_MS}", "gauge")
        self.open_session = add(
            f"{p}open_session_latency_milliseconds", f"Last session open {_MS}", "gauge"
        )
        self.close_session = add(
            f"{p}close_session_latency_milliseconds", f"Last session close {_MS}", "gauge"
        )
        self.action = add(
            f"{p}action_scheduling_latency_milliseconds",
            f"Last cycle's time per action {_MS}",
            "gauge",
            ("action",),
        )
        self.cycles = add("podmuster_scheduling_cycles_total", "Cycles run", "counter")
        self.cycle_hist = add(
            "podmuster_cycle_latency_milliseconds",
            f"Cycle duration {_MS}",
            "histogram",
            buckets=LATENCY_BUCKETS_MS,
        )
        self.scheduler_binds = add(
            "podmuster_bind_requests_created_total", "BindRequests the scheduler created", "counter"
        )
        self.evicted_pods = add(
            f"{p}pod_group_evicted_pods_total",
            "Pods evicted, per PodGroup and action",
            "counter",
            ("podgroup", "uid", "nodepool", "action"),
        )
        self.bind_latency = add(
            f"{p}task_bind_latency_milliseconds",
            f"Binder time from BindRequest seen to pod bound {_MS}",
            "histogram",
            buckets=LATENCY_BUCKETS_MS,
        )
        self.binder_results = add(
            "podmuster_binder_binds_total",
            "Binder attempts by result (succeeded, retry, failed)",
            "counter",
            ("result",),
        )
        self.gpu_reservations = add(
            "podmuster_binder_gpu_reservation_pods_total",
            "GPU reservation pods by event (created, deleted, timed_out); sharing pods "
            "deleted because their reservation pod was gone (orphan_deleted)",
            "counter",
            ("event",),
        )
        q = ("queue_name",)
        self.fair_share = {
            "gpu": add(f"{p}queue_fair_share_gpu", "Fair share in GPUs", "gauge", q),
            "cpu": add(f"{p}queue_fair_share_cpu_cores", "Fair share in CPU cores", "gauge", q),
            "memory": add(f"{p}queue_fair_share_memory_gb", "Fair share in GB", "gauge", q),
        }
        self.queue_info = add(f"{p}queue_info", "1 for every queue", "gauge", q)
        self.deserved = {
            "gpu": add(f"{p}queue_deserved_gpus", "Quota in GPUs (-1: unlimited)", "gauge", q),
            "cpu": add(f"{p}queue_quota_cpu_cores", "Quota in CPU cores (-1)", "gauge", q),
            "memory": add(f"{p}queue_quota_memory_bytes", "Quota in bytes (-1)", "gauge", q),
        }
        self.allocated = {
            "gpu": add(f"{p}queue_allocated_gpus", "Allocated GPUs (subtree)", "gauge", q),
            "cpu": add(f"{p}queue_allocated_cpu_cores", "Allocated CPU cores", "gauge", q),
            "memory": add(f"{p}queue_allocated_memory_bytes", "Allocated bytes", "gauge", q),
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
            self.action.set(ms, action=action)
        if open_session_ms is not None:
            self.open_session.set(open_session_ms)
        if close_session_ms is not None:
            self.close_session.set(close_session_ms)

    def set_fair_shares(self, shares: Mapping[str, Mapping[str, float]]) -> None:
        """Engine units in: GPUs, CPU millicores, memory bytes."""
        scale = {"gpu": 1.0, "cpu": 1e-3, "memory": 1e-9}
        for resource, gauge in self.fair_share.items():
            gauge.clear()
            for queue, amounts in shares.items():
                gauge.set(amounts.get(resource, 0.0) * scale[resource], queue_name=queue)

    def set_queues(
        self,
        deserved: Mapping[str, Mapping[str, float]],
        allocated: Mapping[str, Mapping[str, float]],
    ) -> None:
        """Queue-controller gauges; amounts in GPUs, CPU cores, memory bytes (-1 stays)."""
        self.queue_info.clear()
        for queue in deserved:
            self.queue_info.set(1, queue_name=queue)
        for values, gauges in ((deserved, self.deserved), (allocated, self.allocated)):
            for resource, gauge in gauges.items():
                gauge.clear()
                for queue, amounts in values.items():
                    gauge.set(amounts.get(resource, 0.0), queue_name=queue)
