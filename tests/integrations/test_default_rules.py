"""The common rules every adapter shares (docs/semantics.md §3, §4.1, §4.2).

Covers: queue resolution order (grouping object, pod, project with node pool,
default-queue; empty labels count), priority resolution (one candidate per owner,
existence checks, ConfigMap defaults by Kind.group then Kind, unchecked fallback),
preemptibility (owners bottom-up, pod, ConfigMap, invalid values skipped), topology
annotations, user label/annotation, top-owner metadata, node-pool copy, and the
exact PodGroup manifest.
"""

from __future__ import annotations

import pytest
import yaml
from adapter_builders import ctx, group, obj, pod

from integrations import base

SET = "apps/v1"


def sts(**kwargs: object) -> dict[str, object]:
    return obj(SET, "StatefulSet", "web", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("top_labels", "pod_labels", "expected"),
    [
        ({"kai.scheduler/queue": "top"}, {"kai.scheduler/queue": "mine"}, "top"),
        ({}, {"kai.scheduler/queue": "mine"}, "mine"),
        ({"kai.scheduler/queue": ""}, {"kai.scheduler/queue": "mine"}, ""),
        ({"project": "research"}, {"kai.scheduler/queue": "mine"}, "mine"),
        ({"project": "research"}, {}, "research"),
        ({"project": "research"}, {"kai.scheduler/node-pool": "a100"}, "research-a100"),
        ({}, {"project": "p2"}, "p2"),
        ({}, {}, "default-queue"),
    ],
)
def test_queue_resolution_order(
    top_labels: dict[str, str], pod_labels: dict[str, str], expected: str
) -> None:
    spec = group(ctx(sts(labels=top_labels), pod(labels=pod_labels)))
    assert spec.queue == expected


def test_queue_label_key_is_a_setting() -> None:
    top = sts(labels={"team.io/queue": "custom", "kai.scheduler/queue": "ignored"})
    spec = group(ctx(top, pod(), queue_label_key="team.io/queue"))
    assert spec.queue == "custom"


def test_priority_from_owner_label_when_it_exists() -> None:
    top = sts(labels={"priorityClassName": "build"})
    assert (
        group(ctx(top, pod(labels={"priorityClassName": "inference"}))).priority_class_name
        == "build"
    )


def test_priority_missing_class_falls_through_to_the_next_owner() -> None:
    rs = obj(SET, "ReplicaSet", "rs", labels={"priorityClassName": "nope"})
    top = obj(SET, "Deployment2", "d", labels={"priorityClassName": "build"})
    # one candidate per owner: rs's label (missing class) is not replaced by the pod's label
    spec = group(ctx(top, pod(labels={"priorityClassName": "inference"}), (rs, top)))
    assert spec.priority_class_name == "build"


def test_priority_pod_label_then_spec_then_fallback() -> None:
    assert (
        group(ctx(sts(), pod(labels={"priorityClassName": "build"}))).priority_class_name == "build"
    )
    with_spec = pod(spec={"priorityClassName": "inference", "containers": []})
    assert group(ctx(sts(), with_spec)).priority_class_name == "inference"
    missing = pod(labels={"priorityClassName": "gold"})
    assert group(ctx(sts(), missing)).priority_class_name == "train"  # unchecked fallback
    assert group(ctx(sts(), pod(), classes=())).priority_class_name == "train"


def test_priority_configmap_defaults_must_exist_and_match_kind_group_first() -> None:
    defaults = (
        base.DefaultPriority("StatefulSet", "", "build"),
        base.DefaultPriority("StatefulSet", "apps", "inference", "Non-Preemptible"),
    )
    spec = group(ctx(sts(), pod(), defaults=defaults))
    assert spec.priority_class_name == "inference"
    assert spec.preemptibility == "non-preemptible"
    spec = group(ctx(sts(), pod(), defaults=defaults, classes=("build",)))
    # the Kind.group entry is the match; its class is missing, so the fallback applies
    assert spec.priority_class_name == "train"
    unknown_group = (base.DefaultPriority("StatefulSet", "other.io", "build"),)
    assert group(ctx(sts(), pod(), defaults=unknown_group)).priority_class_name == "train"


def test_preemptibility_order_and_invalid_values() -> None:
    rs = obj(SET, "ReplicaSet", "rs", labels={"kai.scheduler/preemptibility": "maybe"})
    top = obj(SET, "Top", "t", labels={"kai.scheduler/preemptibility": "non-preemptible"})
    the_pod = pod(labels={"kai.scheduler/preemptibility": "preemptible"})
    assert group(ctx(top, the_pod, (rs, top))).preemptibility == "non-preemptible"
    assert group(ctx(sts(), the_pod)).preemptibility == "preemptible"
    assert group(ctx(sts(), pod())).preemptibility == ""


def test_an_empty_preemptibility_label_ends_the_search() -> None:
    """KAI's ParsePreemptibility takes "" as a valid value (priority decides): an owner's
    empty label wins over the pod's, where an invalid one is skipped."""
    top = obj(SET, "Top", "t", labels={"kai.scheduler/preemptibility": ""})
    the_pod = pod(labels={"kai.scheduler/preemptibility": "non-preemptible"})
    assert group(ctx(top, the_pod, (top,))).preemptibility == ""


def test_topology_user_and_top_owner_metadata() -> None:
    top = sts(
        labels={"a": "1"},
        annotations={
            "kai.scheduler/topology": "dc",
            "kai.scheduler/topology-required-placement": "rack",
            "kai.scheduler/topology-preferred-placement": "host",
        },
    )
    the_pod = pod(labels={"user": "alice"}, annotations={"user": "alice@x"})
    spec = group(ctx(top, the_pod))
    assert spec.topology == base.TopologyConstraint("dc", "rack", "host")
    assert spec.labels == {"a": "1", "user": "alice"}
    assert spec.annotations["user"] == "alice@x"
    meta = yaml.safe_load(spec.annotations["kai.scheduler/top-owner-metadata"])
    assert meta == {
        "name": "web",
        "uid": "uid-web",
        "group": "apps",
        "version": "v1",
        "kind": "StatefulSet",
    }
    top_user = sts(
        labels={"user": "bob"},
        annotations={"user": "bob@y", "kai.scheduler/top-owner-metadata": "x"},
    )
    spec = group(ctx(top_user, the_pod))
    assert spec.labels["user"] == "bob"
    assert spec.annotations["user"] == "bob@y"
    assert spec.annotations["kai.scheduler/top-owner-metadata"] == "x"


def test_node_pool_label_is_copied_from_the_pod_unless_set() -> None:
    spec = group(ctx(sts(), pod(labels={"kai.scheduler/node-pool": "a100"})))
    assert spec.labels["kai.scheduler/node-pool"] == "a100"
    top = sts(labels={"kai.scheduler/node-pool": "h100"})
    assert (
        group(ctx(top, pod(labels={"kai.scheduler/node-pool": "a100"}))).labels[
            "kai.scheduler/node-pool"
        ]
        == "h100"
    )


def test_manifest_is_the_kai_podgroup_body() -> None:
    spec = base.PodGroupSpec(
        name="pg-x-1",
        namespace="ns",
        owner=base.OwnerReference("apps/v1", "StatefulSet", "x", "1"),
        queue="q",
        priority_class_name="train",
        min_member=3,
        labels={"b": "2", "a": "1"},
        subgroups=(
            base.SubGroupSpec("worker", 0),
            base.SubGroupSpec("worker-0", 2, "worker", base.TopologyConstraint("t", "rack")),
        ),
    )
    assert spec.to_manifest() == {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {
            "name": "pg-x-1",
            "namespace": "ns",
            "labels": {"a": "1", "b": "2"},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "x", "uid": "1"}
            ],
        },
        "spec": {
            "minMember": 3,
            "queue": "q",
            "priorityClassName": "train",
            "topologyConstraint": {},
            "subGroups": [
                {"name": "worker"},
                {
                    "name": "worker-0",
                    "minMember": 2,
                    "parent": "worker",
                    "topologyConstraint": {"requiredTopologyLevel": "rack", "topology": "t"},
                },
            ],
        },
    }


def test_default_grouper_for_an_unknown_kind() -> None:
    top = obj("example.com/v1", "Widget", "w", labels={"kai.scheduler/queue": "q"})
    spec = group(ctx(top, pod()))
    assert (spec.name, spec.min_member, spec.queue, spec.priority_class_name) == (
        "pg-w-uid-w",
        1,
        "q",
        "train",
    )
    assert spec.owner == base.OwnerReference("example.com/v1", "Widget", "w", "uid-w")
    assert spec.subgroups == ()


def test_default_priorities_configmap_parsing() -> None:
    from integrations import resolution

    good = {
        "data": {
            "types": '[{"typeName": "Job", "group": "batch", "priorityName": "build",'
            ' "preemptibility": "preemptible"}, {"group": "x"}]'
        }
    }
    assert resolution.default_priorities(good) == (
        base.DefaultPriority("Job", "batch", "build", "preemptible"),
    )
    assert resolution.default_priorities(None) == ()
    assert resolution.default_priorities({"data": {"types": "not json"}}) == ()
    assert resolution.default_priorities({"data": {}}) == ()


def test_group_workloads_reads_the_configmap_named_in_settings() -> None:
    from integrations.grouping import group_workloads

    cm = obj("v1", "ConfigMap", "defaults", namespace="kai")
    cm["data"] = {"types": '[{"typeName": "StatefulSet", "priorityName": "build"}]'}
    workload = sts(spec={"replicas": 1, "template": {"spec": {"containers": []}}})
    plain = group_workloads([cm, workload])
    assert plain.pod_groups[0]["spec"]["priorityClassName"] == "train"
    settings = base.GroupingSettings(default_priorities_configmap="kai/defaults")
    configured = group_workloads([cm, workload], settings=settings)
    assert configured.pod_groups[0]["spec"]["priorityClassName"] == "build"
