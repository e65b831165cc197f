"""Prometheus metrics: a small registry, the text format, and KAI's metric names.

Why this module exists: operators alert on KAI's metric names (cycle and action
latency, evictions, queue fair share and allocation), and the time-based fair
share reads ``kai_queue_allocated_*`` back from Prometheus. Writing the
exposition format by hand (no client library) keeps the dependency list short;
the registry is pure, so every component and test renders it without a server.
:mod:`scheduler.metrics_http` serves it. Names and units: ``docs/metrics.md``.

The scheduler loop calls :func:`observe_cycle`, :func:`count_binds`,
:func:`count_evictions` and :func:`set_queue_shares`; the binder and the queue
controller use their own helpers below. All write to :data:`METRICS` unless a
test passes its own :class:`Metrics`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = [
    "LATENCY_BUCKETS_MS",
    "METRICS",
    "Metric",
    "Metrics",
    "Registry",
    "count_binds",
    "count_evictions",
    "observe_cycle",
    "set_queue_shares",
]

Type = Literal["counter", "gauge", "histogram"]
LATENCY_BUCKETS_MS: Final = tuple(5.0 * 2**i for i in range(10))
"""KAI's exponential latency buckets: 5, 10, 20, ... 2560 ms."""


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def _escape(value: str, quote: bool) -> str:
    out = value.replace("\\", "\\\\").replace("\n", "\\n")
    return out.replace('"', '\\"') if quote else out


def _labels(names: Sequence[str], values: Sequence[str], extra: str = "") -> str:
    parts = [f'{n}="{_escape(v, True)}"' for n, v in zip(names, values, strict=True)]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


@dataclass
class Metric:
    """One metric family; samples keyed by label values (in ``labels`` order)."""

    name: str
    help: str
    type: Type
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()
    _values: dict[tuple[str, ...], float] = field(default_factory=dict)
    _hist: dict[tuple[str, ...], list[float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _key(self, labels: Mapping[str, str]) -> tuple[str, ...]:
        if set(labels) != set(self.labels):
            raise ValueError(f"{self.name}: labels {sorted(labels)} != {sorted(self.labels)}")
        return tuple(str(labels[n]) for n in self.labels)

    def set(self, value: float, **labels: str) -> None:
        """Set a gauge."""
        with self._lock:
            self._values[self._key(labels)] = float(value)

    def inc(self, value: float = 1.0, **labels: str) -> None:
        """Add to a counter (or a gauge); a counter never goes down."""
        if self.type == "counter" and value < 0:
            raise ValueError(f"{self.name}: a counter cannot decrease")
        key = self._key(labels)
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + value

    def observe(self, value: float, **labels: str) -> None:
        """Record one histogram observation."""
        key = self._key(labels)
        with self._lock:
            state = self._hist.setdefault(key, [0.0] * (len(self.buckets) + 2))
            for i, bound in enumerate(self.buckets):
                if value <= bound:
                    state[i] += 1
            state[-2] += value
            state[-1] += 1

    def get(self, **labels: str) -> float:
        """A counter's or gauge's current value (0 if never written); for tests."""
        return self._values.get(self._key(labels), 0.0)

    def count(self, **labels: str) -> int:
        """A histogram's observation count; for tests."""
        state = self._hist.get(self._key(labels))
        return int(state[-1]) if state else 0

    def clear(self) -> None:
        """Drop every sample (e.g. before re-exporting the current set of queues)."""
        with self._lock:
            self._values.clear()
            self._hist.clear()

    def render(self) -> Iterable[str]:
        yield f"# HELP {self.name} {_escape(self.help, False)}"
        yield f"# TYPE {self.name} {self.type}"
        with self._lock:
            values = sorted(self._values.items())
            hist = sorted((k, list(v)) for k, v in self._hist.items())
        for key, value in values:
            yield f"{self.name}{_labels(self.labels, key)} {_number(value)}"
        for key, state in hist:
            for bound, count in zip(self.buckets, state, strict=False):
                le = f'le="{_number(bound)}"'
                yield f"{self.name}_bucket{_labels(self.labels, key, le)} {_number(count)}"
            inf = _labels(self.labels, key, 'le="+Inf"')
            yield f"{self.name}_bucket{inf} {_number(state[-1])}"
            yield f"{self.name}_sum{_labels(self.labels, key)} {_number(state[-2])}"
            yield f"{self.name}_count{_labels(self.labels, key)} {_number(state[-1])}"


class Registry:
    """Metric families by name, rendered in registration order."""

    def __init__(self) -> None:
        self._metrics: dict[str, Metric] = {}

    def add(
        self,
        name: str,
        help: str,
        type: Type,
        labels: Sequence[str] = (),
        buckets: Sequence[float] = (),
    ) -> Metric:
        if name in self._metrics:
            raise ValueError(f"metric {name} registered twice")
        metric = Metric(name, help, type, tuple(labels), tuple(sorted(buckets)))
        self._metrics[name] = metric
        return metric

    def __getitem__(self, name: str) -> Metric:
        return self._metrics[name]

    def render(self) -> str:
        """The Prometheus text exposition format (version 0.0.4)."""
        lines: list[str] = []
        for metric in self._metrics.values():
            lines.extend(metric.render())
        return "\n".join(lines) + "\n"


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


METRICS: Final = Metrics(Registry())
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
    metrics.evicted_pods.inc(n, podgroup=podgroup, uid=uid, nodepool=nodepool, action=action)


def set_queue_shares(
    fair_share: Mapping[str, Mapping[str, float]],
    *,
    metrics: Metrics = METRICS,
) -> None:
    """Each queue's fair share this cycle: ``{queue: {gpu, cpu (millicores), memory (bytes)}}``.

    Queues no longer listed disappear from the output.
    """
    metrics.set_fair_shares(fair_share)
