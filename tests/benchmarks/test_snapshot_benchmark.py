"""The snapshot benchmark's changes, at a tiny size: what its docstring says they are.

Timings are not checked; the churn must be the mix it claims (status writes to pods,
PodGroups and nodes, jobs created and deleted), and a cache fed with it must still
snapshot what a fresh cache of the same objects snapshots.
"""

from __future__ import annotations

from collections import Counter

from benchmarks import kai_topologies as topo
from benchmarks import snapshot
from crds.documents import SourcedObject
from scheduler.cache.cluster_cache import ClusterCache


def test_one_round_of_changes_is_the_promised_mix_and_is_applied() -> None:
    objects = topo.running(20, 100).objects
    cache = ClusterCache()
    cache.upsert_all(SourcedObject(o, "t", i) for i, o in enumerate(objects))
    cache.snapshot()
    churn = snapshot.Churn(objects, 0.1)
    changes = churn.changes()
    kinds: Counter[tuple[str, str]] = Counter()
    for op, what in changes:
        kinds[(op, what["kind"] if isinstance(what, dict) else what[0])] += 1
    assert kinds[("upsert", "Pod")] == 10 + 5  # status writes, then the new jobs' pods
    assert kinds[("upsert", "PodGroup")] == 10 + 5
    assert kinds[("upsert", "Node")] == 2
    assert kinds[("delete", "PodGroup")] == kinds[("delete", "Pod")] == 5
    snapshot._apply(cache, changes)
    jobs = cache.snapshot().snapshot.jobs
    assert "ns-queue-0/bench-new-1" in jobs
    assert len(jobs) == 100
    assert [p.key for p in jobs["ns-queue-0/bench-new-1"].iter_pods()] == [
        "ns-queue-0/bench-new-1-0"
    ]


def test_measure_reports_every_figure() -> None:
    result = snapshot.measure(20, 100, 0.1)
    assert {"cold_cpu_s", "steady_cpu_s", "changed_cpu_s", "scratch_cpu_s"} <= result.keys()
    assert result["changes"] > 0
