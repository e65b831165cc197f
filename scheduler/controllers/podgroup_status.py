"""A PodGroup's ``status.resourcesStatus`` from its pods: pure, no API calls.

Why this module exists: KAI's podgroupcontroller writes what each gang asks for
and holds, so users (and the queue controller, which sums them up the queue
tree) see it on the object. The arithmetic lives here so it is tested as tables
and shared by the reconciler and the tests.

Units are KAI's (docs/semantics.md §2.2): GPU in devices with fractions (``nvidia.com/gpu``),
CPU in millicores and memory in MB (10^6 bytes), as plain numbers; any other
extended resource keeps its own unit. A pod counts as follows:

- ``requested``: every pod that is not finished (phase Succeeded/Failed) and not
  being deleted;
- ``allocated``: those of them that hold a node (``spec.nodeName`` set);
- ``allocatedNonPreemptible``: ``allocated`` when the PodGroup is
  non-preemptible, else empty.

A pod's request is what kube-scheduler counts (:func:`crds.rules.pod_request`:
containers, sidecars, init containers, overhead); its GPUs are
:func:`crds.rules.pod_gpus`: a fraction times its devices, and a gpu-memory pod
its share of its node's GPU memory (a pending one: of the smallest in the cluster).
Also returned: KAI's ``running`` / ``pending`` / ``succeeded`` / ``failed`` counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any, Final

from crds import quantities, rules
from crds.gpusharing import GPU_RESOURCE, WHOLE_GPU_RESOURCES

__all__ = [
    "GpuMemory",
    "format_resources",
    "is_non_preemptible",
    "pod_request",
    "podgroup_status",
]

_GPU_NAMES: Final = WHOLE_GPU_RESOURCES
_SKIPPED: Final = frozenset({"pods", "ephemeral-storage"})
_FINISHED: Final = frozenset({"Succeeded", "Failed"})
MB: Final = 10**6

Resources = dict[str, Fraction]
"""Resource name → amount in KAI's status units."""


def _unit(name: str, raw: Any) -> Fraction:
    amount = quantities.parse_quantity(raw if isinstance(raw, int | float) else str(raw))
    if name == "cpu":
        return amount * 1000
    if name == "memory":
        return amount / MB
    return amount


def _add(into: Resources, name: str, amount: Fraction) -> None:
    if amount:
        into[name] = into.get(name, Fraction(0)) + amount


def _amount(name: str, raw: Any) -> Fraction:
    return Fraction(0) if name in _SKIPPED else _unit(name, raw)


def pod_request(pod: Mapping[str, Any], gpu_memory: GpuMemory | None = None) -> Resources:
    """One pod's request in status units (see the module docstring).

    ``gpu_memory`` sizes a gpu-memory pod's GPUs: its node's GPU memory when it holds
    one, else the smallest in the cluster; without it such a pod counts 0 GPUs.
    """
    total: Resources = {}
    for name, amount in rules.pod_resources(pod.get("spec") or {}, _amount).items():
        _add(total, GPU_RESOURCE if name in _GPU_NAMES else name, amount)
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    try:
        shared = rules.shared_gpu(annotations, bound=bool(node))
    except rules.RuleError:
        shared = None  # refused at admission; the scheduler never places it
    if shared is not None:
        memory = gpu_memory.of(node) if gpu_memory is not None else None
        gpus = rules.pod_gpus(0.0, shared, memory, on_node=bool(node))
        _add(total, GPU_RESOURCE, Fraction(gpus).limit_denominator(10**6))
    return total


class GpuMemory:
    """GPU memory per device of the cluster's nodes, from their ``nvidia.com/gpu.memory`` label."""

    def __init__(self, nodes: Iterable[Mapping[str, Any]] = ()) -> None:
        self.by_node: dict[str, int] = {}
        known = []
        for node in nodes:
            meta = node.get("metadata") or {}
            memory, synced = rules.node_gpu_memory(meta.get("labels") or {})
            self.by_node[str(meta.get("name") or "")] = memory
            if synced and memory > rules.UNSYNCED_GPU_MEMORY:
                known.append(memory)
        self.smallest = min(known) if known else rules.UNSYNCED_GPU_MEMORY

    def of(self, node: str) -> int:
        """A node's GPU memory (unknown node: as unsynced); no node: the cluster's smallest."""
        if not node:
            return self.smallest
        return self.by_node.get(node, rules.UNSYNCED_GPU_MEMORY)


def is_non_preemptible(podgroup: Mapping[str, Any], priority: int) -> bool:
    """``spec.preemptibility``, else KAI's rule on the priority (crds.rules)."""
    explicit = (podgroup.get("spec") or {}).get("preemptibility")
    return not rules.is_preemptible(str(explicit or ""), priority)


def _number(amount: Fraction) -> str:
    """A decimal quantity string, at most 6 places (MB to the byte)."""
    if amount.denominator == 1:
        return str(amount.numerator)
    text = f"{float(round(amount, 6)):.6f}".rstrip("0").rstrip(".")
    return text or "0"


def format_resources(resources: Mapping[str, Fraction]) -> dict[str, str]:
    """A ResourceList of the non-zero amounts, names sorted."""
    return {name: _number(resources[name]) for name in sorted(resources) if resources[name]}


def podgroup_status(
    podgroup: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    *,
    non_preemptible: bool,
    gpu_memory: GpuMemory | None = None,
) -> dict[str, Any]:
    """The status fields this controller owns: ``resourcesStatus`` and the pod counts.

    ``pods`` are the PodGroup's pods (the caller matched them by annotation and
    namespace).
    """
    requested: Resources = {}
    allocated: Resources = {}
    counts = {"running": 0, "pending": 0, "succeeded": 0, "failed": 0}
    for pod in pods:
        phase = str((pod.get("status") or {}).get("phase") or "Pending")
        counts_key = phase.lower()
        if counts_key in counts:
            counts[counts_key] += 1
        if phase in _FINISHED or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        request = pod_request(pod, gpu_memory)
        for name, amount in request.items():
            _add(requested, name, amount)
        if (pod.get("spec") or {}).get("nodeName"):
            for name, amount in request.items():
                _add(allocated, name, amount)
    return {
        "resourcesStatus": {
            "requested": format_resources(requested),
            "allocated": format_resources(allocated),
            "allocatedNonPreemptible": format_resources(allocated if non_preemptible else {}),
        },
        **counts,
    }
