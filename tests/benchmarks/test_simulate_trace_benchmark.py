"""The simulator benchmark's script and its contended-trace generator, on small inputs.

Why: the benchmark runs by hand on the full traces; this keeps its script working
(arguments, report keys, exit code) when the simulator changes, and the generated
traces readable by the simulator. Timings are not checked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import contended, simulate_trace
from simulator import cluster, csvtrace

FIXTURE = Path(__file__).resolve().parents[1] / "simulator" / "fixtures" / "openb"


def test_report_of_a_small_trace(capsys: pytest.CaptureFixture[str]) -> None:
    assert simulate_trace.main(["--case", "alibaba", "--trace", str(FIXTURE)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["nodes"] == 3
    assert report["pods_in_trace"] == 6
    assert report["jobs_replayed"] == report["completed"] == 4
    assert report["met"] is True
    assert {"total_s", "cpu_s", "engine_s", "snapshot_s", "engine_share"} <= report.keys()


def test_another_pod_list_is_measured_not_judged(capsys: pytest.CaptureFixture[str]) -> None:
    """The 20 s target is the default list's; ``--pods`` names a list of the directory."""
    argv = ["--case", "alibaba", "--trace", str(FIXTURE), "--pods", "default"]
    assert simulate_trace.main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["jobs_replayed"] == 4
    assert (report["target_s"], report["met"]) == (None, None)


def test_missing_trace_directory(tmp_path: Path) -> None:
    assert simulate_trace.main(["--case", "alibaba", "--trace", str(tmp_path / "absent")]) == 2


def test_contended_case_runs_the_command_with_compare(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(simulate_trace.CONTENDED, "contended-100", (12, 16, True, 600.0))
    assert simulate_trace.main(["--case", "contended-100"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["command"].endswith("--compare spread.yaml")
    assert set(report["runs"]) == {"a", "b"}
    assert all(run["completed"] == 12 and not run["partial"] for run in report["runs"].values())
    assert {"total_s", "cpu_s", "load_average"} <= report.keys()


def test_generated_trace_is_deterministic_and_loads(tmp_path: Path) -> None:
    assert contended.trace_rows(50, 48, seed=3) == contended.trace_rows(50, 48, seed=3)
    assert contended.trace_rows(50, 48, seed=3) != contended.trace_rows(50, 48, seed=4)
    trace, cluster_file, _ = contended.write(str(tmp_path), 50, 48, seed=3)
    scenario = csvtrace.load(trace, cluster.load(cluster_file))
    assert len(scenario.jobs) == 50
    assert len(scenario.nodes) == 6
    quotas = [q["spec"]["resources"]["gpu"]["quota"] for q in scenario.queues]
    assert sum(quotas) == 48
    assert all(job.gpus <= 48 for job in scenario.jobs)


def test_cluster_needs_whole_nodes() -> None:
    with pytest.raises(ValueError, match="multiple of 8"):
        contended.cluster_document(20)
