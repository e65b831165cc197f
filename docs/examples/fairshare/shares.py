"""Print the fair shares of the time-based fair share example over time (docs/simulate.md).

Run from the repository root: ``python docs/examples/fairshare/shares.py [PLOT.png]``.
It simulates jobs.csv on cluster.yaml under fairshare.yaml (usage recorded and fed
back every minute) and under no-usage.yaml, then prints each queue's GPU fair share
every 30 simulated minutes as a Markdown table; with PLOT.png it also writes the
simulator's fair-share plot of the fairshare.yaml run.
"""

from __future__ import annotations

import base64
import bisect
import sys
from pathlib import Path

import yaml

from scheduler.config import load_config
from simulator import cluster, csvtrace, plots
from simulator.events import Simulation
from simulator.metrics import RunMetrics

HERE = Path(__file__).parent


def run(config_file: str) -> RunMetrics:
    scenario = csvtrace.load(str(HERE / "jobs.csv"), cluster.load(str(HERE / "cluster.yaml")))
    config = load_config(yaml.safe_load((HERE / config_file).read_text()))
    return Simulation(scenario, config).run()


def share_at(metrics: RunMetrics, queue: str, t: float) -> float:
    times = metrics.series.times
    i = max(0, bisect.bisect_right(times, t) - 1)
    return metrics.series.queues[queue].fair_share[i]


def main() -> None:
    usage, plain = run("fairshare.yaml"), run("no-usage.yaml")
    print("| time | heavy | light | heavy, no usage | light, no usage |")
    print("|---|---|---|---|---|")
    for step in range(19):
        t = step * 1800.0
        row = [share_at(m, q, t) for m in (usage, plain) for q in ("heavy", "light")]
        cells = " | ".join(f"{v:g}" for v in row)
        print(f"| {int(t // 3600)}h{int(t % 3600 // 60):02d} | {cells} |")
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_bytes(base64.b64decode(plots.fair_share("fairshare.yaml", usage)))


if __name__ == "__main__":
    main()
