"""Per-job results (``job_results``): times, nodes, disruptions, and why a job never ran.

The trace (fixtures/job-results.csv on two 1-GPU nodes) is preempt.csv plus a job
whose nodeSelector no node has. Simulated-time rules as in test_sim_metrics: cycles
on 1 s ticks, a cycle's decisions take effect one period later.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from podmuster.cli import main
from scheduler.config import SchedulerConfig
from simulator import cluster, csvtrace, table
from simulator.events import Simulation
from simulator.model import Scenario

FIXTURES = Path(__file__).parent / "fixtures"
STUCK = ("--workloads", str(FIXTURES / "stuck"))  # fits runs 1..31; picky never starts


def _scenario(fixtures: Path) -> Scenario:
    """The trace, with picky's pod asking for a node label no node carries."""
    scenario = csvtrace.load(
        str(fixtures / "job-results.csv"), cluster.load(str(fixtures / "cluster.yaml"))
    )
    (picky,) = [job for job in scenario.jobs if job.key == "sim/picky"]
    for pod in picky.pods:
        pod["spec"]["nodeSelector"] = {"gpu": "a100"}
    return scenario


def _results(fixtures: Path) -> dict[str, dict[str, Any]]:
    figures = Simulation(_scenario(fixtures), SchedulerConfig()).run().figures
    return {entry["name"]: entry for entry in figures["job_results"]}


def test_one_entry_per_job_and_the_count_stays(fixtures: Path) -> None:
    figures = Simulation(_scenario(fixtures), SchedulerConfig()).run().figures
    assert figures["jobs"] == 3
    assert [entry["name"] for entry in figures["job_results"]] == [
        "sim/batch",
        "sim/urgent",
        "sim/picky",
    ]  # by arrival


def test_completed_jobs_have_their_times_computed_by_hand(fixtures: Path) -> None:
    # batch (2 x 1 GPU) starts at 1; the cycle at 10 preempts it for urgent (applied at
    # 11); urgent is bound at 11 and runs 12..32; batch runs again 33..133.
    results = _results(fixtures)
    urgent = results["sim/urgent"]
    assert urgent == {
        "name": "sim/urgent",
        "workload": None,  # a trace row has no owning workload
        "queue": "team-a",
        "gpus": 1.0,
        "arrival_s": 10.0,
        "start_s": 12.0,
        "end_s": 32.0,
        "wait_s": 2.0,
        "nodes": 1,
        "preempted": 0,
        "reclaimed": 0,
        "moved": 0,
        "stale_gang_evicted": 0,
        "state": "completed",
        "waited_for": None,  # the cycle at 10 placed it (by preemption): never pending
        "last_reasons": None,
    }
    batch = results["sim/batch"]
    # start is the first start (wait = start - arrival); end is after the restart
    assert (batch["arrival_s"], batch["start_s"], batch["end_s"], batch["wait_s"]) == (
        0.0,
        1.0,
        133.0,
        1.0,
    )
    assert batch["nodes"] == 2  # one pod on each 1-GPU node


def test_the_preempted_job_counts_one_preemption(fixtures: Path) -> None:
    batch = _results(fixtures)["sim/batch"]
    assert (batch["preempted"], batch["reclaimed"], batch["moved"]) == (1, 0, 0)
    assert batch["last_reasons"] is None  # it started: no reason to explain


def test_a_job_that_never_starts_says_its_node_selector_matches_no_node(fixtures: Path) -> None:
    picky = _results(fixtures)["sim/picky"]
    assert (picky["start_s"], picky["end_s"], picky["wait_s"], picky["nodes"]) == (
        None,
        None,
        None,
        0,
    )
    assert picky["arrival_s"] == 20.0
    reasons = picky["last_reasons"]
    assert reasons, "a job that never started carries the engine's last reasons"
    assert "node selector" in reasons[0]
    assert "0/2 nodes are available" in reasons[0]


def test_disruptions_per_job_add_up_to_the_run_totals(fixtures: Path) -> None:
    figures = Simulation(_scenario(fixtures), SchedulerConfig()).run().figures
    jobs = figures["job_results"]
    assert sum(entry["preempted"] for entry in jobs) == figures["preemptions"]
    assert sum(entry["reclaimed"] for entry in jobs) == figures["reclaims"]
    assert sum(entry["moved"] for entry in jobs) == figures["consolidation_moves"]


def _cli(*argv: str) -> list[str]:
    return ["simulate", "--cluster", str(FIXTURES / "cluster.yaml"), *argv]


def test_json_names_the_workload_of_a_job_that_never_started(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*_cli(*STUCK), "-o", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["jobs"] == 2
    fits, picky = document["job_results"]
    assert fits["workload"] == "Job team-a/fits"
    assert (fits["start_s"], fits["end_s"], fits["wait_s"]) == (1.0, 31.0, 1.0)
    assert picky["workload"] == "Job team-b/picky"
    assert picky["start_s"] is None
    assert "didn't match Pod's node selector" in picky["last_reasons"][0]


def test_a_reclaimed_workload_counts_one_reclaim(capsys: pytest.CaptureFixture[str]) -> None:
    # test_sim_cli's manifest form: eval reclaims one of train's pods once (applied at 61);
    # train started at 11, restarts and ends at 393; eval runs 62..92.
    assert main([*_cli("--workloads", str(FIXTURES / "workloads")), "-o", "json"]) == 0
    results = {e["workload"]: e for e in json.loads(capsys.readouterr().out)["job_results"]}
    train, evaluation = results["PyTorchJob team-a/train"], results["Job team-b/eval"]
    assert (train["reclaimed"], train["preempted"], train["moved"]) == (1, 0, 0)
    assert (train["arrival_s"], train["start_s"], train["end_s"]) == (10.0, 11.0, 393.0)
    assert train["nodes"] == 2
    assert (evaluation["reclaimed"], evaluation["start_s"], evaluation["end_s"]) == (0, 62.0, 92.0)


def test_table_lists_the_job_that_never_started_with_its_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(_cli(*STUCK)) == 0
    out = capsys.readouterr().out
    assert "jobs that never started: 1 of 2" in out
    (line,) = [row for row in out.splitlines() if "Job team-b/picky" in row]
    assert "queue team-b" in line
    assert "didn't match Pod's node selector" in line
    assert "Job team-a/fits" not in out


def test_compare_has_job_results_per_run(capsys: pytest.CaptureFixture[str]) -> None:
    spread = str(FIXTURES / "spread.yaml")
    assert main([*_cli(*STUCK), "--compare", spread, "-o", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    compared = document["compare"]
    for run in ("a", "b"):
        names = [entry["workload"] for entry in compared[run]["job_results"]]
        assert names == ["Job team-a/fits", "Job team-b/picky"]
    assert document["job_results"] == compared["a"]["job_results"]  # A's keys at the top
    assert "job_results" not in compared["diff"]  # per-job lists have no difference
    assert main([*_cli(*STUCK), "--compare", spread]) == 0
    table = capsys.readouterr().out
    assert "jobs that never started in A: default: 1 of 2" in table
    assert "jobs that never started in B: spread.yaml: 1 of 2" in table


def test_report_has_a_section_for_the_jobs_that_never_started(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.html"
    assert main([*_cli(*STUCK), "--report", str(report), "-o", "json"]) == 0
    capsys.readouterr()
    section = report.read_text().split("<h2>Jobs that never started</h2>", 1)[1].split("<h2>")[0]
    assert "1 of 2 jobs never started" in section
    assert "<td>Job team-b/picky</td><td>team-b</td>" in section
    assert "didn&#39;t match Pod&#39;s node selector" in section  # escaped, not raw HTML
    assert "Job team-a/fits" not in section


def test_report_says_when_every_job_started(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.html"
    argv = _cli("--trace", str(FIXTURES / "three-jobs.csv"), "--report", str(report))
    assert main([*argv, "-o", "json"]) == 0
    capsys.readouterr()
    section = report.read_text().split("<h2>Jobs that never started</h2>", 1)[1].split("<h2>")[0]
    assert "Every job started." in section
    assert "<table>" not in section


def test_table_shows_ten_jobs_that_never_started_and_counts_the_rest() -> None:
    entry = {"workload": None, "queue": "q", "gpus": 0.5, "arrival_s": 3.0, "start_s": None}
    jobs = [{**entry, "name": f"sim/j{i}", "last_reasons": [f"reason {i}"]} for i in range(12)]
    out = io.StringIO()
    table._never_started(out, "", {"jobs": 20, "job_results": jobs})
    lines = out.getvalue().splitlines()
    assert lines[1] == "jobs that never started: 12 of 20"
    assert lines[2] == "  sim/j0  queue q, 0.5 GPUs, arrived 3s: reason 0"
    assert len(lines) == 2 + table.NEVER_STARTED_LINES + 1
    assert lines[-1] == "  ... and 2 more (-o json: job_results)"
