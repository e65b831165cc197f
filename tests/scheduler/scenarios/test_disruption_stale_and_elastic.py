"""Stale-gang eviction and elastic victims, from docs/semantics.md §5.2 (stalegangeviction,
shared solver ``GetTasksToEvict``) and §5.9.

Why: a gang that lost pods holds resources it cannot use. It is stale when no
pod succeeded, something is still active (Releasing counts) and some pod set
has fewer active pods than its minimum. The first cycle that sees it stamps
``kai.scheduler/stale-podgroup-timestamp``; once the stamp is the grace period
old (default 60 s, negative = never) every active-allocated pod is evicted;
the stamp is removed when the gang recovers. Stale-gang eviction applies to
non-preemptible gangs too (it is not a disruption for someone else's sake).

Elastic victims (more pods than the minimum) shed one surplus pod at a time,
last in task order, from the pod set KAI's subgroup order puts last (§5.2),
before the core gang goes whole; in victim order, above-minimum jobs come
before jobs at their minimum.
"""

from __future__ import annotations

from typing import Any

import pytest
from disruption_kit import Disruption, check, rfc3339, running, stale

from scheduler.cache.reading import STALE_ANNOTATION
from tests.kits.worlds import job, node, pod, pod_group, queue

S = ("stalegangeviction",)


def gang(states: list[str], *, min_member: int = 3, **kw: Any) -> list[dict[str, Any]]:
    """A 1-GPU-per-pod gang ``g`` in queue q; pods on n0 unless Pending/Failed/Succeeded."""
    on_node = ("Running", "Releasing", "Bound", "Binding")
    return job(
        "g",
        "q",
        len(states),
        gpus=1,
        states=states,
        nodes=["n0" if s in on_node else None for s in states],
        min_member=min_member,
        **kw,
    )


def picture(*items: Any) -> list[Any]:
    return [node("n0", gpus=8), queue("q", gpu_quota=8), *items]


PARTIAL = ["Running", "Running", "Failed"]

STALE = [
    # First detection stamps the PodGroup (now) and evicts nothing (default grace 60 s).
    Disruption(
        "first-detection-stamps-only",
        picture(gang(PARTIAL)),
        S,
        annotations={"g": {STALE_ANNOTATION: rfc3339(0)}},
    ),
    # Stale for 30 s of the default 60: still waiting, the stamp is kept as it is.
    Disruption(
        "within-grace-waits",
        picture(stale(gang(PARTIAL), 30)),
        S,
        annotations={},
    ),
    # Stale for 61 s: every active pod of the gang is evicted.
    Disruption(
        "after-grace-evicts-every-active-pod",
        picture(stale(gang(PARTIAL), 61)),
        S,
        evicted=["g-0", "g-1"],
    ),
    # Exactly the grace period old counts as expired.
    Disruption(
        "exactly-grace-evicts",
        picture(stale(gang(PARTIAL), 60)),
        S,
        evicted=["g-0", "g-1"],
    ),
    # A configured grace period of 10 minutes keeps a 5-minute-old stale gang.
    Disruption(
        "configured-grace-period",
        picture(stale(gang(PARTIAL), 300)),
        S,
        settings={"staleness_grace_period_s": 600.0},
    ),
    # A negative grace period never evicts, however old the stamp.
    Disruption(
        "negative-grace-never-evicts",
        picture(stale(gang(PARTIAL), 86400)),
        S,
        settings={"staleness_grace_period_s": -1.0},
    ),
    # Recovered (all 3 running again): the stamp is removed.
    Disruption(
        "recovered-gang-stamp-cleared",
        picture(stale(gang(["Running"] * 3), 30)),
        S,
        annotations={"g": {STALE_ANNOTATION: None}},
    ),
    # A gang with a Succeeded pod is finishing, not stale.
    Disruption(
        "succeeded-pod-not-stale",
        picture(gang(["Running", "Succeeded", "Failed"])),
        S,
        annotations={},
    ),
    # A gang with nothing active (only pending and failed pods) is not stale either.
    Disruption(
        "nothing-active-not-stale",
        picture(gang(["Pending", "Pending", "Failed"])),
        S,
        annotations={},
    ),
    # Releasing pods still count as active: 2 running + 1 releasing meet the minimum of 3.
    Disruption(
        "releasing-counts-as-active",
        picture(gang(["Running", "Running", "Releasing"])),
        S,
        annotations={},
    ),
    # A pending pod does not count: 2 running + 1 pending of a gang of 3 is stale.
    Disruption(
        "pending-pod-does-not-count",
        picture(stale(gang(["Running", "Running", "Pending"]), 120)),
        S,
        evicted=["g-0", "g-1"],
    ),
    # Only active-allocated pods are evicted: the Releasing one is already going.
    Disruption(
        "releasing-pod-not-evicted-again",
        picture(stale(gang(["Running", "Releasing", "Failed"]), 120)),
        S,
        evicted=["g-0"],
    ),
    # An elastic job above its minimum after a failure is not stale.
    Disruption(
        "elastic-above-minimum-not-stale",
        picture(gang(["Running", "Running", "Failed"], min_member=2)),
        S,
        annotations={},
    ),
    # Non-preemptible gangs are evicted too: staleness is not preemption.
    Disruption(
        "non-preemptible-stale-gang-evicted",
        picture(stale(gang(PARTIAL, priority_class="inference"), 120)),
        S,
        evicted=["g-0", "g-1"],
    ),
    # In a full cycle allocate first completes the gang (its pending pod binds), so it is no
    # longer stale when stale-gang eviction runs: nothing is evicted, the stamp is removed.
    Disruption(
        "completed-by-allocate-in-same-cycle",
        picture(stale(gang(["Running", "Running", "Pending"]), 120)),
        ("allocate", "consolidation", "reclaim", "preempt", "stalegangeviction"),
        binds={"g-2": "n0"},
        annotations={"g": {STALE_ANNOTATION: None}},
    ),
    # The pod allocate completes the gang with had its bind refused by the API server in
    # the last commit (an admission policy, a quota): it does not count, so the gang is
    # stale and stamped (KAI unallocates a pod whose bind fails, in the cycle). Its bind
    # is still sent: the refusal may have passed.
    Disruption(
        "bind-failed-last-commit-does-not-complete",
        picture(gang(["Running", "Running", "Pending"])),
        ("allocate", "consolidation", "reclaim", "preempt", "stalegangeviction"),
        binds={"g-2": "n0"},
        annotations={"g": {STALE_ANNOTATION: rfc3339(0)}},
        bind_failed=["g-2"],
    ),
    # ... and past the grace period the whole gang goes, the failing pod's bind with it.
    Disruption(
        "bind-failed-past-grace-evicted",
        picture(stale(gang(["Running", "Running", "Pending"]), 120)),
        ("allocate", "consolidation", "reclaim", "preempt", "stalegangeviction"),
        evicted=["g-0", "g-1"],
        evicted_by="stalegangeviction",
        bind_failed=["g-2"],
    ),
    # A failed bind of a pod the cycle does not place again changes nothing: a gang at its
    # minimum stays unstamped.
    Disruption(
        "bind-failed-of-another-pod-ignored",
        picture(gang(["Running", "Running", "Running", "Pending"])),
        ("allocate", "consolidation", "reclaim", "preempt", "stalegangeviction"),
        binds={"g-3": "n0"},
        annotations={},
        bind_failed=["g-9"],
    ),
    # Sub-groups: one pod set below its minimum makes the whole job stale; all active pods go.
    Disruption(
        "one-pod-set-below-minimum",
        picture(
            stale(
                [
                    pod_group("g", "q", min_member=None, sub_groups=[("a", 1), ("b", 2)]),
                    *pod("g-a0", "g", gpus=1, state="Running", node="n0", sub_group="a"),
                    *pod("g-b0", "g", gpus=1, state="Running", node="n0", sub_group="b"),
                    *pod("g-b1", "g", gpus=1, state="Failed", sub_group="b"),
                ],
                120,
            )
        ),
        S,
        evicted=["g-a0", "g-b0"],
    ),
]


ELASTIC = [
    # Preempt: a 2-GPU preemptor takes two surplus pods, one at a time, last in task order.
    Disruption(
        "preempt-sheds-two-surplus-pods",
        [
            node("n0", gpus=4),
            queue("q", gpu_quota=4),
            running("e", "q", "n0", 4, min_member=1),
            job("b", "q", gpus=2, priority_class="build"),
        ],
        ("preempt",),
        evicted=["e-3", "e-2"],
        pipelined={"b-0": "n0"},
    ),
    # After the surplus the core gang goes whole: 3 GPUs from a job of 3 with minimum 2
    # take the surplus pod and then both core pods.
    Disruption(
        "core-gang-whole-after-surplus",
        [
            node("n0", gpus=3),
            queue("q", gpu_quota=3),
            running("e", "q", "n0", 3, min_member=2),
            job("b", "q", gpus=3, priority_class="build"),
        ],
        ("preempt",),
        evicted=["e-0", "e-1", "e-2"],
        pipelined={"b-0": "n0"},
    ),
    # The surplus pod comes from the pod set with the highest ratio to its minimum (w: 3 of 1).
    Disruption(
        "surplus-from-pod-set-furthest-above-minimum",
        [
            node("n0", gpus=5),
            queue("q", gpu_quota=5),
            pod_group("e", "q", min_member=None, sub_groups=[("h", 1), ("w", 1)]),
            *pod("e-h0", "e", gpus=1, state="Running", node="n0", sub_group="h"),
            *pod("e-h1", "e", gpus=1, state="Running", node="n0", sub_group="h"),
            *pod("e-w0", "e", gpus=1, state="Running", node="n0", sub_group="w"),
            *pod("e-w1", "e", gpus=1, state="Running", node="n0", sub_group="w"),
            *pod("e-w2", "e", gpus=1, state="Running", node="n0", sub_group="w"),
            job("b", "q", gpus=1, priority_class="build"),
        ],
        ("preempt",),
        evicted=["e-w2"],
        pipelined={"b-0": "n0"},
    ),
    # Victim job order: an above-minimum elastic job gives before an at-minimum job of the
    # same priority, although the at-minimum job is newer.
    Disruption(
        "above-minimum-job-before-at-minimum-job",
        [
            node("n0", gpus=3),
            queue("q", gpu_quota=3),
            running("elastic", "q", "n0", 2, min_member=1),
            running("rigid", "q", "n0"),
            job("b", "q", gpus=1, priority_class="build"),
        ],
        ("preempt",),
        evicted=["elastic-1"],
        pipelined={"b-0": "n0"},
    ),
    # Reclaim counts surplus pods one by one: qb keeps its core pod, loses two extras.
    Disruption(
        "reclaim-takes-surplus-pods-not-the-core",
        [
            node("n0", gpus=4),
            queue("qa", gpu_quota=2),
            queue("qb", gpu_quota=2),
            running("e", "qb", "n0", 4, min_member=2),
            job("a", "qa", gpus=2),
        ],
        ("reclaim",),
        evicted=["e-3", "e-2"],
        pipelined={"a-0": "n0"},
    ),
]


@pytest.mark.parametrize("case", STALE + ELASTIC, ids=str)
def test_stale_gangs_and_elastic_victims(case: Disruption) -> None:
    check(case)
