"""JobSet: one PodGroup with a parent per replicatedJob and a leaf per Job replica (KAI v0.16).

Covers, with expectations worked out by hand from KAI's rules: the two-level tree of a
real-shaped JobSet (fixture), every synthesized pod in its ``<rj>-replica-<i>`` leaf,
leaf topology from the replicatedJob template, preemption delay and staleness copied
from the JobSet; the root ``minSubGroup`` for AnyOrder (default), InOrder, the
JobSet's ``batch-min-member`` (capped) and ``dependsOn`` (podmuster) vs KAI's; the leaf
``minMember`` from parallelism, completions (podmuster), the template's override, and an
explicit 0; in-flight JobSets keeping their flat PodGroups (KAI's legacy grouper, and
podmuster's per-replicatedJob ones); bad inputs named by object and field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from adapter_builders import Lookup, ctx, group, obj, pod

from integrations import base, registry
from integrations.grouping import group_workloads

Fixture = Callable[[str], list[dict[str, Any]]]
JS = "jobset.x-k8s.io/v1alpha2"
RJ_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
MIN = "kai.scheduler/batch-min-member"


def only_pod_group(result: Any) -> dict[str, Any]:
    assert result.errors == ()
    assert len(result.pod_groups) == 1
    return dict(result.pod_groups[0])


def test_two_level_tree_of_a_jobset_and_its_pods(fixture: Fixture) -> None:
    result = group_workloads(fixture("jobset-two-level.yaml"))
    pg = only_pod_group(result)
    rack = {
        "topology": "datacenter",
        "requiredTopologyLevel": "topology.example.com/rack",
    }
    assert pg["metadata"]["name"].startswith("pg-llm-train-")
    assert pg["metadata"]["name"].count("-") > 3  # pg-<js>-<uid>, no replicatedJob suffix
    spec = pg["spec"]
    assert "minMember" not in spec
    assert spec["minSubGroup"] == 2  # AnyOrder: both replicatedJobs
    assert spec["queue"] == "team-a"
    assert spec["preemptionDelay"] == "5m0s"
    assert spec["stalenessGracePeriod"] == "-1s"
    assert spec["subGroups"] == [
        {"name": "coordinator", "minSubGroup": 1},
        {"name": "coordinator-replica-0", "minMember": 1, "parent": "coordinator"},
        {"name": "workers", "minSubGroup": 2},
        {
            "name": "workers-replica-0",
            "minMember": 4,
            "parent": "workers",
            "topologyConstraint": rack,
        },
        {
            "name": "workers-replica-1",
            "minMember": 4,
            "parent": "workers",
            "topologyConstraint": rack,
        },
    ]
    leaves = sorted(a.sub_group or "" for a in result.assignments)
    assert (
        leaves == ["coordinator-replica-0"] + ["workers-replica-0"] * 4 + ["workers-replica-1"] * 4
    )
    assert {a.pod_group for a in result.assignments} == {pg["metadata"]["name"]}


def test_depends_on_counts_only_jobs_created_at_once(fixture: Fixture) -> None:
    """prep and eval start at once; trainers wait for prep: minSubGroup 2, KAI's 3."""
    objs = fixture("jobset-depends-on.yaml")
    spec = only_pod_group(group_workloads(objs))["spec"]
    assert spec["minSubGroup"] == 2
    trainers = [s for s in spec["subGroups"] if s.get("parent") == "trainers"]
    assert [(s["name"], s["minMember"]) for s in trainers] == [
        ("trainers-replica-0", 2),  # the template's batch-min-member, not parallelism 3
        ("trainers-replica-1", 2),
        ("trainers-replica-2", 2),
    ]
    assert {"name": "trainers", "minSubGroup": 3} in spec["subGroups"]
    kai = only_pod_group(
        group_workloads(objs, settings=base.GroupingSettings(reproduce_kai_bugs=True))
    )
    assert kai["spec"]["minSubGroup"] == 3


def rj(name: str, replicas: Any = None, **job_spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "template": {"spec": {"template": {}, **job_spec}}}
    if replicas is not None:
        body["replicas"] = replicas
    return body


def jobset(*jobs: dict[str, Any], order: str | None = None, **kwargs: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicatedJobs": list(jobs)}
    if order:
        spec["startupPolicy"] = {"startupPolicyOrder": order}
    return obj(JS, "JobSet", "js", spec=spec, **kwargs)


def js_pod(owner: dict[str, Any], job: str = "a", index: str = "0") -> dict[str, Any]:
    return pod(f"js-{job}-{index}-x", labels={RJ_LABEL: job, INDEX_LABEL: index}, owner=owner)


@pytest.mark.parametrize(
    ("order", "annotation", "expected"),
    [
        (None, None, 3),
        ("AnyOrder", None, 3),
        ("InOrder", None, 1),
        ("InOrder", "2", 2),  # the annotation wins over the startup policy
        (None, "9", 3),  # capped at the number of replicatedJobs
        (None, "1", 1),
    ],
)
def test_root_min_sub_group(order: str | None, annotation: str | None, expected: int) -> None:
    annotations = {MIN: annotation} if annotation else None
    js = jobset(rj("a"), rj("b"), rj("c"), order=order, annotations=annotations)
    spec = group(ctx(js, js_pod(js)))
    assert (spec.name, spec.min_sub_group) == ("pg-js-uid-js", expected)
    assert "minMember" not in spec.to_manifest()["spec"]


def test_leaf_min_member_from_parallelism_and_completions() -> None:
    js = jobset(rj("a", 2, parallelism=4, completions=2), rj("b", parallelism=0), rj("c"))
    spec = group(ctx(js, js_pod(js, "a", "1")))
    leaves = {s.name: s.min_member for s in spec.subgroups if s.parent}
    assert leaves == {"a-replica-0": 2, "a-replica-1": 2, "b-replica-0": 0, "c-replica-0": 1}
    assert spec.subgroup_of("js-a-1-x") == "a-replica-1"
    written = spec.to_manifest()["spec"]["subGroups"]
    assert {"name": "b-replica-0", "minMember": 0, "parent": "b"} in written
    kai = group(ctx(js, js_pod(js, "a", "1"), reproduce_kai_bugs=True))
    assert kai.subgroups[1].min_member == 4  # KAI: parallelism, which 2 completions never reach


def test_zero_replicas_is_a_parent_without_leaves() -> None:
    js = jobset(rj("a"), rj("spare", 0))
    spec = group(ctx(js, js_pod(js)))
    assert [(s.name, s.min_sub_group) for s in spec.subgroups if not s.parent] == [
        ("a", 1),
        ("spare", 0),
    ]


def _template_min(value: str) -> dict[str, Any]:
    job = rj("b")
    job["template"]["metadata"] = {"annotations": {MIN: value}}
    return job


@pytest.mark.parametrize(
    ("js", "the_pod", "field", "problem"),
    [
        (
            jobset(rj("a"), annotations={MIN: "all"}),
            None,
            f"metadata.annotations[{MIN}]",
            "expected an integer",
        ),
        (jobset(rj("a"), annotations={MIN: "0"}), None, f"metadata.annotations[{MIN}]", ">= 1"),
        (
            jobset(rj("a"), _template_min("-2")),
            None,
            f"spec.replicatedJobs[1].template.metadata.annotations[{MIN}]",
            ">= 1",
        ),
        (jobset({"template": {}}), None, "spec.replicatedJobs[0].name", "is required"),
        (jobset(rj("a", -1)), None, "spec.replicatedJobs[0].replicas", ">= 0"),
        (
            jobset(rj("a", parallelism="4")),
            None,
            "spec.replicatedJobs[0].template.spec.parallelism",
            "expected an integer",
        ),
        (jobset(), None, "spec.replicatedJobs", "is empty"),
        (jobset(rj("a")), {RJ_LABEL: "a"}, f"metadata.labels[{INDEX_LABEL}]", "is required"),
        (jobset(rj("a")), {INDEX_LABEL: "0"}, f"metadata.labels[{RJ_LABEL}]", "is required"),
        (
            jobset(rj("a", 2)),
            {RJ_LABEL: "a", INDEX_LABEL: "2"},
            f"metadata.labels[{INDEX_LABEL}]",
            "'a-replica-2'",
        ),
    ],
)
def test_bad_jobsets_name_object_and_field(
    js: dict[str, Any], the_pod: dict[str, str] | None, field: str, problem: str
) -> None:
    subject = js_pod(js) if the_pod is None else pod("p", labels=the_pod, owner=js)
    with pytest.raises(base.GroupingError) as caught:
        group(ctx(js, subject))
    assert caught.value.field == field
    assert problem in caught.value.problem
    assert caught.value.obj in {"JobSet ns/js", "Pod ns/p"}


def podgroup(name: str, *, with_subgroups: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": 4}
    if with_subgroups:
        spec = {"minSubGroup": 1, "subGroups": [{"name": "a", "minSubGroup": 1}]}
    return obj("scheduling.run.ai/v2alpha2", "PodGroup", name, spec=spec)


def test_in_flight_jobsets_keep_their_flat_podgroups() -> None:
    """Upgrades: a PodGroup of the JobSet without subgroups keeps the set flat (KAI's
    legacy grouper); podmuster also keeps a pod in its replicatedJob's own PodGroup."""
    js = jobset(rj("a", 2, parallelism=2), rj("b"))
    flat = podgroup("pg-js-uid-js")
    spec = group(ctx(js, js_pod(js, "b"), lookup=Lookup(flat)))
    assert (spec.name, spec.min_member, spec.min_sub_group, spec.subgroups) == (
        "pg-js-uid-js",
        1,
        None,
        (),
    )
    js["metadata"]["annotations"] = {MIN: "3"}
    assert group(ctx(js, js_pod(js, "b"), lookup=Lookup(flat))).min_member == 3
    per_job = podgroup("pg-js-uid-js-a")
    assert group(ctx(js, js_pod(js, "a"), lookup=Lookup(per_job))).name == "pg-js-uid-js-a"
    assert group(ctx(js, js_pod(js, "b"), lookup=Lookup(per_job))).name == "pg-js-uid-js"
    kai = group(ctx(js, js_pod(js, "a"), lookup=Lookup(per_job), reproduce_kai_bugs=True))
    assert kai.name == "pg-js-uid-js"  # KAI: one flat group unless InOrder
    in_order = jobset(rj("a"), rj("b"), order="InOrder")
    assert group(ctx(in_order, js_pod(in_order, "b"), lookup=Lookup(per_job))).name == (
        "pg-js-uid-js-b"
    )
    current = podgroup("pg-js-uid-js", with_subgroups=True)
    assert group(ctx(js, js_pod(js, "b"), lookup=Lookup(current))).min_sub_group == 2


def test_jobset_reads_the_podgroups_it_may_still_have() -> None:
    js = jobset(rj("a"), rj("b"))
    grouper = registry.build_registry().lookup(base.GroupVersionKind.of(js))
    assert isinstance(grouper, base.NeedsRelatedObjects)
    names = [q.name for q in grouper.related_objects(ctx(js, js_pod(js)))]
    assert names == ["pg-js-uid-js", "pg-js-uid-js-a", "pg-js-uid-js-b"]
