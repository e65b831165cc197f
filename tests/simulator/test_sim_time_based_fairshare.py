"""Time-based fair share in a simulation: usage is recorded as the run goes and fed back.

One 8-GPU node; ``heavy`` and ``light`` have quota 0 and weight 1. heavy runs 4-GPU jobs
from t = 0 and keeps the node full; light's 4-GPU jobs arrive at 2 h. Without usage the
two split 4 / 4. With a 4 h sliding window and kValue 1, heavy's usage at 2 h is 1.0
(it held the whole cluster since the record began) and light's 0, so heavy's weight is
0.5 + (0.5 - 1) = 0 and light's 1: light's fair share is all 8 and it reclaims heavy's
jobs. As light then uses the cluster, heavy's share comes back.
"""

from __future__ import annotations

import bisect
from pathlib import Path

import pytest

from scheduler.config import SchedulerConfig, load_config
from simulator import cluster, csvtrace
from simulator.events import Simulation
from simulator.metrics import RunMetrics

H = 3600.0
CLUSTER = """nodes:
  - {name: n0, gpus: 8}
queues:
  - {name: heavy, gpuQuota: 0, overQuotaWeight: 1}
  - {name: light, gpuQuota: 0, overQuotaWeight: 1}
"""
USAGE = {
    "plugins": {"proportion": {"arguments": {"kValue": 1.0}}},
    "usageDBConfig": {"usageParams": {"windowSize": "4h", "fetchInterval": "1m"}},
}


def _run(tmp_path: Path, config: SchedulerConfig) -> RunMetrics:
    rows = ["submit_time,team,gpus_per_pod,pods_per_gang,duration,name"]
    rows += [f"0,heavy,4,1,30m,heavy-{i:02d}" for i in range(16)]
    rows += [f"2h,light,4,1,30m,light-{i:02d}" for i in range(8)]
    (tmp_path / "jobs.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    scenario = csvtrace.load(
        str(tmp_path / "jobs.csv"), cluster.load(str(tmp_path / "cluster.yaml"))
    )
    return Simulation(scenario, config).run()


def _share(metrics: RunMetrics, queue: str, t: float) -> float:
    i = bisect.bisect_right(metrics.series.times, t) - 1
    return metrics.series.queues[queue].fair_share[i]


def test_heavy_users_share_falls_then_comes_back(tmp_path: Path) -> None:
    with_usage = _run(tmp_path, load_config(USAGE))
    without = _run(tmp_path, SchedulerConfig())
    just_after = 2 * H + 2.0  # light's jobs have had their first cycle
    assert _share(without, "heavy", just_after) == 4
    assert _share(with_usage, "heavy", just_after) == 0
    assert _share(with_usage, "light", just_after) == 8
    # light reclaimed both of heavy's running jobs (without usage: one)
    assert with_usage.figures["reclaims"] == 2
    assert without.figures["reclaims"] == 1
    # light's use of the cluster brings heavy's share back up while both still wait
    later = [_share(with_usage, "heavy", 2 * H + m * 60.0) for m in range(0, 121, 10)]
    assert max(later) >= 3
    assert later == sorted(later)  # never falls again while light catches up
    # light waited less with time-based fair share
    assert (
        with_usage.figures["queues"]["light"]["wait_time_s"]["mean"]
        < without.figures["queues"]["light"]["wait_time_s"]["mean"]
    )


def test_without_usage_config_no_usage_is_recorded(tmp_path: Path) -> None:
    sim_config = SchedulerConfig(k_value=10.0)  # k alone changes nothing: u = 0
    metrics = _run(tmp_path, sim_config)
    assert _share(metrics, "heavy", 2 * H + 2.0) == 4
    assert metrics.figures["reclaims"] == pytest.approx(1)
