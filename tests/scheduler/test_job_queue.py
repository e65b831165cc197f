"""The job queue's fast paths pop exactly what the general path pops.

Why: :class:`JobQueue` builds each leaf's heap in one step, pops a flat tree (no
departments) by comparing the leaves' heads alone, and drains a whole queue from
sorted leaves. Each is only an optimisation: the order, which is KAI's fairness,
must equal the one that pushing the jobs one by one and popping them level by
level gives, with and without a queue depth, in flat and departmented trees.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from crds.documents import SourcedObject
from scheduler.actions.ordering import JobQueue
from scheduler.actions.pending import eligible_jobs, leaf_entries
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.cache.cluster_cache import ClusterCache
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import open_session
from scheduler.framework import gang
from scheduler.framework.session import Session
from tests.kits.worlds import (
    NAMESPACE,
    bind_request,
    job,
    node,
    pod,
    pod_group,
    queue,
    sourced,
)

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
    for one in eligible_jobs(session):
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
    popping = JobQueue(session, eligible_jobs(session), depth)
    popped = []
    while (one := popping.pop()) is not None:
        popped.append(one.key)
    drained = [j.key for j in JobQueue(session, eligible_jobs(session), depth).drain()]
    assert popped == expected
    assert drained == expected
    # from the session's sorted leaves (pending.leaf_entries), asked twice: built, then kept
    for _ in range(2):
        shared = JobQueue.pending(session, depth)
        assert [one.key for one in iter(shared.pop, None)] == expected


def test_flat_is_told_apart_from_departments() -> None:
    """The flat path is taken only when every queue is a top-level leaf."""
    flat = [queue(leaf, gpu_quota=1) for leaf in FLAT]
    nested = [queue("d1", gpu_quota=2), *(queue(leaf, "d1", gpu_quota=1) for leaf in FLAT)]
    for objects, expected in ((flat, True), (nested, False)):
        session = open_session(build_snapshot(sourced(objects)).snapshot, SchedulerConfig())
        assert JobQueue(session, [])._flat is expected


def _counting_best(session: Session) -> list[int]:
    """Count the session's best-queue calls from now on (the drain's merge asks it only
    at possible ties)."""
    calls = [0]
    chosen = session.best_queue_fn
    assert chosen is not None

    def counted(candidates: list[tuple[str, Any]]) -> str:
        calls[0] += 1
        return chosen(candidates)

    session.best_queue_fn = counted
    return calls


def _flat_world(quotas: tuple[int, int, int], gangs: int) -> Session:
    objects: list[Any] = [
        queue(leaf, gpu_quota=quota, gpu_weight=1) for leaf, quota in zip(FLAT, quotas, strict=True)
    ]
    objects += [node(f"n{i}", gpus=8, cpu="64") for i in range(2)]
    objects += [
        job(f"j{index:02d}", FLAT[index % 3], 1, gpus=1 + index % 2, states=["Pending"])
        for index in range(gangs)
    ]
    return open_session(build_snapshot(sourced(objects)).snapshot, SchedulerConfig())


def test_drain_merges_by_key_and_asks_the_best_queue_only_at_possible_ties() -> None:
    """Queues with different quotas never tie: the drain pops all twelve gangs by their
    sort keys without one best-queue call, in the order popping gives. Queues alike
    (same quota, same requests) tie at every step, and the best-queue function decides."""
    apart = _flat_world((1, 3, 7), 12)
    expected = _general(apart, None)
    calls = _counting_best(apart)
    drained = [j.key for j in JobQueue(apart, eligible_jobs(apart)).drain()]
    assert drained == expected
    assert calls[0] == 0

    alike = _flat_world((2, 2, 2), 12)
    expected = _general(alike, None)
    calls = _counting_best(alike)
    drained = [j.key for j in JobQueue(alike, eligible_jobs(alike)).drain()]
    assert drained == expected
    assert calls[0] > 0


def _last_at_ties(session: Session) -> None:
    """Make the session's best-queue function break possible ties the other way (the
    last tied queue in root order): still the smallest key's queue elsewhere, as the
    merge assumes, so the merged drain must equal the plain one only if it asks the
    function at every possible tie, also in the middle of a leaf's run of pops."""
    keys = session.queue_keys
    assert keys is not None

    def last_tied(candidates: list[tuple[str, Any]]) -> str:
        scored = [(keys.key(name, head), name) for name, head in candidates]
        low = min(key for key, _ in scored)
        return [name for key, name in scored if keys.may_tie(low, key)][-1]

    session.best_queue_fn = last_tied


def _tie_in_a_run() -> list[Any]:
    """Two leaves whose heads tie in the middle of the first leaf's run of pops (a
    case a wider search found; random worlds meet it seldom)."""

    def elastic(name: str, leaf: str, size: int, running: int, gpus: int) -> list[Any]:
        return job(
            name,
            leaf,
            size,
            gpus=gpus,
            states=["Running"] * running + ["Pending"] * (size - running),
            nodes=["n0"] * running + [None] * (size - running),
            min_member=1,
        )

    return [
        *(queue(leaf, gpu_quota=0, gpu_weight=1) for leaf in FLAT),
        *(node(f"n{i}", gpus=8, cpu="64") for i in range(2)),
        elastic("j0", "qa", 3, 2, 3),
        elastic("j1", "qb", 2, 1, 3),
        elastic("j2", "qa", 1, 0, 1),
        elastic("j3", "qb", 2, 1, 1),
        elastic("j4", "qa", 1, 0, 1),
        elastic("j5", "qb", 2, 1, 2),
    ]


@settings(deadline=None, max_examples=80)
@given(worlds())
@example(_tie_in_a_run())
def test_drain_asks_the_best_queue_at_every_possible_tie(objects: list[Any]) -> None:
    """With ties broken against the sort keys' own order, the merged drain still pops
    what asking the best-queue function at every pop gives: it asks at each possible
    tie, also when one leaf's run of pops meets one."""
    merged = open_session(build_snapshot(sourced(objects)).snapshot, SchedulerConfig())
    plain = open_session(build_snapshot(sourced(objects)).snapshot, SchedulerConfig())
    plain.memoise = False
    _last_at_ties(merged)
    _last_at_ties(plain)
    assert [j.key for j in JobQueue(merged, eligible_jobs(merged)).drain()] == [
        j.key for j in JobQueue(plain, eligible_jobs(plain)).drain()
    ]


@settings(deadline=None, max_examples=80)
@given(worlds())
def test_drain_merged_equals_the_drain_without_memos(objects: list[Any]) -> None:
    """The merge by sort keys (memos on) drains the order the best-queue function alone
    gives (memos off: every step asks it)."""
    merged = open_session(build_snapshot(sourced(objects)).snapshot, SchedulerConfig())
    plain = open_session(build_snapshot(sourced(objects)).snapshot, SchedulerConfig())
    plain.memoise = False
    assert [j.key for j in JobQueue(merged, eligible_jobs(merged)).drain()] == [
        j.key for j in JobQueue(plain, eligible_jobs(plain)).drain()
    ]


CARRIED = SchedulerConfig()  # one config for every session: answers carried with it hold


def _cache(*objects: Any) -> ClusterCache:
    cache = ClusterCache()
    cache.upsert_all(sourced(objects))
    return cache


def _leaf_order(snapshot: ClusterSnapshot, leaf: str, asked: str | None = None) -> list[str]:
    """The pending leaf's jobs in order, as a session forms them; ``asked``: a job whose
    order key and readiness the session asked first (a plugin or an earlier action may)."""
    session = open_session(snapshot, CARRIED)
    if asked is not None:
        session.job_key(snapshot.jobs[asked])
        gang.ready_problem(session, snapshot.jobs[asked])
    return [entry[2].key for entry in leaf_entries(session)[0].get(leaf, [])]


@pytest.mark.parametrize("asked_first", [False, True])
def test_a_carried_leaf_order_re_places_a_job_whose_key_changed(asked_first: bool) -> None:
    """A session starts from the leaf order the last cycle left (ClusterSnapshot.carry),
    keeping a job at its place only while it carries the very key it was sorted by. A
    BindRequest for one pod of an elastic gang keeps the gang's record but moves it from
    below its minimum to at it, behind a gang still below its own: the carried order
    must follow, as a fresh sort does, also when the session formed the job's key (and
    readiness) again before forming the order."""
    cache = _cache(
        queue("qa", gpu_quota=4),
        node("n0", gpus=4),
        pod_group("a", "qa", min_member=1),
        *pod("a-0", "a", gpus=1),
        *pod("a-1", "a", gpus=1),
        pod_group("b", "qa", min_member=1),
        *pod("b-0", "b", gpus=1),
    )
    a, b = f"{NAMESPACE}/a", f"{NAMESPACE}/b"
    first = cache.snapshot().snapshot
    assert _leaf_order(first, "qa") == [a, b]  # both below their minimum
    assert first.carry  # the order is left for the next cycle
    cache.upsert(SourcedObject(bind_request("a-0", "n0"), "test", 0))
    second = cache.snapshot().snapshot
    assert second.jobs[a] is first.jobs[a]  # the same record
    asked = a if asked_first else None
    assert _leaf_order(second, "qa", asked) == [b, a]
    assert _leaf_order(replace(second, carry={}), "qa") == [b, a]


def test_a_carried_leaf_order_drops_a_job_whose_queue_went_wrong() -> None:
    """A queue that gains a child is no leaf any more: its jobs get that problem while
    their records stay, and the carried order must leave them out (with the reason),
    as a fresh one does."""
    cache = _cache(
        queue("qa", gpu_quota=4),
        node("n0", gpus=4),
        pod_group("a", "qa", min_member=1),
        *pod("a-0", "a", gpus=1),
    )
    a = f"{NAMESPACE}/a"
    first = cache.snapshot().snapshot
    assert _leaf_order(first, "qa") == [a]
    cache.upsert(SourcedObject(queue("qa-child", "qa", gpu_quota=1), "test", 0))
    second = cache.snapshot().snapshot
    assert second.jobs[a] is first.jobs[a]  # the same record, with a problem now
    assert second.job_problems.get(a)
    session = open_session(second, CARRIED)
    assert leaf_entries(session)[0] == {}
    assert session.job_reasons[a] == second.job_problems[a]
