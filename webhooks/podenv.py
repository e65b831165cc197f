"""The admission mutation of GPU-sharing pods: env read from a per-pod ConfigMap.

Why this module exists: a pod's env cannot change after it is created, yet which GPU a
fractional pod gets is known only at bind time, when the binder's reservation pod has
reported its device. So at creation the pod is given env entries that *read* the GPU
from a ConfigMap that does not exist yet; the binder writes it (UUIDs and portion)
before it binds the pod, and the kubelet resolves the references when it starts the
container. The rules are a pure function returning a JSONPatch; :mod:`webhooks.server`
serves it.

For pods whose ``spec.schedulerName`` is ours and that carry ``gpu-fraction`` or
``gpu-memory``:

* annotation ``runai/shared-gpu-configmap`` names the ConfigMap (kept if present, else
  ``<pod name>-shared-gpu``; a pod created with ``generateName`` has no name yet, so a
  random suffix of :data:`SUFFIX_BYTES` stands in for the one the API server will pick);
* the container named by ``gpu-fraction-container-name`` (a container or init
  container; default the first container) gets ``NVIDIA_VISIBLE_DEVICES`` and
  ``GPU_PORTION`` from that ConfigMap (``valueFrom.configMapKeyRef``, not optional:
  the container must not start without its GPU), and ``RUNAI_NUM_OF_GPUS`` (KAI's
  older name of the portion, optional). Entries of the same names are
  replaced, every other entry kept in order;
* ``spec.runtimeClassName`` is set to the configured RuntimeClass (``nvidia`` by default,
  as KAI's ``--gpu-fraction-runtime-class-name``; empty: none) when the pod names none:
  the pod requests no ``nvidia.com/gpu``, so the device plugin does nothing for it and
  only the NVIDIA runtime, acting on ``NVIDIA_VISIBLE_DEVICES``, shows it its GPU. A
  RuntimeClass the pod names itself is kept.

A pod the rules do not concern gets an empty patch. The mutation is idempotent, so a
reinvocation changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from crds import gpusharing as names

__all__ = ["SUFFIX_BYTES", "mutate_pod"]

SUFFIX_BYTES: Final = 8
"""Random bytes (hex in the name) standing in for a ``generateName`` pod's future name:
all replicas of a workload share the ``generateName``, and two live pods given one
ConfigMap name would read one GPU env. 64 bits make that a ~10^-12 chance at 5,000
replicas (KAI's 7 letters of 27: ~10^-3); the binder also refuses a ConfigMap another
live pod owns."""

JsonPatch = list[dict[str, Any]]


def _pointer(*parts: str | int) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _target(spec: Mapping[str, Any], wanted: str | None) -> tuple[str, int] | None:
    """(``containers`` or ``initContainers``, index) of the container to wire."""
    for section in ("containers", "initContainers"):
        for index, container in enumerate(spec.get(section) or ()):
            if wanted is None and section == "containers":
                return section, index
            if isinstance(container, Mapping) and container.get("name") == wanted:
                return section, index
    return None


_REQUIRED: Final = (names.VISIBLE_DEVICES_ENV, names.GPU_PORTION_ENV)
_OURS: Final = (*_REQUIRED, names.NUM_OF_GPUS_ENV)


def _env(configmap: str) -> list[dict[str, Any]]:
    """The GPU env read from ``configmap``; ``RUNAI_NUM_OF_GPUS`` (KAI's deprecated name of
    the portion) is optional, so a ConfigMap an older binder wrote still starts the pod."""
    return [
        {
            "name": key,
            "valueFrom": {
                "configMapKeyRef": {"name": configmap, "key": key}
                | ({} if key in _REQUIRED else {"optional": True})
            },
        }
        for key in _OURS
    ]


def mutate_pod(
    obj: Mapping[str, Any],
    scheduler_name: str,
    suffix: str,
    *,
    runtime_class: str = names.FRACTION_RUNTIME_CLASS,
) -> JsonPatch:
    """The JSONPatch wiring Pod ``obj``'s GPU env (empty: nothing to do).

    ``suffix`` (a few random characters) completes the ConfigMap name of a pod that has
    only ``generateName``; ``runtime_class`` (empty: none) is given to a pod naming none.
    """
    spec = obj.get("spec") or {}
    if not isinstance(spec, Mapping) or spec.get("schedulerName") != scheduler_name:
        return []
    metadata = obj.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    if names.FRACTION not in annotations and names.MEMORY not in annotations:
        return []
    patch: JsonPatch = []
    configmap = annotations.get(names.CONFIGMAP_ANNOTATION)
    if not configmap:
        pod_name = metadata.get("name") or f"{metadata.get('generateName') or 'pod-'}{suffix}"
        configmap = names.configmap_name(str(pod_name))
        path = _pointer("metadata", "annotations", names.CONFIGMAP_ANNOTATION)
        patch.append({"op": "add", "path": path, "value": configmap})
    target = _target(spec, annotations.get(names.CONTAINER_NAME))
    if target is None:  # no such container: the validating webhook refuses the pod
        return patch
    section, index = target
    container = spec[section][index]
    kept = [e for e in container.get("env") or () if e.get("name") not in _OURS]
    env = kept + _env(str(configmap))
    if env != list(container.get("env") or ()):
        patch.append({"op": "add", "path": _pointer("spec", section, index, "env"), "value": env})
    if runtime_class and not spec.get("runtimeClassName"):
        patch.append(
            {"op": "add", "path": _pointer("spec", "runtimeClassName"), "value": runtime_class}
        )
    return patch
