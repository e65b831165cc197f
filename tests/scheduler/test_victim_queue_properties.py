"""Properties of KAI's victim queue (docs/semantics.md §5.2, ``victims.victim_chunks``).

Random leaf queues of running preemptible jobs (gangs and elastic jobs of two
priorities, one to four pods, minimum 0 to all). Over everything the queue
yields:

- every active pod comes exactly once, and each job's chunks are its own
  eviction chunks in order (re-queueing never changes what a job gives);
- a lower-priority job's pods all come before any pod of a higher-priority
  job of the same leaf;
- within one priority, no job that needs a pod gives its last chunk (its
  core) while another job of the leaf still has a chunk to give before its
  own last (KAI re-queues the rest of a job, so a job at its minimum waits
  behind the others' surplus pods).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.actions.victims import reverse_job_order, victim_chunks
from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import PodStatus
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import open_session
from scheduler.framework.session import Session
from tests.kits.worlds import NOW, job, node, queue, sourced

Obj = dict[str, Any]


@st.composite
def worlds(draw: st.DrawFn) -> list[Obj]:
    leaves = draw(st.integers(1, 3))
    objects: list[Obj] = [node("n0", gpus=64)]
    objects += [queue(f"q{i}", gpu_quota=draw(st.integers(0, 8))) for i in range(leaves)]
    for j in range(draw(st.integers(1, 6))):
        pods = draw(st.integers(1, 4))
        objects += job(
            f"j{j}",
            f"q{draw(st.integers(0, leaves - 1))}",
            pods,
            gpus=1,
            states=["Running"] * pods,
            nodes=["n0"] * pods,
            min_member=draw(st.integers(0, pods)),
            priority_class=draw(st.sampled_from(["train", "build-preemptible"])),
        )
    return objects


def _session(objects: list[Obj]) -> Session:
    snapshot = build_snapshot(sourced(objects), now=NOW.timestamp()).snapshot
    return open_session(snapshot, SchedulerConfig())


def _own_chunks(session: Session, victim: PodGroupInfo) -> list[list[str]]:
    remaining = {
        ps.name: [p for p in session.pods_in_task_order(ps) if p.status == PodStatus.RUNNING]
        for ps in victim.pod_sets
    }
    return [[p.name for p in chunk] for chunk in victim.eviction_chunks(remaining)]


@settings(deadline=None, max_examples=60)
@given(worlds())
def test_victim_queue_order(objects: list[Obj]) -> None:
    session = _session(objects)
    by_queue: dict[str, list[PodGroupInfo]] = {}
    for victim in session.snapshot.jobs.values():
        by_queue.setdefault(victim.queue, []).append(victim)
    ordered = {name: reverse_job_order(session, jobs) for name, jobs in by_queue.items()}
    taken = list(victim_chunks(session, ordered))

    names = [p.name for _, chunk in taken for p in chunk]
    running = [p.name for v in session.snapshot.jobs.values() for p in v.iter_pods()]
    assert sorted(names) == sorted(running)
    for victim in session.snapshot.jobs.values():
        given_up = [[p.name for p in chunk] for v, chunk in taken if v.key == victim.key]
        assert given_up == _own_chunks(session, victim)

    for leaf in by_queue:
        steps = [(i, v, chunk) for i, (v, chunk) in enumerate(taken) if v.queue == leaf]
        for i, victim, _ in steps:
            later = [v for k, v, _ in steps if k > i]
            assert all(v.priority >= victim.priority for v in later), leaf
        last = {v.key: k for k, v, _ in steps}
        for i, victim, _ in steps:
            if last[victim.key] != i or victim.requirement_met(lambda ps: 0):
                continue  # not a core: the job's last chunk, of a job needing a pod
            spare_later = [
                v.name
                for k, v, _ in steps
                if k > i and v.priority == victim.priority and k != last[v.key]
            ]
            assert not spare_later, (victim.name, spare_later)
