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

QUEUE_LABEL = "kai.scheduler/queue"


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
    ("eval-batch", 0, 10, "a Job with parallelism 2: one PodGroup per pod"),
    ("llm-serve", 0, None, "inference: non-preemptible, within the team's deserved quota"),
    ("notebook-alice", 0, 10, "build priority: interactive, non-preemptible"),
    ("notebook-bob", 0, None, "non-preemptible jobs may not exceed the deserved quota"),
    ("bert-pretrain", 5, None, "a big gang waits for 12 free GPUs instead of starting partly"),
    ("vision-sweep", 10, None, "limit: research-vision may never hold more than 10 GPUs"),
)

RESCALES = (Rescale(5, "ray-vision", "gpu-workers", 4),)


def workloads() -> tuple[Workload, ...]:
    """The story's workloads in arrival order, manifests freshly read."""
    return tuple(Workload(manifest(name), at, runs, shows) for name, at, runs, shows in _TIMING)
