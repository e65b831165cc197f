"""The pending jobs the actions try, and each leaf queue's of them in job order.

Why: allocate, reclaim and preempt each pop every eligible pending job in queue
order, so each used to check every pending job's eligibility again and sort
every leaf by job order key again: about 700 jobs three times a cycle in a
contended backlog. Within a session a job's verdict and key change only when one
of its pods changes status (a Statement tells the session's status log), and no
job becomes pending. So the sorted leaves are formed once per session
(:func:`leaf_entries`) and later askers re-place only the jobs named in the
status log since.

From cycle to cycle most waiting jobs keep their records and their keys, so a
session starts from the order the last one found (``ClusterSnapshot.carry``):
a job kept there stays at its place while it is still pending, its record is the
snapshot's and it carries the very key it was sorted by; every other pending job is
keyed and put in at its place.
"""

from __future__ import annotations

import bisect
from typing import Any

from scheduler.api.podgroups import PodGroupInfo
from scheduler.framework import gang
from scheduler.framework.session import JOB_KEY, Session

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
        self.rank = rank = {job.key: index for index, job in enumerate(pending)}
        verdicts = _verdicts(session)
        self.by_leaf, kept = _carried_leaves(session, rank, verdicts)
        added: dict[str, list[Entry]] = {}
        job_key = session.job_key
        for job in pending:  # eligible_jobs' pass, over the list just taken
            if job.key in kept or not _verdict(session, verdicts, job):
                continue
            added.setdefault(job.queue, []).append((job_key(job), rank[job.key], job))
        for leaf, entries in added.items():
            entries.sort()
            into = self.by_leaf.get(leaf)
            if into is None:
                self.by_leaf[leaf] = entries
            else:  # two sorted runs: the sort merges them
                into.extend(entries)
                into.sort()
        self.seen = len(session.status_log)
        session.snapshot.carry[_LEAVES] = {
            leaf: [(entry[0], entry[2]) for entry in entries]
            for leaf, entries in self.by_leaf.items()
        }

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


def _carried_leaves(
    session: Session, rank: dict[str, int], verdicts: dict[str, bool]
) -> tuple[dict[str, list[Entry]], set[str]]:
    """The leaves the last session left in ``ClusterSnapshot.carry``, less every job no
    longer pending, with another record or a queue problem now, or whose carried order
    key is not the very one it was sorted by; and the jobs kept.

    A kept job is eligible, and its verdict is noted so: it was when it was sorted, and
    its key still being that tuple means its carried answers were not emptied since
    (:meth:`Session.carried_answer`), so its pods have the statuses its readiness was
    found at. Still sorted: each key is unchanged, and ``rank`` orders any two jobs as
    the last session's did (by creation, then key)."""
    carried: dict[str, list[tuple[Any, PodGroupInfo]]] | None = session.snapshot.carry.get(_LEAVES)
    leaves: dict[str, list[Entry]] = {}
    kept: set[str] = set()
    if carried is None:
        return leaves, kept
    snapshot = session.snapshot
    jobs, problems, answer = snapshot.jobs, snapshot.job_problems, session.carried_answer
    for leaf, carried_entries in carried.items():
        entries: list[Entry] = []
        for key, job in carried_entries:
            name = job.key
            at = rank.get(name)
            if (
                at is None
                or jobs.get(name) is not job
                or problems.get(name)
                or answer(JOB_KEY, job) is not key
            ):
                continue  # placed afresh (with its verdict) if still pending
            kept.add(name)
            verdicts[name] = True
            entries.append((key, at, job))
        if entries:
            leaves[leaf] = entries
    return leaves, kept


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
