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

from scheduler.actions.disrupting import _disruptable_by_queue
from scheduler.actions.victims import is_disruptable
from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import ACTIVE_USED, PodStatus
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.framework import extension_points as ep
from scheduler.framework.session import Session
from scheduler.plugins import builtin_plugins
from tests.kits.worlds import job, node, queue, sourced

NODES = ("n0", "n1", "n2")


@st.composite
def worlds(draw: st.DrawFn) -> list[Any]:
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
                states=states,
                nodes=[None if s == "Pending" else draw(st.sampled_from(NODES)) for s in states],
                min_member=draw(st.integers(1, size)),
                preemptibility=draw(st.sampled_from(["preemptible", "non-preemptible"])),
            )
        )
    return objects


def _fresh_key(session: Session, job: PodGroupInfo) -> tuple[Any, ...]:
    return ep.combined_key(session.job_order_fns, job, (job.creation, job.uid))


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
    memo = _disruptable_by_queue(session)
    assert list(memo) == list(_fresh_candidates(session))
    assert {q: [j.key for j in js] for q, js in memo.items()} == _fresh_candidates(session)


@settings(deadline=None, max_examples=60)
@given(worlds(), st.data())
def test_memos_follow_status_changes(objects: list[Any], data: st.DataObject) -> None:
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
            if data.draw(st.booleans()):
                _check(session)
        ending = data.draw(st.sampled_from(["commit", "discard", "rollback"]))
        if ending == "commit":
            statement.commit()
        elif ending == "discard":
            statement.discard()
        else:
            statement.rollback(token)
        _check(session)
