"""The shared disruption solver: accumulate victims, simulate, keep the first valid scenario.

Why: reclaim, preempt and consolidation all ask "which running pods must go so
that this pending gang can start", and must never evict a pod that did not
need to go. Victim chunks are added one at a time in victim order. Once the
recorded ones could make room at all (cheap filters: freed plus free resources
cover the gang; enough nodes could each hold a task), the victims to try are
chosen within them node by node, as KAI does (:func:`node_subsets`: the fewest
nodes that can hold the gang, then more), and each choice is simulated inside a
Statement: evict those victims, place the preemptor's tasks (pipeline-only:
they bind after the victims are gone; on the nodes the victims freed if the
gang fits there whole, else anywhere; inside a topology domain when the
PodGroup asks for one), then try to re-place every victim job whole. A victim
re-placed on its own node simply stays; one re-placed elsewhere moves. The
first scenario in which the preemptor fits and the validators agree is kept;
everything else is rolled back exactly. Bounded by work and time, generously
enough to change no decision on the benchmark shapes: ``max_simulations_per_action``
simulations per action and cycle, ``max_action_search_s`` and
``max_job_search_s`` seconds of search, and (unset by default)
``max_victim_chunks`` chunks per preemptor.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator

import numpy as np

from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import ACTIVE_ALLOCATED, PodInfo
from scheduler.api.resources import GPU, GPU_UNIT, Vector
from scheduler.framework import extension_points as ep
from scheduler.framework import gang, gpu_placement
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from scheduler.framework.topology_placement import place_tasks

UNLIMITED = 1 << 62  # a budget never used up
now = time.monotonic  # the search clock (a test may replace it)


def _fits_on(session: Session, pod: PodInfo, node: int) -> bool:
    if pod.gpu_share is not None:
        return gpu_placement.fits_on(session, pod, node)
    nodes = session.snapshot.nodes
    allowed = session.allowed_mask(pod)
    return bool(allowed[node]) and bool((nodes.free[:, node] >= pod.request).all())


def _frees(pod: PodInfo) -> Vector:
    """At most what evicting ``pod`` gives back (a shared pod: possibly its whole devices)."""
    if pod.gpu_share is None:
        return pod.request
    frees = pod.request.copy()
    frees[GPU] += GPU_UNIT * len(pod.gpu_groups)
    return frees


def _replace(
    session: Session,
    statement: Statement,
    victim: PodGroupInfo,
    tasks: list[PodInfo],
    home: list[int],
) -> bool:
    """Re-place one victim chunk whole: its own node first, else the best node.

    A victim with a topology constraint either stays where it is or is placed
    whole by the topology routine, never pod by pod outside its domain.
    """
    token = statement.checkpoint()
    for pod, node in zip(tasks, home, strict=True):
        if node >= 0 and _fits_on(session, pod, node):
            statement.pipeline(pod, node)
            continue
        if victim.topology_tree is not None:
            statement.rollback(token)
            return (
                place_tasks(session, statement, victim, tasks, pipeline_only=True, explain=False)
                is None
            )
        placement = session.place(pod, pipeline_only=True)
        if placement is None:
            statement.rollback(token)
            return False
        statement.pipeline(pod, placement.node)
    return True


def _stay_home(
    session: Session,
    statement: Statement,
    chunks: list[tuple[PodGroupInfo, list[PodInfo]]],
    homes: list[list[int]],
) -> bool:
    """Keep one victim job's chunks where they run, all or none (rolled back if not all fit)."""
    token = statement.checkpoint()
    for (victim, chunk), home in zip(chunks, homes, strict=True):
        if session.job_capacity_problem(victim, chunk) or not _pipeline_home(
            session, statement, chunk, home
        ):
            statement.rollback(token)
            return False
    return True


def _pipeline_home(
    session: Session, statement: Statement, chunk: list[PodInfo], home: list[int]
) -> bool:
    for pod, node in zip(chunk, home, strict=True):
        if node < 0 or not _fits_on(session, pod, node):
            return False
        statement.pipeline(pod, node)
    return True


def _replace_job(
    session: Session,
    statement: Statement,
    chunks: list[tuple[PodGroupInfo, list[PodInfo]]],
    homes: list[list[int]],
    active: set[int],
) -> list[bool]:
    """Re-place one victim job's chunks; which of them (in ``chunks`` order) land again.

    The chunks are placed in allocation order, the reverse of the order they were
    taken: the job's core first, then its surplus pods, the first in task order
    first (KAI places a victim job as allocate would). So when room is short, the
    pods that stay are those allocate would keep, and the surplus pods go. A job
    whose lost chunks would leave the pods it keeps below its requirement loses
    them all (its re-placements are rolled back): a gang never runs partly, so
    surplus pods re-placed on their nodes do not stay once its core is gone.
    """
    token = statement.checkpoint()
    victim = chunks[0][0]
    landed = [False] * len(chunks)
    for index in reversed(range(len(chunks))):
        chunk = chunks[index][1]
        # a victim is re-placed only within its queues' limits, as allocate would place it
        landed[index] = not session.job_capacity_problem(victim, chunk) and _replace(
            session, statement, victim, chunk, homes[index]
        )
    if all(landed):
        return landed
    lost = {
        id(pod) for (_, chunk), ok in zip(chunks, landed, strict=True) if not ok for pod in chunk
    }
    kept = active - lost
    if victim.requirement_met(lambda ps: sum(1 for p in ps.pods if id(p) in kept)):
        return landed
    statement.rollback(token)
    return [False] * len(chunks)


def _place_on_freed(
    session: Session,
    statement: Statement,
    job: PodGroupInfo,
    tasks: list[PodInfo],
    recorded: list[tuple[PodGroupInfo, list[PodInfo]]],
) -> bool:
    """Place the preemptor on the nodes its victims ran on, if it fits there whole.

    KAI pipelines the preemptor onto the room its victims free: the node-by-node
    subset was chosen because those nodes can hold the gang, and room elsewhere is
    kept for the victims that must move (docs/semantics.md §5.2). Not for a
    topology-constrained gang, whose domains are chosen by their own routine.
    """
    if job.topology_tree is not None:
        return False
    freed = np.zeros(len(session.snapshot.nodes), dtype=bool)
    for _, chunk in recorded:
        for pod in chunk:
            if pod.node >= 0:
                freed[pod.node] = True
    if freed.all():
        return False
    session.restrict_nodes(freed)
    try:
        problem = place_tasks(session, statement, job, tasks, pipeline_only=True, explain=False)
        return problem is None
    finally:
        session.restrict_nodes(None)


def _simulate(
    session: Session,
    statement: Statement,
    job: PodGroupInfo,
    tasks: list[PodInfo],
    recorded: list[tuple[PodGroupInfo, list[PodInfo]]],
    action: str,
    must_replace_all: bool,
) -> ep.Scenario | None:
    homes = [[pod.node for pod in chunk] for _, chunk in recorded]
    active = {
        id(pod)
        for victim in {v.key: v for v, _ in recorded}.values()
        for pod in victim.iter_pods()
        if pod.status in ACTIVE_ALLOCATED
    }
    for _, chunk in recorded:
        for pod in chunk:
            statement.evict(pod, action, job.key)
    if session.job_capacity_problem(job, tasks):
        return None
    if not _place_on_freed(session, statement, job, tasks, recorded) and place_tasks(
        session, statement, job, tasks, pipeline_only=True, explain=False
    ):
        return None
    by_job: dict[str, list[int]] = {}
    for index, (victim, _) in enumerate(recorded):
        by_job.setdefault(victim.key, []).append(index)
    victims: list[tuple[PodGroupInfo, list[PodInfo]]] = []
    # Jobs that can stay where they run, every chunk, stay first: a job moved
    # elsewhere must not take the home of one that could have stayed.
    outcomes: dict[str, list[bool]] = {}
    for key, indexes in by_job.items():
        if _stay_home(
            session, statement, [recorded[i] for i in indexes], [homes[i] for i in indexes]
        ):
            outcomes[key] = [True] * len(indexes)
    for key, indexes in by_job.items():
        outcome = outcomes.get(key) or _replace_job(
            session, statement, [recorded[i] for i in indexes], [homes[i] for i in indexes], active
        )
        for (victim, chunk), home, moved in zip(
            (recorded[i] for i in indexes), (homes[i] for i in indexes), outcome, strict=True
        ):
            stays = moved and all(pod.node == node for pod, node in zip(chunk, home, strict=True))
            if not moved:
                if must_replace_all:
                    return None
                victims.append((victim, chunk))
            elif not stays and action != "consolidation":
                victims.append(
                    (victim, [p for p, n in zip(chunk, home, strict=True) if p.node != n])
                )
    return ep.Scenario(action, job, tasks, victims, recorded)


def solve(
    session: Session,
    job: PodGroupInfo,
    chunks: Iterable[tuple[PodGroupInfo, list[PodInfo]]],
    action: str,
    *,
    must_replace_all: bool = False,
    max_chunks: int | None = None,
) -> str | None:
    """Commit the first valid scenario that lets ``job`` start; None on success, else why not."""
    if max_chunks is None:
        max_chunks = session.config.max_victim_chunks
    limit = session.config.max_simulations_per_action
    session.simulation_budget.setdefault(action, UNLIMITED if limit is None else limit)
    tasks = gang.tasks_to_allocate(session, job)
    if not tasks:
        return "nothing to place"
    if must_replace_all:
        # every victim lands again, so the queues keep their usage: check as allocate does
        problem = session.job_capacity_problem(job, tasks)
        if problem:
            return problem
    statement = session.statement()
    recorded: list[tuple[PodGroupInfo, list[PodInfo]]] = []
    last_problem = "no victim would make room"
    tried = 0
    clock = _SearchClock(session, action)
    # Cheap filter: a scenario is simulated only once the freed resources plus
    # everything free in the cluster cover the whole gang (a necessary condition).
    nodes = session.snapshot.nodes
    need = sum((task.request for task in tasks), np.zeros(nodes.free.shape[0], dtype=np.int64))
    available = np.maximum(nodes.free, 0).sum(axis=1)
    # ... and, for a gang of equal GPU tasks, once enough nodes could each hold one more task
    # (KAI's greedy per-node GPU check, counting the victims' GPUs on their nodes).
    gpu_sizes = {int(task.request[GPU]) for task in tasks}
    per_task_gpu = gpu_sizes.pop() if len(gpu_sizes) == 1 else 0
    node_gpus = np.maximum(nodes.free[GPU], 0).astype(np.int64)
    seen: set[frozenset[int]] = set()
    for chunk in chunks:
        if max_chunks is not None and tried >= max_chunks:
            statement.discard()
            return f"{last_problem} (stopped after {max_chunks} victim chunks)"
        stop = clock.exceeded()
        if stop:
            statement.discard()
            return f"{last_problem} ({stop})"
        tried += 1
        recorded.append(chunk)
        for pod in chunk[1]:
            frees = _frees(pod)
            available = available + frees
            if pod.node >= 0:
                node_gpus[pod.node] += frees[GPU]
        if (available < need).any():
            continue
        if per_task_gpu > 0 and int((node_gpus // per_task_gpu).sum()) < len(tasks):
            continue
        for subset in node_subsets(session, tasks, recorded):
            if subset in seen:
                continue
            seen.add(subset)
            if session.simulation_budget.get(action, 0) <= 0:
                statement.discard()
                return f"{last_problem} (simulation budget of this cycle used up)"
            session.simulation_budget[action] = session.simulation_budget.get(action, 0) - 1
            victims = [c for i, c in enumerate(recorded) if i in subset]
            token = statement.checkpoint()
            scenario = _simulate(session, statement, job, tasks, victims, action, must_replace_all)
            if scenario is not None:
                problem = session.scenario_problem(scenario)
                moved = len(statement.kept_victims()) < sum(len(c) for _, c in victims)
                if problem is None and moved and (scenario.victims or action == "consolidation"):
                    statement.commit()
                    return None
                if problem:
                    last_problem = problem
            statement.rollback(token)
    statement.discard()
    return last_problem


def node_subsets(
    session: Session, tasks: list[PodInfo], recorded: list[tuple[PodGroupInfo, list[PodInfo]]]
) -> Iterator[frozenset[int]]:
    """Which of the recorded victim chunks to try, as sets of indexes into ``recorded``.

    KAI's node-aware choice (its scenario builder's sub-scenarios): a gang of GPU
    tasks needs whole GPUs on nodes, so victims are taken node by node. The nodes
    holding recorded victims are ranked by what they could offer (their free GPUs
    plus the victims' GPUs there), smallest first, then by which came first in
    victim order; a node offering less than the smallest task is left out. The
    first subset is the fewest such nodes whose offer, with the free GPUs of nodes
    holding no victim, covers the gang; then one node more, two, four, ... up to all
    of them. A subset holds every chunk with a pod on its nodes, and the chunks of
    those victims' jobs that must go with them. A gang without GPUs is tried with
    every recorded chunk, as before.
    """
    demand = sum(int(task.request[GPU]) for task in tasks)
    if demand <= 0:
        yield frozenset(range(len(recorded)))
        return
    smallest = min(int(task.request[GPU]) for task in tasks)
    free = np.maximum(session.snapshot.nodes.free[GPU], 0)
    offer: dict[int, int] = {}
    first_seen: dict[int, int] = {}
    chunks_on: dict[int, list[int]] = {}
    for index, (_, pods) in enumerate(recorded):
        for pod in pods:
            if pod.node < 0:
                continue
            if pod.node not in offer:
                offer[pod.node] = int(free[pod.node])
                first_seen[pod.node] = index
                chunks_on[pod.node] = []
            offer[pod.node] += int(_frees(pod)[GPU])
            if not chunks_on[pod.node] or chunks_on[pod.node][-1] != index:
                chunks_on[pod.node].append(index)
    ranked = sorted(
        (n for n in offer if offer[n] >= smallest), key=lambda n: (offer[n], first_seen[n])
    )
    remaining = demand - (int(free.sum()) - sum(int(free[n]) for n in offer))
    k, covered = 0, 0
    while k < len(ranked) and covered < remaining:
        covered += offer[ranked[k]]
        k += 1
    if covered < remaining:
        return
    step = 1
    while True:
        yield _with_job_mates(recorded, {i for n in ranked[:k] for i in chunks_on[n]})
        if k >= len(ranked):
            return
        k = min(len(ranked), k + step)
        step *= 2


def _with_job_mates(
    recorded: list[tuple[PodGroupInfo, list[PodInfo]]], chosen: set[int]
) -> frozenset[int]:
    """``chosen`` and every earlier chunk of the same jobs (a job's chunks go in order)."""
    jobs = {recorded[i][0].key for i in chosen}
    last: dict[str, int] = {}
    for i in chosen:
        key = recorded[i][0].key
        last[key] = max(last.get(key, -1), i)
    return frozenset(
        i for i, (job, _) in enumerate(recorded) if job.key in jobs and i <= last[job.key]
    )


class _SearchClock:
    """The time budgets: this preemptor's search, and the action's within the cycle."""

    def __init__(self, session: Session, action: str) -> None:
        config = session.config
        start = now()
        if config.max_action_search_s is not None:
            session.search_deadline.setdefault(action, start + config.max_action_search_s)
        self.action_deadline = session.search_deadline.get(action)
        self.job_deadline = (
            None if config.max_job_search_s is None else start + config.max_job_search_s
        )
        self.action_limit = config.max_action_search_s
        self.job_limit = config.max_job_search_s

    def exceeded(self) -> str | None:
        """Why the search must stop now, or None."""
        if self.action_deadline is None and self.job_deadline is None:
            return None
        current = now()
        if self.job_deadline is not None and current >= self.job_deadline:
            return f"search time of {self.job_limit:g}s for one job used up"
        if self.action_deadline is not None and current >= self.action_deadline:
            return f"search time of {self.action_limit:g}s for the action used up"
        return None
