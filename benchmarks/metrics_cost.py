"""Metrics benchmark: what a scheduling cycle's metric updates cost, before and after
``prometheus_client``, as a share of the cycle at 5,000 nodes.

Why: the metrics moved from a hand-written registry to ``prometheus_client`` on the
condition that this costs no more than 1% of a cycle. One cycle's updates are one
``scheduler.metrics.observe_result`` call: the latencies, the BindRequests created,
the evictions per action and every queue's three fair-share gauges (cleared and set
again). The cycle at 5,000 nodes / 100,000 pods is ``docs/benchmarks.md``'s allocate
cycle (``benchmarks/engine.py``: 0.83-0.97 s; the low end is used, the share is then an
upper bound). The queue tree is the engine benchmark's (``benchmarks.generate.queues``,
65 queues) and a 1,000-queue tree for a large platform. A scrape (``/metrics``
rendered once) runs in the server's thread, not in the cycle; its time is shown beside.

The "before" code is the hand-written registry as of ``--before`` (a commit), read
from git, so the comparison needs no copy of it in the tree.

Run: ``python -m benchmarks.metrics_cost [--before 44f9f90] [--repeat 200]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import generate
from scheduler import metrics as new_metrics
from scheduler.cycle import Bind, CycleResult, Eviction, QueueSummary
from scheduler.metrics.families import Metrics

ROOT = Path(__file__).resolve().parent.parent
CYCLE_SECONDS = 0.83
"""The allocate cycle at 5,000 nodes / 100,000 pods (docs/benchmarks.md, the low end)."""
OLD = ("registry", "families", "__init__")


def cycle_result(queues: int, binds: int = 20_000, evictions: int = 300) -> CycleResult:
    """A cycle at 5,000 nodes: 20,000 pending pods placed, some evictions, every queue."""
    names = [str(q["metadata"]["name"]) for q in generate.queues()]
    names += [f"extra-{i}" for i in range(max(0, queues - len(names)))]
    share = (2.0, 16_000.0, 64e9)
    zero = (0.0, 0.0, 0.0)
    actions = ("reclaim", "preempt", "consolidation")
    return CycleResult(
        binds=[Bind(f"ns/p{i}", f"n{i % 5000}") for i in range(binds)],
        evictions=[Eviction(f"ns/v{i}", actions[i % 3], None) for i in range(evictions)],
        queues=[QueueSummary(n, None, zero, share, zero, zero, zero) for n in names[:queues]],
    )


def old_module(rev: str) -> types.ModuleType:
    """``scheduler.metrics`` as of ``rev`` (its registry, families and helpers), loaded
    under private names."""
    loaded: dict[str, types.ModuleType] = {}
    for part in OLD:
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:scheduler/metrics/{part}.py"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        for other in OLD[:-1]:
            source = source.replace(f"scheduler.metrics.{other}", f"_old_metrics_{other}")
        module = types.ModuleType(f"_old_metrics_{part}")
        sys.modules[module.__name__] = module
        exec(compile(source, f"{rev}:{part}.py", "exec"), module.__dict__)
        loaded[part] = module
    return loaded["__init__"]


def per_call(fn: Callable[[], Any], repeat: int) -> float:
    """Median CPU seconds of this thread for one call, after one warm-up call (CPU
    time: the machine's other processes do not inflate it)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.thread_time()
        fn()
        times.append(time.thread_time() - t0)
    return statistics.median(times)


def measure(rev: str, queues: int, repeat: int) -> dict[str, float]:
    result = cycle_result(queues)
    old = old_module(rev)
    before = old.Metrics(sys.modules["_old_metrics_registry"].Registry())
    after = Metrics()
    actions = {"allocate": 700.0, "consolidation": 50.0, "reclaim": 30.0, "preempt": 20.0}

    def old_cycle() -> None:
        old.observe_result(result, 900.0, actions, metrics=before)

    def new_cycle() -> None:
        new_metrics.observe_result(result, 900.0, actions, metrics=after)

    old_s, new_s = per_call(old_cycle, repeat), per_call(new_cycle, repeat)
    return {
        "queues": queues,
        "before_cycle_us": round(old_s * 1e6, 1),
        "after_cycle_us": round(new_s * 1e6, 1),
        "after_share_of_cycle_pct": round(100 * new_s / CYCLE_SECONDS, 4),
        "before_scrape_ms": round(per_call(before.registry.render, 20) * 1e3, 2),
        "after_scrape_ms": round(per_call(after.render, 20) * 1e3, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="44f9f90", help="commit of the old registry")
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--queues", default="65,1000", help="queue counts, comma-separated")
    args = parser.parse_args(argv)
    rows = [measure(args.before, int(q), args.repeat) for q in args.queues.split(",")]
    for row in rows:
        print(json.dumps(row))
    worst = max(row["after_share_of_cycle_pct"] for row in rows)
    print(f"worst share of a {CYCLE_SECONDS} s cycle: {worst}% (limit 1%)")
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
