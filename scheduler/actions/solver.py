"""The shared disruption solver: accumulate victims, simulate, keep the first valid scenario.

Why: reclaim, preempt and consolidation all ask "which running pods must go so
that this pending gang can start", and must never evict a pod that did not
need to go. Victim chunks are added one at a time in victim order; after each
addition the scenario is simulated inside a Statement: evict the recorded
victims, place the preemptor's tasks (pipeline-only: they bind after the
victims are gone; inside a topology domain when the PodGroup asks for one),
then try to re-place every victim job whole. A victim
re-placed on its own node simply stays; one re-placed elsewhere moves. The
first scenario in which the preemptor fits and the validators agree is kept;
everything else is rolled back exactly. Bounded: at most ``max_victim_chunks``
victim chunks per preemptor, ``max_simulations_per_action`` simulations per
action and cycle, and a scenario is simulated only when the freed resources
plus all free capacity cover the gang.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from scheduler.actions.victims import iter_chunks
from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import PodInfo
from scheduler.api.resources import GPU, GPU_UNIT, Vector
from scheduler.framework import extension_points as ep
from scheduler.framework import gang, gpu_placement
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from scheduler.framework.topology_placement import place_tasks


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
    for _, chunk in recorded:
        for pod in chunk:
            statement.evict(pod, action, job.key)
    if session.job_capacity_problem(job, tasks):
        return None
    if place_tasks(session, statement, job, tasks, pipeline_only=True, explain=False):
        return None
    victims: list[tuple[PodGroupInfo, list[PodInfo]]] = []
    for (victim, chunk), home in zip(recorded, homes, strict=True):
        # a victim is re-placed only within its queues' limits, as allocate would place it
        moved = not session.job_capacity_problem(victim, chunk) and _replace(
            session, statement, victim, chunk, home
        )
        stays = moved and all(pod.node == node for pod, node in zip(chunk, home, strict=True))
        if not moved:
            if must_replace_all:
                return None
            victims.append((victim, chunk))
        elif not stays and action != "consolidation":
            victims.append((victim, [p for p, n in zip(chunk, home, strict=True) if p.node != n]))
    return ep.Scenario(action, job, tasks, victims)


def solve(
    session: Session,
    job: PodGroupInfo,
    candidates: Iterable[PodGroupInfo],
    action: str,
    *,
    must_replace_all: bool = False,
    max_chunks: int | None = None,
) -> str | None:
    """Commit the first valid scenario that lets ``job`` start; None on success, else why not."""
    if max_chunks is None:
        max_chunks = session.config.max_victim_chunks
    session.simulation_budget.setdefault(action, session.config.max_simulations_per_action)
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
    for candidate in candidates:
        for chunk in iter_chunks(session, candidate):
            if tried >= max_chunks:
                statement.discard()
                return f"{last_problem} (stopped after {max_chunks} victim chunks)"
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
            if session.simulation_budget.get(action, 0) <= 0:
                statement.discard()
                return f"{last_problem} (simulation budget of this cycle used up)"
            session.simulation_budget[action] = session.simulation_budget.get(action, 0) - 1
            token = statement.checkpoint()
            scenario = _simulate(session, statement, job, tasks, recorded, action, must_replace_all)
            if scenario is not None:
                problem = session.scenario_problem(scenario)
                moved = len(statement.kept_victims()) < sum(len(c) for _, c in recorded)
                if problem is None and moved and (scenario.victims or action == "consolidation"):
                    statement.commit()
                    return None
                if problem:
                    last_problem = problem
            statement.rollback(token)
    statement.discard()
    return last_problem
