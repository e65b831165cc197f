"""``framework.outcome.final_outcome``: the decision log replayed to one decision per pod.

Why: the scenarios (tests/scheduler/scenarios/test_cycle_outcome.py) reach
the common cases through real actions; these drive Statements by hand to pin
the rarer ones: a pod moved and then moved back where it runs, a pod moved
twice, a Binding pod evicted, a pod placed, evicted and placed again.
"""

from __future__ import annotations

from scheduler.api.pods import PodInfo
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import open_session
from scheduler.framework.outcome import Outcome, final_outcome
from scheduler.framework.session import Session
from tests.kits.worlds import NOW, bind_request, job, node, queue, sourced


def _session() -> Session:
    objects = [
        node("n0", gpus=4),
        node("n1", gpus=4),
        node("n2", gpus=4),
        queue("q", gpu_quota=12),
        job("r", "q", gpus=1, states=["Running"], nodes=["n0"]),
        job("k", "q", gpus=1),
        bind_request("k-0", "n1"),
        job("p", "q", gpus=1),
    ]
    snapshot = build_snapshot(sourced(objects), now=NOW.timestamp()).snapshot
    return open_session(snapshot, SchedulerConfig())


def _pod(session: Session, name: str) -> PodInfo:
    return next(p for p in session.snapshot.pods if p.name == name)


def _node(session: Session, name: str) -> int:
    return list(session.snapshot.nodes.names).index(name)


def _move(session: Session, pod: PodInfo, to: str, action: str) -> None:
    statement = session.statement()
    statement.evict(pod, action, "default/p")
    statement.pipeline(pod, _node(session, to))
    statement.commit()


def _named(outcome: Outcome) -> dict[str, list[tuple[str, ...]]]:
    return {
        "binds": [(p.name, str(n)) for p, n in outcome.binds],
        "pipelined": [(p.name, str(n)) for p, n in outcome.pipelined],
        "evictions": [(p.name, a) for p, a, _ in outcome.evictions],
        "cancelled": [(p.name, a) for p, a, _ in outcome.cancelled],
    }


def test_a_pod_moved_back_where_it_runs_just_stays() -> None:
    session = _session()
    r = _pod(session, "r-0")
    _move(session, r, "n1", "consolidation")
    _move(session, r, "n0", "consolidation")
    assert _named(final_outcome(session.decisions)) == {
        "binds": [],
        "pipelined": [],
        "evictions": [],
        "cancelled": [],
    }


def test_a_pod_moved_twice_is_one_eviction_and_one_reservation() -> None:
    session = _session()
    r = _pod(session, "r-0")
    _move(session, r, "n1", "consolidation")
    _move(session, r, "n2", "reclaim")
    n2 = str(_node(session, "n2"))
    assert _named(final_outcome(session.decisions)) == {
        "binds": [],
        "pipelined": [("r-0", n2)],
        "evictions": [("r-0", "reclaim")],
        "cancelled": [],
    }


def test_a_binding_pod_evicted_is_an_eviction() -> None:
    session = _session()
    statement = session.statement()
    statement.evict(_pod(session, "k-0"), "preempt", "default/p")
    statement.commit()
    assert _named(final_outcome(session.decisions))["evictions"] == [("k-0", "preempt")]


def test_a_pod_placed_evicted_and_placed_again_is_placed_once() -> None:
    session = _session()
    p = _pod(session, "p-0")
    statement = session.statement()
    statement.allocate(p, _node(session, "n1"))
    statement.commit()
    statement = session.statement()
    statement.evict(p, "preempt", "default/k")
    statement.commit()
    assert _named(final_outcome(session.decisions))["cancelled"] == [("p-0", "preempt")]
    statement = session.statement()
    statement.pipeline(p, _node(session, "n2"))
    statement.commit()
    assert _named(final_outcome(session.decisions)) == {
        "binds": [],
        "pipelined": [("p-0", str(_node(session, "n2")))],
        "evictions": [],
        "cancelled": [],
    }


def test_without_evictions_the_log_is_the_outcome() -> None:
    session = _session()
    statement = session.statement()
    statement.allocate(_pod(session, "p-0"), _node(session, "n2"))
    statement.commit()
    outcome = final_outcome(session.decisions)
    assert outcome.binds == session.decisions.binds
    assert (outcome.pipelined, outcome.evictions, outcome.cancelled) == ([], [], [])
