"""The pending jobs the actions try, and each leaf queue's of them in job order.

Why: allocate, reclaim and preempt each pop every eligible pending job in queue
order, so each used to check every pending job's eligibility again and sort
every leaf by job order key again: about 700 jobs three times a cycle in a
contended backlog. Within a session a job's verdict and key change only when one
of its pods changes status (a Statement tells the session's status log), and no
job becomes pending. So the sorted leaves are formed once per session
(:func:`leaf_entries`) and later askers re-place only the jobs named in the
status log since.
"""

from __future__ import annotations

import bisect
from typing import Any

from scheduler.api.podgroups import PodGroupInfo
from scheduler.framework import gang
from scheduler.framework.session import Session

Entry = tuple[Any, int, PodGroupInfo]
"""A job in a leaf: its job order key, its rank among the session's pending jobs, itself."""


def eligible_jobs(session: Session) -> list[PodGroupInfo]:
    """Jobs an action may try: usable queue, ready gang, something pending.

    Each job's verdict is kept for the session's later calls (each action asks, some
    twice) until one of its pods changes status: the verdict reads only the job, its
    pods' statuses and the snapshot, and the reasons for a refusal were given with it
    (a reason is kept once, so giving them again would change nothing).
    """
    pending = session.jobs_with_pending()
    if not session.memoise:
        return [job for job in pending if _eligible(session, job)]
    verdicts = _verdicts(session)
    return [job for job in pending if _verdict(session, verdicts, job)]


_ELIGIBLE = "pending.eligible"


def _verdicts(session: Session) -> dict[str, bool]:
    """The kept verdicts, less those of jobs whose pods changed status since they were formed."""
    log = session.status_log
    memo: tuple[int, dict[str, bool]] | None = session.memos.get(_ELIGIBLE)
    if memo is None:
        verdicts: dict[str, bool] = {}
    else:
        verdicts = memo[1]
        for key in log[memo[0] :]:
            verdicts.pop(key, None)
    session.memos[_ELIGIBLE] = (len(log), verdicts)
    return verdicts


def _verdict(session: Session, verdicts: dict[str, bool], job: PodGroupInfo) -> bool:
    """The job's kept verdict, formed (and its reasons given) if there is none."""
    ok = verdicts.get(job.key)
    if ok is None:
        ok = verdicts[job.key] = _eligible(session, job)
    return ok


def _eligible(session: Session, job: PodGroupInfo) -> bool:
    """Whether ``job``'s queue is usable and its gang ready; if not, say why."""
    problems = session.snapshot.job_problems.get(job.key)
    if problems:
        for problem in problems:
            session.add_reason(job, problem)
        session.considered.add(job.key)
        return False
    not_ready = gang.ready_problem(session, job)
    if not_ready:
        session.add_reason(job, not_ready)
        session.considered.add(job.key)
        return False
    return True


_LEAVES = "pending.leaves"


class _Leaves:
    """Eligible pending jobs by leaf queue, each sorted by (job order key, rank), as of
    the status log's first ``seen`` entries."""

    def __init__(self, session: Session) -> None:
        pending = session.jobs_with_pending()
        self.rank = {job.key: index for index, job in enumerate(pending)}
        self.by_leaf: dict[str, list[Entry]] = {}
        job_key = session.job_key
        verdicts = _verdicts(session)
        for job in pending:  # eligible_jobs' pass, over the list just taken
            if not _verdict(session, verdicts, job):
                continue
            entries = self.by_leaf.setdefault(job.queue, [])
            entries.append((job_key(job), self.rank[job.key], job))
        for entries in self.by_leaf.values():
            entries.sort()
        self.seen = len(session.status_log)

    def update(self, session: Session) -> None:
        """Re-place the jobs whose pods changed status since the last update: out of
        their leaf, and back in at their new key if still pending and eligible (the
        verdict asked as :func:`eligible_jobs` asks it, reasons included)."""
        log = session.status_log
        if len(log) == self.seen:
            return
        changed = dict.fromkeys(log[self.seen :])
        self.seen = len(log)
        jobs = session.snapshot.jobs
        verdicts = _verdicts(session)
        for key in changed:
            rank = self.rank.get(key)
            if rank is None:
                continue  # not pending at the session's start: never pending in it
            job = jobs[key]
            entries = self.by_leaf.get(job.queue)
            if entries is not None:
                for index, entry in enumerate(entries):
                    if entry[1] == rank:
                        del entries[index]
                        break
            if session.still_pending(job) and _verdict(session, verdicts, job):
                bisect.insort(
                    self.by_leaf.setdefault(job.queue, []), (session.job_key(job), rank, job)
                )


def leaf_entries(session: Session) -> tuple[dict[str, list[Entry]], int]:
    """Each leaf's eligible pending jobs as sorted entries (the caller's own lists, to pop
    from), and a rank above every entry's for jobs pushed later. Memos on only: with them
    off, sort :func:`eligible_jobs` afresh."""
    leaves = session.memos.get(_LEAVES)
    if not isinstance(leaves, _Leaves):
        leaves = session.memos[_LEAVES] = _Leaves(session)
    else:
        leaves.update(session)
    return {leaf: list(entries) for leaf, entries in leaves.by_leaf.items() if entries}, len(
        leaves.rank
    )
