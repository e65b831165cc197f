"""The trace-replay benchmark on the simulator's small Alibaba-layout fixture.

Why: the benchmark runs by hand on the full trace; this keeps its script working
(arguments, report keys, exit code) when the simulator changes. Timings are not
checked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import simulate_trace

FIXTURE = Path(__file__).resolve().parents[1] / "simulator" / "fixtures" / "openb"


def test_report_of_a_small_trace(capsys: pytest.CaptureFixture[str]) -> None:
    assert simulate_trace.main(["--trace", str(FIXTURE)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["nodes"] == 3
    assert report["pods_in_trace"] == 6
    assert report["jobs_replayed"] == report["completed"] == 4
    assert report["met"] is True
    assert {"total_s", "engine_s", "snapshot_s", "engine_share"} <= report.keys()


def test_missing_trace_directory(tmp_path: Path) -> None:
    assert simulate_trace.main(["--trace", str(tmp_path / "absent")]) == 2
