"""KAI v0.17's cluster total, job order tie and queue accounting, as scenario tables.

Why: these rules decide fair shares and order without any field saying so, and
each once differed from KAI (docs/semantics.md); expectations
are worked out by hand from the rule written above each table.

1. The node check (§5.3, §5.4): a node takes pods and counts to the fair-share
   total only when it is not cordoned, every ``Ready`` condition is ``True`` and
   every ``MemoryPressure``, ``DiskPressure``, ``PIDPressure`` and
   ``NetworkUnavailable`` condition is ``False`` (``Unknown`` fails); a condition
   the node does not report passes. Pods of other schedulers are taken off the
   total only on nodes it counts, and consolidation's "enough free GPUs" check
   counts free GPUs on those nodes alone (KAI: ``CheckNodeConditionPredicate``,
   used by ``getNodeResources``, the predicates plugin and
   ``IsEnoughGPUsAllocatableForJob``).
2. The job order's last tie (§5.1): after priority, elastic state and creation
   time, the PodGroup's *name* decides (KAI's PodGroupInfo UID is the name), not
   ``metadata.uid``; the victim order is the inverse. The namespace settles two
   PodGroups of one name (KAI keys PodGroups by name alone and leaves it open).
3. Jobs of a parent queue (§2.1, §5.4): a PodGroup naming a non-leaf queue is
   never scheduled and never a victim, yet its pods count to that queue's and its
   ancestors' allocated and requested amounts. A PodGroup naming a queue that does
   not exist counts nowhere.
"""

from __future__ import annotations

from typing import Any

import pytest
from disruption_kit import Disruption, check

from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import queue_shares
from scheduler.plugins.proportion.plugin import capacity
from tests.kits.worlds import Item, job, node, pod, pod_group, queue, sourced

Obj = dict[str, Any]
A = ("allocate",)
R = ("reclaim",)
P = ("preempt",)


def conditioned(name: str, *conditions: tuple[str, str], gpus: float = 4, **args: Any) -> Obj:
    """A node reporting exactly ``conditions`` (type, status); none: no conditions at all."""
    body = node(name, gpus=gpus, **args)
    body["status"]["conditions"] = [{"type": t, "status": s} for t, s in conditions]
    return body


HEALTHY = (
    ("Ready", "True"),
    ("MemoryPressure", "False"),
    ("DiskPressure", "False"),
    ("PIDPressure", "False"),
    ("NetworkUnavailable", "False"),
)


def over_share(second: Obj) -> list[Item]:
    """n1 (4 GPUs) is full of b (queue qb, 4 pods, minMember 1); a (queue qa) wants 2 GPUs;
    ``second`` is a 4-GPU node a may not use (its node selector names n1's pool).

    Counted, ``second`` makes a total of 8: qa's fair share 2 (its request), qb's 4, and qb
    holding 4 gives nothing. Left out, the total is 4: qa 2, qb 2, so qb is 2 over its fair
    share and a reclaims two of b's pods (the newest go first).
    """
    return [
        queue("qa", gpu_weight=1),
        queue("qb", gpu_weight=1),
        node("n1", gpus=4, labels={"pool": "x"}),
        second,
        job("b", "qb", 4, gpus=1, min_member=1, states=["Running"] * 4, nodes=["n1"] * 4),
        job("a", "qa", gpus=2, node_selector={"pool": "x"}),
    ]


RECLAIMED = {"evicted": ("b-2", "b-3"), "pipelined": {"a-0": "n1"}}

NODE_CHECK = [
    Disruption(
        "cordoned-node-left-out", over_share(node("n2", gpus=4, unschedulable=True)), R, **RECLAIMED
    ),
    Disruption(
        "not-ready-node-left-out", over_share(node("n2", gpus=4, ready=False)), R, **RECLAIMED
    ),
    Disruption(
        "ready-unknown-left-out",
        over_share(conditioned("n2", ("Ready", "Unknown"))),
        R,
        **RECLAIMED,
    ),
    Disruption(
        "memory-pressure-left-out",
        over_share(conditioned("n2", ("Ready", "True"), ("MemoryPressure", "True"))),
        R,
        **RECLAIMED,
    ),
    Disruption(
        "disk-pressure-unknown-left-out",
        over_share(conditioned("n2", ("Ready", "True"), ("DiskPressure", "Unknown"))),
        R,
        **RECLAIMED,
    ),
    Disruption(
        "pid-pressure-left-out",
        over_share(conditioned("n2", ("Ready", "True"), ("PIDPressure", "True"))),
        R,
        **RECLAIMED,
    ),
    Disruption(
        "network-unavailable-left-out",
        over_share(conditioned("n2", ("Ready", "True"), ("NetworkUnavailable", "True"))),
        R,
        **RECLAIMED,
    ),
    # Every condition healthy: n2 counts, qb holds no more than its fair share of 4.
    Disruption("healthy-node-counted", over_share(conditioned("n2", *HEALTHY)), R, pending=["a"]),
    # No condition reported at all (not even Ready): nothing fails the check, n2 counts.
    Disruption("node-without-conditions-counted", over_share(conditioned("n2")), R, pending=["a"]),
    # A condition type the check does not read (here a custom one, True) changes nothing.
    Disruption(
        "other-condition-ignored",
        over_share(conditioned("n2", ("Ready", "True"), ("example.com/Degraded", "True"))),
        R,
        pending=["a"],
    ),
    # Consolidation first asks whether the cluster has as many free GPUs as the job wants:
    # n1 has 4 free, the cordoned n2 its 4 too, but only n1's count (KAI's node check).
    Disruption(
        "consolidation-counts-free-gpus-on-usable-nodes",
        [
            queue("q", gpu_quota=16),
            node("n1", gpus=4),
            node("n2", gpus=4, unschedulable=True),
            job("j", "q", 3, gpus=2),
        ],
        ("consolidation",),
        pending=["j"],
        reasons={"j": ["asks for 6 GPUs but the cluster has only 4 free"]},
    ),
    # Placement refuses a node under pressure as it refuses a cordoned one.
    Disruption(
        "no-placement-on-a-node-under-pressure",
        [
            queue("q", gpu_quota=4),
            conditioned("n1", ("Ready", "True"), ("DiskPressure", "True"), gpus=1),
            job("j", "q", gpus=1),
        ],
        A,
        pending=["j"],
        reasons={"j": ["1 node(s) were unschedulable or not ready"]},
    ),
]


@pytest.mark.parametrize("case", NODE_CHECK, ids=str)
def test_node_check_decides_the_total_and_placement(case: Disruption) -> None:
    check(case)


def foreign(name: str, where: str, gpus: float) -> list[Obj]:
    """A running pod of another scheduler."""
    return pod(name, gpus=gpus, state="Running", node=where, scheduler_name="default-scheduler")


TOTALS = [
    # (case, objects, the fair-share total's GPUs)
    ("all-counted", [conditioned("n1", *HEALTHY), conditioned("n2")], 8),
    ("cordoned", [node("n1", gpus=4), node("n2", gpus=4, unschedulable=True)], 4),
    ("pressure", [node("n1", gpus=4), conditioned("n2", ("MemoryPressure", "True"))], 4),
    # another scheduler's 2 GPUs on n2 leave 2 of n2 in the total...
    ("foreign-on-counted-node", [node("n1", gpus=4), node("n2", gpus=4), foreign("f", "n2", 2)], 6),
    # ...but n2 left out is not counted, so nothing is taken off for them
    (
        "foreign-on-cordoned-node",
        [node("n1", gpus=4), node("n2", gpus=4, unschedulable=True), foreign("f", "n2", 2)],
        4,
    ),
    (
        "foreign-on-not-ready-node",
        [node("n1", gpus=4), node("n2", gpus=4, ready=False), foreign("f", "n2", 2)],
        4,
    ),
]


@pytest.mark.parametrize(("name", "objects", "gpus"), TOTALS, ids=[t[0] for t in TOTALS])
def test_fair_share_total(name: str, objects: list[Item], gpus: float) -> None:
    snapshot = build_snapshot(sourced(objects)).snapshot
    assert capacity(snapshot)[0] == gpus, name


def tied(name: str, uid: str, *, namespace: str = "default", **args: Any) -> list[Obj]:
    """Job ``name`` (one 1-GPU pod, queue q) created with every other tied job, uid ``uid``."""
    objects = job(name, "q", gpus=1, namespace=namespace, **args)
    meta = objects[0]["metadata"]
    meta["creationTimestamp"] = "2026-01-01T00:30:00Z"
    meta["uid"] = uid
    return objects


LOW_UID = "00000000-0000-0000-0000-000000000001"
HIGH_UID = "ffffffff-0000-0000-0000-000000000001"

TIES = [
    # a and b tie on priority, elastic state and creation time; one GPU: the name decides,
    # whatever the uids say.
    Disruption(
        "name-not-uid-decides",
        [queue("q", gpu_quota=4), node("n0", gpus=1), tied("a", HIGH_UID), tied("b", LOW_UID)],
        A,
        binds={"a-0": "n0"},
        pending=["b"],
    ),
    # Listed the other way round: the same answer.
    Disruption(
        "listing-order-does-not-decide",
        [queue("q", gpu_quota=4), node("n0", gpus=1), tied("b", LOW_UID), tied("a", HIGH_UID)],
        A,
        binds={"a-0": "n0"},
        pending=["b"],
    ),
    # Victims go in reverse job order: of two tied running jobs, the one later by name (b)
    # is evicted first for the higher-priority h.
    Disruption(
        "victim-order-by-name",
        [
            queue("q", gpu_quota=4),
            node("n0", gpus=2),
            tied("a", HIGH_UID, states=["Running"], nodes=["n0"], priority_class="train"),
            tied("b", LOW_UID, states=["Running"], nodes=["n0"], priority_class="train"),
            job("h", "q", gpus=1, priority_class="build"),
        ],
        P,
        evicted=["b-0"],
        pipelined={"h-0": "n0"},
    ),
    # Same name in two namespaces (KAI keys PodGroups by name alone, so it leaves this open):
    # podmuster settles it by namespace, whatever the uids say.
    Disruption(
        "same-name-by-namespace",
        [
            queue("q", gpu_quota=4),
            node("n0", gpus=1),
            tied("x", LOW_UID, namespace="zz"),
            tied("x", HIGH_UID, namespace="aa"),
        ],
        A,
        binds={"aa/x-0": "n0"},
        pending=["zz/x"],
    ),
]


@pytest.mark.parametrize("case", TIES, ids=str)
def test_job_order_tie_is_the_name(case: Disruption) -> None:
    check(case)


def departments(parent_job_queue: str) -> list[Item]:
    """n1 (8 GPUs). d1 and d2 (weight 1) with leaves qa under d1, qb under d2. ``old`` (2
    running GPUs, minMember 1) names queue ``parent_job_queue``; b runs 4 GPUs in qa
    (minMember 1); r, a gang of 4 in qb, finds 2 GPUs free.

    With old counted to d1 (its queue d1): d1 requests and holds 6, d2 requests 4, so
    each gets 4; d1 is 2 over and r reclaims two of b's pods, never old's. Not counted (a
    queue that does not exist): d1 holds 4 against a fair share of 4, nothing to take.
    """
    return [
        queue("d1", gpu_weight=1),
        queue("d2", gpu_weight=1),
        queue("qa", "d1", gpu_weight=1),
        queue("qb", "d2", gpu_weight=1),
        node("n1", gpus=8),
        job(
            "old",
            parent_job_queue,
            2,
            gpus=1,
            min_member=1,
            states=["Running"] * 2,
            nodes=["n1"] * 2,
        ),
        job("b", "qa", 4, gpus=1, min_member=1, states=["Running"] * 4, nodes=["n1"] * 4),
        job("r", "qb", 4, gpus=1),
    ]


PARENT_QUEUE_JOBS = [
    Disruption(
        "parent-queue-job-counts",
        departments("d1"),
        R,
        evicted=["b-2", "b-3"],
        pipelined={f"r-{i}": "n1" for i in range(4)},
    ),
    Disruption("missing-queue-job-counts-nowhere", departments("nosuch"), R, pending=["r"]),
    # Only old could give room (qa is empty): d1 is over its fair share, but a job of a
    # parent queue is never a victim.
    Disruption(
        "parent-queue-job-is-never-a-victim",
        [
            queue("d1", gpu_weight=1),
            queue("d2", gpu_weight=1),
            queue("qa", "d1", gpu_weight=1),
            queue("qb", "d2", gpu_weight=1),
            node("n1", gpus=8),
            job("old", "d1", 6, gpus=1, min_member=1, states=["Running"] * 6, nodes=["n1"] * 6),
            job("r", "qb", 4, gpus=1),
        ],
        R,
        pending=["r"],
    ),
]


@pytest.mark.parametrize("case", PARENT_QUEUE_JOBS, ids=str)
def test_jobs_of_a_parent_queue_count_to_it(case: Disruption) -> None:
    check(case)


def test_queue_numbers_shown_count_parent_queue_jobs() -> None:
    """The dashboard and ``kubectl podmuster`` read the same accounting: d1 holds old's 2
    GPUs and b's 4, its leaf qa only b's; r's 4 pending GPUs are asked by qb and d2."""
    snapshot = build_snapshot(sourced(departments("d1"))).snapshot
    shown = {s.name: s for s in queue_shares(snapshot, SchedulerConfig())}
    gpus = {name: (s.allocated[0], s.requested[0], s.fair_share[0]) for name, s in shown.items()}
    assert gpus == {
        "d1": (6.0, 6.0, 4.0),
        "d2": (0.0, 4.0, 4.0),
        "qa": (4.0, 4.0, 4.0),
        "qb": (0.0, 4.0, 4.0),
    }


def test_pod_group_with_the_same_name_elsewhere_is_its_own_job() -> None:
    """The namespace is part of a PodGroup's identity: both x are read, each with its pod."""
    objects = [
        queue("q"),
        pod_group("x", "q", namespace="aa"),
        pod("x-0", "x", namespace="aa"),
        pod_group("x", "q", namespace="zz"),
        pod("x-0", "x", namespace="zz"),
    ]
    jobs = build_snapshot(sourced(objects)).snapshot.jobs
    assert {key: [p.key for p in j.iter_pods()] for key, j in jobs.items()} == {
        "aa/x": ["aa/x-0"],
        "zz/x": ["zz/x-0"],
    }
