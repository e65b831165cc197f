"""Time-based fair share through a whole cycle (docs/semantics.md §5.4, "Time-based fair share").

Each queue's usage u (a share of the cluster over the window) is an input of the
snapshot (``ClusterSnapshot.queue_usage``); the division weighs a queue's over-quota
share by ``max(0, w + k (w - u))``, w its normalised over-quota weight. Every row
states the arithmetic. The cluster has 10 GPUs, every queue has quota 0, OQW 1 and
asks 10 GPUs (10 pending one-GPU jobs), so w = 1/2 for two siblings and the
over-quota phase divides all 10 GPUs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import pytest

from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult, run_cycle
from tests.kits.worlds import NOW, Item, job, node, queue, sourced

Usage = Mapping[str, tuple[float, float, float]]


def gpu(value: float) -> tuple[float, float, float]:
    return (value, 0.0, 0.0)


@dataclass(frozen=True)
class Row:
    name: str
    k: float
    usage: Usage
    fair: Mapping[str, float]  # expected GPU fair share per queue
    parents: Mapping[str, str] = field(default_factory=dict)


def _objects(row: Row) -> list[Item]:
    names = sorted({*row.fair, *row.parents.values()})
    objects: list[Item] = [node("n0", gpus=10)]
    for name in names:
        objects.append(queue(name, row.parents.get(name), gpu_weight=1))
    for name in names:
        if name not in row.parents.values():  # leaves ask for the whole cluster
            objects.extend(job(f"{name}-{i}", name, gpus=1) for i in range(10))
    return objects


def run_with_usage(objects: Sequence[Item], usage: Usage, config: SchedulerConfig) -> CycleResult:
    built = build_snapshot(
        sourced(objects), scheduler_name=config.scheduler_name, now=NOW.timestamp()
    )
    built.snapshot.queue_usage = dict(usage)
    return run_cycle(built.snapshot, config)


ROWS = [
    # k = 0: usage is ignored; a, b weigh 1/2 each: 5 / 5.
    Row("k0-ignores-usage", 0.0, {"a": gpu(0.6)}, {"a": 5, "b": 5}),
    # k = 1, u_a = 0.6, u_b = 0: a 0.5 + (0.5 - 0.6) = 0.4, b 0.5 + 0.5 = 1.0, Σ 1.4;
    # a 10·0.4/1.4 = 2.857 → 2 (.857), b 10/1.4 = 7.143 → 7 (.143); 1 left → a: 3 / 7.
    Row("k1-heavy-gets-less", 1.0, {"a": gpu(0.6)}, {"a": 3, "b": 7}),
    # k = 10: a 0.5 + 10·(-0.1) = -0.5 → 0; b 0.5 + 10·0.5 = 5.5: b takes all 10.
    Row("k10-heavy-gets-nothing", 10.0, {"a": gpu(0.6)}, {"a": 0, "b": 10}),
    # k = 0, both used something: still 5 / 5.
    Row("k0-both-used", 0.0, {"a": gpu(0.3), "b": gpu(0.1)}, {"a": 5, "b": 5}),
    # k = 1, u_a = 0.3, u_b = 0.1: a 0.5 + 0.2 = 0.7, b 0.5 + 0.4 = 0.9, Σ 1.6;
    # a 4.375 → 4 (.375), b 5.625 → 5 (.625); 1 left → b: 4 / 6.
    Row("k1-both-used", 1.0, {"a": gpu(0.3), "b": gpu(0.1)}, {"a": 4, "b": 6}),
    # k = 10: a 0.5 + 10·0.2 = 2.5, b 0.5 + 10·0.4 = 4.5, Σ 7;
    # a 3.571 → 3 (.571), b 6.429 → 6 (.429); 1 left → a: 4 / 6.
    Row("k10-both-used", 10.0, {"a": gpu(0.3), "b": gpu(0.1)}, {"a": 4, "b": 6}),
    # Usage of CPU only leaves the GPU division alone (each resource has its own u): 5 / 5.
    Row("k10-cpu-usage-no-gpu-effect", 10.0, {"a": (0.0, 0.9, 0.0)}, {"a": 5, "b": 5}),
    # A tree: x (usage 0.5) and y (0) divide 10 at the top with k = 1: x 0.5 + 0 = 0.5,
    # y 0.5 + 0.5 = 1.0, Σ 1.5; x 3.333 → 3 (.333), y 6.667 → 6 (.667); 1 left → y.
    # x's only child a gets all of x's 3; y's child b all of y's 7 (no usage given).
    Row(
        "k1-parents-divide-by-their-own-usage",
        1.0,
        {"x": gpu(0.5)},
        {"x": 3, "y": 7, "a": 3, "b": 7},
        parents={"a": "x", "b": "y"},
    ),
    # Siblings under one parent weigh their own usage: p (no usage) gets all 10; its
    # children a (u 0.6) and b (0) divide 10 as in k1-heavy-gets-less: 3 / 7.
    Row(
        "k1-children-divide-by-their-usage",
        1.0,
        {"a": gpu(0.6)},
        {"p": 10, "a": 3, "b": 7},
        parents={"a": "p", "b": "p"},
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_fair_shares_follow_usage(row: Row) -> None:
    config = SchedulerConfig(actions=("allocate",), k_value=row.k)
    result = run_with_usage(_objects(row), row.usage, config)
    shares = {q.name: q.fair_share[0] for q in result.queues}
    assert {name: shares[name] for name in row.fair} == pytest.approx(row.fair)


def test_without_usage_k_changes_nothing() -> None:
    """No usage given (no usage source): u = 0 everywhere, so any k gives 5 / 5."""
    objects = _objects(Row("", 0.0, {}, {"a": 0, "b": 0}))
    for k in (0.0, 1.0, 10.0):
        config = SchedulerConfig(actions=("allocate",), k_value=k)
        result = run_with_usage(objects, {}, config)
        assert {q.name: q.fair_share[0] for q in result.queues} == {"a": 5, "b": 5}


def _reclaim_world() -> list[Item]:
    """heavy runs 8 one-GPU jobs on the only 8-GPU node; light asks for 8 more."""
    return [
        node("n0", gpus=8),
        queue("heavy", gpu_weight=1),
        queue("light", gpu_weight=1),
        *(job(f"h{i}", "heavy", gpus=1, states=["Running"], nodes=["n0"]) for i in range(8)),
        *(job(f"l{i}", "light", gpus=1) for i in range(8)),
    ]


@pytest.mark.parametrize(
    ("k", "usage", "reclaimed"),
    [
        # k = 0: 4 / 4, light reclaims 4 of heavy's 8.
        (0.0, {"heavy": gpu(0.9)}, 4),
        # k = 1, u_heavy = 0.9: heavy 0.5 - 0.4 = 0.1, light 1.0, Σ 1.1; heavy 8·0.1/1.1 =
        # 0.727 → 0 (.727), light 7.273 → 7; 1 left → heavy: 1 / 7, light reclaims 7.
        (1.0, {"heavy": gpu(0.9)}, 7),
        # k = 10: heavy 0.5 + 10·(-0.4) < 0 → 0, light takes all 8.
        (10.0, {"heavy": gpu(0.9)}, 8),
    ],
)
def test_usage_drives_reclaim(k: float, usage: Usage, reclaimed: int) -> None:
    config = replace(SchedulerConfig(actions=("allocate", "reclaim")), k_value=k)
    result = run_with_usage(_reclaim_world(), usage, config)
    victims = {e.pod for e in result.evictions}
    assert len(victims) == reclaimed
    assert all("/h" in pod for pod in victims)
