"""The HTML report's content: named configurations, human units, B - A, what was simulated,
per-job results (docs/simulate.md, "The report"). The browser test is test_sim_report_browser."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from podmuster.cli import main
from simulator import plots
from simulator.metrics import RunMetrics, Series

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], report_input: list[str]
) -> Callable[..., str]:
    """Writes the report of the report scenario with more options and returns the page."""

    def write(*argv: str) -> str:
        path = tmp_path / "report.html"
        assert main([*report_input, *argv, "--report", str(path), "-o", "json"]) == 0
        capsys.readouterr()
        return path.read_text()

    return write


def _text(page: str) -> str:
    """The page's visible text (tags and the embedded images removed)."""
    text = html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r'src="data:[^"]*"', "", page)))
    return " ".join(text.split())


def _section(page: str, heading: str) -> str:
    return page.split(f"<h2>{heading}</h2>", 1)[1].split("<h2>")[0]


def test_configurations_are_named_and_b_minus_a_is_shown(report: Callable[..., str]) -> None:
    page = report("--compare", str(FIXTURES / "spread.yaml"), "--label", "A=today")
    summary = _section(page, "Summary")
    assert "<th>today (A)</th><th>spread (B)</th>" in summary  # B: the file's name
    assert "spread \N{MINUS SIGN} today (B \N{MINUS SIGN} A)" in summary
    # the wait p95 grows under spread: the difference is signed, in units, marked worse
    row = next(r for r in summary.split("<tr>") if "wait, 95th percentile" in r)
    assert re.search(r'class="diff worse">\+\d+m\d\ds<', row), row
    assert "<title>Simulation: today vs spread</title>" in page


def test_figures_are_in_human_units(report: Callable[..., str]) -> None:
    text = _text(report("--compare", str(FIXTURES / "spread.yaml")))
    assert "None" not in text
    assert not re.search(r"\d\.?\d*e[+-]\d", text), "scientific notation"
    summary = _text(_section(report(), "Summary"))
    assert re.search(r"makespan first arrival to end of run \d+h\d\dm ", summary), summary
    assert re.search(
        r"GPU allocation allocated GPUs over cluster GPUs, time-weighted \d+(\.\d)?%", summary
    )
    assert "GPU-h" in summary


def test_the_cluster_and_queue_tree_simulated_are_shown(report: Callable[..., str]) -> None:
    section = _text(_section(report(), "What was simulated"))
    assert re.search(r"gpu\s+2\s+2\s+—\s+16\s+64 GiB", section)  # pool, nodes, GPUs, ...
    assert "4 GPUs" in section  # the total
    # the tree: org, then its children with quota, limit, weight and priority
    assert re.search(r"org\s+0 GPUs\s+none\s+1\s+100", section)
    assert re.search(r"team-a\s+2 GPUs\s+none\s+2\s+100", section)
    assert re.search(r"team-b\s+2 GPUs\s+3 GPUs\s+1\s+100", section)


def test_the_runs_json_records_the_cluster_and_the_label(
    capsys: pytest.CaptureFixture[str], report_input: list[str]
) -> None:
    argv = [
        *report_input,
        "--compare",
        str(FIXTURES / "spread.yaml"),
        "--label",
        "b=wide",
        "-o",
        "json",
    ]
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["label"], document["compare"]["b"]["label"]) == ("default", "wide")
    queues = {q["name"]: q for q in document["cluster"]["queues"]}
    assert queues["team-b"] == {
        "name": "team-b",
        "parent": "org",
        "gpu_quota": 2.0,
        "gpu_limit": 3.0,
        "over_quota_weight": 1.0,
        "priority": 100,
    }
    assert document["cluster"]["nodes"] == [
        {
            "pool": "gpu",
            "gpus": 2.0,
            "gpu_model": None,
            "cpu": 16.0,
            "memory_gib": 64.0,
            "count": 2,
            "autoscale": None,
        }
    ]
    assert "cluster" not in document["compare"]["diff"]  # the same cluster in both runs


def test_a_run_of_the_clusters_scheduler_section_is_named_after_the_cluster_file(
    capsys: pytest.CaptureFixture[str], report_input: list[str], tmp_path: Path
) -> None:
    """Once "A: default" in the table and the JSON, though A ran the cluster's spread."""
    cluster = tmp_path / "spread-cluster.yaml"
    text = (FIXTURES / "report-cluster.yaml").read_text()
    cluster.write_text(text + "scheduler: {placementStrategy: {gpu: spread}}\n")
    argv = [*report_input, "--cluster", str(cluster), "--compare", str(FIXTURES / "spread.yaml")]
    assert main([*argv, "-o", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["label"], document["compare"]["b"]["label"]) == ("spread-cluster", "spread")
    assert main(argv) == 0
    assert "A: spread-cluster.yaml" in capsys.readouterr().out.splitlines()[0]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--label", "C=x"], "expected A=NAME, got 'C=x'"),
        (["--label", "A="], "expected A=NAME, got 'A='"),
        (["--label", "A=x", "--label", "A=y"], "A is named twice"),
    ],
)
def test_bad_labels_are_refused(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], report_input: list[str]
) -> None:
    assert main([*report_input, *argv]) == 2
    assert f"--label: {message}" in capsys.readouterr().err


def test_labels_name_the_table_columns(
    capsys: pytest.CaptureFixture[str], report_input: list[str]
) -> None:
    argv = ["--compare", str(FIXTURES / "spread.yaml"), "--label", "A=now", "--label", "B=wide"]
    assert main([*report_input, *argv]) == 0
    header = capsys.readouterr().out.splitlines()[0].split()
    assert header == ["A:", "now", "B:", "wide"]


def test_per_job_results_are_listed_and_parents_left_out_of_queue_results(
    report: Callable[..., str],
) -> None:
    page = report()
    jobs = _text(_section(page, "Jobs"))
    assert "5 jobs, the longest waits first" in jobs
    first = jobs.split("waited for", 2)[2]
    assert first.split()[0] == "sim/too-big"  # never started: at the top
    assert "never started" in jobs
    assert "OverLimit" in jobs
    queues = _text(_section(page, "Queues"))
    assert "Not shown, no jobs of their own: org." in queues


def test_long_job_lists_are_cut_with_a_count(
    report: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from simulator import report as report_module

    monkeypatch.setattr(report_module, "JOB_ROWS", 2)
    jobs = _text(_section(report(), "Jobs"))
    assert "... and 3 more jobs: see -o json , job_results ." in jobs


def _waits(waits: list[float]) -> RunMetrics:
    return RunMetrics(
        {"pending_reasons": {}}, Series(times=[0.0, 10.0], allocated=[1.0]), {"": waits}
    )


@pytest.mark.parametrize("wait", [0.0, 1.0, 3600.0])
def test_the_wait_cdf_is_drawn_when_all_waits_are_equal(
    wait: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    labels: list[str] = []

    def record(axes: object, *args: object, **kwargs: object) -> object:
        labels.append(str(kwargs.get("label")))
        return original(axes, *args, **kwargs)

    from matplotlib.axes import Axes

    original = Axes.step
    monkeypatch.setattr(Axes, "step", record)
    image = plots.wait_cdf([("A", _waits([wait] * 3))])
    assert image.startswith("iVBOR")
    assert labels == [f"A: all 3 waited {plots.units.duration(wait)}"]


def test_two_configuration_files_of_one_name_are_told_apart_by_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], report_input: list[str]
) -> None:
    paths = []
    for folder in ("before", "after"):
        (tmp_path / folder).mkdir()
        path = tmp_path / folder / "scheduler.yaml"
        path.write_text("placementStrategy: {gpu: spread}\n")
        paths.append(str(path))
    assert main([*report_input, "--config", paths[0], "--config", paths[1], "-o", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["compare"]["a"]["label"], document["compare"]["b"]["label"]) == tuple(paths)


def test_an_autoscaled_pool_shows_its_range_and_the_nodes_it_added(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "report.html"
    argv = [
        "simulate",
        "--trace", str(FIXTURES / "burst.csv"),
        "--cluster", str(FIXTURES / "autoscaled.yaml"),
        "--report", str(path), "-o", "json",
    ]  # fmt: skip
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["cluster"]["nodes"][0]["autoscale"] == {"min": 0, "max": 2}
    page = path.read_text()
    assert "0 to 2 (autoscaled)" in _text(_section(page, "What was simulated"))
    summary = _text(_section(page, "Summary"))
    assert "nodes added 3 " in summary
    assert "nodes removed 2 " in summary


def test_a_jobs_state_names_its_status_and_jobs_not_arrived_are_not_never_started() -> None:
    """An evicted bare Pod was shown "running at the end"; a stopped run counted the jobs
    it had not reached yet as "never started"."""
    from simulator import report as report_module

    def entry(name: str, state: str, start: float | None) -> dict[str, object]:
        return {
            "name": name, "workload": None, "queue": "q", "gpus": 1.0, "arrival_s": 0.0,
            "start_s": start, "end_s": 9.0 if state == "completed" else None,
            "wait_s": None if start is None else start, "nodes": 1, "state": state,
            "waited_for": None, "last_reasons": [] if start is None else None,
        }  # fmt: skip

    figures = {
        "jobs": 5,
        "started": 3,
        "arrived": 4,
        "job_results": [
            entry("done", "completed", 1.0),
            entry("bare", "lost", 1.0),
            entry("again", "waiting", 1.0),
            entry("stuck", "waiting", None),
            entry("later", "not arrived", None),
        ],
    }
    statuses = {row["job"]: row["status"] for row in report_module._job_rows(figures)}
    assert statuses == {
        "done": "completed",
        "bare": "lost: an evicted bare Pod, gone",
        "again": "waiting to start again at the end",
        "stuck": "never started",
        "later": "not arrived when the run stopped",
    }
    (never,) = [m for m in report_module.SUMMARY if m.label == "never started"]
    assert never.value(figures) == 1  # "stuck"; "later" had not arrived


def test_the_wait_cdf_tops_out_at_the_share_of_jobs_that_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    drawn: list[tuple[list[float], str]] = []

    def record(axes: object, x: object, y: Any, *args: object, **kwargs: object) -> object:
        drawn.append((list(y), str(kwargs.get("label"))))
        return original(axes, x, y, *args, **kwargs)

    from matplotlib.axes import Axes

    original = Axes.step
    monkeypatch.setattr(Axes, "step", record)
    run = _waits([10.0, 20.0, 30.0])
    run.figures["arrived"] = 4  # one job arrived and never started
    assert plots.wait_cdf([("A", run)]).startswith("iVBOR")
    [(fractions, label)] = drawn
    assert max(fractions) == 0.75
    assert fractions[-1] == 0.75
    assert label == "A (1 of 4 never started)"


def test_a_second_compare_is_refused_not_dropped(
    capsys: pytest.CaptureFixture[str], report_input: list[str]
) -> None:
    spread = str(FIXTURES / "spread.yaml")
    assert main([*report_input, "--compare", spread, "--compare", spread]) == 2
    assert capsys.readouterr().err == (
        "podmuster: --compare: given 2 times; a comparison has two configurations (A and B)\n"
    )


def test_a_queues_main_cause_of_waiting_says_how_many_of_its_jobs_it_held() -> None:
    """One job of 32 waiting is not "most jobs waited for" it: the count goes with it."""
    from simulator.report import _queue_results

    series = {"p50": 0.0, "p95": 0.0}
    queue = {
        "jobs": 32, "completed": 32, "wait_time_s": series, "jct_s": series,
        "allocated_gpus_mean": 1.0, "fair_share_gpus_mean": 1.0, "fair_share_deviation": 0.0,
        "preemptions": 0, "reclaims": 0, "gpu_hours_lost": 0.0,
        "pending_reasons": {"Insufficient shared GPU": 1, "OverLimit: queue over its limit": 3},
    }  # fmt: skip
    rows, _ = _queue_results({"queues": {"interns": queue}})
    assert rows[0]["reason"] == "OverLimit: queue over its limit (3 of 32 jobs)"


def test_a_long_pending_reason_is_wrapped_in_the_chart_not_cut() -> None:
    from simulator.plots import _wrapped

    label = "Insufficient shared GPU (needs 1 device(s) with 0.25 GPU free)"
    assert _wrapped(label).replace("\n", " ") == label


def test_a_stopped_runs_summary_counts_the_jobs_not_arrived() -> None:
    from simulator.report import SUMMARY

    (metric,) = [m for m in SUMMARY if m.label == "not arrived"]
    assert metric.value({"jobs": 151, "arrived": 75, "partial": True}) == 76
    assert metric.value({"jobs": 151, "arrived": 151, "partial": False}) is None  # not shown
