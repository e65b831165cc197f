"""KAI Scheduler's own benchmark topologies, as the cluster objects podmuster reads.

Why: KAI's scheduler ships benchmarks for each action (its actions' benchmark
file and its ReclaimLargeJobs benchmark, tag v0.17.0). Running podmuster on the
same shapes shows whether it makes the same decisions, not only how fast it is.
The facts taken from those benchmarks (no code): nodes of 8 GPUs; 1-GPU jobs of
one pod at priority ``train``, job ``i`` in queue ``i % 4``; a two-level queue
tree of two departments (half the GPUs each) over four leaf queues (a quarter
each, over-quota weight 1); running jobs placed on node ``i % nodes``; "mixed"
runs the even jobs and leaves the odd ones pending; gang jobs of several 1-GPU
pods; "many queues" spreads the leaves over ``ceil(queues / 4)`` departments;
ReclaimLargeJobs fills every GPU with 1-GPU jobs of a queue that deserves
nothing (weight 0) and submits to a queue that deserves every GPU one job of
``nodes / 2`` pods of 8 GPUs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks.generate import GPUS_PER_NODE, group_object, node, pod_object, queue_object

Obj = dict[str, Any]
PRIORITY = "train"  # KAI's PriorityTrainNumber


@dataclass(frozen=True)
class Topology:
    """A KAI benchmark cluster: its objects and the names of its pending jobs."""

    name: str
    objects: list[Obj]
    pending_jobs: frozenset[str]  # "namespace/name"


def _node_name(i: int) -> str:
    return str(node(i)["metadata"]["name"])


def _two_departments(nodes: int) -> list[Obj]:
    total = float(nodes * GPUS_PER_NODE)
    out = [
        queue_object("dept-a", None, total / 2, 1, 0),
        queue_object("dept-b", None, total / 2, 1, 1),
    ]
    for q in range(4):
        out.append(queue_object(f"queue-{q}", "dept-a" if q < 2 else "dept-b", total / 4, 1, 2 + q))
    return out


def _job(name: str, queue: str, created: int, gpus: int, placed: list[str | None]) -> list[Obj]:
    """A PodGroup of ``len(placed)`` pods of ``gpus`` GPUs each; None leaves a pod pending."""
    ns = f"ns-{queue}"
    pods = [
        pod_object(f"{name}-{k}", name, ns, gpus, "1", "1Gi", created, where)
        for k, where in enumerate(placed)
    ]
    return [group_object(name, ns, queue, len(placed), created, PRIORITY), *pods]


def _jobs(
    nodes: int,
    jobs: int,
    queues: int,
    running: Callable[[int], bool],
    tasks: int = 1,
) -> tuple[list[Obj], frozenset[str]]:
    objects: list[Obj] = []
    pending = set()
    for i in range(jobs):
        queue = f"queue-{i % queues}"
        where = _node_name(i % nodes) if running(i) else None
        objects += _job(f"job-{i}", queue, i, 1, [where] * tasks)
        if where is None:
            pending.add(f"ns-{queue}/job-{i}")
    return objects, frozenset(pending)


def _cluster(
    name: str, nodes: int, queues: list[Obj], jobs: tuple[list[Obj], frozenset[str]]
) -> Topology:
    objects = [node(i) for i in range(nodes)] + queues + jobs[0]
    return Topology(name, objects, jobs[1])


def pending(nodes: int, jobs: int) -> Topology:
    """Every job pending (KAI's allocate benchmark)."""
    return _cluster(
        "pending", nodes, _two_departments(nodes), _jobs(nodes, jobs, 4, lambda i: False)
    )


def running(nodes: int, jobs: int) -> Topology:
    """Every job running on node ``i % nodes`` (KAI's reclaim benchmark)."""
    return _cluster(
        "running", nodes, _two_departments(nodes), _jobs(nodes, jobs, 4, lambda i: True)
    )


def mixed(nodes: int, jobs: int) -> Topology:
    """Even jobs running, odd ones pending (KAI's preempt, consolidation and full-cycle ones)."""
    return _cluster(
        "mixed", nodes, _two_departments(nodes), _jobs(nodes, jobs, 4, lambda i: i % 2 == 0)
    )


def gangs(nodes: int, jobs: int, tasks: int = 4) -> Topology:
    """Pending gang jobs of ``tasks`` 1-GPU pods (KAI's gang-scheduling benchmark)."""
    return _cluster(
        "gangs", nodes, _two_departments(nodes), _jobs(nodes, jobs, 4, lambda i: False, tasks)
    )


def many_queues(nodes: int, jobs: int, queues: int = 20) -> Topology:
    """Pending jobs over ``queues`` leaves in ``ceil(queues / 4)`` departments."""
    total = float(nodes * GPUS_PER_NODE)
    departments = max(1, (queues + 3) // 4)
    tree = [queue_object(f"dept-{d}", None, total / departments, 1, d) for d in range(departments)]
    tree += [
        queue_object(f"queue-{q}", f"dept-{q % departments}", total / queues, 1, departments + q)
        for q in range(queues)
    ]
    return _cluster("many-queues", nodes, tree, _jobs(nodes, jobs, queues, lambda i: False))


LARGE_JOB = "very-large-job"
LARGE_JOB_GPUS_PER_TASK = GPUS_PER_NODE


def large_job_tasks(nodes: int) -> int:
    """Pods of ReclaimLargeJobs' pending job: half the nodes, one whole node each."""
    return nodes // 2


def large_job(nodes: int, tasks: int | None = None) -> Topology:
    """ReclaimLargeJobs: every GPU runs a 1-GPU job of queue-0 (deserves 0); queue-1 (deserves
    every GPU) submits one job of ``tasks`` (default ``nodes / 2``) pods of 8 GPUs."""
    tasks = large_job_tasks(nodes) if tasks is None else tasks
    total = float(nodes * GPUS_PER_NODE)
    tree = [queue_object("queue-0", None, 0, 0, 0), queue_object("queue-1", None, total, 0, 1)]
    objects: list[Obj] = []
    for i in range(nodes * GPUS_PER_NODE):
        objects += _job(f"running-job-{i}", "queue-0", i, 1, [_node_name(i % nodes)])
    created = nodes * GPUS_PER_NODE
    objects += _job(LARGE_JOB, "queue-1", created, LARGE_JOB_GPUS_PER_TASK, [None] * tasks)
    return _cluster("large-job", nodes, tree, (objects, frozenset({f"ns-queue-1/{LARGE_JOB}"})))
