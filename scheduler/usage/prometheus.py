"""The Prometheus usage source: KAI's queries over its queue allocation metrics.

Why this module exists: where a Prometheus scrapes KAI's queue controller (or
ours, which publishes the same ``kai_queue_allocated_*`` gauges with a
``queue_name`` label) and kube-state-metrics, queue usage is read from it as
KAI v0.17 does. For each resource two instant queries run at ``now``:

    sum_over_time((ALLOC * DECAY)[W:R])      one value per queue_name
    sum_over_time((CAPACITY * DECAY)[W:R])   one value

with DECAY = ``0.5^((NOW - time()) / H)`` when a half life H is set, W the window
(``windowSize`` for a sliding window, the time since the latest reset for a
tumbling or cron window), R the ``queryResolution``; the queue's usage is the
first over the second. These are Riemann sums of :mod:`scheduler.usage.window`'s
integrals, so every source means the same. This is the only module that talks
to Prometheus (HTTP GET ``/api/v1/query``, standard library only); it is called
by the live scheduler's refresh, never inside a cycle.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from crds.errors import shown
from scheduler.usage.params import UsageParams
from scheduler.usage.window import Vector, window_start

QUEUE_LABEL = "queue_name"

Opener = Callable[[str, float], bytes]
"""GET a URL with a timeout in seconds and return the body (tests pass none: a real server)."""


class UsageQueryError(RuntimeError):
    """Prometheus could not answer; the message names the query."""


def _get(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        body: bytes = response.read()
    return body


def _seconds(value: float) -> str:
    return f"{max(1, round(value))}s"


def decayed(expression: str, params: UsageParams, now: float) -> str:
    """``expression`` weighted by KAI's decay factor (unchanged with no half life)."""
    if params.half_life_s is None:
        return expression
    return f"(({expression}) * (0.5^(({int(now)} - time()) / {params.half_life_s:f})))"


def window_query(expression: str, params: UsageParams, now: float) -> str | None:
    """The instant query summing ``expression`` over the window; None for an empty window."""
    length = now - window_start(params, now)
    if length <= 0:
        return None
    return (
        f"sum_over_time(({decayed(expression, params, now)})"
        f"[{_seconds(length)}:{_seconds(params.query_resolution_s)}])"
    )


class PrometheusUsage:
    """Reads normalised queue usage from the Prometheus at ``url``."""

    def __init__(self, url: str, params: UsageParams, opener: Opener = _get) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"usage Prometheus URL must be http(s), got {shown(url)}")
        self.url = url.rstrip("/")
        self.params = params
        self.opener = opener

    def query(self, promql: str, now: float) -> list[dict[str, Any]]:
        """The samples of an instant vector query at ``now``."""
        arguments = urllib.parse.urlencode({"query": promql, "time": f"{now:.3f}"})
        url = f"{self.url}/api/v1/query?{arguments}"
        try:
            body = self.opener(url, self.params.query_timeout_s)
        except urllib.error.HTTPError as exc:
            body = exc.read()  # Prometheus explains a 400/422 in its JSON body
        except (OSError, ValueError) as exc:
            raise UsageQueryError(f"querying {self.url} for {promql}: {exc}") from None
        try:
            answer = json.loads(body)
        except ValueError:
            raise UsageQueryError(f"{self.url} answered {promql} with no JSON") from None
        if not isinstance(answer, dict) or answer.get("status") != "success":
            error = answer.get("error", "no status") if isinstance(answer, dict) else answer
            raise UsageQueryError(f"{self.url} refused {promql}: {error}")
        data = answer.get("data") or {}
        if data.get("resultType") != "vector":
            raise UsageQueryError(
                f"{promql}: expected a vector, got {shown(data.get('resultType'))}"
            )
        result: list[dict[str, Any]] = data.get("result") or []
        return result

    def fetch(self, now: float) -> dict[str, Vector]:
        """Every queue's usage at ``now``: allocation sums over capacity sums, per resource."""
        usage: dict[str, list[float]] = {}
        for r in range(3):
            capacity_query = window_query(self.params.capacity_metrics[r], self.params, now)
            allocation_query = window_query(self.params.allocation_metrics[r], self.params, now)
            if capacity_query is None or allocation_query is None:
                return {}  # the window has just been reset: nobody has used anything yet
            capacity_samples = self.query(capacity_query, now)
            if not capacity_samples:
                raise UsageQueryError(f"no data for the cluster capacity: {capacity_query}")
            capacity = _value(capacity_samples[0], capacity_query)
            for sample in self.query(allocation_query, now):
                queue = (sample.get("metric") or {}).get(QUEUE_LABEL)
                if not queue:
                    continue
                amount = _value(sample, allocation_query)
                share = amount / capacity if capacity > 0 else 0.0
                usage.setdefault(str(queue), [0.0, 0.0, 0.0])[r] = share
        return {queue: (v[0], v[1], v[2]) for queue, v in sorted(usage.items())}


def _value(sample: dict[str, Any], promql: str) -> float:
    try:
        return float(sample["value"][1])
    except (KeyError, IndexError, TypeError, ValueError):
        raise UsageQueryError(f"{promql}: a sample without a number: {sample!r}") from None
