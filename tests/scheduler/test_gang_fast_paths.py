"""The gang rule's shortcuts for jobs without a subgroup tree decide as the tree walk does.

Why: most jobs have one pod set and no subgroups, so the gang rule
(:meth:`PodGroupInfo.requirement_met`, :meth:`PodGroupInfo.counts_meet`), the
tasks to allocate (:func:`gang.task_choices`) and the stale-gang check
(:func:`stale_gangs.is_stale`) answer them without walking the
tree. Each shortcut must give what the walk gives on the same job written with
its tree spelled out (a root requiring every pod set, as ``root()`` builds it).
"""

from __future__ import annotations

from typing import cast

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.actions.stale_gangs import is_stale
from scheduler.actions.victims import reverse_job_order
from scheduler.api.podgroups import PodGroupInfo, PodSetInfo, SubGroupNode
from scheduler.api.pods import PodInfo, PodStatus
from scheduler.api.resources import GPU
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.config import SchedulerConfig
from scheduler.framework import gang
from scheduler.framework.session import Session

STATUSES = st.sampled_from(
    [
        PodStatus.PENDING,
        PodStatus.RUNNING,
        PodStatus.PIPELINED,
        PodStatus.RELEASING,
        PodStatus.SUCCEEDED,
        PodStatus.GATED,
    ]
)


def _pod(name: str, status: PodStatus) -> PodInfo:
    return PodInfo(
        namespace="ns",
        name=name,
        uid=name,
        creation=0.0,
        request=np.zeros(GPU + 1, dtype=np.int64),
        status=status,
    )


@st.composite
def jobs(draw: st.DrawFn, max_sets: int = 3) -> tuple[PodGroupInfo, PodGroupInfo]:
    """The same pods and minimums twice: without a tree, and with the root spelled out."""
    pod_sets = []
    for s in range(draw(st.integers(1, max_sets))):
        statuses = draw(st.lists(STATUSES, max_size=5))
        pods = [_pod(f"p{s}-{i}", status) for i, status in enumerate(statuses)]
        pod_sets.append(PodSetInfo(f"set{s}", draw(st.integers(0, 4)), pods))
    plain = PodGroupInfo("ns", "g", "uid", "q", 50, True, 0.0, pod_sets)
    root = SubGroupNode("", None, tuple(pod_set.name for pod_set in pod_sets))
    spelled = PodGroupInfo("ns", "g", "uid", "q", 50, True, 0.0, pod_sets, shape=root)
    return plain, spelled


@settings(deadline=None)
@given(jobs())
def test_requirement_shortcut_as_the_walk(pair: tuple[PodGroupInfo, PodGroupInfo]) -> None:
    plain, spelled = pair
    for count in (PodSetInfo.active_used, PodSetInfo.active_allocated, PodSetInfo.alive_not_gated):
        for whole in (True, False):
            assert plain.requirement_met(count, whole=whole) == spelled.requirement_met(
                count, whole=whole
            )
    counts = {pod_set.name: pod_set.active_used() for pod_set in plain.pod_sets[1:]}
    assert plain.counts_meet(counts) == spelled.counts_meet(counts)
    assert plain.elastic_state() == spelled.elastic_state()


@settings(deadline=None)
@given(jobs(max_sets=1), st.integers(0, 3))
def test_task_choices_shortcut_as_the_walk(
    pair: tuple[PodGroupInfo, PodGroupInfo], limit: int
) -> None:
    plain, spelled = pair
    session = Session(cast(ClusterSnapshot, None), SchedulerConfig())
    fast = list(gang.task_choices(session, plain, limit))
    walked = list(gang.task_choices(session, spelled, limit))
    assert fast == walked


@settings(deadline=None)
@given(jobs())
def test_stale_shortcut_as_the_walk(pair: tuple[PodGroupInfo, PodGroupInfo]) -> None:
    plain, spelled = pair
    assert is_stale(plain) == is_stale(spelled)


@settings(deadline=None)
@given(jobs())
def test_choices_to_try_as_task_choices(pair: tuple[PodGroupInfo, PodGroupInfo]) -> None:
    """Allocate's choices, the first from the memo, are the task choices in order."""
    for job in pair:
        session = Session(cast(ClusterSnapshot, None), SchedulerConfig())
        gang.tasks_to_allocate(session, job)  # the memo filled, as the queue order fills it
        assert list(gang.choices_to_try(session, job)) == list(gang.task_choices(session, job))


@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=12))
def test_reverse_job_order_as_sorting_the_jobs(
    ranks: list[tuple[int, int]],
) -> None:
    """Sorting indexes by the memoised keys gives the jobs in the order sorting them does."""
    session = Session(cast(ClusterSnapshot, None), SchedulerConfig())
    session.add_job_order(lambda job: (-job.priority,))
    jobs = [
        PodGroupInfo("ns", f"g{i}", f"u{uid}", "q", priority, True, 0.0, [])
        for i, (priority, uid) in enumerate(ranks)
    ]
    expected = sorted(jobs, key=session.job_key, reverse=True)
    assert [job.key for job in reverse_job_order(session, jobs)] == [job.key for job in expected]
