"""What the node-scale-adjuster does on one reconcile, as a pure function of the pods.

Why this module exists: the rules of docs/semantics.md §7 (which scaling pods go, when a
new one is made, what it looks like) are table-tested here without an API server;
:mod:`~scheduler.scale_adjuster.reconciler` only lists, watches and writes.

One reconcile:

1. **Clean up.** A scaling pod (label ``app=scaling-pod`` in the scaling namespace) is
   deleted when it has Succeeded, its original pod is gone, or the original is no
   longer a candidate's kind of ``PodScheduled=False/Unschedulable`` (step 2). Any
   deletion starts a cool-down.
2. **Candidates.** Pods of our scheduler with a ``gpu-fraction`` or ``gpu-memory``
   annotation, no node, not finished, and ``PodScheduled=False`` for ``Unschedulable``,
   unless the condition's message names a queue reason (``OverLimit``,
   ``NonPreemptibleOverQuota``, ``QueueDoesNotExist``): no node helps those, and KAI's
   adjuster, which makes them a stand-in every cool-down, has an autoscaler buy one.
3. **Needed devices.** ceil(Σ fraction x num-devices), each fraction rounded to 0.01;
   a ``gpu-memory`` pod counts ``gpu_memory_to_fraction_ratio`` per device.
4. **Create**, outside the cool-down, for each candidate without a scaling pod, when
   the devices needed exceed the GPUs the scaling pods already ask for, or the
   candidate needs more devices than the largest scaling pod.

A candidate whose annotations do not parse is skipped and named in ``Plan.errors``;
the others go on.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from crds import rules
from crds.gpusharing import FRACTION, GPU_RESOURCE, MEMORY, NUM_DEVICES
from crds.names import (
    APP_LABEL,
    DEFAULT_SCHEDULER_NAME,
    SCALING_APP,
    SCALING_NAMESPACE,
    UNSCHEDULABLE_POD_NAME_LABEL,
    UNSCHEDULABLE_POD_NAMESPACE_LABEL,
)
from crds.podgroup import QUEUE_REASONS, REASONS_SEPARATOR, reason_code
from crds.quantities import QuantityError, milli_value, value

__all__ = [
    "APP_LABEL",
    "SCALING_APP",
    "UNSCHEDULABLE_POD_NAMESPACE_LABEL",
    "UNSCHEDULABLE_POD_NAME_LABEL",
    "Plan",
    "Settings",
    "devices_of",
    "is_unschedulable",
    "plan",
    "scaling_pod",
    "scaling_pod_name",
]

MAX_NAME = 63

Object = dict[str, Any]
Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Settings:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    namespace: str = SCALING_NAMESPACE
    gpu_memory_to_fraction_ratio: float = 0.1
    cool_down: float = 60.0
    image: str = "busybox:1.36"


@dataclass(slots=True)
class Plan:
    """Scaling pods to delete (namespace, name) and to create; when creation may resume."""

    delete: list[Key] = field(default_factory=list)
    create: list[Object] = field(default_factory=list)
    cool_down_until: float = 0.0
    errors: list[str] = field(default_factory=list)


class DeviceError(ValueError):
    """An annotation that does not say how many GPUs the pod needs."""


def _meta(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("metadata") or {}


def _key(pod: Mapping[str, Any]) -> Key:
    meta = _meta(pod)
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


def is_unschedulable(pod: Mapping[str, Any]) -> bool:
    """No node, not finished, and the scheduler said ``PodScheduled=False/Unschedulable``."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    if spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        return False
    return any(
        c.get("type") == "PodScheduled"
        and c.get("status") == "False"
        and c.get("reason") == "Unschedulable"
        for c in status.get("conditions") or ()
    )


def held_by_its_queue(pod: Mapping[str, Any]) -> bool:
    """The scheduler's ``PodScheduled`` message names a reason no new node removes (the
    queue is over its limit or over quota for non-preemptible work, or does not exist):
    a scaling pod for it would only buy a node the pod can never use."""
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            message = str(condition.get("message") or "")
            parts = message.split(REASONS_SEPARATOR)
            return any(reason_code(part) in QUEUE_REASONS for part in parts)
    return False


def devices_of(pod: Mapping[str, Any], ratio: float) -> tuple[float, int]:
    """(GPU fraction per device rounded to 0.01, number of devices) of a sharing pod."""
    annotations = _meta(pod).get("annotations") or {}
    name = "/".join(_key(pod))
    try:
        count = rules.gpu_devices(annotations.get(NUM_DEVICES) or "1")
        if annotations.get(FRACTION):
            return round(rules.gpu_fraction(annotations[FRACTION]), 2), count
    except rules.RuleError as exc:
        raise DeviceError(f"pod {name}: {exc}") from None
    return ratio, count


def needed_devices(candidates: Iterable[tuple[float, int]]) -> int:
    """ceil(Σ fraction x devices), summed in hundredths so 0.1 x 10 is exactly 1."""
    hundredths = sum(round(fraction * 100) * count for fraction, count in candidates)
    return math.ceil(hundredths / 100)


def scaling_pod_name(namespace: str, name: str) -> str:
    """``<ns>-<pod>``, cut to 63 characters with a hash of the full name when longer."""
    full = f"{namespace}-{name}"
    if len(full) <= MAX_NAME:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:10]
    return f"{full[: MAX_NAME - len(digest) - 1].rstrip('-.')}-{digest}"


def _label_value(text: str) -> str:
    """A label value (at most 63 characters); the annotations keep the full name."""
    if len(text) <= MAX_NAME:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    return f"{text[: MAX_NAME - len(digest) - 1].rstrip('-._')}-{digest}"


def _cpu_and_memory(name: str, raw: Any) -> Fraction:
    if name == "cpu":
        return Fraction(milli_value(raw))
    return Fraction(value(raw)) if name == "memory" else Fraction(0)


def _summed_requests(pod: Mapping[str, Any]) -> dict[str, str]:
    """The CPU (millicores) and memory (bytes) the pod requests (:func:`crds.rules.pod_request`)."""
    request = rules.pod_resources(pod.get("spec") or {}, _cpu_and_memory)
    cpu, memory = int(request.get("cpu", 0)), int(request.get("memory", 0))
    out: dict[str, str] = {}
    if cpu:
        out["cpu"] = f"{cpu}m"
    if memory:
        out["memory"] = str(memory)
    return out


def scaling_pod(original: Mapping[str, Any], devices: int, settings: Settings) -> Object:
    """The whole-GPU stand-in for ``original``; no schedulerName: the default scheduler's."""
    namespace, name = _key(original)
    spec = original.get("spec") or {}
    requests = {**_summed_requests(original), GPU_RESOURCE: str(devices)}
    pod_spec: Object = {
        "containers": [
            {
                "name": "scaling-pod",
                "image": settings.image,
                # It exits at once: Succeeded, it holds no GPU and the clean-up deletes it,
                # so the node it brought up is free for the pod it stood in for.
                "command": ["sh", "-c", "exit 0"],
                "resources": {"requests": requests, "limits": {GPU_RESOURCE: str(devices)}},
            }
        ],
        "restartPolicy": "OnFailure",
        "terminationGracePeriodSeconds": 0,
    }
    for copied in ("affinity", "tolerations", "nodeSelector"):
        if spec.get(copied):
            pod_spec[copied] = spec[copied]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": scaling_pod_name(namespace, name),
            "namespace": settings.namespace,
            "labels": {
                APP_LABEL: SCALING_APP,
                UNSCHEDULABLE_POD_NAME_LABEL: _label_value(name),
                UNSCHEDULABLE_POD_NAMESPACE_LABEL: _label_value(namespace),
            },
            "annotations": {
                UNSCHEDULABLE_POD_NAME_LABEL: name,
                UNSCHEDULABLE_POD_NAMESPACE_LABEL: namespace,
            },
        },
        "spec": pod_spec,
    }


def _is_scaling_pod(pod: Mapping[str, Any], settings: Settings) -> bool:
    meta = _meta(pod)
    return (
        meta.get("namespace") == settings.namespace
        and (meta.get("labels") or {}).get(APP_LABEL) == SCALING_APP
    )


def _original_of(pod: Mapping[str, Any]) -> Key:
    annotations = _meta(pod).get("annotations") or {}
    return str(annotations.get(UNSCHEDULABLE_POD_NAMESPACE_LABEL) or ""), str(
        annotations.get(UNSCHEDULABLE_POD_NAME_LABEL) or ""
    )


def _is_candidate(pod: Mapping[str, Any], settings: Settings) -> bool:
    annotations = _meta(pod).get("annotations") or {}
    return (
        (pod.get("spec") or {}).get("schedulerName") == settings.scheduler_name
        and bool(annotations.get(FRACTION) or annotations.get(MEMORY))
        and is_unschedulable(pod)
        and not held_by_its_queue(pod)
    )


def _gpus_of(pod: Mapping[str, Any]) -> int:
    total = 0
    for container in (pod.get("spec") or {}).get("containers") or ():
        limits = (container.get("resources") or {}).get("limits") or {}
        raw = limits.get(GPU_RESOURCE)
        if raw is not None:
            try:
                total += value(raw)
            except QuantityError:
                continue
    return total


def plan(
    pods: Iterable[Mapping[str, Any]],
    *,
    now: float,
    cool_down_until: float = 0.0,
    settings: Settings = Settings(),
) -> Plan:
    """One reconcile's decisions over every pod seen (see the module docstring)."""
    by_key: dict[Key, Mapping[str, Any]] = {}
    scaling: list[Mapping[str, Any]] = []
    for pod in pods:
        if _is_scaling_pod(pod, settings):
            scaling.append(pod)
        else:
            by_key[_key(pod)] = pod
    out = Plan(cool_down_until=cool_down_until)
    kept: dict[Key, int] = {}  # original -> GPUs of its live scaling pod
    for pod in scaling:
        if _meta(pod).get("deletionTimestamp"):
            continue  # already going
        original = by_key.get(_original_of(pod))
        finished = (pod.get("status") or {}).get("phase") == "Succeeded"
        if (
            finished
            or original is None
            or not is_unschedulable(original)
            or held_by_its_queue(original)
        ):
            out.delete.append(_key(pod))
        else:
            kept[_original_of(pod)] = _gpus_of(pod)
    if out.delete:
        out.cool_down_until = now + settings.cool_down
    if now < out.cool_down_until:
        return out
    candidates: list[tuple[Mapping[str, Any], int]] = []
    shares: list[tuple[float, int]] = []
    for key in sorted(by_key):
        pod = by_key[key]
        if not _is_candidate(pod, settings):
            continue
        try:
            fraction, count = devices_of(pod, settings.gpu_memory_to_fraction_ratio)
        except DeviceError as exc:
            out.errors.append(str(exc))
            continue
        shares.append((fraction, count))
        candidates.append((pod, count))
    needed = needed_devices(shares)
    requested = sum(kept.values())
    largest = max(kept.values(), default=0)
    for pod, count in candidates:
        if _key(pod) in kept:
            continue
        if needed > requested or count > largest:
            try:
                out.create.append(scaling_pod(pod, count, settings))
            except QuantityError as exc:
                out.errors.append(f"pod {'/'.join(_key(pod))}: container requests: {exc}")
                continue
            requested += count
            largest = max(largest, count)
    return out
