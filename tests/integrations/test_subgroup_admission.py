"""The PodGroups the adapters write pass KAI v0.17's minMember/minSubGroup rules.

The admission webhook refuses, on create, a leaf subgroup without ``minMember`` and
a mid-level subgroup with one (:func:`crds.podgroup.min_definition_problems`), so
what the podgrouper writes must say ``minMember: 0`` on an elastic leaf and leave
it off segment parents (the segment properties check every LWS and PyTorch shape).
"""

from __future__ import annotations

from crds import podgroup
from integrations import base


def admission_problems(spec: base.PodGroupSpec) -> list[tuple[str, ...]]:
    """What the webhook would refuse or warn about in the PodGroup ``spec`` writes."""
    model = spec.to_model().spec
    return [*podgroup.subgroup_problems(model), *podgroup.min_definition_problems(model)]


def test_an_elastic_leaf_says_min_member_0_and_a_parent_says_none() -> None:
    spec = base.PodGroupSpec(
        name="g",
        namespace="ns",
        owner=base.OwnerReference("v1", "Pod", "p", "uid-p"),
        subgroups=(
            base.SubGroupSpec("workers", 4),
            base.SubGroupSpec("w-0", 4, parent="workers"),
            base.SubGroupSpec("extra", 0),
        ),
    )
    manifest = spec.to_manifest()
    assert {s["name"]: s.get("minMember") for s in manifest["spec"]["subGroups"]} == {
        "workers": None,
        "w-0": 4,
        "extra": 0,
    }
    assert admission_problems(spec) == []


def test_the_root_min_member_is_written_as_given_0_included_unless_min_sub_group() -> None:
    """As KAI's podgrouper: ``minMember`` is always written without ``minSubGroup``, also 0
    (an upstream PodGroup's basic policy; a gang of no members), never beside it."""
    owner = base.OwnerReference("v1", "Pod", "p", "uid-p")
    for min_member in (0, 1, 3):
        spec = base.PodGroupSpec(name="g", namespace="ns", owner=owner, min_member=min_member)
        assert spec.to_manifest()["spec"]["minMember"] == min_member
    with_roots = base.PodGroupSpec(
        name="g",
        namespace="ns",
        owner=owner,
        min_member=0,
        min_sub_group=1,
        subgroups=(base.SubGroupSpec("a", 1), base.SubGroupSpec("b", 1)),
    )
    written = with_roots.to_manifest()["spec"]
    assert ("minMember" in written, written["minSubGroup"]) == (False, 1)
    assert admission_problems(with_roots) == []
