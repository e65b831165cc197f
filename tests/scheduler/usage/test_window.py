"""Usage windows, decay and normalisation against hand-computed values (scheduler.usage.window).

Times are in hours from T0 (2026-01-05 00:00 UTC, a Monday); a cluster of 8 GPUs
unless a row says otherwise. Allocation and capacity are step functions: a sample
holds until the next one, the last until now.
"""

from __future__ import annotations

import datetime as dt
import math

import pytest

from scheduler.usage.cron import CronSchedule
from scheduler.usage.params import UsageParams
from scheduler.usage.window import (
    UsageSample,
    decayed_duration,
    normalised_usage,
    window_start,
)

H = 3600.0
T0 = dt.datetime(2026, 1, 5, tzinfo=dt.UTC).timestamp()  # a Monday, 00:00 UTC
CAP = (8.0, 0.0, 0.0)


def at(hours: float) -> float:
    return T0 + hours * H


def sample(hours: float, **gpus: float) -> UsageSample:
    return UsageSample(at(hours), {q: (g, 0.0, 0.0) for q, g in gpus.items()}, CAP)


def params(**values: object) -> UsageParams:
    return UsageParams(**values)  # type: ignore[arg-type]


# --- window starts -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("p", "now", "start"),
    [
        # sliding 4h at 10:00 → 06:00
        (params(window_size_s=4 * H), at(10), at(6)),
        # tumbling 4h from T0 at 10:00: windows 0-4, 4-8, 8-12 → 08:00
        (params(window_size_s=4 * H, window_type="tumbling", tumbling_start_s=T0), at(10), at(8)),
        # tumbling at exactly a boundary (08:00) starts a new, empty window
        (params(window_size_s=4 * H, window_type="tumbling", tumbling_start_s=T0), at(8), at(8)),
        # tumbling whose start is in the future: an empty window at now
        (
            params(window_size_s=4 * H, window_type="tumbling", tumbling_start_s=at(20)),
            at(10),
            at(10),
        ),
        # cron every day at 06:00, asked at 10:00 → today 06:00
        (params(window_type="cron", cron_string="0 6 * * *"), at(10), at(6)),
        # asked at 05:00 → yesterday 06:00 (-18 h)
        (params(window_type="cron", cron_string="0 6 * * *"), at(5), at(-18)),
        # weekly, Mondays 00:00, asked on Wednesday 10:00 → Monday T0
        (params(window_type="cron", cron_string="0 0 * * 1"), at(58), at(0)),
        # @monthly asked on Jan 5 → Jan 1 00:00 (4 days before T0)
        (params(window_type="cron", cron_string="@monthly"), at(10), at(-96)),
    ],
)
def test_window_start(p: UsageParams, now: float, start: float) -> None:
    assert window_start(p, now) == start


# --- decay ---------------------------------------------------------------------------
def test_decayed_duration_without_half_life_is_the_length() -> None:
    assert decayed_duration(at(1), at(3), at(5), None) == 2 * H


def test_decayed_duration_with_half_life() -> None:
    # h = 1h, the last hour before now: ∫ 0.5^(age/h) over age 0..1h = h/ln2 · (1 - 0.5)
    assert decayed_duration(at(4), at(5), at(5), H) == pytest.approx(H / math.log(2) * 0.5)
    # the hour before that weighs half as much: h/ln2 · (0.5 - 0.25)
    assert decayed_duration(at(3), at(4), at(5), H) == pytest.approx(H / math.log(2) * 0.25)


# --- normalised usage ----------------------------------------------------------------
def test_kai_docs_example_24_gpu_hours_of_100() -> None:
    """10 GPUs over 10 hours; 8 GPUs for 3 hours = 24 GPU-hours of 100 → 0.24."""
    cap = (10.0, 0.0, 0.0)
    samples = [
        UsageSample(at(0), {"a": (8.0, 0.0, 0.0)}, cap),
        UsageSample(at(3), {"a": (0.0, 0.0, 0.0)}, cap),
    ]
    usage = normalised_usage(samples, at(10), params(window_size_s=10 * H))
    assert usage["a"][0] == pytest.approx(0.24)


def test_sliding_window_no_decay() -> None:
    # a: 8 of 8 from 0h to 2h, then 4 of 8 to 4h; window 4h at 4h:
    # (8·2 + 4·2) / (8·4) = 24 / 32 = 0.75; b: 4 from 2h: 8 / 32 = 0.25
    samples = [sample(0, a=8), sample(2, a=4, b=4)]
    usage = normalised_usage(samples, at(4), params(window_size_s=4 * H))
    assert usage == {"a": pytest.approx((0.75, 0, 0)), "b": pytest.approx((0.25, 0, 0))}


def test_sliding_window_forgets_what_slid_out() -> None:
    # same samples, asked at 6h with a 2h window [4h, 6h]: a holds 4 of 8 → 0.5
    samples = [sample(0, a=8), sample(2, a=4, b=4)]
    usage = normalised_usage(samples, at(6), params(window_size_s=2 * H))
    assert usage["a"][0] == pytest.approx(0.5)


def test_half_life_weighs_recent_usage_more() -> None:
    # a held 8 of 8 from 0h to 1h, then 0 until now = 2h; h = 1h, window 2h.
    # weights: [0,1]h: h/ln2·(0.5 - 0.25), [1,2]h: h/ln2·(1 - 0.5); ln2 and h cancel:
    # u = 8·0.25 / (8·0.25 + 8·0.5) = 0.25 / 0.75 = 1/3 (no decay: 1/2)
    samples = [sample(0, a=8), sample(1, a=0)]
    decayed = normalised_usage(samples, at(2), params(window_size_s=2 * H, half_life_s=H))
    plain = normalised_usage(samples, at(2), params(window_size_s=2 * H))
    assert decayed["a"][0] == pytest.approx(1 / 3)
    assert plain["a"][0] == pytest.approx(1 / 2)


def test_tumbling_window_counts_since_the_reset() -> None:
    # 4h tumbling windows from T0; at 5h the window is [4h, 5h]. a held 8 until 4.5h,
    # then 0: 8·0.5 / (8·1) = 0.5 (the 8 GPUs it held from 0h to 4h no longer count).
    samples = [sample(0, a=8), sample(4.5, a=0)]
    p = params(window_size_s=4 * H, window_type="tumbling", tumbling_start_s=T0)
    assert normalised_usage(samples, at(5), p)["a"][0] == pytest.approx(0.5)


def test_cron_window_counts_since_the_latest_firing() -> None:
    # resets daily at 06:00; at 08:00 the window is [6h, 8h]. a held 2 of 8 throughout:
    # 2·2 / (8·2) = 0.25
    samples = [sample(0, a=2)]
    p = params(window_type="cron", cron_string="0 6 * * *")
    assert normalised_usage(samples, at(8), p)["a"][0] == pytest.approx(0.25)


def test_capacity_changes_are_weighed_too() -> None:
    # 4 GPUs for 1h then 12 for 1h; a holds 4 throughout: (4 + 4) / (4 + 12) = 0.5
    samples = [
        UsageSample(at(0), {"a": (4.0, 0.0, 0.0)}, (4.0, 0.0, 0.0)),
        UsageSample(at(1), {"a": (4.0, 0.0, 0.0)}, (12.0, 0.0, 0.0)),
    ]
    assert normalised_usage(samples, at(2), params(window_size_s=2 * H))["a"][0] == 0.5


def test_time_before_the_first_sample_is_not_counted_and_zero_capacity_gives_zero() -> None:
    # recorded from 3h only: the 4h window shrinks to [3h, 4h]; a holds 2 of 8 → 0.25.
    # CPU capacity is 0 → CPU usage 0
    samples = [sample(3, a=2)]
    assert normalised_usage(samples, at(4), params(window_size_s=4 * H))["a"] == (0.25, 0, 0)


# --- cron ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("expression", "now", "previous"),
    [
        ("*/15 * * * *", at(10) + 20 * 60, at(10) + 15 * 60),
        ("30 9-17 * * mon-fri", at(8), at(-24 * 3 + 17.5)),  # Monday 08:00 → Friday 17:30
        ("0 0 1 jan *", at(10), dt.datetime(2026, 1, 1, tzinfo=dt.UTC).timestamp()),
        # both day fields restricted: the 15th OR a Sunday; Jan 5 10:00 → Sunday Jan 4
        ("0 0 15 * sun", at(10), at(-24)),
        ("0 0 29 2 *", at(0), dt.datetime(2024, 2, 29, tzinfo=dt.UTC).timestamp()),
        ("0 10 * * *", at(10), at(10)),  # a firing at now counts
    ],
)
def test_cron_previous(expression: str, now: float, previous: float) -> None:
    assert CronSchedule.parse(expression).previous(now) == previous


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("* * * *", "expected 5 fields"),
        ("61 * * * *", "minute"),
        ("0 25 * * *", "hour"),
        ("0 0 * foo *", "not a number"),
        ("*/0 * * * *", "bad step"),
    ],
)
def test_bad_cron_expressions(expression: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CronSchedule.parse(expression)


def test_a_cron_that_never_fires() -> None:
    with pytest.raises(ValueError, match="never fires"):
        CronSchedule.parse("0 0 31 2 *").previous(T0)
