"""How the scheduler reads minMember, minSubGroup and the v0.17 durations of a PodGroup.

A PodGroup that breaks KAI's minMember/minSubGroup rules is reported with the
field named and left unscheduled; every other PodGroup is still served.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.podgroups import SubGroupNode
from scheduler.cache.reading import read_pod_group
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import run_cycle
from tests.kits.worlds import job, node, pod, pod_group, queue, sourced


def group(subgroups: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    body = pod_group("g", "q", min_member=None, sub_groups=subgroups)
    body["spec"].update(spec)
    return body


BROKEN = [
    pytest.param(
        group([{"name": "a", "minMember": 1, "minSubGroup": 1}]),
        "spec.subGroups[0].minSubGroup",
        id="both-on-subgroup",
    ),
    pytest.param(
        group([{"name": "a", "minSubGroup": 1, "minMember": None}]),
        "spec.subGroups[0].minSubGroup",
        id="min-sub-group-on-leaf",
    ),
    pytest.param(
        group([{"name": "a", "minMember": 1}], minSubGroup=2),
        "spec.minSubGroup",
        id="more-than-children",
    ),
    pytest.param(
        group([{"name": "a", "minMember": 1}], minSubGroup=0), "spec.minSubGroup", id="zero"
    ),
    pytest.param(group([], minMember=1, minSubGroup=1), "spec.minSubGroup", id="both-on-spec"),
    pytest.param(
        group([{"name": "a", "minMember": 1}], preemptionDelay="soon"),
        "spec.preemptionDelay",
        id="bad-duration",
    ),
]


@pytest.mark.parametrize(("broken", "field"), BROKEN)
def test_a_broken_podgroup_is_reported_and_the_others_run(
    broken: dict[str, Any], field: str
) -> None:
    for sub in broken["spec"].get("subGroups", ()):
        for key in [k for k, v in sub.items() if v is None]:
            del sub[key]
    objects = [
        queue("q"),
        node("n0", gpus=2),
        broken,
        pod("g-0", "g", gpus=1, sub_group="a"),
        *job("ok", "q", 1, gpus=1),
    ]
    result = build_snapshot(sourced(objects), strict=False)
    assert [(e.obj, e.field) for e in result.errors] == [("PodGroup default/g", field)]
    cycle = run_cycle(result.snapshot, SchedulerConfig(actions=("allocate",)))
    assert [b.pod for b in cycle.binds] == ["default/ok-0"]


def test_what_kai_s_scheduler_reads_anyway_is_read_the_same_way() -> None:
    """The webhook refuses both on create; objects written before (or by KAI's own
    podgrouper, which sets minMember on every subgroup) are still scheduled."""
    record = read_pod_group(
        group(
            [
                {"name": "x", "minMember": 5},  # ignored on a mid-level subgroup
                {"name": "x1", "parent": "x", "minMember": 1},
                {"name": "x2", "parent": "x"},  # a leaf without minMember needs 0 pods
            ]
        )
    )
    assert record.pod_sets == (("x1", 1), ("x2", 0))
    assert record.shape == SubGroupNode("", None, (SubGroupNode("x", None, ("x1", "x2")),))


def test_the_tree_durations_and_elastic_leaves_are_read() -> None:
    record = read_pod_group(
        group(
            [
                # an upper-case name: KAI v0.17's CRD refuses it on create, but a PodGroup
                # stored under podmuster's earlier CRD holds one, and it is still read
                {"name": "Y", "minSubGroup": 1},
                {"name": "a", "minMember": 0},
                {"name": "y1", "parent": "y", "minMember": 2},
                {"name": "y2", "parent": "Y", "minMember": 2},
            ],
            minSubGroup=2,
            preemptionDelay="1m30s",
            stalenessGracePeriod="-1s",
        )
    )
    assert record.pod_sets == (("a", 0), ("y1", 2), ("y2", 2))
    assert record.shape == SubGroupNode("", 2, (SubGroupNode("y", 1, ("y1", "y2")), "a"))
    assert (record.preemption_delay, record.staleness_grace) == (90.0, -1.0)


def test_a_podgroup_without_subgroups_keeps_kai_s_minimum_of_one() -> None:
    record = read_pod_group(pod_group("g", "q", min_member=0))
    assert record.pod_sets == (("default", 1),)
    assert record.shape is None
