"""The demo's story: which workload manifest arrives when, runs how long, and shows what.

Why: the manifests under ``workloads/`` are plain Kubernetes YAML, the way a
user would ``kubectl apply`` them, with no simulation fields in them. What
only the simulation needs (arrival minute, run time, the autoscaler's later
decision, the idea each workload demonstrates) lives here, next to them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from crds.names import QUEUE_LABEL
from podmuster.demo.cluster import Cluster, QueueSpec


@dataclass(frozen=True, slots=True)
class Workload:
    """One framework object (as written in ``workloads/<name>.yaml``) and its timing."""

    manifest: dict[str, Any]
    arrives: int  # simulated minute
    runs_for: int | None  # minutes once started; None: keeps running
    shows: str  # the idea this workload demonstrates, in plain words

    @property
    def name(self) -> str:
        return str(self.manifest["metadata"]["name"])

    @property
    def kind(self) -> str:
        return str(self.manifest["kind"])

    @property
    def namespace(self) -> str:
        return str(self.manifest["metadata"]["namespace"])

    @property
    def queue(self) -> str:
        return str(self.manifest["metadata"]["labels"][QUEUE_LABEL])


@dataclass(frozen=True, slots=True)
class Rescale:
    """The Ray autoscaler setting a worker group's ``replicas`` at a later minute."""

    minute: int
    workload: str
    group: str
    replicas: int

    def apply(self, manifest: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """The RayCluster with the new ``replicas``, and the old value."""
        scaled = copy.deepcopy(manifest)
        for group in scaled["spec"]["workerGroupSpecs"]:
            if group["groupName"] == self.group:
                old = int(group["replicas"])
                group["replicas"] = self.replicas
                return scaled, old
        raise KeyError(f"{self.workload} has no worker group {self.group}")


def manifest(name: str) -> dict[str, Any]:
    """The workload shipped as ``podmuster/demo/workloads/<name>.yaml``."""
    text = (resources.files("podmuster.demo") / "workloads" / f"{name}.yaml").read_text()
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


_TIMING = (
    ("llama-finetune", 0, 10, "gang: master + 3 workers start together or not at all"),
    ("ray-vision", 0, 20, "sub-groups: the head + 2 GPU workers are the gang"),
    ("data-prep", 0, 10, "each Argo step pod is its own PodGroup and starts on its own"),
    ("eval-batch", 0, 10, "a Job with parallelism 2: one PodGroup for both pods"),
    ("llm-serve", 0, None, "inference: non-preemptible, within the team's deserved quota"),
    ("notebook-alice", 0, 10, "build priority: interactive, non-preemptible"),
    ("notebook-bob", 0, None, "non-preemptible jobs may not exceed the deserved quota"),
    ("bert-pretrain", 5, None, "a big gang waits for 12 free GPUs instead of starting partly"),
    ("vision-sweep", 10, None, "limit: research-vision may never hold more than 10 GPUs"),
)

RESCALES = (Rescale(5, "ray-vision", "gpu-workers", 4),)


Timing = tuple[tuple[str, int, int | None, str], ...]


def _read(timing: Timing) -> tuple[Workload, ...]:
    return tuple(Workload(manifest(name), at, runs, shows) for name, at, runs, shows in timing)


def workloads() -> tuple[Workload, ...]:
    """The story's workloads in arrival order, manifests freshly read."""
    return _read(_TIMING)


@dataclass(frozen=True, slots=True)
class Scene:
    """A short story on its own small cluster that shows one way the scheduler makes room."""

    name: str
    title: str
    setup: str  # the cluster and queues, in one line
    cluster: Cluster
    timing: Timing
    moral: str  # what the reader should take away, in plain words

    def workloads(self) -> tuple[Workload, ...]:
        return _read(self.timing)


def _nodes(count: int) -> tuple[str, ...]:
    return tuple(f"gpu-node-{i}" for i in range(1, count + 1))


def _racks(nodes: tuple[str, ...], per_rack: int) -> tuple[tuple[str, str], ...]:
    """Consecutive nodes share a rack: rack-a, rack-b, ..."""
    return tuple((name, f"rack-{chr(ord('a') + i // per_rack)}") for i, name in enumerate(nodes))


SCENES = (
    Scene(
        "preempt",
        "Inference preempts training in the same queue",
        "1 node x 8 GPUs; one queue, ml-platform, deserved 8 GPUs",
        Cluster(_nodes(1), 8, (QueueSpec("ml-platform", None, 8, -1, 1),)),
        (
            ("nightly-train", 0, None, "a training gang (train priority) takes the whole node"),
            ("chat-serve", 5, None, "inference (priority 125) outranks training (50)"),
        ),
        "Inside one queue the higher priority wins. The training gang is evicted whole (a"
        " gang never runs in part); the service is pipelined while its GPUs are freed and"
        " binds one cycle later. The training pods, re-created by their operator, wait.",
    ),
    Scene(
        "reclaim",
        "A starved team reclaims its quota from a borrowing team",
        "2 nodes x 8 GPUs; queues team-a and team-b, deserved 8 GPUs each",
        Cluster(
            _nodes(2),
            8,
            (QueueSpec("team-a", None, 8, -1, 1), QueueSpec("team-b", None, 8, -1, 1)),
        ),
        (
            ("hparam-sweep", 0, None, "team-a is idle, so team-b may borrow its quota"),
            ("llm-pretrain", 5, None, "team-a gets back the 8 GPUs it deserves"),
        ),
        "Idle quota is lent, not given away. When team-a asks for its deserved share, the"
        " scheduler reclaims just enough of team-b's borrowed pods; team-b"
        " keeps its own 8 GPUs and its re-created pods wait for free room.",
    ),
    Scene(
        "consolidate",
        "Consolidation makes room for a 4-GPU job",
        "2 nodes x 8 GPUs; one queue, vision, deserved 16 GPUs",
        Cluster(_nodes(2), 8, (QueueSpec("vision", None, 16, -1, 1),)),
        (
            ("resnet-train", 0, None, "a 2-pod gang, 3 GPUs per pod"),
            ("warmup", 0, 5, "finishes after 5 minutes"),
            ("detector-train", 0, None, "one pod with 4 GPUs"),
            ("eval-suite", 0, None, "one pod with 2 GPUs"),
            ("diffusion-train", 5, None, "needs 4 GPUs on one node"),
        ),
        "4 GPUs were free, but 2 on each node. Rather than evict anyone, consolidation"
        " moved the 2-GPU job to the other node, and the 4-GPU job got the whole gap."
        " Every job that ran before still runs.",
    ),
    Scene(
        "share",
        "Notebooks share GPUs",
        "1 node x 4 GPUs; one queue, notebooks, deserved 4 GPUs",
        Cluster(_nodes(1), 4, (QueueSpec("notebooks", None, 4, -1, 1),)),
        (
            ("finetune-small", 0, None, "a Job with 2 whole GPUs"),
            ("jupyter-carol", 0, None, "gpu-fraction 0.5: half of one GPU"),
            ("jupyter-dan", 0, None, "gpu-fraction 0.25: packed next to carol on her GPU"),
            ("jupyter-erin", 0, None, "gpu-fraction 0.25: fills that GPU exactly"),
            ("jupyter-frank", 5, None, "gpu-fraction 0.5: the shared GPU is full, so a new one"),
        ),
        "Notebooks idle most of the time, so a whole GPU each is waste. Three notebooks"
        " share one GPU (0.5 + 0.25 + 0.25), the fine-tuning Job keeps two whole GPUs, and"
        " the queue is charged what was asked: 1 GPU for those three notebooks, not 3.",
    ),
    Scene(
        "topology",
        "A training gang kept inside one rack",
        "4 nodes x 8 GPUs in 2 racks (nodes 1-2 in rack-a, 3-4 in rack-b); one queue, llm",
        Cluster(_nodes(4), 8, (QueueSpec("llm", None, 32, -1, 1),), _racks(_nodes(4), 2)),
        (
            ("rack-filler", 0, None, "6 GPUs on one node of rack-a"),
            (
                "allreduce-train",
                5,
                None,
                "4 pods x 4 GPUs that must share a rack (kai.scheduler/topology annotations)",
            ),
        ),
        "rack-a still had 10 free GPUs, but only room for 2 of the 4 pods; bin-packing alone"
        " would have split the gang across both racks. The required rack level kept all four"
        " pods in rack-b, where the all-reduce traffic stays on one switch.",
    ),
)
