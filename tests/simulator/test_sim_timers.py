"""simulator.timers: the instants at which minimum runtime and stale-gang grace change."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

from scheduler.cache.reading import STALE_ANNOTATION
from scheduler.config import SchedulerConfig
from simulator import timers


def _queue(preempt: float | None = None, reclaim: float | None = None) -> Any:
    return SimpleNamespace(preempt_min_runtime=preempt, reclaim_min_runtime=reclaim)


def _snapshot(now: float, **jobs: tuple[float | None, float | None]) -> Any:
    return SimpleNamespace(
        now=now,
        jobs={
            key: SimpleNamespace(last_start=start, stale_since=stale)
            for key, (start, stale) in jobs.items()
        },
    )


def test_min_runtimes_collects_queue_values_and_defaults_without_zeros() -> None:
    tree: Any = SimpleNamespace(queues={"a": _queue(600.0, None), "b": _queue(None, 60.0)})
    config = SchedulerConfig(default_reclaim_min_runtime_s=120.0)
    assert timers.min_runtimes(tree, config) == (60.0, 120.0, 600.0)
    assert timers.min_runtimes(SimpleNamespace(queues={}), SchedulerConfig()) == ()  # type: ignore[arg-type]


def test_earliest_future_end_of_any_minimum_runtime() -> None:
    snapshot = _snapshot(100.0, old=(-50.0, None), young=(90.0, None), never=(None, None))
    # old: -50+60 and -50+120 passed, -50+600 ahead; young: 90+60 = 150 is the earliest
    at = timers.next_rule_change(snapshot, SchedulerConfig(), {}, (60.0, 120.0, 600.0))
    assert at == 150.0


def test_stale_grace_from_the_stamp_in_the_snapshot_or_this_cycle() -> None:
    config = SchedulerConfig(staleness_grace_period_s=60.0)
    earlier = _snapshot(100.0, gang=(None, 70.0))
    assert timers.next_rule_change(earlier, config, {}, ()) == 130.0
    stamped_now = _snapshot(100.0, gang=(None, None))
    changes = {"gang": {STALE_ANNOTATION: "1970-01-01T00:01:40Z"}}
    assert timers.next_rule_change(stamped_now, config, changes, ()) == 160.0


def test_nothing_time_based_gives_infinity() -> None:
    never = SchedulerConfig(staleness_grace_period_s=-1.0)
    snapshot = _snapshot(100.0, gang=(0.0, 90.0))
    assert math.isinf(timers.next_rule_change(snapshot, never, {}, ()))
    cleared = {"gang": {STALE_ANNOTATION: None}}
    assert math.isinf(
        timers.next_rule_change(_snapshot(100.0, gang=(0.0, None)), never, cleared, ())
    )
