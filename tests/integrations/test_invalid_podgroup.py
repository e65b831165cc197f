"""A PodGroup the typed model refuses is an error line naming it and the field.

Every built-in adapter checks what it reads, but an adapter (a user's, or a value no
check foresaw) can still describe a PodGroup the API would refuse. Grouping then
reports that workload's PodGroup and field and goes on with the others; it never ends
in a pydantic traceback.
"""

from __future__ import annotations

import dataclasses

import pytest

from integrations import base, default, registry
from integrations.grouping import group_workloads

WIDGET = base.GroupVersionKind("example.com", "v1", "Widget")


class _Breaking:
    """The default grouping with one value changed, as a careless adapter might."""

    name = "breaking"

    def __init__(self, **changes: object) -> None:
        self.changes = changes

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        spec = default.DefaultGrouper().group(ctx)
        return dataclasses.replace(spec, **self.changes)  # type: ignore[arg-type]


def _pod(name: str, owner: dict[str, str] | None = None) -> dict[str, object]:
    meta: dict[str, object] = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    if owner is not None:
        meta["ownerReferences"] = [{**owner, "controller": True}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "c"}]},
    }


def _widget_and_pods() -> list[dict[str, object]]:
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns", "uid": "uid-w"},
    }
    owner = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "uid-w"}
    return [widget, _pod("w-0", owner), _pod("plain")]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"min_member": -1}, "spec.minMember"),
        ({"min_member": 2**31}, "spec.minMember"),
        ({"subgroups": (base.SubGroupSpec(name="a", min_member=-2),)}, "spec.subGroups[0]"),
        # what KAI's CRD schema or its webhook refuses on create
        (
            {"subgroups": (base.SubGroupSpec("a", 1), base.SubGroupSpec("a", 2))},
            "spec.subGroups[1].name",
        ),
        ({"subgroups": (base.SubGroupSpec("GPU_Workers", 1),)}, "spec.subGroups[0].name"),
        (
            {
                "subgroups": (base.SubGroupSpec("a", 1), base.SubGroupSpec("b", 1)),
                "min_sub_group": 0,
            },
            "spec.minSubGroup",
        ),
    ],
)
def test_an_invalid_podgroup_is_an_error_line_and_the_others_are_grouped(
    changes: dict[str, object], field: str
) -> None:
    groupers = registry.build_registry(
        [
            *registry.BUILTIN,
            *registry.PODMUSTER_ONLY,
            (WIDGET, lambda _r: _Breaking(**changes)),
        ]
    )
    result = group_workloads(_widget_and_pods(), groupers=groupers)
    names = [pg["metadata"]["name"] for pg in result.pod_groups]
    assert len(names) == 1, names
    assert "plain" in names[0], names
    assert len(result.errors) == 1, result.errors
    (error,) = result.errors
    assert "Widget ns/w" in str(error)
    assert f"field {field}" in str(error), str(error)
    assert "the PodGroup made for the workload is not valid" in str(error)
    grouped = {a.pod for a in result.assignments}
    assert "ns/plain" in grouped
    assert "ns/w-0" not in grouped


def _ray_cluster(name: str, group_name: str) -> dict[str, object]:
    template = {"spec": {"containers": [{"name": "c", "image": "ray"}]}}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "headGroupSpec": {"template": template},
            "workerGroupSpecs": [{"groupName": group_name, "replicas": 2, "template": template}],
        },
    }


@pytest.mark.parametrize(
    ("group_name", "problem"),
    [
        ("headgroup", "duplicate subgroup name 'headgroup' (also spec.subGroups[0])"),
        ("GPU_Workers", "spec.subGroups[1].name: must be a DNS label"),
    ],
)
def test_a_podgroup_kai_would_refuse_is_an_error_line_not_printed(
    group_name: str, problem: str
) -> None:
    """A worker group named like the head's subgroup, or not a DNS label: KAI's create
    fails (webhook: duplicate name; CRD: the name pattern), so nothing is printed for it."""
    result = group_workloads([_ray_cluster("bad", group_name), _ray_cluster("good", "gpu")])
    assert [pg["metadata"]["ownerReferences"][0]["name"] for pg in result.pod_groups] == ["good"]
    (error,) = result.errors
    assert error.object == "RayCluster ns/bad"
    assert "field spec.subGroups[1].name: " in error.message
    assert problem in error.message
