"""Invariants of normalised usage (scheduler.usage.window), over random step histories.

- usage is a share of capacity: with every queue's allocation within capacity at every
  moment, each u is in [0, 1], and with the queues' sum within capacity so is Σ u;
- a queue that always held the same fraction of the cluster has exactly that usage,
  whatever the window, the half life or the sample times (decay weighs time, not share).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.usage.params import UsageParams
from scheduler.usage.window import UsageSample, normalised_usage

gaps = st.lists(st.floats(1.0, 5000.0), min_size=1, max_size=8)
fractions = st.lists(st.floats(0.0, 1.0), min_size=2, max_size=2)
half_lives = st.one_of(st.none(), st.floats(10.0, 1e5))
windows = st.floats(60.0, 1e5)


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[UsageSample], float]:
    at, samples = 0.0, []
    for gap in draw(gaps):
        capacity = draw(st.floats(1.0, 64.0))
        a, b = draw(fractions)
        b = b * (1.0 - a)  # a + b <= 1: the two queues fit together
        samples.append(UsageSample(at, {"a": (a * capacity, 0, 0), "b": (b * capacity, 0, 0)},
                                   (capacity, 0.0, 0.0)))  # fmt: skip
        at += gap
    return samples, at


@settings(max_examples=200, deadline=None)
@given(histories(), windows, half_lives)
def test_usage_is_a_share_of_capacity(
    history: tuple[list[UsageSample], float], window: float, half_life: float | None
) -> None:
    samples, now = history
    usage = normalised_usage(samples, now, UsageParams(window_size_s=window, half_life_s=half_life))
    for values in usage.values():
        assert -1e-12 <= values[0] <= 1 + 1e-9
    assert sum(v[0] for v in usage.values()) <= 1 + 1e-9


@settings(max_examples=200, deadline=None)
@given(
    gaps,
    st.floats(0.0, 1.0),
    windows,
    half_lives,
    st.lists(st.floats(1.0, 64.0), min_size=8, max_size=8),
)
def test_a_constant_share_is_the_usage(
    steps: list[float], share: float, window: float, half_life: float | None, caps: list[float]
) -> None:
    at, samples = 0.0, []
    for gap, capacity in zip(steps, caps, strict=False):
        samples.append(UsageSample(at, {"a": (share * capacity, 0, 0)}, (capacity, 0.0, 0.0)))
        at += gap
    usage = normalised_usage(samples, at, UsageParams(window_size_s=window, half_life_s=half_life))
    assert usage["a"][0] == pytest.approx(share, abs=1e-9)
