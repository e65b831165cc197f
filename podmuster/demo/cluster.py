"""The demo's embedded cluster: GPU nodes, a two-level queue tree and framework workloads.

Why: a newcomer should see KAI's ideas on workloads they know (PyTorchJob,
RayCluster, MPIJob, Deployment, Jupyter), so the objects are built here as
the raw Kubernetes dicts the podgrouper and the scheduler would see in a real
cluster: PodGroups ``scheduling.run.ai/v2alpha2`` and pods annotated with
``pod-group-name`` and ``schedulerName: kai-scheduler``. Each workload carries
its arrival time, how long it runs once started, and the idea it demonstrates.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

SCHEDULER_NAME = "kai-scheduler"
EPOCH = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
POD_GROUP_ANNOTATION = "pod-group-name"
SUBGROUP_LABEL = "kai.scheduler/subgroup-name"
NODES = ("gpu-node-1", "gpu-node-2", "gpu-node-3", "gpu-node-4")
GPUS_PER_NODE = 8


def stamp(minute: int) -> str:
    """RFC 3339 time of a simulated minute."""
    return (EPOCH + timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class QueueSpec:
    name: str
    parent: str | None
    gpu_quota: int
    gpu_limit: int  # -1: no limit
    weight: int


QUEUES = (
    QueueSpec("research", None, 20, -1, 2),
    QueueSpec("research-nlp", "research", 12, -1, 1),
    QueueSpec("research-vision", "research", 8, 10, 1),
    QueueSpec("product", None, 12, -1, 1),
    QueueSpec("product-serving", "product", 8, -1, 1),
    QueueSpec("product-apps", "product", 2, -1, 1),
)


@dataclass(frozen=True, slots=True)
class Role:
    """Replicas of one pod template; ``subgroup`` makes a KAI sub-group with its own minimum."""

    name: str
    replicas: int
    gpus: int
    cpu: str = "8"
    memory: str = "64Gi"
    subgroup: str | None = None
    min_member: int | None = None  # of the sub-group; None: all replicas


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    kind: str  # the framework object the podgrouper grouped
    queue: str
    priority: str  # train | build | inference
    arrives: int  # simulated minute
    runs_for: int | None  # minutes once started; None: keeps running
    roles: tuple[Role, ...]
    shows: str  # the idea this workload demonstrates, in plain words
    group_per_pod: bool = False  # Deployments: one PodGroup per replica

    @property
    def namespace(self) -> str:
        return self.queue


WORKLOADS = (
    Workload(
        "llama-finetune",
        "PyTorchJob",
        "research-nlp",
        "train",
        0,
        10,
        (Role("master", 1, 2), Role("worker", 3, 2)),
        "gang: master + 3 workers start together or not at all",
    ),
    Workload(
        "ray-vision",
        "RayCluster",
        "research-vision",
        "train",
        0,
        20,
        (
            Role("head", 1, 0, "4", "16Gi", "headgroup", 1),
            Role("gpu-worker", 4, 2, subgroup="gpu-workers", min_member=2),
        ),
        "sub-groups: head + 2 workers as the gang, 2 more workers as elastic extras",
    ),
    Workload(
        "llm-serve",
        "Deployment",
        "product-serving",
        "inference",
        0,
        None,
        (Role("replica", 3, 1, "4", "32Gi"),),
        "inference: non-preemptible, within the team's deserved quota",
        group_per_pod=True,
    ),
    Workload(
        "notebook-alice",
        "Notebook",
        "product-apps",
        "build",
        0,
        10,
        (Role("jupyter", 1, 1, "4", "16Gi"),),
        "build priority: interactive, non-preemptible",
    ),
    Workload(
        "notebook-bob",
        "Notebook",
        "product-apps",
        "build",
        0,
        None,
        (Role("jupyter", 1, 1, "4", "16Gi"),),
        "build priority: fills product-apps' deserved quota of 2 GPUs",
    ),
    Workload(
        "notebook-carol",
        "Notebook",
        "product-apps",
        "build",
        0,
        None,
        (Role("jupyter", 1, 1, "4", "16Gi"),),
        "non-preemptible jobs may not exceed the deserved quota: waits for a free slot",
    ),
    Workload(
        "bert-pretrain",
        "MPIJob",
        "research-nlp",
        "train",
        5,
        None,
        (Role("launcher", 1, 0, "2", "8Gi"), Role("worker", 4, 4, "16", "128Gi")),
        "a big gang that waits for 16 free GPUs instead of starting partly",
    ),
    Workload(
        "vision-sweep",
        "PyTorchJob",
        "research-vision",
        "train",
        5,
        None,
        (Role("master", 1, 2), Role("worker", 1, 2)),
        "limit: research-vision may never hold more than 10 GPUs",
    ),
)


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        },
        "status": {
            "allocatable": {
                "cpu": "96",
                "memory": "1024Gi",
                "nvidia.com/gpu": str(GPUS_PER_NODE),
                "pods": "110",
            },
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def queue(spec: QueueSpec) -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    body: dict[str, Any] = {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": spec.name, "creationTimestamp": stamp(-60)},
        "spec": {
            "resources": {
                "gpu": {
                    "quota": spec.gpu_quota,
                    "limit": spec.gpu_limit,
                    "overQuotaWeight": spec.weight,
                },
                "cpu": dict(unlimited),
                "memory": dict(unlimited),
            }
        },
    }
    if spec.parent:
        body["spec"]["parentQueue"] = spec.parent
    return body


def _pod(workload: Workload, role: Role, index: int, pod_group: str) -> dict[str, Any]:
    name = f"{workload.name}-{role.name}-{index}"
    requests: dict[str, str] = {"cpu": role.cpu, "memory": role.memory}
    if role.gpus:
        requests["nvidia.com/gpu"] = str(role.gpus)
    labels = {"app.kubernetes.io/name": workload.name, "demo/role": role.name}
    if role.subgroup:
        labels[SUBGROUP_LABEL] = role.subgroup
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": workload.namespace,
            "uid": f"uid-{workload.namespace}-{name}",
            "creationTimestamp": stamp(workload.arrives),
            "labels": labels,
            "annotations": {POD_GROUP_ANNOTATION: pod_group},
        },
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "priorityClassName": workload.priority,
            "containers": [
                {
                    "name": role.name,
                    "image": f"example.com/{workload.kind.lower()}:demo",
                    "resources": {"requests": requests, "limits": dict(requests)},
                }
            ],
        },
        "status": {"phase": "Pending"},
    }


def _pod_group(
    workload: Workload, name: str, min_member: int, subgroups: list[dict[str, Any]]
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "minMember": min_member,
        "queue": workload.queue,
        "priorityClassName": workload.priority,
    }
    if subgroups:
        spec["subGroups"] = subgroups
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": workload.namespace,
            "uid": f"uid-{workload.namespace}-{name}",
            "creationTimestamp": stamp(workload.arrives),
            "labels": {"demo/workload": workload.name, "demo/kind": workload.kind},
        },
        "spec": spec,
    }


def workload_objects(workload: Workload) -> list[dict[str, Any]]:
    """The PodGroup(s) and pods the podgrouper and the framework operator would create."""
    if workload.group_per_pod:
        out = []
        for role in workload.roles:
            for i in range(role.replicas):
                group = f"pg-{workload.name}-{role.name}-{i}"
                out.append(_pod_group(workload, group, 1, []))
                out.append(_pod(workload, role, i, group))
        return out
    group = f"pg-{workload.name}"
    subgroups = [
        {
            "name": role.subgroup,
            "minMember": role.min_member if role.min_member is not None else role.replicas,
        }
        for role in workload.roles
        if role.subgroup
    ]
    min_member = sum(
        (role.min_member if role.min_member is not None else role.replicas)
        for role in workload.roles
    )
    pods = [_pod(workload, role, i, group) for role in workload.roles for i in range(role.replicas)]
    return [_pod_group(workload, group, min_member, subgroups), *pods]


def infrastructure() -> list[dict[str, Any]]:
    """Nodes and queues, present from the start."""
    return [node(name) for name in NODES] + [queue(spec) for spec in QUEUES]


def parse_stamp(text: str) -> float:
    """Seconds since the epoch of a ``stamp`` string."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
