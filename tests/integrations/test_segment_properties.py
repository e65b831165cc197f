"""Properties of segmentation (hypothesis): every pod lands in exactly one leaf, leaf
minimums add up to the gang, and the PodGroup passes the webhook's minMember/minSubGroup
rules, for LWS (both policies) and PyTorch worker segments."""

from __future__ import annotations

from adapter_builders import ctx, group
from hypothesis import assume, given
from hypothesis import strategies as st
from test_kubeflow_adapters import pytorch, replica, worker_pod
from test_lws_adapter import lws, lws_pod
from test_subgroup_admission import admission_problems


def leaves(spec: object) -> dict[str, int]:
    subgroups = spec.subgroups  # type: ignore[attr-defined]
    parents = {s.parent for s in subgroups}
    return {s.name: s.min_member for s in subgroups if s.name not in parents}


@given(size=st.integers(2, 40), segment=st.integers(2, 40), excluded=st.booleans())
def test_lws_segments_cover_every_worker(size: int, segment: int, excluded: bool) -> None:
    assume(segment <= size)
    assume(not excluded or (size - 1) % segment == 0)
    policy = {
        "subGroupSize": segment,
        "subGroupPolicyType": "LeaderExcluded" if excluded else "LeaderWorker",
    }
    the_lws = lws(size, policy=policy)
    spec = group(ctx(the_lws, lws_pod(0, the_lws)))
    mins = leaves(spec)
    assert sum(mins.values()) == size
    assert admission_problems(spec) == []
    counts: dict[str, int] = {}
    for worker in range(size):
        placed = group(ctx(the_lws, lws_pod(worker, the_lws))).subgroup_of(f"l-0-{worker}")
        assert placed in mins
        counts[placed] = counts.get(placed, 0) + 1
    assert counts == mins


@given(workers=st.integers(1, 30), size=st.integers(1, 30))
def test_pytorch_segments_cover_every_worker(workers: int, size: int) -> None:
    notes = {"kai.scheduler/segment-size": str(size)}
    job = pytorch({"pytorchReplicaSpecs": {"Worker": replica(workers, notes)}})
    counts: dict[str, int] = {}
    for index in range(workers):
        spec = group(ctx(job, worker_pod(index, job)))
        placed = spec.subgroup_of(f"pt-worker-{index}")
        assert placed is not None
        counts[placed] = counts.get(placed, 0) + 1
    assert counts == {k: v for k, v in leaves(spec).items()}
    assert admission_problems(spec) == []
