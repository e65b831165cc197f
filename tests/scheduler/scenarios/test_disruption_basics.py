"""Disruption actions on KAI's worked examples (docs/semantics.md §5.2, §5.5, §5.7, §9.4).

Covers: S2 reclaim (one lowest-priority job from each over-served queue,
reclaimer pipelined); S3 consolidation (a running job moved next to another so
a 3-GPU job fits, the 2-GPU job left pending); in-queue preemption of the
lowest-priority job only; non-preemptible jobs are never victims; minimum
runtime protects a fresh victim; stale-gang eviction stamps first and evicts
after the grace period.
"""

from __future__ import annotations

from typing import Any

from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult
from tests.kits.worlds import job, node, queue, run_objects

Obj = dict[str, Any]


def priority_class(name: str, value: int) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def only(action: str, **extra: Any) -> SchedulerConfig:
    return SchedulerConfig(actions=(action,), **extra)


def evicted(result: CycleResult) -> dict[str, str]:
    return {e.pod.split("/", 1)[1]: e.action for e in result.evictions}


def pipelined(result: CycleResult) -> dict[str, str]:
    return {b.pod.split("/", 1)[1]: b.node for b in result.pipelined}


def test_s2_reclaim_takes_lowest_priority_job_of_each_over_served_queue() -> None:
    # d1 = 6 GPUs; children deserved 1/1/2, leftover 2 by weight -> fair shares 2/2/2.
    objects: list[Any] = [
        priority_class("p49", 49),
        node("node0", gpus=6),
        queue("d1", gpu_quota=1, gpu_weight=1),
        queue("queue0", "d1", gpu_quota=1, gpu_weight=1),
        queue("queue1", "d1", gpu_quota=1, gpu_weight=1),
        queue("reclaimer_queue", "d1", gpu_quota=2, gpu_weight=0),
        job(
            "q0_job0",
            "queue0",
            1,
            gpus=1,
            states=["Running"],
            nodes=["node0"],
            priority_class="train",
        ),
        job(
            "q0_job1",
            "queue0",
            1,
            gpus=1,
            states=["Running"],
            nodes=["node0"],
            priority_class="train",
        ),
        job(
            "q0_job2",
            "queue0",
            1,
            gpus=1,
            states=["Running"],
            nodes=["node0"],
            priority_class="p49",
        ),
        job(
            "q1_job0",
            "queue1",
            1,
            gpus=1,
            states=["Running"],
            nodes=["node0"],
            priority_class="train",
        ),
        job(
            "q1_job1",
            "queue1",
            1,
            gpus=1,
            states=["Running"],
            nodes=["node0"],
            priority_class="train",
        ),
        job(
            "q1_job2",
            "queue1",
            1,
            gpus=1,
            states=["Running"],
            nodes=["node0"],
            priority_class="p49",
        ),
        job("reclaimer", "reclaimer_queue", 2, gpus=1, priority_class="train"),
    ]
    result = run_objects(objects, only("reclaim"))
    assert evicted(result) == {"q0_job2-0": "reclaim", "q1_job2-0": "reclaim"}
    assert pipelined(result) == {"reclaimer-0": "node0", "reclaimer-1": "node0"}
    assert result.binds == []


def test_s3_consolidation_moves_one_job_for_the_bigger_gang() -> None:
    objects: list[Any] = [
        node("node0", gpus=4),
        node("node1", gpus=4),
        queue("default", gpu_quota=-1),
        queue("queue0", "default", gpu_quota=2),
        job("running_job0", "queue0", 1, gpus=2, states=["Running"], nodes=["node0"]),
        job("running_job1", "queue0", 1, gpus=2, states=["Running"], nodes=["node1"]),
        job("pending_job0", "queue0", 1, gpus=3),
        job("pending_job1", "queue0", 1, gpus=2),
    ]
    result = run_objects(objects, only("consolidation", max_consolidation_preemptees=-1))
    assert evicted(result) == {"running_job1-0": "consolidation"}
    assert pipelined(result) == {"running_job1-0": "node0", "pending_job0-0": "node1"}
    pending = {g.pod_group.split("/", 1)[1] for g in result.pod_groups if g.outcome == "pending"}
    assert "pending_job1" in pending


def test_preempt_evicts_only_what_is_needed_in_the_same_queue() -> None:
    objects: list[Any] = [
        node("node0", gpus=2),
        queue("default", gpu_quota=-1),
        queue("queue0", "default", gpu_quota=2),
        queue("other", "default", gpu_quota=2),
        job(
            "train0",
            "queue0",
            1,
            gpus=1,
            states=["Running"],
            nodes=["node0"],
            priority_class="train",
        ),
        job(
            "train1",
            "queue0",
            1,
            gpus=1,
            states=["Running"],
            nodes=["node0"],
            priority_class="train",
        ),
        job("build0", "queue0", 1, gpus=1, priority_class="build"),
    ]
    result = run_objects(objects, only("preempt"))
    # the newest train job goes first (reverse job order); one GPU is enough
    assert evicted(result) == {"train1-0": "preempt"}
    assert pipelined(result) == {"build0-0": "node0"}


def test_non_preemptible_jobs_are_never_victims() -> None:
    objects: list[Any] = [
        node("node0", gpus=1),
        queue("default", gpu_quota=-1),
        queue("queue0", "default", gpu_quota=1),
        job(
            "build0",
            "queue0",
            1,
            gpus=1,
            states=["Running"],
            nodes=["node0"],
            priority_class="build",
        ),
        job("infer0", "queue0", 1, gpus=1, priority_class="inference"),
    ]
    result = run_objects(objects, only("preempt"))
    assert result.evictions == []
    assert result.pipelined == []


def test_min_runtime_protects_a_fresh_victim() -> None:
    fresh: list[Any] = job(
        "train0", "queue0", 1, gpus=1, states=["Running"], nodes=["node0"], priority_class="train"
    )
    fresh[0]["metadata"]["annotations"] = {
        "kai.scheduler/last-start-timestamp": "2026-01-01T00:00:00Z"
    }
    objects: list[Any] = [
        node("node0", gpus=1),
        queue("default", gpu_quota=-1),
        queue("queue0", "default", gpu_quota=1),
        fresh,
        job("build0", "queue0", 1, gpus=1, priority_class="build"),
    ]
    protected = SchedulerConfig(actions=("preempt",), default_preempt_min_runtime_s=600)
    from scheduler.cache.snapshotting import build_snapshot
    from scheduler.cycle import run_cycle
    from tests.kits.worlds import sourced

    def run_at(now: float) -> CycleResult:
        snapshot = build_snapshot(sourced(objects), now=now).snapshot
        return run_cycle(snapshot, protected)

    start = 1767225600.0  # 2026-01-01T00:00:00Z
    assert run_at(start + 60).evictions == []  # one minute in: protected for ten
    assert evicted(run_at(start + 601)) == {"train0-0": "preempt"}


def test_stale_gang_is_stamped_then_evicted_after_grace() -> None:
    objects: list[Any] = [
        node("node0", gpus=4),
        queue("default", gpu_quota=-1),
        queue("queue0", "default", gpu_quota=4),
        job(
            "gang",
            "queue0",
            3,
            gpus=1,
            states=["Running", "Running", "Failed"],
            nodes=["node0", "node0", None],
            min_member=3,
        ),
    ]
    stamped = run_objects(objects, only("stalegangeviction", staleness_grace_period_s=60))
    assert stamped.evictions == []
    (changes,) = stamped.annotations.values()
    assert "kai.scheduler/stale-podgroup-timestamp" in changes
    immediate = run_objects(objects, only("stalegangeviction", staleness_grace_period_s=0))
    assert evicted(immediate) == {"gang-0": "stalegangeviction", "gang-1": "stalegangeviction"}
