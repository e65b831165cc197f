"""The project's own trace CSV: one row per job (a gang of identical pods).

Why: most schedulers' logs can be exported to a few columns; this format is
the smallest that still carries gangs, teams and priorities
(docs/simulate.md)::

    submit_time,team,gpus_per_pod,pods_per_gang,duration,priority,cpu,memory,name
    0,research,1,4,2h,train,8,32Gi,pretrain
    30,prod,0.5,1,10m,inference,,,

* ``submit_time`` and ``duration``: seconds, or durations such as ``90s``,
  ``10m``, ``1h30m`` (required);
* ``team``: the queue (required); ``gpus_per_pod``: a number, a fraction below
  1 is a shared GPU (``gpu-fraction``) (required); ``pods_per_gang``: default
  1, all pods start together; ``priority``: a PriorityClass name, default
  ``train``;
* optional ``cpu`` (cores per pod, default 1), ``memory`` (per pod, a
  quantity such as ``16Gi`` or a number of GiB, default 4Gi), ``name``
  (default ``job-<line>``). Any other column is an error.

Jobs go to namespace ``sim``; a team missing from the cluster's queues is an
error when the cluster lists queues, and gets its own queue when it lists none.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from crds.names import BUILTIN_PRIORITY_CLASSES
from crds.quantities import QuantityError, parse_quantity
from simulator import objects
from simulator.model import Scenario, SimJob
from simulator.rows import Row, read_rows

NAMESPACE = "sim"
REQUIRED = ("submit_time", "team", "gpus_per_pod", "duration")
COLUMNS = (
    "submit_time", "team", "gpus_per_pod", "pods_per_gang", "duration", "priority", "cpu",
    "memory", "name",
)  # fmt: skip
"""Every column, in the documented order: any other is an error, not silently dropped."""
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _memory_mib(row: Row) -> int:
    raw = row.text("memory")
    if not raw:
        return 4096
    try:
        return int(float(raw) * 1024)
    except ValueError:
        pass
    try:
        return int(parse_quantity(raw) / (1024 * 1024))
    except QuantityError as exc:
        raise row.error("memory", str(exc)) from None


def read_jobs(
    path: str,
    queue_names: set[str] | None,
    priorities: set[str],
    parents: Mapping[str, list[str]] | None = None,
) -> list[SimJob]:
    """The jobs of a CSV trace; ``queue_names`` are the cluster's queues (None: any team),
    ``parents`` each parent queue's children: a team must name a leaf queue."""
    jobs: list[SimJob] = []
    seen: set[str] = set()
    for row in read_rows(path, REQUIRED, COLUMNS):
        arrival = row.seconds("submit_time")
        team = row.text("team")
        if not team:
            raise row.error("team", "is required")
        problem = None if queue_names is None else objects.missing_queue(team, queue_names)
        if problem is not None:
            raise row.error("team", problem)
        if parents and team in parents:
            raise row.error(
                "team",
                f"queue {team!r} is a parent queue (of {', '.join(sorted(parents[team]))}):"
                " jobs go to a leaf queue, as in KAI, and would never start here",
            )
        gpus = row.number("gpus_per_pod")
        if gpus > 1 and not gpus.is_integer():
            raise row.error("gpus_per_pod", f"more than one GPU must be whole GPUs, got {gpus:g}")
        pods = row.integer("pods_per_gang", default=1, minimum=1)
        duration = row.seconds("duration")
        if duration <= 0:
            raise row.error("duration", "must be positive")
        priority = row.text("priority") or "train"
        if priority not in priorities:
            known = ", ".join(sorted(priorities))
            raise row.error("priority", f"unknown PriorityClass {priority!r}; known: {known}")
        cpu_milli = int(row.number("cpu", default=1.0) * 1000)
        memory = _memory_mib(row)
        name = row.text("name") or f"job-{row.line}"
        if not _NAME.match(name):
            raise row.error("name", f"not a valid Kubernetes name: {name!r}")
        if name in seen:
            raise row.error("name", f"duplicate job name {name!r}")
        seen.add(name)
        jobs.append(
            SimJob(
                key=f"{NAMESPACE}/{name}",
                queue=team,
                arrival=arrival,
                duration=duration,
                pod_group=objects.pod_group(
                    NAMESPACE,
                    name,
                    queue=team,
                    priority_class=priority,
                    min_member=pods,
                    created=arrival,
                ),
                pods=[
                    objects.pod(
                        NAMESPACE,
                        f"{name}-{i}",
                        pod_group=name,
                        queue=team,
                        priority_class=priority,
                        cpu_milli=cpu_milli,
                        memory_mib=memory,
                        gpus=gpus,
                        created=arrival,
                    )
                    for i in range(pods)
                ],
                pod_gpus=[gpus] * pods,
                origin=f"{path}: {row.where()}",
            )
        )
    return jobs


def load(path: str, cluster: Scenario) -> Scenario:
    """``cluster`` with the CSV's jobs; a queue per team when the cluster lists none."""
    named = {str(q["metadata"]["name"]) for q in cluster.queues}
    priorities = set(BUILTIN_PRIORITY_CLASSES) | {
        str(c["metadata"]["name"]) for c in cluster.priority_classes
    }
    parents: dict[str, list[str]] = {}
    for queue in cluster.queues:
        parent = (queue.get("spec") or {}).get("parentQueue")
        if parent:
            parents.setdefault(str(parent), []).append(str(queue["metadata"]["name"]))
    jobs = read_jobs(path, named or None, priorities, parents)
    if not named:
        cluster.queues = [objects.queue(team) for team in sorted({job.queue for job in jobs})]
    cluster.jobs = jobs
    cluster.source = path
    return cluster
