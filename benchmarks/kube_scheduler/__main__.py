"""Command line for the anchor benchmark; prints one line per run and JSON.

    .venv/bin/python -m benchmarks.kube_scheduler                # 1,000 nodes, 10,000 pods
    .venv/bin/python -m benchmarks.kube_scheduler --qps 50 --burst 100 --qps 500 --burst 1000
    .venv/bin/python -m benchmarks.kube_scheduler --scheduler podmuster --gangs 100 --gang-size 16

Each (--qps, --burst) pair is one run on a fresh control plane, for every
scheduler named with --scheduler (default: all registered); the schedulers take
turns within each pair so machine load drifts over both alike. ``--gangs`` runs the
gang workload instead of single-pod jobs, for the schedulers that know PodGroups.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tests.e2e.controlplane import Binaries

from .harness import Workload, run
from .schedulers import SCHEDULERS, Limits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kube_scheduler")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--scheduler", action="append", choices=sorted(SCHEDULERS))
    parser.add_argument("--qps", type=float, action="append", help="scheduler client QPS")
    parser.add_argument("--burst", type=int, action="append", help="scheduler client burst")
    parser.add_argument("--gangs", type=int, default=0, help="gangs instead of single pods")
    parser.add_argument("--gang-size", type=int, default=16, help="pods (minMember) per gang")
    parser.add_argument("--workers", type=int, default=16, help="threads creating pods")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run")
    parser.add_argument(
        "--backlog",
        action="store_true",
        help="create every pod first, then start the scheduler (measures it alone)",
    )
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    qps = args.qps or [50.0]
    burst = args.burst or [100]
    if len(qps) != len(burst):
        parser.error("give as many --burst as --qps")

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    workload = Workload(args.gangs, args.gang_size) if args.gangs else Workload(args.pods)
    names = args.scheduler or sorted(SCHEDULERS)
    if args.gangs:
        names = [n for n in names if SCHEDULERS[n].gangs]  # kube-scheduler has no gangs
    results = []
    for q, b in zip(qps, burst, strict=True):
        for name in names:
            log(f"== {name}: {args.nodes} nodes, {workload.describe()}, QPS {q}, burst {b}")
            res = run(
                SCHEDULERS[name],
                Binaries.default(),
                nodes=args.nodes,
                workload=workload,
                limits=Limits(q, b),
                workers=args.workers,
                timeout=args.timeout,
                backlog=args.backlog,
                log=log,
            )
            results.append(res.as_dict())
            print(
                f"{name} [{res.mode}]: {res.bound}/{res.pods} pods bound on {res.nodes} nodes in "
                f"{res.span_seconds:.1f}s = {res.pods_per_second:.1f} pods/s "
                f"(first bind at {res.first_bound_seconds:.1f}s"
                + (
                    f", {res.first_bound_after_sync:.2f}s after informers synced"
                    f" at {res.synced_seconds:.2f}s"
                    if res.first_bound_after_sync is not None and res.synced_seconds is not None
                    else ""
                )
                + ", "
                f"steady {res.steady_pods_per_second:.1f}/s, p50 {res.latency_p50:.2f}s, "
                f"p99 {res.latency_p99:.2f}s; created at {res.create_rate:.0f}/s; "
                f"client QPS {res.qps:g}, burst {res.burst}"
                + (f"; gangs p50 {res.gang_p50:.2f}s p99 {res.gang_p99:.2f}s" if res.gangs else "")
                + f"; load {res.load_average})"
                + "".join(f"; {n}" for n in res.notes),
                flush=True,
            )
            if args.out:  # after every run: a later failure keeps what was measured
                args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0 if all(not r["timed_out"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
