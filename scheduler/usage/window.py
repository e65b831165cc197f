"""Usage windows and half-life decay: the arithmetic of time-based fair share.

Why this module exists: whatever the source (the scheduler's own record, a
simulation, a Prometheus), a queue's usage means the same number, KAI's:

    u(q, r) = ∫ alloc(q, r, t) · d(t) dt  /  ∫ capacity(r, t) · d(t) dt

both integrals over the window [start, now], with d(t) = 0.5^((now - t) / h)
for a half life h, or 1 with no decay. So u is the decayed share of the
cluster's capacity the queue held over the window: 8 of 16 GPUs for the whole
window gives 0.5, whatever the window's length. The window starts at
``now - windowSize`` (sliding), at the latest multiple of ``windowSize`` after
``tumblingWindowStartTime`` (tumbling), or at the cron expression's latest
firing (cron). Allocation and capacity are step functions: a sample holds
until the next one (the last until now), so the integrals are exact sums of
:func:`decayed_duration`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduler.usage import cron
from scheduler.usage.params import UsageParams

Vector = tuple[float, float, float]
"""GPU, CPU, memory: in any units, as long as allocation and capacity share them."""


@dataclass(frozen=True, slots=True)
class UsageSample:
    """What each queue held, and the cluster's capacity, from ``at`` until the next sample."""

    at: float
    allocation: Mapping[str, Vector]
    capacity: Vector


def window_start(params: UsageParams, now: float) -> float:
    """Where the usage window starts for a query at ``now`` (epoch seconds)."""
    if params.window_type == "cron":
        return cron.CronSchedule.parse(params.cron_string).previous(now)
    if params.window_type == "tumbling":
        start = params.tumbling_start_s if params.tumbling_start_s is not None else now
        if start >= now:  # a start in the future: an empty window, as KAI
            return now
        windows = math.floor((now - start) / params.window_size_s)
        return start + windows * params.window_size_s
    return now - params.window_size_s


def decay(age: float, half_life: float | None) -> float:
    """The weight of usage ``age`` seconds old: ``0.5 ** (age / h)``, 1 with no half life."""
    return 1.0 if half_life is None else 0.5 ** (age / half_life)


def decayed_duration(start: float, end: float, now: float, half_life: float | None) -> float:
    """``∫ decay(now - t) dt`` over [start, end]: the weight of a step held over it."""
    if end <= start:
        return 0.0
    if half_life is None:
        return end - start
    scale = half_life / math.log(2.0)
    return scale * (decay(now - end, half_life) - decay(now - start, half_life))


def normalised_usage(
    samples: Sequence[UsageSample], now: float, params: UsageParams
) -> dict[str, Vector]:
    """Each queue's usage over the window ending at ``now``: the module docstring's u.

    ``samples`` are in time order. Time before the first sample is not counted (the
    window shrinks to what was recorded); a resource with no capacity has usage 0.
    """
    start = window_start(params, now)
    capacity = [0.0, 0.0, 0.0]
    held: dict[str, list[float]] = {}
    for i, sample in enumerate(samples):
        end = samples[i + 1].at if i + 1 < len(samples) else now
        weight = decayed_duration(max(sample.at, start), min(end, now), now, params.half_life_s)
        if weight <= 0.0:
            continue
        for r in range(3):
            capacity[r] += sample.capacity[r] * weight
        for queue, amounts in sample.allocation.items():
            sums = held.setdefault(queue, [0.0, 0.0, 0.0])
            for r in range(3):
                sums[r] += amounts[r] * weight
    return {
        queue: (
            _ratio(sums[0], capacity[0]),
            _ratio(sums[1], capacity[1]),
            _ratio(sums[2], capacity[2]),
        )
        for queue, sums in sorted(held.items())
    }


def _ratio(used: float, capacity: float) -> float:
    return used / capacity if capacity > 0.0 else 0.0
