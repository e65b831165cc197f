"""``podmuster simulate`` stopped by a signal: the results so far, marked partial (docs/cli.md §5).

Why: a long what-if run stopped by Ctrl-C or by a CI timeout (SIGTERM) must
not lose what it computed. The subprocess test sends a real SIGTERM to a real
``python -m podmuster.cli simulate`` once its first progress line is on stderr
(so the run is under way, with no sleeps in the test), and reads the JSON it
still writes. The ``--compare`` test raises the signal from inside run B, so
it is deterministic: run A is whole, run B partial.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from podmuster.cli import main
from simulator.progress import Progress

_REPO = Path(__file__).resolve().parents[2]


def _contended_trace(path: Path, jobs: int) -> Path:
    """Many gangs on 48 GPUs: far more work than the test will let it do."""
    rows = ["submit_time,team,gpus_per_pod,pods_per_gang,duration"]
    for i in range(jobs):
        rows.append(
            f"{i * 5},team-{'abc'[i % 3]},{(1, 2, 4)[i % 3]},{1 + i % 2},{600 + i % 7 * 500}"
        )
    path.write_text("\n".join(rows) + "\n")
    return path


def _cluster(path: Path) -> Path:
    path.write_text(
        "nodes:\n  - {name: node, count: 6, gpus: 8, cpu: 96, memory: 512Gi}\n"
        "queues:\n  - {name: team-a}\n  - {name: team-b}\n  - {name: team-c}\n"
    )
    return path


def test_sigterm_after_the_first_progress_line_writes_partial_json(tmp_path: Path) -> None:
    trace = _contended_trace(tmp_path / "big.csv", 2000)
    report = tmp_path / "report.html"
    command = [
        sys.executable, "-m", "podmuster.cli", "simulate",
        "--trace", str(trace), "--cluster", str(_cluster(tmp_path / "cluster.yaml")),
        "-o", "json", "--report", str(report),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(_REPO)}
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=_REPO
    ) as process:
        assert process.stderr is not None
        first = process.stderr.readline()  # blocks until the run has lasted over 2 s
        assert first.startswith("simulating: simulated "), first
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=300)
    assert process.returncode == 143, err
    document: dict[str, Any] = json.loads(out)
    assert document["partial"] is True
    assert document["jobs"] == 2000
    assert document["completed"] < 2000
    assert "stopped at" in err.splitlines()[-1]
    assert "Partial results: default was interrupted after " in report.read_text()
    # the jobs still to arrive are said to be so, not counted as "never started"
    states = {entry["state"] for entry in document["job_results"]}
    assert "not arrived" in states
    later = sum(1 for entry in document["job_results"] if entry["state"] == "not arrived")
    assert document["arrived"] == 2000 - later


def test_compare_interrupted_in_b_prints_a_whole_and_b_partial(
    fixtures: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    update = Progress.update

    def sigint_in_b(self: Progress, simulated: float, done: int, total: int) -> None:
        if self.label.startswith("B") and done >= 1:
            signal.raise_signal(signal.SIGINT)  # what Ctrl-C does; the CLI's handler catches it
        update(self, simulated, done, total)

    monkeypatch.setattr(Progress, "update", sigint_in_b)
    argv = [
        "simulate",
        "--trace", str(fixtures / "three-jobs.csv"),
        "--cluster", str(fixtures / "cluster.yaml"),
        "--compare", str(fixtures / "spread.yaml"),
    ]  # fmt: skip
    assert main([*argv, "-o", "json"]) == 130
    document = json.loads(capsys.readouterr().out)
    a, b = document["compare"]["a"], document["compare"]["b"]
    assert a["partial"] is False
    assert a["completed"] == a["jobs"] == 3
    assert b["partial"] is True
    assert b["completed"] < 3
    assert document["compare"]["partial"] is True  # diff compares unequal simulated times
    report = tmp_path / "report.html"
    assert main([*argv, "--report", str(report)]) == 130
    table = capsys.readouterr().out.splitlines()
    partial = table[2]  # the first row, under the header and its rule, as for a single run
    assert partial.startswith("PARTIAL (interrupted)")
    assert partial.split()[2] == "-"  # A: not partial
    assert "simulated" in partial
    page = report.read_text()
    assert 'class="diff better"' not in page
    assert 'class="diff worse"' not in page
    assert "B minus A, not coloured: one run is partial" in page


def test_compare_interrupted_in_a_prints_a_partial_and_runs_no_b(
    fixtures: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    update = Progress.update

    def sigterm_in_a(self: Progress, simulated: float, done: int, total: int) -> None:
        if self.label.startswith("A") and done >= 1:
            signal.raise_signal(signal.SIGTERM)
        update(self, simulated, done, total)

    monkeypatch.setattr(Progress, "update", sigterm_in_a)
    argv = [
        "simulate",
        "--trace", str(fixtures / "three-jobs.csv"),
        "--cluster", str(fixtures / "cluster.yaml"),
        "--compare", str(fixtures / "spread.yaml"),
        "-o", "json",
    ]  # fmt: skip
    assert main(argv) == 143
    document = json.loads(capsys.readouterr().out)
    assert "compare" not in document
    assert document["partial"] is True
