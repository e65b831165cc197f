"""The job queue's fast paths pop exactly what the general path pops.

Why: :class:`JobQueue` builds each leaf's heap in one step, pops a flat tree (no
departments) by comparing the leaves' heads alone, and drains a whole queue from
sorted leaves. Each is only an optimisation: the order, which is KAI's fairness,
must equal the one that pushing the jobs one by one and popping them level by
level gives, with and without a queue depth, in flat and departmented trees.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.actions.allocate import eligible_jobs
from scheduler.actions.ordering import JobQueue
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import open_session
from scheduler.framework.session import Session
from tests.kits.worlds import job, node, queue, sourced

FLAT = ("qa", "qb", "qc")
DEPARTMENTS = {"qa": "d1", "qb": "d1", "qc": "d2"}


@st.composite
def worlds(draw: st.DrawFn) -> list[Any]:
    """Three leaf queues, top-level or under two departments; up to twelve gangs of
    1-3 GPUs per pod (the request read by the queue order), some with a pod running."""
    departments = draw(st.booleans())
    objects: list[Any] = []
    if departments:
        objects += [queue("d1", gpu_quota=8), queue("d2", gpu_quota=4, gpu_weight=2)]
    for leaf in FLAT:
        parent = DEPARTMENTS[leaf] if departments else None
        objects.append(
            queue(leaf, parent, gpu_quota=draw(st.sampled_from([0, 2, 4])), gpu_weight=1)
        )
    objects += [node(f"n{i}", gpus=8, cpu="64") for i in range(2)]
    for index in range(draw(st.integers(0, 12))):
        size = draw(st.integers(1, 3))
        running = draw(st.integers(0, size - 1))
        objects.append(
            job(
                f"j{index}",
                draw(st.sampled_from(FLAT)),
                size,
                gpus=draw(st.integers(1, 3)),
                states=["Running"] * running + ["Pending"] * (size - running),
                nodes=["n0"] * running + [None] * (size - running),
                min_member=draw(st.integers(1, size)),
            )
        )
    return objects


def _general(session: Session, depth: int | None) -> list[str]:
    """The reference: jobs pushed one by one, popped level by level."""
    queue = JobQueue(session, [], depth)
    queue._flat = False
    for one in eligible_jobs(session, "allocate"):
        queue.push(one)
    order = []
    while (popped := queue.pop()) is not None:
        order.append(popped.key)
    return order


@settings(deadline=None, max_examples=80)
@given(worlds(), st.sampled_from([None, 1, 2, 3]))
def test_fast_paths_pop_the_general_order(objects: list[Any], depth: int | None) -> None:
    session = open_session(build_snapshot(sourced(objects)).snapshot, SchedulerConfig())
    expected = _general(session, depth)
    popping = JobQueue(session, eligible_jobs(session, "allocate"), depth)
    popped = []
    while (one := popping.pop()) is not None:
        popped.append(one.key)
    drained = [j.key for j in JobQueue(session, eligible_jobs(session, "allocate"), depth).drain()]
    assert popped == expected
    assert drained == expected


def test_flat_is_told_apart_from_departments() -> None:
    """The flat path is taken only when every queue is a top-level leaf."""
    flat = [queue(leaf, gpu_quota=1) for leaf in FLAT]
    nested = [queue("d1", gpu_quota=2), *(queue(leaf, "d1", gpu_quota=1) for leaf in FLAT)]
    for objects, expected in ((flat, True), (nested, False)):
        session = open_session(build_snapshot(sourced(objects)).snapshot, SchedulerConfig())
        assert JobQueue(session, [])._flat is expected
