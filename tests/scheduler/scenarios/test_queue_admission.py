"""Queue admission through the scheduling gate (docs/semantics.md §5.11).

Each case is a cluster picture with pods held by ``kai.scheduler/queue-admission`` and
says exactly whose gate comes off after one cycle and why the other gated gangs stay
held: the whole gang's minimum must pass the engine's OverLimit and
NonPreemptibleOverQuota checks at every queue on its path, counting what is running,
what the cycle placed, what was admitted earlier and is still pending, and the gangs
admitted before it in the same pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from crds.names import ADMISSION_GATE
from scheduler.config import SchedulerConfig
from tests.kits.worlds import ALLOCATE_ONLY, Item, job, node, queue, run_objects

GATED = "AdmissionGated"
ALL_QUEUES = SchedulerConfig(actions=("allocate",), admission_gate_all_queues=True)


def gated(name: str, q: str, tasks: int = 2, **args: object) -> list[dict[str, object]]:
    return job(name, q, tasks, states=[GATED] * tasks, **args)  # type: ignore[arg-type]


def running(name: str, q: str, tasks: int = 2, **args: object) -> list[dict[str, object]]:
    return job(name, q, tasks, states=["Running"] * tasks, nodes=["n0"] * tasks, **args)  # type: ignore[arg-type]


def with_gates(objects: list[dict[str, object]], *gates: str) -> list[dict[str, object]]:
    """The job's pods with exactly these scheduling gates."""
    for obj in objects:
        if obj["kind"] == "Pod":
            obj["spec"]["schedulingGates"] = [{"name": g} for g in gates]  # type: ignore[index]
    return objects


@dataclass(frozen=True)
class Case:
    name: str
    objects: Sequence[Item]
    ungated: Sequence[str] = ()
    held: Mapping[str, Sequence[str]] = field(default_factory=dict)  # group -> substrings
    config: SchedulerConfig = ALLOCATE_ONLY

    def __str__(self) -> str:
        return self.name


CASES = [
    Case(
        "queue-full-holds-the-gang",
        [
            queue("q", gpu_limit=2, admission_gate=True),
            node("n0", gpus=8),
            running("a", "q", gpus=1),
            gated("b", "q", gpus=1),
        ],
        held={"b": ["AdmissionGated", "OverLimit", "queue q"]},
    ),
    Case(
        "room-for-the-whole-gang-lifts-every-pod",
        [queue("q", gpu_limit=2, admission_gate=True), node("n0", gpus=8), gated("b", "q", gpus=1)],
        ungated=["b-0", "b-1"],
    ),
    Case(
        # room for one pod only: a gang of two is not admitted piecemeal
        "room-for-part-of-the-gang-lifts-nothing",
        [
            queue("q", gpu_limit=3, admission_gate=True),
            node("n0", gpus=8),
            running("a", "q", gpus=1),
            gated("b", "q", gpus=1),
        ],
        held={"b": ["OverLimit"]},
    ),
    Case(
        # two gangs, room for one: the higher priority gang first, the other stays held
        "gangs-admitted-earlier-in-the-pass-count",
        [
            queue("q", gpu_limit=2, admission_gate=True),
            node("n0", gpus=8),
            gated("low", "q", gpus=1, priority_class="train"),
            gated("high", "q", gpus=1, priority_class="build-preemptible"),
        ],
        ungated=["high-0", "high-1"],
        held={"low": ["OverLimit"]},
    ),
    Case(
        # an admitted gang that found no node holds its room in the queue
        "admitted-pending-gang-keeps-its-room",
        [
            queue("q", gpu_limit=2, admission_gate=True),
            node("n0", gpus=1),
            job("waiting", "q", 2, gpus=1),
            gated("b", "q", gpus=1),
        ],
        held={"b": ["OverLimit"]},
    ),
    Case(
        # what the cycle just placed counts
        "placed-this-cycle-counts",
        [
            queue("q", gpu_limit=2, admission_gate=True),
            node("n0", gpus=8),
            job("now", "q", 2, gpus=1),
            gated("b", "q", gpus=1),
        ],
        held={"b": ["OverLimit"]},
    ),
    Case(
        "queue-not-under-the-gate-lifts-at-once",
        [
            queue("q", gpu_limit=2),
            node("n0", gpus=8),
            running("a", "q", gpus=1),
            gated("b", "q", gpus=1),
        ],
        ungated=["b-0", "b-1"],
    ),
    Case(
        "queueAdmissionGate-puts-every-queue-under-the-gate",
        [
            queue("q", gpu_limit=2),
            node("n0", gpus=8),
            running("a", "q", gpus=1),
            gated("b", "q", gpus=1),
        ],
        held={"b": ["OverLimit"]},
        config=ALL_QUEUES,
    ),
    Case(
        # the annotation on a department covers its children; its limit is checked too
        "parent-opt-in-and-parent-limit",
        [
            queue("dept", gpu_limit=2, admission_gate=True),
            queue("team-a", "dept"),
            queue("team-b", "dept"),
            node("n0", gpus=8),
            running("a", "team-a", gpus=1),
            gated("b", "team-b", gpus=1),
        ],
        held={"b": ["OverLimit", "queue dept"]},
    ),
    Case(
        "non-preemptible-gang-over-quota-is-held",
        [
            queue("q", gpu_quota=1, gpu_limit=-1, admission_gate=True),
            node("n0", gpus=8),
            gated("np", "q", gpus=1, priority_class="build"),
        ],
        held={"np": ["NonPreemptibleOverQuota"]},
    ),
    Case(
        "preemptible-gang-over-quota-is-admitted",
        [
            queue("q", gpu_quota=1, gpu_limit=-1, admission_gate=True),
            node("n0", gpus=8),
            gated("p", "q", gpus=1, priority_class="train"),
        ],
        ungated=["p-0", "p-1"],
    ),
    Case(
        # minMember 3 but two pods exist: the gang is not whole yet
        "gang-not-whole-waits-for-its-pods",
        [
            queue("q", admission_gate=True),
            node("n0", gpus=8),
            gated("b", "q", gpus=1, min_member=3),
        ],
        held={"b": ["gang needs 3 pods", "0 admitted and 2 waiting"]},
    ),
    Case(
        # elastic: the minimum first, then extra pods one by one while the limit allows;
        # the group says why its third pod still waits
        "elastic-extras-one-at-a-time",
        [
            queue("q", gpu_limit=2, admission_gate=True),
            node("n0", gpus=8),
            gated("e", "q", 3, gpus=1, min_member=1),
        ],
        ungated=["e-0", "e-1"],
        held={"e": ["AdmissionGated", "OverLimit"]},
    ),
    Case(
        # elastic extras wait until every gang's minimum was admitted
        "minimums-before-extras",
        [
            queue("q", gpu_limit=2, admission_gate=True),
            node("n0", gpus=8),
            gated("e", "q", 2, gpus=1, min_member=1, priority_class="build-preemptible"),
            gated("g", "q", 1, gpus=1, priority_class="train"),
        ],
        ungated=["e-0", "g-0"],
        held={"e": ["AdmissionGated", "OverLimit"]},
    ),
    Case(
        # only our gate counts: a pod held by someone else's gate alone is not ours to
        # lift; with ours and another, ours comes off (the other stays, see the commit)
        "other-gates-are-left-alone",
        [
            queue("q", admission_gate=True),
            node("n0", gpus=8),
            with_gates(job("theirs", "q", 1, gpus=1, states=["Gated"]), "example.com/wait"),
            with_gates(
                job("both", "q", 1, gpus=1, states=[GATED]), ADMISSION_GATE, "example.com/wait"
            ),
        ],
        ungated=["both-0"],
    ),
    Case(
        "missing-queue-holds",
        [queue("q", admission_gate=True), node("n0", gpus=8), gated("b", "nowhere", gpus=1)],
        held={"b": ["AdmissionGated: QueueDoesNotExist", "'nowhere' does not exist"]},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_admission(case: Case) -> None:
    result = run_objects(case.objects, case.config, explain=True)
    assert result.ungated == sorted(f"default/{p}" for p in case.ungated)
    held = {o.pod_group: o.reasons for o in result.pod_groups if o.outcome == "held"}
    assert sorted(held) == sorted(f"default/{g}" for g in case.held)
    for group, parts in case.held.items():
        (reason,) = held[f"default/{group}"]
        for part in parts:
            assert part in reason, (group, reason)


def test_held_groups_take_their_place_in_key_order() -> None:
    """The cycle's outcomes come one per group in key order, held ones among the groups
    the actions considered (here a pending gang on either side of the held one)."""
    result = run_objects(
        [
            queue("q", gpu_limit=2, admission_gate=True),
            node("n0", gpus=8),
            running("r", "q", gpus=1),
            job("c", "q", 2, gpus=1),
            gated("b", "q", gpus=1),
            job("a", "q", 2, gpus=1),
        ]
    )
    outcomes = [(o.pod_group, o.outcome) for o in result.pod_groups]
    assert outcomes == [
        ("default/a", "pending"),
        ("default/b", "held"),
        ("default/c", "pending"),
    ]
