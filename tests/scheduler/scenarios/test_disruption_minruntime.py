"""Minimum runtime scenarios, from docs/semantics.md §5.7, plus the bounds of the disruption search.

Why: a freshly started job must be able to make progress before it is
disrupted again. A victim is protected while ``now < last start + min
runtime``; one without a last start is never protected. The runtime comes
from the queues (``preemptMinRuntime`` / ``reclaimMinRuntime``) or the
scheduler defaults. Preempt walks up from the victim's leaf queue. Reclaim
(KAI's default ``lca`` method): for queues under different top-level queues
only the victim's top-level queue counts, without a walk; otherwise the walk
starts one level below the lowest common ancestor, on the victim's side. A
protected gang is no victim at all; a protected elastic job (a pod set
running more pods than its minMember) may still lose pods above its minimum,
never a subgroup that ``minSubGroup`` leaves optional.

Not covered because not implemented: the ``queue`` reclaim resolve method
(podmuster resolves reclaim by ``lca`` only).

The bounds cases check that the search stops (victim chunks per preemptor,
simulations per action) and says so in the job's reasons.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from disruption_kit import Disruption, Obj, check, running, started

from tests.kits.worlds import job, node, pod, pod_group, queue

P = ("preempt",)
R = ("reclaim",)
HOUR = 3600.0


def timed(queue_obj: Obj, *, preempt: str | None = None, reclaim: str | None = None) -> Obj:
    """The queue with ``preemptMinRuntime`` / ``reclaimMinRuntime`` set."""
    spec = dict(queue_obj["spec"])
    if preempt is not None:
        spec["preemptMinRuntime"] = preempt
    if reclaim is not None:
        spec["reclaimMinRuntime"] = reclaim
    return {**queue_obj, "spec": spec}


def _with_expiry(case: Disruption, evicted: str, pipelined: str) -> list[Disruption]:
    """The case, and when it expects protection, its twin two hours later expecting the
    eviction (so a protected case cannot pass for another reason)."""
    if case.evicted:
        return [case]
    later = replace(
        case,
        name=f"{case.name}-expired-later",
        at=2 * HOUR,
        evicted=[evicted],
        pipelined={pipelined: "n0"},
    )
    return [case, later]


def preempt_case(
    name: str, queues: list[Obj], *, age: float | None, protected: bool, **settings: Any
) -> list[Disruption]:
    """A train job in leaf qa on the only GPU, ``age`` seconds since it started (None: no
    last start), and a build job that wants its GPU."""
    victim = running("t", "qa", "n0")
    case = Disruption(
        name,
        [
            node("n0", gpus=1),
            *queues,
            victim if age is None else started(victim, age),
            job("b", "qa", gpus=1, priority_class="build"),
        ],
        P,
        evicted=[] if protected else ["t-0"],
        pipelined={} if protected else {"b-0": "n0"},
        settings=settings,
    )
    return _with_expiry(case, "t-0", "b-0")


LEAF = queue("qa", gpu_quota=1)

PREEMPT = [
    # The leaf queue's preemptMinRuntime protects a job started a minute ago ...
    *preempt_case("queue-runtime-protects", [timed(LEAF, preempt="10m")], age=60, protected=True),
    # ... and no longer once the runtime has passed.
    *preempt_case("queue-runtime-expired", [timed(LEAF, preempt="10m")], age=601, protected=False),
    # A victim without a last-start timestamp is never protected.
    *preempt_case(
        "no-last-start-never-protected", [timed(LEAF, preempt="10m")], age=None, protected=False
    ),
    # The walk goes up from the victim's leaf: the parent's value applies.
    *preempt_case(
        "inherited-from-parent",
        [timed(queue("d", gpu_quota=1), preempt="1h"), queue("qa", "d", gpu_quota=1)],
        age=600,
        protected=True,
    ),
    # The first value on the walk wins: the leaf's 0s overrides the parent's hour.
    *preempt_case(
        "leaf-value-overrides-parent",
        [
            timed(queue("d", gpu_quota=1), preempt="1h"),
            timed(queue("qa", "d", gpu_quota=1), preempt="0s"),
        ],
        age=600,
        protected=False,
    ),
    # Without queue values the scheduler default applies.
    *preempt_case(
        "scheduler-default", [LEAF], age=600, protected=True, default_preempt_min_runtime_s=HOUR
    ),
    # A queue value, even shorter, wins over the default.
    *preempt_case(
        "queue-value-over-default",
        [timed(LEAF, preempt="5m")],
        age=600,
        protected=False,
        default_preempt_min_runtime_s=HOUR,
    ),
    # Preempt reads preemptMinRuntime only: reclaimMinRuntime does not protect here.
    *preempt_case(
        "reclaim-runtime-ignored-by-preempt", [timed(LEAF, reclaim="1h")], age=600, protected=False
    ),
]


def reclaim_case(
    name: str, queues: list[Obj], victim_queue: str, *, protected: bool, **settings: Any
) -> list[Disruption]:
    """Queue qa (reclaimer, deserved 1) and ``victim_queue`` holding both GPUs with two jobs
    started ten minutes ago; the reclaimer wants one GPU."""
    case = Disruption(
        name,
        [
            node("n0", gpus=2),
            *queues,
            started(running("v0", victim_queue, "n0"), 600),
            started(running("v1", victim_queue, "n0"), 600),
            job("a", "qa", gpus=1),
        ],
        R,
        evicted=[] if protected else ["v1-0"],
        pipelined={} if protected else {"a-0": "n0"},
        settings=settings,
    )
    return _with_expiry(case, "v1-0", "a-0")


RECLAIM = [
    # Siblings under one parent: the walk starts at the victim's leaf (one below the LCA).
    *reclaim_case(
        "sibling-leaf-value-protects",
        [queue("d"), queue("qa", "d", gpu_quota=1), timed(queue("qb", "d"), reclaim="1h")],
        "qb",
        protected=True,
    ),
    # The reclaimer's own queue value does not protect the victim.
    *reclaim_case(
        "reclaimer-side-value-ignored",
        [queue("d"), timed(queue("qa", "d", gpu_quota=1), reclaim="1h"), queue("qb", "d")],
        "qb",
        protected=False,
    ),
    # Different top-level queues: only the victim's top-level queue counts ...
    *reclaim_case(
        "top-level-value-protects",
        [
            queue("d1", gpu_quota=1),
            timed(queue("d2", gpu_quota=1), reclaim="1h"),
            queue("qa", "d1", gpu_quota=1),
            queue("qb", "d2"),
        ],
        "qb",
        protected=True,
    ),
    # ... with no walk: the victim leaf's own value is ignored there.
    *reclaim_case(
        "different-top-level-leaf-value-ignored",
        [
            queue("d1", gpu_quota=1),
            queue("d2", gpu_quota=1),
            queue("qa", "d1", gpu_quota=1),
            timed(queue("qb", "d2"), reclaim="1h"),
        ],
        "qb",
        protected=False,
    ),
    # Deeper trees: one level below the LCA (m2) is unset, so the walk reaches d.
    *reclaim_case(
        "walk-from-below-lca-reaches-ancestor",
        [
            timed(queue("d"), reclaim="1h"),
            queue("m1", "d", gpu_quota=1),
            queue("m2", "d"),
            queue("qa", "m1", gpu_quota=1),
            queue("qb", "m2"),
        ],
        "qb",
        protected=True,
    ),
    # The first value on that walk wins: m2's 0s overrides d's hour.
    *reclaim_case(
        "walk-from-below-lca-first-value-wins",
        [
            timed(queue("d"), reclaim="1h"),
            queue("m1", "d", gpu_quota=1),
            timed(queue("m2", "d"), reclaim="0s"),
            queue("qa", "m1", gpu_quota=1),
            queue("qb", "m2"),
        ],
        "qb",
        protected=False,
    ),
    # Reclaim reads reclaimMinRuntime only: preemptMinRuntime does not protect here.
    *reclaim_case(
        "preempt-runtime-ignored-by-reclaim",
        [queue("d"), queue("qa", "d", gpu_quota=1), timed(queue("qb", "d"), preempt="1h")],
        "qb",
        protected=False,
    ),
    # Without queue values the scheduler's reclaim default applies.
    *reclaim_case(
        "scheduler-reclaim-default",
        [queue("qa", gpu_quota=1), queue("qb")],
        "qb",
        protected=True,
        default_reclaim_min_runtime_s=HOUR,
    ),
]


OTHERS = [
    # A protected victim is skipped and the next one in victim order goes instead.
    Disruption(
        "protected-victim-skipped-for-next",
        [
            node("n0", gpus=2),
            timed(queue("qa", gpu_quota=2), preempt="1h"),
            started(running("old", "qa", "n0"), 2 * HOUR),
            started(running("new", "qa", "n0"), 60),
            job("b", "qa", gpus=1, priority_class="build"),
        ],
        P,
        evicted=["old-0"],
        pipelined={"b-0": "n0"},
    ),
    # A protected elastic job may lose a surplus pod (its minimum of 1 keeps running) ...
    Disruption(
        "protected-elastic-loses-surplus",
        [
            node("n0", gpus=2),
            timed(queue("qa", gpu_quota=2), preempt="1h"),
            started(running("e", "qa", "n0", 2, min_member=1), 60),
            job("b", "qa", gpus=1, priority_class="build"),
        ],
        P,
        evicted=["e-1"],
        pipelined={"b-0": "n0"},
    ),
    # ... but not its core gang: two GPUs would take it below its minimum.
    Disruption(
        "protected-elastic-keeps-core",
        [
            node("n0", gpus=2),
            timed(queue("qa", gpu_quota=2), preempt="1h"),
            started(running("e", "qa", "n0", 2, min_member=1), 60),
            job("b", "qa", gpus=2, priority_class="build"),
        ],
        P,
        pending=["b"],
        reasons={"b": ["within its minimum runtime"]},
    ),
    # Protection ends at the clock: the same elastic case an hour and a second later.
    Disruption(
        "protected-elastic-core-after-runtime",
        [
            node("n0", gpus=2),
            timed(queue("qa", gpu_quota=2), preempt="1h"),
            started(running("e", "qa", "n0", 2, min_member=1), 60),
            job("b", "qa", gpus=2, priority_class="build"),
        ],
        P,
        evicted=["e-0", "e-1"],
        pipelined={"b-0": "n0"},
        at=HOUR,
    ),
]


def _optional_subgroups(name: str, queue_name: str, age: float, **group_args: Any) -> list[Obj]:
    """A job of subgroups s1 and s2 (minMember 1, one 1-GPU pod each, both running on n0)
    that needs only one of them (``minSubGroup: 1``), started ``age`` seconds ago."""
    group = pod_group(
        name, queue_name, min_member=None, sub_groups=[("s1", 1), ("s2", 1)], **group_args
    )
    group["spec"]["minSubGroup"] = 1
    pods = [
        obj
        for sub in ("s1", "s2")
        for obj in pod(f"{name}-{sub}", name, gpus=1, state="Running", node="n0", sub_group=sub)
    ]
    return started([group, *pods], age)


def _and_later(case: Disruption, pipelined: str) -> list[Disruption]:
    """The protected case, and its twin two hours later taking the optional subgroup s2
    (so the protected case cannot pass for another reason)."""
    later = replace(
        case,
        name=f"{case.name}-expired-later",
        at=2 * HOUR,
        evicted=["v-s2"],
        pipelined={pipelined: "n0"},
        pending=[],
        reasons={},
    )
    return [case, later]


# KAI's minimum runtime counts only pods above a pod set's own minMember as extras: a job
# whose pod sets all run exactly their minimum is no victim while protected, even when
# minSubGroup leaves one of its subgroups optional (KAI's PodGroupInfo.IsElastic).
OPTIONAL_SUBGROUPS = [
    # Reclaim: v (queue qa, deserved 0) holds both GPUs, r (qb, deserved 1) wants one.
    *_and_later(
        Disruption(
            "reclaim-optional-subgroup-protected",
            [
                node("n0", gpus=2),
                timed(queue("qa", gpu_quota=0), reclaim="1h"),
                queue("qb", gpu_quota=1),
                *_optional_subgroups("v", "qa", 60),
                job("r", "qb", gpus=1),
            ],
            R,
            pending=["r"],
            reasons={
                "r": [
                    "queue qa may give up work to queue qb, but none of its jobs may be evicted:"
                    " job default/v is within its minimum runtime (reclaimMinRuntime 1h of queue"
                    " qa)"
                ]
            },
        ),
        "r-0",
    ),
    # Preempt: a build job in the same queue wants one of train job v's GPUs.
    *_and_later(
        Disruption(
            "preempt-optional-subgroup-protected",
            [
                node("n0", gpus=2),
                timed(queue("qa", gpu_quota=2), preempt="1h"),
                *_optional_subgroups("v", "qa", 60, priority_class="train"),
                job("b", "qa", gpus=1, priority_class="build"),
            ],
            P,
            pending=["b"],
            reasons={
                "b": [
                    "job default/v is within its minimum runtime (preemptMinRuntime 1h of queue qa)"
                ]
            },
        ),
        "b-0",
    ),
]


def _many_small(count: int) -> list[Any]:
    return [running(f"t{i}", "qa", "n0") for i in range(count)]


REASONS = [
    # A protected gang empties the victim list: the reason names the minimum runtime (here
    # the scheduler's default), not the queue filter that let queue qa give up work.
    Disruption(
        "reclaim-reason-names-min-runtime",
        [
            node("n0", gpus=2),
            queue("qa", gpu_quota=0),
            queue("qb", gpu_quota=1),
            started(running("v", "qa", "n0", 2), 60),
            job("r", "qb", gpus=1),
        ],
        R,
        pending=["r"],
        reasons={
            "r": [
                "reclaim: queue qa may give up work to queue qb, but none of its jobs may be"
                " evicted: job default/v is within its minimum runtime (reclaimMinRuntime 1h"
                " the scheduler's default)"
            ]
        },
        settings={"default_reclaim_min_runtime_s": HOUR},
    ),
]


BOUNDS = [
    # The search stays bounded: 4 victim chunks are needed, at most 3 are tried, and the
    # reason says where it stopped.
    Disruption(
        "victim-chunks-bounded",
        [
            node("n0", gpus=4),
            queue("qa", gpu_quota=4),
            *_many_small(4),
            job("b", "qa", gpus=4, priority_class="build"),
        ],
        P,
        pending=["b"],
        reasons={"b": ["stopped after 3 victim chunks"]},
        settings={"max_victim_chunks": 3},
    ),
    # The same with room for 4 chunks succeeds.
    Disruption(
        "victim-chunks-enough",
        [
            node("n0", gpus=4),
            queue("qa", gpu_quota=4),
            *_many_small(4),
            job("b", "qa", gpus=4, priority_class="build"),
        ],
        P,
        evicted=["t0-0", "t1-0", "t2-0", "t3-0"],
        pipelined={"b-0": "n0"},
        settings={"max_victim_chunks": 4},
    ),
    # One simulation per action and cycle: the first preemptor uses it, the second says so.
    Disruption(
        "simulation-budget-bounded",
        [
            node("n0", gpus=2),
            queue("qa", gpu_quota=2),
            *_many_small(2),
            job("b0", "qa", gpus=1, priority_class="build"),
            job("b1", "qa", gpus=1, priority_class="build", cpu="2"),
        ],
        P,
        evicted=["t1-0"],
        pipelined={"b0-0": "n0"},
        pending=["b1"],
        reasons={"b1": ["simulation budget of this cycle used up"]},
        settings={"max_simulations_per_action": 1},
    ),
]


@pytest.mark.parametrize(
    "case", PREEMPT + RECLAIM + OTHERS + OPTIONAL_SUBGROUPS + REASONS + BOUNDS, ids=str
)
def test_min_runtime_and_bounds(case: Disruption) -> None:
    check(case)
