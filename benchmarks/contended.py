"""Contended CSV traces for the simulator benchmark: more work than GPUs, for hours.

Why: the Alibaba trace is sparse (about 45 jobs live at once), so it never
shows what a user with a busy cluster meets: gangs waiting for hours,
reclaim between teams, preemption of training by builds. This module writes,
deterministically from a seed, a trace in the simulator's CSV format
(:mod:`simulator.csvtrace`), the cluster YAML it runs on (8-GPU nodes, a few
teams with GPU quotas that add up to the cluster) and a spread configuration
for ``--compare``.

Run: ``python -m benchmarks.contended --jobs 100 --gpus 48 --out DIR``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys

import yaml

GPUS_PER_NODE = 8
TEAMS = ("research", "nlp", "vision", "prod")
# (gpus_per_pod, pods_per_gang, weight): single GPUs and shared halves, whole nodes, gangs
SHAPES = (
    (0.5, 1, 3),
    (1, 1, 6),
    (2, 1, 3),
    (1, 4, 2),
    (4, 1, 2),
    (8, 1, 1),
    (4, 2, 1),
    (8, 2, 1),
)
# (priority class, weight): all preemptible; builds (75) preempt training (50) in their queue
PRIORITIES = (("train", 7), ("build-preemptible", 3))


def trace_rows(jobs: int, gpus: int, seed: int) -> list[str]:
    """CSV lines (header first): about three times the cluster's GPU-hours arrive in the first half.

    Arrivals come in a Poisson stream sized so the work asked for is about
    three times what the cluster can run over the arrival window; durations
    are 10 minutes to 2 hours.
    """
    rng = random.Random(seed)
    shapes = [shape[:2] for shape in SHAPES]
    shape_weights = [shape[2] for shape in SHAPES]
    mean_gpus = sum(g * p * w for g, p, w in SHAPES) / sum(shape_weights)
    mean_duration = 65 * 60.0
    # jobs * mean_gpus * mean_duration = 3 * gpus * window
    window = jobs * mean_gpus * mean_duration / (3 * gpus)
    rate = jobs / window
    lines = ["submit_time,team,gpus_per_pod,pods_per_gang,duration,priority,name"]
    at = 0.0
    for index in range(jobs):
        at += rng.expovariate(rate)
        gpu, pods = rng.choices(shapes, shape_weights)[0]
        if gpu * pods > gpus:
            gpu, pods = 1, 1
        team = rng.choice(TEAMS)
        priority = rng.choices([p for p, _ in PRIORITIES], [w for _, w in PRIORITIES])[0]
        duration = rng.randint(10, 120) * 60
        lines.append(f"{int(at)},{team},{gpu:g},{pods},{duration},{priority},job-{index:05d}")
    return lines


def cluster_document(gpus: int) -> dict[str, object]:
    """8-GPU nodes and one queue per team; the quotas add up to the cluster's GPUs."""
    if gpus % GPUS_PER_NODE:
        raise ValueError(f"the GPUs must be a multiple of {GPUS_PER_NODE}, got {gpus}")
    share = gpus // len(TEAMS)
    quotas = [share] * len(TEAMS)
    quotas[0] += gpus - share * len(TEAMS)
    return {
        "nodes": [
            {"name": "gpu", "count": gpus // GPUS_PER_NODE, "gpus": GPUS_PER_NODE, "cpu": 96}
        ],
        "queues": [
            {"name": team, "gpuQuota": quota, "overQuotaWeight": 1}
            for team, quota in zip(TEAMS, quotas, strict=True)
        ],
    }


SPREAD = {"placementStrategy": {"gpu": "spread", "cpu": "spread"}}


def write(directory: str, jobs: int, gpus: int, seed: int) -> tuple[str, str, str]:
    """Write ``trace.csv``, ``cluster.yaml`` and ``spread.yaml``; their paths."""
    os.makedirs(directory, exist_ok=True)
    trace = os.path.join(directory, "trace.csv")
    cluster = os.path.join(directory, "cluster.yaml")
    spread = os.path.join(directory, "spread.yaml")
    with open(trace, "w", encoding="utf-8") as handle:
        handle.write("\n".join(trace_rows(jobs, gpus, seed)) + "\n")
    with open(cluster, "w", encoding="utf-8") as handle:
        yaml.safe_dump(cluster_document(gpus), handle, sort_keys=False)
    with open(spread, "w", encoding="utf-8") as handle:
        yaml.safe_dump(SPREAD, handle, sort_keys=False)
    return trace, cluster, spread


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--gpus", type=int, default=48)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--out", required=True, help="directory to write the three files to")
    args = parser.parse_args(argv)
    for path in write(args.out, args.jobs, args.gpus, args.seed):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
