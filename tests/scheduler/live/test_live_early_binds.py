"""The cold-start commit order: allocate's binds taken while the cycle decides, the
disruption actions left to the next cycle, and a bind sent early never sent again."""

from __future__ import annotations

import asyncio
import logging

from live_objects import api_with, scheduler_log, until, with_informers

from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult, EarlyBinds, run_cycle
from scheduler.live import loop
from scheduler.live.committing import Committer
from scheduler.live.informers import Informers
from tests.kits import worlds as st
from tests.kits.worlds import NOW, Item, sourced
from tests.scheduler.scenarios.disruption_kit import running

DISRUPTING = ("consolidation", "reclaim", "preempt", "stalegangeviction")


def world(*pending: str) -> list[Item]:
    """Two 1-GPU nodes; q1 (no quota) runs ``old`` on n1; q2 (2 GPUs) waits with ``pending``."""
    return [
        st.node("n1", gpus=1),
        st.node("n2", gpus=1),
        st.queue("q1", gpu_quota=0),
        st.queue("q2", gpu_quota=2),
        *running("old", "q1", "n1"),
        *[item for name in pending for item in st.job(name, "q2", gpus=1)],
    ]


def decide(objects: list[Item], early: EarlyBinds | None) -> CycleResult:
    built = build_snapshot(sourced(objects), now=NOW.timestamp())
    return run_cycle(built.snapshot, SchedulerConfig(), explain=True, early=early)


def test_when_allocate_binds_the_disruption_actions_wait_for_the_next_cycle() -> None:
    full = decide(world("a", "b"), None)
    assert [b.pod for b in full.binds] == ["default/a-0"]
    assert [e.pod for e in full.evictions] == ["default/old-0"]  # reclaimed for b

    early = EarlyBinds()
    first = decide(world("a", "b"), early)
    assert first.deferred == DISRUPTING
    assert first.binds == full.binds
    assert first.evictions == []
    assert early.take() == first.binds  # what the loop sends while the cycle decides
    assert early.take() == []  # each bind is handed out once
    outcomes = {o.pod_group: o.outcome for o in first.pod_groups}
    assert outcomes == {"default/a": "scheduled", "default/b": "pending"}


def test_the_next_cycle_decides_the_deferred_evictions_on_the_bound_pods() -> None:
    """What the next cycle sees: a Binding on n2; reclaim then makes room for b on n1."""
    bound = [
        st.node("n1", gpus=1),
        st.node("n2", gpus=1),
        st.queue("q1", gpu_quota=0),
        st.queue("q2", gpu_quota=2),
        *running("old", "q1", "n1"),
        *running("a", "q2", "n2"),
        *st.job("b", "q2", gpus=1),
    ]
    second = decide(bound, None)
    assert second.deferred == ()
    assert [e.pod for e in second.evictions] == ["default/old-0"]
    assert [b.pod for b in second.pipelined] == ["default/b-0"]


def test_when_allocate_binds_nothing_the_cycle_runs_every_action() -> None:
    """Nothing sent early: one whole cycle, the same as without EarlyBinds."""
    objects = [*world("b"), *running("a", "q2", "n2")]
    early = EarlyBinds()
    result = decide(objects, early)
    assert result.deferred == ()
    assert [e.pod for e in result.evictions] == ["default/old-0"]
    assert result == decide(objects, None)
    assert early.take() == []


def test_a_bind_sent_early_is_not_sent_again_by_the_commit() -> None:
    fake = api_with(world("a"))

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers, direct_bind=True)
        early = EarlyBinds()
        built = informers.cache.snapshot(NOW.timestamp()).snapshot
        stream = committer.stream()
        result = run_cycle(built, SchedulerConfig(), explain=True, early=early)
        stream.add(early.take())  # sent before the cycle's result is committed
        report = await committer.commit(result, stream)
        assert (report.bound, report.already_binding, report.failed) == (1, 0, 0)
        assert stream.sent == {"default/a-0"}

    with_informers(fake, scenario)
    pod = fake.stored("v1", "Pod", "default", "a-0")
    assert pod is not None
    assert pod["spec"]["nodeName"] == "n2"
    assert sum(1 for call in fake.calls if call[0] == "bind") == 1


def test_the_loop_binds_early_in_its_first_cycle_only_and_evicts_in_the_next() -> None:
    fake = api_with(world("a", "b"))
    records: list[logging.LogRecord] = []

    async def main() -> None:
        stop = asyncio.Event()
        options = loop.Options(SchedulerConfig(), 0.01, direct_bind=True)
        running_loop = asyncio.create_task(loop.run(fake, options, stop))
        await until(lambda: fake.stored("v1", "Pod", "default", "old-0") is None)
        stop.set()
        await asyncio.wait_for(running_loop, 2)

    with scheduler_log(records):
        asyncio.run(main())
    cycles = [r.__dict__ for r in records if r.getMessage() == "cycle"]
    first, second = cycles[0], cycles[1]
    assert (first["bound"], first["evictions"]) == (1, 0)
    assert (first["early_binds"], first["deferred_actions"]) == (1, list(DISRUPTING))
    assert (second["early_binds"], second["deferred_actions"], second["evictions"]) == (0, [], 1)
    pod = fake.stored("v1", "Pod", "default", "a-0")
    assert pod is not None
    assert pod["spec"]["nodeName"] == "n2"
