"""KAI's contract rules, one function each, for every component that applies them.

Why this module exists: the webhooks, the scheduler's reader, the binder, the
status controllers, the node-scale-adjuster and the simulator all decide the same
questions about the same objects (is this GPU fraction valid, has this BindRequest
finally failed, what does this pod ask for, what priority does this PodGroup get).
Each question answered twice is a question answered two ways; here it is answered
once, and ``tests/crds/test_rules_table.py`` checks that every component agrees.

The functions take plain values (annotation strings, raw ``spec`` mappings) and
raise :class:`RuleError` naming the field, so each caller wraps the error in its
own kind (a webhook denial, a ``FieldError``, a controller's log line).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final, TypeVar

from crds.bindrequest import PHASE_FAILED
from crds.errors import shown
from crds.gpusharing import (
    CONTAINER_NAME,
    FRACTION,
    MEMORY,
    NODE_GPU_MEMORY_LABEL,
    NUM_DEVICES,
    WHOLE_GPU_RESOURCES,
)
from crds.names import ADMISSION_GATE, ADMISSION_GATE_ANNOTATION

__all__ = [
    "DEFAULT_BACKOFF_LIMIT",
    "DEFAULT_PRIORITY",
    "FRACTION_UNIT",
    "NON_PREEMPTIBLE_FROM",
    "UNSYNCED_GPU_MEMORY",
    "RuleError",
    "SharedGpu",
    "admission_gate_opt_in",
    "admission_gated_queues",
    "annotation_field",
    "backoff_limit",
    "bind_request_finally_failed",
    "container_resources",
    "fraction_units",
    "gpu_devices",
    "gpu_fraction",
    "gpu_memory",
    "gpu_memory_portion",
    "init_containers_of",
    "is_preemptible",
    "node_gpu_memory",
    "pod_admission_gated",
    "pod_gpus",
    "pod_request",
    "pod_resources",
    "priority_of",
    "shared_gpu",
    "whole_gpu_conflicts",
]

DEFAULT_BACKOFF_LIMIT: Final = 0
"""``spec.backoffLimit`` when unset. KAI's scheduler never sets the field and its binder
then makes a single attempt (it retries only while ``failedAttempts < backoffLimit``),
and KAI's scheduler counts any ``Failed`` BindRequest without a limit as final: both
are a limit of 0 retries beyond the first attempt."""

DEFAULT_PRIORITY: Final = 50
"""A PodGroup's priority when its class is unknown and no PriorityClass is ``globalDefault``."""

NON_PREEMPTIBLE_FROM: Final = 100
"""A priority at or above this is non-preemptible unless ``preemptibility`` says otherwise."""

_GPU_MEMORY_STEP: Final = 100
"""A gpu-memory request's portion of a device is rounded up to whole hundredths."""

_DECIMAL: Final = re.compile(r"[+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")
"""A plain decimal number, as a user writes one in an annotation (no ``nan``, ``0x1``, ``1_0``)."""

T = TypeVar("T")


class RuleError(ValueError):
    """A value that breaks a contract rule: ``field`` is its path, ``message`` why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def annotation_field(name: str) -> str:
    """The field path of annotation ``name``, as errors name it."""
    return f"metadata.annotations[{name}]"


# --- GPU sharing --------------------------------------------------------------------------


def gpu_fraction(raw: Any) -> float:
    """The ``gpu-fraction`` annotation as a number: KAI admits strictly 0 < x < 1.

    A whole GPU is asked for with ``nvidia.com/gpu``, never with a fraction of 1;
    KAI's admission webhook rejects 1 and more, so no component may accept it.
    """
    text = str(raw)  # no spaces: KAI's ParseFloat refuses them
    value = float(text) if _DECIMAL.fullmatch(text) else math.nan
    if not 0 < value < 1:  # nan: not a plain decimal number
        raise RuleError(
            annotation_field(FRACTION),
            f"must be a number with 0 < x < 1 (a whole GPU is asked for with "
            f"nvidia.com/gpu), got {shown(raw)}",
        )
    return value


FRACTION_UNIT: Final = 1000
"""Parts of one GPU a ``gpu-fraction`` is kept in (thousandths): the scheduler's GPU unit."""


def fraction_units(fraction: float) -> int:
    """A :func:`gpu_fraction` in thousandths of one GPU, as every component charges it:
    rounded, then at least 1 and at most 999, so every fraction the webhook admits is also
    scheduled (KAI takes any 0 < x < 1; 0.0004 is charged as 0.001, 0.9996 as 0.999)."""
    return min(max(round(fraction * FRACTION_UNIT), 1), FRACTION_UNIT - 1)


def whole_gpu_conflicts(spec: Mapping[str, Any], annotations: Mapping[str, Any]) -> list[RuleError]:
    """A shared-GPU request (``gpu-fraction`` or ``gpu-memory``) next to a whole-GPU resource:
    one error per container or init container that names one in its limits or requests,
    whatever the amount (KAI's admission refuses any ``nvidia.com/gpu`` limit key, even 0;
    ``amd.com/gpu`` is refused too, as the scheduler counts it as a whole GPU)."""
    sharing = next((name for name in (FRACTION, MEMORY) if name in annotations), None)
    if sharing is None:
        return []
    errors = []
    for kind in ("containers", "initContainers"):
        for index, container in enumerate(_list(spec.get(kind))):
            resources = _map(_map(container).get("resources"))
            found = next(
                (
                    (section, name, amount)
                    for section in ("limits", "requests")
                    for name, amount in _map(resources.get(section)).items()
                    if name in WHOLE_GPU_RESOURCES
                ),
                None,
            )
            if found is not None:
                section, name, amount = found
                errors.append(
                    RuleError(
                        f"spec.{kind}[{index}].resources.{section}[{name}]",
                        f"{name} {section[:-1]} {shown(amount)} cannot be combined with the "
                        f"{sharing} annotation: ask for shared or whole GPUs, not both",
                    )
                )
    return errors


_UINT64_MAX: Final = 2**64 - 1


def _uint(raw: Any) -> int | None:
    """``raw`` read as Go's ``strconv.ParseUint(text, 10, 64)`` reads it (KAI's reader of
    integer annotations and labels), else None: ASCII digits only, so no sign, no space
    and no other script's digits (Python's ``str.isdigit`` takes a superscript two, which
    ``int`` then refuses, and Arabic-Indic digits, which it reads), and at most 2**64 - 1."""
    text = str(raw)
    if not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if value <= _UINT64_MAX else None


def _positive_int(raw: Any, name: str, what: str) -> int:
    value = _uint(raw)
    if not value:
        raise RuleError(
            annotation_field(name),
            f"must be a positive integer{what} (ASCII digits only), got {shown(raw)}",
        )
    return value


def gpu_memory(raw: Any) -> int:
    """The ``gpu-memory`` annotation: MiB per device, a positive integer."""
    return _positive_int(raw, MEMORY, " of MiB")


def gpu_devices(raw: Any) -> int:
    """The ``gpu-fraction-num-devices`` annotation: a positive integer (unset: 1)."""
    return _positive_int(raw, NUM_DEVICES, "")


@dataclass(frozen=True, slots=True)
class SharedGpu:
    """A pod's shared-GPU request: ``fraction`` of, or ``memory_mib`` on, each of ``devices``."""

    fraction: float | None
    memory_mib: int
    devices: int
    container: str = ""

    @property
    def by_memory(self) -> bool:
        return self.fraction is None


def shared_gpu(annotations: Mapping[str, Any], *, bound: bool = False) -> SharedGpu | None:
    """The pod's shared-GPU request from its annotations, or None when it has none.

    ``gpu-fraction`` as :func:`gpu_fraction`; ``gpu-memory`` a positive integer of MiB
    (a fraction wins if both are set, as KAI's scheduler reads them);
    ``gpu-fraction-num-devices`` a positive integer, default 1.

    ``bound``: the pod is already on a node, so its values are read as earlier releases
    admitted them, spaces around them allowed: it holds its device whatever today's
    webhook would say, and every reader must count it so.
    """
    if bound:
        annotations = {
            name: value.strip() if name in _SHARING_VALUES and isinstance(value, str) else value
            for name, value in annotations.items()
        }
    fraction = annotations.get(FRACTION)
    memory = annotations.get(MEMORY)
    if fraction is None and memory is None:
        return None
    portion = gpu_fraction(fraction) if fraction is not None else None
    memory_mib = 0 if portion is not None else gpu_memory(memory)
    raw_devices = annotations.get(NUM_DEVICES)
    devices = 1 if raw_devices is None else gpu_devices(raw_devices)
    return SharedGpu(portion, memory_mib, devices, str(annotations.get(CONTAINER_NAME) or ""))


_SHARING_VALUES: Final = frozenset({FRACTION, MEMORY, NUM_DEVICES})


def gpu_memory_portion(memory_mib: int, device_memory_mib: int) -> float:
    """The portion of one device a gpu-memory request takes: ceil to the hundredth (KAI §6)."""
    return math.ceil(memory_mib * _GPU_MEMORY_STEP / device_memory_mib) / _GPU_MEMORY_STEP


UNSYNCED_GPU_MEMORY: Final = 100
"""MiB assumed per device of a node without a usable ``nvidia.com/gpu.memory`` label."""


_MIB: Final = 1024 * 1024
_BYTES_FROM: Final = _MIB
"""A ``nvidia.com/gpu.memory`` label of this many or more (1 TiB in MiB) is bytes, as KAI reads
it: gpu-feature-discovery has published bytes (its issue 26)."""


def node_gpu_memory(labels: Mapping[str, Any]) -> tuple[int, bool]:
    """(MiB per GPU, whether it is known) of a node, from its ``nvidia.com/gpu.memory`` label:
    an integer of MiB, or of bytes when 1,048,576 or more (then converted to whole MiB),
    rounded down to a multiple of 100; missing, unreadable or below 100, KAI assumes 100 and
    the node is not synced (gpu-memory pods are not placed there)."""
    raw = labels.get(NODE_GPU_MEMORY_LABEL)
    value = _uint(raw) if raw is not None else None
    if value is not None and value >= _BYTES_FROM:
        value //= _MIB  # bytes: gpu-feature-discovery issue 26, as KAI reads it
    if value is None or value < UNSYNCED_GPU_MEMORY:
        return UNSYNCED_GPU_MEMORY, False
    return value - value % UNSYNCED_GPU_MEMORY, True


def pod_gpus(
    whole: float, shared: SharedGpu | None, device_memory_mib: int | None, *, on_node: bool
) -> float:
    """The GPUs KAI counts for a pod: its whole devices, plus fraction x devices (the
    fraction in thousandths, :func:`fraction_units`, as the scheduler charges it), or for a
    gpu-memory request devices x its share of one GPU of ``device_memory_mib``.

    A pod on a node (``on_node``) takes :func:`gpu_memory_portion` of that node's GPU; a
    pod still pending is counted against the smallest GPU memory of the cluster, not
    rounded (KAI's queue ``request``). Without a known GPU memory a gpu-memory pod counts 0.
    """
    if shared is None:
        return whole
    if shared.fraction is not None:
        return whole + fraction_units(shared.fraction) / FRACTION_UNIT * shared.devices
    if not device_memory_mib:
        return whole
    if on_node:
        portion = gpu_memory_portion(shared.memory_mib, device_memory_mib)
    else:
        portion = shared.memory_mib / device_memory_mib
    return whole + portion * shared.devices


# --- a pod's resource request ---------------------------------------------------------------


def pod_request(
    containers: Iterable[T],
    init_containers: Iterable[tuple[T, bool]],
    overhead: T | None,
    *,
    add: Callable[[T, T], T],
    maximum: Callable[[T, T], T],
    zero: T,
) -> T:
    """What kube-scheduler counts for a pod, over any amount type (a vector, a resource map).

    ``init_containers`` are ``(request, restartable)`` in spec order; a restartable init
    container (``restartPolicy: Always``) is a sidecar. The rule:

    - the regular containers run together: their requests add up, and every sidecar runs
      beside them, so sidecars add to that sum;
    - an ordinary init container runs alone beside the sidecars started before it: it needs
      its own request plus theirs; a sidecar at its start needs the sidecars so far;
    - the pod needs the largest of these, and ``spec.overhead`` on top.

    The result may be one of the given amounts (``add`` and ``maximum`` must not change
    their arguments).
    """
    total: T | None = None  # the first container's request as is: no addition to copy
    for request in containers:
        total = request if total is None else add(total, request)
    if total is None:
        total = zero
    sidecars = init_peak = zero
    any_init = False
    for request, restartable in init_containers:
        any_init = True
        if restartable:
            total = add(total, request)
            sidecars = add(sidecars, request)
            init_peak = maximum(init_peak, sidecars)
        else:
            init_peak = maximum(init_peak, add(request, sidecars))
    if any_init:
        total = maximum(total, init_peak)
    return add(total, overhead) if overhead is not None else total


def init_containers_of(spec: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], bool]]:
    """``spec.initContainers`` as ``(container, restartable)`` for :func:`pod_request`."""
    return [
        (c, isinstance(c, Mapping) and c.get("restartPolicy") == "Always")
        for c in _list(spec.get("initContainers"))
    ]


def _list(raw: Any) -> list[Any]:
    return raw if isinstance(raw, list) else []


def _map(raw: Any) -> Mapping[str, Any]:
    return raw if isinstance(raw, Mapping) else {}


def container_resources(container: Mapping[str, Any]) -> dict[str, Any]:
    """A container's requests as written, each missing request defaulting to its limit.

    Lenient: a part that is not a map counts as empty (the engine's reader,
    ``scheduler.cache.parsing``, is the one that reports it, naming the field).
    """
    resources = _map(_map(container).get("resources"))
    merged = dict(_map(resources.get("limits")))
    merged.update(_map(resources.get("requests")))
    return merged


def _add_maps(a: Mapping[str, Fraction], b: Mapping[str, Fraction]) -> dict[str, Fraction]:
    out = dict(a)
    for name, amount in b.items():
        out[name] = out.get(name, Fraction(0)) + amount
    return out


def _max_maps(a: Mapping[str, Fraction], b: Mapping[str, Fraction]) -> dict[str, Fraction]:
    out = dict(a)
    for name, amount in b.items():
        out[name] = max(out.get(name, Fraction(0)), amount)
    return out


def pod_resources(
    spec: Mapping[str, Any], amount: Callable[[str, Any], Fraction]
) -> dict[str, Fraction]:
    """:func:`pod_request` of a pod ``spec`` as a resource map; ``amount(name, raw)`` reads
    one quantity in the caller's unit (and may raise on a bad one)."""

    def read(resources: Mapping[str, Any]) -> dict[str, Fraction]:
        return {name: amount(name, raw) for name, raw in resources.items()}

    spec = _map(spec)
    containers = (read(container_resources(c)) for c in _list(spec.get("containers")))
    inits = ((read(container_resources(c)), r) for c, r in init_containers_of(spec))
    overhead = _map(spec.get("overhead"))
    return pod_request(
        containers,
        inits,
        read(overhead) if overhead else None,
        add=_add_maps,
        maximum=_max_maps,
        zero={},
    )


# --- BindRequests ---------------------------------------------------------------------------


def backoff_limit(spec: Mapping[str, Any]) -> int:
    """``spec.backoffLimit`` of a BindRequest, or :data:`DEFAULT_BACKOFF_LIMIT` when unset."""
    limit = spec.get("backoffLimit")
    if limit is None:
        return DEFAULT_BACKOFF_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise RuleError("spec.backoffLimit", f"expected an integer, got {shown(limit)}")
    return limit


def bind_request_finally_failed(spec: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """KAI's rule: phase ``Failed`` and ``failedAttempts`` >= ``backoffLimit`` (default 0).

    A finally failed BindRequest no longer holds its pod on the node: the scheduler
    places the pod again and the binder makes no more attempts.
    """
    if status.get("phase") != PHASE_FAILED:
        return False
    return int(status.get("failedAttempts") or 0) >= backoff_limit(spec)


# --- priorities -----------------------------------------------------------------------------


def priority_of(class_name: str, classes: Mapping[str, int], global_default: int | None) -> int:
    """A PodGroup's priority: its class's value; unknown or empty, the ``globalDefault``
    class's value, else :data:`DEFAULT_PRIORITY` (50)."""
    value = classes.get(class_name) if class_name else None
    if value is not None:
        return value
    return DEFAULT_PRIORITY if global_default is None else global_default


def is_preemptible(preemptibility: str | None, priority: int) -> bool:
    """``preemptibility`` when set (``preemptible`` / ``non-preemptible``), else priority < 100."""
    if preemptibility:
        return preemptibility == "preemptible"
    return priority < NON_PREEMPTIBLE_FROM


# --- queue admission through scheduling gates (docs/semantics.md §5.11) ----------------------


def admission_gate_opt_in(annotations: Mapping[str, Any]) -> bool:
    """Whether a Queue's annotations opt it in to the admission gate (``"true"``/``"false"``)."""
    raw = annotations.get(ADMISSION_GATE_ANNOTATION)
    if raw is None or raw == "false":
        return False
    if raw == "true":
        return True
    raise RuleError(
        annotation_field(ADMISSION_GATE_ANNOTATION), f'must be "true" or "false", got {shown(raw)}'
    )


def admission_gated_queues(
    parents: Mapping[str, str | None], opted_in: Iterable[str]
) -> frozenset[str]:
    """The queues under the admission gate: those opted in and all their descendants.

    ``parents`` maps each queue to its parent (None at the top). A parent that is
    missing or a cycle ends the walk; the queue is then gated only by its own path.
    """
    opted = set(opted_in)
    gated: set[str] = set()
    for name in parents:
        seen: set[str] = set()
        current: str | None = name
        while current is not None and current not in seen:
            if current in opted:
                gated.add(name)
                break
            seen.add(current)
            current = parents.get(current)
    return frozenset(gated)


def pod_admission_gated(spec: Mapping[str, Any]) -> bool:
    """Whether a pod's ``spec.schedulingGates`` holds the admission gate."""
    gates = spec.get("schedulingGates") or ()
    return any(isinstance(g, Mapping) and g.get("name") == ADMISSION_GATE for g in gates)
