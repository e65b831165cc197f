"""Per-node tallies of placed pods stay exact through a session's moves and rollbacks.

The inter-pod affinity plugin never recounts: it moves its tallies on the
session's allocate/deallocate events. Property: after any sequence of
Statement operations (allocate, pipeline, evict, rollback to a checkpoint,
commit), every tally equals a recount of the pods as the session now has
them; and a tally first built midway agrees with one built at open and moved
since. Without the events (or with an inexact inverse) the counts drift and
the property fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scheduler.api.labels import Selector
from scheduler.api.pods import PodInfo, PodStatus
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import open_session
from scheduler.framework.domains import domains
from scheduler.plugins.pod_tallies import PodTallies, Tally
from tests.kits.worlds import job, node, pod, queue, sourced

APPS = ("a", "b", "c")
SETTLED = (PodStatus.RUNNING, PodStatus.BOUND, PodStatus.BINDING)
SELECTORS = [
    Selector((("app", "In", ("a",)),)),
    Selector((("app", "In", ("a", "b")),)),
    Selector((("app", "Exists", ()),)),
    Selector((("app", "NotIn", ("a",)),)),
    Selector(()),
]


def _world(running: list[tuple[str, int, str]], pending: list[str]) -> list[Any]:
    objects: list[Any] = [queue("q", gpu_quota=-1)]
    objects += [node(f"n{i}", cpu="64", labels={"zone": f"z{i % 2}"}) for i in range(4)]
    for i, (app, where, state) in enumerate(running):
        objects += pod(f"r{i}", state=state, node=f"n{where}", labels={"app": app})
    for i, app in enumerate(pending):
        objects += job(f"p{i}", "q", 1, labels={"app": app})
    return objects


def selector_matcher(selector: Selector) -> Callable[[PodInfo], bool]:
    return lambda p: selector.matches(p.labels)


def _recount(pods: list[PodInfo], tallies: PodTallies, selector: Selector, skip: bool) -> list[int]:
    counts = [0] * 4
    for p in pods:
        if tallies.counted(p, skip_releasing=skip) and selector.matches(p.labels):
            counts[p.node] += 1
    return counts


ops = st.lists(
    st.tuples(
        st.sampled_from(["allocate", "pipeline", "evict", "checkpoint", "rollback", "commit"]),
        st.integers(0, 20),
        st.integers(0, 3),
    ),
    max_size=25,
)


@given(
    running=st.lists(
        st.tuples(
            st.sampled_from(APPS), st.integers(0, 3), st.sampled_from(["Running", "Releasing"])
        ),
        max_size=8,
    ),
    pending=st.lists(st.sampled_from(APPS), max_size=6),
    steps=ops,
    late=st.integers(0, 25),
)
def test_tallies_follow_every_move_exactly(
    running: list[tuple[str, int, str]],
    pending: list[str],
    steps: list[tuple[str, int, int]],
    late: int,
) -> None:
    snapshot = build_snapshot(sourced(_world(running, pending))).snapshot
    session = open_session(snapshot, SchedulerConfig(actions=("allocate",)))
    pods = snapshot.pods
    tallies = PodTallies(pods, len(snapshot.nodes), {a for s in SELECTORS for a in s.anchors()})
    made: list[tuple[Tally, Selector, bool]] = []

    def add_tallies(tag: str) -> None:
        for i, selector in enumerate(SELECTORS):
            for skip in (False, True):
                tally = tallies.tally(
                    (tag, i, skip),
                    selector_matcher(selector),
                    selector,
                    skip_releasing=skip,
                )
                made.append((tally, selector, skip))

    add_tallies("open")
    session.add_event_handlers(lambda p: tallies.moved(p, 1), lambda p: tallies.moved(p, -1))
    statement = session.statement()
    marks: list[int] = []
    for step, (op, which, where) in enumerate(steps):
        if step == late:
            add_tallies("late")
        if op in ("allocate", "pipeline"):
            waiting = [p for p in pods if p.status == PodStatus.PENDING]
            if waiting:
                target = waiting[which % len(waiting)]
                getattr(statement, op)(target, where)
        elif op == "evict":
            # running, or bound by a committed statement (a statement's commit would
            # still bind a pod it allocated and then evicted itself; actions never do)
            placed = [p for p in pods if p.status in SETTLED]
            if placed:
                statement.evict(placed[which % len(placed)], "test")
        elif op == "checkpoint":
            marks.append(statement.checkpoint())
        elif op == "rollback" and marks:
            statement.rollback(marks.pop())
        elif op == "commit":
            statement.commit()
            marks.clear()
        for tally, selector, skip in made:
            assert list(tally.per_node) == _recount(pods, tallies, selector, skip)
            assert tally.total == sum(tally.per_node)


def test_domains_sum_per_node_counts_over_each_domain() -> None:
    snapshot = build_snapshot(sourced(_world([], []))).snapshot
    zones = domains(snapshot.nodes, "zone")
    assert not zones.identity
    assert zones.size == 2
    assert list(zones.per_node(np.array([1, 2, 0, 5]))) == [1, 7, 1, 7]
    missing = domains(snapshot.nodes, "rack")
    assert missing.size == 0
    assert not missing.has_key.any()
    assert list(missing.per_node(np.array([1, 2, 0, 5]))) == [0, 0, 0, 0]
