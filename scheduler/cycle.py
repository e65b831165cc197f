"""One scheduling cycle as a pure function: snapshot + configuration -> CycleResult.

Why: the live loop, ``podmuster schedule`` and the simulator all call this, so
a decision seen offline is the decision the live scheduler makes.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from crds.documents import gc_paused
from crds.meta import rfc3339
from crds.names import LAST_EVICTION_ANNOTATION, LAST_START_ANNOTATION
from scheduler.actions import scale_hint
from scheduler.actions.allocate import AllocateAction
from scheduler.actions.disrupting import ConsolidationAction, PreemptAction, ReclaimAction
from scheduler.actions.stale_gangs import StaleGangEvictionAction
from scheduler.api import gpu_sharing
from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import PodInfo, PodStatus
from scheduler.api.queues import UNLIMITED
from scheduler.api.resources import GPU_UNIT
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.config import SchedulerConfig
from scheduler.framework.interfaces import Action
from scheduler.framework.outcome import LoggedEviction, final_outcome
from scheduler.framework.session import Session
from scheduler.plugins import builtin_plugins, dra
from scheduler.plugins.proportion import admission
from scheduler.plugins.proportion.plugin import STATE_KEY

ACTIONS: dict[str, type[Action]] = {
    "allocate": AllocateAction,
    "consolidation": ConsolidationAction,
    "reclaim": ReclaimAction,
    "preempt": PreemptAction,
    "stalegangeviction": StaleGangEvictionAction,
}


@dataclass(frozen=True, slots=True)
class Bind:
    pod: str
    node: str
    # Fractional GPUs: the shared groups chosen on the node and the portion per device
    # in thousandths (0 for other pods); MIG: resource_type "MigInstance".
    gpu_groups: tuple[str, ...] = ()
    gpu_portion: int = 0
    resource_type: str = "Regular"
    # DRA: (pod claim entry name, AllocationResult) for claims the cycle allocated
    resource_claims: tuple[tuple[str, dict[str, Any]], ...] = ()


@dataclass(frozen=True, slots=True)
class Eviction:
    pod: str
    action: str
    for_job: str | None


@dataclass(frozen=True, slots=True)
class PodGroupOutcome:
    pod_group: str
    queue: str
    outcome: str  # scheduled | pipelined | pending | evicted | held (by the admission gate)
    reasons: tuple[str, ...]
    # for a gang pending for lack of room: the nodes that would host it (scale_hint)
    scale_up_hint: scale_hint.ScaleUpHint | None = None


@dataclass(frozen=True, slots=True)
class QueueSummary:
    """One queue's numbers after the cycle, in KAI units (GPUs, millicores, bytes)."""

    name: str
    parent: str | None
    deserved: tuple[float, float, float]
    fair_share: tuple[float, float, float]
    allocated: tuple[float, float, float]
    requested: tuple[float, float, float]
    limit: tuple[float, float, float]


@dataclass(slots=True)
class CycleResult:
    binds: list[Bind] = field(default_factory=list)
    pipelined: list[Bind] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    pod_groups: list[PodGroupOutcome] = field(default_factory=list)
    queues: list[QueueSummary] = field(default_factory=list)
    # action name -> milliseconds it took this cycle (for action_scheduling_latency)
    action_ms: dict[str, float] = field(default_factory=dict, compare=False)
    # pod group key -> annotation changes to persist (value None = remove the annotation)
    annotations: dict[str, dict[str, str | None]] = field(default_factory=dict)
    # pods whose admission gate (kai.scheduler/queue-admission) comes off (§5.11), sorted
    ungated: list[str] = field(default_factory=list)
    # the configured actions after allocate that this cycle left to the next (EarlyBinds)
    deferred: tuple[str, ...] = ()


class EarlyBinds:
    """Allocate's binds, handed out while the cycle still runs (the live loop's cold start).

    Why: a backlog's first cycle spends about a second placing thousands of pods, and no
    pod is bound until the whole cycle is over. Given to :func:`run_cycle`, this lets the
    caller's thread :meth:`take` each bind as soon as allocate has committed it, and the
    cycle then ends after allocate whenever allocate bound anything: the actions that may
    evict or move a pod placed this cycle (consolidation, reclaim, preempt, stale gangs)
    run in the next cycle, which sees these pods Binding, so a bind already sent is never
    undone within the cycle that decided it. Allocate itself never evicts, and a bind it
    committed is final for it. Pods with DRA claims are left to the cycle's result (their
    claims' devices are read from the session once the cycle is over).
    """

    def __init__(self) -> None:
        self._binds: list[tuple[PodInfo, int]] | None = None
        self._names: Sequence[str] = ()
        self._taken = 0

    def _watch(self, session: Session) -> None:
        self._names = session.snapshot.nodes.names
        self._binds = session.decisions.binds  # appended to, never rewritten, as jobs commit

    def take(self) -> list[Bind]:
        """The binds committed since the last call (safe from another thread)."""
        binds = self._binds
        if binds is None:
            return []
        end = len(binds)
        new, self._taken = binds[self._taken : end], end
        return [_bind(pod, self._names[node]) for pod, node in new if not pod.resource_claims]


def open_session(snapshot: ClusterSnapshot, config: SchedulerConfig) -> Session:
    """A session with the built-in plugins registered (fair shares computed here)."""
    session = Session(snapshot, config)
    for plugin in builtin_plugins(config):
        plugin.on_session_open(session)
    return session


def queue_shares(snapshot: ClusterSnapshot, config: SchedulerConfig) -> list[QueueSummary]:
    """Each queue's deserved, fair share, allocated, requested and limit as a session opens.

    No action runs: what the dashboard and ``kubectl podmuster`` show between cycles, from
    the same division the scheduler makes (the proportion plugin), never a copy of it.
    """
    with gc_paused():
        return _queue_summaries(open_session(snapshot, config))


def run_cycle(
    snapshot: ClusterSnapshot,
    config: SchedulerConfig,
    *,
    explain: bool = False,
    early: EarlyBinds | None = None,
) -> CycleResult:
    """Open a session, run the configured actions in order, and report the decisions.

    With ``early`` (:class:`EarlyBinds`), allocate's binds can be taken while the cycle
    runs, and when allocate bound anything the actions after it are left to the next
    cycle (``CycleResult.deferred``).

    The cyclic garbage collector is paused for the cycle, the report included: a
    cycle allocates many short-lived tuples and no reference cycles, and a full
    collection walking a 100,000-pod snapshot would otherwise cost about half a
    second (the collector catches up when its caller next allocates). The session lives
    in :func:`_run_actions`, so it is gone before the collector resumes: the collector's
    first pass after the cycle then walks only what the cycle leaves behind, not the
    session's thousands of objects, which it would otherwise keep for a later, older
    generation's pass.
    """
    result = CycleResult()
    with gc_paused():
        _run_actions(snapshot, config, result, explain, early)
    return result


def _run_actions(
    snapshot: ClusterSnapshot,
    config: SchedulerConfig,
    result: CycleResult,
    explain: bool,
    early: EarlyBinds | None,
) -> None:
    """:func:`run_cycle`'s session: opened, run through the actions and reported into
    ``result``, and dropped on return."""
    session = open_session(snapshot, config)
    if early is not None:
        early._watch(session)
    for index, name in enumerate(config.actions):
        action_type = ACTIONS[name]  # the configuration admits only these names
        started = time.perf_counter()
        action_type().execute(session)
        result.action_ms[name] = (time.perf_counter() - started) * 1000.0
        if early is not None and name == "allocate" and session.decisions.binds:
            result.deferred = tuple(config.actions[index + 1 :])
            break
    _report(session, result, explain=explain)
    session.close()


def _report(session: Session, result: CycleResult, *, explain: bool) -> None:
    """The session's decisions as the cycle's result: binds, evictions, outcomes, annotations."""
    snapshot, config = session.snapshot, session.config
    names = snapshot.nodes.names
    outcome = final_outcome(session.decisions)
    by_pod = attrgetter("pod")
    result.binds = sorted(
        (
            _with_claims(session, p, _bind(p, names[n]))
            if p.resource_claims
            else _bind(p, names[n])
            for p, n in outcome.binds
        ),
        key=by_pod,
    )
    result.pipelined = sorted((_bind(p, names[n]) for p, n in outcome.pipelined), key=by_pod)
    result.evictions = sorted((Eviction(p.key, a, f) for p, a, f in outcome.evictions), key=by_pod)
    bound_jobs = {p.job for p, _ in outcome.binds}
    pipelined_jobs = {p.job for p, _ in outcome.pipelined}
    evicted_jobs = {p.job for p, _, _ in outcome.evictions}
    # Jobs that fit at some point of the cycle get no scale-up hint, even when a later
    # action took the room back (their pods are Releasing in the session, not Pending).
    placed = {p.job for p, _ in session.decisions.binds} | {
        p.job for p, _ in session.decisions.pipelined
    }
    hints = scale_hint.scale_up_hints(
        session, (snapshot.jobs[k] for k in session.considered if k not in placed)
    )
    for key, value in scale_hint.annotation_changes(session, hints, placed).items():
        session.annotations.setdefault(key, {})[scale_hint.SCALE_UP_HINT_ANNOTATION] = value
    stuck = [p for p in snapshot.pods if p.stuck_releasing and p.node >= 0] if explain else []
    cancelled_jobs = _note_cancelled(session, outcome.cancelled)
    considered = session.considered | {k for k in evicted_jobs | cancelled_jobs if k is not None}
    jobs, job_notes, job_reasons = snapshot.jobs, snapshot.job_notes, session.job_reasons
    placed_now = evicted_jobs | pipelined_jobs | bound_jobs
    pod_groups = result.pod_groups
    for key in sorted(considered):
        job = jobs[key]
        if key not in placed_now:  # most of a backlog's groups: no pod placed or evicted
            outcome_name = "pending"
        elif key in evicted_jobs:
            outcome_name = "evicted"
        elif key in pipelined_jobs:
            outcome_name = "pipelined"
        else:
            outcome_name = "scheduled"
        # a group left pending is asked for its pods only when explaining
        still_pending = (outcome_name != "pending" or explain) and (
            key in cancelled_jobs or job.has_pending()
        )
        # notes (an unknown priority class) go with the reasons of a group left pending;
        # a group that was placed shows them only when explaining
        notes = job_notes.get(key)
        if still_pending or outcome_name == "pending":
            said = job_reasons.get(key, ())
            reasons = (*notes, *said) if notes else tuple(said)
        else:
            reasons = tuple(notes) if explain and notes else ()
        if explain and still_pending:
            state = session.plugin_state.get("proportion", {}).get(job.queue)
            if state is not None:
                reasons = (*reasons, state.describe())
            note = stuck_note(session, job, stuck) if stuck else None
            if note is not None:
                reasons = (*reasons, note)
        hint = hints.get(key) if outcome_name == "pending" else None
        pod_groups.append(PodGroupOutcome(key, job.queue, outcome_name, reasons, hint))
    admitted = admission.decide(session, everywhere=config.admission_gate_all_queues)
    result.ungated = admitted.lifted
    held = [key for key in admitted.held if key not in considered]
    for key in held:
        pod_groups.append(PodGroupOutcome(key, jobs[key].queue, "held", (admitted.held[key],)))
    if held:  # the considered groups went in in key order
        pod_groups.sort(key=attrgetter("pod_group"))
    result.queues = _queue_summaries(session)
    for key in _first_starts(session, outcome.binds, bound_jobs - pipelined_jobs - evicted_jobs):
        session.annotations.setdefault(key, {})[LAST_START_ANNOTATION] = rfc3339(snapshot.now)
    for key in sorted(k for k in evicted_jobs if k is not None):
        # the preemption delay of the evicted group counts again from now (KAI v0.17)
        session.annotations.setdefault(key, {})[LAST_EVICTION_ANNOTATION] = rfc3339(snapshot.now)
    result.annotations = {
        key: dict(changes) for key, changes in sorted(session.annotations.items())
    }


STUCK_SHOWN = 5
"""Stuck pods named in the explanation; the rest are counted."""


def stuck_note(session: Session, job: PodGroupInfo, stuck: Sequence[PodInfo]) -> str | None:
    """With ``--explain``: the pods stuck in Releasing (docs/semantics.md §1.3) on nodes
    ``job``'s pending pods could use, whose room it may not wait for; None if none."""
    names = session.snapshot.nodes.names
    usable = None
    for pod in job.iter_pods():
        if pod.status == PodStatus.PENDING:
            mask = session.static_mask(pod)[0]
            usable = mask if usable is None else usable | mask
    if usable is None:
        return None
    held = sorted(f"{pod.key} on {names[pod.node]}" for pod in stuck if usable[pod.node])
    if not held:
        return None
    shown = ", ".join(held[:STUCK_SHOWN])
    more = f" and {len(held) - STUCK_SHOWN} more" if len(held) > STUCK_SHOWN else ""
    return (
        f"StuckInReleasing: {len(held)} pod(s) deleted more than"
        f" {session.config.stuck_in_releasing_s:g}s ago still hold their room and nothing"
        f" is pipelined behind them ({shown}{more})"
    )


def _bind(pod: PodInfo, node: str) -> Bind:
    if pod.gpu_share is not None:
        return Bind(pod.key, node, pod.gpu_groups, pod.gpu_portion, "Fraction")
    if gpu_sharing.gpu_kind(pod.constraint_key) == gpu_sharing.MIG_KIND:
        return Bind(pod.key, node, resource_type="MigInstance")
    return Bind(pod.key, node)


def _with_claims(session: Session, pod: PodInfo, bind: Bind) -> Bind:
    claims = dra.allocations(session, pod)
    return dataclasses.replace(bind, resource_claims=claims) if claims else bind


_STARTED = frozenset({PodStatus.ALLOCATED, PodStatus.BINDING, PodStatus.BOUND, PodStatus.RUNNING})


def _note_cancelled(session: Session, cancelled: list[LoggedEviction]) -> set[str | None]:
    """Say why a pod placed this cycle stays pending; return the jobs of such pods."""
    for pod, action, for_job in cancelled:
        if pod.job is not None:
            room = f" to make room for {for_job}" if for_job else ""
            session.add_reason(
                session.snapshot.jobs[pod.job],
                f"{action}: placed earlier in this cycle, then evicted{room}; it stays pending",
            )
    return {pod.job for pod, _, _ in cancelled}


def _first_starts(
    session: Session, binds: list[tuple[PodInfo, int]], bound_jobs: set[str | None]
) -> list[str]:
    """Jobs that start this cycle: bound, nothing pipelined, no pod started before (§5.2).

    KAI stamps these with ``kai.scheduler/last-start-timestamp`` at session
    close; minimum runtime protects a victim from that moment on.
    """
    bound_now = {id(pod) for pod, _ in binds}
    return [
        key
        for key in sorted(k for k in bound_jobs if k is not None)
        if not any(
            pod.status in _STARTED and id(pod) not in bound_now
            for pod in session.snapshot.jobs[key].iter_pods()
        )
    ]


def _kai(vector: Any) -> tuple[float, float, float]:
    gpu, cpu, memory = (float(v) for v in vector)
    return (gpu if gpu == UNLIMITED else gpu / GPU_UNIT, cpu, memory)


def _queue_summaries(session: Session) -> list[QueueSummary]:
    states = session.plugin_state.get(STATE_KEY, {})
    return [
        QueueSummary(
            name=name,
            parent=state.info.parent,
            deserved=_kai(state.deserved),
            fair_share=_kai(state.fair_share),
            allocated=_kai(state.allocated),
            requested=_kai(state.request),
            limit=_kai(state.limit),
        )
        for name, state in sorted(states.items())
    ]
