"""Metrics checked against small traces computed by hand (docs/simulate.md definitions).

Simulated-time rules used in every expectation: cycles run on 1 s ticks, a
cycle's binds take effect one period later, a job runs for its duration from
then. So a job arriving at an idle cluster at t waits exactly 1 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.config import SchedulerConfig
from simulator import cluster, csvtrace
from simulator.events import Simulation
from simulator.metrics import jain, summary


def _run(fixtures: Path, trace: str, cluster_file: str = "cluster.yaml", **config: object):
    scenario = csvtrace.load(str(fixtures / trace), cluster.load(str(fixtures / cluster_file)))
    return Simulation(scenario, SchedulerConfig(**config)).run().figures  # type: ignore[arg-type]


def test_three_jobs_on_two_one_gpu_nodes(fixtures: Path) -> None:
    # a1 (0, 10 s) and a2 (0, 20 s) start at 1; a3 arrives at 5, waits for a1's GPU
    # (free at 11), is bound by the cycle at 11 and starts at 12, ends at 22.
    figures = _run(fixtures, "three-jobs.csv")
    assert figures["jobs"] == 3
    assert figures["completed"] == 3
    assert figures["wait_time_s"] == {"mean": 3.0, "p50": 1.0, "p95": pytest.approx(6.4)}
    # JCTs 11, 21, 17
    assert figures["jct_s"] == {
        "mean": pytest.approx(49 / 3, abs=1e-5),
        "p50": 17.0,
        "p95": pytest.approx(20.6),
    }
    assert figures["makespan_s"] == 22.0
    # GPUs allocated: 0 on [0,1), 2 on [1,11), 1 on [11,12), 2 on [12,21), 1 on [21,22)
    assert figures["gpu_allocation_ratio"] == pytest.approx(40 / 44, abs=1e-6)
    assert figures["fragmentation"] == 0.0
    assert figures["preemptions"] == figures["reclaims"] == figures["consolidation_moves"] == 0
    assert figures["gpu_hours_lost"] == 0.0
    assert figures["pending_reasons"]["Insufficient nvidia.com/gpu"] == 1
    assert figures["queues"]["team-a"]["jobs"] == 3
    assert figures["queues"]["team-b"]["jobs"] == 0


def test_fair_share_deviation_and_jain_index_over_two_queues(fixtures: Path) -> None:
    # short (team-a, 10 s) and long (team-b, 20 s) arrive at 0 and wait 1 s; the engine
    # gives each queue a fair share of 1 GPU while they wait, their allocation afterwards.
    figures = _run(fixtures, "two-queues.csv")
    assert figures["makespan_s"] == 21.0
    assert figures["gpu_allocation_ratio"] == pytest.approx(30 / 42, abs=1e-6)
    # |allocated - fair share| = 1 GPU per queue during [0, 1): 2 GPU-s over 2 GPUs x 21 s
    assert figures["fair_share_deviation"] == pytest.approx(2 / 42, abs=1e-6)
    team_a, team_b = figures["queues"]["team-a"], figures["queues"]["team-b"]
    assert team_a["fair_share_deviation"] == pytest.approx(1 / 21, abs=1e-6)
    assert team_a["allocated_gpus_mean"] == pytest.approx(10 / 21, abs=1e-6)
    assert team_b["fair_share_gpus_mean"] == pytest.approx(21 / 21, abs=1e-6)
    # x = allocation integral / fair-share integral: 10/11 and 20/21
    x = [10 / 11, 20 / 21]
    assert figures["jain_index"] == pytest.approx(sum(x) ** 2 / (2 * sum(v * v for v in x)))


def test_fragmentation_counts_idle_gpus_the_head_of_queue_cannot_use(fixtures: Path) -> None:
    # spread puts small-a and small-b on different nodes (1 idle GPU each); wide (2 GPUs,
    # arrives at 5) cannot use them until both finish at 101, starts at 102, ends at 112.
    figures = _run(
        fixtures,
        "frag.csv",
        "frag-cluster.yaml",
        actions=("allocate",),
        gpu_placement="spread",
        cpu_placement="spread",
    )
    assert figures["wait_time_s"]["p95"] == pytest.approx(1 + 0.9 * 96)
    assert figures["makespan_s"] == 112.0
    # 2 stranded GPUs on [5, 101) over 4 GPUs x 112 s
    assert figures["fragmentation"] == pytest.approx(2 * 96 / (4 * 112), abs=1e-6)
    binpacked = _run(fixtures, "frag.csv", "frag-cluster.yaml", actions=("allocate",))
    assert binpacked["fragmentation"] == 0.0
    assert binpacked["makespan_s"] == 101.0


def test_same_input_gives_identical_metrics(fixtures: Path) -> None:
    first = _run(fixtures, "frag.csv", "frag-cluster.yaml", gpu_placement="spread")
    second = _run(fixtures, "frag.csv", "frag-cluster.yaml", gpu_placement="spread")
    for timing in ("engine_seconds", "snapshot_seconds"):
        first.pop(timing)
        second.pop(timing)
    assert first == second


def test_summary_and_jain_helpers() -> None:
    assert summary([]) == {"mean": None, "p50": None, "p95": None}
    assert summary([1.0, 2.0, 3.0]) == {"mean": 2.0, "p50": 2.0, "p95": pytest.approx(2.9)}
    assert jain([]) is None
    assert jain([1.0, 1.0]) == 1.0
    assert jain([1.0, 0.0]) == 0.5


def test_preemption_restarts_the_gang_and_counts_lost_gpu_hours(fixtures: Path) -> None:
    # batch (gang of 2 x 1 GPU, train) runs from 1. urgent (build-preemptible, same queue)
    # arrives at 10: the cycle at 10 preempts batch, applied at 11 (2 GPUs x 10 s lost).
    # urgent is bound at 11 and runs 12..32; batch needs both GPUs again: 33..133.
    figures = _run(fixtures, "preempt.csv")
    assert figures["preemptions"] == 1
    assert figures["reclaims"] == 0
    assert figures["gpu_hours_lost"] == pytest.approx(20 / 3600, abs=1e-6)
    assert figures["queues"]["team-a"]["gpu_hours_lost"] == pytest.approx(20 / 3600, abs=1e-6)
    assert figures["wait_time_s"]["mean"] == 1.5  # first starts: batch at 1, urgent at 12
    assert figures["jct_s"]["mean"] == (133 + 22) / 2
    assert figures["makespan_s"] == 133.0


def test_fractional_gpu_rows_carry_the_gpu_fraction_annotation(fixtures: Path) -> None:
    scenario = csvtrace.load(
        str(fixtures / "fraction.csv"), cluster.load(str(fixtures / "cluster.yaml"))
    )
    (job,) = scenario.jobs
    assert job.pod_gpus == [0.5]
    pod = job.pods[0]
    assert pod["metadata"]["annotations"]["gpu-fraction"] == "0.5"
    assert "nvidia.com/gpu" not in pod["spec"]["containers"][0]["resources"]["requests"]
    figures = Simulation(scenario, SchedulerConfig()).run().figures
    # half a GPU for 10 s (from 1 to 11) on a 2-GPU cluster over 11 s
    assert figures["gpu_allocation_ratio"] == pytest.approx(0.5 * 10 / (2 * 11), abs=1e-6)


def test_half_gpu_pods_share_devices(fixtures: Path) -> None:
    # five 0.5-GPU jobs on two 1-GPU nodes: four share the two devices from 1 to 11, the
    # fifth waits for a half and runs 12..22 (each bound pod carries its runai-gpu-group
    # label, so the next cycle sees the shared devices as the binder left them)
    figures = _run(fixtures, "halves.csv")
    assert figures["wait_time_s"]["mean"] == pytest.approx((4 * 1 + 12) / 5)
    assert figures["makespan_s"] == 22.0
    assert figures["gpu_allocation_ratio"] == pytest.approx(
        (2 * 10 + 0.5 * 10) / (2 * 22), abs=1e-6
    )


def test_a_minimum_runtime_ending_wakes_the_loop_for_the_waiting_preemptor(
    fixtures: Path,
) -> None:
    # As above, but batch is protected for 30 s from its start stamp (the cycle at 0).
    # Nothing happens in the trace between urgent's arrival at 10 and batch's end at 101:
    # the wake-up at 30 runs the cycle that preempts (applied at 31, 2 GPUs x 30 s lost);
    # urgent is bound by the cycle at 31 and runs 32..52; batch again 53..153.
    figures = _run(fixtures, "preempt.csv", default_preempt_min_runtime_s=30.0)
    assert figures["preemptions"] == 1
    assert figures["gpu_hours_lost"] == pytest.approx(60 / 3600, abs=1e-6)
    assert figures["wait_time_s"]["mean"] == (1 + 22) / 2
    assert figures["makespan_s"] == 153.0


def test_a_minimum_runtime_longer_than_the_job_never_preempts(fixtures: Path) -> None:
    # protected until 200, batch ends at 101 first: urgent starts at 102, no GPU time lost.
    figures = _run(fixtures, "preempt.csv", default_preempt_min_runtime_s=200.0)
    assert figures["preemptions"] == 0
    assert figures["gpu_hours_lost"] == 0.0
    assert figures["makespan_s"] == 122.0
