"""Gang rules shared by every action: readiness and the tasks to allocate next.

Why: allocate, reclaim, preempt and consolidation all ask "which pods of this
job go next, and is the job ready to be tried at all" (docs/semantics.md §5.1);
answering it in one place keeps the actions consistent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import ACTIVE_ALLOCATED, PodInfo, PodStatus

if TYPE_CHECKING:
    from scheduler.framework.session import Session


def tasks_to_allocate(session: Session, job: PodGroupInfo) -> list[PodInfo]:
    """The pods to place together next: the gang's missing pods, or one elastic extra.

    Pod sets go in KAI's pod-set order: below their minimum first, then by
    lower active/minimum ratio, then name. As many pod sets are taken as are
    below their minimum (at least one); a set with nothing pending is skipped.
    """
    entries = []
    for pod_set in job.pod_sets:
        active = 0
        pending = []
        for pod in session.pods_in_task_order(pod_set):
            status = pod.status
            if status == PodStatus.PENDING:
                pending.append(pod)
            elif status in ACTIVE_ALLOCATED:
                active += 1
        below = active < pod_set.min_available
        ratio = 0.0 if below else active / pod_set.min_available
        entries.append(((0 if below else 1, ratio, pod_set.name), pod_set, active, pending))
    if len(entries) > 1:
        entries.sort(key=lambda entry: entry[0])
    wanted_sets = sum(1 for entry in entries if entry[0][0] == 0) or 1
    tasks: list[PodInfo] = []
    taken = 0
    for _, pod_set, active, pending in entries:
        if taken >= wanted_sets:
            break
        if not pending:
            continue
        missing = pod_set.min_available - active
        tasks.extend(pending[: min(missing, len(pending)) if missing > 0 else 1])
        taken += 1
    return tasks


def needs_pipelining(job: PodGroupInfo) -> bool:
    """True when some pod set would start with a pipelined pod and fewer bound than its minimum.

    Then every allocation of the job is pipelined too: a gang never binds partly.
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
    """Why the gang is not ready yet (too few non-gated pods), or None."""
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
    return None
