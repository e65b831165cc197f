"""The three disruptive actions: preempt, reclaim and consolidation (kai-semantics §5.2).

Why: each pops pending, ready gangs in queue order like allocate, chooses who
may be a victim, and hands the rest to the shared solver. What differs is
small and stated here: preempt takes only strictly lower-priority preemptible
jobs of the same leaf queue; reclaim takes preemptible jobs of other queues,
worst-served queue first, and only for a job that stays within its queue's
fair share; consolidation takes any preemptible job but only if every victim
lands somewhere else (pure defragmentation).
"""

from __future__ import annotations

from scheduler.actions.allocate import eligible_jobs
from scheduler.actions.ordering import JobQueue
from scheduler.actions.solver import solve
from scheduler.actions.victims import is_disruptable, reverse_job_order
from scheduler.api.podgroups import PodGroupInfo
from scheduler.framework import gang
from scheduler.framework.session import Session


def _pending_in_order(session: Session, action: str) -> list[PodGroupInfo]:
    depth = session.config.queue_depth_per_action.get(action)
    queue = JobQueue(session, eligible_jobs(session, action), depth)
    jobs = []
    while (job := queue.pop()) is not None:
        jobs.append(job)
    return jobs


class PreemptAction:
    """Within one leaf queue, a higher-priority gang displaces lower-priority preemptible jobs."""

    name = "preempt"

    def execute(self, session: Session) -> None:
        for job in _pending_in_order(session, self.name):
            if not job.has_pending():
                continue
            tasks = gang.tasks_to_allocate(session, job)
            if not job.preemptible:
                problem = session.job_capacity_problem(job, tasks)
                if problem:
                    continue
            victims = [
                other
                for other in session.snapshot.jobs.values()
                if other.queue == job.queue
                and other.key != job.key
                and other.priority < job.priority
                and is_disruptable(other)
                and session.may_be_victim(self.name, job, other)
            ]
            if not victims:
                continue
            session.considered.add(job.key)
            solve(session, job, reverse_job_order(session, victims), self.name)


class ReclaimAction:
    """A queue under its fair share takes resources back from queues above theirs."""

    name = "reclaim"

    def execute(self, session: Session) -> None:
        for job in _pending_in_order(session, self.name):
            if not job.has_pending():
                continue
            tasks = gang.tasks_to_allocate(session, job)
            if not tasks or session.reclaim_problem(job, tasks):
                continue
            by_queue: dict[str, list[PodGroupInfo]] = {}
            for other in session.snapshot.jobs.values():
                if (
                    other.queue != job.queue
                    and other.queue in session.snapshot.queues.queues
                    and is_disruptable(other)
                    and session.may_be_victim(self.name, job, other)
                ):
                    by_queue.setdefault(other.queue, []).append(other)
            if not by_queue:
                continue
            session.considered.add(job.key)
            ordered = {name: reverse_job_order(session, jobs) for name, jobs in by_queue.items()}
            solve(session, job, session.victim_order(ordered), self.name)


class ConsolidationAction:
    """Move running preemptible pods so a pending gang fits; every moved pod must land again."""

    name = "consolidation"

    def execute(self, session: Session) -> None:
        limit = session.config.max_consolidation_preemptees
        if limit == 0:
            return
        if session.config.gpu_placement == "spread" or session.config.cpu_placement == "spread":
            return  # defragmenting against a spread strategy would undo it (KAI's operator default)
        for job in _pending_in_order(session, self.name):
            if not job.has_pending() or not job.preemptible:
                continue
            victims = [
                other
                for other in session.snapshot.jobs.values()
                if other.key != job.key and is_disruptable(other)
            ]
            if not victims:
                continue
            session.considered.add(job.key)
            max_chunks = 64 if limit < 0 else limit + 1
            solve(
                session,
                job,
                reverse_job_order(session, victims),
                self.name,
                must_replace_all=True,
                max_chunks=max_chunks,
            )
