"""The PodGroups the adapters write pass KAI v0.17's minMember/minSubGroup rules.

The admission webhook refuses, on create, a leaf subgroup without ``minMember`` and
a mid-level subgroup with one (:func:`crds.podgroup.min_definition_problems`), so
what the podgrouper writes must say ``minMember: 0`` on an elastic leaf and leave
it off segment parents.
"""

from __future__ import annotations

from adapter_builders import ctx, group
from hypothesis import assume, given
from hypothesis import strategies as st
from test_jobset_lws_adapters import lws, lws_pod
from test_kubeflow_adapters import pytorch, replica, worker_pod

from crds import podgroup
from integrations import base


def problems(spec: base.PodGroupSpec) -> list[tuple[str, ...]]:
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
    assert problems(spec) == []


@given(size=st.integers(2, 20), segment=st.integers(2, 20), excluded=st.booleans())
def test_lws_segments_are_admitted(size: int, segment: int, excluded: bool) -> None:
    assume(segment <= size)
    assume(not excluded or (size - 1) % segment == 0)
    policy = {
        "subGroupSize": segment,
        "subGroupPolicyType": "LeaderExcluded" if excluded else "LeaderWorker",
    }
    the_lws = lws(size, policy=policy)
    assert problems(group(ctx(the_lws, lws_pod(0, the_lws)))) == []


@given(workers=st.integers(1, 20), size=st.integers(1, 20))
def test_pytorch_segments_are_admitted(workers: int, size: int) -> None:
    notes = {"kai.scheduler/segment-size": str(size)}
    job = pytorch({"pytorchReplicaSpecs": {"Worker": replica(workers, notes)}})
    assert problems(group(ctx(job, worker_pod(0, job)))) == []
