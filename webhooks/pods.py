"""What makes a Pod's GPU-sharing annotations acceptable: a pure function, no API server.

Why this module exists: a Pod asks for part of a GPU by annotation only, and the API
server checks annotations for nothing but their syntax. A ``gpu-fraction`` of ``1.5``,
a ``gpu-memory`` of ``8Gi`` or a fraction next to an ``nvidia.com/gpu`` limit would be
stored, then stay pending or be placed wrongly. The admission webhook refuses such pods
at creation, and updates that change a sharing annotation (the chart's ``matchConditions``
send only those; the object judged is the new one); the rules live here, apart from the
HTTP edge (:mod:`webhooks.server`), and the scheduler applies the same ones
(:mod:`crds.rules`), so an admitted pod is never refused later for its annotations.
Each problem is one :class:`~crds.errors.InputError` naming the pod and the annotation.

Rules (KAI's annotation contract), for pods whose ``spec.schedulerName`` is ours only:

* ``gpu-fraction``: a number with 0 < x < 1, and ``gpu-memory``: a positive integer of
  MiB, as :mod:`crds.rules` says for every component (a whole GPU is asked for with
  ``nvidia.com/gpu``);
* not both ``gpu-fraction`` and ``gpu-memory``;
* neither together with a whole-GPU resource (``nvidia.com/gpu``, ``amd.com/gpu``) in
  the requests or limits of any container or init container, whatever the amount, even 0
  (:func:`crds.rules.whole_gpu_conflicts`, the scheduler's rule too);
* ``gpu-fraction-num-devices``: a positive integer, only with ``gpu-fraction`` or
  ``gpu-memory``;
* ``gpu-fraction-container-name``: the name of one of the pod's containers or init
  containers;
* ``mps``: ``"true"`` only with ``gpu-fraction`` or ``gpu-memory`` (MPS shares a GPU
  between processes; a whole GPU needs none); any other value means no MPS, as in KAI.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crds import rules
from crds.errors import InputError, object_error
from crds.gpusharing import (
    CONTAINER_NAME,
    FRACTION,
    MEMORY,
    MPS,
    NUM_DEVICES,
    SHARING_ANNOTATIONS,
)

__all__ = ["SHARING_ANNOTATIONS", "validate_pod"]

Problems = list[InputError]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _named(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj`` with ``generateName`` standing in for a name not chosen yet."""
    metadata = _mapping(obj.get("metadata"))
    if metadata.get("name") or not metadata.get("generateName"):
        return obj
    return {**obj, "metadata": {**metadata, "name": f"{metadata['generateName']}*"}}


def validate_pod(obj: Mapping[str, Any], scheduler_name: str) -> Problems:
    """The problems of Pod ``obj``'s GPU-sharing annotations (empty when acceptable).

    A pod for another scheduler (``spec.schedulerName`` other than ``scheduler_name``)
    is not ours to judge and has none.
    """
    spec = _mapping(obj.get("spec"))
    if spec.get("schedulerName") != scheduler_name:
        return []
    annotations = _mapping(_mapping(obj.get("metadata")).get("annotations"))
    if not any(key in annotations for key in SHARING_ANNOTATIONS):
        return []
    obj = _named(obj)
    problems: Problems = []

    def problem(field: str, message: str) -> None:
        problems.append(object_error(None, obj, field, message))

    fraction = annotations.get(FRACTION)
    memory = annotations.get(MEMORY)
    for name, rule in ((FRACTION, rules.gpu_fraction), (MEMORY, rules.gpu_memory)):
        if annotations.get(name) is not None:
            try:
                rule(annotations[name])
            except rules.RuleError as exc:
                problem(exc.field, exc.message)
    if fraction is not None and memory is not None:
        problem(
            rules.annotation_field(MEMORY),
            f"cannot be combined with {FRACTION}: ask for a portion or for memory, not both",
        )
    sharing = [key for key in (FRACTION, MEMORY) if key in annotations]
    containers = [("containers", c) for c in _list(spec.get("containers"))] + [
        ("initContainers", c) for c in _list(spec.get("initContainers"))
    ]
    for conflict in rules.whole_gpu_conflicts(spec, annotations):
        problem(conflict.field, conflict.message)
    devices = annotations.get(NUM_DEVICES)
    if devices is not None:
        try:
            rules.gpu_devices(devices)
        except rules.RuleError as exc:
            problem(exc.field, exc.message)
        if not sharing:
            problem(
                rules.annotation_field(NUM_DEVICES),
                f"applies only together with {FRACTION} or {MEMORY}",
            )
    if annotations.get(MPS) == "true" and not sharing:
        problem(
            rules.annotation_field(MPS),
            f'"true" applies only together with {FRACTION} or {MEMORY}',
        )
    target = annotations.get(CONTAINER_NAME)
    if target is not None:
        names = [n for _, c in containers if isinstance(n := _mapping(c).get("name"), str)]
        if target not in names:
            listed = ", ".join(repr(n) for n in names) or "none"
            problem(
                rules.annotation_field(CONTAINER_NAME),
                f"no container or init container named {target!r} (the pod has {listed})",
            )
    return problems
