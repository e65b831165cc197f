"""Gang rules shared by every action: readiness and the tasks to allocate next.

Why: allocate, reclaim, preempt and consolidation all ask "which pods of this
job go next, and is the job ready to be tried at all" (docs/semantics.md §5.1);
answering it in one place keeps the actions consistent.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from scheduler.api.podgroups import PodGroupInfo, PodSetInfo, SubGroupNode, meets
from scheduler.api.pods import ACTIVE_ALLOCATED, PodInfo, PodStatus

if TYPE_CHECKING:
    from scheduler.framework.session import Session


CHOICE_LIMIT = 16
"""At most this many alternative task sets are offered for one job (see :func:`task_choices`)."""


FIRST_CHOICE = "gang.first_choice"


def tasks_to_allocate(session: Session, job: PodGroupInfo) -> list[PodInfo]:
    """The pods to place together next: the gang's missing pods, or one elastic extra.

    Asked many times per cycle (queue order, every action, hints); within a
    session the answer depends only on the statuses of the job's pods, so it is
    remembered until one of them changes (:attr:`Session.job_versions`).
    """
    return list(session.carried_memo(FIRST_CHOICE, job, _first_choice, session, job))


def _first_choice(session: Session, job: PodGroupInfo) -> list[PodInfo]:
    """The preferred task set of :func:`task_choices`, formed afresh (none: empty)."""
    return next(task_choices(session, job), [])


READY = "gang.ready"


def ready_problem(session: Session, job: PodGroupInfo) -> str | None:
    """:func:`readiness_problem`, remembered like :func:`tasks_to_allocate` (each action
    that forms a pending order asks it of every pending job)."""
    return session.carried_memo(READY, job, readiness_problem, job)


def choices_to_try(session: Session, job: PodGroupInfo) -> Iterator[list[PodInfo]]:
    """:func:`task_choices`, the first taken from :func:`tasks_to_allocate`'s memo.

    Allocate asks the queue order (which read the first choice) and then tries the
    choices: most jobs place their first, so the others are found only when asked
    (after the first was rolled back, the pods' statuses are as they were).
    """
    first = tasks_to_allocate(session, job)
    if not first:
        return
    yield first
    yield from itertools.islice(task_choices(session, job), 1, None)


def task_choices(
    session: Session, job: PodGroupInfo, limit: int = CHOICE_LIMIT
) -> Iterator[list[PodInfo]]:
    """Alternative task sets for ``job``, preferred first (at most ``limit``).

    The subgroup tree is walked from the root (KAI's order of members: below
    their requirement first, then lower satisfied/required ratio, then optional
    members with fewer satisfied first, then name).
    A node below its requirement needs ``required - satisfied`` more members:
    each way of choosing them from the members that have pending pods is one
    alternative, in order (so with ``minSubGroup: 2`` of three children, a
    child that cannot fit is left out by a later alternative). Each chosen
    member contributes its own missing pods (a pod set: ``min_available``
    minus its active pods). A node at its requirement adds one member's next
    step only (one elastic pod, or an optional member's whole gang). A pod set
    without enough pending pods to reach its minimum offers nothing.
    """
    active: dict[str, int] = {}
    pending: dict[str, list[PodInfo]] = {}
    by_name = {pod_set.name: pod_set for pod_set in job.pod_sets}
    for pod_set in job.pod_sets:
        count = 0
        waiting = []
        for pod in session.pods_in_task_order(pod_set):
            status = pod.status
            if status == PodStatus.PENDING:
                waiting.append(pod)
            elif status in ACTIVE_ALLOCATED:
                count += 1
        active[pod_set.name] = count
        pending[pod_set.name] = waiting
    if job.shape is None and len(job.pod_sets) == 1:
        # one pod set under the root (most jobs): the walk below reduces to its own step
        pod_set = job.pod_sets[0]
        waiting = pending[pod_set.name]
        missing = pod_set.min_available - active[pod_set.name]
        if limit > 0 and waiting and len(waiting) >= missing:
            return iter([waiting[: missing if missing > 0 else 1]])
        return iter(())
    walk = _Walk(by_name, active, pending)
    return itertools.islice((tasks for tasks in walk.choices(job.root()) if tasks), limit)


class _Walk:
    """One job's tree with its active counts and pending pods, walked for task choices."""

    def __init__(
        self,
        by_name: dict[str, PodSetInfo],
        active: dict[str, int],
        pending: dict[str, list[PodInfo]],
    ) -> None:
        self.by_name = by_name
        self.active = active
        self.pending = pending

    def met(self, member: SubGroupNode | str) -> bool:
        return meets(member, self.active, self.by_name, whole=False)

    def satisfied(self, node: SubGroupNode) -> int:
        return sum(1 for member in node.members if self.met(member))

    def has_pending(self, member: SubGroupNode | str) -> bool:
        if isinstance(member, str):
            return bool(self.pending[member])
        return any(self.has_pending(m) for m in member.members)

    def order(self, member: SubGroupNode | str) -> tuple[int, float, str]:
        """KAI's sub-group order: below its requirement first; then required members by
        satisfied/required ratio (lowest first); then optional ones (requirement 0) by
        how many they have (fewest first); ties by name."""
        if isinstance(member, str):
            name, have, need = member, self.active[member], self.by_name[member].min_available
        else:
            name, have, need = member.name, self.satisfied(member), member.required()
        if have < need:
            return (0, 0.0, name)
        if need == 0:
            return (2, float(have), name)
        return (1, have / need, name)

    def choices(self, member: SubGroupNode | str) -> Iterator[list[PodInfo]]:
        if isinstance(member, str):
            waiting = self.pending[member]
            missing = self.by_name[member].min_available - self.active[member]
            if waiting and len(waiting) >= missing:  # never a pod set placed partly
                yield waiting[: missing if missing > 0 else 1]
            return
        members = sorted((m for m in member.members if self.has_pending(m)), key=self.order)
        need = member.required() - self.satisfied(member)
        if need <= 0:
            for candidate in members:
                first = next(self.choices(candidate), None)
                if first:
                    yield first
                    return
            return
        # each member's own choices once; only members that have one are combined, so
        # every combination yields and the caller's limit ends the walk quickly
        options = {}
        for m in members:
            if not self.met(m):
                own = list(itertools.islice(self.choices(m), CHOICE_LIMIT))
                if own:
                    options[m] = own
        for chosen in itertools.combinations(options, need):  # none when too few can start
            for picked in itertools.product(*(options[m] for m in chosen)):
                yield [pod for tasks in picked for pod in tasks]


def needs_pipelining(job: PodGroupInfo) -> bool:
    """True when some pod set would start with a pipelined pod and fewer bound than its minimum.

    Then every allocation of the job is pipelined too: a gang never binds partly.
    Judged per pod set, not over the tree: the pod sets being placed are exactly
    those with pipelined pods, and each of them must start whole whatever its
    parent needs (a ``minMember: 0`` pod set never asks for it).
    """
    for pod_set in job.pod_sets:
        pipelined = sum(1 for pod in pod_set.pods if pod.status == PodStatus.PIPELINED)
        if not pipelined:
            continue
        settled = sum(
            1
            for pod in pod_set.pods
            if pod.status in ACTIVE_ALLOCATED and pod.status != PodStatus.PIPELINED
        )
        if settled < pod_set.min_available:
            return True
    return False


def readiness_problem(job: PodGroupInfo) -> str | None:
    """Why the gang is not ready yet (too few non-gated pods for its tree), or None."""
    if job.is_ready():
        return None
    for pod_set in job.pod_sets:
        if not pod_set.is_ready():
            alive = sum(
                1
                for pod in pod_set.pods
                if pod.status
                not in (PodStatus.GATED, PodStatus.SUCCEEDED, PodStatus.FAILED, PodStatus.RELEASING)
            )
            gated = sum(1 for pod in pod_set.pods if pod.status == PodStatus.GATED)
            where = "" if pod_set.name == "default" else f" in sub-group {pod_set.name!r}"
            extra = f" ({gated} gated)" if gated else ""
            return (
                f"NotReady: gang needs {pod_set.min_available} pods{where} but only "
                f"{alive} exist{extra}; waiting for the rest to be created"
            )
    return "NotReady: too few sub-groups have their pods; waiting for the rest to be created"
