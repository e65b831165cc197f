"""Gang rules: all-or-nothing, readiness, gated pods, sub-groups (docs/semantics.md §2.1, §5.9)."""

from __future__ import annotations

import pytest

from tests.kits.worlds import Scenario, check, job, node, pod, pod_group, queue

SCENARIOS = [
    # §5.2 gang: 3 x 1 GPU but only 2 GPUs exist, so no task is bound (all-or-nothing).
    Scenario(
        "gang-all-or-nothing",
        [queue("q"), node("n0", gpus=1), node("n1", gpus=1), job("g", "q", 3, gpus=1)],
        pending=["g"],
        reasons={"g": ["gang of 3 pods: only 2 could be placed"]},
    ),
    # §5.2 gang: 3 x 1 GPU fits across n0 (2 GPUs) and n1 (1 GPU); binpack fills the
    # fuller n1 first, then n0.
    Scenario(
        "gang-spans-nodes",
        [queue("q"), node("n0", gpus=2), node("n1", gpus=1), job("g", "q", 3, gpus=1)],
        binds={"g-0": "n1", "g-1": "n0", "g-2": "n0"},
    ),
    # §5.1 readiness: minMember 4 but only 3 pods exist; the job waits although all fit.
    Scenario(
        "not-ready-missing-pods",
        [queue("q"), node("n0", gpus=4), job("g", "q", 3, gpus=1, min_member=4)],
        pending=["g"],
        reasons={"g": ["NotReady"]},
    ),
    # §5.1 readiness: gated pods do not count: 2 pending + 1 gated < minMember 3.
    Scenario(
        "not-ready-gated-pod",
        [
            queue("q"),
            node("n0", gpus=4),
            job("g", "q", 3, gpus=1, states=["Pending", "Pending", "Gated"]),
        ],
        pending=["g"],
        reasons={"g": ["NotReady", "1 gated"]},
    ),
    # §5.1: with minMember 2, two pending pods make the job ready; the gated third pod is
    # not allocatable (only Pending pods are), so exactly the two bind.
    Scenario(
        "gated-extra-pod-stays",
        [
            queue("q"),
            node("n0", gpus=4),
            job("g", "q", 3, gpus=1, min_member=2, states=["Pending", "Pending", "Gated"]),
        ],
        binds={"g-0": "n0", "g-1": "n0"},
    ),
    # §5.1: running pods count as alive for readiness; the two missing pods of the gang of 3
    # are placed.
    Scenario(
        "running-pods-count-for-readiness",
        [
            queue("q"),
            node("n0", gpus=4),
            job("g", "q", 3, gpus=1, states=["Running", "Pending", "Pending"], nodes=["n0"] * 3),
        ],
        binds={"g-1": "n0", "g-2": "n0"},
    ),
    # §5.1: Releasing pods are not alive: 1 releasing + 1 pending < minMember 2.
    Scenario(
        "releasing-pod-not-alive",
        [
            queue("q"),
            node("n0", gpus=4),
            job("g", "q", 2, gpus=1, states=["Releasing", "Pending"], nodes=["n0", None]),
        ],
        pending=["g"],
        reasons={"g": ["NotReady"]},
    ),
    # §2.1: two pod sets with their own minimums (a: 2, b: 1) all placed together.
    Scenario(
        "subgroups-both-satisfied",
        [
            queue("q"),
            node("n0", gpus=4),
            pod_group("sg", "q", sub_groups=[("a", 2), ("b", 1)]),
            pod("a-0", "sg", gpus=1, sub_group="a"),
            pod("a-1", "sg", gpus=1, sub_group="a"),
            pod("b-0", "sg", gpus=1, sub_group="b"),
        ],
        binds={"a-0": "n0", "a-1": "n0", "b-0": "n0"},
    ),
    # §5.9: all pod sets are satisfied together: b's 4-GPU pod fits nowhere, so a's two
    # pods are not bound either.
    Scenario(
        "subgroups-all-or-nothing",
        [
            queue("q"),
            node("n0", gpus=2),
            node("n1", gpus=2),
            pod_group("sg", "q", sub_groups=[("a", 2), ("b", 1)]),
            pod("a-0", "sg", gpus=1, sub_group="a"),
            pod("a-1", "sg", gpus=1, sub_group="a"),
            pod("b-0", "sg", gpus=4, sub_group="b"),
        ],
        pending=["sg"],
    ),
    # §2.1: a pod set missing pods makes the job not ready (b needs 2, has 1).
    Scenario(
        "subgroup-not-ready",
        [
            queue("q"),
            node("n0", gpus=4),
            pod_group("sg", "q", sub_groups=[("a", 1), ("b", 2)]),
            pod("a-0", "sg", gpus=1, sub_group="a"),
            pod("b-0", "sg", gpus=1, sub_group="b"),
        ],
        pending=["sg"],
        reasons={"sg": ["NotReady", "sub-group 'b'"]},
    ),
    # §2.1: a pod whose subgroup label matches no pod set is ignored (x-0), and so is an
    # unlabelled pod (it counts as 'default', which is not a pod set here).
    Scenario(
        "unknown-subgroup-pod-ignored",
        [
            queue("q"),
            node("n0", gpus=4),
            pod_group("sg", "q", sub_groups=[("a", 1)]),
            pod("a-0", "sg", gpus=1, sub_group="a"),
            pod("x-0", "sg", gpus=1, sub_group="zzz"),
            pod("plain-0", "sg", gpus=1),
        ],
        binds={"a-0": "n0"},
    ),
    # §2.1: without subGroups, a pod labelled with a subgroup other than 'default' is ignored.
    Scenario(
        "subgroup-label-without-subgroups-ignored",
        [
            queue("q"),
            node("n0", gpus=4),
            pod_group("pg", "q", min_member=1),
            pod("p-0", "pg", gpus=1),
            pod("p-1", "pg", gpus=1, sub_group="workers"),
        ],
        binds={"p-0": "n0"},
    ),
    # §2.1: a subgroup with children is a subgroup set; its minMember (5) is not enforced,
    # so the two leaf pod sets of 1 make the job ready.
    Scenario(
        "non-leaf-subgroup-min-ignored",
        [
            queue("q"),
            node("n0", gpus=4),
            pod_group(
                "sg",
                "q",
                sub_groups=[
                    {"name": "top", "minMember": 5},
                    {"name": "a", "minMember": 1, "parent": "top"},
                    {"name": "b", "minMember": 1, "parent": "top"},
                ],
            ),
            pod("a-0", "sg", gpus=1, sub_group="a"),
            pod("b-0", "sg", gpus=1, sub_group="b"),
        ],
        binds={"a-0": "n0", "b-0": "n0"},
    ),
    # §2.1: minMember is ignored when subGroups exist (minMember 10 here, pod sets of 1).
    Scenario(
        "pod-group-min-member-ignored-with-subgroups",
        [
            queue("q"),
            node("n0", gpus=2),
            pod_group("sg", "q", min_member=10, sub_groups=[("a", 1)]),
            pod("a-0", "sg", gpus=1, sub_group="a"),
        ],
        binds={"a-0": "n0"},
    ),
    # §2.1: minMember 0 / unset means a gang of 1.
    Scenario(
        "min-member-unset-is-one",
        [
            queue("q"),
            node("n0", gpus=1),
            pod_group("pg", "q", min_member=None),
            pod("p-0", "pg", gpus=1),
        ],
        binds={"p-0": "n0"},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_allocate_gang(scenario: Scenario) -> None:
    check(scenario)
