"""The names of GPU sharing: pod annotations, labels and env that components share.

Why this module exists: a fractional-GPU pod passes through three components that never
import each other: the admission webhooks (validate the annotations, pre-wire the env),
the binder (reservation pods, the pod's group label, the per-pod ConfigMap) and the
scheduler (reads the group labels back). KAI fixed these names (``docs/semantics.md`` §3
and §6); keeping them in one place of the API package lets each component use them
without depending on another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from crds.names import APP_LABEL

__all__ = [
    "CONFIGMAP_ANNOTATION",
    "CONTAINER_NAME",
    "DO_NOT_DISRUPT_ANNOTATION",
    "FRACTION",
    "FRACTION_RUNTIME_CLASS",
    "GPU_GROUP_LABEL",
    "GPU_PORTION_ENV",
    "GPU_RESOURCE",
    "GPU_UUIDS_ANNOTATION",
    "MEMORY",
    "MPS",
    "MULTI_GROUP_LABEL_PREFIX",
    "NODE_GPU_MEMORY_LABEL",
    "NUM_DEVICES",
    "NUM_OF_GPUS_ENV",
    "RECEIVED_RESOURCE_TYPE_ANNOTATION",
    "RESERVATION_APP",
    "RESERVATION_NAMESPACE",
    "RESERVATION_SCHEDULER_LABEL",
    "RESERVATION_SERVICE_ACCOUNT",
    "RESERVED_GPU_ANNOTATION",
    "RESTORED_FOR_GPU_ANNOTATION",
    "SHARING_ANNOTATIONS",
    "VISIBLE_DEVICES_ENV",
    "WHOLE_GPU_RESOURCES",
    "configmap_name",
    "is_reservation_labelled",
]

# --- what a user writes on a pod --------------------------------------------------------
FRACTION: Final = "gpu-fraction"
"""Portion of one GPU, 0 < x < 1."""
MEMORY: Final = "gpu-memory"
"""GPU memory in MiB (a positive integer)."""
NUM_DEVICES: Final = "gpu-fraction-num-devices"
"""Devices, each getting the fraction or memory (default 1)."""
CONTAINER_NAME: Final = "gpu-fraction-container-name"
"""The (init or regular) container that gets the shared GPU (default: the first container)."""
MPS: Final = "mps"
"""``"true"`` runs the pod's GPU work through the node's MPS daemon."""
SHARING_ANNOTATIONS: Final = (FRACTION, MEMORY, NUM_DEVICES, CONTAINER_NAME, MPS)
GPU_RESOURCE: Final = "nvidia.com/gpu"
WHOLE_GPU_RESOURCES: Final = frozenset({GPU_RESOURCE, "amd.com/gpu"})
"""Resources that count as whole GPUs (the scheduler's GPU column)."""
NODE_GPU_MEMORY_LABEL: Final = "nvidia.com/gpu.memory"
"""On a GPU node (set by the GPU operator): MiB of memory per GPU."""

# --- what the admission mutation and the binder write -------------------------------
CONFIGMAP_ANNOTATION: Final = "runai/shared-gpu-configmap"
"""On a sharing pod: the name of its ConfigMap holding the env below (set at admission).
KAI's admission writes a prefix instead: its containers read ``<prefix>-<index>`` and
``<prefix>-<index>-evar``; the binder writes the ConfigMaps a pod's spec references."""
VISIBLE_DEVICES_ENV: Final = "NVIDIA_VISIBLE_DEVICES"
"""The GPU UUIDs the pod's container sees (comma-separated), from its ConfigMap."""
GPU_PORTION_ENV: Final = "GPU_PORTION"
"""The portion of each device the pod received (e.g. ``"0.50"``), from its ConfigMap."""
NUM_OF_GPUS_ENV: Final = "RUNAI_NUM_OF_GPUS"
"""The same portion under KAI's older name (KAI: "Deprecated, please use GPU_PORTION")."""
GPU_GROUP_LABEL: Final = "runai-gpu-group"
"""On a bound sharing pod and on its reservation pod: the GPU group id."""
MULTI_GROUP_LABEL_PREFIX: Final = "runai-gpu-group/"
"""A multi-device sharing pod carries ``runai-gpu-group/<group>`` for each of its groups."""
RECEIVED_RESOURCE_TYPE_ANNOTATION: Final = "received-resource-type"
"""On a bound pod: ``Regular``, ``Fraction`` or ``MigInstance``."""

FRACTION_RUNTIME_CLASS: Final = "nvidia"
"""The RuntimeClass the admission mutation gives a ``gpu-fraction``/``gpu-memory`` pod
that names none (KAI's ``--gpu-fraction-runtime-class-name`` default): such a pod requests
no ``nvidia.com/gpu``, so only the NVIDIA runtime acting on its ``NVIDIA_VISIBLE_DEVICES``
env shows it its GPU."""

# --- reservation pods -------------------------------------------------------------------
RESERVATION_NAMESPACE: Final = "kai-resource-reservation"
RESERVATION_SERVICE_ACCOUNT: Final = "kai-resource-reservation"
RESERVATION_APP: Final = "kai-resource-reservation"
"""The ``app`` label value of a GPU reservation pod (:func:`is_reservation_labelled`)."""
"""Value of the ``app`` label of every reservation pod."""
RESERVATION_SCHEDULER_LABEL: Final = "podmuster.io/scheduler-name"
"""On a reservation pod podmuster's binder created: the ``spec.schedulerName`` that binder
serves (with ``podmuster.io/created-by=binder``). Its sync deletes only reservation pods
carrying its own name; KAI's and another podmuster's are left alone."""
RESERVED_GPU_ANNOTATION: Final = "run.ai/reserve_for_gpu_index"
"""Written on a reservation pod by the code inside it: the UUID of the GPU it got."""
DO_NOT_DISRUPT_ANNOTATION: Final = "karpenter.sh/do-not-disrupt"
GPU_UUIDS_ANNOTATION: Final = "podmuster.io/gpu-uuids"
"""On a sharing pod podmuster's binder bound: the UUIDs of the GPUs it shares,
comma-separated, as its ConfigMap names them (kept on the pod, so a binder that finds the
pod's reservation pod gone can ask for that GPU again even when the ConfigMap is gone too)."""
RESTORED_FOR_GPU_ANNOTATION: Final = "podmuster.io/restored-for-gpu"
"""On a reservation pod podmuster's binder re-created for running sharing pods whose
reservation pod was gone: the GPU UUID(s) they use, comma-separated. The pod holds their
group only if the GPU it reports is one of them."""

_CONFIGMAP_SUFFIX: Final = "-shared-gpu"
_MAX_NAME: Final = 253


def configmap_name(pod_name: str) -> str:
    """The ConfigMap a sharing pod named ``pod_name`` reads its GPU env from."""
    stem = pod_name[: _MAX_NAME - len(_CONFIGMAP_SUFFIX)].rstrip("-.")
    return f"{stem}{_CONFIGMAP_SUFFIX}"


def is_reservation_labelled(labels: Mapping[str, str]) -> bool:
    """Labels of a GPU reservation pod: ``app=kai-resource-reservation``, as KAI knows one
    (the scheduler in any namespace; the binder also asks for its own namespace)."""
    return labels.get(APP_LABEL) == RESERVATION_APP
