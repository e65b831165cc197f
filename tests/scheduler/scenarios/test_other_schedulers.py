"""Sharing nodes with other schedulers (docs/semantics.md §5.10): what their pods hold.

Each node has 4 CPUs; the pod of another scheduler (``default-scheduler``) takes 3 of
n0's, so our 2-CPU pod fits only on n1 when that pod counts. Binpack (the default)
would otherwise pick n0 first, by name, so every "counts" case would bind to n0
without the rule it checks. A gang whose bind was refused half-way is completed or
left pending by the next cycle (the refused member is Pending again).
"""

from __future__ import annotations

from typing import Any

import pytest

from crds.names import SCALING_NAMESPACE
from tests.kits.worlds import Scenario, check, job, node, pod, queue

OTHER = "default-scheduler"


def _web(state: str = "Pending", node_name: str | None = None, **status: Any) -> list[Any]:
    """Another scheduler's 3-CPU pod; ``status`` fields are set on its status."""
    objects = pod("web", cpu="3", state=state, node=node_name, scheduler_name=OTHER)
    objects[0]["status"].update(status)
    return objects


def _scaling_pod() -> list[Any]:
    """The scale adjuster's 3-CPU pod, nominated to n0."""
    objects = pod("scale", cpu="3", namespace=SCALING_NAMESPACE, scheduler_name=OTHER)
    objects[0]["status"]["nominatedNodeName"] = "n0"
    return objects


def _nominated(objects: list[Any], node_name: str) -> list[Any]:
    """A job (PodGroup, then its pod) whose pod has ``status.nominatedNodeName``."""
    objects[1]["status"]["nominatedNodeName"] = node_name
    return objects


def _cluster(*objects: Any) -> list[Any]:
    return [queue("q"), node("n0", cpu="4"), node("n1", cpu="4"), *objects]


SCENARIOS = [
    # Running on n0: n0 has 1 CPU left, the 2-CPU pod goes to n1.
    Scenario(
        "foreign-running-counts",
        _cluster(_web("Running", "n0"), job("j", "q", cpu="2")),
        binds={"j-0": "n1"},
    ),
    # Bound (spec.nodeName set) but still Pending (the kubelet has not started it yet):
    # the kubelet admits it against n0's room, so it counts there.
    Scenario(
        "foreign-bound-pending-counts",
        _cluster(_web("Bound", "n0"), job("j", "q", cpu="2")),
        binds={"j-0": "n1"},
    ),
    # Pending, nominated to n0 by kube-scheduler's preemption: the room is held for it.
    Scenario(
        "foreign-nominated-counts",
        _cluster(_web(nominatedNodeName="n0"), job("j", "q", cpu="2")),
        binds={"j-0": "n1"},
    ),
    # Nominated to a node that does not exist: it holds nothing.
    Scenario(
        "foreign-nominated-unknown-node-ignored",
        _cluster(_web(nominatedNodeName="gone"), job("j", "q", cpu="2")),
        binds={"j-0": "n0"},
    ),
    # A utility pod (a scaling pod) nominated to n0 holds its room there too; only the
    # cluster total leaves utility pods out.
    Scenario(
        "foreign-nominated-utility-pod-counts",
        _cluster(_scaling_pod(), job("j", "q", cpu="2")),
        binds={"j-0": "n1"},
    ),
    # Pending and not nominated: another scheduler's business, it holds nothing.
    Scenario(
        "foreign-pending-holds-nothing",
        _cluster(_web(), job("j", "q", cpu="2")),
        binds={"j-0": "n0"},
    ),
    # Failed by the kubelet (OutOfcpu) on n0: a terminal pod holds nothing.
    Scenario(
        "foreign-failed-outofcpu-holds-nothing",
        _cluster(_web("Failed", "n0", reason="OutOfcpu"), job("j", "q", cpu="2")),
        binds={"j-0": "n0"},
    ),
    # Nominated to n0 and both nodes nominated or full: the 2-CPU pod has no room.
    Scenario(
        "foreign-nominated-fills-cluster",
        [
            queue("q"),
            node("n0", cpu="4"),
            *_web(nominatedNodeName="n0"),
            job("j", "q", cpu="2"),
        ],
        pending=["j"],
    ),
    # Our own pod nominated to n0 holds nothing for itself beyond its score: the new job
    # still fits on n0 beside it, and the nominated pod (pending) is placed too.
    Scenario(
        "own-nominated-pod-is-scheduled-not-held",
        [
            queue("q"),
            node("n0", cpu="4"),
            _nominated(job("mine", "q", cpu="2"), "n0"),
            job("j", "q", cpu="2"),
        ],
        binds={"mine-0": "n0", "j-0": "n0"},
    ),
    # A gang of 2 whose second bind was refused (its BindRequest finally failed: Pending
    # again): the next cycle places the refused member beside the bound one.
    Scenario(
        "half-bound-gang-completed",
        _cluster(job("g", "q", 2, cpu="2", states=["Bound", "Pending"], nodes=["n0", None])),
        binds={"g-1": "n0"},
    ),
    # The refused member was taken by another scheduler's pod: n0 has 1 CPU, n1 is
    # taken by web: the member stays pending (the stale-gang rule releases the gang).
    Scenario(
        "half-bound-gang-no-room-stays-pending",
        [
            queue("q"),
            node("n0", cpu="4"),
            node("n1", cpu="4"),
            *job("g", "q", 2, cpu="3", states=["Bound", "Pending"], nodes=["n0", None]),
            *pod("web", cpu="2", state="Running", node="n1", scheduler_name=OTHER),
        ],
        pending=["g"],
    ),
    # A member failed by the kubelet (OutOfcpu) and recreated by its controller as a new
    # Pending pod: the gang's live members are the bound one and the new one.
    Scenario(
        "kubelet-refused-member-replaced",
        _cluster(
            job("g", "q", 2, cpu="2", states=["Bound", "Failed"], nodes=["n0", "n1"]),
            pod("g-2", "g", cpu="2"),
        ),
        binds={"g-2": "n0"},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_other_schedulers(scenario: Scenario) -> None:
    check(scenario)
