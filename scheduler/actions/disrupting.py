"""The three disruptive actions: preempt, reclaim and consolidation (docs/semantics.md §5.2).

Why: each pops pending, ready gangs in queue order like allocate, chooses who
may be a victim, and hands the rest to the shared solver. What differs is
small and stated here: preempt takes only strictly lower-priority preemptible
jobs of the same leaf queue; reclaim takes preemptible jobs of other queues,
worst-served queue first, and only for a job that stays within its queue's
fair share; consolidation takes any preemptible job but only if every victim
lands somewhere else (pure defragmentation), and only for a gang that does not
fit as it is (one that fits is allocate's: KAI pipelines it here, see
docs/semantics.md §5.2).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from operator import attrgetter
from typing import Any

import numpy as np

from crds.meta import rfc3339
from crds.podgroup import REASON_NON_PREEMPTIBLE_OVER_QUOTA, REASON_PREEMPTION_DELAY_NOT_ELAPSED
from scheduler.actions.ordering import popped_order
from scheduler.actions.pending import eligible_jobs
from scheduler.actions.signatures import FailedJobs, exact, signature
from scheduler.actions.solver import solve
from scheduler.actions.victims import (
    is_disruptable,
    reverse_job_order,
    reverse_job_order_by,
    victim_chunks,
)
from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import PodInfo, PodStatus
from scheduler.api.resources import GPU, format_amount
from scheduler.framework import gang
from scheduler.framework.session import Session
from scheduler.framework.topology_placement import place_tasks

JobKey = tuple[Any, ...]

NON_PREEMPTIBLE_OVER_QUOTA = REASON_NON_PREEMPTIBLE_OVER_QUOTA
FITS_AS_IS = "fits without moving anyone; allocate places it"


def _disruptable_by_queue(
    session: Session, *, keyed: bool = False
) -> dict[str, list[PodGroupInfo]]:
    """Possible victims grouped by leaf queue, each in snapshot order, at an action's start.

    Kept for the session's later disruptive actions (:class:`_Candidates`). With
    ``keyed`` (an action about to sort every candidate), the first pass over every job
    also forms each candidate's job order key while its pods are fresh in the CPU cache.
    """
    memo = session.memos.get(_Candidates.MEMO)
    if not isinstance(memo, _Candidates):
        memo = session.memos[_Candidates.MEMO] = _Candidates(session, keyed)
    return memo.current(session)


class _Candidates:
    """Who may be a victim, by leaf queue, as of the session's latest status change.

    Whether a job may be a victim (:func:`is_disruptable`) changes only with its
    pods' statuses, so a later action checks only the jobs named in the
    session's status log since the last pass. A job that changed sides is taken
    out of its queue's list, or put in at its place in snapshot order, so the
    lists stay what a pass over every job would give (a commit moves a few jobs:
    its victims out, its preemptor in).
    """

    MEMO = "disrupting.candidates"

    def __init__(self, session: Session, keyed: bool) -> None:
        self.by_queue, self.order_keys = _fresh_candidates(session, keyed)
        self.seen = self.keyed_at = len(session.status_log)
        self.keys: set[str] | None = None  # the candidates' keys, formed at the first check
        self.position: dict[str, int] | None = None  # job -> its place in snapshot order

    def take_order_keys(self, session: Session) -> dict[str, list[JobKey]] | None:
        """The candidates' job order keys by queue, in ``by_queue``'s order, if formed by
        the last pass and no status has changed since (the session's memo would give the
        same); handed over once, so that they go with their reader, not with the session."""
        keys, self.order_keys = self.order_keys, None
        return keys if len(session.status_log) == self.keyed_at else None

    def current(self, session: Session) -> dict[str, list[PodGroupInfo]]:
        log = session.status_log
        if len(log) > self.seen:
            changed = set(log[self.seen :])
            self.seen = len(log)
            if self.keys is None:
                self.keys = {job.key for jobs in self.by_queue.values() for job in jobs}
            jobs, leaves = session.snapshot.jobs, _leaf_queues(session)
            moved: list[tuple[PodGroupInfo, bool]] = []
            for key in changed:
                job = jobs.get(key)
                if job is None:
                    continue  # no job of that name: never a candidate
                now = job.queue in leaves and is_disruptable(job)
                if now != (key in self.keys):
                    moved.append((job, now))
            if moved:
                self._move(session, moved)
        return dict(self.by_queue)

    def _move(self, session: Session, moved: list[tuple[PodGroupInfo, bool]]) -> None:
        """Take each job that stopped being a candidate out of its queue's list and put
        each new one in at its place in snapshot order; the queues come in the order of
        their first candidate, as in a fresh pass. The lists are replaced, not changed in
        place: an earlier action's copy stays as it was given."""
        assert self.keys is not None
        if self.position is None:
            self.position = {key: index for index, key in enumerate(session.snapshot.jobs)}
        position = self.position
        lists: dict[str, list[PodGroupInfo]] = {}
        for job, now in moved:
            queue = job.queue
            found = lists.get(queue)
            if found is None:
                found = lists[queue] = list(self.by_queue.get(queue, ()))
            if now:
                bisect.insort(found, job, key=lambda other: position[other.key])
                self.keys.add(job.key)
            else:
                del found[next(i for i, other in enumerate(found) if other is job)]
                self.keys.discard(job.key)
        kept = [(queue, found) for queue, found in {**self.by_queue, **lists}.items() if found]
        kept.sort(key=lambda item: position[item[1][0].key])  # by each's first candidate
        self.by_queue = dict(kept)
        self.order_keys = None  # formed for the lists as they were: the session's memo serves


def _leaf_queues(session: Session) -> frozenset[str]:
    """The queues whose jobs may be victims: KAI's victim queues take only jobs of leaf
    queues. A job naming a parent queue counts in its queue's usage (the proportion
    plugin) but is never moved, as it is never scheduled."""
    queues = session.snapshot.queues.queues
    return frozenset([name for name, queue in queues.items() if queue.is_leaf])


def _fresh_candidates(
    session: Session, keyed: bool
) -> tuple[dict[str, list[PodGroupInfo]], dict[str, list[JobKey]] | None]:
    """One pass over every job: the possible victims by leaf queue, in snapshot order.

    ``keyed``: each candidate's job order key is formed as it is found, while its pods
    are in the CPU cache (cheaper than a second pass over 80,000 cold jobs), and
    returned by queue in the same order; the session's memo is left to the few jobs
    read one by one later.
    """
    by_queue: dict[str, list[PodGroupInfo]] = {}
    keys: dict[str, list[JobKey]] | None = {} if keyed else None
    leaves = _leaf_queues(session)
    key_fn = session.unmemoised_job_key()
    for other in session.snapshot.jobs.values():
        if other.queue in leaves and is_disruptable(other):
            found = by_queue.get(other.queue)
            if found is None:
                found = by_queue[other.queue] = []
                if keys is not None:
                    keys[other.queue] = []
            found.append(other)
            if keys is not None:
                keys[other.queue].append(key_fn(other, other.creation, other.tie))
    return by_queue, keys


def _pending_in_order(session: Session, action: str) -> list[PodGroupInfo]:
    """Eligible jobs in queue order, less those whose preemption delay has not passed.

    The order and the reasons given on the way are the same for every action
    while nothing is committed, so an order popped earlier in the cycle is
    reused (:func:`popped_order`).
    """
    depth = session.config.queue_depth_per_action.get(action)
    jobs = []
    for job in popped_order(session, depth):
        if not _delayed(session, job):
            jobs.append(job)
    return jobs


def _delayed(session: Session, job: PodGroupInfo) -> bool:
    """Refuse ``job`` (and say so) while its preemption delay has not passed."""
    reason = _delay_reason(session, job)
    if reason is not None:
        _refuse(session, job, reason)
    return reason is not None


def _delay_reason(session: Session, job: PodGroupInfo) -> str | None:
    """Why ``job`` may not disrupt anyone yet (its preemption delay), or None."""
    end = preemption_delay_end(job)
    if end is None or session.snapshot.now >= end:
        return None
    return (
        f"{REASON_PREEMPTION_DELAY_NOT_ELAPSED}: within its preemption delay"
        f" ({job.preemption_delay:g}s), it may not evict others before {rfc3339(end)}"
    )


def preemption_delay_end(job: PodGroupInfo) -> float | None:
    """When ``job`` may first trigger evictions (``spec.preemptionDelay`` after the later of its
    creation and its last eviction), or None without a positive delay (KAI v0.17)."""
    if job.preemption_delay is None or job.preemption_delay <= 0:
        return None
    anchor = max(job.creation, job.last_eviction or job.creation)
    return anchor + job.preemption_delay


_SHOWN_PROTECTED = 3  # jobs named in a "may not be evicted" reason


def _no_victim_reason(
    session: Session, action: str, job: PodGroupInfo, jobs: list[PodGroupInfo], head: str
) -> str | None:
    """``head`` and why the victim filters refuse ``jobs`` (the few first named), or None
    when none of them is disruptable: the filters then are not why there is no victim.

    Called only on a refusal, so the candidates are looked at a second time here.
    """
    why = [
        refusal
        for other in jobs
        if is_disruptable(other)
        and (refusal := session.victim_refusal(action, job, other)) is not None
    ]
    if not why:
        return None
    more = len(why) - _SHOWN_PROTECTED
    tail = f"; and {more} more" if more > 0 else ""
    return f"{action}: {head}: {'; '.join(why[:_SHOWN_PROTECTED])}{tail}"


def _refuse(session: Session, job: PodGroupInfo, reason: str) -> None:
    """The job was a candidate for the action but may not disrupt anyone: say why."""
    session.considered.add(job.key)
    session.add_reason(job, reason)


def _try(
    session: Session,
    job: PodGroupInfo,
    tasks: list[PodInfo],
    key: tuple[object, ...],
    failed: FailedJobs,
    action: str,
    victims: Iterable[tuple[PodGroupInfo, list[PodInfo]]],
    *,
    must_replace_all: bool = False,
    max_chunks: int | None = None,
) -> bool:
    """Solve for ``job`` unless a no harder job failed already; a failure becomes a reason.

    True when a scenario was committed."""
    session.considered.add(job.key)
    skip = failed.skip_reason(key, tasks)
    if skip is not None:
        session.add_reason(job, skip)
        return False
    problem = solve(
        session, job, victims, action, must_replace_all=must_replace_all, max_chunks=max_chunks
    )
    if problem is not None:
        reason = f"{action}: {problem}"
        failed.record(key, tasks, reason)
        session.add_reason(job, reason)
        return False
    return True


def _fits_as_is(session: Session, job: PodGroupInfo, tasks: list[PodInfo]) -> bool:
    """The gang could be placed now without evicting anyone (tried, then rolled back)."""
    statement = session.statement()
    fits = place_tasks(session, statement, job, tasks, pipeline_only=True, explain=False) is None
    statement.discard()
    return fits


def _moved(job: PodGroupInfo) -> bool:
    """A pod of the job was pipelined this cycle (a snapshot has none): it is already moving.

    Consolidation does not move it again: a second move frees nothing a first
    did not, and, since moved jobs keep their place at the head of the victim
    order, it would spend the preemptee cap of every later gang on them.
    """
    return any(pod.status == PodStatus.PIPELINED for pod in job.iter_pods())


def _gpus_short(session: Session, job: PodGroupInfo) -> str | None:
    """Why moving pods cannot make room for the job's tasks to allocate: the GPUs they
    need at least exceed what the cluster has free at most, free parts of shared
    devices included; else None.

    Need: whole GPUs, and each shared request's portion on its devices (a memory
    request: its portion on the largest device memory; MIG slices are not counted).
    Free: whole free or releasing devices, and on each shared device what its
    members do not hold or are giving back. Moves conserve that total, so a job
    asking more can never fit (KAI's check, which counts the same parts).
    """
    return _FreeGpus(session).short(session, job)


class _FreeGpus:
    """The cluster's free GPUs as the session's committed state has them, for
    :func:`_gpus_short`: formed once for a pass that commits nothing (consolidation's
    :meth:`~ConsolidationAction._refuses_all` asks it of every pending gang)."""

    def __init__(self, session: Session) -> None:
        self.memo = session.settled_memo(_FREE_GPUS)
        self.whole, self.parts, self.largest = _free_gpus(session, self.memo)
        self.need_memo = f"{_GPU_NEED}@{self.largest}"  # carried while the devices stay

    def short(self, session: Session, job: PodGroupInfo) -> str | None:
        """:func:`_gpus_short` of ``job``."""
        need = session.carried_memo(
            self.need_memo, job, _job_gpus_needed, session, job, self.largest
        )
        whole, parts = self.whole, self.parts
        if need == 0 or need <= whole + parts:
            return None
        memo = self.memo
        sentences: dict[int, str] | None = (
            memo.setdefault("short", {}) if memo is not None else None
        )
        if sentences is not None and need in sentences:
            return sentences[need]  # the same sentence for every gang asking as much
        sentence = (
            f"asks for {format_amount(GPU, need)} GPUs but the cluster has only"
            f" {format_amount(GPU, whole + parts)} free ({format_amount(GPU, whole)} on whole"
            f" devices, {format_amount(GPU, parts)} on shared ones); moving pods frees none"
        )
        if sentences is not None:
            sentences[need] = sentence
        return sentence


_GPU_NEED = "disrupting.gpu_need"  # of the first task choice, on the largest device memory


def _job_gpus_needed(session: Session, job: PodGroupInfo, largest: int) -> int:
    """:func:`_gpus_needed` of the job's tasks to allocate."""
    return _gpus_needed(gang.tasks_to_allocate(session, job), largest)


def _gpus_needed(tasks: list[PodInfo], largest: int) -> int:
    """Whole GPUs plus each shared request's portion on the largest device (thousandths)."""
    need = 0
    for task in tasks:
        need += int(task.request[GPU])
        if task.gpu_share is not None:
            need += task.gpu_share.devices * task.gpu_share.portion_on(largest)
    return need


_FREE_GPUS = "disrupting.free_gpus"


def _free_gpus(session: Session, memo: dict[Any, Any] | None) -> tuple[int, int, int]:
    """Free GPUs on whole devices and on shared ones (thousandths) on the nodes that may
    take pods (KAI counts only nodes passing its node check: not cordoned, Ready, no
    pressure), and the largest device memory; kept in ``memo`` (the session's settled
    memo for them) while the committed state stays the same (asked once per pending gang)."""
    if memo is not None and "totals" in memo:
        return memo["totals"]  # type: ignore[no-any-return]
    nodes = session.snapshot.nodes
    shared = nodes.shared
    largest = int(shared.memory.max()) if shared.memory.size else 0
    usable = nodes.schedulable
    whole = int(np.maximum(nodes.free[GPU][usable], 0).sum())
    totals = (whole, shared.free_parts(usable), largest)
    if memo is not None:
        memo["totals"] = totals
    return totals


class PreemptAction:
    """Within one leaf queue, a higher-priority gang displaces lower-priority preemptible jobs."""

    name = "preempt"

    def execute(self, session: Session) -> None:
        failed = FailedJobs()
        candidates = _disruptable_by_queue(session)
        lowest: dict[str, int | None] = {}  # leaf queue -> its candidates' lowest priority
        none_lower: dict[str, str] = {}  # leaf queue -> the refusal for want of victims
        for job in _pending_in_order(session, self.name):
            if not session.still_pending(job):
                continue
            if not job.preemptible:
                # Only the deserved-quota part decides here (KAI's check before solving):
                # victims are preemptible and never lower it, while evicting them does
                # lower the queue's usage against its limit (checked in simulation).
                problem = session.job_capacity_problem(job, gang.tasks_to_allocate(session, job))
                if problem and problem.startswith(NON_PREEMPTIBLE_OVER_QUOTA):
                    _refuse(session, job, problem)
                    continue
            if job.queue not in lowest:
                found = candidates.get(job.queue, ())
                lowest[job.queue] = min(map(attrgetter("priority"), found), default=None)
            floor = lowest[job.queue]  # none lower than the job: no victim, without the pass
            victims = (
                [
                    other
                    for other in candidates.get(job.queue, ())
                    if other.key != job.key
                    and other.priority < job.priority
                    and is_disruptable(other)
                    and session.may_be_victim(self.name, job, other)
                ]
                if floor is not None and floor < job.priority
                else []
            )
            if not victims:
                lower = (
                    [
                        other
                        for other in candidates.get(job.queue, ())
                        if other.key != job.key and other.priority < job.priority
                    ]
                    if floor is not None and floor < job.priority
                    else []
                )
                reason = (
                    _no_victim_reason(
                        session,
                        self.name,
                        job,
                        lower,
                        f"no running lower-priority preemptible job in queue {job.queue}"
                        " may be evicted",
                    )
                    if lower
                    else none_lower.get(job.queue)
                )
                if reason is None:
                    reason = none_lower[job.queue] = (
                        f"{self.name}: no running lower-priority preemptible job in queue"
                        f" {job.queue} may be evicted"
                    )
                _refuse(session, job, reason)
                continue
            tasks = gang.tasks_to_allocate(session, job)
            key = (job.queue, signature(job, tasks))
            chunks = victim_chunks(session, {job.queue: reverse_job_order(session, victims)})
            _try(session, job, tasks, key, failed, self.name, chunks)


class ReclaimAction:
    """A queue under its fair share takes resources back from queues above theirs."""

    name = "reclaim"

    def execute(self, session: Session) -> None:
        failed = FailedJobs()
        candidates = _disruptable_by_queue(session)
        # gate -> the refusal saying it: one string for every gang refused alike, which
        # the report and the simulator then compare by identity
        gates: dict[str, str] = {}
        for job in _pending_in_order(session, self.name):
            if not session.still_pending(job):
                continue
            tasks = gang.tasks_to_allocate(session, job)
            if not tasks:
                continue
            gate = session.reclaim_problem(job, tasks)
            if gate:
                said = gates.get(gate)
                if said is None:
                    said = gates[gate] = f"{self.name}: {gate}"
                _refuse(session, job, said)
                continue
            key = (job.queue, signature(job, tasks))
            skip = failed.skip_reason(key, tasks)
            if skip is not None:
                _refuse(session, job, skip)
                continue
            by_queue: dict[str, list[PodGroupInfo]] = {}
            giving: list[str] = []  # queues the queue filter lets give up work to this job
            for queue_name, jobs in candidates.items():
                if queue_name == job.queue or not session.may_take_from_queue(
                    self.name, job, queue_name
                ):
                    continue
                giving.append(queue_name)
                kept = [
                    other
                    for other in jobs
                    if is_disruptable(other) and session.may_be_victim(self.name, job, other)
                ]
                if kept:
                    by_queue[queue_name] = kept
            if not by_queue:
                if giving:
                    one = len(giving) == 1
                    head = (
                        f"{'queue' if one else 'queues'} {', '.join(giving)} may give up work to"
                        f" queue {job.queue}, but none of {'its' if one else 'their'} jobs may be"
                        " evicted"
                    )
                    jobs = [other for name in giving for other in candidates[name]]
                    reason = (
                        _no_victim_reason(session, self.name, job, jobs, head)
                        or f"{self.name}: {head}: none is running and preemptible"
                    )
                else:
                    reason = (
                        f"{self.name}: no other queue holds preemptible work it may give up to"
                        f" queue {job.queue} (queue {job.queue} beyond deserved: none is above"
                        " its fair share; within deserved: none is above deserved in a resource"
                        " the job asks for, or at deserved in all of them and above its fair"
                        " share or deserved in one)"
                    )
                _refuse(session, job, reason)
                continue
            ordered = {name: reverse_job_order(session, jobs) for name, jobs in by_queue.items()}
            _try(session, job, tasks, key, failed, self.name, victim_chunks(session, ordered))


class ConsolidationAction:
    """Move running preemptible pods so a pending gang fits; every moved pod must land again."""

    name = "consolidation"

    def __init__(self) -> None:
        self._said: dict[str, str] = {}  # a GPU shortfall sentence -> the refusal saying it

    def execute(self, session: Session) -> None:
        limit = session.config.max_consolidation_preemptees
        if limit == 0:
            return
        if session.config.gpu_placement == "spread" or session.config.cpu_placement == "spread":
            return  # defragmenting against a spread strategy would undo it (KAI's operator default)
        if self._refuses_all(session):
            return
        failed = FailedJobs()
        candidates = _disruptable_by_queue(session, keyed=True)
        memo = session.memos[_Candidates.MEMO]
        keys = memo.take_order_keys(session) if isinstance(memo, _Candidates) else None
        ordered = {
            name: reverse_job_order(session, jobs)
            if keys is None
            else reverse_job_order_by(jobs, keys[name])
            for name, jobs in candidates.items()
        }
        max_chunks = session.config.max_victim_chunks if limit < 0 else limit + 1
        fits: dict[tuple[object, ...], bool] = {}
        for job in _pending_in_order(session, self.name):
            refusal = self._refusal(session, job)
            if refusal == "":
                continue
            session.considered.add(job.key)
            if refusal:
                session.add_reason(job, refusal)
                continue
            tasks = gang.tasks_to_allocate(session, job)
            key = signature(job, tasks)
            same = exact(job, tasks)
            if same not in fits:  # equal jobs fit equally until a commit changes the cluster
                fits[same] = _fits_as_is(session, job, tasks)
            if fits[same] and not session.job_capacity_problem(job, tasks):
                # nothing to defragment: allocate binds it (earlier in the same cycle), and
                # pipelining it here would only hold it back behind no victim at all
                session.add_reason(job, f"{self.name}: {FITS_AS_IS}")
                continue
            victims = {
                name: (
                    other
                    for other in jobs
                    if other.key != job.key and is_disruptable(other) and not _moved(other)
                )
                for name, jobs in ordered.items()
            }
            if _try(
                session,
                job,
                tasks,
                key,
                failed,
                self.name,
                victim_chunks(session, victims),
                must_replace_all=True,
                max_chunks=max_chunks,
            ):
                fits.clear()

    def _refusal(
        self, session: Session, job: PodGroupInfo, free: _FreeGpus | None = None
    ) -> str | None:
        """For :meth:`_refuses_all` and the ordered path: why ``job`` is refused before
        any search ("" when it is passed over in silence), or None when it would reach one.
        A gang asking more GPUs than are free is refused: moving pods frees nothing, so
        the room must already exist, only scattered. ``free``: the free GPUs formed for a
        pass that commits nothing."""
        if not job.preemptible or not session.still_pending(job):
            return ""
        short = _gpus_short(session, job) if free is None else free.short(session, job)
        if not short:
            return None
        said = self._said.get(short)
        if said is None:  # one string per sentence, as reclaim's gate refusals
            said = self._said[short] = f"{self.name}: {short}"
        return said

    def _refuses_all(self, session: Session) -> bool:
        """Whether every gang the action would pop is refused before any search: if so,
        give those refusals (and the preemption-delay ones) without forming the pop order
        or ranking every running job as a victim.

        Exact: :meth:`_refusal` reads only the gang and the committed state, and only a
        search commits, so when no gang reaches one the order the refusals are given in
        decides nothing. Otherwise nothing is said here: the ordered path gives every
        refusal, a gang after a committed search seeing the new state. With a queue depth
        the order decides which gangs are popped at all, so the ordered path is taken;
        with memos off too (the reference the tests hold this to). (Reclaim, tried the
        same way, cost more than it saved: some gang nearly always reaches its search, and
        the pass over every gang then comes on top of the ordered one.)
        """
        if not session.memoise or self.name in session.config.queue_depth_per_action:
            return False
        refused: list[tuple[PodGroupInfo, str]] = []
        free = _FreeGpus(session)  # nothing is committed in this pass
        for job in eligible_jobs(session):
            reason = _delay_reason(session, job)
            if reason is None:
                reason = self._refusal(session, job, free)
                if reason is None:
                    return False
            if reason:
                refused.append((job, reason))
        for job, reason in refused:
            _refuse(session, job, reason)
        return True
