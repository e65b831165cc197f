"""The one back-off helper: an exponential schedule, capped, and its jittered stateful form."""

from __future__ import annotations

import random

from kubeapi.backoff import Backoff, exponential


def test_the_schedule_doubles_and_is_capped() -> None:
    assert [exponential(n, 1.0, 8.0) for n in range(-1, 6)] == [1, 1, 2, 4, 8, 8, 8]


def test_backoff_grows_jittered_and_capped() -> None:
    backoff = Backoff(base=1, cap=8, rng=random.Random(1))
    delays = [backoff.next_delay() for _ in range(6)]
    for delay, ceiling in zip(delays, [1, 2, 4, 8, 8, 8], strict=True):
        assert ceiling / 2 <= delay <= ceiling
    backoff.reset()
    assert backoff.next_delay() <= 1


def test_fresh_starts_over_with_the_same_schedule() -> None:
    backoff = Backoff(base=2, cap=4, attempts=5)
    fresh = backoff.fresh()
    assert (fresh.base, fresh.cap, fresh.attempts, fresh.rng) == (2, 4, 0, backoff.rng)


def test_the_default_retries_within_8_seconds_however_long_the_outage() -> None:
    """After an API server restart the informers must come back in seconds: measured with
    the old 30 s cap, a watch waited 26 s after the server had returned."""
    backoff = Backoff(rng=random.Random(3))
    delays = [backoff.next_delay() for _ in range(50)]
    assert max(delays) <= 8.0
    assert delays[0] <= 0.5
