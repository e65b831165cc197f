"""node-scale-adjuster decisions (docs/semantics.md §7), as tables: which scaling pods are
deleted, when new ones are made (needed devices, largest scaling pod, cool-down), what
they look like, and which pods are candidates at all; bad annotations are named.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from scale_objects import user_pod

from scheduler.scale_adjuster.deciding import (
    Settings,
    devices_of,
    needed_devices,
    plan,
    scaling_pod,
    scaling_pod_name,
)

NS = "kai-scale-adjust"


def scaler(original: dict[str, Any], devices: int = 1, phase: str = "Pending") -> dict[str, Any]:
    pod = scaling_pod(original, devices, Settings())
    pod["status"] = {"phase": phase}
    return pod


@dataclass(frozen=True)
class Case:
    name: str
    pods: list[dict[str, Any]]
    create: list[str] = field(default_factory=list)  # scaling pod names
    delete: list[str] = field(default_factory=list)
    now: float = 100.0
    cool_down_until: float = 0.0
    cooling: bool = False  # the plan ends in a cool-down

    def __str__(self) -> str:
        return self.name


A = user_pod("a")
CODE_NO_QUEUE = "QueueDoesNotExist"


def held(name: str, code: str = "OverLimit") -> dict[str, Any]:
    """A pending sharing pod the scheduler said its queue holds back (message as written)."""
    pod = user_pod(name)
    (condition,) = pod["status"]["conditions"]
    message = f"gang of 1 pods: 0/2 nodes fit; {code}: gpu request would not fit"
    pod["status"]["conditions"] = [{**condition, "message": message}]
    return pod


CASES = [
    Case("one-half-gpu-pod-gets-one-scaler", [A], create=["team-a"]),
    # Two halves need one device: one scaling pod covers both.
    Case("two-halves-share-one-device", [A, user_pod("b")], create=["team-a"]),
    # Three halves need two devices: a second scaling pod.
    Case(
        "three-halves-need-two",
        [A, user_pod("b"), user_pod("c")],
        create=["team-a", "team-b"],
    ),
    # An existing scaler already covers the need: nothing new.
    Case("existing-scaler-covers", [A, user_pod("b"), scaler(A)]),
    # A pod needing 2 devices is larger than the largest scaler (1): a new one.
    Case(
        "more-devices-than-largest-scaler",
        [A, scaler(A), user_pod("big", fraction="0.1", devices=2)],
        create=["team-big"],
    ),
    # gpu-memory pods count 0.1 each: ten of them need one device.
    Case(
        "gpu-memory-counts-ratio",
        [user_pod(f"m{i}", fraction=None, memory="2000") for i in range(11)],
        create=["team-m0", "team-m1"],
    ),
    # Not candidates: scheduled, other scheduler, no sharing annotation, not marked
    # Unschedulable, finished.
    Case(
        "non-candidates-ignored",
        [
            user_pod("bound", node="n1"),
            user_pod("other", scheduler="default-scheduler"),
            user_pod("whole", fraction=None),
            user_pod("fresh", unschedulable=False),
            user_pod("done", phase="Succeeded"),
        ],
    ),
    # Clean-up: original gone, original scheduled, scaler Succeeded -> deleted, cool-down.
    Case(
        "scaler-of-deleted-pod-goes",
        [scaler(user_pod("gone"))],
        delete=["team-gone"],
        cooling=True,
    ),
    Case(
        "scaler-of-scheduled-pod-goes",
        [user_pod("s", node="n1", unschedulable=False), scaler(user_pod("s"))],
        delete=["team-s"],
        cooling=True,
    ),
    Case(
        "succeeded-scaler-goes",
        [A, scaler(A, phase="Succeeded")],
        delete=["team-a"],
        cooling=True,
    ),
    # A deletion starts the cool-down: no new scaler in the same reconcile.
    Case(
        "no-creation-in-the-round-that-deletes",
        [scaler(user_pod("gone")), A],
        delete=["team-gone"],
        cooling=True,
    ),
    # The scheduler says the queue holds it back: no node would help, no scaler; and a
    # scaler made before that (the queue filled up meanwhile) goes.
    Case("queue-held-pods-get-no-scaler", [held("over"), held("gone-queue", CODE_NO_QUEUE)]),
    Case(
        "scaler-of-a-queue-held-pod-goes",
        [held("late"), scaler(user_pod("late"))],
        delete=["team-late"],
        cooling=True,
    ),
    # A queue code named by another reason of the gang counts too; a plain shortage not.
    Case("a-gang-members-queue-reason-counts", [held("g", "pod team/g-1: OverLimit")]),
    # Inside an earlier cool-down: nothing is created; after it, creation resumes.
    Case("cool-down-holds", [A], now=100.0, cool_down_until=150.0, cooling=True),
    Case("cool-down-over", [A], create=["team-a"], now=151.0, cool_down_until=150.0),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_plan(case: Case) -> None:
    decided = plan(case.pods, now=case.now, cool_down_until=case.cool_down_until)
    assert [p["metadata"]["name"] for p in decided.create] == case.create
    assert decided.delete == [(NS, name) for name in case.delete]
    assert (case.now < decided.cool_down_until) == case.cooling
    if case.delete:
        assert decided.cool_down_until == case.now + 60.0
    assert decided.errors == []


def test_scaling_pod_shape() -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}
    tolerations = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    original = user_pod(
        "train",
        devices=2,
        affinity=affinity,
        tolerations=tolerations,
        nodeSelector={"pool": "a100"},
    )
    (pod,) = plan([original], now=0).create
    assert pod["metadata"]["namespace"] == NS
    assert pod["metadata"]["name"] == "team-train"
    assert pod["metadata"]["labels"] == {
        "app": "scaling-pod",
        "kai.scheduler/unschedulable-pod-name": "train",
        "kai.scheduler/unschedulable-pod-namespace": "team",
    }
    spec = pod["spec"]
    assert "schedulerName" not in spec
    assert spec["restartPolicy"] == "OnFailure"
    assert (spec["affinity"], spec["tolerations"], spec["nodeSelector"]) == (
        affinity,
        tolerations,
        {"pool": "a100"},
    )
    (container,) = spec["containers"]
    assert container["command"] == ["sh", "-c", "exit 0"]  # Succeeded at once, then deleted
    assert container["resources"] == {
        "requests": {"cpu": "1500m", "memory": str(int(1.5 * 2**30)), "nvidia.com/gpu": "2"},
        "limits": {"nvidia.com/gpu": "2"},
    }


def test_long_names_are_cut_with_a_hash() -> None:
    long_ns, long_name = "n" * 40, "p" * 60
    name = scaling_pod_name(long_ns, long_name)
    assert len(name) <= 63
    assert name != scaling_pod_name(long_ns, long_name + "x")
    assert scaling_pod_name("team", "a") == "team-a"
    pod = scaling_pod(user_pod(long_name, namespace=long_ns), 1, Settings())
    assert all(len(v) <= 63 for v in pod["metadata"]["labels"].values())
    assert pod["metadata"]["annotations"]["kai.scheduler/unschedulable-pod-name"] == long_name
    # the full name in the annotations still finds the original
    assert plan([user_pod(long_name, namespace=long_ns), {**pod, "status": {}}], now=0).delete == []


@pytest.mark.parametrize(
    ("shares", "devices"),
    [
        ([(0.5, 1)], 1),
        ([(0.5, 1), (0.5, 1)], 1),
        ([(0.5, 1), (0.5, 1), (0.01, 1)], 2),
        ([(0.1, 1)] * 10, 1),
        ([(0.3, 2), (0.5, 1)], 2),  # 0.6 + 0.5
        ([], 0),
    ],
)
def test_needed_devices(shares: list[tuple[float, int]], devices: int) -> None:
    assert needed_devices(shares) == devices


def test_fraction_rounded_and_memory_ratio() -> None:
    assert devices_of(user_pod("a", fraction="0.333"), 0.1) == (0.33, 1)
    assert devices_of(user_pod("m", fraction=None, memory="4000", devices=3), 0.25) == (0.25, 3)


FRACTION_FIELD = "metadata.annotations[gpu-fraction]"
FRACTION_RULE = "must be a number with 0 < x < 1 (a whole GPU is asked for with nvidia.com/gpu)"


def test_a_fraction_of_one_is_refused_as_everywhere() -> None:
    decided = plan([user_pod("one", fraction="1")], now=0)
    assert decided.create == []
    assert decided.errors == [f"pod team/one: {FRACTION_FIELD}: {FRACTION_RULE}, got '1'"]


def test_bad_annotations_are_named_and_skipped() -> None:
    pods = [
        user_pod("bad", fraction="half"),
        user_pod("zero", fraction="0"),
        user_pod("n", devices=0),
        user_pod("good"),
    ]
    decided = plan(pods, now=0)
    assert [p["metadata"]["name"] for p in decided.create] == ["team-good"]
    assert decided.errors == [
        f"pod team/bad: {FRACTION_FIELD}: {FRACTION_RULE}, got 'half'",
        "pod team/n: metadata.annotations[gpu-fraction-num-devices]: must be a positive"
        " integer (ASCII digits only), got '0'",
        f"pod team/zero: {FRACTION_FIELD}: {FRACTION_RULE}, got '0'",
    ]


def test_other_scheduler_name_and_namespace() -> None:
    settings = Settings(scheduler_name="mine", namespace="scale")
    decided = plan([user_pod("a", scheduler="mine")], now=0, settings=settings)
    (pod,) = decided.create
    assert pod["metadata"]["namespace"] == "scale"
