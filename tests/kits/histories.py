"""Random statement histories over a session, for the tests that hold memos to fresh passes.

Why: the session's memos are only valid if every status change goes through a Statement
and every ending (commit, discard, rollback to a checkpoint) is followed. One driver
plays such histories, so each memo test states only what it compares.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from scheduler.api.pods import ACTIVE_USED, PodStatus
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from tests.kits.worlds import job, node, queue

NODES = ("n0", "n1", "n2")


@st.composite
def small_worlds(draw: st.DrawFn, *, gpus: bool = False, quotas: bool = False) -> list[Any]:
    """Two queues, three 8-GPU nodes and up to eight gangs, some running; with ``gpus``
    each pod asks 1-6 GPUs, so placements fill nodes and fit failures follow the state;
    with ``quotas`` each queue has a GPU quota of 0-16 and a weight (else no quota), so
    fair shares, over-quota checks and reclaim's rules follow the allocations."""
    if quotas:
        objects: list[Any] = [
            queue(
                name,
                gpu_quota=draw(st.sampled_from([0, 4, 8, 12, 16])),
                gpu_weight=draw(st.sampled_from([0, 1, 2])),
            )
            for name in ("qa", "qb")
        ]
    else:
        objects = [queue("qa", gpu_quota=-1), queue("qb", gpu_quota=-1)]
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
                gpus=draw(st.integers(1, 6)) if gpus else 0,
                states=states,
                nodes=[None if s == "Pending" else draw(st.sampled_from(NODES)) for s in states],
                min_member=draw(st.integers(1, size)),
                preemptibility=draw(st.sampled_from(["preemptible", "non-preemptible"])),
            )
        )
    return objects


def play_statements(
    session: Session,
    data: st.DataObject,
    nodes: int,
    check: Callable[[Session], None],
    *,
    after_each: Callable[[Statement], None] | None = None,
) -> None:
    """One to four statements of random allocations, pipelines and evictions on ``nodes``
    nodes, each ended by a commit, a discard or a rollback; ``check`` runs at random
    points and after every ending, ``after_each`` after every operation and ending."""
    pods = [pod for group in session.snapshot.jobs.values() for pod in group.iter_pods()]
    for _ in range(data.draw(st.integers(1, 4))):
        statement = session.statement()
        token = statement.checkpoint()
        for pod in data.draw(st.lists(st.sampled_from(pods), max_size=6, unique_by=id)):
            if pod.status == PodStatus.PENDING:
                where = data.draw(st.integers(0, nodes - 1))
                if data.draw(st.booleans()):
                    statement.allocate(pod, where)
                else:
                    statement.pipeline(pod, where)
            elif pod.status in ACTIVE_USED and pod.status != PodStatus.RELEASING:
                statement.evict(pod, "test")
            if after_each is not None:
                after_each(statement)
            if data.draw(st.booleans()):
                check(session)
        ending = data.draw(st.sampled_from(["commit", "discard", "rollback"]))
        if ending == "commit":
            statement.commit()
        elif ending == "discard":
            statement.discard()
        else:
            statement.rollback(token)
        if after_each is not None:
            after_each(statement)
        check(session)
