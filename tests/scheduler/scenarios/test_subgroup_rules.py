"""Subgroup trees, elastic minimums, preemption delay and per-group staleness (KAI v0.17).

Why: docs/semantics.md §5.1 and §5.2 say a PodGroup is schedulable when its
subgroup tree is: a pod set when ``minMember`` of its pods are (0: no gang, each
pod alone), a mid-level subgroup or the PodGroup when ``minSubGroup`` of its
direct children are (unset: all of them). The same rule decides allocation,
staleness and which pods a victim may lose. A PodGroup's ``preemptionDelay``
keeps it from evicting anyone until it has waited that long (since creation or
its last eviction) but never from taking free room; its
``stalenessGracePeriod`` replaces the scheduler's default. Each expectation
below is worked out by hand in the comment above it.
"""

from __future__ import annotations

from typing import Any

import pytest
from disruption_kit import Disruption, check, rfc3339, stale

from crds.names import LAST_EVICTION_ANNOTATION, STALE_ANNOTATION
from crds.podgroup import REASON_PREEMPTION_DELAY_NOT_ELAPSED
from scheduler.live.statuses import reason_code
from tests.kits.worlds import Item, job, node, pod, pod_group, queue

A = ("allocate",)
Obj = dict[str, Any]


def leaf(name: str, min_member: int, parent: str | None = None) -> Obj:
    out: Obj = {"name": name, "minMember": min_member}
    if parent:
        out["parent"] = parent
    return out


def mid(name: str, min_sub_group: int | None = None, parent: str | None = None) -> Obj:
    out: Obj = {"name": name}
    if min_sub_group is not None:
        out["minSubGroup"] = min_sub_group
    if parent:
        out["parent"] = parent
    return out


def tree(name: str, subgroups: list[Obj], min_sub_group: int | None = None, **spec: Any) -> Obj:
    """A PodGroup in queue q with ``subgroups`` and extra spec fields."""
    group = pod_group(name, "q", min_member=None, sub_groups=subgroups, **spec)
    if min_sub_group is not None:
        group["spec"]["minSubGroup"] = min_sub_group
    return group


def pods(group: str, sub: str, count: int, gpus: float = 1, **kw: Any) -> list[Item]:
    return [pod(f"{sub}-{i}", group, gpus=gpus, sub_group=sub, **kw) for i in range(count)]


def with_spec(objects: list[Obj], **fields: Any) -> list[Obj]:
    """The job ``objects`` (PodGroup first) with extra spec fields."""
    group = {**objects[0], "spec": {**objects[0]["spec"], **fields}}
    return [group, *objects[1:]]


def created(objects: list[Obj], seconds_ago: float) -> list[Obj]:
    """The job with its PodGroup created ``seconds_ago`` before the cycle's clock."""
    group = objects[0]
    meta = {**group["metadata"], "creationTimestamp": rfc3339(seconds_ago)}
    return [{**group, "metadata": meta}, *objects[1:]]


def evicted_at(objects: list[Obj], seconds_ago: float) -> list[Obj]:
    """The job with its PodGroup last evicted ``seconds_ago`` before the cycle's clock."""
    group = objects[0]
    notes = {**group["metadata"].get("annotations", {})}
    notes[LAST_EVICTION_ANNOTATION] = rfc3339(seconds_ago)
    meta = {**group["metadata"], "annotations": notes}
    return [{**group, "metadata": meta}, *objects[1:]]


# x needs both x1 and x2; y needs 1 of y1, y2
NESTED = [
    mid("x"),
    mid("y", 1),
    leaf("x1", 1, "x"),
    leaf("x2", 1, "x"),
    leaf("y1", 1, "y"),
    leaf("y2", 1, "y"),
]

ALLOCATION = [
    # minMember 0 on the PodGroup: no gang. Three 1-GPU pods, two GPUs: two start (a gang
    # of three would start none).
    Disruption(
        "podgroup-min-member-0-is-elastic",
        [queue("q"), node("n0", gpus=2), *job("e", "q", 3, gpus=1, min_member=0)],
        A,
        binds={"e-0": "n0", "e-1": "n0"},
    ),
    # A leaf with minMember 0 beside a leaf of 1: b's pod, then a's pods one by one while
    # room lasts (3 GPUs: b-0, a-0, a-1).
    Disruption(
        "leaf-min-member-0-is-elastic",
        [
            queue("q"),
            node("n0", gpus=3),
            tree("g", [leaf("a", 0), leaf("b", 1)]),
            *pods("g", "a", 3),
            *pods("g", "b", 1),
        ],
        A,
        binds={"b-0": "n0", "a-0": "n0", "a-1": "n0"},
    ),
    # minSubGroup 2 of three leaves (minMember 2 each). Leaf a's pods ask 8 GPUs and fit
    # nowhere; b and c (1 GPU each) fit on n0 (4 GPUs): the group starts with b and c.
    Disruption(
        "min-sub-group-2-of-3-leaves-one-cannot-fit",
        [
            queue("q"),
            node("n0", gpus=4),
            tree("g", [leaf("a", 2), leaf("b", 2), leaf("c", 2)], min_sub_group=2),
            *pods("g", "a", 2, gpus=8),
            *pods("g", "b", 2),
            *pods("g", "c", 2),
        ],
        A,
        binds={"b-0": "n0", "b-1": "n0", "c-0": "n0", "c-1": "n0"},
        reasons={"g": ["8"]},
    ),
    # minSubGroup 2 of two leaves, only b fits: nothing starts.
    Disruption(
        "min-sub-group-2-of-2-one-cannot-fit",
        [
            queue("q"),
            node("n0", gpus=4),
            tree("g", [leaf("a", 1), leaf("b", 1)], min_sub_group=2),
            *pods("g", "a", 1, gpus=8),
            *pods("g", "b", 1),
        ],
        A,
        pending=["g"],
    ),
    # The root needs 1 of a (minMember 0) and b (minMember 2, but only one pod exists): a
    # meets it, b could only start partly, so b-0 waits although it fits.
    Disruption(
        "optional-child-never-starts-partly",
        [
            queue("q"),
            node("n0", gpus=4),
            tree("g", [leaf("a", 0), leaf("b", 2)], min_sub_group=1),
            *pods("g", "a", 1),
            *pods("g", "b", 1),
        ],
        A,
        binds={"a-0": "n0"},
    ),
    # minSubGroup 20 of 40 leaves; the first twenty by name (s00-s19) need 2 pods but have
    # 1, so the group is ready only through s20-s39, which start. The search goes straight
    # to them rather than through the 40-choose-20 combinations that name s00 first.
    Disruption(
        "optional-members-that-cannot-start-are-passed-over",
        [
            queue("q"),
            node("n0", gpus=64),
            tree(
                "g",
                [leaf(f"s{i:02}", 2 if i < 20 else 1) for i in range(40)],
                min_sub_group=20,
            ),
            *[p for i in range(40) for p in pods("g", f"s{i:02}", 1)],
        ],
        A,
        binds={f"s{i}-0": "n0" for i in range(20, 40)},
    ),
    # Unset minSubGroup means every child: the same picture without it starts nothing.
    Disruption(
        "unset-min-sub-group-needs-all-children",
        [
            queue("q"),
            node("n0", gpus=4),
            tree("g", [leaf("a", 1), leaf("b", 1), leaf("c", 1)]),
            *pods("g", "a", 1, gpus=8),
            *pods("g", "b", 1),
            *pods("g", "c", 1),
        ],
        A,
        pending=["g"],
    ),
    # Two levels: the root needs 1 of x and y. x needs both x1 (8 GPUs, cannot fit) and x2;
    # y needs 1 of y1, y2 (2 GPUs each on a 3-GPU node). y starts with one leaf (y1, by
    # name); x cannot start (x1 never fits, and x2 alone is not x); y2 then has 1 GPU left,
    # not 2, so it waits.
    Disruption(
        "nested-two-levels",
        [
            queue("q"),
            node("n0", gpus=3),
            tree(
                "g",
                NESTED,
                min_sub_group=1,
            ),
            *pods("g", "x1", 1, gpus=8),
            *pods("g", "x2", 1),
            *pods("g", "y1", 1, gpus=2),
            *pods("g", "y2", 1, gpus=2),
        ],
        A,
        binds={"y1-0": "n0"},
    ),
    # Two levels, the inner optional child fits after: root needs x (both of x1, x2 of 1
    # GPU) and y needs 1 of y1, y2. Room 4: x1, x2, y1 (by name) as the gang, then y2 as
    # an elastic member.
    Disruption(
        "nested-then-optional-member",
        [
            queue("q"),
            node("n0", gpus=4),
            tree(
                "g",
                NESTED,
            ),
            *pods("g", "x1", 1),
            *pods("g", "x2", 1),
            *pods("g", "y1", 1),
            *pods("g", "y2", 1),
        ],
        A,
        binds={"x1-0": "n0", "x2-0": "n0", "y1-0": "n0", "y2-0": "n0"},
    ),
]


@pytest.mark.parametrize("case", ALLOCATION, ids=str)
def test_subgroup_allocation(case: Disruption) -> None:
    check(case)


P = ("allocate", "preempt")


def preempt_picture(high: list[Obj]) -> list[Item]:
    """n0 with 2 GPUs: r (train, 1 GPU) runs; ``high`` (build) wants two 1-GPU pods."""
    running = job("r", "q", 1, gpus=1, states=["Running"], nodes=["n0"], priority_class="train")
    return [queue("q", gpu_quota=8), node("n0", gpus=2), *running, *high]


def high(delay: str | None, seconds_ago: float) -> list[Obj]:
    """Elastic h (minMember 0, two 1-GPU pods), created ``seconds_ago``."""
    objects = job("h", "q", 2, gpus=1, min_member=0, priority_class="build")
    if delay is not None:
        objects = with_spec(objects, preemptionDelay=delay)
    return created(objects, seconds_ago)


DELAY = [
    # Delay 60 s, created 30 s ago: h-0 takes the free GPU; h-1 may not evict r yet.
    Disruption(
        "delay-not-passed-free-room-still-used",
        preempt_picture(high("1m", 30)),
        P,
        binds={"h-0": "n0"},
        reasons={"h": ["PreemptionDelayNotElapsed", "2026-01-02T00:00:30Z"]},
    ),
    # Created 90 s ago: the delay has passed, r is evicted for h-1 (and stamped).
    Disruption(
        "delay-passed-preempts",
        preempt_picture(high("1m", 90)),
        P,
        evicted=["r-0"],
        evicted_by="preempt",
        binds={"h-0": "n0"},
        pipelined={"h-1": "n0"},
        annotations={"r": {LAST_EVICTION_ANNOTATION: rfc3339(0)}},
    ),
    # Created long ago but evicted itself 10 s ago: the delay counts from the eviction.
    Disruption(
        "delay-counts-from-last-eviction",
        preempt_picture(evicted_at(high("1m", 3600), 10)),
        P,
        binds={"h-0": "n0"},
        reasons={"h": ["PreemptionDelayNotElapsed"]},
    ),
    # Without a delay the same young group preempts at once.
    Disruption(
        "no-delay-preempts",
        preempt_picture(high(None, 1)),
        P,
        evicted=["r-0"],
        evicted_by="preempt",
        binds={"h-0": "n0"},
        pipelined={"h-1": "n0"},
    ),
    # Consolidation too: moving b next to a would make room for big (4 GPUs), but big's
    # delay (5 m, created 1 m ago) has not passed; nothing moves.
    Disruption(
        "delay-holds-consolidation",
        [
            node("n0", gpus=4),
            node("n1", gpus=4),
            queue("q", gpu_quota=8),
            *job("a", "q", 1, gpus=2, states=["Running"], nodes=["n0"]),
            *job("b", "q", 1, gpus=2, states=["Running"], nodes=["n1"]),
            *created(with_spec(job("big", "q", 1, gpus=4), preemptionDelay="5m"), 60),
        ],
        ("consolidation",),
        settings={"max_consolidation_preemptees": -1},
        reasons={"big": ["PreemptionDelayNotElapsed"]},
    ),
    # Reclaim is held back the same way: qa's job (over its share) keeps its GPU.
    Disruption(
        "delay-holds-reclaim",
        [
            queue("qa", gpu_quota=0),
            queue("qb", gpu_quota=2),
            node("n0", gpus=1),
            *job("a", "qa", 1, gpus=1, states=["Running"], nodes=["n0"]),
            *created(with_spec(job("b", "qb", 1, gpus=1), preemptionDelay="5m"), 60),
        ],
        ("allocate", "reclaim"),
        pending=["b"],
        reasons={"b": ["PreemptionDelayNotElapsed"]},
    ),
    # When no gang would reach a search, consolidation gives its refusals without a pop
    # order (big asks 4 GPUs, 2 are free): the delay is still the reason said, checked
    # before the action's own rules; and reclaim's gate (qb has no share) comes after it.
    Disruption(
        "delay-said-when-consolidation-refuses-all",
        [
            node("n0", gpus=4),
            queue("q", gpu_quota=8),
            *job("a", "q", 1, gpus=2, states=["Running"], nodes=["n0"]),
            *created(with_spec(job("big", "q", 1, gpus=4), preemptionDelay="5m"), 60),
        ],
        ("consolidation",),
        settings={"max_consolidation_preemptees": -1},
        reasons={"big": ["PreemptionDelayNotElapsed"]},
    ),
    Disruption(
        "delay-said-when-reclaim-refuses-all",
        [
            queue("qa", gpu_quota=2),
            queue("qb", gpu_quota=0),
            node("n0", gpus=1),
            *job("a", "qa", 1, gpus=1, states=["Running"], nodes=["n0"]),
            *created(with_spec(job("b", "qb", 1, gpus=1), preemptionDelay="5m"), 60),
        ],
        ("allocate", "reclaim"),
        pending=["b"],
        reasons={"b": ["PreemptionDelayNotElapsed"]},
    ),
]


@pytest.mark.parametrize("case", DELAY, ids=str)
def test_preemption_delay(case: Disruption) -> None:
    check(case)


def test_the_delay_is_kai_s_unschedulable_reason_on_the_podgroup() -> None:
    result = check(DELAY[0])
    (outcome,) = [o for o in result.pod_groups if o.pod_group == "default/h"]
    codes = {reason_code(reason) for reason in outcome.reasons}
    assert REASON_PREEMPTION_DELAY_NOT_ELAPSED in codes


S = ("stalegangeviction",)


def stale_gang(grace: str | None, stale_for: float) -> list[Item]:
    """Gang g (minMember 3) with 2 of 3 pods running, stamped stale ``stale_for`` ago."""
    objects = job(
        "g",
        "q",
        3,
        gpus=1,
        states=["Running", "Running", "Failed"],
        nodes=["n0", "n0", None],
    )
    if grace is not None:
        objects = with_spec(objects, stalenessGracePeriod=grace)
    return [node("n0", gpus=8), queue("q", gpu_quota=8), *stale(objects, stale_for)]


STALENESS = [
    # Own grace 10 s (shorter than the default 60 s), stale 30 s: evicted.
    Disruption("grace-shorter-than-default", stale_gang("10s", 30), S, evicted=["g-0", "g-1"]),
    # Own grace 5 m (longer), stale 90 s: kept, though the default would evict.
    Disruption("grace-longer-than-default", stale_gang("5m", 90), S, annotations={}),
    Disruption("default-grace-evicts", stale_gang(None, 90), S, evicted=["g-0", "g-1"]),
    # Negative: never evicted, however long stale.
    Disruption("grace-negative-never", stale_gang("-1s", 86400), S, annotations={}),
    # The tree rule: the root needs 1 of a, b (minMember 2 each). a runs whole, b has none:
    # the group meets its requirement and is not stale (KAI would call it stale).
    Disruption(
        "optional-child-not-started-is-not-stale",
        [
            node("n0", gpus=8),
            queue("q", gpu_quota=8),
            tree("g", [leaf("a", 2), leaf("b", 2)], min_sub_group=1),
            *pods("g", "a", 2, state="Running", node="n0"),
            *pods("g", "b", 2, state="Failed"),
        ],
        S,
        annotations={},
    ),
    # b runs partly (1 of 2): an optional child may not run partly, so the group is stale.
    Disruption(
        "optional-child-partly-running-is-stale",
        [
            node("n0", gpus=8),
            queue("q", gpu_quota=8),
            tree("g", [leaf("a", 2), leaf("b", 2)], min_sub_group=1),
            *pods("g", "a", 2, state="Running", node="n0"),
            pod("b-0", "g", gpus=1, sub_group="b", state="Running", node="n0"),
            pod("b-1", "g", gpus=1, sub_group="b", state="Failed"),
        ],
        S,
        annotations={"g": {STALE_ANNOTATION: rfc3339(0)}},
    ),
]


@pytest.mark.parametrize("case", STALENESS, ids=str)
def test_staleness_grace_period(case: Disruption) -> None:
    check(case)


VICTIMS = [
    # Victim v (train) needs 1 of a, b (minMember 2 each, both running on n0's 4 GPUs);
    # h (build) wants 2 GPUs. A pod of a or b cannot go alone (the child would run partly),
    # but a whole child can: a goes (smallest, then by name), b keeps running.
    Disruption(
        "optional-child-goes-whole",
        [
            node("n0", gpus=4),
            queue("q", gpu_quota=8),
            tree("v", [leaf("a", 2), leaf("b", 2)], min_sub_group=1, priority_class="train"),
            *pods("v", "a", 2, state="Running", node="n0"),
            *pods("v", "b", 2, state="Running", node="n0"),
            *job("h", "q", 2, gpus=1, priority_class="build"),
        ],
        ("preempt",),
        evicted=["a-0", "a-1"],
        pipelined={"h-0": "n0", "h-1": "n0"},
    ),
    # With every child required the same victim can only go whole.
    Disruption(
        "required-children-go-together",
        [
            node("n0", gpus=4),
            queue("q", gpu_quota=8),
            tree("v", [leaf("a", 2), leaf("b", 2)], priority_class="train"),
            *pods("v", "a", 2, state="Running", node="n0"),
            *pods("v", "b", 2, state="Running", node="n0"),
            *job("h", "q", 2, gpus=1, priority_class="build"),
        ],
        ("preempt",),
        evicted=["a-0", "a-1", "b-0", "b-1"],
        pipelined={"h-0": "n0", "h-1": "n0"},
    ),
    # A minMember-0 leaf sheds single pods: only one of e's two pods goes for h (1 GPU).
    Disruption(
        "elastic-leaf-sheds-one-pod",
        [
            node("n0", gpus=2),
            queue("q", gpu_quota=8),
            tree("v", [leaf("e", 0)], priority_class="train"),
            *pods("v", "e", 2, state="Running", node="n0"),
            *job("h", "q", 1, gpus=1, priority_class="build"),
        ],
        ("preempt",),
        evicted=["e-1"],
        pipelined={"h-0": "n0"},
    ),
    # v needs both a (a-0 on n0) and b (minMember 1: b-0, b-1 on n1); h wants two 2-GPU
    # pods. Chunks: b's last pod alone, then the rest. Only all three free room for h (n0
    # and half of n1); b's single pod would fit back on n1, but v would then run with b
    # alone, below its requirement: it goes whole.
    Disruption(
        "a-victim-does-not-keep-a-surplus-pod-without-its-core",
        [
            node("n0", gpus=2),
            node("n1", gpus=4),
            queue("q", gpu_quota=8),
            tree("v", [leaf("a", 1), leaf("b", 1)], priority_class="train"),
            *pods("v", "a", 1, gpus=2, state="Running", node="n0"),
            *pods("v", "b", 2, gpus=2, state="Running", node="n1"),
            *job("h", "q", 2, gpus=2, priority_class="build"),
        ],
        ("preempt",),
        evicted=["a-0", "b-0", "b-1"],
        pipelined={"h-0": "n0", "h-1": "n1"},
    ),
    # The same with one pod set: r (minMember 2) runs r-0, r-1 on n0 and r-2 on n1 beside
    # x (non-preemptible, 1 GPU); h wants 2 GPUs on one node. r-2 alone frees too little;
    # with the rest h takes n0, and r-2 would fit back on n1, but r with one pod is below
    # its minimum of 2: all three go.
    Disruption(
        "a-gang-does-not-keep-a-surplus-pod-without-its-minimum",
        [
            node("n0", gpus=2),
            node("n1", gpus=2),
            queue("q", gpu_quota=8),
            *job(
                "r",
                "q",
                3,
                gpus=1,
                min_member=2,
                states=["Running"] * 3,
                nodes=["n0", "n0", "n1"],
                priority_class="train",
            ),
            *job("x", "q", 1, gpus=1, states=["Running"], nodes=["n1"], priority_class="build"),
            *job("h", "q", 1, gpus=2, priority_class="build"),
        ],
        ("preempt",),
        evicted=["r-0", "r-1", "r-2"],
        pipelined={"h-0": "n0"},
    ),
]


@pytest.mark.parametrize("case", VICTIMS, ids=str)
def test_victims_follow_the_tree(case: Disruption) -> None:
    check(case)
