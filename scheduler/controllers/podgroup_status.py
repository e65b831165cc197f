"""A PodGroup's ``status.resourcesStatus`` from its pods: pure, no API calls.

Why this module exists: KAI's podgroupcontroller writes what each gang asks for
and holds, so users (and the queue controller, which sums them up the queue
tree) see it on the object. The arithmetic lives here so it is tested as tables
and shared by the reconciler and the tests.

Units are KAI's (§2.2): GPU in devices with fractions (``nvidia.com/gpu``),
CPU in millicores and memory in MB (10^6 bytes), as plain numbers; any other
extended resource keeps its own unit. A pod counts as follows:

- ``requested``: every pod that is not finished (phase Succeeded/Failed) and not
  being deleted;
- ``allocated``: those of them that hold a node (``spec.nodeName`` set);
- ``allocatedNonPreemptible``: ``allocated`` when the PodGroup is
  non-preemptible, else empty.

A pod's request is what kube-scheduler counts: max(sum of containers, each init
container) plus overhead; ``gpu-fraction`` (times ``gpu-fraction-num-devices``)
adds fractional GPUs. ``gpu-memory`` pods are counted as 0 GPUs here: their
portion depends on the node's GPU memory, which this controller does not read.
Also returned: KAI's ``running`` / ``pending`` / ``succeeded`` / ``failed`` counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any, Final

from crds import podgroup as pg_api
from crds import quantities
from crds.gpusharing import FRACTION, GPU_RESOURCE, NUM_DEVICES

__all__ = [
    "FRACTION",
    "GPU_RESOURCE",
    "NUM_DEVICES",
    "format_resources",
    "is_non_preemptible",
    "pod_request",
    "podgroup_status",
]

_GPU_NAMES: Final = frozenset({"nvidia.com/gpu", "amd.com/gpu"})
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


def _container(container: Mapping[str, Any]) -> Resources:
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})  # a missing request defaults to the limit
    out: Resources = {}
    for name, raw in merged.items():
        if name in _SKIPPED:
            continue
        _add(out, GPU_RESOURCE if name in _GPU_NAMES else name, _unit(name, raw))
    return out


def pod_request(pod: Mapping[str, Any]) -> Resources:
    """One pod's request in status units (see the module docstring)."""
    spec = pod.get("spec") or {}
    total: Resources = {}
    for container in spec.get("containers") or ():
        for name, amount in _container(container).items():
            _add(total, name, amount)
    for container in spec.get("initContainers") or ():
        for name, amount in _container(container).items():
            if amount > total.get(name, 0):
                total[name] = amount
    for name, raw in (spec.get("overhead") or {}).items():
        if name not in _SKIPPED:
            _add(total, name, _unit(name, raw))
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    fraction = annotations.get(FRACTION)
    if fraction:
        try:
            portion = Fraction(str(fraction))
            devices = Fraction(str(annotations.get(NUM_DEVICES) or 1))
        except (ValueError, ZeroDivisionError):
            portion, devices = Fraction(0), Fraction(0)
        if 0 < portion <= 1 and devices > 0:
            _add(total, GPU_RESOURCE, portion * devices)
    return total


def is_non_preemptible(podgroup: Mapping[str, Any], priority: int | None) -> bool:
    """``spec.preemptibility``, else KAI's rule on the priority (unknown: the default)."""
    explicit = (podgroup.get("spec") or {}).get("preemptibility")
    if explicit:
        return bool(explicit == pg_api.NON_PREEMPTIBLE)
    value = pg_api.DEFAULT_PRIORITY_VALUE if priority is None else priority
    return pg_api.derive_preemptibility(value) == pg_api.NON_PREEMPTIBLE


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
    podgroup: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], *, non_preemptible: bool
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
        request = pod_request(pod)
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
