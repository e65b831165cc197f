"""How a desired PodGroup meets an existing one, and the pod patch (docs/semantics.md §4.1).

Why this module exists: the live podgrouper re-groups on every pod event, and some
PodGroup fields are sticky — the queue never changes once the PodGroup exists, its
queue label is kept, and the node-pool label keeps its first value (or its absence).
These rules are pure, so they live beside the adapters for the podgrouper (and tests)
to apply: :func:`merged_podgroup` gives the object to write, :func:`needs_write`
whether to write at all, :func:`pod_patch` the pod's ``pod-group-name`` annotation
and ``kai.scheduler/subgroup-name`` label.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from crds.names import POD_GROUP_ANNOTATION, SUBGROUP_LABEL
from integrations import base

_STICKY_SPEC = ("queue", "markUnschedulable", "schedulingBackoff")


def _meta(obj: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = (obj.get("metadata") or {}).get(key) or {}
    return dict(value) if isinstance(value, Mapping) else {}


def merged_podgroup(
    existing: Mapping[str, Any] | None,
    desired: Mapping[str, Any],
    settings: base.GroupingSettings | None = None,
) -> dict[str, Any]:
    """The PodGroup to write: ``desired`` with the existing object's sticky parts.

    Spec and ownerReferences are replaced, except ``queue``, ``markUnschedulable`` and
    ``schedulingBackoff`` which are taken from ``existing``; labels and annotations
    are merged (desired wins, extra keys stay), the existing queue label is kept and
    the node-pool label is forced to the existing value, or removed if it had none.
    """
    result = copy.deepcopy(dict(desired))
    if existing is None:
        return result
    settings = settings or base.GroupingSettings()
    spec = dict(result.get("spec") or {})
    old_spec = existing.get("spec") or {}
    for key in _STICKY_SPEC:
        spec.pop(key, None)
        if key in old_spec:
            spec[key] = old_spec[key]
    result["spec"] = spec
    meta = dict(result.get("metadata") or {})
    old_labels = _meta(existing, "labels")
    labels = {**old_labels, **_meta(result, "labels")}
    if settings.queue_label_key in old_labels:
        labels[settings.queue_label_key] = old_labels[settings.queue_label_key]
    labels.pop(settings.nodepool_label_key, None)
    if settings.nodepool_label_key in old_labels:
        labels[settings.nodepool_label_key] = old_labels[settings.nodepool_label_key]
    meta["labels"] = dict(sorted(labels.items()))
    annotations = {**_meta(existing, "annotations"), **_meta(result, "annotations")}
    meta["annotations"] = dict(sorted(annotations.items()))
    for key in ("labels", "annotations"):
        if not meta[key]:
            del meta[key]
    result["metadata"] = meta
    return result


def needs_write(existing: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> bool:
    """False when spec and ownerReferences are equal and every desired label and
    annotation is already present with the same value (the podgrouper skips the write)."""
    if existing is None:
        return True
    if existing.get("spec") != desired.get("spec"):
        return True
    if _meta(existing, "ownerReferences") != _meta(desired, "ownerReferences"):
        return True
    for key in ("labels", "annotations"):
        have = _meta(existing, key)
        if any(have.get(k) != v for k, v in _meta(desired, key).items()):
            return True
    return False


def pod_patch(pod: Mapping[str, Any], spec: base.PodGroupSpec) -> dict[str, Any] | None:
    """The metadata patch that puts ``pod`` in ``spec`` (``None`` when nothing changes).

    The subgroup label is written only when a subgroup lists the pod, and never removed.
    """
    name = str((pod.get("metadata") or {}).get("name") or "")
    patch: dict[str, Any] = {}
    if _meta(pod, "annotations").get(POD_GROUP_ANNOTATION) != spec.name:
        patch["annotations"] = {POD_GROUP_ANNOTATION: spec.name}
    subgroup = spec.subgroup_of(name)
    if subgroup is not None and _meta(pod, "labels").get(SUBGROUP_LABEL) != subgroup:
        patch["labels"] = {SUBGROUP_LABEL: subgroup}
    return {"metadata": patch} if patch else None
