"""Elastic jobs (docs/semantics.md §5.1 tasks to allocate, §5.9): the gang minimum first,
then one extra pod per job pop, interleaved with other queues by fairness.
"""

from __future__ import annotations

import pytest

from tests.kits.worlds import Scenario, check, job, node, pod, pod_group, queue

SCENARIOS = [
    # minMember 2 with 4 pods and room for all: the gang of 2, then one extra per pop,
    # so all 4 are placed.
    Scenario(
        "elastic-all-placed",
        [queue("q"), node("n0", gpus=4), job("e", "q", 4, gpus=1, min_member=2)],
        binds={f"e-{i}": "n0" for i in range(4)},
    ),
    # Room for 3: the gang of 2 plus one extra; the fourth pod stays pending (the job is
    # scheduled, not pending, since it bound pods).
    Scenario(
        "elastic-partial-extras",
        [queue("q"), node("n0", gpus=3), job("e", "q", 4, gpus=1, min_member=2)],
        binds={"e-0": "n0", "e-1": "n0", "e-2": "n0"},
    ),
    # Room for 1 only: below the gang minimum of 2, nothing is placed.
    Scenario(
        "elastic-gang-minimum-still-required",
        [queue("q"), node("n0", gpus=1), job("e", "q", 4, gpus=1, min_member=2)],
        pending=["e"],
    ),
    # Extras interleave by fairness: qa and qb (OQW 1 each, fair share 2 of 4 GPUs) each
    # get 2 pods; without re-queueing per extra, the older qa would take all 4.
    Scenario(
        "elastic-extras-interleave-queues",
        [
            queue("qa", gpu_weight=1),
            queue("qb", gpu_weight=1),
            node("n0", gpus=4),
            job("a", "qa", 4, gpus=1, min_member=1),
            job("b", "qb", 4, gpus=1, min_member=1),
        ],
        binds={"a-0": "n0", "a-1": "n0", "b-0": "n0", "b-1": "n0"},
    ),
    # Job order rule 2: a job below its minimum (new, 0 of 1) goes before an older job
    # already at its minimum (old, 1 running of 1) for the one free GPU.
    Scenario(
        "elastic-below-min-first",
        [
            queue("q"),
            node("n0", gpus=2),
            job(
                "old",
                "q",
                3,
                gpus=1,
                min_member=1,
                states=["Running", "Pending", "Pending"],
                nodes=["n0", None, None],
            ),
            job("new", "q", gpus=1),
        ],
        binds={"new-0": "n0"},
        pending=["old"],
    ),
    # Job order rule 2: a job at its minimum (atmin, 1 of 1 running) goes before an older
    # job above it (above, 2 of 1 running) for the one free GPU.
    Scenario(
        "elastic-at-min-before-above-min",
        [
            queue("q"),
            node("n0", gpus=4),
            job(
                "above",
                "q",
                3,
                gpus=1,
                min_member=1,
                states=["Running", "Running", "Pending"],
                nodes=["n0", "n0", None],
            ),
            job(
                "atmin",
                "q",
                2,
                gpus=1,
                min_member=1,
                states=["Running", "Pending"],
                nodes=["n0", None],
            ),
        ],
        binds={"atmin-1": "n0"},
        pending=["above"],
    ),
    # Running pods above the minimum: min 2, 2 running, 2 pending extras with room for
    # both; one per pop until none is pending.
    Scenario(
        "elastic-running-gang-grows",
        [
            queue("q"),
            node("n0", gpus=4),
            job(
                "e",
                "q",
                4,
                gpus=1,
                min_member=2,
                states=["Running", "Running", "Pending", "Pending"],
                nodes=["n0", "n0", None, None],
            ),
        ],
        binds={"e-2": "n0", "e-3": "n0"},
    ),
    # Pod sets a and b (min 1 each, 2 pods each), room for 3: the two minimums first, then
    # one extra from the pod set with the lower active/min ratio, ties by name (a).
    Scenario(
        "elastic-subgroups-extra-by-podset-order",
        [
            queue("q"),
            node("n0", gpus=3),
            pod_group("sg", "q", sub_groups=[("a", 1), ("b", 1)]),
            pod("a-0", "sg", gpus=1, sub_group="a"),
            pod("a-1", "sg", gpus=1, sub_group="a"),
            pod("b-0", "sg", gpus=1, sub_group="b"),
            pod("b-1", "sg", gpus=1, sub_group="b"),
        ],
        binds={"a-0": "n0", "b-0": "n0", "a-1": "n0"},
    ),
    # Pod set order: b already has its minimum running, a is below; a's pods come first
    # (the one free GPU goes to a-0 although b has a pending extra).
    Scenario(
        "elastic-podset-below-min-first",
        [
            queue("q"),
            node("n0", gpus=2),
            pod_group("sg", "q", sub_groups=[("a", 1), ("b", 1)]),
            pod("b-0", "sg", gpus=1, sub_group="b", state="Running", node="n0"),
            pod("b-1", "sg", gpus=1, sub_group="b"),
            pod("a-0", "sg", gpus=1, sub_group="a"),
        ],
        binds={"a-0": "n0"},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_allocate_elastic(scenario: Scenario) -> None:
    check(scenario)
