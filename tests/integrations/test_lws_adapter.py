"""LeaderWorkerSet (groups, segments, LeaderReady); JobSet is in test_jobset_grouping.py.

Covers: LWS group naming, leader/workers,
the three segmentation examples of §4.3, LeaderExcluded divisibility, segment-size
validation, LeaderReady with the KAI bug fixed, and synthesized LWS pods.
"""

from __future__ import annotations

from typing import Any

import pytest
from adapter_builders import ctx, group, obj, pod, subgroups

from integrations import base
from integrations.grouping import group_workloads

LWS = "leaderworkerset.x-k8s.io/v1"


def lws(
    size: int, *, policy: dict[str, Any] | None = None, startup: str | None = None, **kwargs: Any
) -> dict[str, Any]:
    template: dict[str, Any] = {
        "size": size,
        "workerTemplate": {"spec": {"containers": [{"name": "c"}]}},
    }
    if policy:
        template["subGroupPolicy"] = policy
    spec: dict[str, Any] = {"replicas": 1, "leaderWorkerTemplate": template}
    if startup:
        spec["startupPolicy"] = startup
    return obj(LWS, "LeaderWorkerSet", "l", spec=spec, **kwargs)


def lws_pod(
    worker: int, owner: dict[str, Any], group_index: str = "0", **kwargs: Any
) -> dict[str, Any]:
    labels = {
        "leaderworkerset.sigs.k8s.io/group-index": group_index,
        "leaderworkerset.sigs.k8s.io/worker-index": str(worker),
    }
    return pod(f"l-{group_index}-{worker}", labels=labels, owner=owner, **kwargs)


def test_lws_group_name_and_leader_workers() -> None:
    the_lws = lws(4)
    spec = group(ctx(the_lws, lws_pod(2, the_lws, "3")))
    assert (spec.name, spec.min_member) == ("pg-l-uid-l-group-3", 4)
    assert subgroups(spec) == [("leader", 1, None), ("workers", 3, None)]
    assert spec.subgroup_of("l-3-2") == "workers"
    assert group(ctx(the_lws, lws_pod(0, the_lws))).subgroup_of("l-0-0") == "leader"
    assert group(ctx(the_lws, lws_pod(0, the_lws, "x"))).name == "pg-l-uid-l"
    single = lws(1)
    assert subgroups(group(ctx(single, lws_pod(0, single)))) == [("leader", 1, None)]


@pytest.mark.parametrize(
    ("size", "policy", "expected", "worker", "segment"),
    [
        (
            8,
            "LeaderWorker",
            [
                ("segment-0", 2, None),  # minSubGroup: leader and workers (KAI v0.17)
                ("leader", 1, "segment-0"),
                ("workers", 3, "segment-0"),
                ("segment-1", 4, None),
            ],
            4,
            "segment-1",
        ),
        (
            9,
            "LeaderWorker",
            [
                ("segment-0", 2, None),
                ("leader", 1, "segment-0"),
                ("workers", 4, "segment-0"),
                ("segment-1", 4, None),
            ],
            4,
            "workers",
        ),
        (
            9,
            "LeaderExcluded",
            [("leader", 1, None), ("segment-0", 4, None), ("segment-1", 4, None)],
            5,
            "segment-1",
        ),
    ],
)
def test_lws_segment_examples_from_the_reference(
    size: int, policy: str, expected: list[tuple[str, int, str | None]], worker: int, segment: str
) -> None:
    the_lws = lws(size, policy={"subGroupSize": 4, "subGroupPolicyType": policy})
    spec = group(ctx(the_lws, lws_pod(worker, the_lws)))
    assert subgroups(spec) == expected
    assert spec.subgroup_of(f"l-0-{worker}") == segment
    assert group(ctx(the_lws, lws_pod(0, the_lws))).subgroup_of("l-0-0") == "leader"


def test_lws_segment_size_sources_topology_and_errors() -> None:
    notes = {"kai.scheduler/segment-size": "2"}
    the_lws = lws(4, annotations={**notes, "kai.scheduler/topology": "dc"})
    the_lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"] = {
        "annotations": {"kai.scheduler/segment-topology-preferred-placement": "rack"}
    }
    spec = group(ctx(the_lws, lws_pod(3, the_lws)))
    assert [s.name for s in spec.subgroups] == ["segment-0", "leader", "workers", "segment-1"]
    assert spec.subgroups[0].topology == base.TopologyConstraint("dc", "", "rack")
    excluded = lws(8, policy={"subGroupSize": 4, "subGroupPolicyType": "LeaderExcluded"})
    with pytest.raises(base.GroupingError, match="divisible"):
        group(ctx(excluded, lws_pod(1, excluded)))
    for bad in (1, 5):
        too = lws(4, policy={"subGroupSize": bad})
        with pytest.raises(base.GroupingError, match="must satisfy") as caught:
            group(ctx(too, lws_pod(1, too)))
        # the field the user wrote, not a made-up "segment size"
        assert caught.value.field == "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize"
    annotated = lws(4, annotations={"kai.scheduler/segment-size": "9"})
    with pytest.raises(base.GroupingError) as caught:
        group(ctx(annotated, lws_pod(1, annotated)))
    assert caught.value.field == "metadata.annotations[kai.scheduler/segment-size]"
    with pytest.raises(base.GroupingError, match="startupPolicy"):
        group(ctx(lws(2, startup="Whenever"), lws_pod(0, lws(2))))


def test_lws_leader_ready() -> None:
    the_lws = lws(8, policy={"subGroupSize": 4}, startup="LeaderReady")
    leader = lws_pod(0, the_lws)
    spec = group(ctx(the_lws, leader))
    # the unscheduled leader alone: gang 1, no segmentation (KAI fails here)
    assert (spec.min_member, subgroups(spec)) == (1, [("leader", 1, None)])
    with pytest.raises(base.GroupingError, match="must satisfy"):
        group(ctx(the_lws, leader, reproduce_kai_bugs=True))
    scheduled = lws_pod(0, the_lws, spec={"nodeName": "n1", "containers": []})
    assert group(ctx(the_lws, scheduled)).min_member == 8
    sized = lws_pod(3, the_lws, annotations={"leaderworkerset.sigs.k8s.io/size": "12"})
    assert group(ctx(the_lws, sized)).min_member == 12


def test_lws_synthesis_owner_chain_through_the_leader_pod() -> None:
    the_lws = obj(
        LWS,
        "LeaderWorkerSet",
        "l",
        spec={
            "replicas": 2,
            "leaderWorkerTemplate": {"size": 3, "workerTemplate": {"spec": {"containers": []}}},
        },
    )
    result = group_workloads([the_lws])
    assert result.errors == ()
    assert [(a.pod, a.pod_group, a.sub_group) for a in result.assignments] == [
        ("ns/l-0", "pg-l-uid-l-group-0", "leader"),
        ("ns/l-0-1", "pg-l-uid-l-group-0", "workers"),
        ("ns/l-0-2", "pg-l-uid-l-group-0", "workers"),
        ("ns/l-1", "pg-l-uid-l-group-1", "leader"),
        ("ns/l-1-1", "pg-l-uid-l-group-1", "workers"),
        ("ns/l-1-2", "pg-l-uid-l-group-1", "workers"),
    ]
    worker = next(p for p in result.pods if p["metadata"]["name"] == "l-0-1")
    assert worker["metadata"]["ownerReferences"][0] | {} == {
        **worker["metadata"]["ownerReferences"][0]
    }
    assert worker["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
    assert worker["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/size"] == "3"
