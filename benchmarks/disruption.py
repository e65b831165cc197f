"""Disruption benchmark: one reclaim, preempt or consolidation cycle on 1,000 and 5,000 nodes.

Why: disruption is where KAI's scheduler stops scaling (its ReclaimLargeJobs
benchmark takes 9 s at 500 nodes and does not finish in 40 minutes at 1,000),
so issue 6 sets targets for it: one reclaim cycle <= 5 s at 1,000 nodes and
<= 30 s at 5,000 nodes on a 2-core machine. Each workload is a full cluster of
8-GPU nodes and 50 pending 16-GPU gangs that can only start by disruption:

- reclaim: two queues borrow the whole cluster with 2 x 8-GPU gangs; a third,
  under its quota, submits 50 gangs. Exactly 50 victim gangs must go, taken
  from the borrowing queues and none of them pushed below its fair share;
- preempt: one queue full of low-priority (train) gangs; 50 build gangs
  arrive in it. Exactly 50 victim gangs, all of lower priority;
- consolidation: every node runs four 1-GPU jobs; 50 gangs of 2 x 8-GPU pods
  fit only once two nodes per gang are emptied. Every moved pod lands again,
  eight per gang, and nothing is lost.

The decisions are checked on every run (``check_*``); a wrong decision fails
loudly (``BenchmarkError``) rather than yielding a fast, meaningless figure.
Timings are the best of ``--repeat`` runs (the machine is shared).

Run: ``python -m benchmarks.disruption [--nodes 1000 5000] [--repeat 3]
[--workloads reclaim preempt consolidation] [--json FILE]`` (``make bench-disruption``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from benchmarks import generate
from crds.documents import SourcedObject, gc_paused
from scheduler.actions.disrupting import ConsolidationAction, PreemptAction, ReclaimAction
from scheduler.api.resources import GPU, GPU_UNIT
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.cache.cluster_cache import ClusterCache
from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult, open_session, run_cycle
from scheduler.framework.interfaces import Action
from scheduler.framework.outcome import final_outcome
from scheduler.framework.session import Session
from scheduler.plugins.proportion.plugin import STATE_KEY

GANG_PODS = 2  # a 16-GPU gang: two pods of 8 GPUs, one node each
GANG_GPUS = GANG_PODS * generate.GPUS_PER_NODE
SMALL_PER_NODE = 4  # consolidation: 1-GPU jobs per node, half of each node
TARGETS_S = {1000: 5.0, 5000: 30.0}  # reclaim cycle, issue 6
REFERENCE = "KAI ReclaimLargeJobs: 8.97 s at 500 nodes; 1,000 nodes did not finish in 40 min"

Obj = dict[str, Any]


class BenchmarkError(AssertionError):
    """The engine decided something other than what the workload requires."""


@dataclass(frozen=True)
class Workload:
    """Cluster objects, the action that must resolve them, and the pending gangs' keys."""

    name: str
    action: str
    objects: list[Obj]
    preemptors: frozenset[str]
    gpus_wanted: int


@dataclass
class Decisions:
    """One cycle's decisions by pod key, with what the checks need to know of each pod."""

    evicted: dict[str, str] = field(default_factory=dict)  # pod -> action
    pipelined: dict[str, str] = field(default_factory=dict)  # pod -> node
    bound: dict[str, str] = field(default_factory=dict)  # pod -> node
    fair_share_gpus: dict[str, float] = field(default_factory=dict)  # queue -> GPUs


@dataclass(frozen=True)
class PodFacts:
    job: str
    queue: str
    gpus: int
    priority: str
    node: str | None


def _gang(
    name: str, ns: str, queue: str, created: int, priority: str, nodes: list[str | None]
) -> list[Obj]:
    pods = [
        generate.pod_object(
            f"{name}-{k}", name, ns, generate.GPUS_PER_NODE, "32", "256Gi", created, node
        )
        for k, node in enumerate(nodes)
    ]
    return [generate.group_object(name, ns, queue, len(nodes), created, priority), *pods]


def _node_name(i: int) -> str:
    return str(generate.node(i)["metadata"]["name"])


def _full_of_gangs(nodes: int, queues: list[str], priority: str) -> tuple[list[Obj], int]:
    """Nodes filled with running 2 x 8-GPU gangs, dealt to ``queues`` in turn."""
    objects = [generate.node(i) for i in range(nodes)]
    created = 0
    for k in range(nodes // GANG_PODS):
        queue = queues[k % len(queues)]
        placed: list[str | None] = [_node_name(GANG_PODS * k + j) for j in range(GANG_PODS)]
        objects += _gang(f"run-{k}", f"ns-{queue}", queue, created, priority, placed)
        created += 1
    return objects, created


def _pending(queue: str, count: int, created: int, priority: str) -> tuple[list[Obj], set[str]]:
    objects: list[Obj] = []
    keys = set()
    for j in range(count):
        ns = f"ns-{queue}"
        objects += _gang(f"want-{j}", ns, queue, created + j, priority, [None] * GANG_PODS)
        keys.add(f"{ns}/want-{j}")
    return objects, keys


def reclaim_workload(nodes: int, pending: int = 50) -> Workload:
    """Queues a and b borrow the whole cluster; c, under its quota, wants ``pending`` gangs."""
    total = nodes * generate.GPUS_PER_NODE
    objects, created = _full_of_gangs(nodes, ["team-a", "team-b"], "train")
    objects += [
        generate.queue_object("team-a", None, 0.375 * total, 1, 0),
        generate.queue_object("team-b", None, 0.375 * total, 1, 1),
        generate.queue_object("team-c", None, 0.25 * total, 1, 2),
    ]
    extra, keys = _pending("team-c", pending, created, "train")
    return Workload("reclaim", "reclaim", objects + extra, frozenset(keys), pending * GANG_GPUS)


def preempt_workload(nodes: int, pending: int = 50) -> Workload:
    """One queue full of train gangs; ``pending`` build (non-preemptible) gangs arrive in it."""
    total = nodes * generate.GPUS_PER_NODE
    objects, created = _full_of_gangs(nodes, ["team-a"], "train")
    objects.append(generate.queue_object("team-a", None, total, 1, 0))
    extra, keys = _pending("team-a", pending, created, "build")
    return Workload("preempt", "preempt", objects + extra, frozenset(keys), pending * GANG_GPUS)


def consolidation_workload(nodes: int, pending: int = 50) -> Workload:
    """Every node half full of 1-GPU jobs; ``pending`` 2 x 8-GPU gangs need whole nodes."""
    queue, ns = "team-a", "ns-team-a"
    objects = [generate.node(i) for i in range(nodes)]
    objects.append(generate.queue_object(queue, None, nodes * generate.GPUS_PER_NODE, 1, 0))
    created = 0
    for i in range(nodes):  # filled node by node, as a bin-packing scheduler leaves them
        for s in range(SMALL_PER_NODE):
            name = f"small-{i}-{s}"
            objects.append(generate.group_object(name, ns, queue, 1, created, "train"))
            objects.append(
                generate.pod_object(f"{name}-0", name, ns, 1, "4", "32Gi", created, _node_name(i))
            )
            created += 1
    extra, keys = _pending(queue, pending, created, "train")
    return Workload(
        "consolidation", "consolidation", objects + extra, frozenset(keys), pending * GANG_GPUS
    )


WORKLOADS: dict[str, Callable[[int, int], Workload]] = {
    "reclaim": reclaim_workload,
    "preempt": preempt_workload,
    "consolidation": consolidation_workload,
}
ACTIONS: dict[str, type[Action]] = {
    "reclaim": ReclaimAction,
    "preempt": PreemptAction,
    "consolidation": ConsolidationAction,
}


def pod_facts(snapshot: ClusterSnapshot) -> dict[str, PodFacts]:
    """Every pod of the workload as it was before the cycle (a fresh snapshot)."""
    names = snapshot.nodes.names
    facts = {}
    for job in snapshot.jobs.values():
        for pod in job.iter_pods():
            node = names[pod.node] if pod.node >= 0 else None
            gpus = int(pod.request[GPU]) // GPU_UNIT
            facts[pod.key] = PodFacts(job.key, job.queue, gpus, job.priority_class, node)
    return facts


def from_session(session: Session) -> Decisions:
    names = session.snapshot.nodes.names
    states = session.plugin_state.get(STATE_KEY, {})
    outcome = final_outcome(session.decisions)  # one decision per pod, as run_cycle reports
    return Decisions(
        evicted={pod.key: action for pod, action, _ in outcome.evictions},
        pipelined={pod.key: names[n] for pod, n in outcome.pipelined},
        bound={pod.key: names[n] for pod, n in outcome.binds},
        fair_share_gpus={q: float(s.fair_share[0]) / GPU_UNIT for q, s in states.items()},
    )


def from_result(result: CycleResult) -> Decisions:
    return Decisions(
        evicted={e.pod: e.action for e in result.evictions},
        pipelined={b.pod: b.node for b in result.pipelined},
        bound={b.pod: b.node for b in result.binds},
        fair_share_gpus={q.name: q.fair_share[0] for q in result.queues},
    )


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise BenchmarkError(message)


def _by_job(pods: Mapping[str, PodFacts], keys: Iterable[str]) -> dict[str, list[str]]:
    jobs: dict[str, list[str]] = {}
    for key in keys:
        jobs.setdefault(pods[key].job, []).append(key)
    return jobs


def check(workload: Workload, pods: Mapping[str, PodFacts], decisions: Decisions) -> dict[str, int]:
    """Raise ``BenchmarkError`` unless the decisions are the expected ones; return the counts."""
    name = workload.name
    wanted = {key for key, fact in pods.items() if fact.job in workload.preemptors}
    _require(
        all(decisions.evicted[k] == workload.action for k in decisions.evicted),
        f"{name}: evictions by another action: {set(decisions.evicted.values())}",
    )
    started = {pods[k].job for k in wanted if k in decisions.pipelined or k in decisions.bound}
    placed = {k for k in wanted if k in decisions.pipelined or k in decisions.bound}
    _require(
        started == workload.preemptors and placed == wanted,
        f"{name}: {len(started)} of {len(workload.preemptors)} pending gangs placed "
        f"({len(placed)} of {len(wanted)} pods)",
    )
    evicted = set(decisions.evicted)
    _require(not evicted & wanted, f"{name}: a preemptor pod was evicted")
    victims = _by_job(pods, evicted)
    for job, keys in victims.items():
        whole = {k for k, f in pods.items() if f.job == job}
        _require(set(keys) == whole, f"{name}: gang {job} evicted only in part")
    freed = sum(pods[k].gpus for k in evicted)
    counts = {
        "evicted_pods": len(evicted),
        "victim_jobs": len(victims),
        "gpus_freed": freed,
        "preemptors_placed": len(started),
        "preemptor_pods_pipelined": sum(1 for k in wanted if k in decisions.pipelined),
    }
    if name == "consolidation":
        moved = {k for k in evicted if k in decisions.pipelined}
        _require(moved == evicted, f"{name}: {len(evicted - moved)} evicted pods did not land")
        _require(
            all(decisions.pipelined[k] != pods[k].node for k in moved),
            f"{name}: a moved pod landed on its own node",
        )
        needed = len(workload.preemptors) * GANG_PODS * SMALL_PER_NODE
        _require(len(moved) == needed, f"{name}: {len(moved)} pods moved, {needed} needed")
        counts["gpus_freed"] = 0
        return counts
    _require(
        freed == workload.gpus_wanted,
        f"{name}: {freed} GPUs freed for {workload.gpus_wanted} wanted (must be equal)",
    )
    _require(
        not any(k in decisions.pipelined or k in decisions.bound for k in evicted),
        f"{name}: a victim pod was placed again",
    )
    if name == "preempt":
        _require(
            all(pods[k].priority == "train" for k in evicted), f"{name}: a victim not of lower rank"
        )
    else:
        lost: dict[str, int] = {}
        for k in evicted:
            lost[pods[k].queue] = lost.get(pods[k].queue, 0) + pods[k].gpus
        _require(
            set(lost) <= {"team-a", "team-b"}, f"{name}: victims from {set(lost)}, not the lenders"
        )
        for queue, gone in lost.items():
            before = sum(f.gpus for f in pods.values() if f.queue == queue and f.node)
            fair = decisions.fair_share_gpus[queue]
            # MaintainFairShare looks at a queue before each bundle goes: only the last
            # victim gang may take a lender below its fair share.
            _require(
                before - gone + GANG_GPUS > fair + 1e-6,
                f"{name}: queue {queue} left with {before - gone} GPUs, more than a gang "
                f"below its fair share {fair}",
            )
    return counts


def build(workload: Workload) -> ClusterCache:
    cache = ClusterCache()
    cache.upsert_all(SourcedObject(o, "bench", i) for i, o in enumerate(workload.objects))
    cache.snapshot()  # the cold snapshot links pod groups once, as a live scheduler's first cycle
    return cache


def action_cycle(cache: ClusterCache, workload: Workload) -> tuple[dict[str, float], Decisions]:
    """Snapshot, session (fair share) and the workload's one action, each timed."""
    with gc_paused():
        t0 = time.perf_counter()
        snapshot = cache.snapshot().snapshot
        t1 = time.perf_counter()
        session = open_session(snapshot, SchedulerConfig(actions=(workload.action,)))
        t2 = time.perf_counter()
        cpu0 = time.process_time()
        ACTIONS[workload.action]().execute(session)
        t3 = time.perf_counter()
        cpu = time.process_time() - cpu0
    times = {
        "snapshot_s": t1 - t0,
        "session_s": t2 - t1,
        "action_s": t3 - t2,
        "action_cpu_s": cpu,
        "cycle_s": t3 - t0,
    }
    return times, from_session(session)


def full_cycle(cache: ClusterCache) -> tuple[dict[str, float], Decisions]:
    """Snapshot plus ``run_cycle`` with KAI's five default actions."""
    t0 = time.perf_counter()
    snapshot = cache.snapshot().snapshot
    result = run_cycle(snapshot, SchedulerConfig())
    elapsed = time.perf_counter() - t0
    times = {"full_cycle_s": elapsed}
    times.update({f"full_{name}_s": ms / 1000.0 for name, ms in result.action_ms.items()})
    return times, from_result(result)


def measure(name: str, nodes: int, repeat: int, pending: int = 50) -> dict[str, Any]:
    """Best-of-``repeat`` timings and the checked decision counts for one workload and size."""
    workload = WORKLOADS[name](nodes, pending)
    cache = build(workload)
    pods = pod_facts(cache.snapshot().snapshot)
    best: dict[str, float] = {}
    counts: dict[str, int] = {}
    for _ in range(repeat):
        times, decisions = action_cycle(cache, workload)
        counts = check(workload, pods, decisions)
        full, decisions = full_cycle(cache)
        full_counts = check(workload, pods, decisions)
        _require(
            full_counts == counts, f"{name}: the full cycle decided {full_counts}, not {counts}"
        )
        for key, value in {**times, **full}.items():
            best[key] = min(best.get(key, value), value)
    return {"workload": name, "nodes": nodes, "pods": len(pods), **best, **counts}


_COLUMNS = [
    ("workload", "workload", "{}"),
    ("nodes", "nodes", "{}"),
    ("snapshot_s", "snapshot", "{:.3f}"),
    ("session_s", "session", "{:.3f}"),
    ("action_s", "action", "{:.3f}"),
    ("cycle_s", "cycle", "{:.3f}"),
    ("full_cycle_s", "5-action", "{:.3f}"),
    ("evicted_pods", "evicted", "{}"),
    ("victim_jobs", "victims", "{}"),
    ("gpus_freed", "GPUs", "{}"),
    ("preemptors_placed", "gangs", "{}"),
    ("preemptor_pods_pipelined", "pipelined", "{}"),
]


def _header() -> str:
    return "  ".join(
        f"{title:>13}" if i == 0 else f"{title:>9}" for i, (_, title, _) in enumerate(_COLUMNS)
    )


def _line(row: Mapping[str, Any]) -> str:
    cells = [fmt.format(row[key]) for key, _, fmt in _COLUMNS]
    return "  ".join(f"{cell:>13}" if i == 0 else f"{cell:>9}" for i, cell in enumerate(cells))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--pending", type=int, default=50, help="pending gangs (<= nodes / 10)")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"{os.cpu_count()} cores, load average {load}", flush=True)
    print(_header(), flush=True)
    rows = []
    for nodes in args.nodes:
        for name in args.workloads:
            rows.append(measure(name, nodes, args.repeat, args.pending))
            print(_line(rows[-1]), flush=True)
    print(f"\nbest of {args.repeat}; seconds; 'cycle' = snapshot + session + the one action;")
    print("'5-action' = snapshot + run_cycle with KAI's five default actions")
    missed = [
        r
        for r in rows
        if r["workload"] == "reclaim" and r["cycle_s"] > TARGETS_S.get(r["nodes"], 1e9)
    ]
    for row in rows:
        if row["workload"] == "reclaim" and row["nodes"] in TARGETS_S:
            print(
                f"reclaim at {row['nodes']} nodes: {row['cycle_s']:.2f} s "
                f"(target <= {TARGETS_S[row['nodes']]:g} s; {REFERENCE})"
            )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=2)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
