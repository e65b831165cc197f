"""RayCluster / RayJob / RayService: one PodGroup per top owner, gang from the cluster.

Why this module exists: the three Ray kinds share one rule — the PodGroup is named,
owned and labelled by the top owner, while the gang comes from the RayCluster: the
top owner itself, or the cluster a RayJob (``status.rayClusterName``) or RayService
(``status.activeServiceStatus`` then ``pendingServiceStatus``) points at.  The
top-owner label ``ray.io/priority-class-name`` wins over every other priority,
unchecked (docs/semantics.md §4.3, §12).

podmuster difference: when the status names no cluster (or one that the lookup does
not find), the RayCluster in the pod's owner chain is used, then the cluster spec
embedded in the RayJob/RayService; KAI fails the reconcile instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crds.podgroup import API_VERSION as PODGROUP_API_VERSION
from crds.podgroup import KIND as PODGROUP_KIND
from integrations import base, default, fields
from integrations.ray import clusters

RAY_PRIORITY_LABEL = "ray.io/priority-class-name"

_STATUS_PATHS = {
    "RayCluster": (),
    "RayJob": ("status.rayClusterName",),
    "RayService": (
        "status.activeServiceStatus.rayClusterName",
        "status.pendingServiceStatus.rayClusterName",
    ),
}
EMBEDDED_SPEC = {"RayJob": "spec.rayClusterSpec", "RayService": "spec.rayClusterConfig"}


def find_cluster(ctx: base.GroupingContext) -> tuple[base.RawObject, Mapping[str, Any], str]:
    """The object holding the cluster spec, the spec and its field path."""
    top = ctx.top_owner
    kind = str(top.get("kind"))
    if kind == "RayCluster":
        return top, fields.get_mapping(top, "spec"), "spec"
    ns = fields.namespace(top) or fields.namespace(ctx.pod)
    for path in _STATUS_PATHS.get(kind, ()):
        cluster_name = fields.get(top, path)
        if isinstance(cluster_name, str) and cluster_name:
            found = ctx.lookup.get(str(top.get("apiVersion")), "RayCluster", ns, cluster_name)
            if found is not None:
                return found, fields.get_mapping(found, "spec"), "spec"
            break
    for owner in ctx.owners:
        if owner.get("kind") == "RayCluster":
            return owner, fields.get_mapping(owner, "spec"), "spec"
    path = EMBEDDED_SPEC.get(kind, "spec")
    embedded = fields.get_mapping(top, path)
    if not embedded:
        raise base.GroupingError(fields.describe(top), path, "no RayCluster spec found")
    return top, embedded, path


@dataclass(frozen=True, slots=True)
class RayGrouper:
    name: str = "ray"

    def related_objects(self, ctx: base.GroupingContext) -> tuple[base.ObjectQuery, ...]:
        """The RayClusters named in a RayJob's or RayService's status, and the PodGroup
        (a legacy one without subgroups is kept without them)."""
        top = ctx.top_owner
        ns = fields.namespace(top) or fields.namespace(ctx.pod)
        names = (fields.get(top, p) for p in _STATUS_PATHS.get(str(top.get("kind")), ()))
        clusters_ = tuple(
            base.ObjectQuery(str(top.get("apiVersion")), "RayCluster", ns, n)
            for n in names
            if isinstance(n, str) and n
        )
        name = f"pg-{fields.name(top)}-{fields.uid(top)}"
        legacy = base.ObjectQuery(PODGROUP_API_VERSION, PODGROUP_KIND, ns, name)
        return (*clusters_, legacy)

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        holder, spec, path = find_cluster(ctx)
        total, subgroups = clusters.subgroups(
            holder, spec, path, ctx.pod, kai_bug=ctx.settings.reproduce_kai_bugs
        )
        result = default.build(ctx, subject=ctx.top_owner, min_member=total)
        override = fields.labels(ctx.top_owner).get(RAY_PRIORITY_LABEL)
        if override:
            result = dataclasses.replace(result, priority_class_name=str(override))
        if _is_legacy(ctx, result):
            return result
        return dataclasses.replace(result, subgroups=subgroups)


def _is_legacy(ctx: base.GroupingContext, spec: base.PodGroupSpec) -> bool:
    """A PodGroup of this name already exists without subgroups: keep it so (KAI, until v0.14)."""
    existing = ctx.lookup.get(PODGROUP_API_VERSION, PODGROUP_KIND, spec.namespace, spec.name)
    return existing is not None and not fields.get(existing, "spec.subGroups")
