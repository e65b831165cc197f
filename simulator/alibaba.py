"""The Alibaba GPU 2023 trace (``openb`` CSV layout) as a simulation scenario.

Why: it is the public trace of a production GPU-sharing cluster (1,523 nodes,
8,152 pods with fractional GPUs), the natural benchmark for "what would this
scheduler do with real load".

Mapping (docs/simulate.md):

* a node row (``sn, cpu_milli, memory_mib, gpu, model``) is a Node with that
  allocatable and the label ``nvidia.com/gpu.product: <model>``;
* a pod row is a one-pod PodGroup in namespace ``openb``. ``num_gpu`` whole
  GPUs, except ``num_gpu = 1`` with ``gpu_milli < 1000``: a shared GPU, the
  annotation ``gpu-fraction: gpu_milli/1000`` and no ``nvidia.com/gpu``.
  ``gpu_spec`` (``T4|P100``) becomes required node affinity on the model label;
* ``creation_time`` is the arrival; the duration is ``deletion_time -
  scheduled_time`` (how long the pod ran in the production cluster). Rows with
  no ``scheduled_time`` (never scheduled there), no ``deletion_time``, or a
  duration that is not positive are skipped and counted by reason;
* ``qos`` picks the queue: one queue per QoS class (``ls``, ``be``,
  ``burstable``, ``guaranteed``), no quota, over-quota weight 1; and the
  priority class: ``BE`` is ``train`` (50), every other class
  ``build-preemptible`` (75). All are preemptible, so no queue is held to a
  quota it does not have;
* a pod list without time columns (the ``multigpu50`` variant) is replayed as
  static placement: pod ``i`` arrives at second ``i`` and never ends.
"""

from __future__ import annotations

import os

from crds.errors import InputError
from simulator import objects
from simulator.model import Scenario, SimJob
from simulator.rows import Row, read_rows

NAMESPACE = "openb"
NODE_FILES = ("openb_node_list_all_node.csv", "openb_node_list_gpu_node.csv")
POD_FILE = "openb_pod_list_default.csv"
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
TIME_COLUMNS = ("creation_time", "deletion_time", "scheduled_time")
QOS_QUEUES = {"LS": "ls", "BE": "be", "Burstable": "burstable", "Guaranteed": "guaranteed"}
QOS_PRIORITY = {"BE": "train"}
DEFAULT_PRIORITY = "build-preemptible"
STATIC_DURATION = float("inf")


def load(directory: str, pods_file: str | None = None) -> Scenario:
    """The scenario of a trace directory (and optionally another pod list)."""
    if not os.path.isdir(directory):
        raise InputError("not a directory (expected the trace's CSV files)", source=directory)
    node_file = next(
        (os.path.join(directory, name) for name in NODE_FILES if _exists(directory, name)), None
    )
    if node_file is None:
        raise InputError(f"no {' or '.join(NODE_FILES)} in the directory", source=directory)
    pod_file = (
        os.path.join(directory, POD_FILE) if pods_file is None else _pod_list(directory, pods_file)
    )
    nodes = read_nodes(node_file)
    jobs, skipped = read_pods(pod_file)
    queues = sorted({job.queue for job in jobs})
    return Scenario(
        nodes=nodes,
        queues=[objects.queue(name) for name in queues],
        jobs=jobs,
        skipped=skipped,
        source=pod_file,
    )


def _exists(directory: str, name: str) -> bool:
    return os.path.isfile(os.path.join(directory, name))


POD_LIST_PREFIX = "openb_pod_list_"


def _pod_list(directory: str, given: str) -> str:
    """The pod list ``--pods`` names: a file as given, else one of the trace directory's
    by file name (``openb_pod_list_gpushare40.csv``) or by its variant (``gpushare40``)."""
    variant = os.path.join(directory, f"{POD_LIST_PREFIX}{given}.csv")
    for candidate in (given, os.path.join(directory, given), variant):
        if os.path.isfile(candidate):
            return candidate
    lists = sorted(
        name[len(POD_LIST_PREFIX) : -len(".csv")]
        for name in os.listdir(directory)
        if name.startswith(POD_LIST_PREFIX) and name.endswith(".csv")
    )
    named = ", ".join(lists) or "none"
    raise InputError(
        f"no such pod list, as a file or in {directory} (its pod lists: {named})",
        source=given,
        field="--pods",
    )


def read_nodes(path: str) -> list[dict[str, object]]:
    nodes: list[dict[str, object]] = []
    seen: set[str] = set()
    for row in read_rows(path, NODE_COLUMNS):
        name = row.text("sn")
        if not name:
            raise row.error("sn", "is required")
        if name in seen:
            raise row.error("sn", f"duplicate node {name!r}")
        seen.add(name)
        gpus = row.integer("gpu", default=0)
        model = row.text("model")
        labels = {objects.GPU_MODEL_LABEL: model} if model and model != "nan" else {}
        nodes.append(
            objects.node(
                name,
                cpu_milli=row.integer("cpu_milli"),
                memory_mib=row.integer("memory_mib"),
                gpus=gpus,
                labels=labels,
            )
        )
    return nodes


def pod_gpus(row: Row) -> float:
    """GPUs the row asks for: whole devices, or a fraction of one (``gpu_milli / 1000``)."""
    count = row.integer("num_gpu", default=0)
    if count == 0:
        return 0.0
    milli = row.integer("gpu_milli", default=1000)
    if not 0 < milli <= 1000:
        raise row.error("gpu_milli", f"must be between 1 and 1000 for a GPU pod, got {milli}")
    if count == 1 and milli < 1000:
        return milli / 1000
    return float(count)


def _affinity(row: Row) -> dict[str, object] | None:
    spec = row.text("gpu_spec")
    if not spec or spec == "nan":
        return None
    models = sorted({m.strip() for m in spec.split("|") if m.strip()})
    term = {"key": objects.GPU_MODEL_LABEL, "operator": "In", "values": models}
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [term]}]
        }
    }


def _times(row: Row, static_index: int | None) -> tuple[float, float] | str:
    """(arrival, duration), or the reason the row is skipped."""
    if static_index is not None:
        return float(static_index), STATIC_DURATION
    arrival = row.integer("creation_time")
    if not row.text("scheduled_time"):
        return "never scheduled in the trace (no scheduled_time)"
    if not row.text("deletion_time"):
        return "no deletion_time"
    scheduled = row.integer("scheduled_time")
    deleted = row.integer("deletion_time")
    if scheduled < arrival:
        raise row.error("scheduled_time", f"is before creation_time ({scheduled} < {arrival})")
    if deleted <= scheduled:
        return "did not run (deletion_time <= scheduled_time)"
    return float(arrival), float(deleted - scheduled)


def read_pods(path: str) -> tuple[list[SimJob], dict[str, int]]:
    jobs: list[SimJob] = []
    skipped: dict[str, int] = {}
    seen: set[str] = set()
    static: bool | None = None
    for index, row in enumerate(read_rows(path, POD_COLUMNS)):
        if static is None:
            static = not all(column in row.values for column in TIME_COLUMNS)
        name = row.text("name")
        if not name:
            raise row.error("name", "is required")
        if name in seen:
            raise row.error("name", f"duplicate pod {name!r}")
        seen.add(name)
        gpus = pod_gpus(row)
        cpu = row.integer("cpu_milli", default=0)
        memory = row.integer("memory_mib", default=0)
        times = _times(row, index if static else None)
        if isinstance(times, str):
            skipped[times] = skipped.get(times, 0) + 1
            continue
        arrival, duration = times
        qos = row.text("qos")
        queue = QOS_QUEUES.get(qos, qos.lower() or "default")
        priority = QOS_PRIORITY.get(qos, DEFAULT_PRIORITY)
        group = f"pg-{name}"
        jobs.append(
            SimJob(
                key=f"{NAMESPACE}/{group}",
                queue=queue,
                arrival=arrival,
                duration=duration,
                pod_group=objects.pod_group(
                    NAMESPACE,
                    group,
                    queue=queue,
                    priority_class=priority,
                    min_member=1,
                    created=arrival,
                ),
                pods=[
                    objects.pod(
                        NAMESPACE,
                        name,
                        pod_group=group,
                        queue=queue,
                        priority_class=priority,
                        cpu_milli=cpu,
                        memory_mib=memory,
                        gpus=gpus,
                        created=arrival,
                        node_affinity=_affinity(row),
                    )
                ],
                pod_gpus=[gpus],
                origin=f"{path}: {row.where()}",
            )
        )
    return jobs, skipped
