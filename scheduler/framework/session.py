"""The per-cycle context: snapshot, registered callbacks, decisions, and task placement.

Why: actions ask the session, never the plugins, how to order jobs, whether a
job fits its queue and where a task goes; the session combines the plugins'
answers by the rules in ``extension_points``. Placement works on whole-node
arrays: one boolean mask per filter (cached per distinct pod constraints) and
one vectorised fit test per task.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ParamSpec, TypeVar

import numpy as np
import numpy.typing as npt

from scheduler.api.podgroups import PodGroupInfo, PodSetInfo
from scheduler.api.pods import PodInfo, PodStatus
from scheduler.api.resources import PODS
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.config import SchedulerConfig
from scheduler.framework import extension_points as ep
from scheduler.framework import gpu_placement
from scheduler.framework.statement import Statement

_T = TypeVar("_T")
_P = ParamSpec("_P")
_FIT_FAILURES = "session.fit_failures"


@dataclass(slots=True)
class Decisions:
    """What a cycle decided, as a log: committed binds, pipelined reservations and evictions.

    A later action may evict a pod an earlier one placed, so a pod can appear
    more than once; ``framework.outcome`` turns the log into one final
    decision per pod. ``evicted_from`` keeps, per evicted pod (by ``id``), its
    status, node and shared GPU groups just before its first committed
    eviction: where it stood before the cycle unless the cycle had placed it.
    """

    binds: list[tuple[PodInfo, int]] = field(default_factory=list)
    pipelined: list[tuple[PodInfo, int]] = field(default_factory=list)
    evictions: list[tuple[PodInfo, str, str | None]] = field(default_factory=list)
    evicted_from: dict[int, tuple[PodStatus, int, tuple[str, ...]]] = field(default_factory=dict)


_MAX_CHANGED = 64  # beyond this many changed nodes a full evaluation is cheaper


@dataclass(slots=True)
class _PlacementRun:
    """The last full evaluation: its pod signature and scores of nodes not changed since."""

    signature: tuple[Any, ...]
    unchanged_scores: ep.Scores  # -inf for infeasible or changed nodes
    changed: set[int]
    # argmax of unchanged_scores, -1 until found: it stays while that node is unchanged,
    # since the other scores only ever fall to -inf (the first maximum stays first)
    runner_up: int = -1
    # the nodes to evaluate (changed ones and the runner-up), until either changes, and the
    # pod's filter mask on them (fixed for the run: its signature holds the constraints, and
    # restrict_nodes ends the run)
    subset: npt.NDArray[np.intp] | None = None
    allowed: ep.Mask | None = None


@dataclass(slots=True)
class Placement:
    node: int
    on_idle: bool


JOB_KEY = "session.job_key"  # the carried job order key (carried_memo)
NOT_CARRIED: Any = object()  # Session.carried_answer: no answer kept that still holds


class Session:
    """One scheduling cycle over a snapshot."""

    memoise = True
    """The pending-work memos (allocate's failed shapes, pop orders, tasks to allocate,
    queue order keys, fit-failure sentences) and shortcuts (consolidation's refusals
    without a pop order) are used; off only in tests that hold every decision and
    reason to a run without them."""

    def __init__(self, snapshot: ClusterSnapshot, config: SchedulerConfig) -> None:
        self.snapshot = snapshot
        self.config = config
        self.decisions = Decisions()
        self.job_reasons: dict[str, list[str]] = {}
        self.considered: set[str] = set()
        self.node_filters: list[ep.NodeFilterFn] = []
        self.node_scorers: list[ep.NodeScoreFn] = []
        self.dynamic_constraints: list[ep.DynamicConstraintFn] = []
        self.job_order_fns: list[ep.JobOrderFn] = []
        self.task_order_fns: list[ep.TaskOrderFn] = []
        # the registrations above composed into one key function (add_job_order, add_task_order)
        self._job_key_fn = ep.key_function(self.job_order_fns)
        self._task_key_fn = ep.key_function(self.task_order_fns)
        self.queue_order_fns: list[ep.QueueOrderFn] = []
        self.job_capacity_fns: list[ep.JobCapacityFn] = []
        self.best_queue_fn: ep.BestQueueFn | None = None
        self.queue_keys: ep.QueueKeys | None = None  # with best_queue_fn (set_best_queue)
        self.victim_filters: list[ep.VictimFilterFn] = []
        self._victim_filter_whys: list[ep.VictimFilterWhyFn | None] = []
        self.victim_queue_filters: list[ep.VictimQueueFilterFn] = []
        self.victim_order_fn: ep.VictimOrderFn | None = None
        self.simulation_budget: dict[str, int] = {}  # action -> simulations left this cycle
        self.search_deadline: dict[str, float] = {}  # action -> monotonic time its search ends
        self.scenario_validators: list[ep.ScenarioValidatorFn] = []
        self.reclaim_gates: list[ep.ReclaimGateFn] = []
        # pod group key -> annotation changes the cycle wants persisted (None = remove)
        self.annotations: dict[str, dict[str, str | None]] = {}
        self._task_keys: dict[str, tuple[Any, ...]] = {}
        # Statuses change within a session only through a Statement, which calls
        # status_changed: the job keys of those pods, in order (memos catch up from it)
        self.status_log: list[str] = []
        # job key -> its order key, dropped when one of its pods changes status
        self._job_keys: dict[str, tuple[Any, ...]] = {}
        self._pending_jobs: list[PodGroupInfo] | None = None
        # State versions for the memos (settled_version, job_versions): statements committed,
        # operations applied by statements not yet committed or undone, and per job the
        # status changes of its pods (tentative ones and their undoing included).
        self.commits = 0
        self.open_ops = 0
        self.job_versions: dict[str, int] = {}
        # actions' memos kept across the actions of the cycle (they follow status_log)
        self.memos: dict[str, Any] = {}
        self._task_order: dict[int, list[PodInfo]] = {}
        self._run: _PlacementRun | None = None
        # Off only to check the incremental path against full evaluations (tests).
        self.incremental_placement = True
        self.allocate_handlers: list[ep.EventFn] = []
        self.deallocate_handlers: list[ep.EventFn] = []
        self.plugin_state: dict[str, Any] = {}
        self._filter_cache: dict[object, tuple[ep.Mask, list[tuple[ep.Mask, str]]]] = {}
        # Set only while a topology-constrained gang is placed (framework.topology_placement):
        # the nodes of the domain being tried, and the preferred-level score inside it.
        self.node_subset: ep.Mask | None = None
        self.subset_score: ep.Scores | None = None

    # --- registration -------------------------------------------------------------
    def add_node_filter(self, fn: ep.NodeFilterFn) -> None:
        self.node_filters.append(fn)

    def add_dynamic_constraint(self, fn: ep.DynamicConstraintFn) -> None:
        self.dynamic_constraints.append(fn)

    def add_node_scorer(self, fn: ep.NodeScoreFn) -> None:
        self.node_scorers.append(fn)

    def add_job_order(self, fn: ep.JobOrderFn) -> None:
        self.job_order_fns.append(fn)
        self._job_key_fn = ep.key_function(self.job_order_fns)

    def add_task_order(self, fn: ep.TaskOrderFn) -> None:
        self.task_order_fns.append(fn)
        self._task_key_fn = ep.key_function(self.task_order_fns)

    def add_queue_order(self, fn: ep.QueueOrderFn) -> None:
        self.queue_order_fns.append(fn)

    def set_best_queue(self, fn: ep.BestQueueFn, keys: ep.QueueKeys | None = None) -> None:
        """A fast equivalent of picking the first queue by ``compare_queues`` (one per
        session), and optionally sort keys that decide it outside possible ties."""
        self.best_queue_fn = fn
        self.queue_keys = keys

    def best_queue(self, candidates: list[tuple[str, PodGroupInfo | None]]) -> str:
        """The candidate queue that goes first; its best job is given with each name."""
        if self.best_queue_fn is not None:
            return self.best_queue_fn(candidates)
        best_name, best_job = candidates[0]
        for name, job in candidates[1:]:
            if self.compare_queues(name, best_name, job, best_job) < 0:
                best_name, best_job = name, job
        return best_name

    def add_job_capacity_check(self, fn: ep.JobCapacityFn) -> None:
        self.job_capacity_fns.append(fn)

    def add_victim_filter(
        self, fn: ep.VictimFilterFn, why: ep.VictimFilterWhyFn | None = None
    ) -> None:
        """``fn`` decides; ``why`` says, for a job ``fn`` refuses, why (read only for reasons)."""
        self.victim_filters.append(fn)
        self._victim_filter_whys.append(why)

    def add_scenario_validator(self, fn: ep.ScenarioValidatorFn) -> None:
        self.scenario_validators.append(fn)

    def add_reclaim_gate(self, fn: ep.ReclaimGateFn) -> None:
        self.reclaim_gates.append(fn)

    def set_victim_order(self, fn: ep.VictimOrderFn) -> None:
        self.victim_order_fn = fn

    def victim_ranker(self) -> ep.VictimRanker:
        """A fresh ranking of the victim leaf queues for one solve (default: name order)."""
        if self.victim_order_fn is not None:
            return self.victim_order_fn()
        return _ByName()

    def add_victim_queue_filter(self, fn: ep.VictimQueueFilterFn) -> None:
        self.victim_queue_filters.append(fn)

    def may_take_from_queue(self, action: str, preemptor: PodGroupInfo, queue: str) -> bool:
        return all(fn(action, preemptor, queue) for fn in self.victim_queue_filters)

    def may_be_victim(self, action: str, preemptor: PodGroupInfo, victim: PodGroupInfo) -> bool:
        return all(fn(action, preemptor, victim) for fn in self.victim_filters)

    def victim_refusal(
        self, action: str, preemptor: PodGroupInfo, victim: PodGroupInfo
    ) -> str | None:
        """Why a victim filter refuses ``victim`` (the first that does), or None."""
        for fn, why in zip(self.victim_filters, self._victim_filter_whys, strict=True):
            if not fn(action, preemptor, victim):
                return why(action, preemptor, victim) if why else f"job {victim.key} is protected"
        return None

    def scenario_problem(self, scenario: ep.Scenario) -> str | None:
        for fn in self.scenario_validators:
            reason = fn(scenario)
            if reason:
                return reason
        return None

    def reclaim_problem(self, job: PodGroupInfo, tasks: Sequence[PodInfo]) -> str | None:
        for fn in self.reclaim_gates:
            reason = fn(job, tasks)
            if reason:
                return reason
        return None

    def add_event_handlers(self, on_allocate: ep.EventFn, on_deallocate: ep.EventFn) -> None:
        self.allocate_handlers.append(on_allocate)
        self.deallocate_handlers.append(on_deallocate)

    # --- aggregates ---------------------------------------------------------------
    def statement(self) -> Statement:
        return Statement(self)

    def fire_allocate(self, pod: PodInfo) -> None:
        for fn in self.allocate_handlers:
            fn(pod)

    def fire_deallocate(self, pod: PodInfo) -> None:
        for fn in self.deallocate_handlers:
            fn(pod)

    def job_key(self, job: PodGroupInfo) -> tuple[Any, ...]:
        """Job order key, memoised until one of the job's pods changes status.

        Job order keys depend only on the job and its pods' statuses
        (extension_points), so a key formed at the snapshot's statuses is carried from
        cycle to cycle (:meth:`carried_memo`); within a session statuses change only through
        a Statement, which tells :meth:`status_changed`: the disruptive actions
        sort every victim candidate again for each preemptor, and all but a few
        are unchanged since the last sort.
        """
        key = self._job_keys.get(job.key)
        if key is None:
            key = self.carried_memo(JOB_KEY, job, self._job_key_fn, job, job.creation, job.tie)
            self._job_keys[job.key] = key
        return key

    def carried_answer(self, name: str, job: PodGroupInfo) -> Any:
        """The answer :meth:`carried_memo` keeps under ``name`` for ``job``, if it would
        give it now (formed under this config, none of the job's pods changed status in
        this session); else :data:`NOT_CARRIED`. For a pass over every pending job that
        only needs to know whether earlier answers still stand, without forming any."""
        if not self.memoise or self.job_versions.get(job.key, 0):
            return NOT_CARRIED
        hit = job.carried.get(name)
        return hit[1] if hit is not None and hit[0] is self.config else NOT_CARRIED

    def close(self) -> None:
        """Drop the cycle's memos once its result is reported (the session is not used again).

        Why: the cycle runs with the cyclic collector paused, and the collector's first
        pass afterwards walks every young container, its entries included; the memos
        hold about 100,000 keys and lists at 5,000 nodes, which reference counting frees
        here at once. The plugins' registered functions close over their state and
        often over the session itself: dropped here, the session and that state hold
        no reference cycle, so they too are freed at once instead of by the collector.
        """
        self._job_keys.clear()
        self._task_keys.clear()
        self._task_order.clear()
        self.memos.clear()
        self.plugin_state.clear()
        self.status_log.clear()
        self.job_versions.clear()
        self._filter_cache.clear()
        self._pending_jobs = None
        self._run = None
        for registered in (
            self.node_filters,
            self.node_scorers,
            self.dynamic_constraints,
            self.job_order_fns,
            self.task_order_fns,
            self.queue_order_fns,
            self.job_capacity_fns,
            self.victim_filters,
            self._victim_filter_whys,
            self.victim_queue_filters,
            self.scenario_validators,
            self.reclaim_gates,
            self.allocate_handlers,
            self.deallocate_handlers,
        ):
            registered.clear()
        self.best_queue_fn = self.queue_keys = self.victim_order_fn = None
        # the combined key functions hold their own copies of the order functions
        self._job_key_fn = self._task_key_fn = ep.key_function(())

    def job_keys(self, jobs: Iterable[PodGroupInfo]) -> list[tuple[Any, ...]]:
        """:meth:`job_key` of each of ``jobs``, in one loop over the memo.

        The disruptive actions key every victim candidate (about 80,000 jobs at
        5,000 nodes); one method call per job costs more than the memo lookup.
        """
        memo, key_fn = self._job_keys, self._job_key_fn
        keys = []
        for job in jobs:
            name = job.key
            key = memo.get(name)
            if key is None:
                key = memo[name] = key_fn(job, job.creation, job.tie)
            keys.append(key)
        return keys

    def unmemoised_job_key(self) -> ep.KeyFn:
        """The job order key function, called as ``(job, job.creation, job.tie)``: for a pass
        that keeps the keys it forms itself (the memo's look-ups and stores cost more than
        the keys for 80,000 victim candidates read once)."""
        return self._job_key_fn

    def status_changed(self, pod: PodInfo) -> None:
        """A Statement changed ``pod``'s status: its job's order key is stale."""
        if pod.job is not None:
            self._job_keys.pop(pod.job, None)
            self.status_log.append(pod.job)
            self.job_versions[pod.job] = self.job_versions.get(pod.job, 0) + 1

    def settled_version(self) -> int | None:
        """Statements committed so far, or None while some statement holds uncommitted
        operations: equal versions mean the same committed state of nodes and queues."""
        return self.commits if self.open_ops == 0 else None

    def settled_memo(self, name: str) -> dict[Any, Any] | None:
        """The memo ``name`` for answers that read only the committed state (nodes, queues):
        emptied whenever the settled version moves, and None (remember nothing) while a
        statement holds uncommitted operations or memos are off."""
        settled = self.settled_version()
        if not self.memoise or settled is None:
            return None
        entry: tuple[int, dict[Any, Any]] | None = self.memos.get(name)
        if entry is None or entry[0] != settled:
            entry = self.memos[name] = (settled, {})
        return entry[1]

    def job_memo(self, name: str, job: PodGroupInfo, compute: Callable[[], _T]) -> _T:
        """``compute()`` for ``job``, kept in the memo ``name`` until one of the job's pods
        changes status: for answers that read only the job and its pods' statuses. With
        memos off (:attr:`memoise`) it is computed afresh each time."""
        if not self.memoise:
            return compute()
        memo: dict[str, tuple[int, _T]] | None = self.memos.get(name)
        if memo is None:
            memo = self.memos[name] = {}
        version = self.job_versions.get(job.key, 0)
        hit = memo.get(job.key)
        if hit is not None and hit[0] == version:
            return hit[1]
        value = compute()
        memo[job.key] = (version, value)
        return value

    def carried_memo(
        self,
        name: str,
        job: PodGroupInfo,
        compute: Callable[_P, _T],
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> _T:
        """``compute(*args, **kwargs)`` as :meth:`job_memo` keeps it, for answers that read
        only the job, its pods' statuses and fields fixed for the pod's record (labels,
        creation, pod set), and the config: while none of the job's pods changed status in
        this session, the answer formed at the snapshot's statuses is kept on the job
        record from cycle to cycle (:attr:`PodGroupInfo.carried`, emptied by the cache when
        a snapshot changes one of its pods' statuses; a changed PodGroup or pod is a new
        record). The function and its arguments are passed, not a closure: the callers
        ask thousands of times a cycle, and a kept answer then costs no closure."""
        if self.memoise and not self.job_versions.get(job.key, 0):
            hit = job.carried.get(name)
            if hit is not None and hit[0] is self.config:
                return hit[1]  # type: ignore[no-any-return]
            value = compute(*args, **kwargs)
            job.carried[name] = (self.config, value)
            return value
        return self.job_memo(name, job, lambda: compute(*args, **kwargs))

    def jobs_with_pending(self) -> list[PodGroupInfo]:
        """The jobs with a pending pod, oldest first (then by key).

        Found in one pass over the pods at the first call; later calls check only
        those jobs again: no pod becomes pending within a session (a Statement
        allocates, pipelines or evicts, and undoing restores what was before).
        """
        snapshot = self.snapshot
        if self._pending_jobs is None:
            jobs = snapshot.jobs
            keys = {pod.job for pod in snapshot.pods if pod.status == PodStatus.PENDING and pod.job}
            self._pending_jobs = [
                jobs[key] for key in sorted(keys, key=lambda k: (jobs[k].creation, k))
            ]
            return list(self._pending_jobs)
        return [job for job in self._pending_jobs if self.still_pending(job)]

    def still_pending(self, job: PodGroupInfo) -> bool:
        """Whether ``job``, which had a pending pod in the snapshot (one of
        :meth:`jobs_with_pending`), still has one: without a look at its pods while
        none of them changed status in this session (asked of every pending job by
        each action)."""
        return not self.job_versions.get(job.key, 0) or job.has_pending()

    def partial_job_key(
        self, job: PodGroupInfo, active: Mapping[str, list[PodInfo]]
    ) -> tuple[Any, ...]:
        """The job order key of ``job`` as if only the ``active`` pods (by pod set) were active.

        A victim job that has given up some pods is ranked again on what it
        still runs (KAI re-queues the rest of the job); not memoised.
        """
        rest = replace(
            job,
            pod_sets=[
                PodSetInfo(ps.name, ps.min_available, list(active.get(ps.name, ())))
                for ps in job.pod_sets
            ],
        )
        return self._job_key_fn(rest, job.creation, job.tie)

    def pods_in_task_order(self, pod_set: PodSetInfo) -> list[PodInfo]:
        """The pod set's pods sorted by task order, once per session (labels do not change)."""
        ordered = self._task_order.get(id(pod_set))
        if ordered is None:
            ordered = sorted(pod_set.pods, key=self.task_key)
            self._task_order[id(pod_set)] = ordered
        return ordered

    def task_key(self, pod: PodInfo) -> tuple[Any, ...]:
        """Task order key; a pod's labels do not change within a session, so it is memoised."""
        key = self._task_keys.get(pod.uid)
        if key is None:
            key = self._task_key_fn(pod, pod.creation, pod.uid)
            self._task_keys[pod.uid] = key
        return key

    def compare_queues(
        self, a: str, b: str, job_a: PodGroupInfo | None, job_b: PodGroupInfo | None
    ) -> int:
        for fn in self.queue_order_fns:
            result = fn(a, b, job_a, job_b)
            if result:
                return result
        return 0

    def job_capacity_problem(self, job: PodGroupInfo, tasks: Sequence[PodInfo]) -> str | None:
        for fn in self.job_capacity_fns:
            reason = fn(job, tasks)
            if reason:
                return reason
        return None

    def add_reason(self, job: PodGroupInfo, reason: str) -> None:
        reasons = self.job_reasons.setdefault(job.key, [])
        if reason not in reasons:
            reasons.append(reason)

    # --- placement ----------------------------------------------------------------
    def static_mask(self, pod: PodInfo) -> tuple[ep.Mask, list[tuple[ep.Mask, str]]]:
        """Nodes passing every filter, cached per distinct pod constraints."""
        key = pod.constraint_key
        cached = self._filter_cache.get(key)
        if cached is not None:
            return cached
        nodes = self.snapshot.nodes
        mask = nodes.schedulable.copy()
        parts: list[tuple[ep.Mask, str]] = [
            (nodes.schedulable, "node(s) were unschedulable or not ready")
        ]
        for fn in self.node_filters:
            for part, reason in fn(pod):
                mask &= part
                parts.append((part, reason))
        self._filter_cache[key] = (mask, parts)
        return mask, parts

    def dynamic_constraint(
        self, pod: PodInfo
    ) -> tuple[list[tuple[ep.Mask, str]], ep.Scores | None]:
        """The plugins' placement-dependent filters and summed score for ``pod`` now.

        Empty parts and None when no plugin constrains the pod (the common case).
        """
        parts: list[tuple[ep.Mask, str]] = []
        score: ep.Scores | None = None
        for fn in self.dynamic_constraints:
            found = fn(pod)
            if found is None:
                continue
            parts.extend(found.parts)
            if found.score is not None:
                score = found.score if score is None else score + found.score
        return parts, score

    def allowed_mask(self, pod: PodInfo) -> ep.Mask:
        """Nodes passing every static filter and every dynamic one as the cycle stands."""
        static, _ = self.static_mask(pod)
        if not self.dynamic_constraints:
            return static
        parts, _ = self.dynamic_constraint(pod)
        for part, _reason in parts:
            static = static & part
        return static

    def restrict_nodes(self, subset: ep.Mask | None, score: ep.Scores | None = None) -> None:
        """Place only on ``subset`` (ANDed with every filter), adding ``score``; None lifts it.

        Any change forgets the incremental placement run: its cached scores were
        computed for another node set.
        """
        self.node_subset = subset
        self.subset_score = score
        self._run = None

    def note_node_change(self, node: int) -> None:
        """Called by the Statement for every node whose free resources move."""
        run = self._run
        if run is not None and node not in run.changed:
            run.changed.add(node)
            run.unchanged_scores[node] = -np.inf
            run.subset = None
            if node == run.runner_up:
                run.runner_up = -1

    def score(self, context: ep.TaskContext) -> ep.Scores | None:
        """The plugins' summed node scores for a task (None when no plugin scores)."""
        return self._score(context, 0)

    def _score(self, context: ep.TaskContext, size: int) -> ep.Scores | None:
        total: ep.Scores | None = None
        for scorer in self.node_scorers:
            score = scorer(context)
            if score is not None:
                total = score if total is None else total + score
        extra = self.subset_score
        if extra is not None:
            part = extra if context.nodes is None else extra[context.nodes]
            total = part if total is None else total + part
        return total

    def place(self, pod: PodInfo, *, pipeline_only: bool = False) -> Placement | None:
        """The best node for ``pod``: feasible nodes scored by the plugins, ties by name.

        Hot path. A full evaluation is about fifteen whole-array numpy
        operations. For the next pod with the same request and constraints (a
        gang's identical tasks) only the nodes changed since then and the best
        unchanged node are evaluated (extension_points: scores are
        order-stable). A column the pod does not request compares ``free >=
        0``, so a node already over-committed in some resource takes nothing.
        """
        nodes = self.snapshot.nodes
        static, _ = self.static_mask(pod)
        dynamic_score: ep.Scores | None = None
        dynamic = False
        if self.dynamic_constraints:
            parts, dynamic_score = self.dynamic_constraint(pod)
            dynamic = bool(parts) or dynamic_score is not None
            for part, _reason in parts:
                static = static & part
        if self.node_subset is not None:
            static = static & self.node_subset
        if pod.gpu_share is not None:
            # fractional GPUs: devices and groups per node, always a full evaluation
            found = gpu_placement.place_shared(self, pod, static, pipeline_only)
            return None if found is None else Placement(found[0], found[1])
        request = pod.request
        wanted = request[:, None]
        any_releasing = nodes.has_releasing()
        signature = (pod.constraint_key, request.tobytes(), pod.nominated_node, any_releasing)
        run = self._run
        if (
            self.incremental_placement
            and not dynamic
            and run is not None
            and run.signature == signature
            and len(run.changed) <= _MAX_CHANGED
        ):
            return self._place_incrementally(run, pod, static, wanted, pipeline_only)
        feasible = (nodes.free >= wanted).all(axis=0)
        feasible &= static
        if not feasible.any():
            self._run = None
            return None
        if any_releasing:
            fits_idle = (nodes.idle >= wanted).all(axis=0)
            fits_idle &= feasible
        else:
            fits_idle = feasible
        total = self._score(ep.TaskContext(pod, feasible, fits_idle, any_releasing), len(nodes))
        if dynamic_score is not None:
            total = dynamic_score if total is None else total + dynamic_score
        ranked = (
            np.where(feasible, total, -np.inf)
            if total is not None
            else np.where(feasible, 0.0, -np.inf)
        )
        node = int(ranked.argmax())
        if not dynamic:  # a dynamic pod's scores may change with the next placement
            self._run = _PlacementRun(signature, ranked, set())
        on_idle = bool(fits_idle[node]) and not pipeline_only
        return Placement(node, on_idle)

    def _place_incrementally(
        self,
        run: _PlacementRun,
        pod: PodInfo,
        static: ep.Mask,
        wanted: npt.NDArray[np.int64],
        pipeline_only: bool,
    ) -> Placement | None:
        nodes = self.snapshot.nodes
        subset, allowed = run.subset, run.allowed
        if subset is None or allowed is None:
            runner_up = run.runner_up
            if runner_up < 0:
                runner_up = run.runner_up = int(run.unchanged_scores.argmax())
            candidates = set(run.changed)
            if run.unchanged_scores[runner_up] > -np.inf:
                candidates.add(runner_up)
            if not candidates:
                return None
            subset = run.subset = np.array(sorted(candidates), dtype=np.intp)
            allowed = run.allowed = static[subset]
        feasible = (nodes.free[:, subset] >= wanted).all(axis=0)
        feasible &= allowed
        if not feasible.any():
            return None
        any_releasing = bool(run.signature[3])
        if any_releasing:
            fits_idle = (nodes.idle[:, subset] >= wanted).all(axis=0)
            fits_idle &= feasible
        else:
            fits_idle = feasible
        context = ep.TaskContext(pod, feasible, fits_idle, any_releasing, subset)
        total = self._score(context, len(subset))
        ranked = (
            np.where(feasible, total, -np.inf)
            if total is not None
            else np.where(feasible, 0.0, -np.inf)
        )
        best = int(ranked.argmax())
        on_idle = bool(fits_idle[best]) and not pipeline_only
        return Placement(int(subset[best]), on_idle)

    def fit_failure(
        self, pod: PodInfo, dynamic: Sequence[tuple[ep.Mask, str]] | None = None
    ) -> str:
        """Why ``pod`` fits no node, counted per first failing reason, as kube-scheduler says it.

        ``dynamic``: the pod's dynamic constraint parts as captured by the caller (for a
        gang, before its other pods were rolled back); by default asked now.
        """
        memo = None
        if not dynamic and not self.dynamic_constraints:
            # the sentence reads only the pod's constraints and requests and the committed
            # state: remembered per pod shape until the next commit
            memo = self.settled_memo(_FIT_FAILURES)
        if memo is None:
            return self._fit_failure(pod, dynamic)
        memo_key = (pod.constraint_key, pod.request.tobytes(), pod.gpu_share)
        why: str | None = memo.get(memo_key)
        if why is None:
            why = memo[memo_key] = self._fit_failure(pod, dynamic)
        return why

    def _fit_failure(self, pod: PodInfo, dynamic: Sequence[tuple[ep.Mask, str]] | None) -> str:
        nodes = self.snapshot.nodes
        if len(nodes) == 0:
            return "no nodes in the cluster"
        _, static_parts = self.static_mask(pod)
        parts = static_parts
        if dynamic is None and self.dynamic_constraints:
            dynamic = self.dynamic_constraint(pod)[0]
        if dynamic:
            parts = [*static_parts, *dynamic]
        remaining = np.ones(len(nodes), dtype=bool)
        counts: dict[str, int] = {}
        for part, reason in parts:
            failing = remaining & ~part
            if failing.any():
                counts[reason] = counts.get(reason, 0) + int(failing.sum())
            remaining &= part
        free = nodes.free
        for column in np.flatnonzero(pod.request):
            failing = remaining & (free[column] < pod.request[column])
            if failing.any():
                label = (
                    "Too many pods"
                    if column == PODS
                    else f"Insufficient {self.snapshot.space.display_name(int(column))}"
                )
                counts[label] = counts.get(label, 0) + int(failing.sum())
            remaining &= ~failing
        if pod.gpu_share is not None:
            for reason, failing in gpu_placement.device_failures(self, pod, remaining):
                if failing.any():
                    counts[reason] = counts.get(reason, 0) + int(failing.sum())
                remaining &= ~failing
        if not counts:
            # Every node fits this pod on its own: the room went to the job's other pods
            # (a gang is placed together or not at all).
            return (
                f"0/{len(nodes)} nodes are available: {int(remaining.sum())} node(s) would fit"
                " this pod alone, not together with the rest of its job."
            )
        detail = ", ".join(f"{count} {reason}" for reason, count in counts.items())
        return f"0/{len(nodes)} nodes are available: {detail}."


PluginFactory = Callable[[SchedulerConfig], Any]


class _ByName:
    """The victim leaf ranking without a plugin: leaf queues in name order."""

    def pick(self, heads: Mapping[str, tuple[PodGroupInfo, Sequence[PodInfo]]]) -> str:
        return min(heads)

    def took(self, leaf: str, pods: Sequence[PodInfo]) -> None:
        return None
