"""``podmuster simulate`` (docs/cli.md §5): the three input forms, JSON keys, report, compare.

Covers: the CSV form and its §5 JSON keys; the manifest form with a reclaim
whose numbers are computed by hand; the Alibaba layout on a small fixture;
the HTML report with its four plots; ``--compare`` binpack vs spread on a
fragmentation-prone trace (JSON a/b/diff and two table columns); the
progress lines on request; bad input as one line with exit code 2.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from podmuster.cli import main

CONTRACT_KEYS = {
    "jobs",
    "completed",
    "wait_time_s",
    "jct_s",
    "makespan_s",
    "gpu_allocation_ratio",
    "fragmentation",
    "fair_share_deviation",
    "jain_index",
    "preemptions",
    "reclaims",
    "consolidation_moves",
    "engine_seconds",
    "queues",
}


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["simulate", *argv, "-o", "json"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def test_csv_trace_form_prints_the_contract_keys(
    fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = _json(
        capsys,
        "--trace", str(fixtures / "three-jobs.csv"),
        "--trace-format", "csv",
        "--cluster", str(fixtures / "cluster.yaml"),
    )  # fmt: skip
    assert document.keys() >= CONTRACT_KEYS
    assert set(document["wait_time_s"]) == {"mean", "p50", "p95"}
    assert document["makespan_s"] == 22.0
    queue = document["queues"]["team-a"]
    assert {"jobs", "completed", "wait_time_s", "jct_s", "preemptions", "reclaims"} <= queue.keys()


def test_manifest_form_reclaims_for_the_starved_queue(
    fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # train (PyTorchJob, 2 x 1 GPU, team-a) arrives at 10 s and runs from 11 s on both GPUs.
    # eval (Job, 1 GPU, team-b) arrives at 60 s: the cycle at 60 reclaims one train pod
    # (team-a is above its fair share of 1 GPU), applied at 61: 2 GPUs x 50 s are lost.
    # eval is bound at 61, runs 62..92; train's pod is re-bound at 93 and runs 93..393.
    document = _json(
        capsys,
        "--cluster", str(fixtures / "cluster.yaml"),
        "--workloads", str(fixtures / "workloads"),
    )  # fmt: skip
    assert document["jobs"] == 2
    assert document["completed"] == 2
    assert document["reclaims"] == 1
    assert document["preemptions"] == 0
    assert document["gpu_hours_lost"] == pytest.approx(100 / 3600, abs=1e-6)
    assert document["queues"]["team-a"]["jct_s"]["mean"] == 383.0
    assert document["queues"]["team-b"]["jct_s"]["mean"] == 32.0
    assert document["queues"]["team-a"]["reclaims"] == 1
    assert document["makespan_s"] == 383.0


def test_alibaba_layout(fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = _json(capsys, "--trace", str(fixtures / "openb"), "--trace-format", "alibaba-2023")
    assert document["jobs"] == 4
    assert document["skipped"] == {
        "did not run (deletion_time <= scheduled_time)": 1,
        "never scheduled in the trace (no scheduled_time)": 1,
    }
    assert set(document["queues"]) == {"be", "burstable", "ls"}
    # openb-pod-0003 (8 GPUs, V100M32 only) runs 31..131 on the one V100M32 node
    assert document["makespan_s"] == 131.0


def test_report_renders_with_plots(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.html"
    code = main(
        [
            "simulate",
            "--trace", str(fixtures / "frag.csv"),
            "--cluster", str(fixtures / "frag-cluster.yaml"),
            "--compare", str(fixtures / "spread.yaml"),
            "--report", str(report),
        ]
    )  # fmt: skip
    assert code == 0
    assert f"report: {report}" in capsys.readouterr().out
    page = report.read_text()
    assert page.startswith("<!DOCTYPE html>")
    # allocation, two fair-share plots (A and B), wait CDF, pending reasons
    assert len(re.findall(r'src="data:image/png;base64,iVBOR', page)) == 5
    for heading in ("GPU allocation over time", "allocated vs fair share", "Wait time CDF"):
        assert heading in page
    assert "Pending reasons" in page


def test_compare_binpack_and_spread(fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "--trace", str(fixtures / "frag.csv"),
        "--cluster", str(fixtures / "frag-cluster.yaml"),
        "--config", str(fixtures / "spread-allocate-only.yaml"),
    ]  # fmt: skip
    binpack = fixtures.parent / "fixtures" / "binpack-allocate-only.yaml"
    document = _json(capsys, *argv[:4], "--config", str(binpack), "--config", argv[5])
    a, b, diff = (document["compare"][k] for k in ("a", "b", "diff"))
    assert document["fragmentation"] == a["fragmentation"] == 0.0  # single-run keys are A's
    assert b["fragmentation"] > 0.0
    assert diff["fragmentation"] == pytest.approx(b["fragmentation"])
    assert diff["wait_time_s"]["mean"] > 0
    assert main(["simulate", *argv[:4], "--config", str(binpack), "--compare", argv[5]]) == 0
    table = capsys.readouterr().out
    assert "A: binpack-allocate-only.yaml" in table
    assert "B: spread-allocate-only.yaml" in table
    line = next(row for row in table.splitlines() if row.startswith("fragmentation"))
    assert line.split()[1:] == ["0.000", "0.429"]


def test_progress_from_the_start_on_request(
    fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "--trace",
        str(fixtures / "three-jobs.csv"),
        "--cluster",
        str(fixtures / "cluster.yaml"),
    ]
    assert main(["simulate", *argv, "--progress"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("simulating: simulated ")
    assert lines[-1].startswith("simulating: finished at ")
    assert "3/3 jobs done" in lines[-1]
    assert main(["simulate", *argv, "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("files", "extra", "message"),
    [
        (
            {"t.csv": "submit_time,team,gpus_per_pod,duration\n0,team-a,1,10\n5,team-a,x,10\n"},
            [],
            r"t\.csv: line 3: column gpus_per_pod: expected a number, got 'x'",
        ),
        (
            {"t.csv": "submit_time,team,gpus_per_pod,duration\n0,nobody,1,10\n"},
            [],
            r"t\.csv: line 2: column team: no queue 'nobody' in the cluster; known: team-a, team-b$",
        ),
        (
            {"t.csv": "submit_time,team,duration\n0,team-a,10\n"},
            [],
            r"t\.csv: line 1: missing column 'gpus_per_pod'",
        ),
        (
            {"t.csv": "submit_time,team,gpus_per_pod,duration,priority\n0,team-a,1,10,urgent\n"},
            [],
            r"t\.csv: line 2: column priority: unknown PriorityClass 'urgent'",
        ),
        (  # a misspelt optional column once ran a 4-pod gang as one pod, without a word
            {"t.csv": "submit_time,team,gpus_per_pod,pod_per_gang,duration\n0,team-a,1,4,10\n"},
            [],
            r"t\.csv: line 1: column pod_per_gang: unknown column \(did you mean pods_per_gang\?\); "
            r"known: submit_time, team, gpus_per_pod, pods_per_gang, duration, priority, cpu, "
            r"memory, name$",
        ),
        (
            {"t.csv": "submit_time,team,gpus_per_pod,duration,colour\n0,team-a,1,10,red\n"},
            [],
            r"t\.csv: line 1: column colour: unknown column; known: submit_time, ",
        ),
    ],
)
def test_bad_csv_rows_are_one_line_errors(
    fixtures: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    files: dict[str, str],
    extra: list[str],
    message: str,
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    code = main(
        [
            "simulate",
            "--trace",
            str(tmp_path / "t.csv"),
            "--cluster",
            str(fixtures / "cluster.yaml"),
            *extra,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert re.search(message, err), err


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["simulate", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    return err


def test_bad_alibaba_row(
    tmp_path: Path, fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "openb"
    trace.mkdir()
    (trace / "openb_node_list_all_node.csv").write_text(
        (fixtures / "openb" / "openb_node_list_gpu_node.csv").read_text()
    )
    (trace / "openb_pod_list_default.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,qos,creation_time,deletion_time,scheduled_time\n"
        "p0,1000,1024,1,1500,LS,0,10,0\n"
    )
    err = _error(capsys, "--trace", str(trace))
    assert "openb_pod_list_default.csv: line 2: column gpu_milli: must be between 1 and 1000" in err


def test_bad_cluster_yaml(
    tmp_path: Path, fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "cluster.yaml"
    bad.write_text("nodePools:\n  - {name: a, count: 2, gpu: 8}\n")
    err = _error(capsys, "--trace", str(fixtures / "three-jobs.csv"), "--cluster", str(bad))
    assert "cluster.yaml: nodePools[0]: gpu: unknown key" in err


QUEUE_OBJECT = (
    "{apiVersion: scheduling.run.ai/v2, kind: Queue, metadata: {name: b}, spec: {parentQueue: %s}}"
)


@pytest.mark.parametrize(
    ("queues", "message"),
    [
        (  # once exit 0, and the queue's jobs waited forever (QueueDoesNotExist)
            "queues: [{name: team-a, parent: nothere}, {name: team-b}]",
            "Queue team-a (queues[0]): parent: no queue 'nothere' in the cluster; known: team-a, team-b",
        ),
        (
            "queues: [{name: team-a, parent: team-b}, {name: team-b, parent: team-a}]",
            "Queue team-a (queues[0]): parent: a parent cycle: team-a -> team-b -> team-a",
        ),
        (
            f"queues: [{{name: team-a}}, {{name: team-b}}]\nobjects: [{QUEUE_OBJECT % 'nothere'}]",
            "Queue b (objects[0]): spec.parentQueue: no queue 'nothere' in the cluster; known: b, ",
        ),
    ],
)
def test_a_queue_parent_names_a_queue_of_the_cluster(
    tmp_path: Path, fixtures: Path, capsys: pytest.CaptureFixture[str], queues: str, message: str
) -> None:
    bad = tmp_path / "cluster.yaml"
    bad.write_text(f"nodes: [{{name: n, gpus: 2}}]\n{queues}\n")
    err = _error(capsys, "--trace", str(fixtures / "three-jobs.csv"), "--cluster", str(bad))
    assert f"podmuster: {bad}: {message}" in err


def test_a_csv_team_names_a_leaf_queue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A team naming a parent queue was accepted and its jobs never started: one line now."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "nodes: [{name: n, gpus: 2}]\n"
        "queues: [{name: research}, {name: nlp, parent: research}, {name: cv, parent: research}]\n"
    )
    trace = tmp_path / "t.csv"
    trace.write_text("submit_time,team,gpus_per_pod,duration\n0,nlp,1,10\n5,research,1,10\n")
    err = _error(capsys, "--trace", str(trace), "--cluster", str(cluster))
    assert f"{trace}: line 3: column team: queue 'research' is a parent queue (of cv, nlp)" in err


def test_workload_without_duration(
    tmp_path: Path, fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (fixtures / "workloads" / "train.yaml").read_text()
    (tmp_path / "w.yaml").write_text(text.replace("simulate.podmuster.io/duration: 5m", "x: y"))
    err = _error(capsys, "--cluster", str(fixtures / "cluster.yaml"), "--workloads", str(tmp_path))
    assert (
        "w.yaml: PyTorchJob team-a/train: metadata.annotations[simulate.podmuster.io/duration]"
        in err
    )


def test_csv_trace_needs_a_cluster(fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, "--trace", str(fixtures / "three-jobs.csv"))
    assert "--cluster: a CSV trace needs --cluster CLUSTER.yaml" in err


BARE_PODS = """
apiVersion: v1
kind: Pod
metadata:
  name: scratch-{i}
  namespace: team-a
  labels: {{kai.scheduler/queue: team-a}}
  annotations:
    simulate.podmuster.io/duration: 100s
spec:
  schedulerName: kai-scheduler
  containers: [{{name: main, image: x, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}]
"""

LATE_JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: late
  namespace: team-b
  labels: {kai.scheduler/queue: team-b}
  annotations:
    simulate.podmuster.io/arrival: 10s
    simulate.podmuster.io/duration: 10s
spec:
  template:
    spec:
      schedulerName: kai-scheduler
      restartPolicy: Never
      containers: [{name: main, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
"""


def test_an_evicted_bare_pod_is_gone(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two bare pods of team-a hold both GPUs; team-b's Job reclaims one at 10. A bare pod
    # has no controller to re-create it: its job never completes.
    (tmp_path / "pods.yaml").write_text("---".join(BARE_PODS.format(i=i) for i in range(2)))
    (tmp_path / "late.yaml").write_text(LATE_JOB)
    document = _json(
        capsys, "--cluster", str(fixtures / "cluster.yaml"), "--workloads", str(tmp_path)
    )
    assert document["jobs"] == 3
    assert document["reclaims"] == 1
    assert document["completed"] == 2
    assert document["queues"]["team-a"]["completed"] == 1


def test_a_csv_saved_by_a_spreadsheet_reads_as_the_plain_file(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Once "missing column 'submit_time'": "CSV UTF-8" from a spreadsheet starts with a
    byte-order mark (and ends its lines with CR LF), which became part of the first name."""
    plain = fixtures / "three-jobs.csv"
    saved = tmp_path / "three-jobs.csv"
    saved.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes().replace(b"\n", b"\r\n"))
    cluster = str(fixtures / "cluster.yaml")
    timings = {"engine_seconds", "snapshot_seconds", "wall_seconds"}
    documents = [_json(capsys, "--trace", str(p), "--cluster", cluster) for p in (plain, saved)]
    for document in documents:
        for key in timings:
            document.pop(key, None)
    assert documents[0] == documents[1]
    assert documents[1]["jobs"] == 3


DOCS = Path(__file__).resolve().parents[2] / "docs" / "simulate.md"


def _doc_block(heading: str, language: str) -> str:
    """The first ``language`` code block under ``heading`` in docs/simulate.md."""
    section = DOCS.read_text().split(f"\n{heading}\n", 1)[1]
    return section.split(f"```{language}\n", 1)[1].split("```", 1)[0]


def test_the_documented_csv_trace_runs_on_the_documented_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Copied from docs/simulate.md together, they once stopped at "no queue 'prod'", and
    the job of the parent queue research never started."""
    (tmp_path / "jobs.csv").write_text(_doc_block("## Input: the CSV trace (`csv`)", "csv"))
    (tmp_path / "cluster.yaml").write_text(_doc_block("## The cluster YAML", "yaml"))
    document = _json(
        capsys, "--trace", str(tmp_path / "jobs.csv"), "--cluster", str(tmp_path / "cluster.yaml")
    )
    assert (document["jobs"], document["completed"]) == (2, 2)
