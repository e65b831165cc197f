"""Queue admission: which pods held behind the admission gate may now be released.

Why this module exists: a pod created in a queue under the admission gate
(``kai.scheduler/admission-gate`` on the queue or an ancestor, or
``queueAdmissionGate: true`` for every queue) carries the scheduling gate
``kai.scheduler/queue-admission``. While it is gated neither the scheduler nor a node
autoscaler acts on it. This pure decision, taken at the end of each cycle, says whose
gate comes off: a gang's gated pods are released together once its queue can admit the
whole gang's minimum, by the same OverLimit and NonPreemptibleOverQuota checks the
engine applies when it places a gang (:func:`plugin.capacity_problem`, at every queue on
the path). Pods already admitted but not yet placed hold their room, and gangs admitted
earlier in the same pass count, so two gangs are never released into room for one.
docs/semantics.md §5.11 states the rules; the live loop removes the gates.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from crds import rules
from crds.podgroup import REASON_ADMISSION_GATED
from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import ALIVE, PodInfo, PodStatus
from scheduler.framework.session import Session
from scheduler.plugins.proportion.plugin import (
    STATE_KEY,
    capacity_problem,
    capacity_request,
    tasks_request,
)
from scheduler.plugins.proportion.state import QueueState

__all__ = ["HELD", "Admission", "decide"]

HELD = REASON_ADMISSION_GATED
"""The reason prefix of a gang its queue does not admit yet."""


@dataclass(slots=True)
class Admission:
    """Pods whose admission gate comes off now, and why the other gated gangs wait."""

    lifted: list[str] = field(default_factory=list)  # pod keys, sorted
    held: dict[str, str] = field(default_factory=dict)  # pod group key -> reason


def _order(job: PodGroupInfo) -> tuple[int, float, str]:
    return (-job.priority, job.creation, job.key)


def _gated_queues(session: Session, everywhere: bool) -> frozenset[str]:
    tree = session.snapshot.queues
    if everywhere:
        return frozenset(tree.queues)
    parents = {name: info.parent for name, info in tree.queues.items()}
    opted = (name for name, info in tree.queues.items() if info.admission_gate)
    return rules.admission_gated_queues(parents, opted)


def _copies(states: dict[str, QueueState]) -> dict[str, QueueState]:
    """The session's queue numbers, to be moved by this decision only."""
    return {
        name: replace(
            state,
            allocated=state.allocated.copy(),
            allocated_non_preemptible=state.allocated_non_preemptible.copy(),
        )
        for name, state in states.items()
    }


def _charge(
    states: dict[str, QueueState], path: list[str], job: PodGroupInfo, amount: list[float]
) -> None:
    for name in path:
        states[name].add_allocated(amount, not job.preemptible)


def _missing(job: PodGroupInfo, session: Session) -> tuple[list[PodInfo], str | None]:
    """The gated pods that bring every pod set up to its minimum, or why the gang is not whole."""
    unit: list[PodInfo] = []
    for pod_set in job.pod_sets:
        admitted = sum(1 for p in pod_set.pods if p.status in ALIVE and p.status != PodStatus.GATED)
        need = pod_set.min_available - admitted
        if need <= 0:
            continue
        ours = [p for p in session.pods_in_task_order(pod_set) if p.admission_gated]
        if len(ours) < need:
            where = "" if pod_set.name == "default" else f" in sub-group {pod_set.name!r}"
            return [], (
                f"{HELD}: gang needs {pod_set.min_available} pods{where}; {admitted} admitted "
                f"and {len(ours)} waiting at the gate: the whole gang is admitted together "
                "once its pods exist"
            )
        unit += ours[:need]
    return unit, None


def decide(session: Session, *, everywhere: bool = False) -> Admission:
    """Whose admission gate comes off after this session's decisions.

    Read the session after its actions ran: its queue numbers then include the pods
    placed this cycle. ``everywhere`` puts every queue under the gate.
    """
    snapshot = session.snapshot
    tree = snapshot.queues
    result = Admission()
    held_pods = [p for p in snapshot.pods if p.admission_gated and p.status == PodStatus.GATED]
    if not held_pods:  # the usual cycle: one cheap pass over the pods
        return result
    gated_jobs = [snapshot.jobs[key] for key in {p.job for p in held_pods} if key in snapshot.jobs]
    states = _copies(session.plugin_state.get(STATE_KEY, {}))
    under_gate = _gated_queues(session, everywhere)
    paths = {name: tree.path_to_root(name) for name in states}
    max_memory = snapshot.nodes.shared.max_memory
    for job in snapshot.jobs.values():  # admitted but not placed yet: their room is taken
        if job.queue in paths and job.key not in snapshot.job_problems:
            waiting = [p for p in job.iter_pods() if p.is_ours and p.status == PodStatus.PENDING]
            if waiting:
                _charge(states, paths[job.queue], job, tasks_request(waiting))
    lifted: list[PodInfo] = []
    extras: list[PodGroupInfo] = []
    for job in sorted(gated_jobs, key=_order):
        gated = [p for p in job.iter_pods() if p.admission_gated and p.status == PodStatus.GATED]
        problems = snapshot.job_problems.get(job.key)
        if problems:  # the engine would not schedule it either: keep it out of the way
            result.held[job.key] = f"{HELD}: " + "; ".join(problems)
            continue
        if job.queue not in paths:
            result.held[job.key] = f"{HELD}: queue {job.queue!r} does not exist"
            continue
        if job.queue not in under_gate:  # gated without a queue label, or opted out since
            lifted += gated
            _charge(states, paths[job.queue], job, tasks_request(gated))
            continue
        unit, not_whole = _missing(job, session)
        if not_whole is not None:
            result.held[job.key] = not_whole
            continue
        wanted = capacity_request(unit, max_memory)
        problem = capacity_problem(states, paths[job.queue], job, wanted) if unit else None
        if problem is not None:
            result.held[job.key] = f"{HELD}: {problem}"
            continue
        lifted += unit
        _charge(states, paths[job.queue], job, tasks_request(unit))
        extras.append(job)
    for job in extras:  # elastic pods beyond the minimum, one at a time, after every gang
        taken, problem = _extras(job, session, states, paths[job.queue], set(map(id, lifted)))
        lifted += taken
        if problem is not None:  # its minimum runs or is let in; an extra pod still waits
            result.held[job.key] = f"{HELD}: {problem}"
    result.lifted = sorted(p.key for p in lifted)
    return result


def _extras(
    job: PodGroupInfo,
    session: Session,
    states: dict[str, QueueState],
    path: list[str],
    done: set[int],
) -> tuple[list[PodInfo], str | None]:
    """The gated pods above ``job``'s minimum its queue can take now, in task order, and
    the queue's problem with the first one it cannot (None when all are let in)."""
    taken: list[PodInfo] = []
    for pod_set in job.pod_sets:
        for pod in session.pods_in_task_order(pod_set):
            if not pod.admission_gated or pod.status != PodStatus.GATED or id(pod) in done:
                continue
            wanted = capacity_request([pod], session.snapshot.nodes.shared.max_memory)
            problem = capacity_problem(states, path, job, wanted)
            if problem is not None:
                return taken, problem
            _charge(states, path, job, tasks_request([pod]))
            taken.append(pod)
    return taken, None
