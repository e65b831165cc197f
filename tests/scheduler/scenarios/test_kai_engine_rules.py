"""KAI v0.17 engine rules, each as a scenario table with the rule written beside it.

Why: these rules decide where pods go without any field of ours saying so; a
table per rule, expectations worked out by hand from the rule in the comment
above each case, pins down that podmuster follows KAI (docs/semantics.md, the
"KAI v0.17 engine features" table in §8 says where it does and where not).

1. Stuck in Releasing (§1.3): a Running pod whose deletion started more than
   ``stuckInReleasingThreshold`` (default 2 m) before the cycle still holds its
   room; nothing is pipelined behind it. Only a Running pod gets stuck.
2. Elastic extras go by satisfaction (§5.1): once a (sub)group meets its
   requirement, each further step (one pod, or an optional member's gang)
   goes to one member: members below their own requirement first; then
   required members by satisfied/required ratio, lowest first; then optional
   members (requirement 0) with the fewest satisfied; ties by name. A
   member's "satisfied" is its active pods (a pod set) or its members that
   meet their requirement (a mid-level subgroup). The job is popped again
   after each step while room lasts.
3. A preferred topology level packs (§5.8): candidate domains go deepest
   level first; within a level in KAI's packing order: the tree sorted from
   the top, each domain's children tightest first by the dominant ratio of
   the group's summed request to the domain's free resources (pod slots left
   out), ties by id. So a rack under a tighter zone comes before a tighter
   rack under a roomier zone, and tightness is in resources, not in pods.
4. Per-job settings as the engine sees them (§2.1, §5.2): a PodGroup's
   ``stalenessGracePeriod`` replaces the scheduler's default either way; zero
   evicts a stale gang in the cycle that first sees it stale, negative never.
   A ``preemptionDelay`` of zero or less is no delay. (minSubGroup and the
   positive delay: tests/scheduler/scenarios/test_subgroup_rules.py.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from disruption_kit import Disruption, check, rfc3339, run
from test_subgroup_rules import high, preempt_picture
from topology_kit import RACK, TOPOLOGY, ZONE, preferred, tnode

from crds.names import LAST_EVICTION_ANNOTATION, STALE_ANNOTATION
from scheduler.config import ConfigError, SchedulerConfig, load_config
from tests.kits.worlds import Item, job, node, pod, pod_group, queue

Obj = dict[str, Any]
A = ("allocate",)


def deleted(objects: list[Obj], seconds_ago: float) -> list[Obj]:
    """``objects`` with every pod's deletion started ``seconds_ago`` before the cycle."""
    out = []
    for obj in objects:
        if obj["kind"] == "Pod":
            obj = {
                **obj,
                "metadata": {**obj["metadata"], "deletionTimestamp": rfc3339(seconds_ago)},
            }
        out.append(obj)
    return out


def leaving(
    seconds_ago: float,
    gpus: int = 1,
    where: str = "n0",
    state: str = "Running",
    name: str = "old",
) -> list[Obj]:
    """Job ``name``: one pod of ``gpus`` GPUs on ``where``, deleted ``seconds_ago`` ago.

    ``state`` is the pod's phase-giving state: ``Running``, or ``Bound`` (phase Pending
    on its node).
    """
    objects = job(name, "q", 1, gpus=gpus, states=[state], nodes=[where])
    return deleted(objects, seconds_ago)


def one_gpu_node(*extra: Item) -> list[Item]:
    return [queue("q", gpu_quota=8), node("n0", gpus=1), *extra]


P = ("preempt",)


def preempt_over(seconds_ago: float) -> list[Item]:
    """n0 (2 GPUs): ``old`` deleted ``seconds_ago`` ago and ``low`` (train) running; ``h``
    (build, higher priority) wants both GPUs."""
    return [
        queue("q", gpu_quota=8),
        node("n0", gpus=2),
        leaving(seconds_ago),
        job("low", "q", 1, gpus=1, states=["Running"], nodes=["n0"], priority_class="train"),
        job("h", "q", 1, gpus=2, priority_class="build"),
    ]


RELEASING = [
    # Deleted 60 s ago, under the 2 m default: its GPU is releasing; j waits for it there.
    Disruption(
        "recent-deletion-pipelines",
        one_gpu_node(leaving(60), job("j", "q", gpus=1)),
        A,
        pipelined={"j-0": "n0"},
    ),
    # Exactly 120 s: stuck means *more* than the threshold (KAI: time since > threshold).
    Disruption(
        "at-the-threshold-still-pipelines",
        one_gpu_node(leaving(120), job("j", "q", gpus=1)),
        A,
        pipelined={"j-0": "n0"},
    ),
    # 121 s: stuck. The GPU counts as used; no idle or releasing GPU anywhere, j waits.
    Disruption(
        "stuck-pod-keeps-its-room",
        one_gpu_node(leaving(121), job("j", "q", gpus=1)),
        A,
        pending=["j"],
    ),
    # The threshold comes from the configuration: 30 s makes a 60 s old deletion stuck...
    Disruption(
        "configured-threshold-shorter",
        one_gpu_node(leaving(60), job("j", "q", gpus=1)),
        A,
        pending=["j"],
        settings={"stuck_in_releasing_s": 30.0},
    ),
    # ...and 10 m keeps a 5 m old one releasing.
    Disruption(
        "configured-threshold-longer",
        one_gpu_node(leaving(300), job("j", "q", gpus=1)),
        A,
        pipelined={"j-0": "n0"},
        settings={"stuck_in_releasing_s": 600.0},
    ),
    # A pod deleted before it ran (phase Pending, on its node) is never stuck (KAI: only a
    # Running pod is): an hour later its GPU is still releasing.
    Disruption(
        "pending-phase-pod-never-stuck",
        one_gpu_node(leaving(3600, state="Bound"), job("j", "q", gpus=1)),
        A,
        pipelined={"j-0": "n0"},
    ),
    # Two nodes: n0's GPU is held by a stuck pod, n1's by a recent deletion. j goes to n1,
    # the only releasing room.
    Disruption(
        "pipelines-behind-the-recent-one-only",
        [
            queue("q", gpu_quota=8),
            node("n0", gpus=1),
            node("n1", gpus=1),
            leaving(600),
            deleted(job("new", "q", 1, gpus=1, states=["Running"], nodes=["n1"]), 30),
            job("j", "q", gpus=1),
        ],
        A,
        pipelined={"j-0": "n1"},
    ),
    # A gang of 2 with one idle GPU (n1) and one stuck GPU (n0): it does not fit, so
    # nothing is bound or pipelined.
    Disruption(
        "gang-does-not-count-stuck-room",
        [
            queue("q", gpu_quota=8),
            node("n0", gpus=1),
            node("n1", gpus=1),
            leaving(600),
            job("g", "q", 2, gpus=1),
        ],
        A,
        pending=["g"],
    ),
    # Preempt: n0 has 2 GPUs, one held by a stuck pod, one by a running low-priority pod;
    # h (high priority) needs both. Evicting low would free one GPU, the stuck one never
    # comes: h cannot fit, so nobody is evicted.
    Disruption("preempt-does-not-count-stuck-room", preempt_over(600), P, pending=["h"]),
    # The same with a recent deletion: evicting low frees the second GPU, h is pipelined.
    Disruption(
        "preempt-counts-recent-releasing-room",
        preempt_over(30),
        P,
        evicted=["low-0"],
        pipelined={"h-0": "n0"},
    ),
]


@pytest.mark.parametrize("case", RELEASING, ids=str)
def test_stuck_in_releasing(case: Disruption) -> None:
    check(case)


def test_a_pod_with_its_state_unchanged_is_stuck_only_past_the_threshold() -> None:
    """The same objects give both answers: the clock alone decides (cycle 3 min later)."""
    objects = one_gpu_node(leaving(60), job("j", "q", gpus=1))
    check(Disruption("now", objects, A, pipelined={"j-0": "n0"}))
    check(Disruption("three-minutes-later", objects, A, pending=["j"], at=180.0))


def test_explain_names_the_stuck_pods() -> None:
    """A gang left pending is told which pods hold room it may not wait for."""
    stuck = [leaving(600, where=f"n{i}", name=f"old{i}") for i in range(7)]
    nodes = [node(f"n{i}", gpus=1) for i in range(7)]
    objects = [queue("q", gpu_quota=8), *nodes, *stuck, job("j", "q", gpus=1)]
    result = run(Disruption("explain", objects, A))
    (outcome,) = [o for o in result.pod_groups if o.pod_group == "default/j"]
    (note,) = [r for r in outcome.reasons if r.startswith("StuckInReleasing")]
    assert note.startswith("StuckInReleasing: 7 pod(s) deleted more than 120s ago")
    assert "(default/old0-0 on n0, default/old1-0 on n1," in note
    assert note.endswith("and 2 more)")


def test_explain_names_only_stuck_pods_on_nodes_the_group_could_use() -> None:
    """j may run only on n1 (node selector): the stuck pod on n0 is not its concern."""
    objects = [
        queue("q", gpu_quota=8),
        node("n0", gpus=1),
        node("n1", gpus=1, labels={"pool": "b"}),
        leaving(600, where="n0"),
        leaving(600, where="n1", name="old1"),
        job("j", "q", gpus=2, node_selector={"pool": "b"}),
    ]
    result = run(Disruption("explain", objects, A))
    (outcome,) = [o for o in result.pod_groups if o.pod_group == "default/j"]
    notes = [r for r in outcome.reasons if r.startswith("StuckInReleasing")]
    assert notes == [
        "StuckInReleasing: 1 pod(s) deleted more than 120s ago still hold their room and"
        " nothing is pipelined behind them (default/old1-0 on n1)"
    ]


@pytest.mark.parametrize(("raw", "seconds"), [("90s", 90.0), ("1h", 3600.0), (45, 45.0)])
def test_the_threshold_is_read_from_the_configuration(raw: object, seconds: float) -> None:
    assert load_config({"stuckInReleasingThreshold": raw}).stuck_in_releasing_s == seconds
    assert SchedulerConfig().stuck_in_releasing_s == 120.0  # KAI's default, 2 m


@pytest.mark.parametrize("raw", ["0s", "-1m", 0, "soon", True])
def test_a_bad_threshold_is_named(raw: object) -> None:
    with pytest.raises(ConfigError, match=r"^stuckInReleasingThreshold: "):
        load_config({"stuckInReleasingThreshold": raw})


def elastic(
    leaves: list[tuple[str, int, int, int]],
    mids: Sequence[Obj] = (),
    **parents: str,  # type: ignore[assignment]
) -> list[Item]:
    """PodGroup ``g`` whose leaves are ``(name, minMember, running, pending)`` pods of one
    GPU (running ones on n0), under the ``mids`` subgroups (``parents``: leaf -> mid)."""
    subgroups: list[Obj] = [*mids]
    members: list[Obj] = []
    for name, minimum, running, waiting in leaves:
        leaf: Obj = {"name": name, "minMember": minimum}
        if name in parents:
            leaf["parent"] = parents[name]
        subgroups.append(leaf)
        for i in range(running + waiting):
            state = {"state": "Running", "node": "n0"} if i < running else {}
            members.extend(pod(f"{name}-{i}", "g", gpus=1, sub_group=name, **state))
    return [pod_group("g", "q", min_member=None, sub_groups=subgroups), *members]


def on_n0(gpus: int, *items: Item) -> list[Item]:
    return [queue("q", gpu_quota=64), node("n0", gpus=gpus), *items]


ELASTIC = [
    # a: min 2, 3 running (ratio 1.5); b: min 2, 2 running (1.0). One free GPU: b's extra.
    Disruption(
        "lowest-ratio-gets-the-extra",
        on_n0(6, elastic([("a", 2, 3, 1), ("b", 2, 2, 1)])),
        A,
        binds={"b-2": "n0"},
    ),
    # The ratio, not the count: a: min 1, 2 running (2.0); b: min 4, 5 running (1.25).
    # b has more pods but the lower ratio: b-5 gets the one free GPU.
    Disruption(
        "ratio-not-pod-count",
        on_n0(8, elastic([("a", 1, 2, 1), ("b", 4, 5, 1)])),
        A,
        binds={"b-5": "n0"},
    ),
    # Three free GPUs, one extra per pop. a: min 1, 1 running; b: min 2, 2 running.
    # Pop 1: a 1/1 = b 2/2 = 1.0, tie, a by name: a-1 (a now 2.0). Pop 2: b 1.0 < 2.0: b-2
    # (b 1.5). Pop 3: b 1.5 < a 2.0: b-3. The GPUs are gone.
    Disruption(
        "extras-spread-by-ratio-over-pops",
        on_n0(6, elastic([("a", 1, 1, 3), ("b", 2, 2, 3)])),
        A,
        binds={"a-1": "n0", "b-2": "n0", "b-3": "n0"},
    ),
    # A required member before an optional one: a (min 0, nothing running) is optional,
    # b (min 2, 3 running, ratio 1.5) required. One free GPU: b-3, though a has fewer pods
    # and comes first by name.
    Disruption(
        "required-before-optional",
        on_n0(4, elastic([("a", 0, 0, 1), ("b", 2, 3, 1)])),
        A,
        binds={"b-3": "n0"},
    ),
    # Two optional members: the one with fewer running first. a (min 0) runs 2, c (min 0)
    # runs 1; b (min 1, 1 running) has nothing pending. One free GPU: c-1.
    Disruption(
        "optional-members-fewest-first",
        on_n0(5, elastic([("a", 0, 2, 1), ("b", 1, 1, 0), ("c", 0, 1, 1)])),
        A,
        binds={"c-1": "n0"},
    ),
    # A member below its requirement before any satisfied one: b (min 2) runs 1, a (min 1,
    # ratio 1.0) runs 1. Two free GPUs: b-1 first (b reaches 2/2 = 1.0); then a and b tie
    # at 1.0 and a wins by name: a-1.
    Disruption(
        "below-requirement-first",
        on_n0(4, elastic([("a", 1, 1, 1), ("b", 2, 1, 2)])),
        A,
        binds={"b-1": "n0", "a-1": "n0"},
    ),
    # Mid-level subgroups count their satisfied members: the root needs both x and y.
    # x (minSubGroup 1) has x1 and x2 running: 2/1 = 2.0; y (minSubGroup 1) has y1
    # running: 1/1 = 1.0. One free GPU: y's next step, its unsatisfied leaf y2 (min 1).
    Disruption(
        "mid-level-subgroups-by-ratio",
        on_n0(
            4,
            elastic(
                [
                    ("x1", 1, 1, 0),
                    ("x2", 1, 1, 1),
                    ("x3", 1, 0, 1),
                    ("y1", 1, 1, 1),
                    ("y2", 1, 0, 1),
                ],
                [{"name": "x", "minSubGroup": 1}, {"name": "y", "minSubGroup": 1}],
                x1="x",
                x2="x",
                x3="x",
                y1="y",
                y2="y",
            ),
        ),
        A,
        binds={"y2-0": "n0"},
    ),
]


@pytest.mark.parametrize("case", ELASTIC, ids=str)
def test_elastic_extras_by_satisfaction(case: Disruption) -> None:
    check(case)


def racks(*nodes: Obj, pods: int, gpus: int = 1, within: str | None = None) -> list[Item]:
    """``nodes`` (all free) and job j of ``pods`` pods of ``gpus`` GPUs preferring a rack."""
    constraint = preferred(RACK, within=within)
    return [
        queue("q", gpu_quota=64),
        TOPOLOGY,
        *nodes,
        job("j", "q", pods, gpus=gpus, topology=constraint),
    ]


PACKING = [
    # Three racks hold j's 2 GPUs: r1 4 free (ratio 2/4 = 0.5), r2 2 free (1.0), r3 3 free
    # (0.67). The tightest, r2, is taken.
    Disruption(
        "tightest-rack-first",
        racks(
            tnode("n1", "z1", "r1", gpus=4),
            tnode("n2", "z1", "r2", gpus=2),
            tnode("n3", "z1", "r3", gpus=3),
            pods=2,
        ),
        A,
        binds={"j-0": "n2", "j-1": "n2"},
    ),
    # The tree is sorted from the top. Zones: z1 has 2 + 8 = 10 free (2/10 = 0.2), z2 has
    # 3 (0.67): z2 first. Racks in that order: z2's b1 (0.67), then z1's a1 (1.0) and a2
    # (0.25). b1 is the first rack that holds j, though a1 is tighter.
    Disruption(
        "rack-under-the-tighter-zone-first",
        racks(
            tnode("a1n", "z1", "a1", gpus=2),
            tnode("a2n", "z1", "a2", gpus=8),
            tnode("b1n", "z2", "b1", gpus=3),
            pods=2,
        ),
        A,
        binds={"j-0": "b1n", "j-1": "b1n"},
    ),
    # The same order with the zone required: the rack candidates come in the same order.
    Disruption(
        "rack-under-the-tighter-zone-first-zone-required",
        racks(
            tnode("a1n", "z1", "a1", gpus=2),
            tnode("a2n", "z1", "a2", gpus=10),
            tnode("b1n", "z2", "b1", gpus=3),
            pods=2,
            within=ZONE,
        ),
        A,
        binds={"j-0": "b1n", "j-1": "b1n"},
    ),
    # Tightness in resources, not in pods: j is 3 pods of 2 GPUs (6). Rack ra: one node
    # with 8 free (6/8 = 0.75; room for 4 pods). Rack rb: three nodes with 3 free each
    # (6/9 = 0.67; room for exactly 3 pods, one per node). ra is tighter by resources
    # and is taken, although rb would be full in pods.
    Disruption(
        "tightness-in-resources-not-pods",
        racks(
            tnode("an", "z1", "ra", gpus=8),
            tnode("bn0", "z1", "rb", gpus=3),
            tnode("bn1", "z1", "rb", gpus=3),
            tnode("bn2", "z1", "rb", gpus=3),
            pods=3,
            gpus=2,
        ),
        A,
        binds={"j-0": "an", "j-1": "an", "j-2": "an"},
    ),
    # No rack holds j's 4 GPUs (2 free each): it spans the topology. Packing order of the
    # racks: z1/r1 and z2/r2 tie (4/2 = 2.0) and go by id, so r2 is 2nd of 2 and scores
    # floor(2/2*10) = 10 against r1's floor(1/2*10) = 5: j fills r2's node first.
    Disruption(
        "spanning-racks-fills-the-later-one-first",
        racks(tnode("n0", "z1", "r1", gpus=2), tnode("n1", "z2", "r2", gpus=2), pods=4),
        A,
        binds={"j-0": "n1", "j-1": "n1", "j-2": "n0", "j-3": "n0"},
    ),
]


@pytest.mark.parametrize("case", PACKING, ids=str)
def test_preferred_level_packs_tightest_first(case: Disruption) -> None:
    check(case)


def broken_gang(grace: str | None) -> list[Item]:
    """Gang g (minMember 3): 2 of 3 pods run, one failed; never stamped stale before."""
    objects = job(
        "g", "q", 3, gpus=1, states=["Running", "Running", "Failed"], nodes=["n0", "n0", None]
    )
    if grace is not None:
        group = objects[0]
        objects = [
            {**group, "spec": {**group["spec"], "stalenessGracePeriod": grace}},
            *objects[1:],
        ]
    return [node("n0", gpus=8), queue("q", gpu_quota=8), *objects]


S = ("stalegangeviction",)
STAMPED_NOW = {"g": {STALE_ANNOTATION: rfc3339(0)}}

PER_JOB = [
    # Own grace 0 s, first seen stale now: stamped and evicted in the same cycle (KAI: time
    # since the stamp, 0, is not below the grace, 0).
    Disruption("job-grace-zero-evicts-at-once", broken_gang("0s"), S, evicted=["g-0", "g-1"]),
    # Own zero beats the scheduler's "never".
    Disruption(
        "job-grace-zero-beats-default-never",
        broken_gang("0s"),
        S,
        evicted=["g-0", "g-1"],
        settings={"staleness_grace_period_s": -1.0},
    ),
    # Own negative beats the scheduler's zero: stamped, never evicted.
    Disruption(
        "job-grace-negative-beats-default-zero",
        broken_gang("-1s"),
        S,
        annotations=STAMPED_NOW,
        settings={"staleness_grace_period_s": 0.0},
    ),
    # No own grace: the scheduler's zero evicts at once...
    Disruption(
        "default-grace-zero-evicts-at-once",
        broken_gang(None),
        S,
        evicted=["g-0", "g-1"],
        settings={"staleness_grace_period_s": 0.0},
    ),
    # ...and its 60 s default only stamps.
    Disruption("default-grace-stamps-first", broken_gang(None), S, annotations=STAMPED_NOW),
    # preemptionDelay 0 s on a group created 1 s ago: no delay, r is evicted for h-1.
    Disruption(
        "delay-zero-is-no-delay",
        preempt_picture(high("0s", 1)),
        ("allocate", "preempt"),
        evicted=["r-0"],
        evicted_by="preempt",
        binds={"h-0": "n0"},
        pipelined={"h-1": "n0"},
        annotations={"r": {LAST_EVICTION_ANNOTATION: rfc3339(0)}},
    ),
    # A negative delay is no delay either.
    Disruption(
        "delay-negative-is-no-delay",
        preempt_picture(high("-5m", 1)),
        ("allocate", "preempt"),
        evicted=["r-0"],
        evicted_by="preempt",
        binds={"h-0": "n0"},
        pipelined={"h-1": "n0"},
    ),
]


@pytest.mark.parametrize("case", PER_JOB, ids=str)
def test_per_job_grace_and_delay(case: Disruption) -> None:
    check(case)
