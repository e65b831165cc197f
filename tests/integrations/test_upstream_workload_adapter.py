"""Pods naming a Kubernetes PodGroup (``spec.schedulingGroup``) grouped by it.

The fixtures are our own manifests of the 1.37 ``scheduling.k8s.io`` kinds: a gang
Workload and a two-level CompositePodGroup tree.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from crds import podgroup as pg_api
from crds import upstream_workload as up
from crds.errors import describe_object
from integrations import base, upstream_workload
from integrations.grouping import group_workloads
from podmuster.cli import main

Loader = Callable[[str], list[dict[str, Any]]]
GANG_PG = "pg-trainer-workers-6f0c6a52-0000-4000-8000-000000000002"


def _find(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    for obj in objs:
        for item in obj.get("items", [obj]):
            if item["kind"] == kind and item["metadata"]["name"] == name:
                found: dict[str, Any] = item
                return found
    raise AssertionError(f"{kind} {name} not in fixture")


def test_gang_becomes_one_kai_podgroup_with_min_member(fixture: Loader) -> None:
    result = group_workloads(fixture("upstream-gang.yaml"))
    assert not result.errors
    assert not result.warnings
    (manifest,) = result.pod_groups
    model = pg_api.PodGroup.model_validate(manifest)
    assert model.metadata.name == GANG_PG
    assert model.spec.min_member == 3
    assert model.spec.queue == "research"  # label on the Workload
    assert model.spec.priority_class_name == "build"  # the upstream PodGroup's class
    (owner,) = model.metadata.owner_references or []
    assert (owner.api_version, owner.kind, owner.name) == (
        "scheduling.k8s.io/v1beta1",
        "PodGroup",
        "trainer-workers",
    )
    assert {a.pod_group for a in result.assignments} == {GANG_PG}


def test_queue_label_on_the_podgroup_wins_over_the_workload(fixture: Loader) -> None:
    objs = fixture("upstream-gang.yaml")
    _find(objs, "PodGroup", "trainer-workers")["metadata"]["labels"] = {
        "kai.scheduler/queue": "urgent"
    }
    (manifest,) = group_workloads(objs).pod_groups
    assert manifest["spec"]["queue"] == "urgent"


def test_basic_policy_is_min_member_zero(fixture: Loader) -> None:
    objs = fixture("upstream-gang.yaml")
    _find(objs, "PodGroup", "trainer-workers")["spec"]["schedulingPolicy"] = {"basic": {}}
    (manifest,) = group_workloads(objs).pod_groups
    assert manifest["spec"]["minMember"] == 0


def test_pod_group_wins_over_the_pods_owner(fixture: Loader) -> None:
    """A Job's pods that name an upstream PodGroup are grouped by it, not by the Job."""
    objs = fixture("upstream-gang.yaml")
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "trainer", "namespace": "team-a", "uid": "job-uid"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
    }
    for pod in objs[-1]["items"]:
        pod["metadata"]["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "trainer", "uid": "job-uid"}
        ]
    result = group_workloads([*objs, job])
    assert [m["metadata"]["name"] for m in result.pod_groups] == [GANG_PG]
    assert result.pod_groups[0]["spec"]["queue"] == "research"  # the Workload's label first
    del _find(objs, "Workload", "trainer")["metadata"]["labels"]
    job["metadata"]["labels"] = {"kai.scheduler/queue": "jobs"}
    (manifest,) = group_workloads([*objs, job]).pod_groups
    assert manifest["spec"]["queue"] == "jobs"  # then the Job that owns the pods


def test_composite_tree_becomes_subgroups(fixture: Loader) -> None:
    result = group_workloads(fixture("upstream-composite.yaml"))
    assert not result.errors
    assert not result.warnings
    (manifest,) = result.pod_groups
    model = pg_api.PodGroup.model_validate(manifest)
    assert model.spec.min_sub_group == 2  # root gang minGroupCount
    assert model.spec.min_member is None
    assert model.spec.queue == "inference-queue"
    assert model.spec.priority_class_name == "inference"
    assert model.spec.topology_constraint == pg_api.TopologyConstraint(
        topology="datacenter", required_topology_level="example.com/block"
    )
    subs = {s.name: s for s in model.spec.sub_groups or ()}
    assert subs["serve-decode"].min_sub_group == 1  # basic composite: any one child
    assert subs["serve-decode"].parent is None
    assert subs["serve-prefill"].min_member == 2
    assert subs["serve-prefill"].topology_constraint is not None
    assert subs["serve-prefill"].topology_constraint.required_topology_level == "example.com/rack"
    assert (subs["serve-decode-0"].parent, subs["serve-decode-0"].min_member) == (
        "serve-decode",
        1,
    )
    assert subs["serve-decode-1"].min_member == 0  # basic leaf
    by_pod = {a.pod: a.sub_group for a in result.assignments}
    assert by_pod == {
        "infer/prefill-0": "serve-prefill",
        "infer/prefill-1": "serve-prefill",
        "infer/decode-0": "serve-decode-0",
        "infer/decode-1": "serve-decode-1",
    }
    assert not pg_api.subgroup_problems(model.spec)


def _error(objs: list[dict[str, Any]]) -> str:
    result = group_workloads(objs)
    assert not result.pod_groups
    assert result.errors, "expected a grouping error"
    return result.errors[0].message


def test_missing_podgroup_names_the_pod_and_field(fixture: Loader) -> None:
    objs = [o for o in fixture("upstream-gang.yaml") if o["kind"] != "PodGroup"]
    message = _error(objs)
    assert "Pod team-a/worker-0" in message
    assert "spec.schedulingGroup.podGroupName" in message
    assert "podgroups.scheduling.k8s.io team-a/trainer-workers not found" in message


def test_unknown_template_names_the_podgroup_and_field(fixture: Loader) -> None:
    objs = fixture("upstream-gang.yaml")
    _find(objs, "PodGroup", "trainer-workers")["spec"]["workloadRef"]["templateName"] = "nope"
    message = _error(objs)
    assert "podgroups.scheduling.k8s.io team-a/trainer-workers" in message
    assert "spec.workloadRef.templateName" in message
    assert "'nope'" in message


def test_missing_workload_names_the_field(fixture: Loader) -> None:
    objs = [o for o in fixture("upstream-gang.yaml") if o["kind"] != "Workload"]
    message = _error(objs)
    assert "spec.workloadRef.workloadName" in message
    assert "workloads.scheduling.k8s.io team-a/trainer not found" in message


def test_two_policies_is_a_schema_error(fixture: Loader) -> None:
    objs = fixture("upstream-gang.yaml")
    policy = _find(objs, "PodGroup", "trainer-workers")["spec"]["schedulingPolicy"]
    policy["basic"] = {}
    message = _error(objs)
    assert "podgroups.scheduling.k8s.io team-a/trainer-workers" in message
    assert "spec.schedulingPolicy" in message
    assert "exactly one of basic, gang" in message


def test_min_count_above_the_pods_is_a_warning_on_the_field(fixture: Loader) -> None:
    objs = fixture("upstream-gang.yaml")
    objs[-1]["items"].pop()
    result = group_workloads(objs)
    assert result.pod_groups  # still grouped: live, more pods may come
    (warning,) = result.warnings
    assert warning.object == "podgroups.scheduling.k8s.io team-a/trainer-workers"
    assert "spec.schedulingPolicy.gang.minCount" in warning.message
    assert "3 exceeds the 2 pods" in warning.message


def test_missing_parent_composite_names_the_child(fixture: Loader) -> None:
    objs = [
        o
        for o in fixture("upstream-composite.yaml")
        if not (o["kind"] == "CompositePodGroup" and o["metadata"]["name"] == "serve-decode")
    ]
    messages = [e.message for e in group_workloads(objs).errors]
    assert any(
        "podgroups.scheduling.k8s.io infer/serve-decode-0" in m
        and "spec.parentCompositePodGroupName" in m
        and "compositepodgroups.scheduling.k8s.io infer/serve-decode not found" in m
        for m in messages
    ), messages


def test_topology_key_without_a_topology_is_an_error(fixture: Loader) -> None:
    objs = [o for o in fixture("upstream-composite.yaml") if o["kind"] != "Topology"]
    message = group_workloads(objs).errors[0].message
    assert "spec.schedulingConstraints.topology[0].key" in message
    assert "'example.com/block'" in message


def test_topology_annotation_names_the_topology(fixture: Loader) -> None:
    objs = [o for o in fixture("upstream-composite.yaml") if o["kind"] != "Topology"]
    for name in ("serve-server", "serve-prefill"):
        kind = "CompositePodGroup" if name == "serve-server" else "PodGroup"
        _find(objs, kind, name)["metadata"]["annotations"] = {"kai.scheduler/topology": "dc"}
    (manifest,) = group_workloads(objs).pod_groups
    assert manifest["spec"]["topologyConstraint"]["topology"] == "dc"


def test_long_names_become_label_safe_subgroup_names() -> None:
    long = "x" * 80
    name = upstream_workload.subgroup_name(long)
    assert len(name) <= 63
    assert name != upstream_workload.subgroup_name("y" * 80)
    assert upstream_workload.subgroup_name("short") == "short"


def test_related_objects_walk_up_one_parent_per_round(fixture: Loader) -> None:
    """The live podgrouper reads only what the adapter names, one parent per round."""
    objs = fixture("upstream-composite.yaml")
    pod = _find(objs, "Pod", "decode-0")
    index: dict[tuple[str, str, str], dict[str, Any]] = {}
    for obj in objs:
        for item in obj.get("items", [obj]):
            index[
                (item["kind"], item["metadata"].get("namespace", ""), item["metadata"]["name"])
            ] = item

    class Partial(base.EmptyLookup):
        def __init__(self, names: set[str]) -> None:
            self.names = names

        def get(self, api_version: str, kind: str, namespace: str, name: str) -> Any:
            return index.get((kind, namespace, name)) if name in self.names else None

    grouper = upstream_workload.UpstreamWorkloadGrouper()
    ctx = base.GroupingContext(top_owner=pod, pod=pod)
    first = grouper.related_objects(ctx)
    assert [q.name for q in first] == ["serve-decode-0"]
    ctx = dataclasses.replace(ctx, lookup=Partial({"serve-decode-0"}))
    second = {(q.kind, q.name) for q in grouper.related_objects(ctx)}
    assert ("CompositePodGroup", "serve-decode") in second
    assert ("Workload", "serve") in second
    ctx = dataclasses.replace(
        ctx, lookup=Partial({"serve-decode-0", "serve-decode", "serve-server"})
    )
    third = {(q.kind, q.name) for q in grouper.related_objects(ctx)}
    assert {("PodGroup", ""), ("CompositePodGroup", ""), ("Topology", "")} <= third


def test_model_round_trips_the_fixture(fixture: Loader) -> None:
    objs = fixture("upstream-composite.yaml")
    raw = copy.deepcopy(_find(objs, "CompositePodGroup", "serve-server"))
    assert up.CompositePodGroup.model_validate(raw).to_manifest() == raw
    with pytest.raises(ValueError, match="exactly one of single, all"):
        up.DisruptionMode.model_validate({"single": {}, "all": {}})


def test_input_errors_name_the_upstream_podgroup_with_its_group() -> None:
    upstream = {
        "apiVersion": up.V1BETA1,
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "n"},
    }
    kai = {**upstream, "apiVersion": pg_api.API_VERSION}
    assert describe_object(upstream) == "podgroups.scheduling.k8s.io n/g"
    assert describe_object(kai) == "PodGroup n/g"


def test_a_broken_group_of_another_tree_does_not_stop_this_one(fixture: Loader) -> None:
    broken = {
        "apiVersion": up.V1BETA1,
        "kind": "PodGroup",
        "metadata": {"name": "elsewhere", "namespace": "infer"},
        "spec": {"parentCompositePodGroupName": "other-root", "schedulingPolicy": {}},
    }
    result = group_workloads([*fixture("upstream-composite.yaml"), broken])
    assert not result.errors
    assert len(result.pod_groups) == 1


def test_group_command_warns_with_the_file_and_the_upstream_resource(
    fixture: Loader, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objs = fixture("upstream-gang.yaml")
    objs[-1]["items"].pop()
    path = tmp_path / "gang.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    assert main(["group", str(path)]) == 0
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        f"podmuster: warning: {path}: podgroups.scheduling.k8s.io team-a/trainer-workers:"
    )
