"""Metric families and the Prometheus text exposition format, by hand.

Why this module exists: one GET of ``/metrics`` needs counters, gauges and
histograms with labels rendered as text (version 0.0.4); a client library for
that would be a new dependency. Pure and thread-safe: no I/O here.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = ["LATENCY_BUCKETS_MS", "Metric", "Registry"]

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
