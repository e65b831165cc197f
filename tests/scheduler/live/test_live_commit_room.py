"""Direct binds check the node's room as it is now (docs/semantics.md §5.10): a pod another
scheduler bound there after the snapshot leaves ours unbound, and the next cycle decides
again from a snapshot that counts it.

n1 and n2 have 4 CPUs each; our job ``j`` wants 2; kube-scheduler's ``web`` takes 3 of
n1's after the cycle chose n1 (binpack, by name).
"""

from __future__ import annotations

import asyncio
import logging

import pytest
from live_objects import api_with, until, with_informers

from scheduler.config import SchedulerConfig
from scheduler.cycle import Bind, CycleResult, run_cycle
from scheduler.live.committing import PARALLEL_WRITES, Committer
from scheduler.live.informers import Informers
from tests.kits import worlds as st

WEB = st.pod("web", cpu="3", state="Bound", node="n1", scheduler_name="default-scheduler")[0]


def cycle(informers: Informers) -> CycleResult:
    return run_cycle(informers.cache.snapshot(0).snapshot, SchedulerConfig(), explain=True)


def _world() -> list[object]:
    return [
        st.node("n1", cpu="4"),
        st.node("n2", cpu="4"),
        st.queue("q"),
        st.job("j", "q", cpu="2"),
    ]


def test_a_room_taken_after_the_snapshot_is_not_bound_and_decided_again() -> None:
    fake = api_with(_world())

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers, direct_bind=True)
        decided = cycle(informers)
        assert decided.binds == [Bind("default/j-0", "n1")]
        with informers.deferred():  # as the loop commits: the cache holds changes back
            await fake.create(WEB)
            await until(lambda: informers.held > 0)
            report = await committer.commit(decided)
        assert (report.bound, report.refused, report.failed) == (0, 1, 0)
        again = cycle(informers)  # the cache now counts web on n1
        assert again.binds == [Bind("default/j-0", "n2")]
        assert (await committer.commit(again)).bound == 1

    with_informers(fake, scenario)
    pod = fake.stored("v1", "Pod", "default", "j-0")
    assert pod is not None
    assert pod["spec"]["nodeName"] == "n2"


def test_a_room_still_free_after_the_snapshot_is_bound() -> None:
    small = {**WEB, "spec": {**WEB["spec"], "containers": [{"name": "c", "resources": {
        "requests": {"cpu": "2"}}}]}}  # fmt: skip
    fake = api_with(_world())

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers, direct_bind=True)
        decided = cycle(informers)
        with informers.deferred():
            await fake.create(small)
            await until(lambda: informers.held > 0)
            report = await committer.commit(decided)
        assert (report.bound, report.refused) == (1, 0)  # 2 + 2 of 4 CPUs

    with_informers(fake, scenario)


def test_the_room_starts_from_what_the_informers_hold() -> None:
    """A committer made after the first list (as in these tests) knows the pods already there."""
    fake = api_with([*_world(), WEB])

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers, direct_bind=True)
        assert committer.room is not None
        node = informers.objects["Node"]["n1"]
        assert committer.room.shortfall(node, informers.objects["Pod"]["default/j-0"])

    with_informers(fake, scenario)


def test_bind_requests_are_left_to_the_binders_check() -> None:
    """Without direct binds the committer keeps no room: the binder checks (its own watch)."""
    fake = api_with(_world())

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers)
        assert committer.room is None
        assert not informers.listeners

    with_informers(fake, scenario)


def test_a_bind_the_watch_has_not_shown_yet_is_read_before_binding() -> None:
    """kube-scheduler's ``web`` is in the API server but in no watch event yet (the watch
    lags): the list of n1's pods just before the bind finds it, and j-0 is not bound.
    (kube-scheduler is known to be about: its ``other`` runs on n1, 1 + 3 + 2 > 4.)"""
    other = st.pod("other", cpu="1", state="Bound", node="n1", scheduler_name="default-scheduler")
    fake = api_with([*_world(), other[0]])

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers, direct_bind=True)
        decided = cycle(informers)
        assert decided.binds == [Bind("default/j-0", "n1")]
        fake.objects[("v1", "Pod", "default", "web")] = WEB  # stored, never watched
        report = await committer.commit(decided)
        assert (report.bound, report.refused) == (0, 1)

    with_informers(fake, scenario)


def test_the_first_pod_of_another_scheduler_is_read_before_binding() -> None:
    """No pod of another scheduler has ever been in the watch, and kube-scheduler's very
    first one, ``web``, is stored but not yet watched: the list before the bind finds it
    all the same, and j-0 is not bound where it no longer fits."""
    fake = api_with(_world())

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers, direct_bind=True)
        decided = cycle(informers)
        assert decided.binds == [Bind("default/j-0", "n1")]
        fake.objects[("v1", "Pod", "default", "web")] = WEB  # stored, never watched
        report = await committer.commit(decided)
        assert (report.bound, report.refused) == (0, 1)

    with_informers(fake, scenario)


def test_a_bind_made_while_waiting_for_a_write_slot_is_read_before_binding() -> None:
    """Every write slot is busy when j-0's bind comes up; kube-scheduler binds ``web`` to
    n1 during the wait. The node's pods are listed once the slot is ours, just before the
    bind, so ``web`` is counted and j-0 is not bound (a list made before the wait missed it)."""
    fake = api_with(_world())

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers, direct_bind=True)
        decided = cycle(informers)
        assert decided.binds == [Bind("default/j-0", "n1")]
        slots = [committer._limit.acquire() for _ in range(PARALLEL_WRITES)]
        for slot in slots:
            await slot
        commit = asyncio.ensure_future(committer.commit(decided))
        await asyncio.sleep(0.05)  # the commit is now waiting for a slot
        fake.objects[("v1", "Pod", "default", "web")] = WEB  # stored, never watched
        for _ in range(PARALLEL_WRITES):
            committer._limit.release()
        report = await commit
        assert (report.bound, report.refused) == (0, 1)

    with_informers(fake, scenario)


def test_the_bound_line_names_the_revision_the_check_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The ``bound`` line (info) carries ``checked_at``, the resourceVersion of the list of
    n1's pods the check read: a bind of another scheduler's after it is one the check
    could not see (docs/semantics.md §5.10, Limits)."""
    fake = api_with(_world())

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers, direct_bind=True)
        decided = cycle(informers)
        listed_at = str(fake.version)  # the bind's list is its first call
        with caplog.at_level(logging.INFO, logger="podmuster.scheduler.commit"):
            assert (await committer.commit(decided)).bound == 1
        bound = [vars(r) for r in caplog.records if r.msg == "bound"]
        assert [(b["pod"], b["node"], b["checked_at"]) for b in bound] == [
            ("default/j-0", "n1", listed_at)
        ]

    with_informers(fake, scenario)
