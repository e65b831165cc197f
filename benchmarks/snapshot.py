"""Snapshot build on KAI's reclaim topology: from scratch, cold, steady and after changes.

Why: a scheduling cycle starts with a snapshot, and at 5,000 nodes / 25,000
jobs (KAI's "running" reclaim topology: every job one 1-GPU pod on node
``i % nodes``) building it must stay well inside the cycle (issue 20: at most
0.5 s), which only works when the cache re-derives what changed since the
last snapshot rather than everything. This benchmark ingests the topology into
a :class:`ClusterCache` once, then times:

* **cold**: the first snapshot (every pod group derived, the node table built);
* **steady**: a snapshot with nothing changed since the last;
* **changed**: a snapshot after one period's worth of changes, as a live
  scheduler's watches deliver them: ``--changed`` (default 1%) of the running
  pods and of the PodGroups updated (a status write each), half as many jobs
  created and as many deleted (PodGroup and pod), and as many node heartbeats
  (a status-only Node update). Their ingest (parsing) is timed apart;
* **from scratch**: ingest of every object plus the cold snapshot, what a
  one-off ``build_snapshot`` of these objects costs (KAI's benchmark builds its
  session that way each iteration).

CPU time (``time.process_time``) is reported beside wall time, medians over
``--repeat`` runs, with the load average: the machine is shared.

Run: ``python -m benchmarks.snapshot [--sizes 5000x25000] [--repeat 5] [--changed 0.01]``
(part of ``make bench``).
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from benchmarks import kai_topologies as topo
from benchmarks.generate import group_object, pod_object
from crds.documents import SourcedObject, gc_paused
from scheduler.cache.cluster_cache import ClusterCache

Obj = dict[str, Any]
TARGET_S = 0.5
PRIO = topo.PRIORITY


def _timed(work: Callable[[], object]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``work()``, the collector paused as a cycle pauses it."""
    with gc_paused():
        cpu, wall = time.process_time(), time.perf_counter()
        work()
        return time.process_time() - cpu, time.perf_counter() - wall


class Churn:
    """One period's changes to the topology's objects, different ones each round."""

    def __init__(self, objects: list[Obj], share: float) -> None:
        self.nodes = [o for o in objects if o["kind"] == "Node"]
        self.groups = [o for o in objects if o["kind"] == "PodGroup"]
        self.pods = [o for o in objects if o["kind"] == "Pod"]
        self.share = share
        self.round = 0
        self.created = 0

    def changes(self) -> list[tuple[str, Obj | tuple[str, str]]]:
        """("upsert", object) and ("delete", (kind, key)) pairs for the next round."""
        self.round += 1
        count = max(1, int(len(self.groups) * self.share))
        out: list[tuple[str, Obj | tuple[str, str]]] = []
        start = self.round * count
        for pod in _window(self.pods, start, count):
            out.append(("upsert", _status_write(pod, self.round)))
        for group in _window(self.groups, start + count, count):
            out.append(("upsert", _status_write(group, self.round)))
        for node in _window(self.nodes, start, max(1, int(len(self.nodes) * self.share))):
            out.append(("upsert", _status_write(node, self.round)))
        for _ in range(max(1, count // 2)):
            self.created += 1
            name = f"bench-new-{self.created}"
            created = 10**6 + self.created
            out.append(("upsert", group_object(name, "ns-queue-0", "queue-0", 1, created, PRIO)))
            pod = pod_object(f"{name}-0", name, "ns-queue-0", 1, "1", "1Gi", created, None)
            out.append(("upsert", pod))
            gone = self.groups[(start + 2 * count + self.created) % len(self.groups)]
            meta = gone["metadata"]
            key = f"{meta['namespace']}/{meta['name']}"
            out.append(("delete", ("PodGroup", key)))
            out.append(("delete", ("Pod", f"{key}-0")))
        return out


def _window(objects: list[Obj], start: int, count: int) -> list[Obj]:
    return [objects[(start + i) % len(objects)] for i in range(count)]


def _status_write(obj: Obj, round_number: int) -> Obj:
    """The object as its next watch event carries it: a new resourceVersion and status."""
    out = copy.deepcopy(obj)
    out["metadata"]["resourceVersion"] = str(round_number)
    status = out.setdefault("status", {})
    status["conditions"] = [
        *(c for c in status.get("conditions") or () if c.get("type") != "BenchHeartbeat"),
        {"type": "BenchHeartbeat", "status": "True", "reason": f"round-{round_number}"},
    ]
    return out


def _apply(cache: ClusterCache, changes: list[tuple[str, Any]]) -> None:
    for op, what in changes:
        if op == "upsert":
            cache.upsert(SourcedObject(what, "bench", 0))
        else:
            cache.delete(*what)


def measure(nodes: int, jobs: int, share: float) -> dict[str, float]:
    """One run: a fresh cache of ``running(nodes, jobs)``, then each snapshot timed."""
    objects = topo.running(nodes, jobs).objects
    sourced = [SourcedObject(o, "bench", i) for i, o in enumerate(objects)]
    cache = ClusterCache()
    result: dict[str, float] = {}
    result["ingest_cpu_s"], result["ingest_s"] = _timed(lambda: cache.upsert_all(sourced))
    result["cold_cpu_s"], result["cold_s"] = _timed(cache.snapshot)
    result["steady_cpu_s"], result["steady_s"] = _timed(cache.snapshot)
    churn = Churn(objects, share)
    ingests, snapshots, counts = [], [], []
    for _ in range(3):
        changes = churn.changes()
        counts.append(len(changes))
        ingests.append(_timed(lambda changes=changes: _apply(cache, changes)))  # type: ignore[misc]
        snapshots.append(_timed(cache.snapshot))
    result["changes"] = statistics.median(counts)
    result["changes_ingest_cpu_s"] = statistics.median(c for c, _ in ingests)
    result["changed_cpu_s"] = statistics.median(c for c, _ in snapshots)
    result["changed_s"] = statistics.median(w for _, w in snapshots)
    result["scratch_cpu_s"] = result["ingest_cpu_s"] + result["cold_cpu_s"]
    result["scratch_s"] = result["ingest_s"] + result["cold_s"]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="5000x25000", help="NODESxJOBS[,NODESxJOBS...]")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--changed", type=float, default=0.01, help="share of pods, groups and nodes changed"
    )
    args = parser.parse_args(argv)
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"{os.cpu_count()} cores, load average {load}", flush=True)
    verdicts = []
    for size in args.sizes.split(","):
        nodes, jobs = (int(x) for x in size.split("x"))
        runs = [measure(nodes, jobs, args.changed) for _ in range(args.repeat)]
        print(
            f"snapshot, KAI reclaim topology {nodes} nodes / {jobs} jobs, "
            f"{args.changed:.0%} changed, median of {args.repeat}:"
        )
        medians = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        for key, value in medians.items():
            print(f"  {key:22s} {value:10.3f}")
        for what in ("cold", "changed"):
            for clock, key in (("CPU", f"{what}_cpu_s"), ("wall", f"{what}_s")):
                met = "met" if medians[key] <= TARGET_S else "NOT met"
                verdicts.append(f"{nodes}x{jobs} {what} {clock} {met}")
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"target <= {TARGET_S} s: {'; '.join(verdicts)} (load average now {load})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
