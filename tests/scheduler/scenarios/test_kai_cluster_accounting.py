"""KAI v0.17's cluster total, as scenario tables.

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
"""

from __future__ import annotations

from typing import Any

import pytest
from disruption_kit import Disruption, check

from scheduler.cache.snapshotting import build_snapshot
from scheduler.plugins.proportion.plugin import capacity
from tests.kits.worlds import Item, job, node, pod, queue, sourced

Obj = dict[str, Any]
A = ("allocate",)
R = ("reclaim",)


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
