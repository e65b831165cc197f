"""The demo's embedded clusters: GPU nodes and queue trees, and the clock's epoch.

Why: the workloads arrive as real manifests (``story``, ``workloads/``), but
the cluster they land on is fixed infrastructure: for the main story four
8-GPU nodes and ``scheduling.run.ai/v2`` Queues (2 departments x 2 teams),
for each "making room" scene a smaller one. They are built here as the raw
Kubernetes dicts the scheduler would read from a real cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from crds.queue import API_VERSION as QUEUE_API_VERSION
from crds.topology import API_VERSION as TOPOLOGY_API_VERSION

EPOCH = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
NODES = ("gpu-node-1", "gpu-node-2", "gpu-node-3", "gpu-node-4")
GPUS_PER_NODE = 8
GPU_MEMORY_MIB = 81920
RACK_LABEL = "topology.example.com/rack"
TOPOLOGY_NAME = "datacenter"


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
class Cluster:
    """Nodes (all alike but for their labels) and queues of one simulated cluster.

    ``racks`` puts nodes into racks (node name -> rack name, labelled
    ``RACK_LABEL``) and adds the ``Topology`` that names that level;
    ``extra`` holds any further objects present from the start.
    """

    nodes: tuple[str, ...] = NODES
    gpus_per_node: int = GPUS_PER_NODE
    queues: tuple[QueueSpec, ...] = field(default=QUEUES)
    racks: tuple[tuple[str, str], ...] = ()

    @property
    def gpus(self) -> int:
        return len(self.nodes) * self.gpus_per_node


MAIN = Cluster()


def node(name: str, gpus: int = GPUS_PER_NODE, rack: str = "") -> dict[str, Any]:
    labels = {
        "kubernetes.io/hostname": name,
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.memory": str(GPU_MEMORY_MIB),  # as NVIDIA's GPU feature discovery says
    }
    if rack:
        labels[RACK_LABEL] = rack
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": {
                "cpu": "96",
                "memory": "1024Gi",
                "nvidia.com/gpu": str(gpus),
                "pods": "110",
            },
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def queue(spec: QueueSpec) -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    body: dict[str, Any] = {
        "apiVersion": QUEUE_API_VERSION,
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


def topology() -> dict[str, Any]:
    """The ``kai.scheduler/v1alpha1`` Topology of the racked scene: rack, then host."""
    return {
        "apiVersion": TOPOLOGY_API_VERSION,
        "kind": "Topology",
        "metadata": {"name": TOPOLOGY_NAME, "creationTimestamp": stamp(-60)},
        "spec": {"levels": [{"nodeLabel": RACK_LABEL}, {"nodeLabel": "kubernetes.io/hostname"}]},
    }


def infrastructure(cluster: Cluster = MAIN) -> list[dict[str, Any]]:
    """Nodes, queues and (for a racked cluster) its Topology, present from the start."""
    racks = dict(cluster.racks)
    objects = [node(name, cluster.gpus_per_node, racks.get(name, "")) for name in cluster.nodes]
    objects += [queue(spec) for spec in cluster.queues]
    if racks:
        objects.append(topology())
    return objects


def parse_stamp(text: str) -> float:
    """Seconds since the epoch of a ``stamp`` string."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
