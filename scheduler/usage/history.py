"""The built-in usage source: allocation per queue recorded over time, in memory or a file.

Why this module exists: KAI reads queue usage from a Prometheus; a cluster
without one (and every simulation) still deserves time-based fair share. The
scheduler records, after each cycle, what each queue holds and the cluster's
capacity (:meth:`UsageHistory.record`); :meth:`UsageHistory.usage` answers with
:func:`scheduler.usage.window.normalised_usage` over the configured window.
Samples that no window can reach again are dropped, and consecutive equal
samples are kept once, so the record stays small. ``to_json``/``from_json`` let
the live scheduler keep it in a file across restarts (``historyFile``).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from typing import Any

from scheduler.usage.params import UsageParams
from scheduler.usage.window import UsageSample, Vector, normalised_usage, window_start

FORMAT_VERSION = 1


class UsageHistory:
    """Samples of (time, allocation per queue, capacity), oldest first."""

    def __init__(self, params: UsageParams, samples: list[UsageSample] | None = None) -> None:
        self.params = params
        self.samples: list[UsageSample] = samples or []
        self._cached: tuple[float, dict[str, Vector]] | None = None

    def record(self, at: float, allocation: Mapping[str, Vector], capacity: Vector) -> None:
        """Note what holds from ``at`` on; a sample at an earlier time than the last is ignored.

        At most one sample is kept per ``queryResolution`` step (1m), as Prometheus samples
        its gauges: a change less than a step after the last sample replaces that
        sample's values, so it counts from the step's start. A week's window then holds
        at most 10,080 samples however often the scheduler cycles.
        """
        if self.samples:
            last = self.samples[-1]
            if at < last.at:
                return
            if last.allocation == allocation and last.capacity == capacity:
                return
            if at - last.at < self.params.query_resolution_s:
                self.samples[-1] = UsageSample(last.at, dict(allocation), capacity)
                return
        self.samples.append(UsageSample(at, dict(allocation), capacity))
        self._prune(at)

    def _prune(self, now: float) -> None:
        """Drop samples that end before any window from ``now`` on can start."""
        start = min(window_start(self.params, now), now - self.params.window_size_s)
        keep = 0
        while keep + 1 < len(self.samples) and self.samples[keep + 1].at <= start:
            keep += 1
        if keep:
            del self.samples[:keep]

    def usage(self, now: float) -> dict[str, Vector]:
        """Each queue's normalised usage over the window ending at ``now``."""
        return normalised_usage(self.samples, now, self.params)

    def refreshed_usage(self, now: float) -> dict[str, Vector]:
        """:meth:`usage`, computed again only once per ``fetchInterval`` (as KAI refreshes).

        Between refreshes the last answer is returned, so a scheduler cycling every
        second does not sum a week of samples every second.
        """
        cached = self._cached
        if cached is None or not 0 <= now - cached[0] < self.params.fetch_interval_s:
            cached = self._cached = (now, self.usage(now))
        return dict(cached[1])

    def to_json(self) -> dict[str, Any]:
        return {
            "version": FORMAT_VERSION,
            "samples": [
                {
                    "at": s.at,
                    "capacity": list(s.capacity),
                    "allocation": {q: list(v) for q, v in s.allocation.items()},
                }
                for s in self.samples
            ],
        }

    @classmethod
    def from_json(cls, data: Any, params: UsageParams, source: str) -> UsageHistory:
        """The history written by :meth:`to_json`; ``ValueError`` naming ``source`` otherwise."""
        try:
            if data.get("version") != FORMAT_VERSION:
                raise ValueError(f"unknown version {data.get('version')!r}")
            samples = [
                UsageSample(
                    float(s["at"]),
                    {str(q): _vector(v) for q, v in s["allocation"].items()},
                    _vector(s["capacity"]),
                )
                for s in data["samples"]
            ]
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{source}: not a usage history: {exc}") from None
        samples.sort(key=lambda s: s.at)
        return cls(params, samples)

    def save(self, path: str) -> None:
        """Write the history to ``path`` atomically (a temporary file, then a rename)."""
        directory = os.path.dirname(os.path.abspath(path))
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=".usage-")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(self.to_json(), out)
        os.replace(temporary, path)

    @classmethod
    def load(cls, path: str, params: UsageParams) -> UsageHistory:
        """The history in ``path``, or an empty one if the file does not exist yet."""
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except FileNotFoundError:
            return cls(params)
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: cannot read the usage history: {exc}") from None
        return cls.from_json(data, params, path)


def _vector(raw: Any) -> Vector:
    gpu, cpu, memory = (float(v) for v in raw)
    return (gpu, cpu, memory)
