"""The proportion plugin: fair shares, queue order and queue capacity checks.

Why: this is where KAI's hierarchical fairness lives. At session open it sums
each queue's allocated and requested resources up the tree, divides the
cluster with ``division.divide_fair_shares``, and then registers the queue
order, the job-level capacity checks (OverLimit, NonPreemptibleOverQuota at
every queue on the path) and event handlers that keep ``allocated`` current
during the session's simulations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from crds.podgroup import REASON_NON_PREEMPTIBLE_OVER_QUOTA, REASON_OVER_LIMIT
from scheduler.api import gpu_sharing
from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import COUNTS_TO_QUEUE, PodInfo, PodStatus
from scheduler.api.queues import UNLIMITED, QueueVector
from scheduler.api.resources import GPU_UNIT
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.framework import extension_points as ep
from scheduler.framework import gang
from scheduler.framework.session import Session
from scheduler.plugins.proportion import division, queue_order, reclaimable
from scheduler.plugins.proportion.state import (
    TO_KAI_UNITS,
    QueueState,
    format_queue_vector,
)

STATE_KEY = "proportion"
_RESOURCE_NAMES = ("gpu", "cpu", "memory")


def _to_kai(vector: QueueVector) -> tuple[float, ...]:
    return tuple(
        float(v) if v == UNLIMITED else float(v) * s
        for v, s in zip(vector, TO_KAI_UNITS, strict=True)
    )


def _from_kai(values: tuple[float, ...]) -> QueueVector:
    return np.array(
        [v if v == UNLIMITED else v / s for v, s in zip(values, TO_KAI_UNITS, strict=True)],
        dtype=np.float64,
    )


def _queue_usage(
    snapshot: ClusterSnapshot,
) -> tuple[dict[str, QueueVector], dict[str, QueueVector], dict[str, QueueVector]]:
    """Allocated, non-preemptible allocated and requested per queue, summed up the tree.

    One pass over the pods adds each pod's amounts to its queue's row (allocated
    preemptible, allocated non-preemptible, or pending) in pod order, as plain
    floats (cheaper than collecting 100,000 rows for numpy); each queue's own
    totals are then added to it and every ancestor.

    Every PodGroup whose queue is in the tree counts, as in KAI: a job naming a parent
    queue is never scheduled nor a victim (its queue problem keeps it out of the
    actions), yet its pods weigh on that queue and its ancestors. A job whose queue is
    missing, or dropped with an orphaned subtree, counts nowhere.
    """
    tree = snapshot.queues
    names = list(tree.queues)
    position = {name: i for i, name in enumerate(names)}
    # kind (allocated preemptible, allocated non-preemptible, pending) -> queue -> GPU, CPU,
    # memory; every row made up front, so a pod's row is two list indexes away
    rows = [[[0.0, 0.0, 0.0] for _ in names] for _ in range(3)]
    waiting_rows = rows[2]
    waiting_status = PodStatus.PENDING
    for job in snapshot.jobs.values():
        at = position.get(job.queue)
        if at is None:
            continue
        counted = rows[0 if job.preemptible else 1][at]
        waiting = waiting_rows[at]
        for pod_set in job.pod_sets:
            for pod in pod_set.pods:
                status = pod.status
                if status in COUNTS_TO_QUEUE:
                    row = counted
                elif status == waiting_status:
                    row = waiting
                else:
                    continue
                gpu, cpu, memory = pod.quota
                row[0] += gpu
                row[1] += cpu
                row[2] += memory
    sums = np.array(rows, dtype=np.float64).reshape(3, len(names), 3)
    own = {name: sums[:, position[name], :] for name in names}
    allocated = {name: np.zeros(3) for name in names}
    allocated_np = {name: np.zeros(3) for name in names}
    request = {name: np.zeros(3) for name in names}
    for name in names:
        preemptible, non_preemptible, pending = own[name]
        for ancestor in tree.path_to_root(name):
            allocated[ancestor] += preemptible + non_preemptible
            allocated_np[ancestor] += non_preemptible
            request[ancestor] += preemptible + non_preemptible + pending
    return allocated, allocated_np, request


def queue_allocation(snapshot: ClusterSnapshot) -> dict[str, tuple[float, ...]]:
    """What each queue holds (its subtree's allocated pods), in KAI units (time-based usage)."""
    allocated = _queue_usage(snapshot)[0]
    return {name: _to_kai(vector) for name, vector in allocated.items()}


def capacity(snapshot: ClusterSnapshot) -> tuple[float, ...]:
    """The fair-share capacity the queues divide, in KAI units."""
    return _to_kai(snapshot.total)


class ProportionPlugin:
    """Registers fair-share queue order, capacity checks and allocation accounting."""

    name = "proportion"

    def __init__(self, k_value: float = 1.0, saturation_multiplier: float = 1.0) -> None:
        self.k_value = k_value
        self.saturation_multiplier = saturation_multiplier

    def on_session_open(self, session: Session) -> None:
        snapshot = session.snapshot
        tree = snapshot.queues
        allocated, allocated_np, request = _queue_usage(snapshot)
        inputs = [
            division.QueueInput(
                name=q.name,
                parent=q.parent,
                priority=q.priority,
                age_rank=rank,
                uid=q.uid,
                deserved=_to_kai(q.deserved),
                limit=_to_kai(q.limit),
                over_quota_weight=tuple(float(v) for v in q.over_quota_weight),
                request=_to_kai(request[q.name]),
                usage=snapshot.queue_usage.get(q.name),
            )
            for rank, q in enumerate(
                sorted(tree.queues.values(), key=lambda q: (q.creation, q.name))
            )
        ]
        shares = division.divide_fair_shares(_to_kai(snapshot.total), inputs, self.k_value)
        states = {
            name: QueueState(
                info=q,
                fair_share=_from_kai(shares[name].fair_share),
                deserved=q.deserved.copy(),
                allocatable_share=_from_kai(shares[name].allocatable_share),
                limit=q.limit.copy(),
                request=request[name],
                allocated=allocated[name],
                allocated_non_preemptible=allocated_np[name],
            )
            for name, q in tree.queues.items()
        }
        session.plugin_state[STATE_KEY] = states
        paths = {name: tree.path_to_root(name) for name in tree.queues}
        total = [float(v) for v in snapshot.total]

        # each job's request as a hashable triple: kept on the job from cycle to cycle
        # while its pods keep their statuses (request_triple), and here for the session
        # until the job's accounting moves (shift)
        job_triples: dict[str, tuple[float, float, float]] = {}
        no_triple = (0.0, 0.0, 0.0)

        def job_triple(job: PodGroupInfo | None) -> tuple[float, float, float]:
            if job is None:
                return no_triple
            cached = job_triples.get(job.key)
            if cached is None:
                cached = job_triples[job.key] = request_triple(session, job)
            return cached

        no_job = [0.0, 0.0, 0.0]

        def order(a: str, b: str, job_a: PodGroupInfo | None, job_b: PodGroupInfo | None) -> int:
            return queue_order.compare(
                states[a], states[b], job_triple(job_a), job_triple(job_b), total
            )

        # (leaf, preemptible, request) -> the capacity problem, until any accounting moves
        # (shift): the report asks it of every gang it considers for a scale-up hint, and a
        # refusal's sentence formats the queue's numbers
        refusals: dict[tuple[str, bool, float, float, float], str | None] = {}

        max_memory = snapshot.nodes.shared.max_memory

        def capacity(job: PodGroupInfo, tasks: Sequence[PodInfo]) -> str | None:
            wanted = capacity_request(tasks, max_memory)
            if not session.memoise:
                return capacity_problem(states, paths[job.queue], job, wanted)
            key = (job.queue, job.preemptible, wanted[0], wanted[1], wanted[2])
            if key in refusals:
                return refusals[key]
            problem = refusals[key] = capacity_problem(states, paths[job.queue], job, wanted)
            return problem

        chains = {name: [(n, states[n]) for n in path] for name, path in paths.items()}
        device_memory = snapshot.nodes.shared.memory
        # (MiB, devices) -> GPU thousandths such a request takes on each node (fixed)
        node_quotas: dict[tuple[int, int], npt.NDArray[np.float64]] = {}

        def node_capacity(pod: PodInfo) -> ep.DynamicConstraint | None:
            """KAI's per-node capacity predicate for a gpu-memory pod: the job-level check
            counted its smallest portion anywhere, a node charges its portion there.
            Other pods count the same on every node, so the job-level check covers them."""
            share = pod.gpu_share
            if share is None or not share.by_memory:
                return None
            job = snapshot.jobs.get(pod.job or "")
            chain = chains.get(job.queue) if job is not None else None
            if job is None or chain is None:
                return None
            shape = (share.memory, share.devices)
            quota = node_quotas.get(shape)
            if quota is None:
                quota = node_quotas[shape] = np.array(
                    [share.devices * share.portion_on(int(m)) for m in device_memory],
                    dtype=np.float64,
                )
            parts: list[tuple[ep.Mask, str]] = []
            for name, state in chain:
                cap = state.limits[0]
                if cap != UNLIMITED:
                    over = state.used[0] + quota > cap
                    if over.any():
                        parts.append(
                            (
                                ~over,
                                f"{REASON_OVER_LIMIT}: its GPU portion here would take "
                                f"queue {name} over its limit",
                            )
                        )
                cap = state.quota[0]
                if not job.preemptible and cap != UNLIMITED:
                    over = state.used_non_preemptible[0] + quota > cap
                    if over.any():
                        parts.append(
                            (
                                ~over,
                                f"{REASON_NON_PREEMPTIBLE_OVER_QUOTA}: its GPU portion here "
                                f"would take queue {name} over its deserved quota",
                            )
                        )
            return ep.DynamicConstraint(parts=parts) if parts else None

        # registered only when some pod asks for GPU memory (a dynamic constraint turns
        # allocate's shape memo off)
        if any(p.gpu_share is not None and p.gpu_share.by_memory for p in snapshot.pods):
            session.add_dynamic_constraint(node_capacity)
        moves = [0]  # allocations and deallocations so far: ``start`` is current while unchanged
        copied = [-1]

        def shift(pod: PodInfo, sign: float) -> None:
            job = snapshot.jobs.get(pod.job or "")
            chain = chains.get(job.queue) if job is not None else None
            if job is None or chain is None:
                return
            job_triples.pop(job.key, None)
            refusals.clear()
            moves[0] += 1
            amount = pod.quota if sign > 0 else [-value for value in pod.quota]
            non_preemptible = not job.preemptible
            for name, state in chain:
                state.add_allocated(amount, non_preemptible)
                key_cache.pop(name, None)
                plain_key.pop(name, None)
            best_cache.clear()

        # queue -> the request triple of a best job -> its order key; a queue's entry is
        # dropped when its accounting moves (shift), since the key reads only the two
        key_cache: dict[str, dict[tuple[float, ...], tuple[bool, bool, int, bool, float, float]]]
        key_cache = {}
        # each queue's order key without a job (the victim ranking), until its allocation moves
        plain_key: dict[str, tuple[bool, bool, int, bool, float, float]] = {}

        def cached_key(
            name: str, job: PodGroupInfo | None
        ) -> tuple[bool, bool, int, bool, float, float]:
            if not session.memoise:
                return queue_order.order_key(states[name], job_triple(job), total)
            triple = job_triple(job)
            keys = key_cache.get(name)
            if keys is None:
                keys = key_cache[name] = {}
            key = keys.get(triple)
            if key is None:
                key = keys[triple] = queue_order.order_key(states[name], triple, total)
            return key

        # (queue, its best job's request triple) per candidate, in order -> the winner;
        # cleared whenever any queue's accounting moves (shift)
        best_cache: dict[tuple[tuple[str, tuple[float, float, float]], ...], str] = {}

        def best(candidates: list[tuple[str, PodGroupInfo | None]]) -> str:
            if not session.memoise:
                return pick_best(candidates)
            # job_triple's look-up inline (a pop asks this of every queue's head)
            signature = tuple(
                [
                    (
                        name,
                        no_triple if job is None else job_triples.get(job.key) or job_triple(job),
                    )
                    for name, job in candidates
                ]
            )
            winner = best_cache.get(signature)
            if winner is None:
                winner = best_cache[signature] = pick_best(candidates)
            return winner

        def pick_best(candidates: list[tuple[str, PodGroupInfo | None]]) -> str:
            keys = [(cached_key(name, job), name, job) for name, job in candidates]
            top = min([item[0] for item in keys])
            tied = [item for item in keys if queue_order.same_tier(item[0], top)]
            winner = tied[0]
            if len(tied) == 1:  # one queue ahead on rules 1-6 (the common case)
                return winner[1]
            for item in tied[1:]:
                if (
                    queue_order.compare(
                        states[item[1]],
                        states[winner[1]],
                        job_triple(item[2]),
                        job_triple(winner[2]),
                        total,
                    )
                    < 0
                ):
                    winner = item
            return winner[1]

        start = {name: list(state.used) for name, state in states.items()}
        multiplier = self.saturation_multiplier

        def reclaim_validator(scenario: ep.Scenario) -> str | None:
            if scenario.action != "reclaim":
                return None
            return reclaimable.validate(states, start, tree, scenario, multiplier)

        class VictimRanker:
            """KAI's victim queue order: the queue order inverted, applied level by level
            from the top (the most over-served department first, then its most
            over-served child, down to a leaf). Rules 1-4, 6 and 7 read the queues as
            they are; rule 5's dominant share subtracts the chunks already taken from
            the queue's subtree plus the leaf's next victim job."""

            def __init__(self) -> None:
                self.taken: dict[str, list[float]] = {}
                self.amounts: dict[tuple[str, int], list[float]] = {}

            def amount(self, job: PodGroupInfo, pods: Sequence[PodInfo]) -> list[float]:
                cached = self.amounts.get((job.key, len(pods)))
                if cached is None:
                    cached = self.amounts[(job.key, len(pods))] = tasks_request(pods)
                return cached

            def pick(self, heads: Mapping[str, tuple[PodGroupInfo, Sequence[PodInfo]]]) -> str:
                live = {q for leaf in heads for q in paths[leaf]}
                return self.worst_leaf([r for r in tree.roots if r in live], live, heads)

            def worst_leaf(
                self,
                names: list[str],
                live: set[str],
                heads: Mapping[str, tuple[PodGroupInfo, Sequence[PodInfo]]],
            ) -> str:
                best: tuple[tuple[Any, ...], str, str] | None = None
                for name in names:
                    if name in heads:
                        leaf = name
                    else:
                        children = [c for c in tree.queues[name].children if c in live]
                        leaf = self.worst_leaf(children, live, heads)
                    nxt = self.amount(*heads[leaf])
                    gone = self.taken.get(name, no_job)
                    minus = [-(gone[r] + nxt[r]) for r in range(3)]
                    # as KAI: only the dominant share (rule 5) counts the victims
                    plain = plain_key.get(name)
                    if plain is None:
                        plain = plain_key[name] = queue_order.order_key(states[name], no_job, total)
                    share = queue_order.order_key(states[name], minus, total)[4]
                    ranked = (*plain[:4], share, plain[5])
                    if best is None or self.worse(ranked, name, best[0], best[2]):
                        best = (ranked, leaf, name)
                assert best is not None
                return best[1]

            @staticmethod
            def worse(ranked: tuple[Any, ...], name: str, other: tuple[Any, ...], of: str) -> bool:
                """Whether queue ``name`` gives a victim before ``of``: the queue order
                inverted, rules 1-6 (``ranked``), rule 7 (the larger allocatable share),
                then the younger queue, then the name."""
                if ranked != other:
                    return ranked > other
                larger = queue_order.smaller_share(states[of], states[name])
                if larger:
                    return larger < 0
                return (states[name].info.creation, name) > (states[of].info.creation, of)

            def took(self, leaf: str, pods: Sequence[PodInfo]) -> None:
                freed = tasks_request(pods)
                for name in paths[leaf]:
                    gone = self.taken.get(name, no_job)
                    self.taken[name] = [gone[r] + freed[r] for r in range(3)]

        session.set_victim_order(VictimRanker)

        def reclaim_gate(job: PodGroupInfo, tasks: Sequence[PodInfo]) -> str | None:
            """KAI's CanReclaimResources, asked once per reclaimer right before its solve.

            The validator compares victims against the queues as they were when the
            job's solve started (§5.5), so the values are copied here: a copy from the
            session's start would not see what earlier reclaims in this cycle took,
            and a second reclaimer could push a queue below its deserved share.
            """
            if copied[0] != moves[0]:
                for name, state in states.items():
                    start[name] = list(state.used)
                copied[0] = moves[0]
                gates.clear()
                gives.clear()
            if not session.memoise:
                return reclaimable.reclaim_gate(states, job, tasks, paths[job.queue])
            # the gate reads the queue path's accounting (fixed until the next move), the
            # request and preemptibility: asked of every pending reclaimer each cycle
            wanted = tasks_request(tasks)
            key = (job.queue, job.preemptible, wanted[0], wanted[1], wanted[2])
            if key not in gates:
                gates[key] = reclaimable.reclaim_gate(states, job, tasks, paths[job.queue])
            return gates[key]

        gates: dict[tuple[str, bool, float, float, float], str | None] = {}

        session.add_reclaim_gate(reclaim_gate)

        def reclaim_queue_filter(action: str, preemptor: PodGroupInfo, queue: str) -> bool:
            if action != "reclaim" or preemptor.queue not in states or queue not in states:
                return True
            pair = (preemptor.queue, queue)
            if pair not in lca:
                lca[pair] = tree.lca_children(*pair)
            if not session.memoise:
                return reclaimable.could_give(states, start, lca[pair], job_triple(preemptor))
            # reads the two queues' accounting at the copy the gate made and the request:
            # kept until the next copy (every pending reclaimer asks it of every queue)
            key = (pair, job_triple(preemptor))
            given = gives.get(key)
            if given is None:
                given = gives[key] = reclaimable.could_give(
                    states, start, lca[pair], job_triple(preemptor)
                )
            return given

        lca: dict[tuple[str, str], tuple[str, str] | None] = {}  # the tree is fixed
        gives: dict[tuple[tuple[str, str], tuple[float, float, float]], bool] = {}

        session.add_scenario_validator(reclaim_validator)
        session.add_victim_queue_filter(reclaim_queue_filter)
        session.add_queue_order(order)

        def sort_key(
            name: str, job: PodGroupInfo | None
        ) -> tuple[bool, bool, int, bool, float, float] | None:
            key = cached_key(name, job)
            return key if key[4] == key[4] and key[5] == key[5] else None  # no NaN share

        session.set_best_queue(best, ep.QueueKeys(sort_key, queue_order.may_tie))
        session.add_job_capacity_check(capacity)
        session.add_event_handlers(lambda pod: shift(pod, 1.0), lambda pod: shift(pod, -1.0))


_REQUEST = "proportion.request"


def request_triple(session: Session, job: PodGroupInfo) -> tuple[float, float, float]:
    """:func:`tasks_request` of the job's tasks to allocate, kept on the job while its pods
    keep their statuses (:meth:`Session.carried_memo`): the queue order asks it of every
    pending job each cycle, and the backlog's jobs are the same from cycle to cycle."""
    return session.carried_memo(_REQUEST, job, _request_triple, session, job)


def _request_triple(session: Session, job: PodGroupInfo) -> tuple[float, float, float]:
    gpu, cpu, memory = tasks_request(gang.tasks_to_allocate(session, job))
    return (gpu, cpu, memory)


def tasks_request(tasks: Sequence[PodInfo]) -> list[float]:
    """GPU, CPU and memory of the tasks together, as plain floats (engine units)."""
    gpu = cpu = memory = 0.0
    for task in tasks:
        # pod_amounts without its copy: read, not kept (about 57,000 pods a cycle)
        task_gpu, task_cpu, task_memory = task.quota
        gpu += task_gpu
        cpu += task_cpu
        memory += task_memory
    return [gpu, cpu, memory]


def capacity_request(tasks: Sequence[PodInfo], max_memory: int) -> list[float]:
    """:func:`tasks_request` as the job-level capacity check counts it (KAI's
    ``getRequiredQuota``): a gpu-memory pod counts devices x memory / the largest
    labelled device memory (``max_memory``; nothing when it is 0), not its queue quota."""
    gpu = cpu = memory = 0.0
    for task in tasks:
        task_gpu, task_cpu, task_memory = task.quota
        share = task.gpu_share
        if share is not None and share.by_memory:
            task_gpu = gpu_sharing.capacity_quota(share, max_memory)
        gpu += task_gpu
        cpu += task_cpu
        memory += task_memory
    return [gpu, cpu, memory]


def _first_over(used: list[float], cap: list[float], wanted: list[float]) -> int | None:
    """The first resource asked for where ``used + wanted`` passes a set cap (-1 = none)."""
    for r in range(3):
        if wanted[r] > 0 and cap[r] != UNLIMITED and used[r] + wanted[r] > cap[r]:
            return r
    return None


def capacity_problem(
    states: dict[str, QueueState], path: list[str], job: PodGroupInfo, wanted: list[float]
) -> str | None:
    """OverLimit / NonPreemptibleOverQuota at the first queue on the path that refuses the job."""
    for name in path:
        state = states[name]
        over = _first_over(state.used, state.limits, wanted)
        if over is not None:
            asked = format_queue_vector(np.array(wanted))
            return (
                f"{REASON_OVER_LIMIT}: {_RESOURCE_NAMES[over]} request of {asked} would take queue "
                f"{name} over its limit; {state.describe()}"
            )
        if not job.preemptible:
            over = _first_over(state.used_non_preemptible, state.quota, wanted)
            if over is not None:
                in_use = format_queue_vector(state.allocated_non_preemptible)
                return (
                    f"{REASON_NON_PREEMPTIBLE_OVER_QUOTA}: non-preemptible job needs "
                    f"{format_queue_vector(np.array(wanted))}; queue {name} would exceed its "
                    f"deserved {_RESOURCE_NAMES[over]} quota (non-preemptible allocated "
                    f"{in_use}); {state.describe()}"
                )
    return None


__all__ = ["GPU_UNIT", "STATE_KEY", "ProportionPlugin", "capacity_problem"]
