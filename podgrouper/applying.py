"""Writing one grouping decision: the PodGroup, then the pod (KAI ``ApplyToCluster``).

Why this module exists: the adapters say what the PodGroup should be; this module
reconciles that with what is in the cluster, following docs/semantics.md §4.1 through the
pure rules of :mod:`integrations.updates`:

* absent → create it;
* present → keep ``queue``, ``markUnschedulable``, ``schedulingBackoff``, the queue
  label and the node-pool label (or its absence); replace spec and ownerReferences,
  merge labels and annotations; skip the write when nothing would change;
* then patch the pod: ``pod-group-name`` annotation and, when a subgroup lists the pod,
  ``kai.scheduler/subgroup-name`` label — skipped when both are already right.

PodGroups are never deleted here; garbage collection removes them with their owner.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crds.podgroup import API_VERSION as PODGROUP_API_VERSION
from crds.podgroup import KIND as PODGROUP_KIND
from integrations import base, fields, updates
from kubeapi.errors import ConflictError, NotFoundError
from kubeapi.objects import Object
from kubeapi.protocol import Kube


class Write(enum.Enum):
    """What happened to the PodGroup."""

    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


@dataclass(frozen=True, slots=True)
class Applied:
    """The outcome of :func:`apply`."""

    pod_group: str
    subgroup: str | None
    write: Write
    pod_patched: bool


def replacement(existing: Mapping[str, Any], merged: Mapping[str, Any]) -> Object:
    """``existing`` with the merged spec, ownerReferences, labels and annotations.

    Everything else (resourceVersion, finalizers, status) is kept, so the PUT is guarded
    by the version that was read.
    """
    body: Object = copy.deepcopy(dict(existing))
    meta = body.setdefault("metadata", {})
    new_meta = merged.get("metadata") or {}
    for key in ("labels", "annotations", "ownerReferences"):
        if key in new_meta:
            meta[key] = copy.deepcopy(new_meta[key])
        else:
            meta.pop(key, None)
    body["spec"] = copy.deepcopy(merged.get("spec") or {})
    return body


CONFLICT_ATTEMPTS = 2
"""Pods of one workload are reconciled concurrently; the loser of a create or update race
re-reads once before the error goes back for a retry with back-off."""


async def apply_pod_group(
    spec: base.PodGroupSpec, kube_: Kube, settings: base.GroupingSettings
) -> Write:
    """Create or update the PodGroup ``spec`` describes (rules in the module docstring)."""
    for attempt in range(1, CONFLICT_ATTEMPTS + 1):
        try:
            return await _write_once(spec, kube_, settings)
        except ConflictError:
            if attempt == CONFLICT_ATTEMPTS:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


async def _write_once(
    spec: base.PodGroupSpec, kube_: Kube, settings: base.GroupingSettings
) -> Write:
    desired = spec.to_manifest()
    try:
        existing: Object | None = await kube_.get(
            PODGROUP_API_VERSION, PODGROUP_KIND, spec.namespace, spec.name
        )
    except NotFoundError:
        existing = None
    merged = updates.merged_podgroup(existing, desired, settings)
    if existing is None:
        await kube_.create(merged)
        return Write.CREATED
    if not updates.needs_write(existing, merged):
        return Write.UNCHANGED
    await kube_.replace(replacement(existing, merged))
    return Write.UPDATED


async def patch_pod(pod: Mapping[str, Any], spec: base.PodGroupSpec, kube_: Kube) -> bool:
    """Put ``pod`` in the PodGroup (and its subgroup); False when it already is."""
    patch = updates.pod_patch(pod, spec)
    if patch is None:
        return False
    await kube_.merge_patch(
        str(pod.get("apiVersion") or "v1"),
        "Pod",
        fields.namespace(pod),
        fields.name(pod),
        patch,
    )
    return True


async def apply(
    spec: base.PodGroupSpec,
    pod: Mapping[str, Any],
    kube_: Kube,
    settings: base.GroupingSettings,
) -> Applied:
    """The PodGroup first, then the pod, so a pod never names a missing PodGroup."""
    write = await apply_pod_group(spec, kube_, settings)
    patched = await patch_pod(pod, spec, kube_)
    return Applied(spec.name, spec.subgroup_of(fields.name(pod)), write, patched)
