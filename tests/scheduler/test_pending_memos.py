"""The pending-work memos answer as a fresh computation would, after any statement history.

Why: with hundreds of gangs waiting, every action asks the same questions of
every pending gang in a cycle. The answers are kept while the state they read
is unchanged: per job until one of its pods changes status (tasks to
allocate), per committed state (the pop order, fit-failure sentences, the
cluster's free GPUs and the sentence for a gang asking more), per queue until its
accounting moves (queue order keys, reclaim's gate and queue filter, the capacity check).
After any sequence of allocations, pipelines, evictions, rollbacks and
commits, each memoised answer must equal the one computed afresh
(``Session.memoise`` off) at that moment.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.actions.disrupting import _FREE_GPUS, _free_gpus, _gpus_short
from scheduler.actions.ordering import JobQueue, popped_order
from scheduler.actions.pending import eligible_jobs
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import open_session
from scheduler.framework import gang
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from tests.kits.histories import NODES, play_statements, small_worlds
from tests.kits.worlds import sourced


def _fresh(session: Session) -> dict[str, Any]:
    session.memoise = False
    try:
        jobs = session.snapshot.jobs.values()
        queue = JobQueue(session, eligible_jobs(session))
        order = []
        while (popped := queue.pop()) is not None:
            order.append(popped.key)
        return {
            "tasks": {j.key: gang.tasks_to_allocate(session, j) for j in jobs},
            "ready": {j.key: gang.ready_problem(session, j) for j in jobs},
            "order": order,
            "fit": {p.uid: session.fit_failure(p) for j in jobs for p in j.iter_pods()},
            "free": _free_gpus(session, session.settled_memo(_FREE_GPUS)),
            **_per_job_gates(session),
        }
    finally:
        del session.memoise


def _memoised(session: Session) -> dict[str, Any]:
    jobs = session.snapshot.jobs.values()
    return {
        "tasks": {j.key: gang.tasks_to_allocate(session, j) for j in jobs},
        "ready": {j.key: gang.ready_problem(session, j) for j in jobs},
        "order": [j.key for j in popped_order(session, None)],
        "fit": {p.uid: session.fit_failure(p) for j in jobs for p in j.iter_pods()},
        "free": _free_gpus(session, session.settled_memo(_FREE_GPUS)),
        **_per_job_gates(session),
    }


def _per_job_gates(session: Session) -> dict[str, Any]:
    """Consolidation's GPU sentence and reclaim's gate for every job with tasks to place
    (both memoised by what they read: the request, the queue's accounting, the free GPUs)."""
    tasks = {j.key: gang.tasks_to_allocate(session, j) for j in session.snapshot.jobs.values()}
    jobs = [j for j in session.snapshot.jobs.values() if tasks[j.key]]
    queues = list(session.snapshot.queues.queues)
    gate = {j.key: session.reclaim_problem(j, tasks[j.key]) for j in jobs}
    return {
        "short": {j.key: _gpus_short(session, j) for j in jobs},
        # the queue capacity check, kept per (leaf, preemptible, request) until a shift
        "capacity": {j.key: session.job_capacity_problem(j, tasks[j.key]) for j in jobs},
        "gate": gate,
        # asked after the gate, as reclaim does (the gate copies the queues' accounting)
        "gives": {
            (j.key, q): session.may_take_from_queue("reclaim", j, q) for j in jobs for q in queues
        },
    }


def _check(session: Session) -> None:
    assert _memoised(session) == _fresh(session)
    assert _memoised(session) == _fresh(session)  # asked twice: now from the memos


@settings(deadline=None, max_examples=60)
@given(st.booleans().flatmap(lambda q: small_worlds(gpus=True, quotas=q)), st.data())
def test_pending_memos_follow_statements(objects: list[Any], data: st.DataObject) -> None:
    session = open_session(build_snapshot(sourced(objects)).snapshot, SchedulerConfig())
    _check(session)

    def open_ops_follow(statement: Statement) -> None:
        assert session.open_ops == statement.operations

    play_statements(session, data, len(NODES), _check, after_each=open_ops_follow)
