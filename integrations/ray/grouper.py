"""RayCluster / RayJob / RayService: one PodGroup per top owner, gang from the cluster.

Why this module exists: the three Ray kinds share one rule — the PodGroup is named,
owned and labelled by the top owner, while the gang comes from the RayCluster: the
top owner itself, or the cluster a RayJob (``status.rayClusterName``) or RayService
(``status.activeServiceStatus`` then ``pendingServiceStatus``) points at.  The
top-owner label ``ray.io/priority-class-name`` wins over every other priority,
unchecked (docs/semantics.md §4.3, §12).

podmuster differences (docs/integrations.md), all switched off by
``reproduce_kai_bugs``:

- when the status names no cluster (or one that the lookup does not find), the
  RayCluster in the pod's owner chain is used, then the cluster spec embedded in the
  RayJob/RayService; KAI fails the reconcile instead;
- a RayJob with ``spec.clusterSelector`` runs on a RayCluster that already exists and
  is grouped on its own: the Ray pods belong to that cluster (their top owner), so
  the only pod the RayJob owns is KubeRay's submitter, grouped alone (minMember 1).
  KAI gives it the selected cluster's whole gang size, which one pod never reaches;
- a RayService defaults to ``inference``: Serve replicas are long-running services,
  as a Deployment or a Knative Service is.  KAI's default is ``train``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crds.podgroup import API_VERSION as PODGROUP_API_VERSION
from crds.podgroup import KIND as PODGROUP_KIND
from integrations import base, default, fields, templates
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
CLUSTER_SELECTOR = "spec.clusterSelector"


def cluster_selector(obj: base.RawObject) -> Mapping[str, str]:
    """A RayJob's ``spec.clusterSelector``, labels of the RayCluster it runs on (a map of
    strings; empty: the RayJob makes its own cluster)."""
    if obj.get("kind") != "RayJob":
        return {}
    return fields.get_string_map(obj, CLUSTER_SELECTOR)


def fallback_priority(obj: base.RawObject, kai_bug: bool) -> str:
    """The kind's default priority: ``inference`` for a RayService (KAI: ``train``)."""
    if obj.get("kind") == "RayService" and not kai_bug:
        return default.INFERENCE
    return default.TRAIN


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


def _as_written(
    top: base.RawObject, holder: base.RawObject, spec: Mapping[str, Any]
) -> contextlib.AbstractContextManager[None]:
    """Name the RayJob's (or RayService's) own field in an error about the RayCluster made
    from it, when that cluster's spec is the one embedded in it: the user wrote that
    field, not the cluster KubeRay (or podmuster's synthesis) made."""
    embedded_at = EMBEDDED_SPEC.get(str(top.get("kind")))
    if embedded_at is None or holder is top or fields.get_mapping(top, embedded_at) != spec:
        return contextlib.nullcontext()
    return templates.read_from(top, holder, embedded_at)


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
        kai_bug = ctx.settings.reproduce_kai_bugs
        priority = fallback_priority(ctx.top_owner, kai_bug)
        if cluster_selector(ctx.top_owner) and not kai_bug:
            # the submitter pod of a RayJob on an existing cluster: not part of a gang
            return _with_ray_priority(
                ctx, default.build(ctx, subject=ctx.top_owner, fallback_priority=priority)
            )
        holder, spec, path = find_cluster(ctx)
        with _as_written(ctx.top_owner, holder, spec):
            total, subgroups = clusters.subgroups(holder, spec, path, ctx.pod, kai_bug=kai_bug)
        result = _with_ray_priority(
            ctx,
            default.build(ctx, subject=ctx.top_owner, min_member=total, fallback_priority=priority),
        )
        if _is_legacy(ctx, result):
            return result
        return dataclasses.replace(result, subgroups=subgroups)


def _with_ray_priority(ctx: base.GroupingContext, spec: base.PodGroupSpec) -> base.PodGroupSpec:
    """The top owner's ``ray.io/priority-class-name`` label wins, unchecked (as in KAI)."""
    override = fields.labels(ctx.top_owner).get(RAY_PRIORITY_LABEL)
    if override:
        return dataclasses.replace(spec, priority_class_name=str(override))
    return spec


def _is_legacy(ctx: base.GroupingContext, spec: base.PodGroupSpec) -> bool:
    """A PodGroup of this name already exists without subgroups: keep it so (KAI, until v0.14)."""
    existing = ctx.lookup.get(PODGROUP_API_VERSION, PODGROUP_KIND, spec.namespace, spec.name)
    return existing is not None and not fields.get(existing, "spec.subGroups")
