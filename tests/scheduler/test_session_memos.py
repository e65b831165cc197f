"""The session's status-following memos answer as a fresh computation would.

Why: the job order keys, the jobs with pending pods and the disruptive actions'
victim candidates are kept for the whole cycle and brought up to date from the
status changes a Statement reports (``Session.status_changed``), instead of
being recomputed from every pod. After any sequence of allocations,
pipelines, evictions, rollbacks and commits, each must equal what a pass over
the whole snapshot gives at that moment.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.actions.disrupting import _Candidates, _disruptable_by_queue
from scheduler.actions.stale_gangs import is_stale, may_be_stale
from scheduler.actions.victims import is_disruptable
from scheduler.api.podgroups import PodGroupInfo
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import open_session
from scheduler.framework import extension_points as ep
from scheduler.framework.session import Session
from tests.kits.histories import NODES, play_statements, small_worlds
from tests.kits.worlds import sourced


def _fresh_key(session: Session, job: PodGroupInfo) -> tuple[Any, ...]:
    return ep.combined_key(session.job_order_fns, job, (job.creation, job.tie))


def _fresh_pending(session: Session) -> list[str]:
    jobs = [j for j in session.snapshot.jobs.values() if j.has_pending()]
    return [j.key for j in sorted(jobs, key=lambda j: (j.creation, j.key))]


def _fresh_candidates(session: Session) -> dict[str, list[str]]:
    by_queue: dict[str, list[str]] = {}
    for group in session.snapshot.jobs.values():
        if group.queue in session.snapshot.queues.queues and is_disruptable(group):
            by_queue.setdefault(group.queue, []).append(group.key)
    return by_queue


def _check(session: Session) -> None:
    for group in session.snapshot.jobs.values():
        assert session.job_key(group) == _fresh_key(session, group)
    assert [j.key for j in session.jobs_with_pending()] == _fresh_pending(session)
    memo = _disruptable_by_queue(session, keyed=True)
    assert list(memo) == list(_fresh_candidates(session))
    assert {q: [j.key for j in js] for q, js in memo.items()} == _fresh_candidates(session)
    candidates = session.memos[_Candidates.MEMO]
    assert isinstance(candidates, _Candidates)
    keys = candidates.take_order_keys(session)
    if keys is not None:  # the keys consolidation sorts by, when it may use them
        assert keys == {q: [_fresh_key(session, j) for j in js] for q, js in memo.items()}
    stale = {
        k for k, j in session.snapshot.jobs.items() if j.stale_since is not None or is_stale(j)
    }
    assert stale <= set(may_be_stale(session))


@settings(deadline=None, max_examples=60)
@given(small_worlds(), st.data())
def test_memos_follow_status_changes(objects: list[Any], data: st.DataObject) -> None:
    session = open_session(build_snapshot(sourced(objects)).snapshot, SchedulerConfig())
    _check(session)
    play_statements(session, data, len(NODES), _check)
