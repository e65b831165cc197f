"""Properties of the subgroup rule over random trees (docs/semantics.md §2.1, §5.2).

Random PodGroup trees of up to two levels (leaf ``minMember`` 0-3, ``minSubGroup``
unset or 1..children) with random running pods per leaf. Then:

- eviction chunks take every running pod exactly once, and after each chunk but the
  last the pods left still meet the requirement (a victim is never left running
  below it);
- from a group that meets its requirement, single pods come before any optional
  subgroup, and the rest goes in one last chunk;
- the elastic state is 0 exactly when the running pods miss the requirement; at 2
  (above it) the first chunk leaves it met, at 1 (exactly at it) the only chunk is
  everything.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.podgroups import PodGroupInfo, PodSetInfo, SubGroupNode
from scheduler.api.pods import PodInfo, PodStatus
from scheduler.api.resources import GPU

World = tuple[PodGroupInfo, dict[str, list[PodInfo]]]


def _running(name: str) -> PodInfo:
    return PodInfo(
        namespace="ns",
        name=name,
        uid=name,
        creation=0.0,
        request=np.zeros(GPU + 1, dtype=np.int64),
        status=PodStatus.RUNNING,
    )


@st.composite
def trees(draw: st.DrawFn) -> World:
    """A job with a random tree of up to two levels, its pod sets holding running pods."""
    pod_sets: list[PodSetInfo] = []

    def leaf(name: str) -> str:
        pods = [_running(f"{name}-{i}") for i in range(draw(st.integers(0, 4)))]
        pod_sets.append(PodSetInfo(name, draw(st.integers(0, 3)), pods))
        return name

    def node(name: str, depth: int) -> SubGroupNode:
        members: list[SubGroupNode | str] = []
        for i in range(draw(st.integers(1, 3))):
            child = f"{name}{i}"
            deeper = depth < 2 and draw(st.booleans())
            members.append(node(child, depth + 1) if deeper else leaf(child))
        required = draw(st.one_of(st.none(), st.integers(1, len(members))))
        return SubGroupNode(name, required, tuple(members))

    shape = node("s", 1)
    job = PodGroupInfo("ns", "g", "uid", "q", 50, True, 0.0, pod_sets, shape=shape)
    return job, {pod_set.name: list(pod_set.pods) for pod_set in pod_sets}


def _chunks(world: World) -> list[list[PodInfo]]:
    job, running = world
    return list(job.eviction_chunks({name: list(pods) for name, pods in running.items()}))


def _left(running: dict[str, list[PodInfo]], gone: list[PodInfo]) -> dict[str, int]:
    out = {name: len(pods) for name, pods in running.items()}
    for pod in gone:
        out[pod.name.rsplit("-", 1)[0]] -= 1
    return out


@settings(deadline=None)
@given(trees())
def test_chunks_never_leave_a_victim_below_its_requirement(world: World) -> None:
    job, running = world
    chunks = _chunks(world)
    taken = sorted(pod.name for chunk in chunks for pod in chunk)
    assert taken == sorted(pod.name for pods in running.values() for pod in pods)
    gone: list[PodInfo] = []
    sizes = []
    for chunk in chunks[:-1]:
        gone += chunk
        assert job.counts_meet(_left(running, gone)), [p.name for p in chunk]
        sizes.append(len(chunk))
    if job.counts_meet(_left(running, [])):  # a broken group may shed its broken part first
        singles = [size for size in sizes if size == 1]
        assert sizes[: len(singles)] == singles  # single pods before any subgroup


@settings(deadline=None)
@given(trees())
def test_elastic_state_agrees_with_the_chunks(world: World) -> None:
    job, running = world
    state = job.elastic_state()
    assert (state == 0) == (not job.counts_meet(_left(running, [])))
    chunks = _chunks(world)
    described = [[p.name for p in c] for c in chunks]
    if state == 2:  # above: something can go and leave the requirement met
        assert chunks, described
        assert job.counts_meet(_left(running, chunks[0])), described
    if state == 1:  # exactly at it: the victim can only go whole (when it has pods)
        assert len(chunks) <= 1, described
