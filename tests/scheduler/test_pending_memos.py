"""The pending-work memos answer as a fresh computation would, after any statement history.

Why: with hundreds of gangs waiting, every action asks the same questions of
every pending gang in a cycle. The answers are kept while the state they read
is unchanged: per job until one of its pods changes status (tasks to
allocate), per committed state (the pop order, fit-failure sentences, the
cluster's free GPUs), per queue until its accounting moves (queue order keys).
After any sequence of allocations, pipelines, evictions, rollbacks and
commits, each memoised answer must equal the one computed afresh
(``Session.memoise`` off) at that moment.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.actions.allocate import eligible_jobs
from scheduler.actions.disrupting import _free_gpus
from scheduler.actions.ordering import JobQueue, popped_order
from scheduler.api.pods import ACTIVE_USED, PodStatus
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.framework import gang
from scheduler.framework.session import Session
from scheduler.plugins import builtin_plugins
from tests.kits.worlds import job, node, queue, sourced

NODES = ("n0", "n1", "n2")


@st.composite
def worlds(draw: st.DrawFn) -> list[Any]:
    """Two queues, three 8-GPU nodes and up to eight gangs, some running, asking 1-6
    GPUs a pod: placements fill nodes, so fit failures depend on the state."""
    objects: list[Any] = [queue("qa", gpu_quota=-1), queue("qb", gpu_quota=-1)]
    objects += [node(name, gpus=8, cpu="64") for name in NODES]
    for j in range(draw(st.integers(1, 8))):
        size = draw(st.integers(1, 4))
        states = draw(
            st.lists(st.sampled_from(["Pending", "Running"]), min_size=size, max_size=size)
        )
        objects.append(
            job(
                f"j{j}",
                draw(st.sampled_from(["qa", "qb"])),
                size,
                gpus=draw(st.integers(1, 6)),
                states=states,
                nodes=[None if s == "Pending" else draw(st.sampled_from(NODES)) for s in states],
                min_member=draw(st.integers(1, size)),
                preemptibility=draw(st.sampled_from(["preemptible", "non-preemptible"])),
            )
        )
    return objects


def _fresh(session: Session) -> dict[str, Any]:
    session.memoise = False
    try:
        jobs = session.snapshot.jobs.values()
        queue = JobQueue(session, eligible_jobs(session, "allocate"))
        order = []
        while (popped := queue.pop()) is not None:
            order.append(popped.key)
        return {
            "tasks": {j.key: gang.tasks_to_allocate(session, j) for j in jobs},
            "order": order,
            "fit": {p.uid: session.fit_failure(p) for j in jobs for p in j.iter_pods()},
            "free": _free_gpus(session),
        }
    finally:
        del session.memoise


def _memoised(session: Session) -> dict[str, Any]:
    jobs = session.snapshot.jobs.values()
    return {
        "tasks": {j.key: gang.tasks_to_allocate(session, j) for j in jobs},
        "order": [j.key for j in popped_order(session, None, lambda: eligible_jobs(session, ""))],
        "fit": {p.uid: session.fit_failure(p) for j in jobs for p in j.iter_pods()},
        "free": _free_gpus(session),
    }


def _check(session: Session) -> None:
    assert _memoised(session) == _fresh(session)
    assert _memoised(session) == _fresh(session)  # asked twice: now from the memos


@settings(deadline=None, max_examples=60)
@given(worlds(), st.data())
def test_pending_memos_follow_statements(objects: list[Any], data: st.DataObject) -> None:
    snapshot = build_snapshot(sourced(objects)).snapshot
    config = SchedulerConfig()
    session = Session(snapshot, config)
    for plugin in builtin_plugins(config):
        plugin.on_session_open(session)
    _check(session)
    pods = [pod for group in snapshot.jobs.values() for pod in group.iter_pods()]
    for _ in range(data.draw(st.integers(1, 4))):
        statement = session.statement()
        token = statement.checkpoint()
        for pod in data.draw(st.lists(st.sampled_from(pods), max_size=6, unique_by=id)):
            if pod.status == PodStatus.PENDING:
                where = data.draw(st.integers(0, len(NODES) - 1))
                if data.draw(st.booleans()):
                    statement.allocate(pod, where)
                else:
                    statement.pipeline(pod, where)
            elif pod.status in ACTIVE_USED and pod.status != PodStatus.RELEASING:
                statement.evict(pod, "test")
            assert session.open_ops == statement.operations
            if data.draw(st.booleans()):
                _check(session)
        ending = data.draw(st.sampled_from(["commit", "discard", "rollback"]))
        if ending == "commit":
            statement.commit()
        elif ending == "discard":
            statement.discard()
        else:
            statement.rollback(token)
        assert session.open_ops == statement.operations
        _check(session)
