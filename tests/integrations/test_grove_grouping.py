"""Grove PodCliqueSet (and PodGangSet) and Dynamo's DynamoGraphDeployment, grouped as KAI v0.17.

Covers, with expectations worked out by hand from KAI's Grove grouper: a PodGang as one
PodGroup (leaf per PodClique with ``minReplicas``, parent per topology group config with
``minSubGroup``, root ``minMember`` the sum, pack constraints with the PodGang's topology
name, priority from the PodGang), each pod in its PodClique's subgroup; a PodCliqueSet
given alone, synthesized as Grove's operator would (base and scaled PodGangs), with a
warning for the topology it cannot translate; a DynamoGraphDeployment skipped to its
PodCliqueSet (its labels, annotations and kind defaults filling gaps, its queue label
used — podmuster); the PodGang read through ``related_objects``; bad PodGangs named by
object and field.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from adapter_builders import Lookup, ctx, group, obj, pod

from integrations import base, registry
from integrations.grouping import group_workloads

Fixture = Callable[[str], list[dict[str, Any]]]
GANG_API = "scheduler.grove.io/v1alpha1"
PCS_API = "grove.io/v1alpha1"
BASE_GANG = "pg-svc-0-0d6a3c1e-0000-4000-8000-000000000010"
SCALED_GANG = "pg-svc-0-prefill-0-0d6a3c1e-0000-4000-8000-000000000011"


def test_podgangs_are_podgroups_with_a_subgroup_per_podclique(fixture: Fixture) -> None:
    result = group_workloads(fixture("grove-disaggregated.yaml"))
    assert result.errors == ()
    assert result.warnings == ()
    groups = {pg["metadata"]["name"]: pg for pg in result.pod_groups}
    assert set(groups) == {BASE_GANG, SCALED_GANG}
    zone = {"topology": "cluster-topo", "requiredTopologyLevel": "topology.example.com/zone"}
    rack = {"topology": "cluster-topo", "requiredTopologyLevel": "topology.example.com/rack"}
    spec = groups[BASE_GANG]["spec"]
    assert spec == {
        "minMember": 5,  # 1 frontend + 1 prefill leader + 2 prefill workers + 1 decode
        "queue": "inference-team",
        "priorityClassName": "inference",
        "preemptionDelay": "2m0s",
        "topologyConstraint": zone,
        "subGroups": [
            {"name": "svc-0-prefill-0", "minSubGroup": 2, "topologyConstraint": rack},
            {"name": "svc-0-frontend", "minMember": 1},
            {"name": "svc-0-prefill-0-pleader", "minMember": 1, "parent": "svc-0-prefill-0"},
            {"name": "svc-0-prefill-0-pworker", "minMember": 2, "parent": "svc-0-prefill-0"},
            {"name": "svc-0-decode", "minMember": 1},
        ],
    }
    owner = groups[BASE_GANG]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("PodGang", "svc-0")
    scaled = groups[SCALED_GANG]["spec"]
    assert scaled["minMember"] == 1
    assert scaled["subGroups"] == [
        {
            "name": "svc-0-prefill-1-pleader",
            "minMember": 1,
            "topologyConstraint": {
                "topology": "cluster-topo",
                "preferredTopologyLevel": "kubernetes.io/hostname",
            },
        }
    ]
    # the PodCliqueSet's annotation fills the gap on the scaled PodGang's PodGroup
    assert scaled["preemptionDelay"] == "2m0s"
    placed = {a.pod.split("/")[1]: (a.pod_group, a.sub_group) for a in result.assignments}
    assert placed["svc-0-prefill-0-pworker-pqrst"] == (BASE_GANG, "svc-0-prefill-0-pworker")
    assert placed["svc-0-decode-zabcd"] == (BASE_GANG, "svc-0-decode")
    assert placed["svc-0-prefill-1-pleader-efghi"] == (SCALED_GANG, "svc-0-prefill-1-pleader")
    assert len(placed) == 7


def test_podcliqueset_alone_is_synthesized_as_grove_creates_it(fixture: Fixture) -> None:
    [pcs] = [o for o in fixture("grove-disaggregated.yaml") if o["kind"] == "PodCliqueSet"]
    result = group_workloads([pcs])
    assert result.errors == ()
    [warning] = result.warnings
    assert warning.object == "PodCliqueSet serving/svc"
    assert "ClusterTopology" in warning.message
    by_gang = {pg["metadata"]["ownerReferences"][0]["name"]: pg["spec"] for pg in result.pod_groups}
    assert set(by_gang) == {"svc-0", "svc-0-prefill-0"}
    base_gang = by_gang["svc-0"]
    assert base_gang["minMember"] == 5
    assert [
        (s["name"], s.get("minMember"), s.get("minSubGroup")) for s in base_gang["subGroups"]
    ] == [
        ("svc-0-prefill-0", None, 2),
        ("svc-0-frontend", 1, None),
        ("svc-0-decode", 1, None),  # replicas 2, minAvailable 1
        ("svc-0-prefill-0-pleader", 1, None),
        ("svc-0-prefill-0-pworker", 2, None),  # minAvailable defaults to replicas
    ]
    assert base_gang["priorityClassName"] == "inference"  # template.priorityClassName
    assert base_gang["queue"] == "inference-team"  # the PodCliqueSet's label, mirrored
    scaled = by_gang["svc-0-prefill-0"]  # prefill replica 1, past minAvailable 1
    assert [(s["name"], s["minMember"]) for s in scaled["subGroups"]] == [
        ("svc-0-prefill-1-pleader", 1),
        ("svc-0-prefill-1-pworker", 2),
    ]
    assert len(result.pods) == 1 + 2 + 2 * (1 + 2)
    assert all(a.sub_group for a in result.assignments)


def gang(**spec: Any) -> dict[str, Any]:
    body = {
        "podgroups": [
            {"name": "w", "minReplicas": 2, "podReferences": [{"namespace": "ns", "name": "p"}]}
        ],
        **spec,
    }
    return obj(GANG_API, "PodGang", "g", spec=body)


def grove_ctx(
    the_gang: dict[str, Any] | None, top: dict[str, Any] | None = None, **kwargs: Any
) -> base.GroupingContext:
    pcs = top or obj(PCS_API, "PodCliqueSet", "svc")
    clique = obj(PCS_API, "PodClique", "svc-0-w", owner=pcs)
    the_pod = pod("p", labels={"grove.io/podgang": "g"}, owner=clique)
    lookup = Lookup(*([the_gang] if the_gang else []))
    return ctx(pcs, the_pod, (clique, pcs), lookup=lookup, **kwargs)


def test_dynamo_graph_deployment_is_skipped_to_its_podcliqueset() -> None:
    defaults = (
        base.DefaultPriority(
            "DynamoGraphDeployment", "nvidia.com", "build", preemptibility="non-preemptible"
        ),
    )
    dgd = obj(
        "nvidia.com/v1beta1",
        "DynamoGraphDeployment",
        "llm",
        labels={"kai.scheduler/queue": "dyn-q"},
        annotations={"kai.scheduler/preemption-delay": "45s"},
    )
    pcs = obj(PCS_API, "PodCliqueSet", "llm", owner=dgd)
    clique = obj(PCS_API, "PodClique", "llm-0-w", owner=pcs)
    the_pod = pod("p", labels={"grove.io/podgang": "g"}, owner=clique)
    the_gang = gang(priorityClassName="inference")
    context = ctx(dgd, the_pod, (clique, pcs, dgd), lookup=Lookup(the_gang), defaults=defaults)
    spec = group(context)
    assert spec.name == "pg-g-uid-g"
    assert spec.queue == "dyn-q"  # KAI: default-queue, the DGD's label reaching no PodGang
    assert spec.priority_class_name == "build"  # the DGD kind's default, as a label
    assert spec.preemptibility == "non-preemptible"
    assert spec.preemption_delay == "45s"
    assert spec.labels["kai.scheduler/queue"] == "dyn-q"
    kai = group(dataclass_replace_settings(context, reproduce_kai_bugs=True))
    assert kai.queue == "default-queue"
    dgd["metadata"]["labels"]["priorityClassName"] = "train"
    assert group(context).priority_class_name == "train"  # the user's label beats the default
    kai = group(dataclass_replace_settings(context, reproduce_kai_bugs=True))
    assert kai.priority_class_name == "build"  # KAI: the kind's default beats it
    needs = registry.build_registry().lookup(base.GroupVersionKind.of(dgd))
    assert isinstance(needs, base.NeedsRelatedObjects)
    assert needs.related_objects(context) == (base.ObjectQuery(GANG_API, "PodGang", "ns", "g"),)


def dataclass_replace_settings(
    context: base.GroupingContext, **settings: Any
) -> base.GroupingContext:
    return dataclasses.replace(context, settings=base.GroupingSettings(**settings))


@pytest.mark.parametrize(
    "gvk",
    [
        (PCS_API, "PodCliqueSet"),
        (PCS_API, "PodGangSet"),
        ("nvidia.com/v1alpha1", "DynamoGraphDeployment"),
        ("nvidia.com/v1beta1", "DynamoGraphDeployment"),
    ],
)
def test_grove_kinds_are_registered(gvk: tuple[str, str]) -> None:
    top = obj(gvk[0], gvk[1], "svc")
    assert registry.build_registry().lookup(base.GroupVersionKind.of(top)).name != "default"


def _mutated(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    the_gang = copy.deepcopy(gang())
    change(the_gang)
    return the_gang


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(the_gang: dict[str, Any]) -> None:
        target: Any = the_gang
        keys = path.split(".")
        for key in keys[:-1]:
            target = target[int(key)] if key.isdigit() else target.setdefault(key, {})
        target[keys[-1]] = value

    return change


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        (_set("spec.podgroups.0.minReplicas", 0), "spec.podgroups[0].minReplicas", ">= 1"),
        (_set("spec.podgroups.0.minReplicas", None), "spec.podgroups[0].minReplicas", "required"),
        (_set("spec.podgroups.0.name", ""), "spec.podgroups[0].name", "required"),
        (
            _set("spec.podgroups.0.podReferences", None),
            "spec.podgroups[0].podReferences",
            "required",
        ),
        (
            _set("spec.podgroups.0.podReferences", [{"namespace": "other", "name": "p"}]),
            "spec.podgroups[0].podReferences[0].namespace",
            "its own namespace",
        ),
        (
            _set("spec.topologyConstraint", {"packConstraint": {"required": "rack"}}),
            "spec.topologyConstraint.packConstraint",
            "grove.io/topology-name",
        ),
        (
            _set("spec.topologyConstraintGroupConfigs", [{"podGroupNames": ["w"]}]),
            "spec.topologyConstraintGroupConfigs[0].name",
            "required",
        ),
        (
            _set("spec.topologyConstraintGroupConfigs", [{"name": "x", "podGroupNames": "w"}]),
            "spec.topologyConstraintGroupConfigs[0].podGroupNames",
            "list of names",
        ),
    ],
)
def test_bad_podgangs_name_object_and_field(
    change: Callable[[dict[str, Any]], None], field: str, problem: str
) -> None:
    with pytest.raises(base.GroupingError) as caught:
        group(grove_ctx(_mutated(change)))
    assert (caught.value.obj, caught.value.field) == ("PodGang ns/g", field)
    assert problem in caught.value.problem


def test_missing_podgang_or_label_and_bad_preemptibility() -> None:
    with pytest.raises(base.GroupingError) as caught:
        group(grove_ctx(None))
    assert caught.value.field == "metadata.labels[grove.io/podgang]"
    assert "PodGang ns/g, which does not exist (yet)" in caught.value.problem
    pcs = obj(PCS_API, "PodCliqueSet", "svc", labels={"kai.scheduler/preemptibility": "maybe"})
    with pytest.raises(base.GroupingError) as caught:
        group(grove_ctx(gang(), pcs))
    assert caught.value.field == "metadata.labels[kai.scheduler/preemptibility]"
    unlabelled = pod("q", owner=pcs)
    with pytest.raises(base.GroupingError, match=r"grove\.io/podgang\]: is required"):
        group(ctx(pcs, unlabelled))
