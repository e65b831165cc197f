"""The contended-segment benchmark's script on a small trace.

Why: the benchmark runs by hand on the 2,000-job trace; this keeps its
arguments, report keys and exit codes working when the simulator changes.
Timings are not checked.
"""

from __future__ import annotations

import json

import pytest

from benchmarks import contended_segment
from scheduler.cycle import ACTIONS

SMALL = ["--jobs", "30", "--gpus", "16"]


def test_report_of_a_segment(capsys: pytest.CaptureFixture[str]) -> None:
    assert contended_segment.main([*SMALL, "--start", "3", "--count", "4", "--profile", "3"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["start"] == 3
    assert report["count"] == 4
    assert report["cycles_run"] == 7
    assert {"cpu_to_start_s", "ms_per_cycle", "pending_pods_at_start", "load_average"} <= set(
        report
    )
    assert "cumulative" in captured.err  # the profile goes to stderr


def test_a_segment_past_the_end_of_the_trace(capsys: pytest.CaptureFixture[str]) -> None:
    assert contended_segment.main([*SMALL, "--start", "100000", "--count", "1"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert "incomplete" in report
    assert "ms_per_cycle" not in report


def test_per_action_times_and_the_actions_restored(capsys: pytest.CaptureFixture[str]) -> None:
    before = {name: action.execute for name, action in ACTIONS.items()}
    argv = [*SMALL, "--start", "3", "--count", "4", "--per-action"]
    assert contended_segment.main(argv) == 0
    split = json.loads(capsys.readouterr().out)["ms_per_cycle_by_action"]
    assert {"allocate", "rest of the cycle"} <= set(split)
    assert all(value >= 0 for name, value in split.items() if name != "rest of the cycle")
    assert {name: action.execute for name, action in ACTIONS.items()} == before
