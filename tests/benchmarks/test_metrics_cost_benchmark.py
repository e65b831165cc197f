"""The metrics benchmark at a tiny size: it compares like with like.

Why: the benchmark runs by hand, so nothing else would notice if its "before" code
stopped loading from git or if the two registries stopped receiving the same updates.
Timings are not checked.
"""

from __future__ import annotations

import sys

import pytest

from benchmarks import metrics_cost
from scheduler import metrics
from scheduler.metrics.families import Metrics


def test_before_and_after_export_the_same_samples() -> None:
    result = metrics_cost.cycle_result(queues=70, binds=5, evictions=4)
    assert len(result.queues) == 70  # the engine benchmark's 65 and five more
    old = metrics_cost.old_module("44f9f90")
    before = old.Metrics(sys.modules["_old_metrics_registry"].Registry())
    after = Metrics()
    old.observe_result(result, 900.0, {"allocate": 1.0}, metrics=before)
    metrics.observe_result(result, 900.0, {"allocate": 1.0}, metrics=after)
    text = before.registry.render()
    for q in result.queues:
        value = after.sample("kai_queue_fair_share_gpu", queue_name=q.name)
        assert f'kai_queue_fair_share_gpu{{queue_name="{q.name}"}} {value:g}' in text
    assert after.sample("podmuster_bind_requests_created_total") == 5
    assert "podmuster_bind_requests_created_total 5" in text


def test_main_prints_one_row_per_queue_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert metrics_cost.main(["--repeat", "1", "--queues", "3"]) in (0, 1)
    out = capsys.readouterr().out
    assert '"queues": 3' in out
